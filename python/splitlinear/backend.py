"""The ``splitlinear`` torch.compile backend.

Registered through the ``torch_dynamo_backends`` entry point, so after
``pip install -e python``::

    compiled = torch.compile(model, backend="splitlinear")
    compiled = torch.compile(model, backend="splitlinear",
                             options={"fallback": "eager", "strict": True})
    compiled = torch.compile(model, backend="splitlinear", mode="reduce-overhead")
    compiled = torch.compile(model, backend="splitlinear", options={"fp8": "rowwise"})

Pipeline for each Dynamo graph: validate options, dump the graph
(``graph_<n>_before.txt``), find and rewrite split-linear regions
(:func:`splitlinear.fx.driver.rewrite_graph`) into ``splitlinear.ops.linear``
calls, compile their kernels (:mod:`splitlinear.precompile`), dump
again (``graph_<n>_after.txt``), then compile the rewritten graph with
Inductor, configured for ``mode`` as ``backend="inductor"`` would be (the op
becomes an extern kernel call; its compile caches key on the op library's
build), or run it eagerly, through CUDA graphs when the mode asks for them
(:mod:`splitlinear.cudagraphs`).
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch.fx as fx

from ._cache_key import keyed_on_build
from ._logging import logger
from ._siblings import check_packed_adjacency
from .fx.adjacency import AdjacencyWatch, check_regions, weight_groups
from .fx.driver import rewrite_graph
from .fx.fp8 import forget_warnings
from .fx.residue import runs_eagerly
from .grad_concat import with_concat_pass
from .options import SplitLinearOptions
from .precompile import precompile_regions
from .stats import bump as _bump

__all__ = ["splitlinear_backend", "rewrite_graph"]

_graph_ids = itertools.count()
_graph_ids_lock = threading.Lock()


def _next_graph_id() -> int:
    with _graph_ids_lock:
        return next(_graph_ids)


def _write_dump(dump_dir: str, name: str, text: str) -> None:
    """Writes ``text`` to ``dump_dir/name``; an unwritable folder raises ``OSError`` naming the
    option (and ``SPLITLINEAR_DUMP_DIR``, which sets it too)."""
    path = os.path.join(dump_dir, name)
    try:
        os.makedirs(dump_dir, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise OSError(exc.errno, f"splitlinear: option 'dump_dir' (or SPLITLINEAR_DUMP_DIR): cannot write "
                                 f"{path}: {exc.strerror}") from exc
    logger.debug("splitlinear: wrote %s", path)


def _compile_fallback(gm: fx.GraphModule, example_inputs: Sequence[Any],
                      options: SplitLinearOptions, calls_op: bool, graph_id: int) -> Callable[..., Any]:
    """Compile the rewritten graph: Inductor with the config ``torch.compile(backend="inductor",
    mode=options.mode, options=options.inductor_options)`` would use, or eagerly (through CUDA
    graphs when ``options.mode`` turns them on). When the graph ``calls_op``, Inductor's and
    AOTAutograd's caches also key on the op library's build (:mod:`splitlinear._cache_key`).

    A graph left with nothing but op calls runs eagerly under ``fallback="inductor"`` too, unless
    the mode uses CUDA graphs or compiled autograd is on (:func:`~splitlinear.fx.residue.runs_eagerly`)."""
    if calls_op and runs_eagerly(gm, options):
        _bump("graphs_run_eagerly")
        logger.info("splitlinear: graph %d holds only op calls: run eagerly, not by Inductor", graph_id)
        return gm.forward
    if options.fallback == "eager":
        if options.cudagraphs:
            from .cudagraphs import compile_eager_with_cudagraphs

            return compile_eager_with_cudagraphs(gm, example_inputs)
        return gm.forward
    from torch._inductor.compile_fx import compile_fx

    patches = options.inductor_config()
    if calls_op:
        patches = with_concat_pass(keyed_on_build(patches))
    return compile_fx(gm, list(example_inputs), config_patches=patches)


def _reset() -> None:
    """``torch._dynamo.reset()`` hook (as ``backend="inductor"`` has): drop the CUDA graphs
    recorded by cudagraph trees for ``mode="reduce-overhead"``, and the per-frame warnings given
    (reset numbers the frames from 0 again)."""
    # Not imported: nothing recorded. Importing it here would register a backend in the
    # cache dynamo's reset is iterating ("dictionary changed size during iteration").
    forget_warnings()
    trees = sys.modules.get("torch._inductor.cudagraph_trees")
    if trees is not None:
        trees.reset_cudagraph_trees()


def splitlinear_backend(
    gm: fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    options: Mapping[str, Any] | SplitLinearOptions | None = None,
    mode: str | None = None,
) -> Callable[..., Any]:
    """torch.compile backend: replace split linears by ``splitlinear.ops.linear``, compile the rest.

    Args:
        gm: the Dynamo FX graph (torch-level ops; Parameters are placeholders).
        example_inputs: the real example inputs (Parameters first, then user inputs).
        options: ``torch.compile(..., options=...)``; see :class:`SplitLinearOptions`.
        mode: ``torch.compile(..., mode=...)``; see :attr:`SplitLinearOptions.mode`.

    Returns:
        A callable running the graph: Inductor-compiled (``fallback="inductor"``)
        or the rewritten ``GraphModule.forward`` (``fallback="eager"``).

    Raises:
        ValueError: invalid ``options`` (unknown key, wrong type), an unknown ``mode``, or a
            ``mode`` that differs from ``options["mode"]``.
        RuntimeError: ``strict=True`` and a candidate could not be replaced.
    """
    opts = SplitLinearOptions.from_dict(options).with_mode(mode)
    graph_id = _next_graph_id()
    _bump("graphs_compiled")

    dump_dir = opts.resolved_dump_dir()
    if dump_dir:
        _write_dump(dump_dir, f"graph_{graph_id}_before.txt", gm.print_readable(print_output=False))

    # Packed groups that lost their shared buffer since pack_parameters: named once, here, where a
    # per-call check would cost nothing (their linears then copy or run one GEMM per part).
    check_packed_adjacency(example_inputs)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    plan = rewrite_graph(gm, example_inputs, opts, graph_id=graph_id)
    # Regions reading parts that are not adjacent: named once here. Those that are, checked again
    # when the graph runs with other weights (Dynamo reuses it for another instance of the model).
    adjacent = check_regions(weight_groups(placeholders, plan.regions), example_inputs)
    n_linears = sum(len(r.sites) for r in plan.regions)
    _bump("regions_matched", len(plan.regions))
    _bump("linears_fused", n_linears)
    _bump("candidates_rejected", len(plan.rejections))
    _bump("serving_groups_fused", plan.serving_groups)

    # Kernel IR and the IR after every pass land next to the FX graphs.
    precompile_regions(plan.regions, dump_dir)

    if dump_dir:
        header = "".join(f"# splitlinear: matched {r.describe()}\n" for r in plan.regions)
        header += "".join(f"# splitlinear: rejected {r.message()}\n" for r in plan.rejections)
        _write_dump(dump_dir, f"graph_{graph_id}_after.txt", header + gm.print_readable(print_output=False))

    logger.info(
        "splitlinear: graph %d: %d region(s) matched (%d linear(s)), %d candidate(s) rejected; "
        "fallback=%s, mode=%s", graph_id, len(plan.regions), n_linears, len(plan.rejections),
        opts.fallback, opts.mode,
    )
    compiled = _compile_fallback(gm, example_inputs, opts, calls_op=bool(plan.regions or plan.serving_groups),
                                 graph_id=graph_id)
    return AdjacencyWatch(compiled, adjacent, example_inputs) if adjacent else compiled


splitlinear_backend.reset = _reset  # type: ignore[attr-defined]

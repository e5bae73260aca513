"""The ``splitlinear`` torch.compile backend.

Registered through the ``torch_dynamo_backends`` entry point, so after
``pip install -e python``::

    compiled = torch.compile(model, backend="splitlinear")
    compiled = torch.compile(model, backend="splitlinear",
                             options={"fallback": "eager", "strict": True})
    compiled = torch.compile(model, backend="splitlinear", mode="reduce-overhead")

Pipeline for each Dynamo graph: validate options, dump the graph
(``graph_<n>_before.txt``), find and rewrite split-linear regions
(:mod:`splitlinear.fx`) into ``splitlinear.ops.linear`` calls, dump
again (``graph_<n>_after.txt``), then compile the rewritten graph with
Inductor, configured for ``mode`` as ``backend="inductor"`` would be (the op
becomes an extern kernel call), or run it eagerly, through CUDA graphs when the
mode asks for them (:mod:`splitlinear.cudagraphs`).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.fx as fx

from ._logging import logger
from .fx import (
    AutocastState,
    GraphState,
    LinearFn,
    Plan,
    Rejection,
    ambient_autocast,
    node_value,
    plan_regions,
    rewrite_region,
)
from .options import SplitLinearOptions
from .stats import bump as _bump

__all__ = ["splitlinear_backend", "rewrite_graph"]

_graph_ids = itertools.count()
_graph_ids_lock = threading.Lock()


def _next_graph_id() -> int:
    with _graph_ids_lock:
        return next(_graph_ids)


def _load_linear_fn() -> LinearFn:
    """``splitlinear.ops.linear`` (loading the op library).

    Raises:
        RuntimeError: the op library cannot be loaded.
    """
    try:
        from . import ops
    except (ImportError, OSError, RuntimeError) as exc:
        raise RuntimeError(
            "splitlinear backend: cannot load the op library providing torch.ops.splitlinear.linear "
            f"(build it, or set SPLITLINEAR_BUILD_DIR): {exc}"
        ) from exc
    return ops.linear


def _ensure_metadata(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    """Give every node a fake value if the graph did not come from Dynamo (e.g. ``symbolic_trace``)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if all(node_value(n) is not None for n in placeholders):
        return
    from torch._guards import detect_fake_mode
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    mode = detect_fake_mode(example_inputs) or FakeTensorMode(allow_non_fake_inputs=True)
    FakeTensorProp(gm, mode).propagate(*example_inputs)


def _write_dump(dump_dir: str, name: str, text: str) -> None:
    os.makedirs(dump_dir, exist_ok=True)
    path = os.path.join(dump_dir, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    logger.debug("splitlinear: wrote %s", path)


def _strict_error(rejections: Sequence[Rejection], graph_id: int) -> RuntimeError:
    lines = "\n  ".join(r.message() for r in rejections)
    return RuntimeError(
        f"splitlinear backend (strict=True): graph {graph_id}: {len(rejections)} candidate(s) "
        f"could not be replaced by torch.ops.splitlinear.linear:\n  {lines}"
    )


def rewrite_graph(
    gm: fx.GraphModule,
    example_inputs: Sequence[Any],
    options: SplitLinearOptions,
    *,
    linear_fn: LinearFn | None = None,
    graph_id: int = -1,
) -> Plan:
    """Rewrite the split-linear regions of ``gm`` in place; return what was done.

    Args:
        gm: a Dynamo FX graph (torch-level ops, ``example_value`` metadata) or
            any FX graph of torch-level ops (then fake values are propagated
            from ``example_inputs``).
        example_inputs: the graph's inputs (real or fake tensors, SymInts).
        options: backend options (``strict``, ``horizontal_fusion``, ``min_parts``).
        linear_fn: the callable placed in the graph; default
            ``splitlinear.ops.linear`` (loaded only if a region is found).
        graph_id: number used in log and error messages.

    Returns:
        The :class:`~splitlinear.fx.Plan`: ``regions`` actually
        rewritten, ``rejections`` (including regions whose rewrite failed),
        ``skipped`` (policy skips such as ``min_parts``).

    Raises:
        RuntimeError: ``options.strict`` and a candidate was rejected, or a
            region was found but the op library cannot be loaded under strict.
    """
    _ensure_metadata(gm, example_inputs)
    holder: list[LinearFn] = [] if linear_fn is None else [linear_fn]
    return _rewrite_module(gm, options, holder, graph_id, torch.is_grad_enabled(), ambient_autocast())


#: Higher-order ops whose subgraph runs once, inline, with the caller's grad
#: mode and autocast state (activation checkpointing, plain wraps): their
#: linears are matched like top-level ones.
_INLINE_SUBGRAPH_HOPS: tuple[Any, ...] = (
    torch.ops.higher_order.tag_activation_checkpoint,
    torch.ops.higher_order.wrap,
)


def _inline_subgraphs(gm: fx.GraphModule, state: GraphState) -> list[tuple[fx.GraphModule, bool, AutocastState]]:
    """The subgraph modules of :data:`_INLINE_SUBGRAPH_HOPS` calls in ``gm``, with the
    grad mode and autocast state at each call."""
    found = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in _INLINE_SUBGRAPH_HOPS or not node.args:
            continue
        body = node.args[0]
        if isinstance(body, fx.Node) and body.op == "get_attr":
            sub = gm.get_submodule(str(body.target))
            if isinstance(sub, fx.GraphModule):
                found.append((sub, state.grad_mode_at(node), state.autocast_state_at(node)))
    return found


def _rewrite_module(gm: fx.GraphModule, options: SplitLinearOptions, linear_fn: list[LinearFn],
                    graph_id: int, grad_mode: bool, autocast: AutocastState) -> Plan:
    """:func:`rewrite_graph` on ``gm`` entered with ``grad_mode`` and ``autocast``, then on
    its inline subgraphs. ``linear_fn`` holds the op once loaded (shared by the recursion)."""
    subgraphs = _inline_subgraphs(gm, GraphState(gm.graph, grad_mode, autocast))
    plan = plan_regions(gm.graph, horizontal_fusion=options.horizontal_fusion, min_parts=options.min_parts,
                        entry_grad_mode=grad_mode, entry_autocast=autocast)
    for rejection in plan.rejections:
        logger.debug("splitlinear: graph %d: rejected %s", graph_id, rejection.message())
    for reason in plan.skipped:
        logger.debug("splitlinear: graph %d: skipped %s", graph_id, reason)
    if options.strict and plan.rejections:
        raise _strict_error(plan.rejections, graph_id)

    if plan.regions and not linear_fn:
        try:
            linear_fn.append(_load_linear_fn())
        except RuntimeError as exc:
            if options.strict:
                raise
            logger.warning("splitlinear: graph %d: %s; leaving %d region(s) to the fallback",
                           graph_id, exc, len(plan.regions))
            plan.rejections.extend(Rejection(r.sites[0].out, "op library unavailable") for r in plan.regions)
            plan.regions = []

    done = []
    replaced: dict[fx.Node, fx.Node] = {}
    for region in plan.regions:
        try:
            rewrite_region(gm, region, linear_fn[0], replaced)
        except RuntimeError as exc:
            rejection = Rejection(region.sites[0].out, str(exc))
            if options.strict:
                raise _strict_error([rejection], graph_id) from exc
            logger.debug("splitlinear: graph %d: rejected %s", graph_id, rejection.message())
            plan.rejections.append(rejection)
            continue
        logger.debug("splitlinear: graph %d: matched %s", graph_id, region.describe())
        done.append(region)
    plan.regions = done
    if done:
        gm.graph.lint()
        gm.recompile()
    for sub, sub_grad, sub_autocast in subgraphs:
        inner = _rewrite_module(sub, options, linear_fn, graph_id, sub_grad, sub_autocast)
        plan.regions.extend(inner.regions)
        plan.rejections.extend(inner.rejections)
        plan.skipped.extend(inner.skipped)
    return plan


def _compile_fallback(gm: fx.GraphModule, example_inputs: Sequence[Any],
                      options: SplitLinearOptions) -> Callable[..., Any]:
    """Compile the rewritten graph: Inductor with the config ``torch.compile(backend="inductor",
    mode=options.mode, options=options.inductor_options)`` would use, or eagerly (through CUDA
    graphs when ``options.mode`` turns them on)."""
    if options.fallback == "eager":
        if options.cudagraphs:
            from .cudagraphs import compile_eager_with_cudagraphs

            return compile_eager_with_cudagraphs(gm, example_inputs)
        return gm.forward
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, list(example_inputs), config_patches=options.inductor_config())


def _precompile(regions: list, dump_dir: str | None) -> None:
    """Compiles each region's kernels now (graph-compile time), not at the
    first call: forward always, backward ones when grad mode is on. The
    kernels' dtype is the input's, or under autocast the autocast dtype (the
    op's Autocast kernel casts). With ``dump_dir`` the kernels write their IR
    there: the dump is scoped to this compile, never set process-wide."""
    if not regions:
        return
    from . import ops

    before = ops.runtime_counters()["compiles"]
    for region in regions:
        val = node_value(region.input)
        if not isinstance(val, torch.Tensor):
            continue
        autocast = region.sites[0].autocast
        dtype = autocast[1] if autocast is not None else val.dtype
        try:
            ops.precompile(dtype, val.device, len(region.weight_parts),
                           region.bias_parts is not None, torch.is_grad_enabled(), dump_dir)
        except RuntimeError as exc:  # e.g. a device the op does not run on: the call will say so
            logger.warning("splitlinear: precompiling %s failed: %s", region.describe(), exc)
    _bump("kernels_precompiled", ops.runtime_counters()["compiles"] - before)


def _reset() -> None:
    """``torch._dynamo.reset()`` hook (as ``backend="inductor"`` has): drop the CUDA graphs
    recorded by cudagraph trees for ``mode="reduce-overhead"``."""
    from torch._inductor.cudagraph_trees import reset_cudagraph_trees

    reset_cudagraph_trees()


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

    plan = rewrite_graph(gm, example_inputs, opts, graph_id=graph_id)
    n_linears = sum(len(r.sites) for r in plan.regions)
    _bump("regions_matched", len(plan.regions))
    _bump("linears_fused", n_linears)
    _bump("candidates_rejected", len(plan.rejections))

    # Kernel IR and the IR after every pass land next to the FX graphs.
    _precompile(plan.regions, dump_dir)

    if dump_dir:
        header = "".join(f"# splitlinear: matched {r.describe()}\n" for r in plan.regions)
        header += "".join(f"# splitlinear: rejected {r.message()}\n" for r in plan.rejections)
        _write_dump(dump_dir, f"graph_{graph_id}_after.txt", header + gm.print_readable(print_output=False))

    logger.info(
        "splitlinear: graph %d: %d region(s) matched (%d linear(s)), %d candidate(s) rejected; "
        "fallback=%s, mode=%s", graph_id, len(plan.regions), n_linears, len(plan.rejections),
        opts.fallback, opts.mode,
    )
    return _compile_fallback(gm, example_inputs, opts)


splitlinear_backend.reset = _reset  # type: ignore[attr-defined]

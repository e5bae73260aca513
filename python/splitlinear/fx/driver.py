"""The rewrite driver: plan and rewrite the split-linear regions of one FX graph.

:func:`rewrite_graph` runs :func:`~splitlinear.fx.plan.plan_regions` and
:func:`~splitlinear.fx.rewrite.rewrite_region` on a graph and on the bodies of
its inline higher-order ops (activation checkpointing, ``wrap``), loads the op
library only when a region is found, and applies the ``strict`` policy. The
backend (:mod:`splitlinear.backend`) calls it once per Dynamo graph.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.fx as fx

from .._logging import logger
from ..options import SplitLinearOptions
from .dtensor import is_dtensor_region, rewrite_dtensor_region
from .fp8 import assign_fp8, fp8_linear_fn, module_has_fp8_values
from .model import LinearFn, Plan, Rejection, node_value
from .plan import plan_regions
from .rewrite import rewrite_region
from .serving import fuse_serving_siblings, quantize_activations_in_graph
from .state import AutocastState, GraphState, ambient_autocast

__all__ = ["rewrite_graph"]


def _load_linear_fn() -> LinearFn:
    """``splitlinear.ops.linear`` (loading the op library).

    Raises:
        RuntimeError: the op library cannot be loaded.
    """
    try:
        from .. import ops
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


def _strict_error(rejections: Sequence[Rejection], graph_id: int) -> RuntimeError:
    lines = "\n  ".join(r.message() for r in rejections)
    return RuntimeError(
        f"splitlinear backend (strict=True): graph {graph_id}: {len(rejections)} candidate(s) "
        f"could not be replaced by torch.ops.splitlinear.linear:\n  {lines}"
    )


def rewrite_graph(
    gm: fx.GraphModule,
    example_inputs: Sequence[Any],
    options: SplitLinearOptions | Mapping[str, Any] | None = None,
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
        options: backend options (``strict``, ``horizontal_fusion``, ``min_parts``), as
            :class:`SplitLinearOptions`, a dict of them or ``None`` (the defaults).
        linear_fn: the callable placed in the graph; default
            ``splitlinear.ops.linear`` (loaded only if a region is found).
        graph_id: number used in log and error messages.

    Returns:
        The :class:`~splitlinear.fx.Plan`: ``regions`` actually
        rewritten, ``rejections`` (including regions whose rewrite failed),
        ``skipped`` (policy skips such as ``min_parts``).

    Raises:
        TypeError: ``gm`` is not a ``torch.fx.GraphModule``.
        ValueError: invalid ``options`` (see :meth:`SplitLinearOptions.from_dict`).
        RuntimeError: ``options.strict`` and a candidate was rejected, or a
            region was found but the op library cannot be loaded under strict.
    """
    if not isinstance(gm, fx.GraphModule):
        raise TypeError(f"splitlinear.rewrite_graph: gm must be a torch.fx.GraphModule, got {type(gm).__name__}")
    options = SplitLinearOptions.from_dict(options)
    _ensure_metadata(gm, example_inputs)
    if options.fp8 is not None and options.fp8_weight_cache and (
            options.cudagraphs or (options.fallback == "inductor" and module_has_fp8_values(gm))):
        # CUDA graphs: a replay casts anyway, and an entry kept from a cudagraph-tree warm-up
        # run would be a live block in the graphs' pool that the tree does not track. Own FP8
        # values: see fx/fp8.py (Inductor compiles the subgraphs into this graph: all checked).
        options = dataclasses.replace(options, fp8_weight_cache=False)
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


def _assign_fp8(graph: fx.Graph, plan: Plan, options: SplitLinearOptions, graph_id: int) -> set[int]:
    """Option ``fp8``: replace ``plan.regions`` by its FP8 and plain regions (:func:`~.fp8.assign_fp8`),
    in graph order; return the ids of the FP8 ones."""
    order = {n: i for i, n in enumerate(graph.nodes)}
    assigned = assign_fp8(plan.regions, options, order)
    for reason in assigned.skipped:
        logger.debug("splitlinear: graph %d: %s", graph_id, reason)
    plan.skipped.extend(assigned.skipped)
    plan.regions = sorted(assigned.fp8 + assigned.plain, key=lambda r: min(order[s.out] for s in r.sites))
    return {id(r) for r in assigned.fp8}


def _rewrite_module(gm: fx.GraphModule, options: SplitLinearOptions, linear_fn: list[LinearFn],
                    graph_id: int, grad_mode: bool, autocast: AutocastState) -> Plan:
    """:func:`rewrite_graph` on ``gm`` entered with ``grad_mode`` and ``autocast``, then on
    its inline subgraphs. ``linear_fn`` holds the op once loaded (shared by the recursion)."""
    subgraphs = _inline_subgraphs(gm, GraphState(gm.graph, grad_mode, autocast))
    fp8 = options.fp8 is not None
    plan = plan_regions(gm.graph, horizontal_fusion=options.horizontal_fusion,
                        min_parts=1 if fp8 else options.min_parts,
                        entry_grad_mode=grad_mode, entry_autocast=autocast, lone_sites=fp8)
    fp8_regions = _assign_fp8(gm.graph, plan, options, graph_id) if fp8 else set()
    if fp8_regions:
        fp8_fn = fp8_linear_fn(options.fp8, options.fp8_weight_cache)
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
        dtensor = is_dtensor_region(region)
        if dtensor and id(region) in fp8_regions:
            # The DTensor rewrite calls the bf16 op on local shards; FP8 scales would need a
            # cross-rank amax there, which is not built.
            raise ValueError(f"splitlinear: the backend option fp8={options.fp8!r} is not supported with "
                             f"DTensor (tensor-parallel) parameters (graph {graph_id}, "
                             f"{region.sites[0].out.name}); leave fp8 unset or exclude these linears "
                             f"with fp8_filter")
        try:
            if dtensor:
                rewrite_dtensor_region(gm, region, linear_fn[0], replaced)
            else:
                rewrite_region(gm, region, fp8_fn if id(region) in fp8_regions else linear_fn[0], replaced)
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
    serving = fuse_serving_siblings(gm.graph) if options.horizontal_fusion else 0
    if serving:
        logger.debug("splitlinear: graph %d: fused %d group(s) of FP8 serving linears", graph_id, serving)
        plan.serving_groups += serving
    quantized = quantize_activations_in_graph(gm.graph) if options.fp8_activation_quant == "graph" else 0
    if done or serving or quantized:
        gm.graph.lint()
        gm.recompile()
    for sub, sub_grad, sub_autocast in subgraphs:
        inner = _rewrite_module(sub, options, linear_fn, graph_id, sub_grad, sub_autocast)
        plan.regions.extend(inner.regions)
        plan.rejections.extend(inner.rejections)
        plan.skipped.extend(inner.skipped)
        plan.serving_groups += inner.serving_groups
    return plan

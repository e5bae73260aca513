"""FP8 serving siblings: one activation quantization and one scaled GEMM per group.

Each :class:`~splitlinear.serving.Fp8ServingLinear` traces to
``q = fp8_quantize(x, e4m3, axis)`` and ``scaled_linear(q[0], q[2], [W_i], s_i,
[b_i])``. For siblings reading the same ``x`` :func:`fuse_serving_siblings`
keeps one ``fp8_quantize`` (the same arguments give the same bytes) and
replaces the scaled GEMMs by one over all parts, ``[W_1, ..., W_P]``, with
the weight scale vector ``cat(s_i.expand(N_i))`` (each part keeps its own
scale; tensorwise or rowwise alike), then splits the output by columns. The
op uses the parts in place when they are adjacent in one storage (packed by
the conversion) and checks that on every call.

Members are fused only when they agree on the quantized input, the output
dtype, fast accumulation and bias presence, and when every tensor a member
reads exists before the first member runs (weights and scales are graph
inputs or attributes in practice); the others stay as they are.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from typing import Any

import torch
import torch.fx as fx

from .model import node_tensor

__all__ = ["fuse_serving_siblings"]



def _ops() -> tuple[Any, Any] | None:
    """``(fp8_quantize, scaled_linear)``, or None when the op library is not loaded (then no
    graph can call them)."""
    try:
        return torch.ops.splitlinear.fp8_quantize.default, torch.ops.splitlinear.scaled_linear.default
    except (AttributeError, RuntimeError):
        return None


def _dedupe_quantizes(graph: fx.Graph, quantize: Any) -> None:
    """Later ``fp8_quantize`` nodes with the same arguments as an earlier one use its result."""
    first: dict[tuple[Any, ...], fx.Node] = {}
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not quantize or node.kwargs:
            continue
        key = tuple(node.args)
        try:
            hash(key)
        except TypeError:
            continue
        if key in first:
            node.replace_all_uses_with(first[key])
            graph.erase_node(node)
        else:
            first[key] = node


def _quantized_source(node: Any, quantize: Any) -> tuple[fx.Node, int] | None:
    """``(q, index)`` when ``node`` is ``getitem(q, index)`` of an ``fp8_quantize`` node ``q``."""
    if (isinstance(node, fx.Node) and node.op == "call_function" and node.target is operator.getitem
            and isinstance(node.args[0], fx.Node) and node.args[0].target is quantize):
        return node.args[0], int(node.args[1])
    return None


def _rows(node: fx.Node) -> int | None:
    value = node_tensor(node)
    if value is None or value.dim() != 2 or not isinstance(value.shape[0], int):
        return None
    return int(value.shape[0])


def _fusable(node: fx.Node, quantize: Any, scaled: Any) -> tuple[Any, ...] | None:
    """The key members of one group share, or None when ``node`` is no fusable serving GEMM."""
    if node.op != "call_function" or node.target is not scaled or node.kwargs or len(node.args) != 7:
        return None
    x, sx, weights, _sw, bias, out_dtype, fast = node.args
    src, sx_src = _quantized_source(x, quantize), _quantized_source(sx, quantize)
    if src is None or sx_src is None or src[0] is not sx_src[0] or (src[1], sx_src[1]) != (0, 2):
        return None
    if not isinstance(weights, (list, tuple)) or len(weights) != 1 or _rows(weights[0]) is None:
        return None
    if bias is not None and (not isinstance(bias, (list, tuple)) or len(bias) != 1):
        return None
    return (src[0], out_dtype, fast, bias is None)


def _reads_before(member: fx.Node, head: fx.Node, order: dict[fx.Node, int], quantize: Any) -> bool:
    """Every tensor ``member`` reads, other than the shared quantized input, exists before ``head``."""
    return all(order[i] < order[head] for i in member.all_input_nodes
               if _quantized_source(i, quantize) is None)


def fuse_serving_siblings(graph: fx.Graph) -> int:
    """Fuse sibling FP8 serving GEMMs of ``graph`` in place; return the number of groups fused."""
    ops = _ops()
    if ops is None:
        return 0
    quantize, scaled = ops
    _dedupe_quantizes(graph, quantize)
    order = {n: i for i, n in enumerate(graph.nodes)}
    groups: dict[tuple[Any, ...], list[fx.Node]] = defaultdict(list)
    for node in graph.nodes:
        key = _fusable(node, quantize, scaled)
        if key is not None:
            groups[key].append(node)
    fused = 0
    for members in groups.values():
        head = members[0]
        # A later member's weight, scale or bias must exist at the head (else it stays alone).
        members = [head] + [m for m in members[1:] if _reads_before(m, head, order, quantize)]
        if len(members) < 2:
            continue
        x, sx, _, _, bias, out_dtype, fast = head.args
        rows = [_rows(m.args[2][0]) for m in members]
        with graph.inserting_before(head):
            spread = [graph.call_method("expand", (m.args[3], n)) for m, n in zip(members, rows)]
            scale = graph.call_function(torch.cat, (spread,))
            weights = [m.args[2][0] for m in members]
            biases = None if bias is None else [m.args[4][0] for m in members]
            gemm = graph.call_function(scaled, (x, sx, weights, scale, biases, out_dtype, fast))
            pieces = graph.call_function(torch.split, (gemm, rows), {"dim": -1})
            outs = [graph.call_function(operator.getitem, (pieces, i)) for i in range(len(members))]
        for m, out in zip(members, outs):
            m.replace_all_uses_with(out)
            reads = m.args[:2]
            graph.erase_node(m)
            for r in reads:  # a later member's own getitems of the shared quantization
                if isinstance(r, fx.Node) and not r.users:
                    graph.erase_node(r)
        fused += 1
    return fused

"""FP8 serving siblings: one activation quantization and one scaled GEMM per group.

Each :class:`~splitlinear.serving.Fp8ServingLinear` traces to one
``fp8_serving_linear(x, [W_i], [s_i], [b_i], axis, out_dtype, fast_accum)``
call. :func:`fuse_serving_siblings` replaces the calls that read the same
``x`` with the same axis, output dtype, fast accumulation and bias presence
by one call over all their parts, ``[W_1, ..., W_P]`` with ``[s_1, ...,
s_P]`` (each part keeps its own scales), then splits the output by columns.
The op quantizes ``x`` once, and uses the parts and the scale vectors in
place when they are adjacent in one storage (``convert_to_fp8_serving``
packs them so), which it checks on every call.

A later member joins only when every tensor it reads exists before the first
member runs (weights and scales are graph inputs in practice; a bias cast to
the autocast dtype is moved up); the others stay as they are.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from typing import Any

import torch
import torch.fx as fx

from .model import node_tensor
from .rewrite import observes_strides

__all__ = ["fuse_serving_siblings", "quantize_activations_in_graph"]

#: e4m3's largest finite value, and float32's: ``scale = 448 / amax``, FLT_MAX where that overflows.
_E4M3_MAX = 448.0
_FLT_MAX = torch.finfo(torch.float32).max


def _serving_op() -> Any:
    """``fp8_serving_linear``, or None when the op library is not loaded (no graph can call it then)."""
    try:
        return torch.ops.splitlinear.fp8_serving_linear.default
    except (AttributeError, RuntimeError):
        return None


def _rows(node: Any) -> int | None:
    value = node_tensor(node) if isinstance(node, fx.Node) else None
    if value is None or value.dim() != 2 or not isinstance(value.shape[0], int):
        return None
    return int(value.shape[0])


def _key(node: fx.Node, target: Any) -> tuple[Any, ...] | None:
    """What the members of one group share, or None when ``node`` is no fusable serving call."""
    if node.op != "call_function" or node.target is not target or node.kwargs or len(node.args) != 7:
        return None
    x, weights, scales, bias, axis, out_dtype, fast = node.args
    if not isinstance(weights, (list, tuple)) or not isinstance(scales, (list, tuple)) or len(weights) != len(scales):
        return None
    if any(_rows(w) is None for w in weights) or (bias is not None and not isinstance(bias, (list, tuple))):
        return None
    return (x, axis, out_dtype, fast, bias is None)


def _movable_inputs(member: fx.Node, head: fx.Node, order: dict[fx.Node, int]) -> list[fx.Node] | None:
    """The inputs of ``member`` computed after ``head`` that may move before it (a dtype cast
    of a tensor that exists there: a bias under autocast), or None when another one is."""
    late = [i for i in member.all_input_nodes if order[i] > order[head]]
    for node in late:
        if not (node.op == "call_method" and node.target == "to" and len(node.users) == 1
                and all(order[j] < order[head] for j in node.all_input_nodes)):
            return None
    return late


def fuse_serving_siblings(graph: fx.Graph) -> int:
    """Fuse sibling FP8 serving calls of ``graph`` in place; return the number of groups fused."""
    target = _serving_op()
    if target is None:
        return 0
    order = {n: i for i, n in enumerate(graph.nodes)}
    groups: dict[tuple[Any, ...], list[fx.Node]] = defaultdict(list)
    for node in graph.nodes:
        key = _key(node, target)
        if key is not None:
            groups[key].append(node)
    fused = 0
    for members in groups.values():
        head = members[0]
        members = [head] + [m for m in members[1:] if _movable_inputs(m, head, order) is not None]
        if len(members) < 2:
            continue
        for m in members[1:]:
            for node in _movable_inputs(m, head, order) or []:
                head.prepend(node)
        x, _, _, bias, axis, out_dtype, fast = head.args
        weights = [w for m in members for w in m.args[1]]
        scales = [s for m in members for s in m.args[2]]
        biases = None if bias is None else [b for m in members for b in m.args[3]]
        widths = [sum(_rows(w) for w in m.args[1]) for m in members]
        with graph.inserting_before(head):
            call = graph.call_function(target, (x, weights, scales, biases, axis, out_dtype, fast))
            pieces = graph.call_function(torch.split, (call, widths), {"dim": -1})
            outs = [graph.call_function(operator.getitem, (pieces, i)) for i in range(len(members))]
        for m, out in zip(members, outs):
            if observes_strides(m.users):  # a split of the last dim is strided: eager's is dense
                with graph.inserting_after(out):
                    out = graph.call_method("contiguous", (out,))
            m.replace_all_uses_with(out)
            graph.erase_node(m)
        fused += 1
    return fused


def quantize_activations_in_graph(graph: fx.Graph) -> int:
    """Option ``fp8_activation_quant="graph"``: every ``fp8_serving_linear`` call of ``graph``
    gets its input quantized by ATen ops placed before it, then takes the FP8 input and its
    ``scale_inv`` (``input_scale_inv``); returns the number of calls changed.

    Calls with per-row activation scales only (the default); tensorwise ones keep the op's
    quantization. The ops compute what the op's own quantization computes, in float32
    (``Runtime.h``, "FP8 quantization"): ``amax`` over each row, ``scale = 448 / amax`` (FLT_MAX where
    that overflows, 1 for amax 0), ``x8 = e4m3(clamp(x * scale, ±448))`` rounding to nearest
    even, ``scale_inv = 1 / scale``. As graph ops the fallback compiler may fuse them into the
    ops that produce ``x`` (an RMSNorm), which the op's quantization kernel cannot."""
    target = _serving_op()
    if target is None:
        return 0
    changed = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not target or node.kwargs or len(node.args) != 7:
            continue
        x, weights, scales, bias, axis, out_dtype, fast = node.args
        # Only per-row scales: amax over a whole empty tensor has no value (M = 0 with a dynamic
        # batch), where the op's own tensorwise quantization gives scale 1. The modules pass out_dtype.
        if axis != "rows" or not isinstance(out_dtype, torch.dtype):
            continue
        with graph.inserting_before(node):
            xf = graph.call_method("to", (x, torch.float32))
            mag = graph.call_method("abs", (xf,))
            amax = graph.call_method("amax", (mag,), {"dim": -1, "keepdim": True})
            # Tensor / tensor divisions: `c / t` would run as reciprocal(t) * c, rounded twice.
            scale = graph.call_function(operator.truediv,
                                        (graph.call_function(torch.full_like, (amax, _E4M3_MAX)), amax))
            scale = graph.call_function(torch.where, (graph.call_function(torch.isinf, (scale,)), _FLT_MAX, scale))
            scale = graph.call_function(torch.where, (graph.call_function(operator.eq, (amax, 0.0)), 1.0, scale))
            scaled = graph.call_method("clamp", (graph.call_function(operator.mul, (xf, scale)),
                                                 -_E4M3_MAX, _E4M3_MAX))
            x8 = graph.call_method("to", (scaled, torch.float8_e4m3fn))
            inv = graph.call_function(operator.truediv, (graph.call_function(torch.ones_like, (scale,)), scale))
            inv = graph.call_method("reshape", (inv, -1))
            call = graph.call_function(target, (x8, weights, scales, bias, axis, out_dtype, fast, inv))
        node.replace_all_uses_with(call)
        graph.erase_node(node)
        changed += 1
    return changed

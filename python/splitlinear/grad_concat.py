"""The gradient of a narrowed op output, written as one concatenation (an Inductor post-grad pass).

The rewrite (:mod:`splitlinear.fx.rewrite`) replaces sibling linears by one op call whose output
``y [..., N]`` is narrowed into the sites' column blocks ``y[..., o_i : o_i + N_i]``. AOTAutograd
differentiates each narrow as ``slice_backward``, decomposed to ``slice_scatter`` into zeros, and
sums them::

    dy = slice_scatter(zeros, dq, -1, 0, Nq) + slice_scatter(zeros, dk, -1, Nq, Nq + Nk) + ...

Inductor fuses that sum into one pointwise kernel over ``[..., N]`` in which every element
evaluates each block's expression under a mask, so the blocks' shared inputs are read once per
block. On the H200 (``bench/model/train.py`` under ``torch.profiler``: Llama-3-8B layers, 4×2048
tokens) the SwiGLU backward writing ``d[gate|up]`` took 0.53 ms per layer against 0.27 ms for
Inductor's separate ``dgate``/``dup`` kernel, and the q/k/v RoPE backward 0.47 ms against 0.17 ms;
with this pass they take 0.27 and 0.19 ms.

:class:`ConcatNarrowGrads` rewrites such a sum, when its blocks tile the dimension exactly, into
``splitlinear::concat(blocks, dim)``: ``torch.cat`` for eager and fake tensors, lowered by
:func:`_lower_concat` to Inductor's ``ConcatKernel``, which makes each block's producer write
into its block of the result. Producers that share their reads (``dgate`` and ``dup``) are then
fused by Inductor's scheduler as in the unsplit model. Inductor's own ``aten.cat`` lowering would
pick its pointwise (masked) form for such inputs (``cat`` in ``torch/_inductor/lowering.py``).

The values equal the sum's: each element of ``dy`` is one block's element, which the sum added to an
exact zero. A ``-0.0`` in a block stays ``-0.0`` (the sum made it ``+0.0``), as Inductor's own
joint-graph pass does when it drops an ``add`` of zeros (``remove_no_ops`` in
``torch/_inductor/fx_passes/joint_graph.py``); eager PyTorch's unfused siblings never added the
zeros either.

The counter ``narrow_grads_concatenated`` counts rewrites when Inductor compiles a graph; a graph
loaded from Inductor's caches counts none.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx
from torch import Tensor
from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files
from torch.fx.experimental.symbolic_shapes import statically_known_true, sym_eq

from .stats import bump as _bump

aten = torch.ops.aten


@torch.library.custom_op("splitlinear::concat", mutates_args=())
def concat(tensors: Sequence[Tensor], dim: int) -> Tensor:
    """``torch.cat(tensors, dim)``, which Inductor lowers by writing each input into its block.

    Args:
        tensors: two or more tensors of one dtype and device, equal in every dimension but ``dim``.
        dim: a non-negative dimension index.

    Raises:
        ValueError: fewer than two tensors, ``dim`` negative or out of range, or tensors of
            different dtypes or numbers of dims.
        RuntimeError: shapes or devices that ``torch.cat`` refuses (its message).
    """
    _check_concat_args(tensors, dim)
    return torch.cat(list(tensors), dim)


@concat.register_fake
def _concat_fake(tensors: Sequence[Tensor], dim: int) -> Tensor:
    _check_concat_args(tensors, dim)
    return torch.cat(list(tensors), dim)


def _check_concat_args(tensors: Sequence[Tensor], dim: int) -> None:
    if len(tensors) < 2:
        raise ValueError(f"splitlinear.concat: needs at least two tensors, got {len(tensors)}")
    if not 0 <= dim < tensors[0].dim():
        raise ValueError(f"splitlinear.concat: dim must be in [0, {tensors[0].dim()}), got {dim}")
    for i, t in enumerate(tensors[1:], 1):
        if t.dtype != tensors[0].dtype:
            raise ValueError(f"splitlinear.concat: tensors[{i}] is {t.dtype}, tensors[0] is {tensors[0].dtype}")
        if t.dim() != tensors[0].dim():
            raise ValueError(f"splitlinear.concat: tensors[{i}] has {t.dim()} dims, tensors[0] has "
                             f"{tensors[0].dim()}")


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    tensors, dim = inputs
    ctx.dim = dim
    ctx.sizes = [t.shape[dim] for t in tensors]


def _backward(ctx: Any, grad: Tensor) -> tuple[Any, None]:
    return list(torch.split(grad, ctx.sizes, ctx.dim)), None


concat.register_autograd(_backward, setup_context=_setup_context)


@functools.cache
def register_lowering() -> None:
    """Register :func:`_lower_concat` as Inductor's lowering of ``splitlinear::concat`` (once)."""
    from torch._inductor.lowering import register_lowering as register

    register(torch.ops.splitlinear.concat.default, type_promotion_kind=None)(_lower_concat)


def _lower_concat(tensors: list[Any], dim: int) -> Any:
    """Inductor's ``ConcatKernel``: every input realized into its block of one buffer."""
    from torch._inductor import ir

    return ir.TensorBox(ir.ConcatKernel.create(tensors, dim))


@dataclass(frozen=True)
class _Block:
    """``slice_scatter(zeros, src, dim, start, end)``: ``src`` placed at ``[start, end)`` of ``dim``."""

    src: fx.Node
    start: int
    end: int


def _value(node: Any) -> Tensor | None:
    value = node.meta.get("val") if isinstance(node, fx.Node) else None
    return value if isinstance(value, Tensor) else None


def _known_equal(a: Any, b: Any) -> bool:
    """``a == b`` for sizes that may be symbolic, without adding a guard (false when unknown)."""
    return bool(statically_known_true(sym_eq(a, b)))


def _is_zeros_like(node: Any, like: Tensor) -> bool:
    """Whether ``node`` is ``aten.full(like's shape, 0)`` of ``like``'s dtype."""
    if not (isinstance(node, fx.Node) and node.target is aten.full.default and len(node.args) >= 2):
        return False
    value = _value(node)
    return (node.args[1] == 0 and value is not None and _known_equal(value.shape, like.shape)
            and value.dtype == like.dtype and value.device == like.device)


def _block(node: fx.Node, out: Tensor) -> tuple[int, _Block] | None:
    """``(dim, block)`` if ``node`` places one tensor of ``out``'s dtype into zeros shaped as ``out``."""
    if node.target is not aten.slice_scatter.default or len(node.users) != 1:
        return None
    args = list(node.args) + [None] * (6 - len(node.args))
    base, src, dim, start, end, step = args[:6]
    dim = node.kwargs.get("dim", 0 if dim is None else dim)
    start = node.kwargs.get("start", start)
    end = node.kwargs.get("end", end)
    step = node.kwargs.get("step", 1 if step is None else step)
    src_value = _value(src)
    if (src_value is None or src_value.dtype != out.dtype or step != 1 or not _is_zeros_like(base, out)
            or not isinstance(start, int) or not isinstance(end, int) or not isinstance(dim, int)):
        return None
    dim = dim % out.dim()
    if not _known_equal(src_value.shape[dim], end - start):
        return None
    return dim, _Block(src, start, end)


def _blocks(node: fx.Node, out: Tensor, root: bool) -> list[tuple[int, _Block]] | None:
    """The blocks summed by the ``aten.add`` tree rooted at ``node``; ``None`` if another term is in it."""
    if node.target is aten.add.Tensor and len(node.args) == 2 and not node.kwargs:
        if not root and len(node.users) != 1:
            return None
        found = []
        for arg in node.args:
            sub = _blocks(arg, out, False) if isinstance(arg, fx.Node) else None
            if sub is None:
                return None
            found += sub
        return found
    block = _block(node, out)
    return None if block is None else [block]


def _tiling(node: fx.Node) -> tuple[int, list[fx.Node]] | None:
    """``(dim, sources in order)`` if ``node`` sums blocks that tile one dimension of its value."""
    out = _value(node)
    if out is None or out.dim() == 0:
        return None
    found = _blocks(node, out, True)
    if not found or len(found) < 2 or len({dim for dim, _ in found}) != 1:
        return None
    dim = found[0][0]
    ordered = sorted((block for _, block in found), key=operator.attrgetter("start"))
    edge = 0
    for block in ordered:
        if block.start != edge:
            return None
        edge = block.end
    if not _known_equal(edge, out.shape[dim]):
        return None
    return dim, [block.src for block in ordered]


#: The nodes a rewritten sum is made of: erased once unused (no other node is touched).
_SUM_TARGETS = (aten.add.Tensor, aten.slice_scatter.default, aten.full.default)


def _erase_unused(graph: fx.Graph, root: fx.Node) -> None:
    """Erase ``root`` and, transitively, the adds, ``slice_scatter`` and ``full`` nodes it read
    that nothing else uses now."""
    work = [root]
    while work:
        node = work.pop()
        if node.users or node.op != "call_function" or node.target not in _SUM_TARGETS:
            continue
        inputs = node.all_input_nodes
        graph.erase_node(node)
        work.extend(inputs)


class ConcatNarrowGrads(CustomGraphPass):
    """Inductor post-grad pass: a sum of ``slice_scatter``-into-zeros blocks that tile one
    dimension becomes ``splitlinear::concat`` of the blocks (module docstring).

    Runs on every graph Inductor compiles for the backend (forward, backward, inference); the
    pattern appears in backward graphs, where a narrowed op output gets its gradient. It chains
    to ``then``, the pass the Inductor config held before (a user's), if any.
    """

    def __init__(self, then: Any = None) -> None:
        self.then = then

    def __call__(self, graph: fx.Graph) -> None:
        rewritten = 0
        for node in list(graph.nodes):
            if node.op != "call_function" or node.target is not aten.add.Tensor or not node.users:
                continue
            tiling = _tiling(node)
            if tiling is None:
                continue
            dim, sources = tiling
            with graph.inserting_before(node):
                cat = graph.call_function(torch.ops.splitlinear.concat.default, (sources, dim))
            cat.meta.update(node.meta)
            node.replace_all_uses_with(cat)
            _erase_unused(graph, node)
            rewritten += 1
        if rewritten:
            _bump("narrow_grads_concatenated", rewritten)
        if self.then is not None:
            self.then(graph)

    def uuid(self) -> Any:
        own = get_hash_for_files((__file__,))
        if self.then is None:
            return own
        then = self.then.uuid() if isinstance(self.then, CustomGraphPass) else None
        return None if then is None else (own, then)


_CONFIG_KEY = "post_grad_custom_pre_pass"


def with_concat_pass(patches: dict[str, Any]) -> dict[str, Any]:
    """Inductor config ``patches`` with :class:`ConcatNarrowGrads` as the post-grad pre-pass,
    chained before the one the patches (or else the global config) set."""
    from torch._inductor import config

    register_lowering()
    then = patches.get(_CONFIG_KEY, getattr(config, _CONFIG_KEY))
    if isinstance(then, ConcatNarrowGrads):
        return dict(patches)
    return {**patches, _CONFIG_KEY: ConcatNarrowGrads(then)}

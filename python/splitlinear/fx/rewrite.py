"""Graph rewriting: one planned region becomes one op call.

:func:`rewrite_region` places ``linear_fn(x, [W_0, ...], [b_0, ...] | None)``
at the region's first site (``torch.narrow`` nodes for parts that are row
blocks of one tensor), redirects each site's uses to its column block of the
result, and erases the nodes left dead. The outputs of a horizontal region
are ``torch.narrow`` views of the op's output along the last dimension, made
``.contiguous()`` where strides are observable (graph outputs and ``.view``
users), so results keep eager's layout.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch
import torch.fx as fx

from .model import LinearFn, PartRef, Region, node_tensor, node_value, static_int

#: Tensor methods that observe their input's strides (``view`` of a strided narrow fails).
_VIEW_METHODS: frozenset[str] = frozenset({"view", "view_as"})

#: Views that pass their input's strides on (a row of a strided narrow is strided too): a
#: strided narrow reaching a graph output or a ``view`` through them must be made dense as well.
_PASSING_METHODS: frozenset[str] = frozenset({
    "__getitem__", "narrow", "select", "split", "split_with_sizes", "tensor_split", "chunk", "unbind",
    "transpose", "swapaxes", "swapdims", "t", "permute", "movedim", "squeeze", "unsqueeze", "expand",
    "expand_as", "unflatten", "diagonal", "as_strided", "unfold", "detach"})
_PASSING_FUNCTIONS: frozenset[Any] = frozenset({
    operator.getitem, torch.narrow, torch.select, torch.split, torch.tensor_split, torch.chunk,
    torch.unbind, torch.transpose, torch.swapaxes, torch.swapdims, torch.t, torch.permute, torch.movedim,
    torch.squeeze, torch.unsqueeze, torch.unflatten, torch.diagonal, torch.as_strided, torch.detach,
    torch.Tensor.__getitem__, torch.Tensor.narrow, torch.Tensor.select, torch.Tensor.split,
    torch.Tensor.chunk, torch.Tensor.unbind, torch.Tensor.transpose, torch.Tensor.permute,
    torch.Tensor.squeeze, torch.Tensor.unsqueeze, torch.Tensor.expand, torch.Tensor.detach})


def _passes_strides(node: fx.Node) -> bool:
    if node.op == "call_method":
        return node.target in _PASSING_METHODS
    return node.op == "call_function" and node.target in _PASSING_FUNCTIONS


def observes_strides(users: Iterable[fx.Node]) -> bool:
    """One of ``users`` is a graph output or a ``view``, directly or through views that pass the
    strides on (``q[0]``, ``split``, ``transpose``, ...): a strided narrow of the op's output must
    be made dense for it (shared by the DTensor rewrite)."""
    for user in users:
        if user.op == "output":
            return True
        if user.op == "call_method" and user.target in _VIEW_METHODS:
            return True
        if user.op == "call_function" and user.target in (torch.Tensor.view, torch.Tensor.view_as):
            return True
        if _passes_strides(user) and observes_strides(user.users):
            return True
    return False


def _needs_contiguous(node: fx.Node) -> bool:
    """A horizontal output is a strided view; make it dense where strides are observable."""
    return observes_strides(node.users)


def fake_mode_of(values: Iterable[Any]) -> Any:
    """The fake mode the example values belong to (not the tracing context's: Dynamo
    hands backends a fresh one), or ``None`` if they are real tensors."""
    from torch._subclasses.fake_tensor import FakeTensor

    for value in values:
        if isinstance(value, FakeTensor):
            return value.fake_mode
    return None


def copy_meta(src: fx.Node, dst: fx.Node) -> None:
    for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
        if key in src.meta:
            dst.meta[key] = src.meta[key]


def resolve_replaced(region: Region, replaced: dict[fx.Node, fx.Node]) -> None:
    """Point ``region`` at the replacements of nodes an earlier rewrite erased (chained regions)."""

    def resolve(node: fx.Node) -> fx.Node:
        while node in replaced:
            node = replaced[node]
        return node

    for site in region.sites:
        site.input = resolve(site.input)
        site.weight_parts = [dataclasses.replace(r, node=resolve(r.node)) for r in site.weight_parts]
        if site.bias_parts is not None:
            site.bias_parts = [dataclasses.replace(r, node=resolve(r.node)) for r in site.bias_parts]


def _identity(value: Any) -> Any:
    """A saved-tensor hook that keeps the tensor."""
    return value


@dataclasses.dataclass
class _Examples:
    """Example values of the nodes a rewrite adds (fake tensors under a fake mode)."""

    out: Any  #: the op call's output
    weights: list[Any]  #: the weight parts passed to it (row blocks narrowed)
    biases: list[Any] | None  #: the bias parts, or ``None``
    narrows: list[Any]  #: each site's column block of ``out``
    dense: list[Any]  #: ``.contiguous()`` of each of ``narrows``


def _ref_value(ref: PartRef) -> Any:
    """The example value of a part: its node's, narrowed to its row block."""
    value = node_value(ref.node)
    return value if ref.start is None else value.narrow(0, ref.start, ref.length)


@contextlib.contextmanager
def propagation_context(fake_mode: Any, autocast: tuple[str, torch.dtype] | None) -> Iterator[None]:
    """The state fake propagation runs in: the graph's fake mode, the site's autocast state, identity hooks."""
    ctx = fake_mode if fake_mode is not None else contextlib.nullcontext()
    # The op's Autocast kernel decides the dtype: run it in the site's autocast state.
    amp = torch.autocast(autocast[0], dtype=autocast[1]) if autocast is not None else contextlib.nullcontext()
    # Identity saved-tensor hooks: the call records autograd state on fake
    # tensors, and must not reach hooks the user's code installed around
    # the compile (non-reentrant activation checkpointing counts saved
    # tensors; compile-time ones would break its forward/recompute match).
    with ctx, amp, torch.autograd.graph.saved_tensors_hooks(_identity, _identity):
        yield


def _propagate(region: Region, linear_fn: LinearFn) -> _Examples:
    """Run ``linear_fn`` on the region's example values, as the rewritten graph will.

    Raises:
        RuntimeError: the call failed (the graph is untouched).
    """
    w_refs, b_refs = region.weight_parts, region.bias_parts
    x_value = node_value(region.input)
    fake_mode = fake_mode_of([x_value] + [node_value(r.node) for r in w_refs])
    try:
        with propagation_context(fake_mode, region.sites[0].autocast):
            w_vals = [_ref_value(r) for r in w_refs]
            b_vals = None if b_refs is None else [_ref_value(r) for r in b_refs]
            out_val = linear_fn(x_value, w_vals, b_vals)
            offsets = itertools.accumulate((s.out_features for s in region.sites), initial=0)
            narrows = [out_val.narrow(-1, off, s.out_features) for off, s in zip(offsets, region.sites)]
            return _Examples(out_val, w_vals, b_vals, narrows, [v.contiguous() for v in narrows])
    except Exception as exc:  # noqa: BLE001 - any failure means "do not rewrite"
        raise RuntimeError(f"fake propagation of {region.describe()} through the op failed: {exc}") from exc


def _check_like_sites(region: Region, narrows: Sequence[Any]) -> None:
    """Refuse a replacement whose dtype or shape differs from its site's (the plan misjudged the site).

    Raises:
        RuntimeError: naming the site, the op's dtype and shape and the original's.
    """
    for site, value in zip(region.sites, narrows):
        old = node_tensor(site.out)
        if old is not None and (old.dtype != value.dtype or len(old.shape) != len(value.shape)
                                or any(static_int(a) != static_int(b) for a, b in zip(old.shape, value.shape))):
            raise RuntimeError(
                f"the op would give {site.out.name!r} dtype {value.dtype} and shape {tuple(value.shape)}, "
                f"but the original has {old.dtype} and {tuple(old.shape)}")


def _emit_call(graph: fx.Graph, region: Region, linear_fn: LinearFn, example: _Examples,
               anchor: fx.Node) -> fx.Node:
    """Insert the op call (and ``torch.narrow`` nodes for row-block parts) at the insertion point."""

    def emit_ref(ref: PartRef, value: Any) -> fx.Node:
        if ref.start is None:
            return ref.node
        n = graph.call_function(torch.narrow, (ref.node, 0, ref.start, ref.length))
        n.meta["example_value"] = value
        return n

    w_nodes = [emit_ref(r, v) for r, v in zip(region.weight_parts, example.weights)]
    b_nodes = (None if region.bias_parts is None or example.biases is None
               else [emit_ref(r, v) for r, v in zip(region.bias_parts, example.biases)])
    call = graph.call_function(linear_fn, (region.input, w_nodes, b_nodes))
    call.meta["example_value"] = example.out
    copy_meta(anchor, call)
    return call


def _redirect_sites(graph: fx.Graph, region: Region, call: fx.Node, example: _Examples,
                    replaced: dict[fx.Node, fx.Node]) -> None:
    """Point each site's users at its column block of ``call`` (dense where strides are observable)."""
    offset = 0
    for i, site in enumerate(region.sites):
        if len(region.sites) == 1:
            replacement = call
        else:
            replacement = graph.call_function(torch.narrow, (call, -1, offset, site.out_features))
            replacement.meta["example_value"] = example.narrows[i]
            copy_meta(site.out, replacement)
            if _needs_contiguous(site.out):
                dense = graph.call_method("contiguous", (replacement,))
                dense.meta["example_value"] = example.dense[i]
                copy_meta(site.out, dense)
                replacement = dense
        offset += site.out_features
        site.out.replace_all_uses_with(replacement)
        replaced[site.out] = replacement


def erase_dead(graph: fx.Graph, region: Region) -> None:
    """Erase the sites' outputs, intermediates and bypassed ``torch.cat`` nodes that nothing uses now."""
    erased: set[fx.Node] = set()
    for site in region.sites:
        for node in [site.out, *reversed(site.intermediates), *site.bypassed]:
            if node not in erased and not node.users and node.op not in ("placeholder", "output"):
                graph.erase_node(node)
                erased.add(node)


def region_anchor(graph: fx.Graph, region: Region, replaced: dict[fx.Node, fx.Node]) -> fx.Node:
    """Point ``region`` at earlier rewrites' replacements (``replaced``), then return its first
    site output in graph order: where the replacement call goes."""
    resolve_replaced(region, replaced)
    order = {n: i for i, n in enumerate(graph.nodes)}
    return min((s.out for s in region.sites), key=lambda n: order[n])


def rewrite_region(gm: fx.GraphModule, region: Region, linear_fn: LinearFn,
                   replaced: dict[fx.Node, fx.Node] | None = None) -> None:
    """Replace ``region``'s sites with one ``linear_fn`` call (and narrows for horizontal ones).

    New nodes get ``example_value`` metadata by running ``linear_fn`` under the
    graph's fake mode; a failure there raises before the graph is modified.

    Args:
        gm: the graph module, modified in place (``recompile`` is the caller's).
        region: from :func:`~splitlinear.fx.plan.plan_regions` on this graph.
        linear_fn: the callable placed in the graph (``splitlinear.ops.linear``).
        replaced: shared between the rewrites of one graph: maps each replaced
            site output to its replacement, so that a later region reading it
            (chained split linears) is redirected.

    Raises:
        RuntimeError: fake propagation through ``linear_fn`` failed, or would
            change a site's dtype or shape.
    """
    if replaced is None:
        replaced = {}
    graph = gm.graph
    anchor = region_anchor(graph, region, replaced)
    # Fake propagation and checks first: a failure leaves the graph untouched.
    example = _propagate(region, linear_fn)
    _check_like_sites(region, example.narrows)
    with graph.inserting_before(anchor):
        call = _emit_call(graph, region, linear_fn, example, anchor)
        _redirect_sites(graph, region, call, example, replaced)
    erase_dead(graph, region)

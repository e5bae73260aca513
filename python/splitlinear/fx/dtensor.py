"""Sibling linears over DTensors (tensor parallelism): one local GEMM per rank.

Under ``parallelize_module`` with ``ColwiseParallel`` on q/k/v (or gate/up),
the Dynamo graph a backend receives is DTensor-typed: each sibling has its own
chain ``from_local(x) [→ redistribute] → linear(x_dt, W_dt, b_dt) →
redistribute → to_local``, where ``W_dt`` is ``Shard(0)`` and the linear's
output ``Shard(-1)``. No single placement describes the fused output (each
rank holds ``[q_r | k_r | v_r]``), so the region is rewritten *through* the
DTensors instead::

    x_l = x_dt.to_local(grad_placements=[Partial()])   # backward: the all-reduce
    y_l = linear_fn(x_l, [Wq_dt.to_local(), ...], [bq_dt.to_local(), ...])
    q   = DTensor.from_local(y_l.narrow(-1, 0, Nq_r), mesh, [Shard(-1)])
    ...                                                  # each linear's DTensor result

Each site's DTensor result is rebuilt from its column block of the one local
GEMM, so the graph after it (redistribute, to_local, or DTensor ops when
``use_local_output=False``) is untouched. ``to_local`` of a weight gives its
gradient back as a DTensor with the weight's placements; the input's local
gradient is a partial sum over this rank's output columns, reduced by the
backward of the input's own conversion (``from_local``: all-reduce; after a
``SequenceParallel`` all-gather: reduce-scatter), as in stock ``ColwiseParallel``.

Rules (anything else is a rejection, with the reason): the input is
``Replicate`` on every mesh dim; on each mesh dim every weight part is
``Shard(0)`` or every one is ``Replicate``, biases alike, and all siblings of a
region have the same weight placements; the output is
``Shard(-1)`` where the weights are sharded and ``Replicate`` elsewhere; all
operands are DTensors on one mesh; no ``torch.cat`` of DTensor parts.

Siblings read equal but distinct DTensor inputs (one ``from_local`` per
sibling): :func:`canonicalize_inputs` makes them share the first one when the
conversions are the same (same local source, placements, shape, stride, dtype).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import torch
import torch.fx as fx

from .._dtensor import is_dtensor, local_shard
from .model import LinearFn, LinearSite, Region, node_tensor, node_value
from .rewrite import copy_meta, erase_dead, fake_mode_of, observes_strides, propagation_context, region_anchor

__all__ = [
    "canonicalize_inputs",
    "check_site",
    "is_dtensor",
    "is_dtensor_region",
    "local_tensor",
    "rewrite_dtensor_region",
]


def local_tensor(node: Any) -> torch.Tensor | None:
    """:func:`~.model.node_tensor`, or the local shard of a DTensor value (what the op sees on this rank)."""
    value = node_tensor(node)
    return None if value is None else local_shard(value)


def is_dtensor_site(site: LinearSite) -> bool:
    """Any of ``site``'s operands or its output is a DTensor."""
    nodes = [site.out, site.input, site.weight, *([] if site.bias is None else [site.bias])]
    return any(is_dtensor(node_value(n)) for n in nodes)


def is_dtensor_region(region: Region) -> bool:
    """``region``'s sites compute on DTensors (rewrite with :func:`rewrite_dtensor_region`)."""
    return is_dtensor_site(region.sites[0])


# ---------------------------------------------------------------------------
# Equal inputs
# ---------------------------------------------------------------------------

#: Dynamo's in-graph DTensor conversions (closures over their constant arguments), by name.
_CONVERSIONS: tuple[str, ...] = ("from_local", "redistribute")


def _conversion(node: fx.Node) -> str | None:
    """``"from_local"`` / ``"redistribute"`` if ``node`` is Dynamo's in-graph call of it, else ``None``."""
    if node.op != "call_function" or len(node.args) != 1 or node.kwargs:
        return None
    module = getattr(node.target, "__module__", "") or ""
    qualname = getattr(node.target, "__qualname__", "") or ""
    if not module.startswith("torch._dynamo"):
        return None
    for name in _CONVERSIONS:
        if f"_{name}." in qualname or f"method_{name}." in qualname:
            return name
    return None


def _input_key(node: fx.Node) -> Hashable:
    """Nodes with equal keys hold equal values: a chain of DTensor conversions of one source."""
    name = _conversion(node)
    value = node_value(node)
    source = node.args[0] if name is not None else None
    if name is None or not is_dtensor(value) or not isinstance(source, fx.Node):
        return node
    spec = (id(value.device_mesh), tuple(value.placements), tuple(value.shape), tuple(value.stride()), value.dtype)
    return (name, _input_key(source), spec)


def _chain(node: fx.Node, stop: fx.Node) -> list[fx.Node]:
    """The conversion nodes from ``node`` back to (not including) ``stop``'s source, newest first."""
    nodes = []
    while _conversion(node) is not None and node is not stop:
        nodes.append(node)
        node = node.args[0]  # type: ignore[assignment]
    return nodes


def canonicalize_inputs(sites: Sequence[LinearSite]) -> None:
    """Point DTensor sites whose inputs are equal conversions of one tensor at the first such node.

    The dropped conversion nodes join the site's ``intermediates``: erased by
    the rewrite when nothing else reads them (one all-gather instead of one per
    sibling under sequence parallelism)."""
    if not any(is_dtensor(node_value(s.input)) for s in sites):
        return
    first: dict[Hashable, fx.Node] = {}
    order = {n: i for i, n in enumerate(sites[0].out.graph.nodes)}
    for site in sorted(sites, key=lambda s: order[s.input]):
        if not is_dtensor(node_value(site.input)):
            continue
        key = _input_key(site.input)
        canonical = first.setdefault(key, site.input)
        if canonical is not site.input:
            site.intermediates.extend(reversed(_chain(site.input, canonical)))  # erased newest first
            site.input = canonical


# ---------------------------------------------------------------------------
# Placement rules
# ---------------------------------------------------------------------------


def _placement_names(value: Any) -> str:
    return "[" + ", ".join(str(p) for p in value.placements) + "]"


def check_site(site: LinearSite) -> str | None:
    """Why the DTensor ``site`` (parts filled by analysis) cannot run as one local GEMM, or ``None``.

    See the module docstring for the rules."""
    from torch.distributed.tensor import Replicate, Shard

    refs = [*site.weight_parts, *(site.bias_parts or [])]
    nodes = [("input", site.input), ("output", site.out), *((f"part {r.node.name!r}", r.node) for r in refs)]
    for what, node in nodes:
        if not is_dtensor(node_value(node)):
            return f"{what} is a plain tensor among DTensor operands"
    if site.from_cat or any(r.start is not None for r in refs):
        return "a torch.cat of DTensor parts (not supported under tensor parallelism)"
    x, out = node_value(site.input), node_value(site.out)
    mesh = x.device_mesh
    for what, node in nodes[1:]:
        if node_value(node).device_mesh != mesh:
            return f"{what} is on another device mesh than the input"
    if any(not isinstance(p, Replicate) for p in x.placements):
        return f"input placements {_placement_names(x)}, expected Replicate on every mesh dim"
    weights = [node_value(r.node) for r in site.weight_parts]
    biases = [node_value(r.node) for r in site.bias_parts or []]
    expected_out = []
    for dim in range(mesh.ndim):
        kinds = {type(w.placements[dim]) for w in weights} | {type(b.placements[dim]) for b in biases}
        ok = all(w.placements[dim] in (Shard(0), Replicate()) for w in weights)
        ok = ok and all(b.placements[dim] in (Shard(0), Replicate()) for b in biases)
        if not ok or len(kinds) != 1:
            parts = ", ".join(f"{r.node.name!r} {_placement_names(node_value(r.node))}" for r in refs)
            return (f"weight/bias placements on mesh dim {dim} are not all Shard(0) or all Replicate "
                    f"({parts})")
        expected_out.append(Shard(out.dim() - 1) if kinds == {Shard} else Replicate())
    if tuple(out.placements) != tuple(expected_out):
        return f"output placements {_placement_names(out)}, expected {expected_out}"
    return None


# ---------------------------------------------------------------------------
# Rewriting
# ---------------------------------------------------------------------------


def _to_local(t: Any) -> Any:
    """``t.to_local()``: the local shard; its gradient comes back with ``t``'s placements."""
    return t.to_local()


def _to_local_with_grad(grad_placements: tuple[Any, ...]) -> Callable[[Any], Any]:
    def to_local_input(t: Any) -> Any:
        return t.to_local(grad_placements=grad_placements)

    return to_local_input


def _from_local(mesh: Any, placements: tuple[Any, ...], shape: torch.Size,
                stride: tuple[int, ...]) -> Callable[[Any], Any]:
    from torch.distributed.tensor import DTensor

    def from_local_output(t: Any) -> Any:
        return DTensor.from_local(t, mesh, placements, run_check=False, shape=shape, stride=stride)

    return from_local_output


def _final_users(node: fx.Node) -> list[fx.Node]:
    """``node``'s users, looking through Dynamo's ``redistribute`` / ``to_local`` conversions."""
    users = []
    for user in node.users:
        qualname = getattr(user.target, "__qualname__", "") or ""
        if user.op == "call_function" and ("method_redistribute." in qualname or "method_to_local." in qualname):
            users.extend(_final_users(user))
        else:
            users.append(user)
    return users


def _needs_contiguous(site_out: fx.Node) -> bool:
    """The local result reaches a graph output or a ``view`` (strides observable)."""
    return observes_strides(_final_users(site_out))


def _grad_placements(region: Region) -> tuple[Any, ...]:
    """The input's local gradient: ``Partial`` where the weights are sharded (a sum over
    this rank's output columns), ``Replicate`` elsewhere."""
    from torch.distributed.tensor import Partial, Replicate, Shard

    weight = node_value(region.weight_parts[0].node)
    return tuple(Partial() if isinstance(p, Shard) else Replicate() for p in weight.placements)


def rewrite_dtensor_region(gm: fx.GraphModule, region: Region, linear_fn: LinearFn,
                           replaced: dict[fx.Node, fx.Node] | None = None) -> None:
    """Replace the DTensor sites of ``region`` with one local ``linear_fn`` call (see the module docstring).

    Args: as :func:`~splitlinear.fx.rewrite.rewrite_region`.

    Raises:
        RuntimeError: fake propagation through ``linear_fn`` on the local shards
            failed, or would give a site another local dtype or shape (the
            graph is untouched).
    """
    if replaced is None:
        replaced = {}
    graph = gm.graph
    anchor = region_anchor(graph, region, replaced)
    w_nodes = [r.node for r in region.weight_parts]
    b_nodes = None if region.bias_parts is None else [r.node for r in region.bias_parts]
    # The input's gradient placement is one for the whole region: siblings must agree.
    placements = {tuple(node_value(r.node).placements) for r in region.weight_parts}
    if len(placements) != 1:
        raise RuntimeError(f"sibling weights have different placements {sorted(map(str, placements))}; "
                           "one local GEMM needs one input-gradient placement")
    x_local = local_tensor(region.input)
    w_locals = [local_tensor(n) for n in w_nodes]
    b_locals = None if b_nodes is None else [local_tensor(n) for n in b_nodes]
    sizes = [sum(local_tensor(r.node).shape[0] for r in s.weight_parts) for s in region.sites]
    try:
        with propagation_context(fake_mode_of([x_local, *w_locals]), region.sites[0].autocast):
            out_local = linear_fn(x_local, w_locals, b_locals)
            offsets = list(itertools.accumulate(sizes, initial=0))
            narrows = [out_local.narrow(-1, off, n) for off, n in zip(offsets, sizes)]
            dense = [v.contiguous() for v in narrows]
    except Exception as exc:  # noqa: BLE001 - any failure means "do not rewrite"
        raise RuntimeError(f"fake propagation of {region.describe()} through the op on local shards "
                           f"failed: {exc}") from exc
    for site, value in zip(region.sites, narrows):
        old = local_tensor(site.out)
        if old is None or old.dtype != value.dtype or tuple(old.shape) != tuple(value.shape):
            raise RuntimeError(
                f"the op would give {site.out.name!r} a local dtype {value.dtype} and shape "
                f"{tuple(value.shape)}, but the original has {None if old is None else (old.dtype, tuple(old.shape))}")

    def emit(target: Callable[..., Any], args: tuple[Any, ...], value: Any, meta_from: fx.Node) -> fx.Node:
        node = graph.call_function(target, args)
        node.meta["example_value"] = value
        copy_meta(meta_from, node)
        return node

    with graph.inserting_before(anchor):
        x_node = emit(_to_local_with_grad(_grad_placements(region)), (region.input,), x_local, anchor)
        w_args = [emit(_to_local, (n,), v, anchor) for n, v in zip(w_nodes, w_locals)]
        b_args = (None if b_nodes is None or b_locals is None
                  else [emit(_to_local, (n,), v, anchor) for n, v in zip(b_nodes, b_locals)])
        call = emit(linear_fn, (x_node, w_args, b_args), out_local, anchor)
        for i, site in enumerate(region.sites):
            out = node_value(site.out)
            part = emit(torch.narrow, (call, -1, offsets[i], sizes[i]), narrows[i], site.out)
            if _needs_contiguous(site.out):
                part = graph.call_method("contiguous", (part,))
                part.meta["example_value"] = dense[i]
                copy_meta(site.out, part)
            rebuilt = emit(_from_local(out.device_mesh, tuple(out.placements), out.shape, out.stride()),
                           (part,), out, site.out)
            site.out.replace_all_uses_with(rebuilt)
            replaced[site.out] = rebuilt
    erase_dead(graph, region)

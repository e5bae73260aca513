"""Fused regions whose weight parts are not back to back in one storage, named once.

The op checks on every call whether a region's weight parts are adjacent and otherwise copies them
or runs one GEMM per part: correct, and slower. The backend names such regions when it compiles a
graph (:func:`check_regions`), and, because Dynamo reuses a compiled graph for a second instance of
the same model class (Parameters are graph inputs, guarded by shape and dtype, not identity),
:class:`AdjacencyWatch` checks again when the graph runs with other weights than the last call's.
Groups over separate parts at compile time are named then and not watched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import fx

from .._siblings import PACKED_TAG, in_order_adjacent, warn_unpacked
from .fp8 import site_fqn
from .model import Region


@dataclasses.dataclass(frozen=True)
class WeightGroup:
    """A fused region's weight parts among a graph's inputs.

    Attributes:
        names: the region's linears, by module FQN (the node's name in a graph without modules).
        indices: the graph input index of each weight part, in the op's order.
    """

    names: tuple[str, ...]
    indices: tuple[int, ...]


def weight_groups(placeholders: Sequence[fx.Node], regions: Sequence[Region]) -> list[WeightGroup]:
    """The regions of two or more weight parts that are whole graph inputs (``placeholders``: the
    graph's placeholder nodes in input order, taken before the rewrite)."""
    index = {node: i for i, node in enumerate(placeholders)}
    groups = []
    for region in regions:
        parts = region.weight_parts
        if len(parts) < 2 or any(p.start is not None or p.node not in index for p in parts):
            continue
        indices = tuple(index[p.node] for p in parts)
        if len(set(indices)) == len(indices):
            groups.append(WeightGroup(tuple(site_fqn(s) or s.out.name for s in region.sites), indices))
    return groups


def _parts(group: WeightGroup, inputs: Sequence[Any]) -> list[torch.Tensor] | None:
    """``group``'s parts among ``inputs``, or ``None`` where one is not a plain tensor on a real
    device (a DTensor's parts are checked where FSDP2/TP shard them; fake and meta tensors have no
    storage to compare)."""
    parts = [inputs[i] for i in group.indices]
    if all(type(p) in (torch.Tensor, torch.nn.Parameter) and p.device.type != "meta" for p in parts):
        return parts
    return None


def check_regions(groups: Sequence[WeightGroup], inputs: Sequence[Any]) -> list[WeightGroup]:
    """Warns once (:func:`~splitlinear._siblings.warn_unpacked`) naming the groups whose parts among
    ``inputs`` (the graph's real example inputs) are not adjacent; returns the groups that are.

    Parts that ``pack_parameters`` packed and that lost their buffer since are left to
    :func:`~splitlinear._siblings.check_packed_adjacency`, which says why."""
    adjacent, apart = [], []
    for group in groups:
        parts = _parts(group, inputs)
        if parts is None:
            continue
        if in_order_adjacent(parts):
            adjacent.append(group)
        elif not any(hasattr(p, PACKED_TAG) for p in parts):
            apart.append((group, parts[0]))
    if apart:
        warn_unpacked([g.names for g, _ in apart], owner=apart[0][1])
    return adjacent


class AdjacencyWatch:
    """A compiled graph that checks its adjacent groups again when it runs with other weights.

    Each call compares the weight parts' addresses of two groups with those it last saw: the first
    group (another instance of the model changes every part) and one more in turn (a ``.data``
    assignment to any part shows within as many calls as there are groups). That is a handful of
    ``data_ptr()`` calls whatever the model's size; comparing all 160 q/k/v and gate/up parts of a
    32-layer Llama's graph on every call cost about 12 µs on a 2-core x86 host. When one differs,
    every group is checked and those no longer adjacent are named once per weights
    (:func:`~splitlinear._siblings.warn_unpacked`)."""

    def __init__(self, fn: Callable[..., Any], groups: Sequence[WeightGroup], inputs: Sequence[Any]) -> None:
        self._fn = fn
        self._groups = list(groups)
        self._seen = [_addresses(g, inputs) for g in self._groups]
        self._turn = 0

    def __call__(self, *args: Any) -> Any:
        turn = self._turn
        self._turn = (turn + 1) % len(self._groups)
        if any(_addresses(self._groups[i], args) != self._seen[i] for i in ((0, turn) if turn else (0,))):
            self._seen = [_addresses(g, args) for g in self._groups]
            apart = [(g, parts[0]) for g in self._groups
                     if (parts := _parts(g, args)) is not None and not in_order_adjacent(parts)]
            if apart:
                warn_unpacked([g.names for g, _ in apart], owner=apart[0][1],
                              context=" (in the weights this compiled graph now runs with: another "
                                      "instance of the model, or parts given new storage since it compiled)")
        return self._fn(*args)


def _addresses(group: WeightGroup, args: Sequence[Any]) -> list[int]:
    """The addresses of ``group``'s weight parts among ``args``."""
    return [args[i].data_ptr() for i in group.indices]

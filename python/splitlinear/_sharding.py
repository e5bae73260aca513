"""DTensor sharding rules of ``splitlinear.linear`` and its backward ops (eager tensor parallelism).

Registered with ``torch.distributed.tensor.experimental.register_sharding``;
per mesh dim, with ``x`` ``[..., K]`` of ``nd`` dims and ``P`` weight parts:

==============================  ===============================  =====================================
inputs                          ``linear`` output                why it is exact
==============================  ===============================  =====================================
all ``Replicate``               ``Replicate``                    every rank computes everything
``x`` ``Shard(d)``, ``d<nd-1``  ``Shard(d)``                     rows are independent
``x`` ``Shard(nd-1)``, every    ``Partial``                      a sum over K; the bias is made
``W_i`` ``Shard(1)``                                             ``Partial`` (added once in total)
``P == 1``: ``W`` ``Shard(0)``  ``Shard(nd-1)``                  one part: its columns are the output's
==============================  ===============================  =====================================

``linear_dgrad`` and ``linear_wgrad`` follow from these (the gradients of
each case). DTensor redistributes other inputs (e.g. ``Partial`` ones) to the
cheapest of these cases.

Two or more weight parts sharded ``Shard(0)`` (``ColwiseParallel`` on q/k/v)
have no rule: each rank's fused output would be ``[q_r | k_r | v_r]``, which
no DTensor placement describes. The rule raises a ``RuntimeError`` naming the
op and the placements instead of answering with a wrong one; the
``torch.compile`` backend runs that case as one local GEMM
(:mod:`splitlinear.fx.dtensor`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor.experimental import register_sharding

#: ``(output placements, flattened input placements)`` per strategy, for one mesh dim.
Strategies = list[tuple[list[Any], list[Any]]]


def _refuse_colwise_parts(op: str, parts: Sequence[Any], role: str) -> None:
    """Raise when two or more ``parts`` are ``Shard(0)`` on some mesh dim (see the module docstring)."""
    if len(parts) < 2:
        return
    for dim in range(len(parts[0].placements)):
        if any(p.placements[dim] == Shard(0) for p in parts):
            placements = ", ".join(f"{role}[{i}] {list(p.placements)}" for i, p in enumerate(parts))
            raise RuntimeError(
                f"{op}: {len(parts)} {role} parts sharded Shard(0) on mesh dim {dim} ({placements}): "
                "the fused output [part_0 local | part_1 local | ...] on each rank has no DTensor "
                "placement. Compile with torch.compile(backend='splitlinear') (one local GEMM per rank, "
                "DTensor results per part), or call the op on the local shards (.to_local())")


@register_sharding(torch.ops.splitlinear.linear.default)
def _linear_rule(x: Any, weight: Sequence[Any], bias: Sequence[Any] | None = None) -> Strategies:
    _refuse_colwise_parts("splitlinear.linear", weight, "weight")
    if bias is not None:
        _refuse_colwise_parts("splitlinear.linear", bias, "bias")
    nd, n, nb = x.ndim, len(weight), 0 if bias is None else len(bias)
    rules: Strategies = [([Replicate()], [Replicate()] * (1 + n + nb))]
    rules += [([Shard(d)], [Shard(d)] + [Replicate()] * (n + nb)) for d in range(nd - 1)]
    rules.append(([Partial()], [Shard(nd - 1)] + [Shard(1)] * n + [Partial()] * nb))
    if n == 1:
        rules.append(([Shard(nd - 1)], [Replicate(), Shard(0)] + [Shard(0)] * nb))
    return rules


@register_sharding(torch.ops.splitlinear.linear_dgrad.default)
def _dgrad_rule(grad_output: Any, weight: Sequence[Any]) -> Strategies:
    _refuse_colwise_parts("splitlinear.linear_dgrad", weight, "weight")
    nd, n = grad_output.ndim, len(weight)
    rules: Strategies = [([Replicate()], [Replicate()] * (1 + n))]
    rules += [([Shard(d)], [Shard(d)] + [Replicate()] * n) for d in range(nd - 1)]
    rules.append(([Shard(nd - 1)], [Replicate()] + [Shard(1)] * n))
    if n == 1:
        rules.append(([Partial()], [Shard(nd - 1), Shard(0)]))
    return rules


@register_sharding(torch.ops.splitlinear.linear_wgrad.default)
def _wgrad_rule(grad_output: Any, input: Any, bias: bool) -> Strategies:
    nd = grad_output.ndim
    rules: Strategies = [([Replicate(), Replicate()], [Replicate(), Replicate()])]
    rules += [([Partial(), Partial()], [Shard(d), Shard(d)]) for d in range(nd - 1)]
    rules.append(([Shard(1), Replicate()], [Replicate(), Shard(nd - 1)]))
    rules.append(([Shard(0), Shard(0)], [Shard(nd - 1), Replicate()]))
    return rules

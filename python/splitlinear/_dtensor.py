"""Telling DTensors apart, for torch builds with or without ``torch.distributed``.

Used by :mod:`splitlinear.packing` (packing each rank's local shards) and
:mod:`splitlinear.fx.dtensor` (rewriting sibling linears over DTensors).
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["is_dtensor", "local_shard"]


def _dtensor_type() -> type | None:
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # torch built without distributed
        return None
    return DTensor


def is_dtensor(value: Any) -> bool:
    """``value`` is a DTensor (real, or with a fake local tensor while tracing)."""
    cls = _dtensor_type()
    return cls is not None and isinstance(value, cls)


def local_shard(t: torch.Tensor) -> torch.Tensor:
    """A DTensor's local shard (what this rank stores and the op computes on), or ``t`` itself."""
    return t._local_tensor if is_dtensor(t) else t

"""Split parameters under distributed wrappers.

- :func:`pack_fsdp_parameters` (:mod:`.fsdp`): after ``fully_shard``, lay out
  the unsharded parameters of each sibling group back to back in one buffer,
  so the op takes its zero-copy path under FSDP2.
"""

from __future__ import annotations

from .fsdp import pack_fsdp_parameters

__all__ = ["pack_fsdp_parameters"]

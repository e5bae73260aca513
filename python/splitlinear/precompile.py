"""Kernels compiled at graph-compile time, not at the first call.

The backend calls :func:`precompile_regions` once per rewritten graph, so that
a first forward or backward never waits for the kernel JIT (the
``kernels_precompiled`` backend counter says how many it compiled).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ._logging import logger
from .fx import Region, node_value
from .stats import bump as _bump

__all__ = ["precompile_regions"]


def precompile_regions(regions: Sequence[Region], dump_dir: str | None) -> None:
    """Compiles each region's kernels now (graph-compile time), not at the
    first call: forward always, backward ones when grad mode is on. The
    kernels' dtype is the input's, or under autocast the autocast dtype (the
    op's Autocast kernel casts). With ``dump_dir`` the kernels write their IR
    there: the dump is scoped to this compile, never set process-wide."""
    if not regions:
        return
    from . import ops

    before = ops.runtime_counters()["compiles"]
    for region in regions:
        val = node_value(region.input)
        if not isinstance(val, torch.Tensor):
            continue
        autocast = region.sites[0].autocast
        dtype = autocast[1] if autocast is not None else val.dtype
        try:
            ops.precompile(dtype, val.device, len(region.weight_parts),
                           region.bias_parts is not None, torch.is_grad_enabled(), dump_dir)
        except RuntimeError as exc:  # e.g. a device the op does not run on: the call will say so
            logger.warning("splitlinear: precompiling %s failed: %s", region.describe(), exc)
    _bump("kernels_precompiled", ops.runtime_counters()["compiles"] - before)

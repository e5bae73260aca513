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


def _requires_grad(region: Region, x: torch.Tensor) -> list[bool]:
    """The ``requires_grad`` flags of the op's tensor inputs, ``[input, weight..., bias...]``,
    from the graph's example values (a part without one counts as requiring grad)."""
    parts = region.weight_parts + (region.bias_parts or [])
    values = [node_value(p.node) for p in parts]
    return [x.requires_grad] + [not isinstance(v, torch.Tensor) or v.requires_grad for v in values]


def precompile_regions(regions: Sequence[Region], dump_dir: str | None) -> None:
    """Compiles each region's kernels now (graph-compile time), not at the
    first call. The op decides which (``ops.precompile``) from what the region
    records: the input's dtype and device, the autocast dtype and grad mode
    where the region runs, and which inputs require grad. With ``dump_dir`` the
    kernels write their IR there: the dump is scoped to this compile, never set
    process-wide."""
    if not regions:
        return
    from . import ops

    before = ops.runtime_counters()["compiles"]
    for region in regions:
        x = node_value(region.input)
        if not isinstance(x, torch.Tensor):
            continue
        site = region.sites[0]
        try:
            ops.precompile(x.dtype, x.device, len(region.weight_parts), region.bias_parts is not None,
                           bool(site.grad_mode), dump_dir,
                           autocast_dtype=None if site.autocast is None else site.autocast[1],
                           requires_grad=_requires_grad(region, x))
        except RuntimeError as exc:
            # e.g. a device the op does not run on: the call raises the same error, naming it, so
            # INFO (a WARNING record would print first, to stderr, with no logging set up).
            logger.info("splitlinear: precompiling %s failed: %s", region.describe(), exc)
    _bump("kernels_precompiled", ops.runtime_counters()["compiles"] - before)

"""splitlinear: one GEMM for linear layers whose weight is split into parts.

Use the torch.compile backend (registered through the ``torch_dynamo_backends``
entry point, no import needed)::

    model = torch.compile(model, backend="splitlinear", options={"strict": True})

Public API:

- :class:`SplitLinearOptions`: the backend's options;
- :func:`stats` / :func:`reset_stats`: compile-time and run-time counters;
- :func:`pack_parameters`: make sibling projections' Parameters adjacent in one
  storage (zero-copy path), keeping Parameter objects and state-dict keys;
- :func:`pack_fsdp_parameters`: after FSDP2's ``fully_shard``, make each
  sibling group's unsharded Parameters views of one buffer (zero-copy path);
- :mod:`splitlinear.ops` (imported lazily, loads the op library):
  ``splitlinear.ops.linear(input, weight_parts, bias_parts=None)``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .distributed import pack_fsdp_parameters
from .options import SplitLinearOptions
from .packing import PackReport, pack_parameters
from .stats import reset_stats, stats

if TYPE_CHECKING:
    from . import ops as ops

__all__ = [
    "PackReport",
    "SplitLinearOptions",
    "ops",
    "pack_fsdp_parameters",
    "pack_parameters",
    "reset_stats",
    "stats",
]

_LAZY_SUBMODULES = ("ops", "backend")


def __getattr__(name: str) -> Any:
    """Import ``splitlinear.ops`` (which loads the op library) and ``splitlinear.backend`` on first use."""
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

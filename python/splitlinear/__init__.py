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

from . import _torch_version

# Before anything loads the op library, which links torch's C++ ABI. Read from
# the installed distribution: importing torch here would cost `splitlinear-opt`
# (which needs no torch) 2 s per call.
_torch_version.check(_torch_version.installed_version())

# Bound now, not lazily: `splitlinear.stats` is both this function and a
# submodule, and a first import of the submodule would rebind the name to it.
from .stats import reset_stats, stats  # noqa: E402  (torch-free)

if TYPE_CHECKING:
    from . import backend as backend
    from . import ops as ops
    from .distributed import pack_fsdp_parameters
    from .options import SplitLinearOptions
    from .packing import PackReport, pack_parameters

__all__ = [
    "PackReport",
    "SplitLinearOptions",
    "ops",
    "pack_fsdp_parameters",
    "pack_parameters",
    "reset_stats",
    "stats",
]

#: Public name -> the submodule defining it, imported on first use.
_LAZY_ATTRIBUTES = {
    "PackReport": "packing",
    "SplitLinearOptions": "options",
    "pack_fsdp_parameters": "distributed",
    "pack_parameters": "packing",
}
#: Submodules imported on first attribute use (``ops`` loads the op library).
_LAZY_SUBMODULES = ("ops", "backend")


def _version() -> str:
    """This package's version: ``python/pyproject.toml``'s in a source tree, else the installed
    distribution's metadata."""
    from pathlib import Path

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        import tomllib  # Python >= 3.11; on 3.10 the metadata answers
    except ImportError:
        tomllib = None
    if tomllib is not None and pyproject.is_file():
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        if project.get("name") == "splitlinear":
            return str(project["version"])
    from importlib.metadata import version

    return version("splitlinear")


def __getattr__(name: str) -> Any:
    """Import the public names' submodules on first use (PEP 562), so ``import splitlinear`` stays cheap."""
    if name == "__version__":
        globals()[name] = _version()
        return globals()[name]
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY_ATTRIBUTES:
        value = getattr(importlib.import_module(f".{_LAZY_ATTRIBUTES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

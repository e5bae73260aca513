"""The torch versions this build of splitlinear runs with, checked at import.

The op library (``libsplitlinear_torch.so``) links LibTorch's C++ ABI, which
changes between torch minor versions: loaded under another torch it fails with
``undefined symbol`` (or worse, loads and misbehaves). ``import splitlinear``
therefore checks the installed torch first and names both versions. The range
is the wheel's ``Requires-Dist`` (``python/pyproject.toml``).
"""

from __future__ import annotations

import importlib.metadata
import re

#: ``(low, high)``: torch ``low <= version < high``, as (major, minor).
SUPPORTED_TORCH: tuple[tuple[int, int], tuple[int, int]] = ((2, 11), (2, 12))


def requirement() -> str:
    """The supported range as a pip requirement, ``"torch>=2.11,<2.12"``."""
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED_TORCH
    return f"torch>={lo_major}.{lo_minor},<{hi_major}.{hi_minor}"


def parse(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a torch version string (``"2.11.0+cu130"`` -> ``(2, 11)``).

    Raises:
        ValueError: the string does not start with ``major.minor``.
    """
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is None:
        raise ValueError(f"splitlinear: cannot read torch version {version!r}")
    return int(match.group(1)), int(match.group(2))


def installed_version() -> str:
    """The installed torch's version, from its distribution metadata (without importing torch).

    Falls back to importing torch where no metadata exists (a source build on the path).
    """
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        import torch

        return str(torch.__version__)


def check(version: str) -> None:
    """Raises ImportError, naming ``version`` and the supported range, if it is outside the range."""
    low, high = SUPPORTED_TORCH
    if not low <= parse(version) < high:
        raise ImportError(
            f"splitlinear: this build needs {requirement()}, but torch {version} is installed; "
            f"its op library links torch's C++ ABI, which changes with every minor version. "
            f"Install a matching torch (pip install '{requirement()}') or a splitlinear built for torch {version}.")

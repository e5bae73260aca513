"""Loading of the native op library (``libsplitlinear_torch.so``).

The library registers ``torch.ops.splitlinear.*``. It is looked up, in order,
in ``$SPLITLINEAR_LIBRARY_DIR``, in ``splitlinear/lib/`` inside the installed
package, and in ``$SPLITLINEAR_BUILD_DIR/lib`` (default: ``build/lib`` of the
source checkout this package lives in).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import torch

LIBRARY_NAME = "libsplitlinear_torch.so"
_lock = threading.Lock()
_loaded_from: Path | None = None


def candidate_dirs() -> list[Path]:
    """Directories searched for the op library, in order."""
    dirs: list[Path] = []
    if env := os.environ.get("SPLITLINEAR_LIBRARY_DIR"):
        dirs.append(Path(env))
    package = Path(__file__).resolve().parent
    dirs.append(package / "lib")
    build = os.environ.get("SPLITLINEAR_BUILD_DIR")
    dirs.append(Path(build) / "lib" if build else package.parents[1] / "build" / "lib")
    return dirs


def find_library() -> Path | None:
    """The first op library found in :func:`candidate_dirs`, or None."""
    for directory in candidate_dirs():
        path = directory / LIBRARY_NAME
        if path.is_file():
            return path
    return None


def load_library() -> Path:
    """Loads the op library once (idempotent, thread-safe) and returns its path.

    Raises:
        RuntimeError: if no library is found (the message lists where it looked).
    """
    global _loaded_from
    with _lock:
        if _loaded_from is not None:
            return _loaded_from
        path = find_library()
        if path is None:
            searched = ", ".join(str(d) for d in candidate_dirs())
            raise RuntimeError(
                f"splitlinear: {LIBRARY_NAME} not found (searched: {searched}); "
                "build it with scripts/build.sh or set SPLITLINEAR_LIBRARY_DIR"
            )
        torch.ops.load_library(str(path))
        _loaded_from = path
        return path


def is_available() -> bool:
    """True if the op library can be (or has been) loaded."""
    return _loaded_from is not None or find_library() is not None

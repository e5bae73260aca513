"""Loading of the native op library (``libsplitlinear_torch.so``).

The library registers ``torch.ops.splitlinear.*``. It is looked up, in order,
in ``$SPLITLINEAR_LIBRARY_DIR``, in ``splitlinear/lib/`` inside the installed
package, and in ``$SPLITLINEAR_BUILD_DIR/lib`` (default: ``build/lib`` of the
source checkout this package lives in). :func:`build_id` identifies the
loaded build (compile caches key on it).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import threading
from pathlib import Path

LIBRARY_NAME = "libsplitlinear_torch.so"
_lock = threading.Lock()
_loaded_from: Path | None = None
_loaded_digest: str | None = None

#: The ops' Python face: the wrapper in the graph, the fake kernels tracing runs and the dtype
#: list they check against.
_OP_SOURCES = ("ops.py", "_fake.py", "_fake_fp8.py", "_dtypes.py")


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


def find_library(name: str = LIBRARY_NAME) -> Path | None:
    """The first library ``name`` (default: the op library) found in :func:`candidate_dirs`, or None."""
    for directory in candidate_dirs():
        path = directory / name
        if path.is_file():
            return path
    return None


def load_library() -> Path:
    """Loads the op library once (idempotent, thread-safe) and returns its path.

    Raises:
        RuntimeError: if no library is found (the message lists where it looked) or it fails to load.
        ImportError: if the imported torch is outside the range this build links against.
    """
    global _loaded_from, _loaded_digest
    with _lock:
        if _loaded_from is not None:
            return _loaded_from
        import torch  # here, not at the top: splitlinear-opt finds libraries without torch

        from . import _torch_version

        # The torch actually imported (its metadata was checked at `import splitlinear`).
        _torch_version.check(torch.__version__)
        path = find_library()
        if path is None:
            searched = ", ".join(str(d) for d in candidate_dirs())
            raise RuntimeError(
                f"splitlinear: {LIBRARY_NAME} not found (searched: {searched}); "
                "build it with scripts/build.sh or set SPLITLINEAR_LIBRARY_DIR"
            )
        # The digest of what is loaded: a rebuild later in this process must not change it.
        digest = _build_digest(path)
        try:
            torch.ops.load_library(str(path))
        except OSError as err:
            # Typically a CUDA library the runtime needs (libcudart.so.13, libcublasLt.so.13):
            # a CUDA 13 torch wheel installs both under site-packages/nvidia/cu13/lib.
            raise RuntimeError(
                f"splitlinear: {path} failed to load: {err}. It needs torch {torch.__version__}'s "
                "libraries and the CUDA 13 runtime and cuBLASLt that torch's CUDA 13 wheels install "
                "(nvidia/cu13/lib in site-packages)") from err
        _loaded_from, _loaded_digest = path, digest
        return path


def _build_digest(path: Path) -> str:
    """SHA-256 of the library at ``path`` and of the Python files defining the ops' tracing (``_OP_SOURCES``)."""
    sha = hashlib.sha256(path.read_bytes())
    for name in _OP_SOURCES:
        sha.update((Path(__file__).parent / name).read_bytes())
    return sha.hexdigest()


def _package_version() -> str:
    """splitlinear's installed version, or ``"unknown"`` when run from a source tree that is not installed."""
    try:
        return importlib.metadata.version("splitlinear")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def build_id() -> str:
    """The identity of the op library's build, loading it if needed.

    A string naming splitlinear's version, torch's version and C++11 ABI, and
    the SHA-256 of the loaded ``libsplitlinear_torch.so`` with ``ops.py``,
    ``_fake.py``, ``_fake_fp8.py`` and ``_dtypes.py`` (hashed once per process, when loaded). The
    library's Autograd and Autocast kernels and the fake kernels run when a
    graph is traced, so a compiled graph is only valid for this build: the
    backend's compiles key their caches on it (:mod:`splitlinear._cache_key`).
    ``libsplitlinear_c.so`` and ``libsplitlinear_runtime.so`` are not hashed:
    they run when the op is called, and a compiled graph holds only that call.

    Raises:
        RuntimeError: the op library is not found (see :func:`load_library`).
    """
    import torch

    load_library()
    return (f"splitlinear={_package_version()} torch={torch.__version__} "
            f"cxx11abi={int(torch.compiled_with_cxx11_abi())} sha256={_loaded_digest}")


def is_available() -> bool:
    """True if the op library can be (or has been) loaded."""
    return _loaded_from is not None or find_library() is not None

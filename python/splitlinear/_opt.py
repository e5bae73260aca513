"""``splitlinear-opt``: the opt-style driver of the installed package.

The wheel ships no executable: its console script calls ``slinOptMain`` in
``libsplitlinear_c.so``, the same driver as the build tree's
``splitlinear-opt`` (``tools/splitlinear-opt``), so one copy of MLIR and LLVM
serves both. Arguments and exit code are MlirOptMain's.
"""

from __future__ import annotations

import ctypes
import sys

from . import _library

C_LIBRARY_NAME = "libsplitlinear_c.so"


def main(argv: list[str] | None = None) -> int:
    """Runs the driver on ``argv`` (default: ``sys.argv``) and returns its exit code.

    Raises:
        SystemExit: with code 2 and the directories searched, if ``libsplitlinear_c.so`` is missing.
    """
    args = list(sys.argv if argv is None else argv)
    path = _library.find_library(C_LIBRARY_NAME)
    if path is None:
        searched = ", ".join(str(d) for d in _library.candidate_dirs())
        print(f"splitlinear-opt: {C_LIBRARY_NAME} not found (searched: {searched})", file=sys.stderr)
        return 2
    lib = ctypes.CDLL(str(path))
    lib.slinOptMain.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.slinOptMain.restype = ctypes.c_int
    c_args = (ctypes.c_char_p * (len(args) + 1))(*[a.encode() for a in args], None)
    sys.stdout.flush()
    return int(lib.slinOptMain(len(args), c_args))


if __name__ == "__main__":
    sys.exit(main())

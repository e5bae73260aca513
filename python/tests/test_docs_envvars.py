"""docs/UserGuide.md's environment-variable table names every ``SPLITLINEAR_*`` variable the code reads.

A variable counts when its name appears as a string literal in the C++/CUDA sources under ``lib/``
or the Python package (``python/splitlinear``): that is how ``getenv`` and ``os.environ`` name
them; include guards and CMake variables are not string literals there. Skipped outside a source
checkout.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LITERAL = re.compile(r"""["'](SPLITLINEAR_[A-Z0-9_]+)["']""")
SOURCES = {".cpp", ".h", ".cu", ".cuh", ".py"}


def _read_names() -> set[str]:
    names: set[str] = set()
    for top in (ROOT / "lib", ROOT / "python" / "splitlinear"):
        for path in top.rglob("*"):
            if path.suffix in SOURCES and path.is_file():
                names |= set(LITERAL.findall(path.read_text(errors="replace")))
    return names


def _table_names() -> set[str]:
    text = (ROOT / "docs" / "UserGuide.md").read_text()
    section = text.split("### Environment variables", 1)[1].split("\n### ", 1)[0]
    return set(re.findall(r"^\| `(SPLITLINEAR_[A-Z0-9_]+)` \|", section, re.M))


def test_env_var_table_is_complete() -> None:
    if not (ROOT / "lib").is_dir() or not (ROOT / "docs" / "UserGuide.md").is_file():
        pytest.skip("not a source checkout")
    read = _read_names()
    assert read, "found no SPLITLINEAR_* variables in the sources"
    missing = sorted(read - _table_names())
    assert not missing, f"docs/UserGuide.md's environment-variable table lacks {missing}"

"""The tracked tree says what the code does and why, not how the project was worked on.

Scans every file ``git ls-files`` lists (its path and its text: docs, code, comments, test names)
for the words of the project's own work history: numbered work items, numbered runs and device
calls, work periods. Skipped outside a git checkout. The patterns are spelled in pieces below, so
that this file does not match itself; nothing else is excluded.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Letters-bounded (digits and "_" may touch: "xyz14" and "xyz_14" count), case-insensitive.
_L, _R = r"(?<![a-z])", r"(?![a-z])"
PATTERNS = [
    _L + "sess" + r"ions?" + _R,
    _L + "reno" + r"vations?" + _R,
    _L + "iss" + r"ues?[ _#-]*\d+",
    r"(?<![a-z-])ca" + r"lls?[ _#-]*\d+(?![\d.x×])",  # not a "--calls N" option
    _L + "ru" + r"n[_-]?\d+",
    _L + "tu" + r"rns?[ _#-]*\d+",
]
WORDS = re.compile("|".join(f"(?:{p})" for p in PATTERNS), re.I)
#: Exact tokens that are names of other projects' APIs, not history.
ALLOWED: set[str] = set()


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [p for p in out.decode().split("\0") if p]


def test_no_work_history_words() -> None:
    files = _tracked()
    if not files:
        pytest.skip("not a git checkout")
    hits = []
    for rel in files:
        for m in WORDS.finditer(rel):
            hits.append(f"{rel}: file name: {m.group(0)!r}")
        path = ROOT / rel
        try:
            data = path.read_bytes()
        except OSError:  # listed but removed from the work tree, or a submodule
            continue
        if b"\0" in data[:8192]:
            continue
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            for m in WORDS.finditer(line):
                if m.group(0) not in ALLOWED:
                    hits.append(f"{rel}:{n}: {m.group(0)!r}: {line.strip()[:120]}")
    assert not hits, f"{len(hits)} work-history words in the tree:\n" + "\n".join(hits[:200])

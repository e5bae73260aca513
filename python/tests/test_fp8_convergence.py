"""FP8 convergence, CI size: a tiny Llama trained on a fixed Markov-chain corpus with option ``fp8``
stays within 2 % of the same training without it (``bench/model/convergence.py``; the full length
runs in ``bench/run.py --suite accuracy``).

The benchmark runs as a script in a process of its own, as a user would run it: tests import
nothing from ``bench/``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "model" / "convergence.py"


def test_fp8_loss_curve_within_two_percent(op, tmp_path: Path) -> None:
    if not SCRIPT.exists():
        pytest.skip(f"{SCRIPT} not found (tests run outside a source checkout)")
    out = tmp_path / "accuracy.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert out.exists(), proc.stdout[-2000:] + proc.stderr[-4000:]
    rows = {r["recipe"]: r for r in json.loads(out.read_text())["results"]}
    base, fp8 = rows["baseline"]["curve"], rows["tensorwise"]["curve"]
    # It learns: the last window's loss is well below the first's.
    assert base[-1] < 0.8 * base[0], base
    assert rows["tensorwise"]["max_gap"] <= 0.02, (base, fp8)
    # And FP8 is not the baseline under another name: the curves differ.
    assert base != fp8
    assert proc.returncode == 0, proc.stderr[-4000:]

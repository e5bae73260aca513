"""FP8 convergence, CI size: a tiny Llama trained on a fixed Markov-chain corpus with option ``fp8``
stays within 2 % of the same training without it (``bench/fp8_convergence.py`` at full length)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import fp8_convergence  # noqa: E402

STEPS, WINDOW = 40, 10


def test_fp8_loss_curve_within_two_percent(op) -> None:
    result = fp8_convergence.run(STEPS, ["tensorwise"], batch=8, seq=16, window=WINDOW)
    base, fp8 = result["curves"]["baseline"], result["curves"]["tensorwise"]
    # It learns: the last window's loss is well below the first's.
    assert base[-1] < 0.8 * base[0], base
    assert result["max_gap"]["tensorwise"] <= 0.02, (base, fp8)
    # And FP8 is not the baseline under another name: the curves differ.
    assert base != fp8

"""``bench/run.py --suite all --quick`` runs every benchmark suite on the CPU and writes valid JSON.

The benchmarks run as a user runs them, in a subprocess, from the source checkout next to this
file (``bench/``); tests import nothing from there. Skipped where ``bench/`` is not beside the
tests (an installed package tested outside its source tree).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SUITES = ("op", "fp8-op", "train", "serve", "generate", "host", "dist", "accuracy", "grads")
HEADER = ("gpu", "sm_clock_mhz", "driver", "cuda", "cublaslt", "torch", "torchao", "transformers",
          "commit", "date", "command")


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    if not (BENCH / "run.py").exists():
        pytest.skip(f"{BENCH} not found (tests run outside a source checkout)")
    pytest.importorskip("transformers")
    out = tmp_path_factory.mktemp("bench")
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(out / "inductor")}
    proc = subprocess.run([sys.executable, str(BENCH / "run.py"), "--suite", "all", "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=900, env=env)
    results = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    if proc.returncode != 0:
        failed = {k: v.get("reason") for k, v in results.items() if v.get("status") != "ok"}
        pytest.fail(f"bench/run.py --quick failed: {failed}\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return results


def test_every_suite_wrote_json(op, quick_results: dict[str, dict]) -> None:
    assert sorted(quick_results) == sorted(SUITES)


@pytest.mark.parametrize("suite", SUITES)
def test_suite_json(op, quick_results: dict[str, dict], suite: str) -> None:
    data = quick_results[suite]
    assert data["suite"] == suite and data["quick"] is True
    assert data["status"] == "ok", data.get("reason")
    missing = [k for k in HEADER if k not in data["environment"]]
    assert not missing, f"environment header lacks {missing}"
    assert "run.py" in data["environment"]["command"]
    assert isinstance(data["results"], list) and data["results"], "no results"
    assert isinstance(data.get("skipped", []), list)


def test_report_renders_quick_json(op, quick_results: dict[str, dict], tmp_path: Path) -> None:
    """``bench/report.py`` renders every table of Performance.md from the quick JSON."""
    results = tmp_path / "results"
    results.mkdir()
    for name, data in quick_results.items():
        (results / f"{name}.json").write_text(json.dumps(data))
    doc = tmp_path / "Performance.md"
    doc.write_text((BENCH.parent / "docs" / "Performance.md").read_text())
    report = [sys.executable, str(BENCH / "report.py"), "--results", str(results), "--doc", str(doc),
              "--img", str(tmp_path / "img")]
    proc = subprocess.run(report, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = doc.read_text()
    assert "Not measured yet" not in text
    assert "| splitlinear" in text
    check = subprocess.run([*report, "--check"], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr


def test_report_takes_each_suite_from_the_first_folder_holding_it(quick_results: dict[str, dict],
                                                                   tmp_path: Path) -> None:
    """With ``--results A B``, a suite in both comes from A, one only in B from B, and the setup
    block names the GPU of the suites measured on another GPU than its own."""
    first, second = tmp_path / "gpu-a", tmp_path / "gpu-b"
    first.mkdir(), second.mkdir()
    for name, data in quick_results.items():
        gpu = "GPU B"
        if name == "train":  # only this suite in A, on another GPU
            a = json.loads(json.dumps(data))
            a["quick"], a["environment"]["gpu"], a["results"][0]["step_ms"] = False, "GPU A", 777.0
            (first / "train.json").write_text(json.dumps(a))
        b = json.loads(json.dumps(data))
        b["quick"], b["environment"]["gpu"] = False, gpu
        (second / f"{name}.json").write_text(json.dumps(b))
    doc = tmp_path / "Performance.md"
    doc.write_text((BENCH.parent / "docs" / "Performance.md").read_text())
    proc = subprocess.run([sys.executable, str(BENCH / "report.py"), "--results", str(first), str(second),
                           "--doc", str(doc), "--no-plots"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = doc.read_text()
    assert "GPU           GPU A" in text and "measured on GPU B" in text
    train = text.split("<!-- BEGIN train -->")[1].split("<!-- END train -->")[0]
    assert "777.0" in train and "Measured on GPU A" in train
    decode = text.split("<!-- BEGIN decode -->")[1].split("<!-- END decode -->")[0]
    assert "Measured on GPU B" in decode


def test_grads_quick_measures_sqnr(op, quick_results: dict[str, dict]) -> None:
    """The gradient suite's SQNRs (exact FP8 emulation on the CPU) are finite, FP8 well above noise, and
    bf16 without FP8 the most accurate on average."""
    rows = quick_results["grads"]["results"]
    assert {r["impl"] for r in rows} >= {"bf16", "splitlinear"}
    mean = {}
    for r in rows:
        values = list(r["sqnr_db"].values())
        assert len(values) == len(quick_results["grads"]["config"]["rows"])
        assert all(10.0 < v < 200.0 for v in values), r
        mean[(r["impl"], r["recipe"])] = sum(values) / len(values)
    bf16 = mean.pop(("bf16", None))
    assert all(bf16 > v for v in mean.values()), (bf16, mean)


def test_accuracy_quick_fp8_loss_curve_within_two_percent(op, quick_results: dict[str, dict]) -> None:
    """The accuracy suite's CI size (``bench/model/convergence.py --quick``): a tiny Llama trained on a
    fixed Markov-chain corpus with option ``fp8`` stays within 2 % of the same training without it."""
    rows = {r["recipe"]: r for r in quick_results["accuracy"]["results"]}
    base, fp8 = rows["baseline"]["curve"], rows["tensorwise"]["curve"]
    # It learns: the last window's loss is well below the first's.
    assert base[-1] < 0.8 * base[0], base
    assert rows["tensorwise"]["max_gap"] <= 0.02, (base, fp8)
    # And FP8 is not the baseline under another name: the curves differ.
    assert base != fp8

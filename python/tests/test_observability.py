"""Entry-point registration, stats, logging and graph dumps."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest
import torch
from _models import CatLinear, SiblingQKV
from _util import compile_sl, op_runs, randn

import splitlinear


def test_entry_point_metadata() -> None:
    eps = entry_points(group="torch_dynamo_backends")
    assert "splitlinear" in eps.names
    from splitlinear.backend import splitlinear_backend

    assert eps["splitlinear"].load() is splitlinear_backend


def test_backend_by_name_without_import(op: object) -> None:
    """``backend="splitlinear"`` works in a fresh interpreter that never imported splitlinear."""
    script = textwrap.dedent("""
        import sys
        import torch
        import torch.nn.functional as F
        assert "splitlinear" not in sys.modules
        torch.manual_seed(0)
        wq, wk = torch.randn(8, 16), torch.randn(4, 16)
        f = lambda x: F.linear(x, torch.cat([wq, wk]))
        x = torch.randn(3, 16)
        y = torch.compile(f, backend="splitlinear", fullgraph=True, options={"fallback": "eager"})(x)
        torch.testing.assert_close(y, f(x), rtol=1e-5, atol=1e-5)
        assert "splitlinear.backend" in sys.modules
        import splitlinear
        assert splitlinear.stats()["regions_matched"] == 1, splitlinear.stats()
        print("OK")
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, env=env, cwd=str(Path(__file__).parent.parent.parent))
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip().endswith("OK")


def test_stats_keys_and_reset(op: object) -> None:
    stats = splitlinear.stats()
    for key in ("regions_matched", "graphs_compiled", "candidates_rejected",
                "views", "cats", "per_part_gemms", "compiles"):
        assert key in stats and isinstance(stats[key], int), key
    assert stats["graphs_compiled"] == 0
    model = SiblingQKV(16, 16, 8, bias=False)
    compile_sl(model)(randn(2, 16))
    stats = splitlinear.stats()
    assert stats["graphs_compiled"] == 1 and stats["regions_matched"] == 1
    assert op_runs() >= 1
    splitlinear.reset_stats()
    assert splitlinear.stats()["graphs_compiled"] == splitlinear.stats()["regions_matched"] == 0
    assert op_runs() == 0


def test_logging(op: object, caplog: pytest.LogCaptureFixture) -> None:
    model = CatLinear(16, [8, 8])
    with caplog.at_level(logging.DEBUG, logger="splitlinear"):
        compile_sl(model)(randn(2, 16))
    messages = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "splitlinear"]
    assert any(level == logging.DEBUG and "matched vertical region" in m for level, m in messages)
    assert any(level == logging.INFO and "1 region(s) matched" in m for level, m in messages)


def test_logger_registered_with_torch_logging() -> None:
    """The package logger is a registered ``torch._logging`` log under the alias ``splitlinear``."""
    from torch._logging import _internal

    assert _internal.log_registry.log_alias_to_log_qnames.get("splitlinear") == ["splitlinear"]
    assert logging.getLogger("splitlinear") in _internal.get_loggers()


def test_torch_logs_env(op: object) -> None:
    """``TORCH_LOGS=+splitlinear`` prints the debug (match) and info (summary) lines."""
    script = textwrap.dedent("""
        import torch
        import torch.nn.functional as F
        wq, wk = torch.randn(8, 16), torch.randn(4, 16)
        f = lambda x: F.linear(x, torch.cat([wq, wk]))
        torch.compile(f, backend="splitlinear", fullgraph=True, options={"fallback": "eager"})(torch.randn(3, 16))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSTARTUP", "TORCH_LOGS_OUT")}
    env["TORCH_LOGS"] = "+splitlinear"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, env=env, cwd=str(Path(__file__).parent.parent.parent))
    assert result.returncode == 0, result.stderr[-4000:]
    lines = result.stderr.splitlines()
    assert any(line.startswith("V") and "splitlinear: graph 0: matched vertical region" in line for line in lines), \
        result.stderr[-4000:]
    assert any(line.startswith("I") and "1 region(s) matched" in line for line in lines), result.stderr[-4000:]


@pytest.mark.parametrize("via", ["option", "env"])
def test_dump_dir(op: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, via: str) -> None:
    model = CatLinear(16, [8, 8])
    if via == "env":
        monkeypatch.setenv("SPLITLINEAR_DUMP_DIR", str(tmp_path))
        compiled = compile_sl(model)
    else:
        compiled = compile_sl(model, dump_dir=str(tmp_path))
    compiled(randn(2, 16))
    before = sorted(tmp_path.glob("graph_*_before.txt"))
    after = sorted(tmp_path.glob("graph_*_after.txt"))
    assert len(before) == len(after) == 1
    assert "= torch.cat(" in before[0].read_text()
    text = after[0].read_text()
    assert "splitlinear: matched vertical region" in text
    assert "= torch.cat(" not in text and "linear(l_x_, [" in text


def test_dump_dir_is_scoped_to_its_compile(op: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``options={"dump_dir": d}`` dumps that compile's graphs and kernels into ``d``;
    it sets nothing process-wide, so a later compile without it writes nothing."""
    monkeypatch.delenv("SPLITLINEAR_DUMP_DIR", raising=False)
    first = tmp_path / "first"
    compiled = compile_sl(CatLinear(16, [8, 8], dtype=torch.float64), dump_dir=str(first))
    compiled(randn(2, 16, dtype=torch.float64))
    kernels = [p for p in first.glob("kernel-*.mlir") if not p.name.endswith(".passes.mlir")]
    assert any("slin.linear ins(" in k.read_text() for k in kernels)  # the forward kernel among them
    assert len(list(first.glob("graph_*_before.txt"))) == 1
    assert "SPLITLINEAR_DUMP_DIR" not in os.environ

    files = sorted(first.iterdir())
    torch._dynamo.reset()
    # Another signature (so kernels are compiled again), without dump_dir.
    later = compile_sl(CatLinear(16, [4, 4, 4], dtype=torch.float64))
    later(randn(3, 16, dtype=torch.float64)).sum()
    assert sorted(first.iterdir()) == files, "a later compile without dump_dir wrote files"
    assert splitlinear.stats()["compiles"] > 0

"""The benchmarks' one entry point: runs suites, writes one JSON per suite with an environment header.

    python bench/run.py --suite all --out DIR            # every suite (GPU; see bench/README.md for timings)
    python bench/run.py --suite train --out DIR          # one suite
    python bench/run.py --suite serve,op --out DIR       # a list
    python bench/run.py --suite all --quick --out DIR    # CPU smoke run: tiny shapes, every suite, valid JSON

Suites (each a script of its own, run in a process of its own; the scripts start one more process
per compile mode where modes would disturb each other):

- ``op``: bf16 split linear by M against fused, cat, per-part and Inductor (``op/split_linear.py``);
- ``fp8-op``: FP8 split linear by M against bf16, ``torch._scaled_mm`` per part and torchao
  (``op/fp8_linear.py``);
- ``train``: training step against eager, Inductor and torchao float8 (``model/train.py``);
- ``serve``: decode and prefill against eager, Inductor (default and ``reduce-overhead``) and
  torchao FP8 serving (``model/serve.py``);
- ``generate``: HF ``generate`` with a static cache, the same peers with ``reduce-overhead``
  (``model/serve.py --generate-only``; a suite of its own to keep each under 9 minutes);
- ``host``: host time per call on tiny shapes (``host/overhead.py``);
- ``dist``: DDP and FSDP2 against Inductor, losses and gradients (``model/dist_train.py``, 2 GPUs);
- ``accuracy``: FP8 loss curves against bf16 on a learnable corpus (``model/convergence.py``);
- ``grads``: SQNR of the FP8 recipes' gradients against float64, splitlinear's and torchao's
  (``model/grad_sqnr.py``).

Each ``DIR/<suite>.json`` holds ``suite``, ``quick``, ``environment`` (:func:`common.environment`),
``seconds``, ``status`` (``ok``, ``skipped`` or ``failed``), ``reason`` where not ``ok``, and the
script's own ``config``, ``results`` and ``skipped``. ``bench/report.py`` renders them.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from common import environment  # noqa: E402

#: suite -> (script, arguments of a full run, arguments of a --quick run)
SUITES: dict[str, tuple[str, list[str], list[str]]] = {
    "op": ("op/split_linear.py", [], ["--quick"]),
    "fp8-op": ("op/fp8_linear.py", [], ["--quick", "--device", "cpu"]),
    "train": ("model/train.py", [], ["--quick"]),
    "serve": ("model/serve.py", ["--skip-generate"], ["--quick"]),
    "generate": ("model/serve.py", ["--generate-only"], ["--quick", "--generate-only"]),
    "host": ("host/overhead.py", [], ["--quick", "--device", "cpu"]),
    "dist": ("model/dist_train.py", [], ["--device", "cpu", "--quick"]),
    "accuracy": ("model/convergence.py", [], ["--quick"]),
    "grads": ("model/grad_sqnr.py", [], ["--quick"]),
}
#: Longest a suite may run (s); a full ``train`` on an H200 takes about 5 minutes.
TIMEOUT_S = {"quick": 240, "full": 570}


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


#: Suites whose script takes ``--budget-s`` and then keeps its finished groups when time runs out.
BUDGETED = ("serve", "generate")


def suite_command(name: str, quick: bool, out: Path, limit_s: float | None = None) -> list[str] | None:
    """The command that runs suite ``name`` writing its results to ``out``; None when it cannot run here."""
    script, full, quick_args = SUITES[name]
    args = [str(BENCH / script), *(quick_args if quick else full), "--out", str(out)]
    if name in BUDGETED and not quick and limit_s is not None:
        args += ["--budget-s", str(max(limit_s - 30, 1))]  # 30 s to write the JSON
    if name == "dist":
        if quick:
            return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", *args]
        if _gpus() < 2:
            return None
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={_gpus()}", *args]
    return [sys.executable, *args]


def run_suite(name: str, quick: bool, out_dir: Path, header: dict, limit_s: float | None = None) -> dict:
    """Runs one suite (stopped after ``limit_s``, default ``TIMEOUT_S``) and writes ``out_dir/<name>.json``;
    returns what it wrote."""
    record: dict = {"suite": name, "quick": quick, "environment": header}
    start = time.perf_counter()
    limit = limit_s or TIMEOUT_S["quick" if quick else "full"]
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / f"{name}.json"
        cmd = suite_command(name, quick, part, limit)
        if cmd is None:
            record.update(status="skipped", reason=f"needs 2 or more GPUs, {_gpus()} here", results=[])
        else:
            print(f"== {name}: {shlex.join(cmd)}", flush=True)
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            if quick:
                env.setdefault("CUDA_VISIBLE_DEVICES", "")  # the smoke run is a CPU run, GPU or not
            try:
                proc = subprocess.run(cmd, env=env, timeout=limit)
                rc = proc.returncode
            except subprocess.TimeoutExpired:
                rc = None
            if part.exists():
                record.update(json.loads(part.read_text()))
            if rc is None and record.get("results"):
                # Scripts that write as they go (train) keep what they finished; skipped names the rest.
                record["status"] = "partial"
                record["reason"] = f"stopped after {limit} s; the finished rows are kept"
            elif rc != 0 or not part.exists():
                record["status"] = "failed"
                record["reason"] = (f"timed out after {limit} s" if rc is None
                                    else f"exit code {rc}" if rc != 0 else "no result written")
                record.setdefault("results", [])
            else:
                record["status"] = "ok"
    record["seconds"] = round(time.perf_counter() - start, 1)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"== {name}: {record['status']} in {record['seconds']} s -> {path}", flush=True)
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="all",
                        help=f"one of {', '.join(SUITES)}, a comma-separated list, or all")
    parser.add_argument("--quick", action="store_true",
                        help="CPU smoke run: tiny shapes, GPU-only comparisons recorded as skipped")
    parser.add_argument("--out", type=Path, required=True, help="folder for the <suite>.json files")
    parser.add_argument("--timeout-s", type=float, default=None,
                        help=f"stop each suite after this many seconds (default {TIMEOUT_S['full']}, "
                             f"{TIMEOUT_S['quick']} with --quick); train, serve and generate keep what they finished")
    args = parser.parse_args(argv)
    names = list(SUITES) if args.suite == "all" else [s.strip() for s in args.suite.split(",") if s.strip()]
    unknown = [n for n in names if n not in SUITES]
    if unknown:
        parser.error(f"unknown suite(s) {', '.join(unknown)}; choose from {', '.join(SUITES)} or all")
    args.out.mkdir(parents=True, exist_ok=True)
    header = environment([sys.executable, *sys.argv] if argv is None else [sys.executable, __file__, *argv])
    if args.quick:
        header["gpu"] = "none (cpu, --quick)"
    records = [run_suite(n, args.quick, args.out, header, args.timeout_s) for n in names]
    failed = [r["suite"] for r in records if r["status"] == "failed"]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

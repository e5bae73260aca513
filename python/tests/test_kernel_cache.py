"""The op library's kernel cache stays bounded, and evicted kernels free
their memory (the compile/JIT/destroy cycle of the op, as the C API leak test
does for the C API); the settings read from the environment. Each test runs a
child process: SPLITLINEAR_KERNEL_CACHE_SIZE and SPLITLINEAR_PER_PART_MAX_ROWS
are read once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

_CYCLE_SCRIPT = textwrap.dedent("""
    import ctypes, json, os, torch
    import splitlinear.ops as op

    libc = ctypes.CDLL("libc.so.6")

    def rss():
        libc.malloc_trim(0)
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    torch.manual_seed(0)
    x = torch.randn(3, 8, dtype=torch.float64)
    # Six signatures (1..6 parts) through a cache of 3, in a cycle: LRU
    # misses every time, so every call compiles one kernel and evicts one.
    weights = {n: [torch.randn(1, 8, dtype=torch.float64) for _ in range(n)] for n in range(1, 7)}
    rounds, errors = [], 0.0
    for _ in range(8):
        for n, w in weights.items():
            y = op.linear(x, w)
            ref = x @ torch.cat(w).t()
            errors = max(errors, (y - ref).abs().max().item())
        rounds.append(rss())
    print(json.dumps({**op.runtime_counters(), "rss": rounds, "max_error": errors}))
""")


def _run(env: dict[str, str], script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def test_cache_bounded_and_evictions_free_memory(op) -> None:
    done = _run({"SPLITLINEAR_KERNEL_CACHE_SIZE": "3"}, _CYCLE_SCRIPT)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["compiles"] == 48 and result["cache_size"] == 3 and result["evictions"] == 45, result
    assert result["max_error"] < 1e-12
    # A kept kernel holds about 1 MiB of JIT code and data; 30 evicted
    # kernels that leaked would add ~30 MiB. Measured: < 0.1 MiB.
    growth = result["rss"][-1] - result["rss"][2]
    assert growth < 4 << 20, f"RSS grew {growth} bytes over 30 compile/evict cycles"


def test_cache_size_must_be_a_positive_integer(op) -> None:
    for bad in ("0", "-3", "abc", "12x", " 5", "+5", " -1"):
        done = _run({"SPLITLINEAR_KERNEL_CACHE_SIZE": bad},
                    "import torch, splitlinear.ops as op\n"
                    "try:\n    op.linear(torch.randn(2, 3), [torch.randn(2, 3)])\n"
                    "except RuntimeError as e:\n    print(str(e).splitlines()[0])\n")
        assert done.stdout.strip() == (
            f"splitlinear: SPLITLINEAR_KERNEL_CACHE_SIZE must be a positive integer, got '{bad}'"), done.stderr


def test_per_part_threshold_from_the_environment(op) -> None:
    script = ("import torch, splitlinear.ops as op\n"
              "try:\n    print(op.set_per_part_max_rows(1))\n"
              "except RuntimeError as e:\n    print(str(e).splitlines()[0])\n")
    for value, printed in (("17", "17"), ("0", "0"), ("", "None"), ("auto", "None")):
        assert _run({"SPLITLINEAR_PER_PART_MAX_ROWS": value}, script).stdout.strip() == printed, value
    for bad in ("-1", "many", " 3", "+3"):
        done = _run({"SPLITLINEAR_PER_PART_MAX_ROWS": bad}, script)
        assert done.stdout.strip() == ("splitlinear: SPLITLINEAR_PER_PART_MAX_ROWS must be 'auto' or an integer "
                                       f">= 0, got '{bad}'"), done.stderr

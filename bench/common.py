"""Helpers shared by the benchmarks: split parameters in the three storage situations the op
distinguishes, timing (CUDA events, CUDA-graph replay, L2 flush, a CPU fallback), peak memory,
one process per variant, and the environment header every result JSON carries."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

import torch


def make_parts(
    rows: Sequence[int], k: int, dtype: torch.dtype, device: str, layout: str, seed: int = 0
) -> list[torch.Tensor]:
    """Weight parts ``[N_i, K]`` with fresh random values.

    layout: ``adjacent`` (views of one buffer, back to back), ``disjoint``
    (separate allocations) or ``misaligned`` (views of one buffer starting one
    element in, so the view would not be 16-byte aligned).
    """
    g = torch.Generator(device="cpu").manual_seed(seed)
    total = sum(rows)
    if layout == "disjoint":
        return [
            (torch.randn(n, k, generator=g) / k**0.5).to(device=device, dtype=dtype)
            for n in rows
        ]
    shift = 1 if layout == "misaligned" else 0
    flat = (torch.randn(total * k + shift, generator=g) / k**0.5).to(device=device, dtype=dtype)
    buf = flat[shift:].view(total, k)
    return list(buf.split(list(rows)))


def make_bias(rows: Sequence[int], dtype: torch.dtype, device: str, layout: str, seed: int = 1) -> list[torch.Tensor]:
    """Bias parts ``[N_i]``, laid out like :func:`make_parts`."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    if layout == "disjoint":
        return [torch.randn(n, generator=g).to(device=device, dtype=dtype) for n in rows]
    shift = 1 if layout == "misaligned" else 0
    flat = torch.randn(sum(rows) + shift, generator=g).to(device=device, dtype=dtype)
    return list(flat[shift:].split(list(rows)))


def cuda_time_ms(fn: Callable[[], object], warmup: int = 10, reps: int = 50, batch: int = 10) -> float:
    """Median over ``reps`` batches of the CUDA-event time of ``batch``
    back-to-back calls of ``fn``, divided by ``batch`` (milliseconds).

    Back-to-back calls measure throughput: host overhead only shows where it
    exceeds the GPU time of a call (launch-bound decode shapes), as in a model.
    """
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / batch)
    return statistics.median(times)


def copy_bytes_per_s(gib: float = 2.0) -> float:
    """The HBM bandwidth a device-to-device copy of ``gib`` GiB reaches (bytes read plus written per
    second, median of :func:`cuda_time_ms`): the rate the decode floors divide the weight bytes by.
    2 GiB is far past the L2 (50 MiB on Hopper), so the copy runs at HBM speed."""
    n = int(gib * 2**30)
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = cuda_time_ms(lambda: dst.copy_(src), warmup=3, reps=10, batch=2)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * n / (ms * 1e-3)


def cpu_time_ms(fn: Callable[[], object], warmup: int = 2, reps: int = 5) -> float:
    """Median wall-clock time of ``fn`` over ``reps`` calls after ``warmup`` (ms): the CPU stand-in
    for :func:`cuda_time_ms` in ``--quick`` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def timer_for(device: str, reps: int = 20) -> Callable[[Callable[[], object]], float]:
    """:func:`cuda_time_ms` with ``reps`` batches on CUDA, :func:`cpu_time_ms` elsewhere."""
    if device == "cuda":
        return lambda fn: cuda_time_ms(fn, warmup=5, reps=reps, batch=5)
    return cpu_time_ms


_l2_buffer: torch.Tensor | None = None


def flush_l2() -> None:
    """Overwrites a buffer larger than the GPU's L2 cache (H100/H200: 50 MiB), so that the next
    kernel reads its operands from HBM, as in a model where other layers ran in between."""
    global _l2_buffer
    if _l2_buffer is None:
        _l2_buffer = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    _l2_buffer.zero_()


def cuda_time_cold_ms(fn: Callable[[], object], warmup: int = 3, reps: int = 20) -> float:
    """Median CUDA-event time of single calls of ``fn``, each after :func:`flush_l2` (ms)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        flush_l2()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def graph_replayed(fn: Callable[[], object], calls: int = 1) -> Callable[[], object]:
    """``calls`` back-to-back calls of ``fn`` captured once by ``torch.cuda.graph`` (after a
    side-stream warm-up); returns the graph's replay."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return graph.replay


def peak_memory_mb(fn: Callable[[], object]) -> float:
    """Peak CUDA memory allocated during one call of ``fn`` above the baseline (MB)."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20


def run_workers(script: str, names: Sequence[str], json_path: str, extra_args: Sequence[str] = (),
                out_flag: str = "--json", budget_s: float | None = None) -> tuple[list, list[str]]:
    """Runs ``script --worker NAME <out_flag> PART`` once per name, each in a process of its own (so that
    compiled code, CUDA graphs and allocator state do not carry over). Returns the JSON objects the
    workers wrote, in order, and one line per worker that wrote none: failed, or stopped when the
    ``budget_s`` seconds of the whole run were spent (so that a slow peer costs its own row, not
    the suite's JSON)."""
    import json
    import time

    results, missing = [], []
    deadline = None if budget_s is None else time.monotonic() + budget_s
    for name in names:
        path = f"{json_path}.{name}.part"
        cmd = [sys.executable, os.path.abspath(script), "--worker", name, out_flag, path, *extra_args]
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            missing.append(f"{name}: not run, the {budget_s:.0f} s budget was spent")
            continue
        print(f"== {name}", flush=True)
        try:
            proc = subprocess.run(cmd, timeout=left)
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
        if rc != 0 or not os.path.exists(path):
            why = f"stopped after the {budget_s:.0f} s budget" if rc is None else f"its process failed (exit {rc})"
            print(f"{name}: {why}", flush=True)
            missing.append(f"{name}: {why}")
            continue
        with open(path) as f:
            results.append(json.load(f))
        os.remove(path)
    return results, missing


def _version(module: str) -> str:
    try:
        mod = __import__(module)
    except ImportError:
        return "not installed"
    return str(getattr(mod, "__version__", "unknown"))


def _run(cmd: Sequence[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def cublaslt_version() -> str:
    """cuBLASLt's version as the loaded library reports it (``cublasLtGetVersion``), or ``unknown``."""
    if not torch.cuda.is_available():
        return "n/a (no CUDA device)"
    import ctypes

    torch.ones(1, device="cuda") @ torch.ones(1, 1, device="cuda")  # loads cuBLAS(Lt)
    for name in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.cublasLtGetVersion.restype = ctypes.c_size_t
        v = int(lib.cublasLtGetVersion())
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"
    return "unknown"


def _wheel_build() -> str:
    """The commit and CUDA architectures of the installed wheel (``splitlinear._build_info``), or why not."""
    try:
        from splitlinear import _build_info
    except ImportError:
        return "not a wheel (no splitlinear._build_info)"
    return f"{_build_info.COMMIT}, CUDA {_build_info.CUDA_ARCHITECTURES}"


def environment(command: Sequence[str] | None = None) -> dict[str, object]:
    """The header of every result JSON: hardware, versions, commit, date and the exact command."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cuda = torch.cuda.is_available()
    smi = _run(["nvidia-smi", "--query-gpu=name,clocks.max.sm,clocks.sm,driver_version",
                "--format=csv,noheader,nounits"]) if cuda else ""
    fields = [f.strip() for f in smi.splitlines()[0].split(",")] if smi and smi != "unknown" else []
    # A copy of the tree on a GPU machine may hold a stale .git: scripts/gpu/pack.sh records the
    # packed tree's commit, and scripts/gpu/run.sh passes it as BENCH_COMMIT.
    commit = os.environ.get("BENCH_COMMIT") or _run(["git", "-C", repo, "rev-parse", "--short", "HEAD"])
    dirty = "" if os.environ.get("BENCH_COMMIT") else _run(
        ["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"])
    return {
        "gpu": torch.cuda.get_device_name() if cuda else "none (cpu)",
        "gpu_count": torch.cuda.device_count() if cuda else 0,
        "sm_clock_mhz": {"max": fields[1], "current": fields[2]} if len(fields) >= 4 else "n/a",
        "driver": fields[3] if len(fields) >= 4 else "n/a",
        "cuda": torch.version.cuda or "n/a",
        "cublaslt": cublaslt_version(),
        "torch": torch.__version__,
        "torchao": _version("torchao"),
        "transformers": _version("transformers"),
        "splitlinear": _version("splitlinear"),
        "wheel": _wheel_build(),
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "commit": commit + ("+dirty" if dirty and dirty != "unknown" else ""),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "command": " ".join(command if command is not None else [sys.executable, *sys.argv]),
    }

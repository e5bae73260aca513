"""Helpers shared by the GPU check and the benchmarks: split parameters in
the three storage situations the op distinguishes, and CUDA-event timing."""

from __future__ import annotations

import statistics
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


def run_workers(script: str, names: Sequence[str], json_path: str, extra_args: Sequence[str] = ()) -> list[dict]:
    """Runs ``script --worker NAME --json PART`` once per name, each in a process of its own (so that
    compiled code, CUDA graphs and allocator state do not carry over), and returns the JSON objects
    the workers wrote, in order; a worker that fails is reported and left out."""
    import json
    import os
    import subprocess
    import sys

    results = []
    for name in names:
        path = f"{json_path}.{name}.part"
        cmd = [sys.executable, os.path.abspath(script), "--worker", name, "--json", path, *extra_args]
        print(f"== {name}", flush=True)
        proc = subprocess.run(cmd)
        if proc.returncode != 0 or not os.path.exists(path):
            print(f"{name} failed (exit {proc.returncode})", flush=True)
            continue
        with open(path) as f:
            results.append(json.load(f))
        os.remove(path)
    return results

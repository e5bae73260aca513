"""Where the GPU sits idle in a profiled region, and which host op it waited for.

:func:`idle_gaps` reads a Chrome trace written by ``torch.profiler`` (CPU and CUDA activities) and
finds the gaps between consecutive GPU activities (kernels, copies, memsets) on one device. A gap
whose next activity was launched after the previous one ended was the host's: the GPU waited for
the launch. Each such gap is charged to the innermost CPU op enclosing the launch (the op whose
host work came late), and to the outermost one (the module or autograd node). Used by
``bench/fp8_train.py --profile-gaps``.
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from typing import Any

_GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
_LAUNCH_CATS = ("cuda_runtime", "cuda_driver")


def _enclosing(ops: list[dict[str, Any]], starts: list[float], ts: float) -> list[dict[str, Any]]:
    """The CPU ops of one thread that contain ``ts``, outermost first (``ops`` sorted by start)."""
    out = []
    for op in ops[:bisect.bisect_right(starts, ts)]:
        if op["ts"] <= ts <= op["ts"] + op.get("dur", 0):
            out.append(op)
    return sorted(out, key=lambda op: (op["ts"], -op.get("dur", 0)))


def idle_gaps(trace_path: str, steps: int, top: int, min_us: float = 2.0) -> dict[str, Any]:
    """GPU idle time per step in the trace at ``trace_path``, split into host-bound gaps (charged to
    CPU ops) and the rest, with the ``top`` CPU ops by idle time charged.

    Returns ``{"idle_ms", "host_bound_ms", "gaps", "by_inner_op": [(op, ms, count)],
    "by_outer_op": [...]}``, per step; gaps shorter than ``min_us`` are not counted.
    """
    with open(trace_path, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    gpu = sorted((e for e in events if e.get("cat") in _GPU_CATS and e.get("ph") == "X"), key=lambda e: e["ts"])
    launches = {e["args"]["correlation"]: e for e in events
                if e.get("cat") in _LAUNCH_CATS and "correlation" in e.get("args", {})}
    by_thread: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op" and e.get("ph") == "X":
            by_thread[e["tid"]].append(e)
    starts = {}
    for tid, ops in by_thread.items():
        ops.sort(key=lambda e: e["ts"])
        starts[tid] = [op["ts"] for op in ops]
    idle = host = 0.0
    count = 0
    inner: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    outer: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for prev, nxt in zip(gpu, gpu[1:]):
        end = prev["ts"] + prev.get("dur", 0)
        gap = nxt["ts"] - end
        if gap < min_us:
            continue
        idle += gap
        count += 1
        launch = launches.get(nxt.get("args", {}).get("correlation"))
        if launch is None or launch["ts"] <= end:
            continue
        waited = min(gap, launch["ts"] - end)
        host += waited
        stack = _enclosing(by_thread.get(launch["tid"], []), starts.get(launch["tid"], []), launch["ts"])
        names = [op["name"] for op in stack] or ["(no CPU op)"]
        for table, name in ((inner, names[-1]), (outer, names[0])):
            table[name][0] += waited
            table[name][1] += 1

    def ranked(table: dict[str, list[float]]) -> list[tuple[str, float, float]]:
        rows = sorted(table.items(), key=lambda kv: -kv[1][0])[:top]
        return [(name, ms / 1e3 / steps, n / steps) for name, (ms, n) in rows]

    return {"idle_ms": idle / 1e3 / steps, "host_bound_ms": host / 1e3 / steps, "gaps": count / steps,
            "by_inner_op": ranked(inner), "by_outer_op": ranked(outer)}


def print_gaps(report: dict[str, Any], label: str) -> None:
    print(f"-- {label}: GPU idle {report['idle_ms']:.3f} ms/step in {report['gaps']:.0f} gaps, "
          f"{report['host_bound_ms']:.3f} ms waiting for a launch", flush=True)
    for key in ("by_inner_op", "by_outer_op"):
        for name, ms, n in report[key]:
            print(f"   {key[3:]:9} {ms:7.3f} ms/step {n:6.1f} gaps/step  {name[:110]}")

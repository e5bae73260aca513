"""Host time per call on tiny shapes, where the GPU work is negligible (x [1, 64], parts [64, 32, 32]).

Wall-clock µs per call of back-to-back calls (one synchronize at the end), median of 7 runs, for:
``F.linear`` on the fused weight; the op through its overload (``torch.ops.splitlinear.linear.default``,
what ``splitlinear.ops.linear`` and Inductor's extern call use) and through the overload packet
(``torch.ops.splitlinear.linear``, which resolves the overload on every call); the same with grad mode
on (the autograd node); a compiled region (one ``F.linear`` over a cat of the parts) with Inductor
and with splitlinear. The grad-mode op and the compiled regions run twice: with parts in separate
storages (clones: the op copies them or runs one GEMM per part, Inductor runs its cat kernel) and
``(packed)``, the parts adjacent views of one buffer (as after ``splitlinear.pack_parameters``: the
op's zero-copy view path). Writes JSON with ``--out``; ``--compare OLD.json`` prints the rows of an
earlier run (e.g. the build before a change) next to these, with the difference. ``--quick``: fewer
calls, and no Inductor compile (the splitlinear region falls back to eager).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


#: The clock of per_call_us: ``time.perf_counter`` (wall-clock, the default) or, with
#: ``--clock thread``, ``time.thread_time`` (this thread's CPU time: on a shared CPU machine, time
#: spent descheduled does not count; on CUDA it would not count the final synchronize's wait).
_clock: Callable[[], float] = time.perf_counter


#: Runs per median (``--quick``: 3).
_runs = 7


def per_call_us(fn: Callable[[], object], device: str, n: int = 2000) -> float:
    runs = []
    for _ in range(_runs):
        for _ in range(50):
            fn()
        if device == "cuda":
            torch.cuda.synchronize()
        start = _clock()
        for _ in range(n):
            fn()
        if device == "cuda":
            torch.cuda.synchronize()
        runs.append((_clock() - start) / n * 1e6)
    return statistics.median(runs)


class Cat(nn.Module):
    """``F.linear`` over a cat of Parameters (the Parameters take the given tensors' storage)."""

    def __init__(self, parts: list[torch.Tensor], biases: list[torch.Tensor]) -> None:
        super().__init__()
        self.w = nn.ParameterList([nn.Parameter(p) for p in parts])
        self.b = nn.ParameterList([nn.Parameter(p) for p in biases])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, torch.cat(list(self.w)), torch.cat(list(self.b)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", "--json", dest="json", help="write the results as JSON here")
    parser.add_argument("--quick", action="store_true", help="fewer calls, no Inductor compile")
    parser.add_argument("--compare", help="JSON of an earlier run, printed next to this one")
    parser.add_argument("--clock", choices=["wall", "thread"], default="wall")
    args = parser.parse_args(argv)
    global _clock, _runs
    _clock = time.thread_time if args.clock == "thread" else time.perf_counter
    n = 200 if args.quick else 2000
    if args.quick:
        _runs = 3
    import splitlinear.ops  # noqa: F401  (loads the op library)

    dev = args.device
    rows = [64, 32, 32]
    buf, bias = torch.randn(128, 64, device=dev), torch.randn(128, device=dev)
    parts, biases = list(buf.split(rows)), list(bias.split(rows))
    x = torch.randn(1, 64, device=dev)
    overload, packet = torch.ops.splitlinear.linear.default, torch.ops.splitlinear.linear
    results: dict[str, float] = {}
    with torch.no_grad():
        results["F.linear (fused)"] = per_call_us(lambda: F.linear(x, buf, bias), dev, n)
        results["op overload"] = per_call_us(lambda: overload(x, parts, biases), dev, n)
        results["op packet"] = per_call_us(lambda: packet(x, parts, biases), dev, n)
    pw = [p.clone().requires_grad_() for p in parts]
    packed = list(buf.clone().requires_grad_().split(rows))  # adjacent views that require grad
    results["F.linear (fused), grad mode"] = per_call_us(lambda: F.linear(x, buf.requires_grad_(), bias), dev, n)
    results["op overload, grad mode"] = per_call_us(lambda: overload(x, pw, biases), dev, n)
    results["op overload, grad mode (packed)"] = per_call_us(lambda: overload(x, packed, biases), dev, n)
    with torch.no_grad():
        regions = [("compiled region, Inductor", "inductor"), ("compiled region, splitlinear", "splitlinear")]
        for name, backend in regions[1:] if args.quick else regions:
            for suffix in ("", " (packed)"):
                torch._dynamo.reset()
                if suffix:
                    wb, bb = buf.clone(), bias.clone()
                    model = Cat(list(wb.split(rows)), list(bb.split(rows)))
                else:
                    model = Cat([p.clone() for p in parts], [b.clone() for b in biases])
                options = {"fallback": "eager"} if args.quick and backend == "splitlinear" else None
                compiled = torch.compile(model.requires_grad_(False), backend=backend, options=options)
                results[name + suffix] = per_call_us(lambda: compiled(x), dev, n // 2)
    old: dict[str, float] = {}
    if args.compare:
        with open(args.compare) as f:
            old = json.load(f)["us_per_call"]
    width = max(map(len, results))
    print(f"host time per call, {dev}, x [1, 64], parts {rows} (µs, median of {_runs}, {args.clock} clock)")
    if old:
        print(f"{'':<{width}}  {'before':>8}  {'after':>8}  {'diff':>8}")
    for name, us in results.items():
        if old:
            before = f"{old[name]:8.1f}  " if name in old else f"{'-':>8}  "
            diff = f"  {us - old[name]:+8.1f}" if name in old else ""
            print(f"{name:<{width}}  {before}{us:8.1f}{diff}")
        else:
            print(f"{name:<{width}}  {us:8.1f}")
    if args.json:
        with open(args.json, "w") as f:
            skipped = ["compiled region, Inductor: --quick compiles nothing with Inductor"] if args.quick else []
            json.dump({"config": {"device": dev, "clock": args.clock, "x": [1, 64], "parts": rows,
                                  "calls_per_run": n, "runs": _runs},
                       "results": [{"case": k, "us_per_call": v} for k, v in results.items()],
                       "us_per_call": results, "skipped": skipped}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

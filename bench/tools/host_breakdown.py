"""Where the op's host time goes, by subtraction: rows that each add one layer to the previous one.

x [1, 64], parts [64, 32, 32], CPU by default (the tiny GEMM costs ~1-2 us there, so differences are
host time). Rows, µs of this thread's CPU time per call (``time.thread_time``: time spent descheduled
does not count), minimum over interleaved rounds (the least disturbed by other processes on a shared
machine):

* ``aten.addmm overload``: ``torch.ops.aten.addmm.default`` on the fused weight (a Python overload
  call of one ATen op: arguments parsed from a schema, no lists);
* ``op, inference_mode``: the op's overload with the Autograd key excluded (Python binding, list
  boxing, dispatcher, the CPU kernel);
* ``op, no_grad``: adds the op's Autograd kernel with nothing to record;
* ``op, grad mode (packed)``: adds the autograd node (parts adjacent, as after ``pack_parameters``);
* ``op, grad mode (separate)``: parts in separate storages (the copy / per-part path).

Writes JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F


def _timed(fn: Callable[[], object], n: int) -> float:
    # CPU time of this thread: on a shared machine, time spent descheduled does not count.
    start = time.thread_time_ns()
    for _ in range(n):
        fn()
    return (time.thread_time_ns() - start) / n / 1e3


def measure(cases: dict[str, tuple[Callable[[], object], Callable[[], object]]], rounds: int,
            n: int) -> dict[str, float]:
    """Min over ``rounds`` interleaved rounds of µs per call; each case is (context factory, fn)."""
    best = {name: float("inf") for name in cases}
    for _ in range(rounds):
        for name, (ctx, fn) in cases.items():
            with ctx():
                for _ in range(20):
                    fn()
                best[name] = min(best[name], _timed(fn, n))
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    import splitlinear.ops  # noqa: F401  (loads the op library)

    dev, rows = args.device, [64, 32, 32]
    torch.manual_seed(0)
    buf, bias = torch.randn(128, 64, device=dev), torch.randn(128, device=dev)
    parts, biases = list(buf.split(rows)), list(bias.split(rows))
    x = torch.randn(1, 64, device=dev)
    op = torch.ops.splitlinear.linear.default
    addmm = torch.ops.aten.addmm.default
    wbuf = buf.clone().requires_grad_()
    packed = list(wbuf.split(rows))  # adjacent views that require grad
    separate = [p.clone().requires_grad_() for p in parts]
    grad_buf = buf.clone().requires_grad_()
    cases = {
        "F.linear, no_grad": (torch.no_grad, lambda: F.linear(x, buf, bias)),
        "aten.addmm overload, no_grad": (torch.no_grad, lambda: addmm(bias, x, buf.t())),
        "op, inference_mode": (torch.inference_mode, lambda: op(x, parts, biases)),
        "op, no_grad": (torch.no_grad, lambda: op(x, parts, biases)),
        "F.linear, grad mode": (torch.enable_grad, lambda: F.linear(x, grad_buf, bias)),
        "op, grad mode (packed)": (torch.enable_grad, lambda: op(x, packed, biases)),
        "op, grad mode (separate)": (torch.enable_grad, lambda: op(x, separate, biases)),
    }
    results = measure(cases, args.rounds, args.n)
    width = max(map(len, results))
    print(f"host time per call, {dev}, x [1, 64], parts {rows} (µs, min of {args.rounds} rounds)")
    for name, us in results.items():
        print(f"{name:<{width}}  {us:8.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": dev, "us_per_call": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

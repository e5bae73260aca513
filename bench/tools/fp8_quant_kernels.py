"""The FP8 quantization kernels of one training step, each timed alone and set against the copy bandwidth.

A tensorwise FP8 training step of the Llama-3-8B layer (4 x 2048 tokens, bf16, weight cache
missed once per optimizer step) quantizes, per layer: the four weights (amax of every part,
then a cast writing W8 and W8ᵀ), the four activations (amax, then a cast writing x8 and x8ᵀ)
and the four dYs (e5m2; q/k/v and gate/up through the dual quantization). Each call below is
one of them. torch.profiler gives every kernel's GPU time (median over the repetitions); the
bytes each kernel must move give its bandwidth, next to ``torch``'s own copy of the same bf16
tensor (read + write) and its ``amax()`` (read) as the roofline this machine reaches.

    python bench/fp8_quant_kernels.py --out bench/results/<date>-h200/fp8-quant-kernels.json
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import torch

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
TOKENS = 8192


@dataclass
class Case:
    """One quantization call of the step: its name, what is read and how (``kind``), and its rows."""

    name: str
    kind: str  # "weights" | "activation" | "dy" | "dual"
    rows: tuple[int, ...]  # weight parts' rows; else one entry: the columns (K) of [TOKENS, K]
    k: int  # weights: K; else unused


CASES = [
    Case("W q/k/v", "weights", (4096, 1024, 1024), 4096),
    Case("W o", "weights", (4096,), 4096),
    Case("W gate/up", "weights", (14336, 14336), 4096),
    Case("W down", "weights", (4096,), 14336),
    Case("x 4096", "activation", (4096,), 0),
    Case("x 14336", "activation", (14336,), 0),
    Case("dY o/down", "dy", (4096,), 0),
    Case("dY q/k/v", "dual", (6144,), 0),
    Case("dY gate/up", "dual", (28672,), 0),
]


def kernel_name(full: str) -> str:
    """``amaxPartsKernel`` of ``void slinrt::cuda::(anonymous namespace)::amaxPartsKernel<...>(...)``."""
    plain = full.replace("(anonymous namespace)::", "")
    return re.split(r"[<(]", plain.removeprefix("void "), maxsplit=1)[0].split("::")[-1]


_FLUSH: torch.Tensor | None = None


def flush_l2() -> None:
    """Overwrites 256 MB, so that no call finds its operands in the 50 MB L2 (as in a step, where the
    weights come from the optimizer and the activations are not all resident)."""
    global _FLUSH
    if _FLUSH is None:
        _FLUSH = torch.empty(64 * 2**20, device="cuda", dtype=torch.float32)
    _FLUSH.fill_(1.0)


def _profile(fn: Callable[[], object], reps: int, flush: bool) -> dict[str, list[float]]:
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            if flush:
                flush_l2()
            fn()
        torch.cuda.synchronize()
    per_name: dict[str, list[float]] = defaultdict(list)
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA and ev.device_time > 0:
            per_name[kernel_name(ev.name)].append(ev.device_time)
    return per_name


def kernel_times_us(fn: Callable[[], object], reps: int, flush: bool = True) -> dict[str, float]:
    """Median GPU time per call (µs) of each kernel ``fn`` launches, by short name, with the L2
    flushed before every call (the flush's own kernels left out)."""
    flush_names = set(_profile(flush_l2, 2, False)) if flush else set()
    per_name = _profile(fn, reps, flush)
    return {name: statistics.median(ts) for name, ts in per_name.items() if name not in flush_names}


def bandwidth(bytes_moved: float, us: float) -> float:
    return bytes_moved / us / 1e6  # TB/s


def run_case(case: Case, reps: int) -> dict:
    from splitlinear import ops

    torch.manual_seed(0)
    if case.kind == "weights":
        parts = [torch.randn(n, case.k, device="cuda", dtype=torch.bfloat16) for n in case.rows]
        elems = sum(case.rows) * case.k

        def call() -> object:
            return ops.fp8_cast_parts(parts, E4M3, write_transposed=True)
        src = parts[0]
    else:
        x = torch.randn(TOKENS, case.rows[0], device="cuda", dtype=torch.bfloat16)
        elems = x.numel()
        col_scale = torch.rand(case.rows[0], device="cuda") * 1e-3 + 1e-4
        if case.kind == "dual":
            def call() -> object:
                return ops.fp8_quantize_dual(x, E5M2, col_scale)
        else:
            dtype = E4M3 if case.kind == "activation" else E5M2

            def call() -> object:
                return ops.fp8_quantize(x, dtype, "tensor", write_transposed=True)
        src = x
    times = kernel_times_us(call, reps)
    amax_us = sum(t for n, t in times.items() if "amax" in n.lower())
    cast_us = sum(t for n, t in times.items() if "cast" in n.lower())
    other_us = sum(t for n, t in times.items() if "amax" not in n.lower() and "cast" not in n.lower())
    # Roofline on this machine: torch's bf16 copy and amax of as many elements.
    flat = src.new_empty(elems).normal_()
    dst = torch.empty_like(flat)
    copy_us = kernel_times_us(lambda: dst.copy_(flat), reps)
    read_us = kernel_times_us(lambda: flat.amax(), reps)
    copy_t = sum(copy_us.values())
    read_t = sum(read_us.values())
    amax_bytes = 2 * elems
    cast_bytes = 2 * elems + 2 * elems  # bf16 read, two FP8 copies written
    return {
        "case": case.name, "kind": case.kind, "elements": elems,
        "amax_us": amax_us, "cast_us": cast_us, "other_us": other_us,
        "amax_tb_s": bandwidth(amax_bytes, amax_us) if amax_us else None,
        "cast_tb_s": bandwidth(cast_bytes, cast_us) if cast_us else None,
        "torch_copy_us": copy_t, "torch_copy_tb_s": bandwidth(4 * elems, copy_t),
        "torch_amax_us": read_t, "torch_amax_tb_s": bandwidth(2 * elems, read_t),
        "kernels": times,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="write the rows as JSON here")
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 1
    rows = [run_case(c, args.reps) for c in CASES]
    head = (f"{'call':12s} {'elems M':>8s} {'amax us':>8s} {'TB/s':>5s} {'cast us':>8s} {'TB/s':>5s} "
            f"{'other':>6s} | {'copy us':>8s} {'TB/s':>5s} {'amax us':>8s} {'TB/s':>5s}")
    print(head)
    for r in rows:
        print(f"{r['case']:12s} {r['elements'] / 1e6:8.1f} {r['amax_us']:8.1f} {r['amax_tb_s'] or 0:5.2f} "
              f"{r['cast_us']:8.1f} {r['cast_tb_s'] or 0:5.2f} {r['other_us']:6.1f} | {r['torch_copy_us']:8.1f} "
              f"{r['torch_copy_tb_s']:5.2f} {r['torch_amax_us']:8.1f} {r['torch_amax_tb_s']:5.2f}")
        print("    " + ", ".join(f"{n} {t:.1f}" for n, t in r["kernels"].items()))
    per_layer = sum(r["amax_us"] + r["cast_us"] + r["other_us"] for r in rows) + (
        # x 4096 is quantized three times a layer (q/k/v, o, gate/up), dY o/down twice
        2 * sum(r["amax_us"] + r["cast_us"] for r in rows if r["case"] == "x 4096")
        + sum(r["amax_us"] + r["cast_us"] for r in rows if r["case"] == "dY o/down"))
    print(f"per layer (x 4096 three times, dY o/down twice): {per_layer:.1f} us")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "rows": rows, "per_layer_us": per_layer, "cases": [asdict(c) for c in CASES]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

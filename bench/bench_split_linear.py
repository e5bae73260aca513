"""Benchmark: splitlinear's op against the alternatives on the shapes of
shared/notes/gpu-anchor-numbers.md (bf16, one H200).

Variants: ``fused`` (F.linear on one pre-concatenated weight: the floor),
``eager_cat`` (torch.cat every call + F.linear), ``n_gemms`` (one F.linear per
part + cat of the outputs), ``slin_adjacent`` (the op on parts that are views
of one buffer: zero-copy view) and ``slin_disjoint`` (the op on separately
allocated parts). ``infer`` times the forward; ``train`` forward + backward
(input and weight/bias gradients). Times: median over 50 batches of 10
back-to-back calls (CUDA events, per call); peak memory above the inputs; all
in one run; ratios are against ``fused``.

Usage: ``python3 bench/bench_split_linear.py --json out.json``.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import torch.nn.functional as F

from common import cuda_time_ms, make_bias, make_parts, peak_memory_mb

SHAPES = [
    (16, 4096, [4096, 1024, 1024], "infer"),
    (16, 8192, [8192] * 3, "infer"),
    (16, 8192, [8192] * 3, "train"),
    (4096, 4096, [4096, 1024, 1024], "infer"),
    (8192, 4096, [4096] * 3, "train"),
]


def variants(m: int, k: int, rows: list[int], mode: str, dtype: torch.dtype) -> dict:
    from splitlinear import ops

    train = mode == "train"
    x = torch.randn(m, k, device="cuda", dtype=dtype, requires_grad=train)
    adjacent = [w.detach().requires_grad_(train) for w in make_parts(rows, k, dtype, "cuda", "adjacent")]
    adjacent_b = [b.detach().requires_grad_(train) for b in make_bias(rows, dtype, "cuda", "adjacent")]
    disjoint = [w.detach().requires_grad_(train) for w in make_parts(rows, k, dtype, "cuda", "disjoint")]
    disjoint_b = [b.detach().requires_grad_(train) for b in make_bias(rows, dtype, "cuda", "disjoint")]
    fused_w = torch.cat([w.detach() for w in adjacent]).requires_grad_(train)
    fused_b = torch.cat([b.detach() for b in adjacent_b]).requires_grad_(train)
    grad_out = torch.randn(m, sum(rows), device="cuda", dtype=dtype)

    def run(forward, params):
        if not train:
            with torch.no_grad():
                return forward()
        y = forward()
        return torch.autograd.grad(y, [x, *params], grad_out)

    return {
        "fused": lambda: run(lambda: F.linear(x, fused_w, fused_b), [fused_w, fused_b]),
        "eager_cat": lambda: run(
            lambda: F.linear(x, torch.cat(disjoint), torch.cat(disjoint_b)), disjoint + disjoint_b),
        "n_gemms": lambda: run(
            lambda: torch.cat([F.linear(x, w, b) for w, b in zip(disjoint, disjoint_b)], dim=-1),
            disjoint + disjoint_b),
        "slin_adjacent": lambda: run(lambda: ops.linear(x, adjacent, adjacent_b), adjacent + adjacent_b),
        "slin_disjoint": lambda: run(lambda: ops.linear(x, disjoint, disjoint_b), disjoint + disjoint_b),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: this benchmark reports GPU times only")
        return 0
    from splitlinear import ops

    dtype = torch.bfloat16
    results = []
    for m, k, rows, mode in SHAPES:
        fns = variants(m, k, rows, mode, dtype)
        row = {"M": m, "K": k, "parts": rows, "mode": mode, "ms": {}, "peak_mb": {}}
        for name, fn in fns.items():
            before = ops.runtime_counters()
            row["ms"][name] = cuda_time_ms(fn, reps=args.reps)
            after = ops.runtime_counters()
            if name.startswith("slin"):
                row[f"{name}_paths"] = {
                    key: after[key] - before[key] for key in ("views", "cats", "per_part_gemms")}
            row["peak_mb"][name] = peak_memory_mb(fn)
        fused = row["ms"]["fused"]
        row["ratio"] = {name: t / fused for name, t in row["ms"].items()}
        results.append(row)
        torch.cuda.empty_cache()

    names = ["fused", "eager_cat", "n_gemms", "slin_adjacent", "slin_disjoint"]
    print(f"{'M':>5} {'K':>5} {'parts':>18} {'mode':5} | " + " | ".join(f"{n:>13}" for n in names))
    for r in results:
        cells = [f"{r['ms'][n]:.4f} ({r['ratio'][n]:.2f}x)" for n in names]
        print(f"{r['M']:5d} {r['K']:5d} {str(r['parts']):>18} {r['mode']:5} | " + " | ".join(f"{c:>13}" for c in cells))
    print("peak MB above inputs:")
    for r in results:
        print(f"{r['M']:5d} {r['K']:5d} {r['mode']:5} | " + " | ".join(f"{r['peak_mb'][n]:13.1f}" for n in names))
    print("paths taken:", [(r["M"], r["mode"], r.get("slin_adjacent_paths"), r.get("slin_disjoint_paths")) for r in results])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "dtype": "bfloat16", "reps": args.reps, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: where one GEMM per part stops beating copy-then-one-GEMM.

For weight parts that are not adjacent (separate allocations) the op either
runs one GEMM per part into column blocks of the output (``per_part``) or
copies the parts into one buffer and runs one GEMM (``cat``). The op takes
``per_part`` for M <= ``set_per_part_max_rows``, or by default (``auto``)
from a cost model over the parts' number and bytes. This script times both
paths of the op itself and the automatic choice, interleaved, for M from 1 to
8192 on projection shapes of real models and on many small parts (bf16,
forward), and reports how often ``auto`` took the faster path and its worst
ratio to the faster one. The adjacent (zero-copy view) time is printed as
the floor.

Times: median over 30 batches of 10 back-to-back calls (CUDA events, per
call), all in one run. Usage: ``python3 bench/bench_per_part.py --json out.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import cuda_time_ms, make_parts  # noqa: E402

#: (name, K, rows of the parts)
SHAPES = [
    ("llama8b_qkv", 4096, [4096, 1024, 1024]),
    ("llama8b_gate_up", 4096, [14336, 14336]),
    ("anchor_8192x3", 8192, [8192] * 3),
    ("qwen2_7b_qkv", 3584, [3584, 512, 512]),
    ("experts_16x256", 2048, [256] * 16),
    ("small_8x128", 1024, [128] * 8),
]
ROWS = [1, 16, 64, 256, 1024, 2048, 4096, 8192]
ALWAYS, NEVER, AUTO = 1 << 40, 0, None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench_per_part: needs a CUDA device", file=sys.stderr)
        return 1
    from splitlinear import ops

    dtype = getattr(torch, args.dtype)
    previous = ops.set_per_part_max_rows(ALWAYS)
    results = []
    print(f"{'shape':<17} {'M':>5} {'view ms':>9} {'per_part ms':>12} {'cat ms':>9} {'cat/per_part':>13}"
          f" {'auto ms':>9} {'auto took':>10}")
    try:
        for name, k, rows in SHAPES:
            disjoint = make_parts(rows, k, dtype, "cuda", "disjoint")
            adjacent = make_parts(rows, k, dtype, "cuda", "adjacent")
            for m in ROWS:
                x = torch.randn(m, k, device="cuda", dtype=dtype)

                def run(threshold: int | None, parts: list[torch.Tensor]) -> float:
                    ops.set_per_part_max_rows(threshold)
                    with torch.no_grad():
                        return cuda_time_ms(lambda: ops.linear(x, parts), reps=30)

                # Interleaved, twice each, so drift hits both paths alike.
                per_part = min(run(ALWAYS, disjoint), run(ALWAYS, disjoint))
                cat = min(run(NEVER, disjoint), run(NEVER, disjoint))
                view = run(ALWAYS, adjacent)
                auto = run(AUTO, disjoint)
                before = ops.runtime_counters()
                with torch.no_grad():
                    ops.linear(x, disjoint)
                took = "per_part" if ops.runtime_counters()["per_part_gemms"] > before["per_part_gemms"] else "cat"
                results.append({"shape": name, "k": k, "rows": rows, "m": m, "view_ms": view,
                                "per_part_ms": per_part, "cat_ms": cat, "cat_over_per_part": cat / per_part,
                                "auto_ms": auto, "auto_took": took})
                print(f"{name:<17} {m:>5} {view:>9.4f} {per_part:>12.4f} {cat:>9.4f} {cat / per_part:>13.2f}"
                      f" {auto:>9.4f} {took:>10}")
            del disjoint, adjacent
    finally:
        ops.set_per_part_max_rows(previous)

    faster = ["per_part" if r["per_part_ms"] <= r["cat_ms"] else "cat" for r in results]
    right = sum(r["auto_took"] == f for r, f in zip(results, faster))
    worst = max(r["auto_ms"] / min(r["per_part_ms"], r["cat_ms"]) for r in results)
    print(f"auto took the faster path in {right}/{len(results)} cases; worst auto/faster time {worst:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "dtype": args.dtype,
                       "results": results, "auto_right": right, "auto_worst_ratio": worst}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

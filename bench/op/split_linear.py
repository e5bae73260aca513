"""The bf16 split linear by M: splitlinear's op against what a user would write instead.

Shapes: the split projections of ``models.OP_SHAPES`` (Llama-3-8B q/k/v and gate/up, Qwen2-7B
q/k/v) at M (tokens) in ``models.OP_ROWS``. Variants: ``fused`` (F.linear on one
pre-concatenated weight: the floor), ``eager_cat`` (torch.cat every call + F.linear), ``n_gemms``
(one F.linear per part + cat of the outputs), ``inductor`` (``torch.compile`` of the eager-cat
function, inference only), ``slin_adjacent`` (the op on parts that are views of one buffer: the
zero-copy view) and ``slin_disjoint`` (the op on separately allocated parts). ``infer`` times the
forward; ``train`` forward + backward (input and weight/bias gradients). Times: medians of
CUDA-event timings of back-to-back calls (``common.cuda_time_ms``), ms, all in one process; peak
memory above the inputs; ratios against ``fused``.

    python bench/op/split_linear.py --out op.json [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import make_bias, make_parts, peak_memory_mb, timer_for  # noqa: E402
from models import OP_ROWS, OP_SHAPES, QUICK_ROWS, QUICK_SHAPES  # noqa: E402

MODES = ("infer", "train")
NAMES = ["fused", "eager_cat", "n_gemms", "inductor", "slin_adjacent", "slin_disjoint"]


def variants(m: int, k: int, rows: list[int], mode: str, dtype: torch.dtype, device: str = "cuda",
             inductor: bool = True) -> dict:
    """The variants' callables for one shape, M and mode (``inductor``: include the compiled one)."""
    from splitlinear import ops

    train = mode == "train"
    x = torch.randn(m, k, device=device, dtype=dtype, requires_grad=train)
    adjacent = [w.detach().requires_grad_(train) for w in make_parts(rows, k, dtype, device, "adjacent")]
    adjacent_b = [b.detach().requires_grad_(train) for b in make_bias(rows, dtype, device, "adjacent")]
    disjoint = [w.detach().requires_grad_(train) for w in make_parts(rows, k, dtype, device, "disjoint")]
    disjoint_b = [b.detach().requires_grad_(train) for b in make_bias(rows, dtype, device, "disjoint")]
    fused_w = torch.cat([w.detach() for w in adjacent]).requires_grad_(train)
    fused_b = torch.cat([b.detach() for b in adjacent_b]).requires_grad_(train)
    grad_out = torch.randn(m, sum(rows), device=device, dtype=dtype)
    compiled_cat = None
    if inductor and not train:
        torch._dynamo.reset()
        compiled_cat = torch.compile(lambda x, ws, bs: F.linear(x, torch.cat(ws), torch.cat(bs)), dynamic=False)

    def run(forward, params):
        if not train:
            with torch.no_grad():
                return forward()
        y = forward()
        return torch.autograd.grad(y, [x, *params], grad_out)

    out = {
        "fused": lambda: run(lambda: F.linear(x, fused_w, fused_b), [fused_w, fused_b]),
        "eager_cat": lambda: run(
            lambda: F.linear(x, torch.cat(disjoint), torch.cat(disjoint_b)), disjoint + disjoint_b),
        "n_gemms": lambda: run(
            lambda: torch.cat([F.linear(x, w, b) for w, b in zip(disjoint, disjoint_b)], dim=-1),
            disjoint + disjoint_b),
        "slin_adjacent": lambda: run(lambda: ops.linear(x, adjacent, adjacent_b), adjacent + adjacent_b),
        "slin_disjoint": lambda: run(lambda: ops.linear(x, disjoint, disjoint_b), disjoint + disjoint_b),
    }
    if compiled_cat is not None:
        out["inductor"] = lambda: run(lambda: compiled_cat(x, disjoint, disjoint_b), disjoint + disjoint_b)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="write the results here (JSON)")
    parser.add_argument("--reps", type=int, default=20, help="CUDA: batches per median")
    parser.add_argument("--quick", action="store_true", help="CPU smoke run: tiny shapes, no Inductor")
    args = parser.parse_args(argv)
    from splitlinear import ops

    device = "cuda" if torch.cuda.is_available() and not args.quick else "cpu"
    if device == "cpu" and not args.quick:
        print("op bench: no CUDA device (use --quick for a CPU smoke run)", file=sys.stderr)
        return 1
    dtype = torch.bfloat16
    shapes, ms = (QUICK_SHAPES, QUICK_ROWS) if args.quick else (OP_SHAPES, OP_ROWS)
    timer = timer_for(device, args.reps)
    results = []
    for name, k, rows in shapes:
        for mode in MODES:
            for m in ms:
                fns = variants(m, k, rows, mode, dtype, device, inductor=not args.quick)
                row = {"shape": name, "M": m, "K": k, "parts": rows, "mode": mode, "ms": {}, "peak_mb": {}}
                for vname, fn in fns.items():
                    before = ops.runtime_counters()
                    row["ms"][vname] = timer(fn)
                    after = ops.runtime_counters()
                    if vname.startswith("slin"):
                        row[f"{vname}_paths"] = {
                            key: after[key] - before[key] for key in ("views", "cats", "per_part_gemms")}
                    if device == "cuda":
                        row["peak_mb"][vname] = peak_memory_mb(fn)
                fused = row["ms"]["fused"]
                row["ratio"] = {vname: t / fused for vname, t in row["ms"].items()}
                results.append(row)
                cells = [f"{row['ms'][n]:.4f} ({row['ratio'][n]:.2f}x)" if n in row["ms"] else "-" for n in NAMES]
                print(f"{name:<18} {mode:5} {m:5d} | " + " | ".join(f"{c:>15}" for c in cells), flush=True)
                del fns
                if device == "cuda":
                    torch.cuda.empty_cache()
    if args.out:
        skipped = ["inductor (--quick: no compile)"] if args.quick else []
        with open(args.out, "w") as f:
            json.dump({"config": {"dtype": "bfloat16", "device": device, "reps": args.reps, "columns": NAMES,
                                  "inductor": "inference only"},
                       "results": results, "skipped": skipped}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

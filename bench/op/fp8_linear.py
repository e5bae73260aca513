"""Benchmark: splitlinear's FP8 split linear against bf16 and the per-Linear FP8 alternatives.

Shapes: ``models.OP_SHAPES`` (Llama-3-8B's q/k/v and gate/up, Qwen2-7B's q/k/v),
M (tokens) in ``models.OP_ROWS``; ``fwd`` times
the forward, ``fwd+bwd`` forward and backward (input and weight gradients,
``torch.autograd.grad``, so nothing accumulates). Columns, all in one process
on the same data, side by side:

- ``bf16``: ``splitlinear.ops.linear`` on adjacent bf16 parts (one bf16 GEMM:
  the fused floor);
- ``slin_tensorwise`` / ``slin_rowwise``: ``splitlinear.ops.fp8_linear`` on the
  bf16 parts (each call quantizes x once and every part with its own scale,
  then one FP8 GEMM; the backward as in ``docs/Design.md``, "FP8");
- ``slin_blockwise``: the same op with ``recipe="blockwise"`` (1x128 activation
  blocks, 128x128 weight blocks per part; ``n/a`` where K or a part's rows is not
  a multiple of 128, or on a GPU other than sm_90);
- ``scaled_mm_per_part`` (``fwd`` only): one ``torch._scaled_mm`` per part,
  rowwise scales, weights quantized beforehand, the activation quantized once
  per part by a ``torch.compile``'d amax + cast, as torchao's per-Linear
  modules would;
- ``torchao_tensorwise`` / ``torchao_rowwise`` (at M = 2048 only): ``torchao.float8.
  convert_to_float8_training`` on one ``nn.Linear`` per part, under
  ``torch.compile`` (``n/a`` when torchao is not importable).

A last table times the quantization of an 8192 x 4096 bf16 activation:
``fp8_quantize`` (axis ``tensor`` and ``rows``) against a ``torch.compile``'d
amax + cast. Every FP8 output is checked against bf16 (relative error below
0.1) before it is timed. Times: medians over batches of back-to-back calls
(CUDA events, per call; ``common.cuda_time_ms``).

Usage (GPU; ``bench/run.py --suite fp8-op`` runs it)::

    python3 bench/op/fp8_linear.py --out fp8-op.json

GPU time of the decode GEMMs with FP8 weights, in CUDA graphs: ``bench/tools/fp8_graphs.py``.
Smoke run anywhere (tiny shapes, CPU, no compile, no torchao)::

    python3 bench/op/fp8_linear.py --device cpu --quick
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import cpu_time_ms, cuda_time_ms, make_parts  # noqa: E402
from models import OP_ROWS as ROWS  # noqa: E402
from models import OP_SHAPES as SHAPES  # noqa: E402
#: The one M at which the torchao columns are measured (each case compiles a module).
TORCHAO_ROWS = 2048
QUICK_SHAPES: list[tuple[str, int, list[int]]] = [("tiny q/k/v", 64, [64, 16, 16])]
QUICK_ROWS = [16, 48]
MODES = ("fwd", "fwd+bwd")
COLUMNS = ("bf16", "slin_tensorwise", "slin_rowwise", "slin_blockwise", "scaled_mm_per_part",
           "torchao_tensorwise", "torchao_rowwise")
#: The block edge of the blockwise recipe: K and every part's rows must be multiples of it.
BLOCK = 128
E4M3 = torch.float8_e4m3fn
NA = "n/a"


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def rowwise_quantizer() -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """amax per row + cast to e4m3, the conventions of ``fp8_quantize`` (compiled: one fused kernel)."""
    def quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        amax = x.abs().amax(dim=-1, keepdim=True).float()
        scale = torch.where(amax == 0, 1.0, 448.0 / amax)
        return (x.float() * scale).clamp(-448.0, 448.0).to(E4M3), (1.0 / scale)
    return quantize


def tensorwise_quantizer() -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    def quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        amax = x.abs().amax().float()
        scale = torch.where(amax == 0, 1.0, 448.0 / amax)
        return (x.float() * scale).clamp(-448.0, 448.0).to(E4M3), (1.0 / scale).reshape(1)
    return quantize


class PerPartLinears(nn.Module):
    """One ``nn.Linear`` per part (no bias): what a model with separate q/k/v projections holds."""

    def __init__(self, parts: Sequence[torch.Tensor]) -> None:
        super().__init__()
        self.linears = nn.ModuleList()
        for w in parts:
            lin = nn.Linear(w.shape[1], w.shape[0], bias=False, device=w.device, dtype=w.dtype)
            with torch.no_grad():
                lin.weight.copy_(w)
            self.linears.append(lin)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(lin(x) for lin in self.linears)


def _torchao_installed() -> bool:
    try:
        import torchao.float8  # noqa: F401
    except ImportError:
        return False
    return True


def torchao_module(parts: Sequence[torch.Tensor], recipe: str) -> nn.Module | None:
    """torchao's float8 training conversion of :class:`PerPartLinears`, compiled; None without torchao."""
    try:
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    except ImportError:
        return None
    module = PerPartLinears(parts)
    convert_to_float8_training(module, config=Float8LinearConfig.from_recipe_name(recipe))
    # A fresh Dynamo cache per module: one compiled `forward` per shape and
    # mode would otherwise hit the recompile limit and fall back to eager.
    torch._dynamo.reset()
    return torch.compile(module)


def columns(m: int, k: int, rows: list[int], mode: str, device: str, quick: bool,
            timer: Callable[[Callable[[], object]], float]) -> dict[str, float | str]:
    """The times (ms) of every column for one shape, M and mode; ``n/a`` where a column does not apply."""
    from splitlinear import ops

    train = mode == "fwd+bwd"
    dtype = torch.bfloat16
    g = torch.Generator(device="cpu").manual_seed(m)
    x = torch.randn(m, k, generator=g).to(device=device, dtype=dtype).requires_grad_(train)
    parts = [p.requires_grad_(train) for p in make_parts(rows, k, dtype, device, "adjacent", seed=m)]
    dy = torch.randn(m, sum(rows), generator=g).to(device=device, dtype=dtype)
    reference = ops.linear(x, parts).detach()
    out: dict[str, float | str] = {}

    def timed(name: str, forward: Callable[[], torch.Tensor | tuple[torch.Tensor, ...]],
              inputs: Sequence[torch.Tensor]) -> None:
        y = forward()
        y_cat = torch.cat(y, -1) if isinstance(y, tuple) else y
        err = rel_err(y_cat.detach(), reference)
        if err > 0.1:
            raise RuntimeError(f"fp8_linear bench: {name} at M={m} has relative error {err:.3g} against bf16")
        if train:
            def step() -> object:
                y = forward()
                outs = y if isinstance(y, tuple) else (y,)
                grads = dy.split([o.shape[-1] for o in outs], -1)
                return torch.autograd.grad(outs, list(inputs), grads)
            out[name] = timer(step)
        else:
            with torch.no_grad():
                out[name] = timer(forward)

    timed("bf16", lambda: ops.linear(x, parts), [x, *parts])
    timed("slin_tensorwise", lambda: ops.fp8_linear(x, parts, recipe="tensorwise"), [x, *parts])
    timed("slin_rowwise", lambda: ops.fp8_linear(x, parts, recipe="rowwise"), [x, *parts])
    # cuBLASLt's block scales run on sm_90 only; the CPU runs the exact emulation.
    blocks_fit = k % BLOCK == 0 and all(r % BLOCK == 0 for r in rows)
    if blocks_fit and (device == "cpu" or torch.cuda.get_device_capability()[0] == 9):
        timed("slin_blockwise", lambda: ops.fp8_linear(x, parts, recipe="blockwise"), [x, *parts])
    else:
        out["slin_blockwise"] = NA

    if train or device != "cuda":
        out["scaled_mm_per_part"] = NA
    else:
        quantize = torch.compile(rowwise_quantizer())
        w8 = [ops.fp8_cast_parts([p.detach()], E4M3) for p in parts]

        def per_part() -> tuple[torch.Tensor, ...]:
            ys = []
            for q in w8:
                x8, sx = quantize(x)  # once per part: each nn.Linear quantizes its own input
                ys.append(torch._scaled_mm(x8, q.data.t(), scale_a=sx, scale_b=q.row_scale_inv.view(1, -1),
                                           out_dtype=torch.bfloat16, use_fast_accum=True))
            return tuple(ys)
        timed("scaled_mm_per_part", per_part, [])

    for recipe in ("tensorwise", "rowwise"):
        name = f"torchao_{recipe}"
        # torchao compiles one module per case: only at M = TORCHAO_ROWS, to
        # keep the run's compile time bounded.
        if quick or device != "cuda" or m != TORCHAO_ROWS:
            out[name] = NA
            continue
        module = torchao_module([p.detach() for p in parts], recipe)
        if module is None:
            out[name] = NA
            continue
        timed(name, lambda module=module: module(x), [x, *module.parameters()])
    return out


GEMM_COLUMNS = ("bf16", "slin_scaled", "slin_quantize_x_scaled", "scaled_mm_fused", "scaled_mm_per_part")


def gemm_columns(m: int, k: int, rows: list[int], device: str,
                 timer: Callable[[Callable[[], object]], float]) -> dict[str, float | str]:
    """Weights already in FP8 (serving): the GEMMs alone, forward only.

    ``slin_scaled``: ``scaled_linear`` on a pre-quantized activation and the FP8
    parts (adjacent views of one buffer, each part's scale spread over its
    rows): one GEMM. ``slin_quantize_x_scaled``: the same after ``fp8_quantize``
    of the bf16 activation (per row). ``scaled_mm_fused``: one
    ``torch._scaled_mm`` rowwise over the same buffer (the reference kernel).
    ``scaled_mm_per_part``: one ``torch._scaled_mm`` per part on the same
    quantized activation (what per-Linear FP8 weights run).
    """
    from splitlinear import ops

    dtype = torch.bfloat16
    g = torch.Generator(device="cpu").manual_seed(m + 1)
    x = torch.randn(m, k, generator=g).to(device=device, dtype=dtype)
    parts = make_parts(rows, k, dtype, device, "adjacent", seed=m + 1)
    reference = ops.linear(x, parts)
    q = ops.fp8_quantize(x, E4M3, "rows")
    w = ops.fp8_cast_parts(parts, E4M3)
    w8_parts = list(w.data.split(rows, 0))
    scale_b = w.row_scale_inv
    out: dict[str, float | str] = {}

    def check(name: str, y: torch.Tensor) -> None:
        err = rel_err(y, reference)
        if err > 0.1:
            raise RuntimeError(f"fp8_linear bench: {name} at M={m} has relative error {err:.3g} against bf16")

    def scaled() -> torch.Tensor:
        return ops.scaled_linear(q.data, q.scale_inv, w8_parts, scale_b, out_dtype=dtype, fast_accum=True)

    def quantize_and_scaled() -> torch.Tensor:
        qx = ops.fp8_quantize(x, E4M3, "rows")
        return ops.scaled_linear(qx.data, qx.scale_inv, w8_parts, scale_b, out_dtype=dtype, fast_accum=True)

    with torch.no_grad():
        for name, fn in (("bf16", lambda: ops.linear(x, parts)), ("slin_scaled", scaled),
                         ("slin_quantize_x_scaled", quantize_and_scaled)):
            check(name, fn())
            out[name] = timer(fn)
        if device != "cuda":
            out["scaled_mm_fused"] = out["scaled_mm_per_part"] = NA
            return out
        sa = q.scale_inv.view(m, 1)

        def fused() -> torch.Tensor:
            return torch._scaled_mm(q.data, w.data.t(), scale_a=sa, scale_b=scale_b.view(1, -1),
                                    out_dtype=dtype, use_fast_accum=True)
        offsets = [0]
        for r in rows:
            offsets.append(offsets[-1] + r)
        sb_parts = [scale_b[offsets[i]:offsets[i + 1]].view(1, -1) for i in range(len(rows))]

        def per_part() -> torch.Tensor:
            return torch.cat([torch._scaled_mm(q.data, w8.t(), scale_a=sa, scale_b=sb, out_dtype=dtype,
                                               use_fast_accum=True) for w8, sb in zip(w8_parts, sb_parts)], -1)
        check("scaled_mm_fused", fused())
        check("scaled_mm_per_part", per_part())
        out["scaled_mm_fused"] = timer(fused)
        # Per part without the cat: the GEMMs alone.
        out["scaled_mm_per_part"] = timer(lambda: [torch._scaled_mm(q.data, w8.t(), scale_a=sa, scale_b=sb,
                                                                    out_dtype=dtype, use_fast_accum=True)
                                                   for w8, sb in zip(w8_parts, sb_parts)])
    return out


def quantization_rows(device: str, quick: bool,
                      timer: Callable[[Callable[[], object]], float]) -> list[dict[str, object]]:
    """fp8_quantize of a [M, K] bf16 activation against a compiled amax + cast, per tensor and per row."""
    from splitlinear import ops

    m, k = (64, 64) if quick else (8192, 4096)
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(0)).to(device=device, dtype=torch.bfloat16)
    rows = []
    for axis, make in (("tensor", tensorwise_quantizer), ("rows", rowwise_quantizer)):
        ours = ops.fp8_quantize(x, E4M3, axis)
        row: dict[str, object] = {"M": m, "K": k, "axis": axis,
                                  "fp8_quantize": timer(lambda axis=axis: ops.fp8_quantize(x, E4M3, axis))}
        if quick or device != "cuda":
            row["compiled_amax_cast"] = NA
        else:
            compiled = torch.compile(make())
            x8, scale_inv = compiled(x)
            # Same conventions, so the same bytes (a check that both do the same work).
            row["same_bytes"] = bool(torch.equal(x8.view(torch.uint8), ours.data.view(torch.uint8)))
            row["compiled_amax_cast"] = timer(lambda: compiled(x))
        rows.append(row)
    return rows


def fmt(v: object) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--quick", action="store_true", help="tiny shapes, no compile, no torchao (smoke run)")
    parser.add_argument("--out", type=Path, help="write the results as JSON to this file "
                        "(e.g. bench/results/<date>-h200/fp8-linear.json)")
    parser.add_argument("--reps", type=int, default=20, help="CUDA: batches per median")
    parser.add_argument("--only-fp8-weights", action="store_true",
                        help="only the weights-in-FP8 table (e.g. in a process with SPLITLINEAR_FP8_AUTOTUNE_MAX_M set)")
    parser.add_argument("--rows", type=int, nargs="+", metavar="M",
                        help=f"the M values of the tables (default: {' '.join(map(str, ROWS))})")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("fp8_linear bench: no CUDA device (use --device cpu --quick for a smoke run)", file=sys.stderr)
        return 1
    if args.device == "cuda":
        def timer(fn: Callable[[], object]) -> float:
            return cuda_time_ms(fn, reps=args.reps)
    else:
        timer = cpu_time_ms
    shapes, ms = (QUICK_SHAPES, QUICK_ROWS) if args.quick else (SHAPES, ROWS)
    if args.rows:
        ms = args.rows

    results = []
    header = f"{'shape':<18} {'mode':<8} {'M':>5} " + " ".join(f"{c:>19}" for c in COLUMNS)
    print(header + "   (ms; x = speedup over bf16)")
    for name, k, rows in [] if args.only_fp8_weights else shapes:
        for mode in MODES:
            for m in ms:
                times = columns(m, k, rows, mode, args.device, args.quick, timer)
                results.append({"shape": name, "K": k, "N": rows, "mode": mode, "M": m, **times})
                base = times["bf16"]
                cells = []
                for c in COLUMNS:
                    t = times[c]
                    cells.append(f"{t:>9.4f} ({base / t:4.2f}x)" if isinstance(t, float) and isinstance(base, float)
                                 else f"{t:>19}")
                print(f"{name:<18} {mode:<8} {m:>5} " + " ".join(f"{c:>19}" for c in cells), flush=True)
    gemm = []
    print(f"\nweights in FP8 (forward, GEMMs alone)\n{'shape':<18} {'M':>5} "
          + " ".join(f"{c:>22}" for c in GEMM_COLUMNS) + "   (ms; x = speedup over bf16)")
    for name, k, rows in shapes:
        for m in ms:
            times = gemm_columns(m, k, rows, args.device, timer)
            gemm.append({"shape": name, "K": k, "N": rows, "M": m, **times})
            base = times["bf16"]
            cells = [f"{t:>12.4f} ({base / t:5.2f}x)" if isinstance(t, float) and isinstance(base, float)
                     else f"{t:>22}" for t in (times[c] for c in GEMM_COLUMNS)]
            print(f"{name:<18} {m:>5} " + " ".join(f"{c:>22}" for c in cells), flush=True)
    quant = [] if args.only_fp8_weights else quantization_rows(args.device, args.quick, timer)
    print(f"\n{'quantize':<18} {'axis':<8} {'M x K':>11} {'fp8_quantize':>13} {'compiled':>13}")
    for row in quant:
        print(f"{'bf16 -> e4m3':<18} {row['axis']:<8} {row['M']:>5}x{row['K']:<5} {fmt(row['fp8_quantize']):>13} "
              f"{fmt(row['compiled_amax_cast']):>13}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        device = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
        autotune = os.environ.get("SPLITLINEAR_FP8_AUTOTUNE_MAX_M")
        skipped = []
        if args.quick or device == "cpu":
            skipped.append("scaled_mm_per_part, torchao_*, compiled_amax_cast: GPU only (--quick runs on the CPU)")
        elif not _torchao_installed():
            skipped.append("torchao_tensorwise, torchao_rowwise: torchao not installed")
        args.out.write_text(json.dumps({"config": {"device": device, "dtype": "bfloat16", "reps": args.reps,
                                                   "fp8_autotune_max_m": autotune, "columns": list(COLUMNS),
                                                   "torchao_rows": TORCHAO_ROWS},
                                        "results": results, "fp8_weights": gemm, "quantization": quant,
                                        "skipped": skipped},
                                       indent=1))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

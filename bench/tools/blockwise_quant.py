"""The quantizations and GEMMs of the blockwise FP8 recipe, each timed alone.

For Llama-3-8B layer sizes (8192 tokens), against the copy bandwidth of the same tensor and the
tensorwise GEMM of the same shape. The runtime's one-launch kernels that ``lib/Torch/Fp8Blockwise.cpp``
calls (``fp8_quantize`` axis ``"blocks"``; ``fp8_quantize_dual`` axis ``"blocks"``, both copies of x
or dy from one read; ``fp8_quantize_weight_blocks``) next to the same quantizations written as ATen
ops and compiled by Inductor, with two forms for the column-wise (wgrad) copy: ``transpose-first``
(pad, transpose to contiguous, then 1x128 blocks along the rows) and ``blocks-first`` (the block
amax over 128 rows in place, the cast, then the transpose of the FP8 bytes). GPU medians over
``--reps`` runs, CUDA events.

    python bench/tools/blockwise_quant.py [--reps 50]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import cuda_time_ms  # noqa: E402

E4M3 = torch.float8_e4m3fn
MAX = 448.0
TOKENS = 8192


def scale_of(amax: torch.Tensor) -> torch.Tensor:
    """fp8 max / amax, 1 where amax is 0, rounded down to a power of 2."""
    s = torch.where(amax == 0, torch.ones_like(amax), (MAX / amax).clamp_max(torch.finfo(torch.float32).max))
    return (s.view(torch.int32) & -8388608).view(torch.float32)  # 0xFF800000: sign and exponent


def rows_1x128(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r, c = x.shape
    xf = x.float().reshape(r, c // 128, 128)
    s = scale_of(xf.abs().amax(-1))
    return (xf * s.unsqueeze(-1)).clamp(-MAX, MAX).to(E4M3).view(r, c), s.reciprocal()


def cols_transpose_first(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    m = x.shape[0]
    pad = -m % 128
    padded = torch.cat([x, x.new_zeros(pad, x.shape[1])])
    return rows_1x128(padded.t().contiguous())


def cols_blocks_first(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    m, c = x.shape
    pad = -m % 128
    xf = torch.cat([x, x.new_zeros(pad, c)]).float().reshape((m + pad) // 128, 128, c)
    s = scale_of(xf.abs().amax(1))  # [M'/128, C]
    q = (xf * s.unsqueeze(1)).clamp(-MAX, MAX).to(E4M3).reshape(m + pad, c)
    return q.t().contiguous(), s.reciprocal().t().contiguous()


def weight_128x128(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    n, k = w.shape
    wf = w.float().reshape(n // 128, 128, k // 128, 128)
    s = scale_of(wf.abs().amax((1, 3)))
    q = (wf * s.view(n // 128, 1, k // 128, 1)).clamp(-MAX, MAX).to(E4M3).view(n, k)
    return q, s.reciprocal(), q.t().contiguous(), s.reciprocal().t().contiguous()


def weight_128x128_two_stage(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The block amax in two reductions: per row over each 128 columns (contiguous), then over each 128 rows."""
    n, k = w.shape
    row_amax = w.float().reshape(n, k // 128, 128).abs().amax(-1)  # [N, K/128]
    s = scale_of(row_amax.reshape(n // 128, 128, k // 128).amax(1))
    wf = w.float().reshape(n // 128, 128, k // 128, 128)
    q = (wf * s.view(n // 128, 1, k // 128, 1)).clamp(-MAX, MAX).to(E4M3).view(n, k)
    return q, s.reciprocal(), q.t().contiguous(), s.reciprocal().t().contiguous()


def time_ms(fn: Callable[[], object], reps: int) -> float:
    """Median CUDA-event time of one call (3 warm-up calls)."""
    return cuda_time_ms(fn, warmup=3, reps=reps, batch=1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=50)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("needs CUDA", file=sys.stderr)
        return 1
    import splitlinear.ops  # noqa: F401  (registers torch.ops.splitlinear)

    dev = "cuda"
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {TOKENS} tokens; ms (GB/s of bytes moved)")
    for k in (4096, 14336):
        x = torch.randn(TOKENS, k, device=dev, dtype=torch.bfloat16)
        copy = time_ms(lambda: x.clone(), args.reps)
        moved = x.numel() * 3  # read bf16, write fp8
        print(f"x [{TOKENS}, {k}]: copy {copy:.3f} ms ({x.numel() * 4 / copy / 1e6:.0f} GB/s)")
        for name, fn in (("rows 1x128", rows_1x128), ("cols transpose-first", cols_transpose_first),
                         ("cols blocks-first", cols_blocks_first)):
            f = torch.compile(fn)
            ms = time_ms(lambda: f(x), args.reps)
            print(f"  {name:22s} {ms:.3f} ms ({moved / ms / 1e6:.0f} GB/s)")
        ms = time_ms(lambda: torch.ops.splitlinear.fp8_quantize(x, E4M3, "blocks", None, True, False, True),
                     args.reps)
        print(f"  {'rows 1x128, runtime':22s} {ms:.3f} ms ({moved / ms / 1e6:.0f} GB/s)")
        ms = time_ms(lambda: torch.ops.splitlinear.fp8_quantize_dual(x, E4M3, None, "blocks", True), args.reps)
        both = x.numel() * 4  # read bf16 once, write both FP8 copies
        print(f"  {'rows + cols, runtime':22s} {ms:.3f} ms ({both / ms / 1e6:.0f} GB/s)")
    for n, k in ((6144, 4096), (28672, 4096), (4096, 14336)):
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        for name, fn in (("one reduction", weight_128x128), ("two reductions", weight_128x128_two_stage)):
            f = torch.compile(fn)
            ms = time_ms(lambda: f(w), args.reps)
            print(f"W [{n}, {k}] 128x128 + transposed copy, {name}: {ms:.3f} ms "
                  f"({w.numel() * 4 / ms / 1e6:.0f} GB/s)")
        parts = [w[: n // 2], w[n // 2:]]  # adjacent row blocks, as pack_parameters leaves them
        ms = time_ms(lambda: torch.ops.splitlinear.fp8_quantize_weight_blocks(parts, E4M3, True, True, True),
                     args.reps)
        print(f"W [{n}, {k}] 128x128 + transposed copy, runtime: {ms:.3f} ms ({w.numel() * 4 / ms / 1e6:.0f} GB/s)")
    for m, n, k in ((TOKENS, 6144, 4096), (TOKENS, 28672, 4096), (TOKENS, 4096, 14336), (6144, 4096, TOKENS),
                    (28672, 4096, TOKENS)):
        a = torch.randn(m, k, device=dev).to(E4M3)
        b = torch.randn(n, k, device=dev).to(E4M3)
        one = torch.ones((), device=dev)
        tw = time_ms(lambda: torch._scaled_mm(a, b.t(), one, one, out_dtype=torch.bfloat16, use_fast_accum=True),
                     args.reps)
        sa = torch.rand(m, k // 128, device=dev) + 0.5
        sb = torch.rand(n // 128, k // 128, device=dev) + 0.5
        bw = time_ms(lambda: torch.ops.splitlinear.block_scaled_mm(a, sa, b, sb, "128x128", None, torch.bfloat16),
                     args.reps)
        sb1 = torch.rand(n, k // 128, device=dev) + 0.5
        bw1 = time_ms(lambda: torch.ops.splitlinear.block_scaled_mm(a, sa, b, sb1, "1x128", None, torch.bfloat16),
                      args.reps)
        flops = 2 * m * n * k
        print(f"GEMM {m}x{n}x{k}: tensorwise fast-accum {tw:.3f} ms ({flops / tw / 1e9:.0f} TFLOP/s), "
              f"block 128x128 {bw:.3f} ms ({flops / bw / 1e9:.0f}), 1x128 {bw1:.3f} ms ({flops / bw1 / 1e9:.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

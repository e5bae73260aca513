"""The backward's FP8 quantization of dY, timed: one ``fp8_quantize_dual`` against the two calls it replaces.

With several weight parts and the tensorwise recipe, the backward of ``fp8_linear`` needs dY
twice in e5m2: with the parts' scale_inv folded into its columns (dgrad) and plain, transposed
(wgrad). Before, that was two ``fp8_quantize`` calls (two amax passes, two casts); now one
``fp8_quantize_dual`` (one amax pass taking both maxima, one cast writing both copies). Shapes:
dY of q/k/v and gate/up of Llama-3-8B at 4 x 2048 tokens, bf16. Medians of CUDA-event timings
(``common.cuda_time_ms``), both in this process; the bytes are checked equal first.

    python bench/fp8_dy_quant.py --out bench/results/<date>-h200/fp8-dy-quant.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import torch

from common import cuda_time_ms

SHAPES = {"q/k/v": (8192, 4096 + 1024 + 1024), "gate/up": (8192, 2 * 14336)}
E5M2 = torch.float8_e5m2


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 1
    from splitlinear import ops

    rows = []
    print(f"{'dY':8s} {'shape':>12s} {'two calls ms':>13s} {'dual ms':>8s} {'ratio':>6s} {'dual TB/s':>9s}")
    for name, (m, n) in SHAPES.items():
        torch.manual_seed(0)
        dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        col_scale = torch.rand(n, device="cuda") * 1e-3 + 1e-4

        def two() -> object:
            a = ops.fp8_quantize(dy, E5M2, "tensor", col_scale=col_scale)
            b = ops.fp8_quantize(dy, E5M2, "tensor", write_out=False, write_transposed=True)
            return a, b

        def dual() -> object:
            return ops.fp8_quantize_dual(dy, E5M2, col_scale)

        (a, b), d = two(), dual()
        assert torch.equal(a.data.view(torch.uint8), d.data.view(torch.uint8))
        assert torch.equal(b.data_t.view(torch.uint8), d.data_t.view(torch.uint8))
        assert torch.equal(a.scale_inv, d.scale_inv) and torch.equal(b.scale_inv, d.scale_inv_t)
        t_two, t_dual = cuda_time_ms(two), cuda_time_ms(dual)
        moved = m * n * (2 + 2 + 1 + 1)  # two reads of bf16 dY (amax, cast), two FP8 writes
        row = {"dy": name, "m": m, "n": n, "two_calls_ms": t_two, "dual_ms": t_dual,
               "ratio": t_two / t_dual, "dual_tb_per_s": moved / t_dual / 1e9}
        rows.append(row)
        print(f"{name:8s} {f'{m}x{n}':>12s} {t_two:13.4f} {t_dual:8.4f} {t_two / t_dual:6.2f} "
              f"{row['dual_tb_per_s']:9.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Row-wise FP8 quantization of activations and dY, timed against the copy of the same tensor.

The ``rowwise`` training recipe quantizes each forward input per row (e4m3) and, for dgrad, each
dY per row with the weight parts' ``scale_inv`` folded into its columns (``col_scale``, e5m2);
for wgrad it quantizes both per column, transposed. This times, on ``[8192, K]`` bf16 for
Llama-3-8B's and Qwen2-7B's widths (medians of CUDA events, one process):

* ``splitlinear.ops.fp8_quantize(x, dtype, "rows", col_scale=...)``, with its bandwidth (2 bytes
  read and 1 written per element) next to ``torch``'s copy of the same tensor (4 bytes per element);
* the per-row and the per-column transposed quantization as two ``fp8_quantize`` calls, against
  one ``fp8_quantize_dual(x, dtype, col_scale, axis="rows")`` that writes the same bytes.

    python bench/fp8_row_quant.py --out bench/results/<date>-h200/fp8-row-quant.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cuda_time_ms  # noqa: E402

TOKENS = 8192
#: (K, col_scale): x of q/k/v, o, gate/up (4096) and down (14336); dY of o/down (4096), q/k/v
#: (6144), gate/up of Llama-3-8B (28672) and of Qwen2-7B (37888), with the folded scales.
CASES = ((4096, False), (14336, False), (4096, True), (6144, True), (28672, True), (37888, True))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    from splitlinear import ops

    torch.manual_seed(0)
    rows = []
    print(f"{'K':>6} {'col_scale':>9} {'rows ms':>9} {'TB/s':>6} {'copy ms':>9} {'TB/s':>6} "
          f"{'rows+cols ms':>12} {'dual ms':>8} {'ratio':>6}")
    for k, scaled in CASES:
        x = torch.randn(TOKENS, k, device="cuda", dtype=torch.bfloat16)
        cs = torch.rand(k, device="cuda") * 2 + 0.01 if scaled else None
        dtype = torch.float8_e5m2 if scaled else torch.float8_e4m3fn
        ms = cuda_time_ms(lambda: ops.fp8_quantize(x, dtype, "rows", col_scale=cs))
        copy_ms = cuda_time_ms(lambda: x.clone())

        def two_calls() -> None:
            ops.fp8_quantize(x, dtype, "rows", col_scale=cs)
            ops.fp8_quantize(x, dtype, "cols", write_out=False, write_transposed=True)

        separate_ms = cuda_time_ms(two_calls)
        dual_ms = cuda_time_ms(lambda: ops.fp8_quantize_dual(x, dtype, cs, axis="rows"))
        row = dict(k=k, col_scale=scaled, ms=ms, tb_per_s=x.numel() * 3 / ms / 1e9, copy_ms=copy_ms,
                   copy_tb_per_s=x.numel() * 4 / copy_ms / 1e9, rows_and_cols_ms=separate_ms, dual_rows_ms=dual_ms)
        rows.append(row)
        print(f"{k:6d} {str(scaled):>9} {ms:9.4f} {row['tb_per_s']:6.2f} {copy_ms:9.4f} {row['copy_tb_per_s']:6.2f} "
              f"{separate_ms:12.4f} {dual_ms:8.4f} {separate_ms / dual_ms:5.2f}x")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"device": torch.cuda.get_device_name(), "tokens": TOKENS, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Kernel-level profile (torch.profiler) of the op against F.linear on the
benchmark shapes where the op trails the fused GEMM, to see where the time
goes. Usage: ``python3 bench/profile_op.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "op"))
from split_linear import variants  # noqa: E402

CASES = [(16, 8192, [8192] * 3, "train"), (4096, 4096, [4096, 1024, 1024], "infer"),
         (16, 4096, [4096, 1024, 1024], "infer")]


def main() -> None:
    for m, k, rows, mode in CASES:
        fns = variants(m, k, rows, mode, torch.bfloat16)
        for name in ("fused", "slin_adjacent"):
            fn = fns[name]
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(10):
                    fn()
                torch.cuda.synchronize()
            print(f"==== M={m} K={k} parts={rows} {mode} {name} (10 calls)")
            print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=8, max_name_column_width=60))


if __name__ == "__main__":
    main()

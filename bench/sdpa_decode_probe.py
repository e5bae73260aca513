"""What attention costs in the no-cache 16x1 decode benchmark (``bench/fp8_serving.py``), by SDPA backend.

That benchmark's forward attends over one key per sequence: batch 16, 32 heads, head dim 128,
query and key length 1, with transformers' boolean mask. Its profile shows PyTorch's
memory-efficient kernel at about 18 µs a layer. This times ``F.scaled_dot_product_attention`` on
those shapes under each backend, with and without a mask, in a CUDA graph of 50 calls (median of
5 replays, µs per call), next to a copy of ``v`` (the exact result at key length 1).

    python bench/sdpa_decode_probe.py --out bench/results/<date>-h200/sdpa-decode-probe.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import graph_replayed  # noqa: E402


def graph_us(fn: Callable[[], object], calls: int = 50) -> float:
    """Median over 5 replays of a CUDA graph of ``calls`` calls of ``fn``, µs per call."""
    replay = graph_replayed(fn, calls)
    replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(5):
        start.record()
        replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / calls * 1e3)
    return sorted(times)[2]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    q, k, v = (torch.randn(16, 32, 1, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    mask = torch.ones(16, 1, 1, 1, device="cuda", dtype=torch.bool)
    rows: list[dict[str, object]] = []
    backends = (("efficient", SDPBackend.EFFICIENT_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                ("cudnn", SDPBackend.CUDNN_ATTENTION), ("math", SDPBackend.MATH))
    for name, backend in backends:
        for m in (None, mask):
            try:
                with sdpa_kernel(backend):
                    us: float | None = graph_us(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=m))
            except RuntimeError:  # the backend refuses these inputs
                us = None
            rows.append({"backend": name, "mask": m is not None, "us": us})
            print(f"sdpa {name:10s} mask={m is not None}: " + (f"{us:6.1f} us" if us is not None else "n/a"))
    copy_us = graph_us(lambda: v.clone())
    print(f"copy of v (the result at key length 1): {copy_us:6.1f} us")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows, "copy_us": copy_us}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Compares ``splitlinear.ops.linear`` (cuBLASLt through the JIT-compiled
kernels) with PyTorch on random data, forward and backward, for adjacent,
disjoint and misaligned parts in fp32/bf16/fp16, and prints a table.

The reference is ``F.linear`` on the concatenated parts in float64; errors are
max |diff| / max |reference|. Usage: ``python3 bench/gpu_check.py --json out.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import make_bias, make_parts  # noqa: E402

TOLERANCE = {torch.float32: 2e-3, torch.bfloat16: 3e-2, torch.float16: 5e-3}


def rel_err(x: torch.Tensor, ref: torch.Tensor) -> float:
    return ((x.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def check(device: str, dtype: torch.dtype, layout: str, m: int, k: int, rows: list[int]) -> dict:
    from splitlinear import ops

    weights = [w.detach().requires_grad_() for w in make_parts(rows, k, dtype, device, layout)]
    biases = [b.detach().requires_grad_() for b in make_bias(rows, dtype, device, layout)]
    x = torch.randn(m, k, device=device, dtype=dtype, requires_grad=True)
    before = ops.runtime_counters()
    y = ops.linear(x, weights, biases)
    after = ops.runtime_counters()
    path = "view" if after["views"] > before["views"] else (
        "cat" if after["cats"] > before["cats"] else "per-part")
    grad = torch.randn_like(y)
    y.backward(grad)
    x64 = x.detach().double().requires_grad_()
    w64 = torch.cat([w.detach().double() for w in weights]).requires_grad_()
    b64 = torch.cat([b.detach().double() for b in biases]).requires_grad_()
    ref = F.linear(x64, w64, b64)
    ref.backward(grad.double())
    grad_w = torch.cat([w.grad for w in weights])
    grad_b = torch.cat([b.grad for b in biases])
    errors = {
        "y": rel_err(y, ref),
        "dx": rel_err(x.grad, x64.grad),
        "dw": rel_err(grad_w, w64.grad),
        "db": rel_err(grad_b, b64.grad),
    }
    tol = TOLERANCE[dtype]
    return {
        "dtype": str(dtype).removeprefix("torch."), "layout": layout, "M": m, "K": k,
        "parts": rows, "path": path, **{f"err_{k_}": v for k_, v in errors.items()},
        "tolerance": tol, "ok": all(v <= tol for v in errors.values()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    torch.manual_seed(0)
    rows = []
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for layout in ("adjacent", "disjoint", "misaligned"):
            for m, k, parts in ((16, 1024, [512, 128, 128]), (512, 768, [768, 256, 256])):
                rows.append(check(args.device, dtype, layout, m, k, parts))
    header = f"{'dtype':9} {'layout':10} {'M':>4} {'K':>5} {'path':8} {'err y':>9} {'err dx':>9} {'err dw':>9} {'err db':>9} {'tol':>7} ok"
    print(header)
    for r in rows:
        print(f"{r['dtype']:9} {r['layout']:10} {r['M']:4d} {r['K']:5d} {r['path']:8} "
              f"{r['err_y']:9.2e} {r['err_dx']:9.2e} {r['err_dw']:9.2e} {r['err_db']:9.2e} "
              f"{r['tolerance']:7.0e} {'yes' if r['ok'] else 'NO'}")
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device_name, "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

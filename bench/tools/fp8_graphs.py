"""GPU time of the decode GEMMs with weights in FP8, in CUDA graphs (a diagnosis tool).

Host time per call of ``splitlinear.ops.scaled_linear`` (~20 µs) exceeds the
GPU time of an M = 16 GEMM, so back-to-back eager calls measure the host.
Here every column captures ``CALLS`` back-to-back calls in one CUDA graph and
times its replays (CUDA events; median of ``reps`` replays, per call). Each
call reads another copy of the weights, enough copies for >= 256 MiB, so the
weights come from HBM and not from L2 (50 MiB on the H200), as in a decode
step. Columns:

- ``bf16_linear``: ``F.linear`` on the fused bf16 weight;
- ``slin_scaled``: ``scaled_linear`` on a rowwise FP8 activation and the FP8
  parts (views of one buffer, per-part scales spread over the rows), with
  the runtime's defaults (the decode kernel for M <= 16);
- ``scaled_mm_fused``: one ``torch._scaled_mm`` rowwise on the same buffer;
- ``scaled_mm_per_part``: one ``torch._scaled_mm`` rowwise per part (views
  of the same buffer, each with its rows of the scale): what per-Linear FP8
  weights run, without the host time that back-to-back eager calls add;
- one ``slin_scaled[ENV]`` column per ``--variant ENV`` (e.g.
  ``SPLITLINEAR_FP8_DECODE_MAX_M=0``: cuBLASLt), each measured in a child
  process, since the runtime reads its settings once per process.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import make_parts  # noqa: E402
from models import OP_SHAPES  # noqa: E402

E4M3 = torch.float8_e4m3fn
GRAPH_ROWS = [1, 16, 32]
#: Calls per graph and the weight bytes their copies span at least.
CALLS = 20
MIN_WEIGHT_BYTES = 256 << 20
COLUMNS = ("bf16_linear", "slin_scaled", "scaled_mm_fused", "scaled_mm_per_part")
NA = "n/a"


def graph_time_ms(calls: Sequence[Callable[[], object]], reps: int) -> float:
    """Median GPU time per call (ms) of replays of one graph holding ``calls`` in order."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture (JIT compiles, heuristics)
        for fn in calls:
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for fn in calls:
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / len(calls))
    return statistics.median(times)


def measure(m: int, k: int, rows: list[int], columns: Sequence[str], reps: int) -> dict[str, float | str]:
    """The ``columns`` at M = ``m`` for parts ``rows`` x ``k`` (bf16 reference data, e4m3 weights)."""
    from splitlinear import ops

    dtype = torch.bfloat16
    n = sum(rows)
    g = torch.Generator(device="cpu").manual_seed(m + 7)
    x = torch.randn(m, k, generator=g).to(device="cuda", dtype=dtype)
    parts = make_parts(rows, k, dtype, "cuda", "adjacent", seed=m + 7)
    w = ops.fp8_cast_parts(parts, E4M3)
    q = ops.fp8_quantize(x, E4M3, "rows")
    reference = F.linear(x, torch.cat(parts))
    copies = max(2, -(-MIN_WEIGHT_BYTES // (n * k)))  # FP8 bytes; bf16 gets half as many
    out: dict[str, float | str] = {}

    def check(name: str, y: torch.Tensor) -> None:
        err = float((y.float() - reference.float()).norm() / reference.float().norm())
        if err > 0.1:
            raise RuntimeError(f"fp8 graphs bench: {name} at M={m} has relative error {err:.3g} against bf16")

    with torch.no_grad():
        for name in columns:
            try:
                if name == "bf16_linear":
                    ws = [torch.cat(parts).clone() for _ in range(max(2, copies // 2))]
                    fns = [lambda wi=wi: F.linear(x, wi) for wi in ws]
                elif name == "slin_scaled":
                    ws = [list(w.data.clone().split(rows)) for _ in range(copies)]
                    fns = [lambda wi=wi: ops.scaled_linear(q.data, q.scale_inv, wi, w.row_scale_inv,
                                                           out_dtype=dtype, fast_accum=True) for wi in ws]
                elif name == "scaled_mm_fused":
                    ws = [w.data.clone() for _ in range(copies)]
                    sa, sb = q.scale_inv.view(-1, 1), w.row_scale_inv.view(1, -1)
                    fns = [lambda wi=wi: torch._scaled_mm(q.data, wi.t(), scale_a=sa, scale_b=sb, out_dtype=dtype,
                                                          use_fast_accum=True) for wi in ws]
                else:
                    ws = [list(w.data.clone().split(rows)) for _ in range(copies)]
                    sa = q.scale_inv.view(-1, 1)
                    sbs = [s.view(1, -1) for s in w.row_scale_inv.split(rows)]
                    fns = [lambda wi=wi: [torch._scaled_mm(q.data, p.t(), scale_a=sa, scale_b=sb, out_dtype=dtype,
                                                           use_fast_accum=True) for p, sb in zip(wi, sbs)]
                           for wi in ws]
                y = fns[0]()
                check(name, torch.cat(y, -1) if isinstance(y, list) else y)
                out[name] = graph_time_ms([fns[i % len(fns)] for i in range(CALLS)], reps)
                del ws, fns
            except RuntimeError as exc:  # e.g. torch._scaled_mm refusing an M
                print(f"fp8 graphs bench: {name} at M={m}: {str(exc).splitlines()[0]}", file=sys.stderr)
                out[name] = NA
            torch.cuda.empty_cache()
    return out


def run_variant(env: str, shapes: list[tuple[str, int, list[int]]], ms: Sequence[int],
                reps: int) -> dict[tuple[str, int], object]:
    """``slin_scaled`` in a child process with ``env`` (``NAME=VALUE``, several separated by spaces) set:
    {(shape, M): ms}."""
    child = dict(os.environ)
    for setting in env.split():
        key, _, value = setting.partition("=")
        child[key] = value
    result = subprocess.run([sys.executable, str(Path(__file__).resolve()),
                             "--graph-child", "--reps", str(reps), "--rows", *map(str, ms)], env=child, capture_output=True, text=True,
                            timeout=300)
    if result.returncode != 0:
        print(f"fp8 graphs bench: variant {env} failed:\n{result.stderr[-2000:]}", file=sys.stderr)
        return {}
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    return {(r["shape"], r["M"]): r["slin_scaled"] for r in rows}


def graphs_main(shapes: list[tuple[str, int, list[int]]], ms: Sequence[int] | None, reps: int,
                variants: Sequence[str], child: bool, out: Path | None) -> int:
    """Prints the table at M in ``ms`` (default ``GRAPH_ROWS``; ms per call, x: speedup over bf16) and writes
    JSON to ``out``."""
    ms = list(ms) if ms else GRAPH_ROWS
    if child:
        rows = [{"shape": name, "M": m, **measure(m, k, parts, ["slin_scaled"], reps)}
                for name, k, parts in shapes for m in ms]
        print(json.dumps(rows))
        return 0
    extra = {f"slin_scaled[{env}]": run_variant(env, shapes, ms, reps) for env in variants}
    names = list(COLUMNS) + list(extra)
    print(f"weights in FP8, GPU time per call (CUDA graphs of {CALLS} calls, weights from HBM)\n"
          f"{'shape':<18} {'M':>3} " + " ".join(f"{c:>24}" for c in names) + "   (ms; x = speedup over bf16)")
    results = []
    for name, k, parts in shapes:
        for m in ms:
            times = measure(m, k, parts, COLUMNS, reps)
            for column, got in extra.items():
                times[column] = got.get((name, m), NA)
            results.append({"shape": name, "K": k, "N": parts, "M": m, **times})
            base = times["bf16_linear"]
            cells = [f"{t:>14.4f} ({base / t:5.2f}x)" if isinstance(t, float) and isinstance(base, float)
                     else f"{t!s:>24}" for t in (times[c] for c in names)]
            print(f"{name:<18} {m:>3} " + " ".join(f"{c:>24}" for c in cells), flush=True)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        settings = {k: v for k, v in os.environ.items() if k.startswith("SPLITLINEAR_FP8_")}
        out.write_text(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                   "calls_per_graph": CALLS, "min_weight_bytes": MIN_WEIGHT_BYTES,
                                   "settings": settings, "variants": list(variants), "results": results},
                                  indent=1))
        print(f"wrote {out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--reps", type=int, default=30, help="replays per median")
    parser.add_argument("--rows", type=int, nargs="+", metavar="M", help=f"M values (default {GRAPH_ROWS})")
    parser.add_argument("--variant", action="append", default=None, metavar="NAME=VALUE",
                        help="one more slin_scaled column, measured in a child process with this setting "
                             "(default: SPLITLINEAR_FP8_DECODE_MAX_M=0, i.e. cuBLASLt); repeatable")
    parser.add_argument("--graph-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("fp8_graphs: needs a CUDA device", file=sys.stderr)
        return 1
    shapes = OP_SHAPES[:2]
    variants = args.variant if args.variant is not None else ["SPLITLINEAR_FP8_DECODE_MAX_M=0"]
    return graphs_main(shapes, args.rows, args.reps, variants, args.graph_child, args.out)


if __name__ == "__main__":
    sys.exit(main())

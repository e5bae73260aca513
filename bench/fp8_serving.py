"""FP8 serving weights at decode: splitlinear (``convert_to_fp8_serving``) against bf16 and torchao.

Model: transformers Llama with Llama-3-8B layer sizes (hidden 4096, intermediate 14336, 32/8
heads), 4 layers, vocabulary 32000, random weights, bf16, packed (the model of
``bench/bench_cudagraphs.py``; its bf16 weight-read floor is 2.0 GB at 4.3 TB/s = 0.467 ms).

Variants (each in a process of its own, since a ``reduce-overhead`` compile disturbs later
compiles in the same process):

- ``inductor_bf16``: ``torch.compile(mode="reduce-overhead")``;
- ``splitlinear_bf16``: ``backend="splitlinear"``, ``mode="reduce-overhead"``;
- ``splitlinear_fp8``: ``splitlinear.serving.convert_to_fp8_serving`` (defaults: one weight scale
  per row, FP8 activations per row), then as ``splitlinear_bf16``;
- ``splitlinear_fp8_tw``: the same with one weight scale per part (``weight_scaling="tensorwise"``);
- ``splitlinear_fp8_all``: ``splitlinear_fp8`` with ``lm_head`` in FP8 too (``fp8_filter=[]``);
- ``splitlinear_fp8_gq``: ``splitlinear_fp8`` with option ``fp8_activation_quant="graph"`` (the
  activation quantization as graph ops, for Inductor to fuse into the RMSNorms);
- ``torchao_fp8``: torchao ``Float8DynamicActivationFloat8WeightConfig(PerRow())`` on every
  linear but ``lm_head``, then Inductor ``reduce-overhead``.

Rows: the no-cache forward at 16x1 (median of CUDA-event timings, ms), its first call (compile
included, s) and peak memory; HF ``generate`` with a static cache auto-compiled through
``CompileConfig`` (tokens/s at batch 1 and 16, 16 prompt tokens, 64 new tokens); and, for the FP8
variant, a kernel profile of one graph replay by category.

Usage (on a GPU machine)::

    python bench/fp8_serving.py --json out.json [--variants ...] [--skip-generate]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cuda_time_ms, run_workers  # noqa: E402

VARIANTS = ["inductor_bf16", "splitlinear_bf16", "splitlinear_fp8", "splitlinear_fp8_tw", "splitlinear_fp8_all",
            "splitlinear_fp8_gq", "torchao_fp8"]
FLOOR_BYTES_PER_S = 4.3e12
NEW_TOKENS = 64
PROMPT = 16


def _model(variant: str) -> nn.Module:
    import transformers

    from splitlinear import pack_parameters

    cfg = transformers.LlamaConfig(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                                   num_key_value_heads=8, num_hidden_layers=4, vocab_size=32000,
                                   max_position_embeddings=4096)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).to("cuda", torch.bfloat16).eval()
    pack_parameters(model)
    if variant.startswith("splitlinear_fp8"):
        from splitlinear.serving import convert_to_fp8_serving

        convert_to_fp8_serving(model, weight_scaling="tensorwise" if variant.endswith("_tw") else "rowwise",
                               fp8_filter=[] if variant.endswith("_all") else None)
    elif variant == "torchao_fp8":
        from torchao.quantization import Float8DynamicActivationFloat8WeightConfig, PerRow, quantize_

        quantize_(model, Float8DynamicActivationFloat8WeightConfig(granularity=PerRow()),
                  filter_fn=lambda m, fqn: isinstance(m, nn.Linear) and "lm_head" not in fqn)
    torch.cuda.empty_cache()
    return model


def _weight_bytes(model: nn.Module) -> int:
    total = 0
    for name, t in [*model.named_parameters(), *model.named_buffers()]:
        if "embed_tokens" in name:
            continue
        inner = getattr(t, "qdata", None)  # torchao's Float8Tensor
        total += inner.numel() * inner.element_size() if inner is not None else t.numel() * t.element_size()
    return total


def _compiled(model: nn.Module, variant: str) -> Callable[..., Any]:
    if variant in ("inductor_bf16", "torchao_fp8"):
        return torch.compile(model, mode="reduce-overhead", dynamic=False)
    if variant.endswith("_gq"):
        return torch.compile(model, backend="splitlinear", dynamic=False,
                             options={"mode": "reduce-overhead", "fp8_activation_quant": "graph"})
    return torch.compile(model, backend="splitlinear", mode="reduce-overhead", dynamic=False)


def _kernel_profile(call: Callable[[], object]) -> dict[str, float]:
    """GPU time of one call by kernel category (µs), from torch.profiler over 10 calls."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            call()
        torch.cuda.synchronize()
    buckets: dict[str, float] = defaultdict(float)
    top: list[tuple[float, str]] = []
    for e in prof.key_averages():
        us = e.self_device_time_total / 10
        if us <= 0:
            continue
        name = e.key.lower()
        if "decodegemm" in name or "bulkdecode" in name:
            cat = "fp8 decode gemm"
        elif "quantiz" in name or "amax" in name or "cast" in name:
            cat = "fp8 quantize"
        elif "flash" in name or "fmha" in name or "attention" in name or "sdpa" in name:
            cat = "attention"
        elif "gemm" in name or "sm90" in name or "nvjet" in name or "cutlass" in name:
            cat = "cublas gemm"
        elif "triton" in name:
            cat = "inductor (norms, rope, silu, ...)"
        elif "memcpy" in name or "memset" in name:
            cat = "memcpy/memset"
        else:
            cat = "other"
        buckets[cat] += us
        top.append((us, e.key[:90]))
    top.sort(reverse=True)
    print("   kernel profile (us per call): "
          + ", ".join(f"{k} {v:.1f}" for k, v in sorted(buckets.items(), key=lambda kv: -kv[1])), flush=True)
    for us, name in top[:12]:
        print(f"     {us:8.1f}  {name}", flush=True)
    return dict(buckets)


def _generate(model: nn.Module, variant: str) -> list[dict[str, Any]]:
    import transformers

    backend = "inductor" if variant in ("inductor_bf16", "torchao_fp8") else "splitlinear"
    rows = []
    for batch in (1, 16):
        ids = torch.randint(0, 32000, (batch, PROMPT), device="cuda")
        config = transformers.GenerationConfig(
            max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=0,
            cache_implementation="static",
            compile_config=transformers.CompileConfig(backend=backend, mode="reduce-overhead", fullgraph=True))
        with torch.no_grad():
            torch.cuda.synchronize()
            start = time.perf_counter()
            model.generate(ids, generation_config=config)
            torch.cuda.synchronize()
            first = time.perf_counter() - start
            model.generate(ids, generation_config=config)
            times = []
            for _ in range(3):
                torch.cuda.synchronize()
                start = time.perf_counter()
                out = model.generate(ids, generation_config=config)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - start)
        new = out.shape[1] - PROMPT
        best = sorted(times)[1]
        row = {"variant": variant, "batch": batch, "new_tokens": new, "s": best,
               "tokens_per_s": batch * new / best, "first_generate_s": first}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def worker(variant: str, path: str, skip_generate: bool, skip_decode: bool) -> None:
    model = _model(variant)
    weight_bytes = _weight_bytes(model)
    if skip_decode:
        row = {"variant": variant, "weight_bytes": weight_bytes, "generate": _generate(model, variant)}
        with open(path, "w") as f:
            json.dump(row, f)
        return
    ids = torch.randint(0, 32000, (16, 1), device="cuda")
    fn = _compiled(model, variant)

    def call() -> object:
        torch.compiler.cudagraph_mark_step_begin()
        return fn(input_ids=ids, use_cache=False).logits

    with torch.no_grad():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        call()
        torch.cuda.synchronize()
        first = time.perf_counter() - start
        ms = cuda_time_ms(call, warmup=5, reps=30, batch=5)
        peak = torch.cuda.max_memory_allocated() / 2**20
        profile = _kernel_profile(call) if variant.startswith(("splitlinear_fp8", "splitlinear_bf16")) else {}
    from splitlinear import stats

    row: dict[str, Any] = {"variant": variant, "decode_ms": ms, "first_call_s": first, "peak_mb": peak,
                           "weight_bytes": weight_bytes, "floor_ms": weight_bytes / FLOOR_BYTES_PER_S * 1e3,
                           "profile_us": profile, "stats": stats()}
    print(json.dumps({k: v for k, v in row.items() if k != "stats"}), flush=True)
    torch._dynamo.reset()
    row["generate"] = [] if skip_generate else _generate(model, variant)
    with open(path, "w") as f:
        json.dump(row, f)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", required=True)
    parser.add_argument("--worker", choices=VARIANTS)
    parser.add_argument("--variants", nargs="+", default=VARIANTS, choices=VARIANTS)
    parser.add_argument("--skip-generate", action="store_true")
    parser.add_argument("--skip-decode", action="store_true", help="only the generate rows")
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.json, args.skip_generate, args.skip_decode)
        return 0
    extra = [flag for flag, on in (("--skip-generate", args.skip_generate), ("--skip-decode", args.skip_decode)) if on]
    rows = run_workers(__file__, args.variants, args.json, extra)
    base = next((r["decode_ms"] for r in rows if r["variant"] == "inductor_bf16" and "decode_ms" in r), None)
    print("\ndecode 16x1, no-cache forward, reduce-overhead (ms; first call s; peak MB; weight floor ms)")
    for r in rows:
        if "decode_ms" not in r:
            continue
        ratio = f"{base / r['decode_ms']:.2f}x Inductor bf16" if base else ""
        print(f"{r['variant']:<22} {r['decode_ms']:8.3f} ms  first {r['first_call_s']:6.1f} s  "
              f"peak {r['peak_mb']:8.0f} MB  floor {r['floor_ms']:.3f}  {ratio}")
    print("\nHF generate, static cache, reduce-overhead (tokens/s)")
    for r in rows:
        for g in r["generate"]:
            print(f"{r['variant']:<22} batch {g['batch']:>2}: {g['tokens_per_s']:9.0f} tok/s  "
                  f"(first generate {g['first_generate_s']:.1f} s)")
    with open(args.json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

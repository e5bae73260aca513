"""Serving: decode, prefill and HF ``generate``, splitlinear (bf16, FP8 weights) against eager,
Inductor (default and ``reduce-overhead``) and torchao's FP8 serving.

Model: transformers Llama with Llama-3-8B layer sizes (``models.py``), ``models.LAYERS`` layers,
vocabulary 128256, random weights, bf16, packed (``splitlinear.pack_parameters``).

Groups, each in a process of its own (a ``reduce-overhead`` compile disturbs later compiles in the
same process), variants in a group one after another:

- ``default``: ``eager_bf16``; ``inductor_bf16`` (``torch.compile``); ``splitlinear_bf16``
  (``backend="splitlinear"``); ``splitlinear_fp8`` (FP8 serving weights, as below);
- ``inductor_bf16_ro``: ``torch.compile(mode="reduce-overhead")``;
- ``splitlinear_bf16_ro``: ``backend="splitlinear"``, ``mode="reduce-overhead"``;
- ``splitlinear_fp8_ro``: ``splitlinear.serving.convert_to_fp8_serving`` (one weight scale per row,
  FP8 activations per row), then as ``splitlinear_bf16_ro``;
- ``torchao_fp8_ro``: torchao ``Float8DynamicActivationFloat8WeightConfig(PerRow())`` on every
  linear but ``lm_head``, then Inductor ``reduce-overhead`` (skipped when torchao is not installed);
- ``splitlinear_fp8_bw_ro``: FP8 serving weights with 128x128 block scales, 1x128 activation
  blocks (``weight_scaling="blockwise"``; sm_90 only, else skipped), as ``splitlinear_fp8_ro``;
- on request: ``splitlinear_fp8_tw_ro`` (one weight scale per part), ``splitlinear_fp8_all_ro``
  (``lm_head`` in FP8 too), ``splitlinear_fp8_gq_ro`` (``fp8_activation_quant="graph"``).

Rows per variant: the no-cache forward at decode (16 x 1) and, in default mode, prefill (1 x 2048:
GPU-bound, where CUDA graphs change little), medians of CUDA-event timings of back-to-back calls
(ms), the first call's wall time (compile included), peak memory, the weight bytes and their read
floor at the HBM rate a device copy reaches on this GPU (``common.copy_bytes_per_s``); for the ``reduce-overhead`` variants HF ``generate`` with a
static cache compiled through
``generation_config.compile_config`` (tokens/s at batch 1 and 16, 16-token prompt, 64 new tokens).

    python bench/model/serve.py --out serve.json        # bench/run.py --suite serve
    python bench/model/serve.py --quick                 # CPU smoke run, one process
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

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, BENCH)
from common import copy_bytes_per_s, cpu_time_ms, cuda_time_ms, run_workers  # noqa: E402
from models import (DECODE_BATCH, FLOOR_BYTES_PER_S, GENERATE_BATCHES, GENERATE_NEW_TOKENS,  # noqa: E402
                    GENERATE_PROMPT, LAYERS, PREFILL_SEQ, build)

GROUPS = {
    "default": ["eager_bf16", "inductor_bf16", "splitlinear_bf16", "splitlinear_fp8"],
    "inductor_bf16_ro": ["inductor_bf16_ro"],
    "splitlinear_bf16_ro": ["splitlinear_bf16_ro"],
    "splitlinear_fp8_ro": ["splitlinear_fp8_ro"],
    "torchao_fp8_ro": ["torchao_fp8_ro"],
    "splitlinear_fp8_tw_ro": ["splitlinear_fp8_tw_ro"],
    "splitlinear_fp8_all_ro": ["splitlinear_fp8_all_ro"],
    "splitlinear_fp8_gq_ro": ["splitlinear_fp8_gq_ro"],
    "splitlinear_fp8_bw_ro": ["splitlinear_fp8_bw_ro"],
}
#: The CUDA-graph groups (the decode comparison) first, the default-mode group (eager, prefill) last,
#: so that a run out of budget loses the least.
DEFAULT_GROUPS = ["inductor_bf16_ro", "splitlinear_bf16_ro", "splitlinear_fp8_ro", "torchao_fp8_ro",
                  "splitlinear_fp8_bw_ro", "default"]
QUICK_VARIANTS = ["eager_bf16", "splitlinear_bf16", "splitlinear_fp8"]


def _torchao_installed() -> bool:
    try:
        import torchao.quantization  # noqa: F401
    except ImportError:
        return False
    return True


def _model(variant: str, name: str = "llama3-8b", device: str = "cuda", layers: int = LAYERS) -> nn.Module:
    from splitlinear import pack_parameters

    model = build(name, layers, device, torch.bfloat16).eval()
    pack_parameters(model)
    recipe = variant.removesuffix("_ro")
    if recipe.startswith("splitlinear_fp8"):
        from splitlinear.serving import convert_to_fp8_serving

        scaling = "tensorwise" if recipe.endswith("_tw") else "blockwise" if recipe.endswith("_bw") else "rowwise"
        convert_to_fp8_serving(model, weight_scaling=scaling,
                               activation_scaling="blockwise" if scaling == "blockwise" else "rowwise",
                               fp8_filter=[] if recipe.endswith("_all") else None)
    elif recipe == "torchao_fp8":
        from torchao.quantization import Float8DynamicActivationFloat8WeightConfig, PerRow, quantize_

        quantize_(model, Float8DynamicActivationFloat8WeightConfig(granularity=PerRow()),
                  filter_fn=lambda m, fqn: isinstance(m, nn.Linear) and "lm_head" not in fqn)
    if device == "cuda":
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


def _compiled(model: nn.Module, variant: str, fallback: str = "inductor") -> Callable[..., Any]:
    if variant == "eager_bf16":
        return model
    if variant == "inductor_bf16":
        return torch.compile(model, dynamic=False)
    if variant in ("inductor_bf16_ro", "torchao_fp8_ro"):
        return torch.compile(model, mode="reduce-overhead", dynamic=False)
    options: dict[str, Any] = {"fallback": fallback}
    if variant.endswith("_ro"):
        options["mode"] = "reduce-overhead"
    if variant.endswith("_gq_ro"):
        options["fp8_activation_quant"] = "graph"
    return torch.compile(model, backend="splitlinear", dynamic=False, options=options)


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


def _generate(model: nn.Module, variant: str, device: str = "cuda") -> list[dict[str, Any]]:
    """HF ``generate`` with a static cache at each batch of ``GENERATE_BATCHES``, compiled with
    ``reduce-overhead`` through ``compile_config`` (on the CPU: not compiled, 8 new tokens)."""
    import transformers

    backend = "inductor" if variant in ("inductor_bf16_ro", "torchao_fp8_ro") else "splitlinear"
    vocab = model.config.vocab_size
    new_tokens = GENERATE_NEW_TOKENS if device == "cuda" else 8
    extra: dict[str, Any] = {}
    if device == "cuda":
        extra["compile_config"] = transformers.CompileConfig(backend=backend, mode="reduce-overhead", fullgraph=True)

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    rows = []
    for batch in GENERATE_BATCHES:
        ids = torch.randint(0, vocab, (batch, GENERATE_PROMPT), device=device)
        config = transformers.GenerationConfig(
            max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False, pad_token_id=0,
            cache_implementation="static", **extra)
        with torch.no_grad():
            sync()
            start = time.perf_counter()
            model.generate(ids, generation_config=config)
            sync()
            first = time.perf_counter() - start
            times = []
            for _ in range(2):
                sync()
                start = time.perf_counter()
                out = model.generate(ids, generation_config=config)
                sync()
                times.append(time.perf_counter() - start)
        new = out.shape[1] - GENERATE_PROMPT
        best = min(times)
        row = {"batch": batch, "new_tokens": new, "s": best,
               "tokens_per_s": batch * new / best, "first_generate_s": first}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def measure(model: nn.Module, variant: str, device: str, fallback: str = "inductor") -> dict[str, Any]:
    """Decode and prefill rows of one variant (its compiled forward, no cache)."""
    vocab = model.config.vocab_size
    graphs = variant.endswith("_ro")
    quick = device == "cpu"
    shapes = {"decode": (DECODE_BATCH, 1), "prefill": (1, PREFILL_SEQ)}
    if quick:
        shapes = {"decode": (2, 1), "prefill": (1, 16)}
    if graphs:
        del shapes["prefill"]
    row: dict[str, Any] = {"variant": variant}
    for phase, (batch, seq) in shapes.items():
        torch._dynamo.reset()
        fn = _compiled(model, variant, fallback)
        ids = torch.randint(0, vocab, (batch, seq), device=device)

        def call(fn: Callable[..., Any] = fn, ids: torch.Tensor = ids) -> object:
            if graphs:
                torch.compiler.cudagraph_mark_step_begin()
            return fn(input_ids=ids, use_cache=False).logits

        with torch.no_grad():
            if device == "cuda":
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            start = time.perf_counter()
            call()
            if device == "cuda":
                torch.cuda.synchronize()
            first = time.perf_counter() - start
            ms = cuda_time_ms(call, warmup=5, reps=20, batch=5) if device == "cuda" else cpu_time_ms(call)
        row[phase] = {"batch": batch, "seq": seq, "ms": ms, "tokens_per_s": batch * seq / (ms / 1e3),
                      "first_call_s": first,
                      "peak_mib": torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None}
        print(json.dumps({"variant": variant, "phase": phase, **row[phase]}), flush=True)
        del fn, call
    return row


def worker(group: str, path: str, skip_generate: bool, profile: bool, generate_only: bool = False,
           floor_bytes_per_s: float = FLOOR_BYTES_PER_S) -> None:
    rows = []
    for variant in GROUPS[group]:
        model = _model(variant)
        weight_bytes = _weight_bytes(model)
        if generate_only:
            rows.append({"variant": variant, "weight_bytes": weight_bytes, "generate": _generate(model, variant)})
            del model
            torch.cuda.empty_cache()
            continue
        row = measure(model, variant, "cuda")
        row.update(weight_bytes=weight_bytes, floor_ms=weight_bytes / floor_bytes_per_s * 1e3)
        if profile and variant.startswith("splitlinear"):
            fn = _compiled(model, variant)
            ids = torch.randint(0, model.config.vocab_size, (DECODE_BATCH, 1), device="cuda")

            def call() -> object:
                torch.compiler.cudagraph_mark_step_begin()
                return fn(input_ids=ids, use_cache=False).logits

            with torch.no_grad():
                row["decode_profile_us"] = _kernel_profile(call)
        torch._dynamo.reset()
        row["generate"] = [] if skip_generate or not variant.endswith("_ro") else _generate(model, variant)
        rows.append(row)
        del model
        torch.cuda.empty_cache()
    with open(path, "w") as f:
        json.dump(rows, f)


def quick_run() -> list[dict[str, Any]]:
    """The CPU smoke run: tiny model, default mode, fallback eager, all in this process."""
    rows = []
    for variant in QUICK_VARIANTS:
        model = _model(variant, "tiny", "cpu", layers=2)
        weight_bytes = _weight_bytes(model)
        row = measure(model, variant, "cpu", fallback="eager")
        row.update(weight_bytes=weight_bytes, generate=[])
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=False)
    parser.add_argument("--worker", choices=list(GROUPS))
    parser.add_argument("--groups", nargs="+", default=DEFAULT_GROUPS, choices=list(GROUPS))
    parser.add_argument("--skip-generate", action="store_true")
    parser.add_argument("--generate-only", action="store_true",
                        help="only HF generate, for the reduce-overhead groups (the `generate` suite)")
    parser.add_argument("--profile", action="store_true", help="GPU time by kernel category at decode")
    parser.add_argument("--quick", action="store_true", help="CPU smoke run: tiny model, no CUDA graphs")
    parser.add_argument("--floor-bytes-per-s", type=float, default=FLOOR_BYTES_PER_S,
                        help="HBM rate of the decode floors (set by the parent run, which measures it)")
    parser.add_argument("--budget-s", type=float, default=540.0,
                        help="seconds for all groups; groups past it are listed as skipped (bench/run.py "
                             "stops a suite at 570 s)")
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.out, args.skip_generate, args.profile, args.generate_only, args.floor_bytes_per_s)
        return 0
    skipped: list[str] = []
    floor_rate = args.floor_bytes_per_s
    if args.quick and args.generate_only:
        model = _model("splitlinear_bf16", "tiny", "cpu", layers=2)
        rows = [{"variant": "eager_bf16", "weight_bytes": _weight_bytes(model),
                 "generate": _generate(model, "eager_bf16", "cpu")}]
        skipped.append("compiled generate (reduce-overhead), FP8 and torchao variants: GPU only "
                       "(--quick runs the eager model on the CPU)")
    elif args.quick:
        rows = quick_run()
        skipped.append("reduce-overhead variants, torchao and HF generate: GPU only (--quick runs on the CPU)")
        skipped.append("inductor_bf16: --quick compiles nothing with Inductor")
    else:
        if not torch.cuda.is_available():
            print("serve bench: no CUDA device (use --quick for a CPU smoke run)", file=sys.stderr)
            return 1
        groups = list(args.groups)
        if args.generate_only:
            groups = [g for g in groups if g.endswith("_ro")]
        if "torchao_fp8_ro" in groups and not _torchao_installed():
            groups.remove("torchao_fp8_ro")
            skipped.append("torchao_fp8_ro: torchao not installed")
        if "splitlinear_fp8_bw_ro" in groups and torch.cuda.get_device_capability()[0] != 9:
            groups.remove("splitlinear_fp8_bw_ro")
            skipped.append("splitlinear_fp8_bw_ro: block scales need sm_90")
        extra = [flag for flag, on in (("--skip-generate", args.skip_generate), ("--profile", args.profile),
                                       ("--generate-only", args.generate_only)) if on]
        floor_rate = copy_bytes_per_s()
        extra += ["--floor-bytes-per-s", repr(floor_rate)]
        out = args.out or "serve.json"
        parts, missing = run_workers(__file__, groups, out, extra, out_flag="--out", budget_s=args.budget_s)
        rows = [row for part in parts for row in part]
        skipped += missing
    base = next((r for r in rows if r["variant"] == "inductor_bf16_ro" and "decode" in r), None)
    for r in rows:
        if "decode" not in r:
            for g in r["generate"]:
                print(f"{r['variant']:<24} generate batch {g['batch']:>2}: {g['tokens_per_s']:9.0f} tok/s")
            continue
        ratio = f"{base['decode']['ms'] / r['decode']['ms']:.2f}x Inductor ro" if base else ""
        prefill = f"prefill {r['prefill']['ms']:8.3f} ms" if "prefill" in r else ""
        print(f"{r['variant']:<24} decode {r['decode']['ms']:8.3f} ms  {prefill}  {ratio}")
        for g in r["generate"]:
            print(f"{'':<24} generate batch {g['batch']:>2}: {g['tokens_per_s']:9.0f} tok/s")
    if args.out:
        config = {"model": "tiny" if args.quick else "llama3-8b", "layers": LAYERS, "dtype": "bfloat16",
                  "decode": [2, 1] if args.quick else [DECODE_BATCH, 1],
                  "prefill": [1, 16] if args.quick else [1, PREFILL_SEQ], "generate": {"prompt": GENERATE_PROMPT,
                                                            "new_tokens": GENERATE_NEW_TOKENS,
                                                            "batches": list(GENERATE_BATCHES)},
                  "floor_bytes_per_s": floor_rate, "device": "cpu" if args.quick else "cuda"}
        with open(args.out, "w") as f:
            json.dump({"config": config, "results": rows, "skipped": skipped}, f, indent=1)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())

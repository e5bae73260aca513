"""FP8 training step, timed: Inductor bf16 vs splitlinear bf16 / FP8 vs torchao float8.

A transformers Llama with Llama-3-8B layer dimensions (hidden 4096, intermediate 14336, 32
heads, 8 KV heads, vocab 128256), or with ``--model qwen2`` a Qwen2 with Qwen2-7B's (hidden 3584,
intermediate 18944, 28 heads, 4 KV heads, vocab 152064, q/k/v biases), ``--layers`` layers (2), random weights, bfloat16 Parameters,
``--batch`` x ``--seq`` tokens (4 x 2048), AdamW. One training step = forward, backward,
optimizer step. Variants, run in this process one after another on the same initial weights
and data:

* ``inductor_bf16``: ``torch.compile(model)``;
* ``splitlinear_bf16``: ``backend="splitlinear"``;
* ``splitlinear_fp8_tensorwise`` / ``_rowwise``: ``options={"fp8": ...}``;
* ``splitlinear_fp8_tensorwise_all`` / ``_rowwise_all`` (only when named): ``fp8_filter=()`` as
  well, so that ``lm_head`` runs in FP8 too;
* ``splitlinear_fp8_tensorwise_cache`` / ``_rowwise_cache`` (only when named):
  ``fp8_weight_cache=True``, to see what the weight cache costs in memory and saves in time
  (``_nocache``: ``False``, the default, named);
* ``torchao_fp8_tensorwise`` / ``_rowwise``: ``torchao.float8.convert_to_float8_training``
  (recipe by name, ``lm_head`` skipped as splitlinear's default filter does), then
  ``torch.compile`` with Inductor; skipped when torchao is not importable.

For each: the median step time over the timed steps, tokens/s, the first (compiling) step's
seconds, the peak CUDA memory, the losses and their largest relative gap to Inductor bf16's.
Prints a table; ``--out`` writes JSON. ``--quick`` is a CPU smoke run (a tiny config, 3 steps,
fallback eager) that checks every variant runs.

``--vocab N`` changes the vocabulary (the issue's anchor table used a smaller one than Llama-3's);
``--profile`` prints each variant's GPU time per step by kernel class (GEMMs, attention, Inductor's
Triton kernels, splitlinear's FP8 quantization, other), from 3 profiled steps; ``--profile-gaps N``
adds the GPU's idle time per step and the N host ops it waited for most (:mod:`gpu_gaps`).

    python bench/fp8_train.py --out bench/results/<date>-h200/fp8_train.json
    python bench/fp8_train.py --quick
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
import unittest.mock
from collections.abc import Callable, Sequence
from typing import Any

import torch

LLAMA3_8B = dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                 vocab_size=128256, max_position_embeddings=8192, rope_theta=500000.0)
#: Qwen2-7B's layer dimensions (q/k/v with biases).
QWEN2_7B = dict(hidden_size=3584, intermediate_size=18944, num_attention_heads=28, num_key_value_heads=4,
                vocab_size=152064, max_position_embeddings=8192, rope_theta=1000000.0)
TINY = dict(hidden_size=64, intermediate_size=160, num_attention_heads=4, num_key_value_heads=2,
            vocab_size=256, max_position_embeddings=128)

VARIANTS = ("inductor_bf16", "splitlinear_bf16", "splitlinear_fp8_tensorwise", "splitlinear_fp8_rowwise",
            "torchao_fp8_tensorwise", "torchao_fp8_rowwise", "splitlinear_fp8_tensorwise_all",
            "splitlinear_fp8_rowwise_all", "splitlinear_fp8_tensorwise_nocache", "splitlinear_fp8_rowwise_nocache",
            "splitlinear_fp8_tensorwise_cache", "splitlinear_fp8_rowwise_cache", "splitlinear_bf16_sumgrads",
            "splitlinear_fp8_tensorwise_sumgrads", "splitlinear_fp8_rowwise_sumgrads")
#: Run by default (the ``_all`` variants, lm_head in FP8 too, on request).
DEFAULT_VARIANTS = VARIANTS[:6]


def build(config: dict, layers: int, device: str, dtype: torch.dtype, model: str = "llama") -> torch.nn.Module:
    import transformers

    torch.manual_seed(0)
    config_cls, model_cls = ((transformers.Qwen2Config, transformers.Qwen2ForCausalLM) if model == "qwen2"
                             else (transformers.LlamaConfig, transformers.LlamaForCausalLM))
    cfg = config_cls(**config, num_hidden_layers=layers, attn_implementation="sdpa")
    return model_cls(cfg).to(device=device, dtype=dtype)


def torchao_available() -> bool:
    try:
        import torchao.float8  # noqa: F401
    except ImportError:
        return False
    return True


def compile_variant(model: torch.nn.Module, variant: str, fallback: str) -> Callable[..., Any]:
    """``model`` (converted in place for torchao) compiled as ``variant`` says (``_sumgrads``: see
    :func:`run_variant`)."""
    variant = variant.removesuffix("_sumgrads")
    if variant == "inductor_bf16":
        return torch.compile(model)
    if variant == "splitlinear_bf16":
        return torch.compile(model, backend="splitlinear", options={"fallback": fallback})
    if variant.startswith("splitlinear_fp8_"):
        recipe = variant.removeprefix("splitlinear_fp8_")
        options: dict[str, Any] = {"fallback": fallback}
        if recipe.endswith("_all"):
            # Nothing skipped by name: lm_head runs in FP8 as well.
            recipe, options["fp8_filter"] = recipe.removesuffix("_all"), ()
        if recipe.endswith("_nocache"):
            # No FP8 weight cache (the default, named): the FP8 copies live only as long as autograd keeps them.
            recipe, options["fp8_weight_cache"] = recipe.removesuffix("_nocache"), False
        if recipe.endswith("_cache"):
            # The FP8 weight cache: each group cast once per optimizer step, kept until it.
            recipe, options["fp8_weight_cache"] = recipe.removesuffix("_cache"), True
        return torch.compile(model, backend="splitlinear", options={**options, "fp8": recipe})
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    recipe = variant.removeprefix("torchao_fp8_")
    config = Float8LinearConfig.from_recipe_name(recipe)
    convert_to_float8_training(model, config=config, module_filter_fn=lambda mod, fqn: fqn != "lm_head")
    return torch.compile(model)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


#: Kernel classes of the profile, by the first substring of the kernel name that matches. Triton
#: comes first: Inductor names its fused kernels after the graph ops around them, which may
#: include ``fp8_quantize``.
KERNEL_CLASSES = (("triton (Inductor)", ("triton",)),
                  ("fp8 quantize (splitlinear)", ("quantize", "amax", "castParts", "cast_parts", "castTiles")),
                  ("gemm", ("gemm", "nvjet", "cutlass", "sm90_xmma", "decodeGemm")),
                  ("attention", ("flash", "fmha", "attention")))
FP8_QUANTIZE_CLASS = KERNEL_CLASSES[1][0]


def profile_steps(step: Callable[[], None], steps: int = 3, top_other: int = 0,
                  top_all: int = 0, gaps: int = 0, label: str = "") -> dict[str, float]:
    """GPU ms per step by kernel class (KERNEL_CLASSES, else "other") over ``steps`` profiled steps.

    ``top_other`` > 0 also prints that many of the "other" and FP8 quantization classes' kernels,
    by time; ``top_all`` > 0 that many kernels of any class. ``gaps`` > 0 also profiles the host
    and prints the GPU's idle time per step and the ``gaps`` CPU ops it waited for most
    (:mod:`gpu_gaps`); the result then holds ``idle`` and ``idle waiting for the host``."""
    from torch.profiler import ProfilerActivity, profile

    idle: dict[str, float] = {}
    if gaps:
        # A profile of its own: with the host's activity in it, key_averages() below would also
        # count host ops' device time (the "other" class doubled).
        import tempfile

        from gpu_gaps import idle_gaps, print_gaps

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as host_prof:
            for _ in range(steps):
                step()
            torch.cuda.synchronize()
        with tempfile.NamedTemporaryFile(suffix=".json") as trace:
            host_prof.export_chrome_trace(trace.name)
            report = idle_gaps(trace.name, steps, gaps)
        print_gaps(report, label)
        idle = {"idle": report["idle_ms"], "idle waiting for the host": report["host_bound_ms"]}
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    out: dict[str, float] = {}
    other: list[tuple[float, int, str]] = []
    every: list[tuple[float, int, str]] = []
    for e in prof.key_averages():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        name = e.key
        cls = next((c for c, keys in KERNEL_CLASSES if any(k.lower() in name.lower() for k in keys)), "other")
        ms = e.self_device_time_total / 1e3 / steps
        out[cls] = out.get(cls, 0.0) + ms
        every.append((ms, e.count // steps, f"{cls}: {name}"))
        if cls in ("other", FP8_QUANTIZE_CLASS):
            other.append(every[-1])
    for ms, count, name in [*sorted(other, reverse=True)[:top_other], *sorted(every, reverse=True)[:top_all]]:
        print(f"   {ms:7.3f} ms/step {count:5d} calls/step  {name[:120]}")
    out["total"] = sum(ms for ms, _, _ in every)
    return {**dict(sorted(out.items(), key=lambda kv: -kv[1])), **idle}


def run_variant(base: torch.nn.Module, variant: str, batches: Sequence[torch.Tensor], device: str,
                timed: int, fallback: str, profile: bool = False, top_other: int = 0,
                top_all: int = 0, gaps: int = 0) -> dict[str, Any]:
    """One variant's steps (and profile). A ``_sumgrads`` variant compiles without the backend's
    post-grad pass (:mod:`splitlinear.grad_concat`): the gradient of the op output's narrows stays
    Inductor's sum of ``slice_scatter`` blocks, for an A/B of that pass in one process."""
    if not variant.endswith("_sumgrads"):
        return _run_variant(base, variant, batches, device, timed, fallback, profile, top_other, top_all, gaps)
    import splitlinear.backend

    with unittest.mock.patch.object(splitlinear.backend, "with_concat_pass", lambda patches: patches):
        return _run_variant(base, variant, batches, device, timed, fallback, profile, top_other, top_all, gaps)


def _run_variant(base: torch.nn.Module, variant: str, batches: Sequence[torch.Tensor], device: str,
                 timed: int, fallback: str, profile: bool, top_other: int, top_all: int,
                 gaps: int) -> dict[str, Any]:
    model = copy.deepcopy(base)
    model.train()
    fn = compile_variant(model, variant, fallback)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    losses, times = [], []
    for ids in batches:
        _sync(device)
        start = time.perf_counter()
        loss = fn(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        _sync(device)
        times.append(time.perf_counter() - start)
        losses.append(loss.item())
    step = statistics.median(times[-timed:])
    kernels = None
    if profile and device == "cuda":
        def one_step(ids: torch.Tensor = batches[-1]) -> None:
            fn(input_ids=ids, labels=ids, use_cache=False).loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()  # as timed: the GPU idles while the next step's host work starts

        kernels = profile_steps(one_step, top_other=top_other, top_all=top_all, gaps=gaps, label=variant)
        print(f"-- {variant}: GPU ms per step by kernel class: "
              + ", ".join(f"{k} {v:.2f}" for k, v in kernels.items()), flush=True)
    result = {
        "gpu_ms_by_kernel_class": kernels,
        "step_ms": step * 1e3,
        "tokens_per_s": batches[0].numel() / step,
        "first_step_s": times[0],
        "peak_mib": torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None,
        "losses": losses,
    }
    del fn, model, opt
    torch._dynamo.reset()
    return result


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--steps", type=int, default=12, help="steps per variant (the first compiles)")
    p.add_argument("--timed", type=int, default=8, help="last steps timed")
    p.add_argument("--variants", nargs="+", default=list(DEFAULT_VARIANTS), choices=VARIANTS)
    p.add_argument("--model", choices=("llama", "qwen2"), default="llama",
                   help="llama: Llama-3-8B layer sizes; qwen2: Qwen2-7B's (q/k/v biases)")
    p.add_argument("--vocab", type=int, default=None, help="vocabulary size (default: Llama-3's 128256)")
    p.add_argument("--profile", action="store_true",
                   help="after timing, profile 3 steps of each variant and print GPU time per kernel class")
    p.add_argument("--profile-other", type=int, default=0, metavar="N",
                   help="with --profile, also print the N longest kernels of the 'other' class")
    p.add_argument("--profile-top", type=int, default=0, metavar="N",
                   help="with --profile, also print the N longest kernels of any class")
    p.add_argument("--profile-gaps", type=int, default=0, metavar="N",
                   help="with --profile, also profile the host: the GPU's idle time per step and the N CPU ops "
                        "it waited for most")
    p.add_argument("--quick", action="store_true", help="CPU smoke run: tiny config, 3 steps, fallback eager")
    p.add_argument("--out", help="write the result as JSON here")
    args = p.parse_args(argv)

    config, fallback = (QWEN2_7B if args.model == "qwen2" else LLAMA3_8B), "inductor"
    if args.vocab:
        config = {**config, "vocab_size": args.vocab}
    if args.quick:
        config, fallback = TINY, "eager"
        args.device, args.batch, args.seq, args.steps, args.timed = "cpu", 2, 32, 3, 2
    variants = [v for v in args.variants if not v.startswith("torchao") or torchao_available()]
    skipped = [v for v in args.variants if v not in variants]
    dtype = torch.bfloat16
    base = build(config, args.layers, args.device, dtype, args.model)
    g = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, config["vocab_size"], (args.batch, args.seq), generator=g).to(args.device)
               for _ in range(args.steps)]
    results = {v: run_variant(base, v, batches, args.device, args.timed, fallback, args.profile, args.profile_other,
                               args.profile_top, args.profile_gaps)
               for v in variants}

    ref_name = "inductor_bf16" if "inductor_bf16" in results else variants[0]
    ref = results[ref_name]
    for r in results.values():
        r["max_loss_rel_gap"] = max(abs(a - b) / abs(b) for a, b in zip(r["losses"], ref["losses"]))
        r["speedup_vs_" + ref_name] = ref["step_ms"] / r["step_ms"]
    print(f"{'variant':28} {'step ms':>9} {'vs ' + ref_name:>18} {'tokens/s':>10} {'first s':>8} "
          f"{'peak MiB':>9} {'loss gap':>9}")
    for v, r in results.items():
        peak = f"{r['peak_mib']:9.0f}" if r["peak_mib"] is not None else f"{'-':>9}"
        print(f"{v:28} {r['step_ms']:9.2f} {r['speedup_vs_' + ref_name]:17.3f}x {r['tokens_per_s']:10.0f} "
              f"{r['first_step_s']:8.2f} {peak} {r['max_loss_rel_gap']:9.2e}")
    if skipped:
        print("skipped (torchao not importable):", ", ".join(skipped))
    if args.out:
        report = {"device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
                  "torch": torch.__version__, "layers": args.layers, "batch": args.batch, "seq": args.seq,
                  "steps": args.steps, "timed": args.timed, "model": args.model, "config": config, "quick": args.quick,
                  "skipped": skipped, "results": results}
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

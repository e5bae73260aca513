"""Training step, timed: splitlinear (bf16, FP8) against eager, Inductor and torchao float8.

transformers Llama with Llama-3-8B layer sizes and Qwen2 with Qwen2-7B's (``models.py``; q/k/v with
biases), ``models.LAYERS`` decoder layers, vocabulary 128256, random weights, bfloat16 Parameters,
``--batch`` x ``--seq`` tokens (4 x 2048), AdamW (foreach). One training step = forward, backward,
optimizer step. Variants, run in this process one after another on the same initial weights and
the same data (default-mode compiles only, so they do not disturb each other):

* ``eager_bf16``: the model as it is;
* ``inductor_bf16``: ``torch.compile(model)``;
* ``splitlinear_bf16``: ``backend="splitlinear"``;
* ``splitlinear_fp8_tensorwise`` / ``_rowwise``: ``options={"fp8": ...}``;
* ``torchao_fp8_tensorwise`` / ``_rowwise``: ``torchao.float8.convert_to_float8_training``
  (recipe by name, ``lm_head`` skipped as splitlinear's default filter does), then
  ``torch.compile`` with Inductor; recorded as skipped when torchao is not installed;
* ``splitlinear_fp8_blockwise``: ``options={"fp8": "blockwise"}`` (1x128 activation and dY blocks,
  128x128 weight blocks; sm_90 only);
* ``torchao_fp8_blockwise`` (on request): torchao's prototype ``Float8BlockwiseLinear.from_float``
  on every Linear but ``lm_head`` that has no bias and K, N multiples of 128 (it takes no others:
  Qwen2's q/k/v, which have biases, stay bf16), then ``torch.compile``; a failure is recorded as
  skipped with its error, since the prototype is not a supported API;
* on request: ``splitlinear_fp8_*_all`` (``fp8_filter=()``: ``lm_head`` in FP8 too),
  ``_cache`` / ``_nocache`` (``fp8_weight_cache`` on / off), ``_sumgrads`` (without the backend's
  gradient-concatenation pass).

For each: the median step time over the last ``--timed`` steps, tokens/s, the first (compiling)
step's wall time, peak memory, the losses of every step and their largest relative gap to
``inductor_bf16``'s (same data, same initial weights: ``--steps`` 50 for the first model).
``--profile`` prints GPU time per step by kernel class; ``--profile-gaps N`` adds the GPU's idle
time and the host ops it waited for (``tools/gpu_gaps.py``).

    python bench/model/train.py --out train.json        # bench/run.py --suite train
    python bench/model/train.py --quick                 # CPU smoke run: tiny config, 3 steps
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import time
import unittest.mock
from collections.abc import Callable, Sequence
from typing import Any

from pathlib import Path

import torch

BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH))
from models import CONFIGS, LAYERS, TRAIN_BATCH, TRAIN_SEQ  # noqa: E402
from models import build as build_model  # noqa: E402

VARIANTS = ("eager_bf16", "inductor_bf16", "splitlinear_bf16", "splitlinear_fp8_tensorwise", "splitlinear_fp8_rowwise",
            "torchao_fp8_tensorwise", "torchao_fp8_rowwise", "splitlinear_fp8_blockwise", "torchao_fp8_blockwise",
            "splitlinear_fp8_tensorwise_all",
            "splitlinear_fp8_rowwise_all", "splitlinear_fp8_tensorwise_nocache", "splitlinear_fp8_rowwise_nocache",
            "splitlinear_fp8_tensorwise_cache", "splitlinear_fp8_rowwise_cache", "splitlinear_bf16_sumgrads",
            "splitlinear_fp8_tensorwise_sumgrads", "splitlinear_fp8_rowwise_sumgrads")
#: Run by default. On request: torchao's blockwise prototype (its first step compiled for 221 s on
#: an H100, which leaves no time for the second model in one 10-minute run), the ``_all`` variants
#: (lm_head in FP8 too) and the A/B variants after them.
DEFAULT_VARIANTS = VARIANTS[:8]
#: The blockwise recipes' block edge: a Linear takes them only where K and N are multiples of it.
BLOCK = 128


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
    if variant == "eager_bf16":
        return model
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
    if variant == "torchao_fp8_blockwise":
        return torch.compile(torchao_blockwise(model))
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    recipe = variant.removeprefix("torchao_fp8_")
    config = Float8LinearConfig.from_recipe_name(recipe)
    convert_to_float8_training(model, config=config, module_filter_fn=lambda mod, fqn: fqn != "lm_head")
    return torch.compile(model)


def torchao_blockwise(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` with each Linear that torchao's blockwise prototype takes (no bias, K and N multiples
    of 128, not ``lm_head``) replaced by its ``Float8BlockwiseLinear``, in place."""
    from torchao.prototype.blockwise_fp8_training.linear import Float8BlockwiseLinear

    for name, mod in list(model.named_modules()):
        for child_name, child in list(mod.named_children()):
            fqn = f"{name}.{child_name}" if name else child_name
            if (type(child) is torch.nn.Linear and child.bias is None and fqn != "lm_head"
                    and child.in_features % BLOCK == 0 and child.out_features % BLOCK == 0):
                setattr(mod, child_name, Float8BlockwiseLinear.from_float(child))
    return model


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

        sys.path.insert(0, str(BENCH / "tools"))
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
        "timed_steps": timed,
    }
    del fn, model, opt
    torch._dynamo.reset()
    return result


def _rows(name: str, results: dict[str, dict[str, Any]], ref_name: str) -> list[dict[str, Any]]:
    """The rows of model ``name`` for the variants finished so far, each against ``ref_name``."""
    ref = results[ref_name]
    rows = []
    for v, r in results.items():
        r["max_loss_rel_gap"] = max(abs(a - b) / abs(b) for a, b in zip(r["losses"], ref["losses"]))
        r["speedup"] = ref["step_ms"] / r["step_ms"]
        rows.append({"model": name, "variant": v, "reference": ref_name, **r})
    return rows


def run_model(name: str, args: argparse.Namespace, variants: Sequence[str], steps: int,
              fallback: str, skipped: list[str],
              progress: Callable[[list[dict[str, Any]], list[str]], None]) -> list[dict[str, Any]]:
    """Every variant's row for model ``name`` (a key of ``models.CONFIGS``); a variant that cannot run
    here (torchao's blockwise prototype off sm_90, or failing) goes to ``skipped`` with its reason.
    The reference (Inductor bf16) runs first, so that ``progress(rows, pending variants)`` can hand on
    every finished row with its ratio, and a run stopped by its time limit keeps them."""
    overrides = {"vocab_size": args.vocab} if args.vocab else {}
    base = build_model(name, args.layers, args.device, torch.bfloat16, **overrides)
    vocab = base.config.vocab_size
    g = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, vocab, (args.batch, args.seq), generator=g).to(args.device) for _ in range(steps)]
    ref_name = "inductor_bf16" if "inductor_bf16" in variants else variants[0]
    order = [ref_name, *(v for v in variants if v != ref_name)]
    results: dict[str, dict[str, Any]] = {}
    for i, v in enumerate(order):
        try:
            results[v] = run_variant(base, v, batches, args.device, min(args.timed, steps - 1), fallback,
                                     args.profile, args.profile_other, args.profile_top, args.profile_gaps)
        except Exception as e:  # noqa: BLE001  (a prototype peer's failure is a result, not a crash)
            if v != "torchao_fp8_blockwise":
                raise
            skipped.append(f"{name} {v}: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}")
            print(f"{name}: {v} skipped: {skipped[-1]}", flush=True)
            torch._dynamo.reset()
        progress(_rows(name, results, ref_name), order[i + 1:])
    rows = _rows(name, results, ref_name)
    print(f"{name}: {'variant':28} {'step ms':>9} {'vs ' + ref_name:>18} {'tokens/s':>10} {'first s':>8} "
          f"{'peak MiB':>9} {'loss gap':>9}")
    for r in rows:
        peak = f"{r['peak_mib']:9.0f}" if r["peak_mib"] is not None else f"{'-':>9}"
        print(f"{name}: {r['variant']:28} {r['step_ms']:9.2f} {r['speedup']:17.3f}x {r['tokens_per_s']:10.0f} "
              f"{r['first_step_s']:8.2f} {peak} {r['max_loss_rel_gap']:9.2e}", flush=True)
    del base
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--models", nargs="+", default=["llama3-8b", "qwen2-7b"], choices=[k for k in CONFIGS if k != "tiny"])
    p.add_argument("--layers", type=int, default=LAYERS)
    p.add_argument("--batch", type=int, default=TRAIN_BATCH)
    p.add_argument("--seq", type=int, default=TRAIN_SEQ)
    p.add_argument("--steps", type=int, default=50, help="steps per variant of the first model (the first compiles)")
    p.add_argument("--steps-other", type=int, default=20, help="steps per variant of the other models")
    p.add_argument("--timed", type=int, default=15, help="last steps timed")
    p.add_argument("--variants", nargs="+", default=list(DEFAULT_VARIANTS), choices=VARIANTS)
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

    fallback, models = "inductor", list(args.models)
    if args.quick:
        fallback, models = "eager", ["tiny"]
        args.device, args.batch, args.seq, args.steps, args.timed = "cpu", 2, 32, 3, 2
    variants = [v for v in args.variants if not v.startswith("torchao") or torchao_available()]
    skipped = [f"{v}: torchao not installed" for v in args.variants if v not in variants]
    # cuBLASLt's block scales run on sm_90 only (splitlinear raises elsewhere; the CPU emulates them).
    if args.device == "cuda" and torch.cuda.get_device_capability()[0] != 9:
        skipped += [f"{v}: needs sm_90" for v in variants if v.endswith("blockwise")]
        variants = [v for v in variants if not v.endswith("blockwise")]
    if args.device != "cuda" and "torchao_fp8_blockwise" in variants:
        skipped.append("torchao_fp8_blockwise: needs CUDA")
        variants.remove("torchao_fp8_blockwise")
    if args.quick:
        # The CPU smoke run compiles nothing with Inductor (no C++ toolchain needed, and fast).
        variants = [v for v in variants if v != "inductor_bf16"] if fallback == "eager" else variants
        skipped.append("inductor_bf16: --quick compiles nothing with Inductor")
        # The tiny model has no Linear whose sizes are multiples of 128: blockwise would run nothing in FP8.
        skipped += [f"{v}: --quick's tiny model has no 128-multiple Linear" for v in variants if v.endswith("blockwise")]
        variants = [v for v in variants if not v.endswith("blockwise")]
    rows: list[dict[str, Any]] = []

    def write(rows: Sequence[dict[str, Any]], pending: Sequence[str]) -> None:
        """The JSON so far: written after each variant, so a run stopped by its time limit keeps the
        variants it finished (the models and variants it did not are listed as skipped)."""
        if not args.out:
            return
        report = {"config": {"device": args.device, "layers": args.layers, "batch": args.batch, "seq": args.seq,
                             "steps": args.steps, "steps_other": args.steps_other, "timed": args.timed,
                             "models": {m: CONFIGS[m] for m in models}, "vocab": args.vocab or CONFIGS[models[0]]["vocab_size"],
                             "optimizer": "AdamW (foreach)", "dtype": "bfloat16 parameters"},
                  "results": list(rows), "skipped": skipped + [f"{m}: the run stopped before it" for m in pending]}
        # Through a rename: a run stopped mid-write leaves the previous JSON whole.
        tmp = f"{args.out}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
        os.replace(tmp, args.out)

    for i, name in enumerate(models):
        later = models[i + 1:]

        def progress(model_rows: list[dict[str, Any]], pending: list[str], name: str = name,
                     later: list[str] = later) -> None:
            write(rows + model_rows, [f"{name} {v}" for v in pending] + later)

        rows += run_model(name, args, variants, args.steps if i == 0 else args.steps_other, fallback, skipped,
                          progress)
        write(rows, later)
    if skipped:
        print("skipped:", "; ".join(skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())

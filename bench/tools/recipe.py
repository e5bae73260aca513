"""The real training recipe, timed: eager vs Inductor vs splitlinear.

Llama and Qwen2 from ``transformers`` configs (random weights, float32
Parameters), ``gradient_checkpointing_enable()``, AdamW, forward and backward
under ``torch.autocast(dtype=bfloat16)``. For each backend: the losses of
every step against eager (same data, same initial weights), the median step
time and tokens/s over the timed steps, the first step's wall time (it
compiles), and the peak memory a step adds above what is allocated when it
starts (``step_peak_mib``). A second mode, ``frozen``, freezes every
``nn.Linear`` weight (LoRA-style fine-tuning: the frozen base) and compares
that memory, where the op must not keep inputs for gradients nobody needs.

All backends run in one process, their steps taken in turn (step i of eager,
Inductor and splitlinear, then step i + 1), so the ratios are side by side and
a machine's drift weighs on all alike. Usage::

    python3 bench/bench_recipe.py --device cuda --size large --json out.json
    python3 bench/bench_recipe.py --archs llama --modes frozen --steps 30 --timed 24
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from typing import Any

import torch

import splitlinear
import splitlinear.stats as splitlinear_stats
from splitlinear.packing import pack_parameters

SIZES: dict[str, dict[str, int]] = {
    "small": dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=256),
    "large": dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=4,
                  num_attention_heads=16, num_key_value_heads=4, vocab_size=32000),
}


def build(arch: str, size: str, device: str) -> torch.nn.Module:
    import transformers

    common = dict(SIZES[size], max_position_embeddings=4096, attn_implementation="sdpa")
    torch.manual_seed(0)
    if arch == "llama":
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))
    else:
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common))
    return model.to(device)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


class _Run:
    """One backend's copy of the model, its optimizer and what its steps measured."""

    def __init__(self, base: torch.nn.Module, backend: str, mode: str) -> None:
        self.backend = backend
        self.model = copy.deepcopy(base)
        if backend == "splitlinear":
            pack_parameters(self.model)
        if mode == "frozen":
            for module in self.model.modules():
                if isinstance(module, torch.nn.Linear):
                    module.weight.requires_grad_(False)
        self.model.gradient_checkpointing_enable()
        self.model.train()
        self.fn = self.model if backend == "eager" else torch.compile(self.model, backend=backend)
        self.opt = torch.optim.AdamW([p for p in self.model.parameters() if p.requires_grad], lr=1e-4)
        self.losses: list[float] = []
        self.times: list[float] = []
        self.step_peak_mib = 0.0

    def step(self, ids: torch.Tensor, device: str) -> None:
        _sync(device)
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
        start = time.perf_counter()
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = self.fn(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        _sync(device)
        self.times.append(time.perf_counter() - start)
        self.losses.append(loss.item())
        if device == "cuda":
            self.step_peak_mib = max(self.step_peak_mib, (torch.cuda.max_memory_allocated() - before) / 2**20)


def run_interleaved(base: torch.nn.Module, backends: list[str], mode: str, batches: list[torch.Tensor],
                    device: str, timed: int) -> dict[str, dict[str, Any]]:
    """Every backend's training steps, taken in turn (step i of each backend, then step i + 1), so
    that a machine's drift over the run weighs on all backends alike."""
    runs = [_Run(base, backend, mode) for backend in backends]
    splitlinear_stats.reset_stats()
    for ids in batches:
        for run in runs:
            run.step(ids, device)
    results = {}
    for run in runs:
        steady = run.times[-timed:]
        results[run.backend] = {
            "losses": run.losses,
            "first_step_s": run.times[0],
            "step_ms": statistics.median(steady) * 1e3,
            "steps_ms": [t * 1e3 for t in run.times],
            "tokens_per_s": batches[0].numel() / statistics.median(steady),
            # Above the memory allocated when the step starts (every backend's weights and
            # optimizer states are resident): what a step adds, activations and workspaces.
            "step_peak_mib": run.step_peak_mib if device == "cuda" else None,
        }
    stats = splitlinear_stats.stats()
    results["splitlinear"]["stats"] = {k: stats[k] for k in ("graphs_compiled", "regions_matched", "views",
                                                            "cats", "per_part_gemms", "dgrad_views")}
    del runs
    torch._dynamo.reset()
    if device == "cuda":
        torch.cuda.empty_cache()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--size", choices=list(SIZES), default="large")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--steps", type=int, default=8, help="steps per backend (the first compiles)")
    parser.add_argument("--timed", type=int, default=5, help="last steps timed")
    parser.add_argument("--json", default=None)
    parser.add_argument("--archs", nargs="+", choices=["llama", "qwen2"], default=["llama", "qwen2"])
    parser.add_argument("--modes", nargs="+", choices=["train", "frozen"], default=["train", "frozen"])
    args = parser.parse_args(argv)

    rows = []
    report: dict[str, Any] = {"device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
                              "torch": torch.__version__, "size": args.size, "batch": args.batch,
                              "seq": args.seq, "results": rows}
    generator = torch.Generator().manual_seed(1)
    ok = True
    for arch in args.archs:
        base = build(arch, args.size, args.device)
        vocab = base.config.vocab_size
        batches = [torch.randint(0, vocab, (args.batch, args.seq), generator=generator).to(args.device)
                   for _ in range(args.steps)]
        for mode in args.modes:
            results = run_interleaved(base, ["eager", "inductor", "splitlinear"], mode, batches,
                                      args.device, args.timed)
            ref = results["eager"]["losses"]
            for backend, r in results.items():
                r["max_loss_rel_err"] = max(abs(a - b) / abs(b) for a, b in zip(r["losses"], ref))
                rows.append({"arch": arch, "mode": mode, "backend": backend, **r})
            # bf16 autocast: losses agree to bf16 precision over the steps.
            ok &= results["splitlinear"]["max_loss_rel_err"] < 2e-2
        del base

    print(f"{'arch':6} {'mode':6} {'backend':11} {'step ms':>8} {'tokens/s':>10} {'first s':>8} "
          f"{'step MiB':>9} {'loss err':>9}  paths")
    for r in rows:
        peak = f"{r['step_peak_mib']:9.0f}" if r["step_peak_mib"] is not None else f"{'-':>9}"
        paths = r.get("stats", "")
        print(f"{r['arch']:6} {r['mode']:6} {r['backend']:11} {r['step_ms']:8.2f} {r['tokens_per_s']:10.0f} "
              f"{r['first_step_s']:8.2f} {peak} {r['max_loss_rel_err']:9.2e}  {paths}")
    ratios = {}
    for r in rows:
        if r["backend"] == "splitlinear":
            ind = next(i for i in rows if (i["arch"], i["mode"], i["backend"]) == (r["arch"], r["mode"], "inductor"))
            ratios[f"{r['arch']}/{r['mode']}"] = r["step_ms"] / ind["step_ms"]
    report["splitlinear_over_inductor"] = ratios
    print("splitlinear / Inductor, step ms: " + ", ".join(f"{k} {v:.3f}" for k, v in ratios.items()))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    print("losses match eager within bf16 tolerance" if ok else "LOSS MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

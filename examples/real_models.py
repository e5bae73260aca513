"""The main job: real model architectures from ``transformers`` under
``torch.compile(backend="splitlinear")``.

An example, not part of the package: ``transformers`` is not a dependency of
``splitlinear`` (it is in ``python/requirements.txt`` for this script and the
tests).

Builds a Llama and a Qwen2 model (q/k/v biases) from configs with random
weights (no download), packs sibling projections with
:func:`splitlinear.pack_parameters`, compiles with the splitlinear backend, and
compares one forward and one training step with eager PyTorch (same weights,
same data). Prints a report — regions matched per layer, the run-time paths
taken (views / cats / per-part GEMMs), max relative errors of logits and
gradients, and median times of eager / Inductor / splitlinear — and writes it
as JSON.

Usage (from the repository root, with the op library built)::

    PYTHONPATH=python python3 examples/real_models.py [--device cuda] [--size small|large] [--json report.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

import splitlinear
from splitlinear import pack_parameters

SIZES: dict[str, dict[str, int]] = {
    "small": dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=256),
    "large": dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=4,
                  num_attention_heads=16, num_key_value_heads=4, vocab_size=32000),
}

#: Relative tolerance on logits and gradients, by dtype.
TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 5e-2, torch.float16: 1e-2}


def build(arch: str, size: str, device: str, dtype: torch.dtype) -> torch.nn.Module:
    """A randomly initialised ``arch`` ("llama" or "qwen2") model of ``size``."""
    import transformers

    common = dict(SIZES[size], max_position_embeddings=256, attn_implementation="eager")
    if arch == "llama":
        config = transformers.LlamaConfig(**common)
        model = transformers.LlamaForCausalLM(config)
    else:
        config = transformers.Qwen2Config(**common)
        model = transformers.Qwen2ForCausalLM(config)
    return model.to(device=device, dtype=dtype)


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """``max |a - b| / max |b|`` in float64 (any shapes that broadcast, any float dtypes)."""
    return ((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-30)).item()


def median_time(fn: Callable[[], Any], device: str, reps: int) -> float:
    """Median wall time of ``fn`` in milliseconds (synchronized on CUDA)."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def run_model(arch: str, args: argparse.Namespace) -> dict[str, Any]:
    """Parity (forward and one training step) and timings of one architecture; a JSON-able row."""
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    eager = build(arch, args.size, args.device, dtype)
    model = copy.deepcopy(eager)
    pack = pack_parameters(model)
    batch, seq = args.batch, args.seq
    ids = torch.randint(0, eager.config.vocab_size, (batch, seq), device=args.device)
    splitlinear.reset_stats()
    compiled = torch.compile(model, backend="splitlinear", fullgraph=True)

    # Forward parity (inference).
    with torch.no_grad():
        ref_logits = eager(ids).logits
        logits = compiled(ids).logits
    stats_infer = splitlinear.stats()
    # One training step: gradients of every parameter.
    eager.zero_grad()
    model.zero_grad()
    eager(ids, labels=ids).loss.backward()
    compiled(ids, labels=ids).loss.backward()
    grad_errors = {
        name: rel_err(p.grad, dict(eager.named_parameters())[name].grad)
        for name, p in model.named_parameters()
        if p.grad is not None
    }
    stats_train = splitlinear.stats()
    layers = eager.config.num_hidden_layers

    # Timings: forward at prefill (batch x seq) and decode (batch x 1) shapes.
    # The same compile arguments as splitlinear's: fullgraph=True alone costs every call
    # Dynamo host time (up to 27 us per forward of the small Llama on the 2-core CPU machine,
    # docs/Performance.md), which a comparison of backends must not charge to one of them.
    inductor = torch.compile(copy.deepcopy(eager), fullgraph=True)
    decode_ids = ids[:, :1].contiguous()
    times: dict[str, dict[str, float]] = {}
    with torch.no_grad():
        for shape, inp in (("prefill", ids), ("decode", decode_ids)):
            times[shape] = {
                "eager": median_time(lambda: eager(inp), args.device, args.reps),
                "inductor": median_time(lambda: inductor(inp), args.device, args.reps),
                "splitlinear": median_time(lambda: compiled(inp), args.device, args.reps),
            }
    tol = TOLERANCE[dtype]
    worst_grad = max(grad_errors.values()) if grad_errors else float("nan")
    return {
        "arch": arch,
        "layers": layers,
        "packed_groups": len(pack.packed),
        "skipped_groups": [(g, r) for g, r in pack.skipped],
        "regions_matched_per_layer": stats_infer.get("regions_matched", 0) / layers,
        "stats_inference": stats_infer,
        "stats_after_training_step": stats_train,
        "logits_rel_err": rel_err(logits, ref_logits),
        "grad_rel_err_max": worst_grad,
        "grads_compared": len(grad_errors),
        "tolerance": tol,
        "ok": rel_err(logits, ref_logits) <= tol and worst_grad <= tol,
        "times_ms": times,
        "tokens_per_s": {
            shape: {k: (batch * (seq if shape == "prefill" else 1)) / (v / 1e3) for k, v in t.items()}
            for shape, t in times.items()
        },
    }


def print_report(rows: list[dict[str, Any]]) -> None:
    """The report's table: paths taken, errors, and median forward times."""
    print(f"{'arch':6} {'regions/layer':>13} {'views':>6} {'cats':>5} {'per-part':>8} "
          f"{'logits err':>10} {'grad err':>9} {'ok':>3}")
    for r in rows:
        s = r["stats_after_training_step"]
        print(f"{r['arch']:6} {r['regions_matched_per_layer']:13.1f} {s.get('views', 0):6d} "
              f"{s.get('cats', 0):5d} {s.get('per_part_gemms', 0):8d} {r['logits_rel_err']:10.2e} "
              f"{r['grad_rel_err_max']:9.2e} {'yes' if r['ok'] else 'NO':>3}")
    print("median forward time, ms:")
    for r in rows:
        for shape, t in r["times_ms"].items():
            print(f"  {r['arch']:6} {shape:8} eager {t['eager']:8.3f}  inductor {t['inductor']:8.3f}"
                  f"  splitlinear {t['splitlinear']:8.3f}")


def main(argv: list[str] | None = None) -> int:
    """Runs every ``--arch``; exit status 0 iff all are within tolerance."""
    # Both compiled models run transformers' shared `wrapper` frame, under
    # two backends, two grad modes and two sequence lengths: more than
    # Dynamo's default budget of 8 compiles per code object, past which it
    # would silently run the frame eagerly and distort the timings.
    torch._dynamo.config.recompile_limit = 64
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--size", default="small", choices=sorted(SIZES))
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--arch", nargs="+", default=["llama", "qwen2"], choices=["llama", "qwen2"])
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args(argv)
    rows = [run_model(arch, args) for arch in args.arch]
    print_report(rows)
    if args.json:
        device = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
        with open(args.json, "w") as f:
            json.dump({"device": device, "torch": torch.__version__, "args": vars(args), "models": rows},
                      f, indent=1, default=str)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

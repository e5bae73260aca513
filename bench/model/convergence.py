"""FP8 convergence check: a tiny transformers Llama trained on a fixed synthetic corpus, FP8 vs not.

The corpus is a first-order Markov chain over the vocabulary with a fixed random transition
table (so there is something to learn and its entropy bounds the loss). The same model, data
and AdamW run once per variant, compiled with ``backend="splitlinear"``: ``baseline`` (no FP8)
and each FP8 recipe given, all under bfloat16 autocast over float32 parameters. Reports the
loss curves smoothed over ``--window`` steps and the largest relative gap of each FP8 curve to
the baseline's (the issue's bound: 2 %). On the CPU the FP8 ops are the exact emulation.

    python bench/model/convergence.py --steps 300 --out accuracy.json   # bench/run.py --suite accuracy
    python bench/model/convergence.py --quick                          # 40 steps, tensorwise (as in CI)
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Sequence

import torch

CONFIG = dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=128, max_position_embeddings=128,
              attn_implementation="eager")


def corpus(steps: int, batch: int, seq: int, vocab: int, seed: int = 0) -> torch.Tensor:
    """``[steps, batch, seq]`` token ids from a fixed Markov chain (sharp transitions: learnable)."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(vocab, vocab, generator=g) * 3.0
    probs = torch.softmax(logits, -1)
    ids = torch.empty(steps * batch, seq, dtype=torch.long)
    ids[:, 0] = torch.randint(0, vocab, (steps * batch,), generator=g)
    for t in range(1, seq):
        ids[:, t] = torch.multinomial(probs[ids[:, t - 1]], 1, generator=g).squeeze(1)
    return ids.view(steps, batch, seq)


def build(seed: int = 0) -> torch.nn.Module:
    import transformers

    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG))


def train(model: torch.nn.Module, data: torch.Tensor, fp8: str | None, lr: float = 3e-3,
          fallback: str = "eager") -> list[float]:
    """Losses of ``len(data)`` AdamW steps of ``model`` (modified) compiled with option ``fp8``."""
    options: dict = {"fallback": fallback}
    if fp8 is not None:
        options["fp8"] = fp8
    compiled = torch.compile(model, backend="splitlinear", options=options)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for ids in data:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = compiled(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


def smooth(losses: Sequence[float], window: int) -> list[float]:
    """Means over consecutive windows of ``window`` steps."""
    return [sum(losses[i:i + window]) / len(losses[i:i + window]) for i in range(0, len(losses), window)]


def max_gap(curve: Sequence[float], baseline: Sequence[float]) -> float:
    """Largest ``|curve - baseline| / baseline`` over the smoothed points."""
    return max(abs(a - b) / b for a, b in zip(curve, baseline))


def run(steps: int, recipes: Sequence[str], batch: int = 8, seq: int = 32, window: int = 20,
        fallback: str = "eager") -> dict:
    data = corpus(steps, batch, seq, CONFIG["vocab_size"])
    model = build()
    result: dict = {"steps": steps, "batch": batch, "seq": seq, "window": window, "config": CONFIG,
                    "curves": {}, "max_gap": {}, "seconds": {}}
    for name in ["baseline", *recipes]:
        torch._dynamo.reset()
        start = time.perf_counter()
        losses = train(copy.deepcopy(model), data, None if name == "baseline" else name, fallback=fallback)
        result["seconds"][name] = round(time.perf_counter() - start, 2)
        result["curves"][name] = smooth(losses, window)
    base = result["curves"]["baseline"]
    for name in recipes:
        result["max_gap"][name] = max_gap(result["curves"][name], base)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--recipes", nargs="+", default=["tensorwise", "rowwise", "rowwise_with_gw_hp"])
    p.add_argument("--window", type=int, default=20)
    p.add_argument("--fallback", default="eager", choices=["eager", "inductor"])
    p.add_argument("--bound", type=float, default=0.02, help="largest relative gap allowed")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--quick", action="store_true", help="40 steps of tensorwise, batch 8 x 16, window 10")
    p.add_argument("--out", help="write the result as JSON here")
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.recipes, args.window, args.batch, args.seq = 40, ["tensorwise"], 10, 8, 16
    result = run(args.steps, args.recipes, batch=args.batch, seq=args.seq, window=args.window,
                 fallback=args.fallback)
    base = result["curves"]["baseline"]
    print(f"{'step':>6} " + " ".join(f"{n:>18}" for n in result["curves"]))
    for i in range(len(base)):
        print(f"{(i + 1) * args.window:>6} " + " ".join(f"{c[i]:>18.4f}" for c in result["curves"].values()))
    ok = True
    for name, gap in result["max_gap"].items():
        print(f"{name}: largest relative gap to baseline {gap:.4f} ({'ok' if gap <= args.bound else 'FAIL'})")
        ok &= gap <= args.bound
    print("seconds:", result["seconds"])
    if args.out:
        rows = [{"recipe": name, "max_gap": result["max_gap"].get(name), "bound": args.bound,
                 "ok": name == "baseline" or result["max_gap"][name] <= args.bound,
                 "curve": curve, "seconds": result["seconds"][name]}
                for name, curve in result["curves"].items()]
        config = {k: result[k] for k in ("steps", "batch", "seq", "window", "config")}
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"config": {**config, "fallback": args.fallback, "device": "cpu"},
                       "results": rows, "skipped": []}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

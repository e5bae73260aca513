"""FP8 gradient accuracy: SQNR of every projection's weight gradient, and of the gradients that dgrad
carries, against a float64 model, for splitlinear's recipes and torchao's of the same name.

A transformers Llama with Llama-3-8B layer sizes (2 layers, vocabulary 32000: the embedding and
``lm_head`` are not what is measured) whose parts differ in magnitude (k_proj ×0.25, v_proj ×0.05
and up_proj ×0.1 of their initial weights), one batch of 2×1024 tokens, one forward and backward.
The float64 copy gives the reference gradients. Every variant runs the same step under bfloat16
autocast over float32 parameters: ``bf16`` (no FP8), splitlinear (``torch.compile(backend=
"splitlinear", options={"fp8": recipe})``, parameters packed) and torchao
(``convert_to_float8_training`` with ``Float8LinearConfig.from_recipe_name(recipe)``, eager: its
numerics do not depend on compiling), ``lm_head`` in bf16 in both. ``blockwise`` (sm_90 or the CPU)
has splitlinear's row only: torchao has no recipe of that name.
``SQNR = 10·log10(Σ ref² / Σ (g − ref)²)`` over all layers' gradients of one projection, in dB
(higher is better). The norms' weight gradients and the embedding's carry the dgrad errors of the
projections after them (input_layernorm: q/k/v; post_attention_layernorm: gate/up).

    python bench/model/grad_sqnr.py --out grads.json          # bench/run.py --suite grads (GPU)
    python bench/model/grad_sqnr.py --quick --out grads.json  # tiny model on the CPU (exact emulation), rowwise
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models import LLAMA3_8B, TINY  # noqa: E402

#: Parameter name suffix -> row label, in table order.
GRADS = {
    "self_attn.q_proj.weight": "q_proj", "self_attn.k_proj.weight": "k_proj", "self_attn.v_proj.weight": "v_proj",
    "self_attn.o_proj.weight": "o_proj", "mlp.gate_proj.weight": "gate_proj", "mlp.up_proj.weight": "up_proj",
    "mlp.down_proj.weight": "down_proj", "input_layernorm.weight": "input_layernorm (q/k/v dgrad)",
    "post_attention_layernorm.weight": "post_attention_layernorm (gate/up dgrad)",
    "embed_tokens.weight": "embed_tokens (every dgrad)",
}
#: Initial-weight factors that make the parts of a split projection differ in magnitude.
MAGNITUDES = {"self_attn.k_proj.weight": 0.25, "self_attn.v_proj.weight": 0.05, "mlp.up_proj.weight": 0.1}


def build(config: dict, layers: int, device: str) -> torch.nn.Module:
    import transformers

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(**{**config, "num_hidden_layers": layers, "attn_implementation": "sdpa"})
    model = transformers.LlamaForCausalLM(cfg).to(device)
    with torch.no_grad():
        for name, p in model.named_parameters():
            for suffix, factor in MAGNITUDES.items():
                if name.endswith(suffix):
                    p.mul_(factor)
    return model


#: The recipes ``Float8LinearConfig.from_recipe_name`` knows (torchao 0.18).
TORCHAO_RECIPES = ("tensorwise", "rowwise", "rowwise_with_gw_hp")


def gradients(model: torch.nn.Module, ids: torch.Tensor, autocast: bool) -> dict[str, list[torch.Tensor]]:
    """One forward and backward of ``model`` (float64 copies of the gradients, by projection label)."""
    with torch.autocast(ids.device.type, dtype=torch.bfloat16, enabled=autocast):
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
    loss.backward()
    out: dict[str, list[torch.Tensor]] = {label: [] for label in GRADS.values()}
    for name, p in model.named_parameters():
        for suffix, label in GRADS.items():
            if name.endswith(suffix):
                assert p.grad is not None, f"{name} has no gradient"
                out[label].append(p.grad.detach().double())
    return out


def sqnr_db(got: list[torch.Tensor], ref: list[torch.Tensor]) -> float:
    signal = sum(float((r * r).sum()) for r in ref)
    noise = sum(float(((g - r) ** 2).sum()) for g, r in zip(got, ref))
    return math.inf if noise == 0 else 10 * math.log10(signal / noise)


def variant_model(base: torch.nn.Module, impl: str, recipe: str | None) -> torch.nn.Module:
    model = copy.deepcopy(base)
    if impl == "splitlinear":
        import splitlinear  # noqa: F401  (registers the backend)
        from splitlinear.packing import pack_parameters

        pack_parameters(model)
        return torch.compile(model, backend="splitlinear", options={"fp8": recipe})
    if impl == "torchao":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        return convert_to_float8_training(model, config=Float8LinearConfig.from_recipe_name(recipe),
                                          module_filter_fn=lambda _m, fqn: "lm_head" not in fqn)
    return model


def run(config: dict, layers: int, batch: int, seq: int, recipes: Sequence[str], device: str) -> dict:
    base = build(config, layers, device)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, config["vocab_size"], (batch, seq), generator=g).to(device)
    reference = gradients(copy.deepcopy(base).double(), ids, autocast=False)
    impls = ["splitlinear"]
    skipped = []
    try:
        import torchao  # noqa: F401

        if device == "cuda":
            impls.append("torchao")
        else:
            skipped.append("torchao (its float8 training needs CUDA)")
    except ImportError:
        skipped.append("torchao (not installed)")
    results = [{"impl": "bf16", "recipe": None, "sqnr_db": {}}]
    # torchao has no blockwise recipe by name (its prototype takes no float32 weights): splitlinear's row only.
    results += [{"impl": impl, "recipe": r, "sqnr_db": {}} for r in recipes for impl in impls
                if impl != "torchao" or r in TORCHAO_RECIPES]
    for row in results:
        torch._dynamo.reset()
        grads = gradients(variant_model(base, row["impl"], row["recipe"]), ids, autocast=True)
        row["sqnr_db"] = {label: round(sqnr_db(grads[label], reference[label]), 2) for label in GRADS.values()}
        print(f"{row['impl']:>12} {row['recipe'] or '':>20} "
              + " ".join(f"{v:6.2f}" for v in row["sqnr_db"].values()), flush=True)
    return {"config": {"model": "llama3-8b layers" if config is not TINY else "tiny", "layers": layers,
                       "batch": batch, "seq": seq, "vocab": config["vocab_size"], "device": device,
                       "magnitudes": {k.split(".")[-2]: v for k, v in MAGNITUDES.items()},
                       "rows": list(GRADS.values())},
            "results": results, "skipped": skipped}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--recipes", nargs="+", default=[*TORCHAO_RECIPES, "blockwise"])
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--quick", action="store_true", help="tiny model on the CPU, 2×32 tokens, rowwise only")
    p.add_argument("--out", help="write the result as JSON here")
    args = p.parse_args(argv)
    if args.quick:
        config, device, args.batch, args.seq, args.recipes = TINY, "cpu", 2, 32, ["rowwise"]
    else:
        config, device = {**LLAMA3_8B, "vocab_size": 32000}, "cuda"
    result = run(config, 2, args.batch, args.seq, args.recipes, device)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

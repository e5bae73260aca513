"""A packed, compiled Llama trained 3 steps under DDP and under FSDP2, against Inductor.

Run with ``torchrun --nproc_per_node=2 bench/model/dist_train.py --out dist.json``
(NCCL on GPUs; ``--device cpu`` uses gloo; ``--quick``: a tiny model, 2 steps, compiled without
Inductor, for a CPU smoke run; ``bench/run.py --suite dist`` starts it). For each wrapper, two copies of one
model (same seed) train side by side on the same per-rank data: one compiled
with ``backend="inductor"``, one packed with ``pack_parameters`` and compiled
with ``backend="splitlinear"``. Prints, per step, the loss of each, the largest
gradient difference relative to the gradient's magnitude, and the op's paths
(views / cats / per-part GEMMs) per step; rank 0 writes the JSON.

* DDP: ``DistributedDataParallel(gradient_as_bucket_view=True)``.
* FSDP2: ``fully_shard`` per decoder layer, then the root; the splitlinear
  copy then gets ``pack_fsdp_parameters`` (its groups' unsharded parameters as
  views of one buffer).

``--no-autocast`` trains in float32: under bf16 autocast the op casts the
weight parts into one buffer itself, which hides whether FSDP2's parts were
adjacent.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from typing import Any

import torch
import torch.distributed as dist

from splitlinear.distributed import pack_fsdp_parameters
from splitlinear.packing import pack_parameters
from splitlinear.stats import reset_stats, stats

CONFIG = dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=2, num_attention_heads=8,
              num_key_value_heads=2, vocab_size=1024, attn_implementation="sdpa")
QUICK_CONFIG = dict(CONFIG, hidden_size=64, intermediate_size=160, num_attention_heads=4, vocab_size=256)


def build(device: torch.device) -> torch.nn.Module:
    import transformers

    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG)).to(device)


def _backend(name: str, quick: bool) -> object:
    """``name``'s ``torch.compile`` arguments (``--quick``: no Inductor: ``eager`` / fallback eager)."""
    if not quick:
        return {"backend": name}
    return {"backend": "eager"} if name == "inductor" else {"backend": name, "options": {"fallback": "eager"}}


def wrap(model: torch.nn.Module, how: str, device: torch.device) -> torch.nn.Module:
    if how == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        ids = [device.index] if device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=ids, gradient_as_bucket_view=True)
    from torch.distributed.fsdp import fully_shard

    for layer in model.model.layers:
        fully_shard(layer)
    fully_shard(model)
    return model


def full_grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    out = {}
    for name, p in model.named_parameters():
        g = p.grad
        if g is None:
            continue
        if hasattr(g, "full_tensor"):  # FSDP2: a sharded DTensor
            g = g.full_tensor()
        out[name.replace("module.", "").replace("_orig_mod.", "")] = g.detach().float().clone()
    return out


def run(how: str, device: torch.device, steps: int, autocast: bool, quick: bool = False) -> dict[str, Any]:
    rank = dist.get_rank()
    base = build(device)
    models = {"inductor": copy.deepcopy(base), "splitlinear": copy.deepcopy(base)}
    packed = pack_parameters(models["splitlinear"])
    fns, opts = {}, {}
    for name, m in models.items():
        wrapped = wrap(m, how, device)
        if how == "fsdp2" and name == "splitlinear":
            pack_fsdp_parameters(m)
        fns[name] = torch.compile(wrapped, **_backend(name, quick))
        opts[name] = torch.optim.AdamW(m.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(100 + rank)
    rows = []
    for step in range(steps):
        ids = torch.randint(0, CONFIG["vocab_size"], (2, 32 if quick else 128), generator=generator).to(device)
        losses, grads = {}, {}
        for name in ("inductor", "splitlinear"):
            reset_stats()
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
                loss = fns[name](input_ids=ids, labels=ids, use_cache=False).loss
            loss.backward()
            losses[name] = loss.item()
            grads[name] = full_grads(models[name])
            if name == "splitlinear":
                s = stats()
                paths = {k: s[k] for k in ("regions_matched", "views", "cats", "per_part_gemms",
                                           "dgrad_views", "dgrad_cats", "dgrad_per_part_gemms")}
            opts[name].step()
            opts[name].zero_grad(set_to_none=True)
        worst = max(
            ((grads["splitlinear"][k] - g).abs().max() / g.abs().max().clamp_min(1e-12)).item()
            for k, g in grads["inductor"].items()
        )
        missing = sorted(set(grads["inductor"]) ^ set(grads["splitlinear"]))
        rows.append({"step": step, "loss_inductor": losses["inductor"], "loss_splitlinear": losses["splitlinear"],
                     "max_grad_rel_err": worst, "grad_names_differ": missing, "paths": paths})
        if rank == 0:
            print(f"{how} step {step}: loss inductor {losses['inductor']:.5f} splitlinear "
                  f"{losses['splitlinear']:.5f}  max grad rel err {worst:.2e}  paths {paths}", flush=True)
    ok = all(abs(r["loss_inductor"] - r["loss_splitlinear"]) / abs(r["loss_inductor"]) < 2e-2
             and r["max_grad_rel_err"] < 6e-2 and not r["grad_names_differ"] for r in rows)
    torch._dynamo.reset()
    return {"wrapper": how, "packed_groups": len(packed.packed), "steps": rows, "ok": ok}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--out", "--json", dest="json", default=None, help="write the results as JSON here")
    parser.add_argument("--quick", action="store_true", help="tiny model, 2 steps, no Inductor (CPU smoke run)")
    parser.add_argument("--autocast", action=argparse.BooleanOptionalAction, default=True,
                        help="bf16 autocast (default) or float32 (--no-autocast)")
    args = parser.parse_args()
    if args.quick:
        CONFIG.update(QUICK_CONFIG)
        args.steps = min(args.steps, 2)
    local = int(os.environ.get("LOCAL_RANK", 0))
    if args.device == "cuda":
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
        dist.init_process_group("nccl")
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    results = [run(how, device, args.steps, args.autocast, args.quick) for how in ("ddp", "fsdp2")]
    if dist.get_rank() == 0:
        for r in results:
            print(f"{r['wrapper']}: {'losses and gradients match Inductor' if r['ok'] else 'MISMATCH'}")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump({"config": {"world_size": dist.get_world_size(), "device": args.device,
                                      "model": CONFIG, "autocast": args.autocast, "steps": args.steps,
                                      "reference": "eager (--quick)" if args.quick else "inductor"},
                           "results": results, "skipped": []}, f, indent=1)
    ok = all(r["ok"] for r in results)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

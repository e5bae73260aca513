"""Backend option ``fp8`` under FSDP2 (``fully_shard`` + ``pack_fsdp_parameters``), two CPU ranks on gloo.

Each rank trains a tiny float32 Llama with ``fp8="tensorwise"`` (and ``"blockwise"``, with
sizes that are multiples of 128) on its own batch; the
reference is the unsharded model compiled the same way, run on every rank's batch, with
the gradients averaged as FSDP2 averages them. FP8 scales depend only on the (full,
all-gathered) weights and each batch, so losses are equal and gradients equal up to the
order of the cross-rank sum; the weight cache (when turned on) must not serve a stale cast
across all-gathers, reshards and optimizer steps.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from _dist import cpu_mesh, spawn

import splitlinear
from splitlinear.distributed import pack_fsdp_parameters

transformers = pytest.importorskip("transformers")

CONFIG = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=64, max_position_embeddings=64, attn_implementation="eager")
OPTIONS = {"fallback": "eager", "fp8": "tensorwise"}


def _full(t: torch.Tensor) -> torch.Tensor:
    return t.full_tensor() if hasattr(t, "full_tensor") else t


#: Sizes the block-scaled recipe takes: K and every part's rows multiples of 128 (q 256, k/v 128).
BLOCK_CONFIG = {**CONFIG, "hidden_size": 256, "intermediate_size": 256, "head_dim": 64}


def _worker(reshard_after_forward: bool, cache: bool, recipe: str = "tensorwise") -> None:
    from torch.distributed.fsdp import fully_shard

    options = {**OPTIONS, "fp8": recipe}
    if cache:
        options["fp8_weight_cache"] = True  # off: the default
    config = BLOCK_CONFIG if recipe == "blockwise" else CONFIG

    rank = dist.get_rank()
    torch.manual_seed(7)
    reference = transformers.LlamaForCausalLM(transformers.LlamaConfig(**config))
    model = copy.deepcopy(reference)
    mesh = cpu_mesh()
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh, reshard_after_forward=reshard_after_forward)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard_after_forward)
    pack_fsdp_parameters(model)
    compiled = torch.compile(model, backend="splitlinear", options=options)
    compiled_ref = torch.compile(reference, backend="splitlinear", options=options)
    opts = [torch.optim.AdamW(m.parameters(), lr=1e-2) for m in (reference, model)]
    for step in range(3):
        g = torch.Generator().manual_seed(100 + step)
        batches = [torch.randint(0, config["vocab_size"], (2, 16), generator=g) for _ in range(2)]
        ref_losses = [compiled_ref(input_ids=ids, labels=ids, use_cache=False).loss for ids in batches]
        torch.stack(ref_losses).mean().backward()
        splitlinear.reset_stats()
        out = compiled(input_ids=batches[rank], labels=batches[rank], use_cache=False)
        loss = out.loss
        if not cache:
            # Regression: the cache, then on by default, kept W8 and W8ᵀ of every layer's all-gathered
            # weights (2 bytes per unsharded element) through the backward, and never hit.
            assert splitlinear.ops.fp8_weight_cache_info()["bytes"] == 0
        if step == 0:
            # q/k/v, o, gate/up and down of both layers in FP8 (lm_head stays bf16 by default): the
            # logits are FP8's, far from the float32 model's (a reordered float32 sum moves them ~1e-6).
            assert splitlinear.stats()["regions_matched"] >= 4
            with torch.no_grad():
                plain = reference(input_ids=batches[rank], use_cache=False).logits
            gap = ((out.logits.detach() - plain).abs().max() / plain.abs().max()).item()
            assert gap > 1e-3, f"logits within {gap:.1e} of float32: FP8 did not run"
        loss.backward()
        if recipe != "blockwise":
            assert splitlinear.stats()["scaled_views"] > 0  # the FP8 GEMMs ran
        torch.testing.assert_close(loss, ref_losses[rank].detach(), rtol=0, atol=0)
        for (name, p_ref), p in zip(reference.named_parameters(), model.parameters()):
            if p_ref.grad is None:
                assert p.grad is None, name
                continue
            torch.testing.assert_close(_full(p.grad), p_ref.grad, rtol=1e-5, atol=1e-7, msg=f"step {step} {name}")
        for opt in opts:
            opt.step()
            opt.zero_grad()
    for (name, p_ref), p in zip(reference.named_parameters(), model.parameters()):
        torch.testing.assert_close(_full(p.detach()), p_ref.detach(), rtol=1e-5, atol=1e-6, msg=name)


@pytest.mark.parametrize(("reshard_after_forward", "cache"), [(True, True), (False, True), (True, False)])
def test_fp8_training_under_fsdp2_matches_unsharded(op: object, tmp_path: Path, reshard_after_forward: bool,
                                                    cache: bool) -> None:
    """With the weight cache on, it must not serve a stale cast; with it off (the default), no FP8
    weight is kept past the forward."""
    spawn(_worker, tmp_path, reshard_after_forward, cache)


def test_blockwise_training_under_fsdp2_matches_unsharded(op: object, tmp_path: Path) -> None:
    """``fp8="blockwise"`` (1x128 activation blocks, 128x128 weight blocks per part) on the
    all-gathered weights: losses equal to the unsharded model's, gradients up to the order of the
    cross-rank sum."""
    spawn(_worker, tmp_path, True, False, "blockwise")

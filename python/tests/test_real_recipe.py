"""The training recipe users run, on real transformers architectures.

Llama and Qwen2 (random small configs, float32 Parameters), sibling
projections packed with ``pack_parameters``, ``gradient_checkpointing_enable()``
(non-reentrant activation checkpointing per decoder layer), compiled with
``backend="splitlinear"``, trained 3 AdamW steps under bfloat16 autocast. Losses
and every gradient must match the same model trained eagerly, the q/k/v and
gate/up siblings of every layer must be fused (inside the checkpointed
subgraphs), and nothing may recompile after the first step.
"""

from __future__ import annotations

import copy

import pytest
import torch
from _util import graph_breaks, graphs, op_runs

import splitlinear
from splitlinear.packing import pack_parameters

transformers = pytest.importorskip("transformers")

LAYERS = 2
CONFIG = dict(hidden_size=64, intermediate_size=160, num_hidden_layers=LAYERS, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=256, max_position_embeddings=128,
              attn_implementation="eager")


def _build(arch: str, device: str) -> torch.nn.Module:
    torch.manual_seed(120)
    if arch == "llama":
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG))
    else:
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**CONFIG))
    return model.to(device)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """Max error relative to the reference's largest magnitude."""
    return ((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-12)).item()


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_bf16_autocast_checkpointing_adamw(op: object, device: str, arch: str) -> None:
    reference = _build(arch, device)
    model = copy.deepcopy(reference)
    report = pack_parameters(model)
    assert len(report.packed) == 2 * LAYERS  # q/k/v and gate/up per layer
    for m in (reference, model):
        m.gradient_checkpointing_enable()
        m.train()
    compiled = torch.compile(model, backend="splitlinear")
    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-3) for m in (reference, model)]

    graphs_after: list[int] = []
    generator = torch.Generator().manual_seed(121)
    for step in range(3):
        ids = torch.randint(0, CONFIG["vocab_size"], (2, 24), generator=generator).to(device)
        losses = []
        for fn in (reference, compiled):
            with torch.autocast(device, dtype=torch.bfloat16):
                loss = fn(input_ids=ids, labels=ids, use_cache=False).loss
            loss.backward()
            losses.append(loss.detach())
        assert _rel(losses[1], losses[0]) < 2e-2, (step, losses)
        for (name, p_ref), p in zip(reference.named_parameters(), model.parameters()):
            assert p.grad is not None and p.grad.dtype == torch.float32, name
            assert _rel(p.grad, p_ref.grad) < 6e-2, (step, name, _rel(p.grad, p_ref.grad))
        for opt in optimizers:
            opt.step()
            opt.zero_grad()
        graphs_after.append(graphs())

    stats = splitlinear.stats()
    # One region per sibling group per layer, found inside the checkpointed subgraphs.
    assert stats["regions_matched"] == 2 * LAYERS, stats
    assert graphs_after[1] == graphs_after[2], f"recompiled after step 2: {graphs_after}"
    assert graph_breaks() == 0
    assert op_runs() > 0 and stats["views"] > 0, stats  # packed parts are used in place

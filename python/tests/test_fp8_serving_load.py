"""Loading state dicts across converted and unconverted models never gives silently wrong numbers.

Regressions (new-user report): ``state_dict(keep_vars=True)`` of a converted model loaded into an
unconverted one with ``strict=False`` cast the FP8 bytes to bf16 without their scales, and an
unconverted model's state dict loaded into a converted one with ``strict=False`` cast the bf16
weights to FP8 without scales (both only listed keys, no error). Each case now raises naming the
entry, and the target keeps its tensors; the refused entries are not listed again as missing keys.
"""

from __future__ import annotations

import copy

import pytest
import torch
from _fp8_ref import E4M3
from torch import nn

transformers = pytest.importorskip("transformers")
serving = pytest.importorskip("splitlinear.serving")

Q = "model.layers.0.self_attn.q_proj"


def _llama(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=96)
    return transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).eval()


def _logits(model: nn.Module) -> torch.Tensor:
    ids = torch.randint(0, 96, (2, 7), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        return model(input_ids=ids).logits


def _snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    """The projections' tensors (PyTorch still copies the other entries before it raises)."""
    return {k: v.detach().clone() for k, v in model.state_dict().items() if "_proj." in k}


def _assert_unchanged(model: nn.Module, before: dict[str, torch.Tensor]) -> None:
    after = model.state_dict()
    for k, v in before.items():
        assert torch.equal(after[k].view(torch.uint8) if v.dtype == E4M3 else after[k],
                           v.view(torch.uint8) if v.dtype == E4M3 else v), k


def test_keep_vars_state_dict_into_unconverted_model_raises(op) -> None:
    source = _llama(1)
    serving.convert_to_fp8_serving(source)
    target = _llama(2)
    before = _snapshot(target)
    sd = source.state_dict(keep_vars=True)
    entry = sd[Q + ".weight"]
    q = source.get_submodule(Q)
    assert isinstance(entry, nn.Parameter) and entry.dim() == 1 and not entry.requires_grad
    assert entry.data_ptr() == q.weight.data_ptr()  # an alias, no copy
    with pytest.raises(RuntimeError, match=f"size mismatch for {Q}.weight"):
        target.load_state_dict(sd, strict=False)
    _assert_unchanged(target, before)


def test_keep_vars_state_dict_into_converted_model_round_trips(op) -> None:
    source = _llama(3)
    serving.convert_to_fp8_serving(source)
    target = _llama(4)
    serving.convert_to_fp8_serving(target)
    target.load_state_dict(source.state_dict(keep_vars=True))
    assert torch.equal(_logits(target), _logits(source))
    assert target.get_submodule(Q).weight.shape == (64, 64)


@pytest.mark.parametrize("strict", [True, False])
def test_unconverted_state_dict_into_converted_model_raises(op, strict: bool) -> None:
    target = _llama(5)
    serving.convert_to_fp8_serving(target)
    before = _snapshot(target)
    with pytest.raises(RuntimeError, match=rf"Fp8ServingLinear {Q}: the checkpoint holds a torch.bfloat16 weight"):
        target.load_state_dict(_llama(6).state_dict(), strict=strict)
    _assert_unchanged(target, before)


def test_refused_entries_are_not_listed_as_missing(op) -> None:
    """Regression (new-user report): a plain checkpoint loaded into a converted model listed every
    refused weight and scale under "Missing key(s)" before the per-module messages."""
    target = _llama(5)
    serving.convert_to_fp8_serving(target)
    with pytest.raises(RuntimeError) as info:
        target.load_state_dict(_llama(6).state_dict(), strict=True)
    message = str(info.value)
    assert "Missing key(s)" not in message
    assert message.count("Fp8ServingLinear model.layers.0.") == 7  # q, k, v, o, gate, up, down
    # The next load into the same model lists a genuinely missing module again.
    sd = {k: v for k, v in _llama(6).state_dict().items() if "_proj." not in k}
    result = target.load_state_dict(sd, strict=False)
    assert Q + ".weight" in result.missing_keys and Q + ".weight_scale_inv" in result.missing_keys


@pytest.mark.parametrize("dropped", ["weight", "weight_scale_inv"])
def test_fp8_weight_and_scale_load_together(op, dropped: str) -> None:
    source = _llama(7)
    serving.convert_to_fp8_serving(source)
    target = _llama(8)
    serving.convert_to_fp8_serving(target)
    before = _snapshot(target)
    sd = source.state_dict()
    del sd[f"{Q}.{dropped}"]
    kept = "weight_scale_inv" if dropped == "weight" else "weight"
    with pytest.raises(RuntimeError, match=rf"holds {Q}.{kept} but not {Q}.{dropped}"):
        target.load_state_dict(sd, strict=False)
    # Only the broken module's entries are refused; the rest loaded.
    after = target.state_dict()
    assert torch.equal(after[f"{Q}.weight"].view(torch.uint8), before[f"{Q}.weight"].view(torch.uint8))
    k = "model.layers.0.self_attn.k_proj.weight"
    assert torch.equal(after[k].view(torch.uint8), sd[k].view(torch.uint8))


def test_partial_state_dict_without_the_module_loads(op) -> None:
    """strict=False with neither entry of a module (a partial checkpoint) is fine."""
    source = _llama(9)
    serving.convert_to_fp8_serving(source)
    target = copy.deepcopy(source)
    sd = {k: v for k, v in source.state_dict().items() if not k.startswith(Q + ".")}
    result = target.load_state_dict(sd, strict=False)
    assert set(result.missing_keys) == {Q + ".weight", Q + ".weight_scale_inv"}
    assert torch.equal(_logits(target), _logits(source))

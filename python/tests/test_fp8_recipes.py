"""Backend option ``fp8`` in the recipes users combine it with, each against eager ``fp8_linear``.

bfloat16 autocast over float32 parameters, activation checkpointing, a dynamic batch,
``no_grad`` and ``inference_mode``, frozen base weights with LoRA adapters (peft), and a
combination refused with an error naming the option.
"""

from __future__ import annotations

import copy

import pytest
import torch
from _fp8_models import FP8_REGIONS, Block
from _util import compile_sl, graphs
from torch.utils.checkpoint import checkpoint

import splitlinear


def _close(a: torch.Tensor, b: torch.Tensor, rtol: float = 1e-5) -> None:
    torch.testing.assert_close(a.float(), b.float(), rtol=rtol, atol=rtol)


def _pair(seed: int) -> tuple[Block, Block]:
    torch.manual_seed(seed)
    model = Block()
    return model, copy.deepcopy(model)


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise_with_gw_hp"])
def test_bf16_autocast_fp32_params(op, recipe: str) -> None:
    model, ref = _pair(21)
    compiled = compile_sl(model, fp8=recipe)
    x = torch.randn(2, 6, 64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = compiled(x)
        want = ref.reference(x, recipe)
    assert out[0].dtype == torch.bfloat16
    for a, b in zip(out, want):
        _close(a, b)
    (out[0].float().square().mean() + out[1].float().mean()).backward()
    (want[0].float().square().mean() + want[1].float().mean()).backward()
    for (name, p), r in zip(model.named_parameters(), ref.parameters()):
        assert p.grad.dtype == torch.float32, name  # master weights get float32 gradients
        _close(p.grad, r.grad, rtol=1e-2)
    assert splitlinear.stats()["regions_matched"] == FP8_REGIONS + 1


class _Checkpointed(torch.nn.Module):
    def __init__(self, block: Block) -> None:
        super().__init__()
        self.block = block

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return checkpoint(self.block, x, use_reentrant=False)


def test_activation_checkpointing(op) -> None:
    model, ref = _pair(22)
    compiled = compile_sl(_Checkpointed(model), fp8="rowwise")
    x = torch.randn(3, 4, 64, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    out = compiled(x)
    want = checkpoint(lambda t: ref.reference(t, "rowwise"), x_ref, use_reentrant=False)
    for a, b in zip(out, want):
        _close(a, b)
    out[0].square().mean().backward()
    want[0].square().mean().backward()
    _close(x.grad, x_ref.grad)
    for (name, p), r in zip(model.named_parameters(), ref.parameters()):
        if r.grad is not None:
            _close(p.grad, r.grad)
    # The regions were found inside the checkpointed subgraph.
    assert splitlinear.stats()["regions_matched"] == FP8_REGIONS + 1


def test_dynamic_batch(op) -> None:
    model, ref = _pair(23)
    compiled = compile_sl(model, fp8="tensorwise")
    for rows in (3, 17, 40, 5):  # M = rows * 2: not multiples of 16 either
        x = torch.randn(rows, 2, 64)
        for a, b in zip(compiled(x), ref.reference(x, "tensorwise")):
            _close(a, b)
    assert graphs() <= 2  # the first shape, then one dynamic graph


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_no_grad_and_inference_mode(op, mode: str) -> None:
    model, ref = _pair(24)
    compiled = compile_sl(model, fp8="rowwise")
    ctx = torch.no_grad if mode == "no_grad" else torch.inference_mode
    x = torch.randn(4, 64)
    with ctx():
        out = compiled(x)
        want = ref.reference(x, "rowwise")
    assert not out[0].requires_grad
    for a, b in zip(out, want):
        _close(a, b)


def test_lora_frozen_base(op) -> None:
    peft = pytest.importorskip("peft")
    torch.manual_seed(25)
    base = Block()
    config = peft.LoraConfig(r=16, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"],
                             lora_dropout=0.0, init_lora_weights=False)
    model = peft.get_peft_model(base, config)
    ref = copy.deepcopy(model)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    compiled = compile_sl(model, fp8="tensorwise")
    x = torch.randn(2, 5, 64)
    out = compiled(x)
    out[0].square().mean().backward()

    # Reference: every linear the backend puts in FP8 as one eager fp8_linear each, with the
    # siblings (q/k/v base, gate/up, the lora_A of q and v reading one input) grouped alike:
    # compare at FP8 accuracy against the plain float32 model and check each LoRA gradient.
    want = ref(x)
    for a, b in zip(out, want):
        assert ((a - b).norm() / b.norm()).item() < 5e-2
    want[0].square().mean().backward()
    for (name, p), r in zip(model.named_parameters(), ref.parameters()):
        if p.requires_grad:
            err = ((p.grad - r.grad).norm() / r.grad.norm()).item()
            assert err < 0.15, (name, err)
        else:
            assert p.grad is None, name  # frozen base: no weight gradient
    # Each adapter's A [16, 64] and B [N, 16] are eligible: base groups plus adapters in FP8.
    assert splitlinear.stats()["regions_matched"] > FP8_REGIONS


def test_cudagraph_mode_runs_uncached(op) -> None:
    """``mode="reduce-overhead"`` (on CPU tensors: nothing to capture): eager's numbers, and no weight
    cache (a replay casts anyway; a warm-up run's entry would be a block the graph pool does not track)."""
    op.fp8_weight_cache_clear()
    model, ref = _pair(26)
    compiled = compile_sl(model, fp8="tensorwise", mode="reduce-overhead", fp8_weight_cache=True)
    x = torch.randn(4, 64)
    for a, b in zip(compiled(x), ref.reference(x, "tensorwise")):
        _close(a, b)
    assert op.fp8_weight_cache_info()["misses"] == 0


def test_float64_model_refuses_nothing_and_stays_float64(op) -> None:
    """FP8 quantizes from float32/float16/bfloat16: a float64 model keeps float64 (plain regions)."""
    model, _ = _pair(27)
    model = model.double()
    x = torch.randn(3, 64, dtype=torch.float64)
    out = compile_sl(model, fp8="tensorwise")(x)
    want = model(x)
    for a, b in zip(out, want):
        torch.testing.assert_close(a, b)
    assert splitlinear.stats()["regions_matched"] == 3


def test_many_parts_without_bias_backward(op) -> None:
    """Regression: the backward wrote bias-gradient slots past its list without biases, once the
    parts outnumbered the non-tensor inputs (heap corruption; a LoRA q/k/v/lora_A group crashed)."""
    import _fp8_ref as ref

    torch.manual_seed(28)
    x = torch.randn(10, 64, requires_grad=True)
    ws = [(torch.randn(16, 64) * s).requires_grad_() for s in (1.0, 0.1, 0.5, 2.0, 0.01, 0.3)]
    dy = torch.randn(10, 96)
    op.fp8_linear(x, ws).backward(dy)
    want = ref.fp8_linear(x, ws, None, "tensorwise", dy=dy)
    ref.assert_within_ulp(x.grad, want.dx, torch.float32, what="dx")
    ref.assert_within_ulp(torch.cat([w.grad for w in ws]), want.dw, torch.float32, what="dw")


def test_double_backward_raises(op) -> None:
    """Unsupported: a gradient of the gradient raises (naming the op), never a missing term."""
    model, _ = _pair(29)
    compiled = compile_sl(model, fp8="tensorwise")
    x = torch.randn(2, 64, requires_grad=True)
    y = compiled(x)[0].sum()
    with pytest.raises(RuntimeError, match=r"splitlinear.fp8_linear: double backward \(create_graph=True\)"):
        torch.autograd.grad(y, x, create_graph=True)


_DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 9) else [])


@pytest.mark.parametrize("device", _DEVICES)
def test_cudagraph_mode_training_equals_the_cached_graph(op, device: str) -> None:
    """``mode="reduce-overhead"`` training runs without the weight cache, so each backward casts W8ᵀ
    again from the updated weights (on CUDA inside the replayed graphs). Three SGD steps give bit
    for bit the losses and gradients of the same graph compiled without CUDA graphs, which keeps
    the forward's cached W8ᵀ."""
    op.fp8_weight_cache_clear()
    torch.manual_seed(28)
    models = [Block().to(device), None]
    models[1] = copy.deepcopy(models[0])
    compiled = [compile_sl(models[0], fp8="tensorwise", mode="reduce-overhead", fp8_weight_cache=True),
                compile_sl(models[1], fp8="tensorwise", fp8_weight_cache=True)]
    opts = [torch.optim.SGD(m.parameters(), lr=0.05) for m in models]
    for step in range(3):
        x = torch.randn(8, 64, generator=torch.Generator().manual_seed(step)).to(device)
        losses = []
        for i, fn in enumerate(compiled):
            loss = sum(t.square().mean() for t in fn(x))
            loss.backward()
            losses.append(loss.detach().clone())
            if i == 0 and step == 0:
                # The CUDA-graph model ran first and never used the cache: its backward recast.
                assert op.fp8_weight_cache_info()["misses"] == 0
        assert torch.equal(losses[0], losses[1]), f"step {step}"
        for (name, a), b in zip(models[0].named_parameters(), models[1].parameters()):
            assert torch.equal(a.grad, b.grad), f"step {step}: {name}"
        for opt in opts:
            opt.step()
            opt.zero_grad()
    op.fp8_weight_cache_clear()

"""FP8 serving with block scales (``convert_to_fp8_serving(weight_scaling="blockwise", ...)``).

Weights in 128x128 blocks per part (exact float32 scales, as DeepSeek-V3's checkpoints), the input
in 1x128 blocks per call, one block-scaled GEMM per group. Checked against the float64 emulation of
``_fp8_ref`` (``quantize_blocks`` / ``block_gemm``) on fresh random data, on the CPU and, on an
sm_90 GPU, through cuBLASLt; compiled siblings against the eager converted model; save/load; and
the errors.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from _fp8_ref import BLOCK, assert_same_fp8, assert_within_ulp, block_gemm, quantize_blocks, tensor_core_bound
from torch import nn

import splitlinear

transformers = pytest.importorskip("transformers")
serving = pytest.importorskip("splitlinear.serving")

BLOCKWISE = {"weight_scaling": "blockwise", "activation_scaling": "blockwise"}


def _skip_unless_sm90(device: str) -> None:
    if device == "cuda" and torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("cuBLASLt's block scales run on sm_90 only")


def _llama(seed: int, device: str = "cpu") -> nn.Module:
    """Every projection a multiple of 128 (q 256, k/v 128, gate/up 256); lm_head (96 rows) skipped."""
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=256, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=96)
    return transformers.LlamaForCausalLM(cfg).to(device).eval()


def test_module_matches_emulation(op, device: str) -> None:
    """Each part's stored blocks are the emulation's bytes; each output is the float64 block GEMM's."""
    _skip_unless_sm90(device)
    torch.manual_seed(5)
    ref = nn.ModuleDict({n: nn.Linear(256, r, bias=True) for n, r in (("q", 256), ("k", 128), ("v", 128))})
    with torch.no_grad():
        ref["k"].weight.mul_(1e-3)  # a part of another magnitude keeps its own blocks
    model = copy.deepcopy(ref).to(device)
    report = serving.convert_to_fp8_serving(model, groups=[["q", "k", "v"]], **BLOCKWISE)
    assert report.converted == [["q", "k", "v"]]
    x = torch.randn(3, 5, 256, device=device)
    xq, sx = quantize_blocks(x.reshape(-1, 256), 1, pow2=False)
    with torch.no_grad():
        for name in "qkv":
            lin, m = ref[name], model[name]
            w8, sw = quantize_blocks(lin.weight, BLOCK, pow2=False)
            assert_same_fp8(m.weight.cpu(), w8, what=f"{name}.weight")
            torch.testing.assert_close(m.weight_scale_inv.cpu(), sw, rtol=0, atol=0)
            got = m(x)
            assert got.shape == (3, 5, lin.out_features) and got.dtype == torch.float32
            want = block_gemm(xq, sx, w8, sw, lin.bias.detach())
            if device == "cuda":
                # cuBLASLt writes bfloat16, the bias is added in float32 (here compared in bfloat16:
                # a third rounding), with the FP8 tensor cores' accumulation bound.
                assert_within_ulp(got.reshape(15, -1).to(torch.bfloat16), tensor_core_bound(want, 256),
                                  torch.bfloat16, ulps=2.0, what=name)
            else:
                assert_within_ulp(got.reshape(15, -1), want, torch.float32, ulps=4.0, what=name)


def test_group_scales_stack_and_weights_are_packed(op) -> None:
    model = nn.ModuleDict({"gate": nn.Linear(128, 256, bias=False), "up": nn.Linear(128, 384, bias=False)})
    serving.convert_to_fp8_serving(model, groups=[["gate", "up"]], **BLOCKWISE)
    gate, up = model["gate"], model["up"]
    assert up.weight.data_ptr() == gate.weight.data_ptr() + gate.weight.numel()
    assert gate.weight_scale_inv.shape == (2, 1) and up.weight_scale_inv.shape == (3, 1)
    assert up.weight_scale_inv.data_ptr() == gate.weight_scale_inv.data_ptr() + 2 * 4
    assert "weight_scaling=blockwise" in repr(gate) and "activation_scaling=blockwise" in repr(gate)


def test_compiled_fuses_siblings(op, device: str) -> None:
    _skip_unless_sm90(device)
    model = _llama(7, device)
    report = serving.convert_to_fp8_serving(model, **BLOCKWISE)
    assert ("lm_head", "fp8_filter skips it") in report.skipped
    ids = torch.randint(0, 96, (2, 9), device=device)
    with torch.no_grad():
        want = model(ids).logits
        splitlinear.reset_stats()
        got = torch.compile(model, backend="splitlinear", options={"fallback": "eager"})(ids).logits
    stats = splitlinear.stats()
    assert stats["serving_groups_fused"] == 4  # q/k/v and gate/up of 2 layers
    # 4 fused groups and 4 lone linears, each GEMM over packed parts in place: no copies.
    assert stats["scaled_views"] == 8 and stats["scaled_cats"] == 0
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_unpacked_parts_are_copied_and_counted(op) -> None:
    """Parts in separate storages still give the right output, through one counted copy."""
    torch.manual_seed(8)
    model = nn.ModuleDict({"a": nn.Linear(128, 128, bias=False), "b": nn.Linear(128, 128, bias=False)})
    serving.convert_to_fp8_serving(model, groups=[["a"], ["b"]], **BLOCKWISE)
    a, b = model["a"], model["b"]
    x = torch.randn(4, 128)
    splitlinear.reset_stats()
    y = splitlinear.ops.fp8_serving_linear(x, [a.weight, b.weight], [a.weight_scale_inv, b.weight_scale_inv],
                                           axis="blocks")
    assert splitlinear.stats()["scaled_cats"] == 1
    with torch.no_grad():
        torch.testing.assert_close(y, torch.cat([a(x), b(x)], -1), rtol=0, atol=0)


def test_save_and_load_round_trip(op, tmp_path: Path) -> None:
    st = pytest.importorskip("safetensors.torch")
    source = _llama(10)
    serving.convert_to_fp8_serving(source, **BLOCKWISE)
    st.save_model(source, str(tmp_path / "m.safetensors"))
    source.save_pretrained(tmp_path / "hf")
    target = _llama(11)
    serving.convert_to_fp8_serving(target, **BLOCKWISE)
    st.load_model(target, str(tmp_path / "m.safetensors"))
    loaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "hf").eval()
    assert loaded.model.layers[0].self_attn.k_proj.weight_scale_inv.shape == (1, 2)
    ids = torch.randint(0, 96, (2, 6))
    with torch.no_grad():
        want = source(ids).logits
        for other in (target, loaded):
            torch.testing.assert_close(other(ids).logits, want, rtol=0, atol=0)


def test_linears_not_in_blocks_are_skipped_by_name(op) -> None:
    model = nn.ModuleDict({"q": nn.Linear(128, 128), "odd": nn.Linear(128, 64), "k": nn.Linear(96, 128)})
    report = serving.convert_to_fp8_serving(model, **BLOCKWISE)
    assert report.converted == [["q"]]
    reasons = dict(report.skipped)
    assert "multiples of 128" in reasons["odd"] and "multiples of 128" in reasons["k"]


@pytest.mark.parametrize("weight_scaling, activation_scaling",
                         [("blockwise", "rowwise"), ("rowwise", "blockwise"), ("tensorwise", "blockwise")])
def test_blockwise_must_be_both(op, weight_scaling: str, activation_scaling: str) -> None:
    model = nn.ModuleDict({"q": nn.Linear(128, 128)})
    with pytest.raises(ValueError, match="'blockwise' must be both|\"blockwise\" must be both"):
        serving.convert_to_fp8_serving(model, weight_scaling=weight_scaling, activation_scaling=activation_scaling)


def test_op_errors_name_the_argument(op) -> None:
    w8 = torch.zeros(128, 128, dtype=torch.float8_e4m3fn)
    x = torch.randn(2, 128)
    with pytest.raises(RuntimeError, match=r"weight_scale_inv\[0\] must be float32 \[1, 1\]"):
        op.fp8_serving_linear(x, [w8], [torch.ones(128)], axis="blocks")
    with pytest.raises(RuntimeError, match="K = 64 features; axis \"blocks\" needs a multiple of 128"):
        op.fp8_serving_linear(torch.randn(2, 64), [w8[:, :64]], [torch.ones(1, 1)], axis="blocks")
    with pytest.raises(RuntimeError, match=r"weight\[0\] has 64 rows"):
        op.fp8_serving_linear(x, [w8[:64]], [torch.ones(1, 1)], axis="blocks")
    with pytest.raises(RuntimeError, match="input_scale_inv is not supported with axis \"blocks\""):
        op.fp8_serving_linear(x.to(torch.float8_e4m3fn), [w8], [torch.ones(1, 1)], axis="blocks",
                              out_dtype=torch.float32, input_scale_inv=torch.ones(2))
    with pytest.raises(RuntimeError, match="fp8_serving_linear: out_dtype Int is not supported"):
        op.fp8_serving_linear(x, [w8], [torch.ones(1, 1)], axis="blocks", out_dtype=torch.int32)
    with pytest.raises(ValueError, match="block scales need activation_scaling='blockwise'"):
        serving.Fp8ServingLinear(w8, torch.ones(1, 1), None, "rowwise")

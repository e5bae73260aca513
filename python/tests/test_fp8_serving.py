"""FP8 serving weights (``splitlinear.serving``): conversion, eager and compiled forward, save and load.

Every numeric check compares with an independent float64 emulation of
quantize -> dequantize -> GEMM (``_fp8_ref``), or the compiled model with the
eager converted model, on fresh random data. On CUDA (the H200 run) the same
tests go through cuBLASLt or the decode GEMM.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from _fp8_ref import E4M3, cast_parts, quantize, scaled_gemm
from torch import nn

import splitlinear

transformers = pytest.importorskip("transformers")
serving = pytest.importorskip("splitlinear.serving")


def _llama(seed: int, device: str = "cpu", dtype: torch.dtype = torch.float32, tie: bool = False,
           layers: int = 2) -> nn.Module:
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=96,
                                   tie_word_embeddings=tie)
    return transformers.LlamaForCausalLM(cfg).to(device=device, dtype=dtype).eval()


def _emulated(lin: nn.Linear, x: torch.Tensor, weight_scaling: str, activation_scaling: str,
              siblings: list[nn.Linear] | None = None) -> torch.Tensor:
    """float64 emulation of an FP8 serving linear: x quantized per row/tensor, the weight per part/row."""
    parts = [m.weight.detach().cpu().float() for m in (siblings or [lin])]
    index = (siblings or [lin]).index(lin)
    if weight_scaling == "tensorwise":
        q = cast_parts(parts, E4M3)
        offsets = [0]
        for p in parts:
            offsets.append(offsets[-1] + p.shape[0])
        w8 = q.data[offsets[index]:offsets[index + 1]]
        sw = q.row_scale_inv[offsets[index]:offsets[index + 1]]
    else:
        q = quantize(parts[index], E4M3, "rows")
        w8, sw = q.data, q.scale_inv
    qx = quantize(x, E4M3, "rows" if activation_scaling == "rowwise" else "tensor")
    bias = None if lin.bias is None else lin.bias.detach().cpu().double()
    return scaled_gemm(qx.data, qx.scale_inv, w8, sw, bias).exact.reshape(*x.shape[:-1], -1)


@pytest.mark.parametrize("weight_scaling", ["tensorwise", "rowwise"])
@pytest.mark.parametrize("activation_scaling", ["rowwise", "tensorwise"])
def test_eager_module_matches_emulation(op, device: str, weight_scaling: str, activation_scaling: str) -> None:
    torch.manual_seed(3)
    ref = nn.ModuleDict({n: nn.Linear(64, r, bias=True) for n, r in (("q", 64), ("k", 32), ("v", 32))}).to(device)
    model = copy.deepcopy(ref)
    report = serving.convert_to_fp8_serving(model, weight_scaling=weight_scaling,
                                            activation_scaling=activation_scaling, groups=[["q", "k", "v"]])
    assert report.converted == [["q", "k", "v"]]
    x = torch.randn(3, 5, 64, device=device)
    siblings = [ref["q"], ref["k"], ref["v"]]
    with torch.no_grad():
        for name, lin in zip("qkv", siblings):
            got = model[name](x)
            want = _emulated(lin, x, weight_scaling, activation_scaling, siblings)
            assert got.shape == (3, 5, lin.out_features) and got.dtype == torch.float32
            # fp32 output: the GEMM's own rounding only (CPU exact; the H200's FP8 MMA keeps ~14 bits).
            tol = 2.0**-12 if device == "cuda" else 1e-6
            torch.testing.assert_close(got.double().cpu(), want, rtol=tol, atol=tol * want.abs().max().item())


def test_group_is_packed_with_per_part_scales(op) -> None:
    """One FP8 buffer per group, row blocks adjacent; a part 10^4 times smaller keeps its own accuracy."""
    torch.manual_seed(4)
    model = nn.ModuleDict({"q": nn.Linear(64, 64, bias=False), "k": nn.Linear(64, 32, bias=False),
                           "v": nn.Linear(64, 32, bias=False)})
    with torch.no_grad():
        model["k"].weight.mul_(1e-4)
    originals = {n: model[n].weight.detach().clone() for n in "qkv"}
    serving.convert_to_fp8_serving(model, weight_scaling="tensorwise", groups=[["q", "k", "v"]])
    q, k, v = (model[n] for n in "qkv")
    assert q.weight.untyped_storage().data_ptr() == k.weight.untyped_storage().data_ptr()
    assert k.weight.data_ptr() == q.weight.data_ptr() + q.weight.numel()
    assert v.weight.data_ptr() == k.weight.data_ptr() + k.weight.numel()
    assert [m.weight_scale_inv.numel() for m in (q, k, v)] == [1, 1, 1]
    for n in "qkv":
        m = model[n]
        deq = m.weight.float() * m.weight_scale_inv
        rel = ((deq - originals[n]).norm() / originals[n].norm()).item()
        assert rel < 0.04, (n, rel)  # e4m3 with its own scale: a few percent at most


def test_rowwise_scales_are_packed_too(op) -> None:
    """The default (one scale per row): the group's scale vectors are adjacent, so the fused GEMM reads
    them in place."""
    torch.manual_seed(14)
    model = nn.ModuleDict({"gate": nn.Linear(64, 128, bias=False), "up": nn.Linear(64, 128, bias=False)})
    originals = [model[n].weight.detach().clone() for n in ("gate", "up")]
    serving.convert_to_fp8_serving(model, groups=[["gate", "up"]])
    gate, up = model["gate"], model["up"]
    assert gate.weight_scale_inv.shape == (128,) and up.weight_scale_inv.shape == (128,)
    assert up.weight_scale_inv.data_ptr() == gate.weight_scale_inv.data_ptr() + 128 * 4
    for m, w in zip((gate, up), originals):
        deq = m.weight.float() * m.weight_scale_inv[:, None]
        row_rel = ((deq - w).norm(dim=1) / w.norm(dim=1)).max().item()
        assert row_rel < 0.04, row_rel


def _fp8_linears(model: nn.Module) -> list[str]:
    return [n for n, m in model.named_modules() if isinstance(m, serving.Fp8ServingLinear)]


def test_llama_conversion_report_and_filter(op) -> None:
    model = _llama(5)
    report = serving.convert_to_fp8_serving(model)
    assert len(report.converted) == 2 * 4  # per layer: q/k/v, gate/up, o, down
    assert ["model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj",
            "model.layers.0.self_attn.v_proj"] in report.converted
    assert report.skipped == [("lm_head", "fp8_filter skips it")]
    assert isinstance(model.lm_head, nn.Linear) and not isinstance(model.lm_head, serving.Fp8ServingLinear)

    everything = _llama(5)
    report = serving.convert_to_fp8_serving(everything, fp8_filter=lambda fqn: "mlp" not in fqn)
    assert all("mlp" not in n for n in _fp8_linears(everything))
    assert isinstance(everything.lm_head, serving.Fp8ServingLinear)


@pytest.mark.parametrize("bad", ["lm_head", 3, ["lm_head", 3]], ids=["str", "int", "mixed"])
def test_bad_filter_raises_naming_it(op, bad: object) -> None:
    """Regression (new-user report): a lone string was read as one pattern per character, so
    fp8_filter="lm_head" converted lm_head; other bad values raised bare TypeErrors."""
    model = _llama(5)
    with pytest.raises(ValueError, match="convert_to_fp8_serving: fp8_filter must be a callable"):
        serving.convert_to_fp8_serving(model, fp8_filter=bad)  # type: ignore[arg-type]
    assert not _fp8_linears(model)  # refused before anything was converted


def test_filter_that_raises_names_the_module(op) -> None:
    def flt(fqn: str) -> bool:
        raise KeyError(fqn)

    with pytest.raises(ValueError, match=r"convert_to_fp8_serving: fp8_filter raised KeyError on module "
                                         r"'model.layers.0.self_attn.q_proj'"):
        serving.convert_to_fp8_serving(_llama(5), fp8_filter=flt)


def test_filter_returning_non_bool_names_the_module(op) -> None:
    """A filter answering a string (truthy) is refused rather than read as "keep"."""
    model = _llama(5)
    with pytest.raises(ValueError, match=r"convert_to_fp8_serving: fp8_filter must return True or False, "
                                         r"got str 'yes' on module 'model.layers.0.self_attn.q_proj'"):
        serving.convert_to_fp8_serving(model, fp8_filter=lambda fqn: "yes")
    assert not _fp8_linears(model)


def test_float64_input_raises_naming_the_module(op) -> None:
    """Regression (new-user report): after model.double() the forward failed inside the op,
    naming neither the module nor the cast."""
    model = _llama(5)
    serving.convert_to_fp8_serving(model)
    model.double()
    assert model.model.layers[0].self_attn.q_proj.weight.dtype == E4M3
    with torch.no_grad(), pytest.raises(RuntimeError, match=r"Fp8ServingLinear\(64, 64\): the input is "
                                                            r"torch.float64.*\.double\(\)"):
        model(input_ids=torch.randint(0, 96, (1, 5)))


def test_tied_and_unaligned_linears_are_skipped(op) -> None:
    model = _llama(6, tie=True)
    report = serving.convert_to_fp8_serving(model, fp8_filter=[])
    assert ("lm_head", "its weight is tied to another module's (converting would untie them)") in report.skipped
    assert model.lm_head.weight is model.model.embed_tokens.weight

    odd = nn.ModuleDict({"a": nn.Linear(64, 40), "b": nn.Linear(24, 64)})
    report = serving.convert_to_fp8_serving(odd)
    assert report.converted == [] and [n for n, _ in report.skipped] == ["a", "b"]
    assert "multiples of 16" in report.skipped[0][1]

    with pytest.raises(ValueError, match="weight_scaling"):
        serving.convert_to_fp8_serving(nn.Linear(16, 16), weight_scaling="blockwise")
    with pytest.raises(ValueError, match="'nope', which is not an nn.Linear"):
        serving.convert_to_fp8_serving(odd, groups=[["a", "nope"]])


def _qwen2(seed: int, device: str = "cpu", dtype: torch.dtype = torch.float32) -> nn.Module:
    """Qwen2: q/k/v with biases."""
    torch.manual_seed(seed)
    cfg = transformers.Qwen2Config(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=96)
    return transformers.Qwen2ForCausalLM(cfg).to(device=device, dtype=dtype).eval()


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_compiled_fuses_siblings(op, device: str, fallback: str, arch: str) -> None:
    model = (_llama if arch == "llama" else _qwen2)(7, device=device)
    serving.convert_to_fp8_serving(model)
    ids = torch.randint(0, 96, (2, 9), device=device)
    with torch.no_grad():
        want = model(ids).logits
        splitlinear.reset_stats()
        compiled = torch.compile(model, backend="splitlinear", options={"fallback": fallback})
        got = compiled(ids).logits
    stats = splitlinear.stats()
    assert stats["serving_groups_fused"] == 4  # q/k/v and gate/up of 2 layers
    # 4 fused groups and 4 lone linears (o_proj, down_proj), all on packed parts: no copies.
    assert stats["scaled_views"] == 8 and stats["scaled_cats"] == 0 and stats["scaled_per_part_gemms"] == 0
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


class _QKVOutputs(nn.Module):
    """Sibling projections whose outputs are returned, indexed and ``.view``-ed (strides observed)."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(64, 64), nn.Linear(64, 32), nn.Linear(64, 32)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.q(x), self.k(x)[0], self.v(x).view(-1)


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
def test_compiled_group_outputs_are_dense(op, device: str, fallback: str) -> None:
    """Regression (same kind as the horizontal regions' report): a fused group's outputs are
    splits of one buffer; where their strides are observed (graph outputs, ``q[0]``, ``.view``)
    they are made dense, as eager's are, and the values are the eager converted model's."""
    torch.manual_seed(29)
    model = _QKVOutputs().to(device)
    serving.convert_to_fp8_serving(model, groups=[["q", "k", "v"]])
    x = torch.randn(3, 5, 64, device=device)
    with torch.no_grad():
        want = model(x)
        splitlinear.reset_stats()
        got = torch.compile(model, backend="splitlinear", fullgraph=True, options={"fallback": fallback})(x)
    assert splitlinear.stats()["serving_groups_fused"] == 1
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6)
        assert g.stride() == w.stride() and g.is_contiguous()
        g.view(-1)


def test_compiled_under_autocast_fuses_biased_siblings(op) -> None:
    """bf16 autocast over a float32 model: the fp32 biases are cast per call, and the siblings
    still share one GEMM (the casts move before it)."""
    model = _qwen2(15)
    serving.convert_to_fp8_serving(model)
    ids = torch.randint(0, 96, (2, 7))
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        want = model(ids).logits
        splitlinear.reset_stats()
        got = torch.compile(model, backend="splitlinear", options={"fallback": "eager"})(ids).logits
    assert want.dtype == torch.bfloat16 and got.dtype == torch.bfloat16
    assert splitlinear.stats()["serving_groups_fused"] == 4
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_compiled_dynamic_batch_and_inference_mode(op) -> None:
    model = _llama(8)
    serving.convert_to_fp8_serving(model)
    compiled = torch.compile(model, backend="splitlinear")
    for batch, seq in ((1, 5), (3, 5), (2, 11)):
        ids = torch.randint(0, 96, (batch, seq))
        with torch.inference_mode():
            got = compiled(ids).logits
            want = model(ids).logits
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_input_requiring_grad_raises(op) -> None:
    lin = nn.Linear(32, 16)
    model = nn.Sequential(lin)
    serving.convert_to_fp8_serving(model)
    x = torch.randn(4, 32, requires_grad=True)
    with pytest.raises(RuntimeError, match="Fp8ServingLinear: the input requires a gradient"):
        model(x)
    with torch.no_grad():
        assert model(x).shape == (4, 16)


def test_to_dtype_keeps_fp8_weights_and_scales(op) -> None:
    model = _llama(9)
    serving.convert_to_fp8_serving(model)
    q = model.model.layers[0].self_attn.q_proj
    weight, scale = q.weight.detach().clone(), q.weight_scale_inv.clone()
    model.to(torch.bfloat16)
    assert q.weight.dtype == E4M3 and torch.equal(q.weight.view(torch.uint8), weight.view(torch.uint8))
    assert q.weight_scale_inv.dtype == torch.float32 and torch.equal(q.weight_scale_inv, scale)
    assert model.lm_head.weight.dtype == torch.bfloat16
    ids = torch.randint(0, 96, (1, 4))
    with torch.no_grad():
        assert model(ids).logits.dtype == torch.bfloat16


def _same_outputs(a: nn.Module, b: nn.Module) -> None:
    ids = torch.randint(0, 96, (2, 6))
    with torch.no_grad():
        torch.testing.assert_close(a(ids).logits, b(ids).logits, rtol=0, atol=0)


def _assert_packed(model: nn.Module) -> None:
    attn = model.model.layers[0].self_attn
    q, k, v = attn.q_proj, attn.k_proj, attn.v_proj
    assert k.weight.data_ptr() == q.weight.data_ptr() + q.weight.numel()
    assert v.weight.data_ptr() == k.weight.data_ptr() + k.weight.numel()


def test_safetensors_and_torch_save_round_trip(op, tmp_path: Path) -> None:
    st = pytest.importorskip("safetensors.torch")
    source = _llama(10)
    serving.convert_to_fp8_serving(source, weight_scaling="tensorwise")
    st.save_model(source, str(tmp_path / "m.safetensors"))
    torch.save(source.state_dict(), tmp_path / "m.pt")
    for load in ("safetensors", "torch"):
        target = _llama(11)  # other random weights, same structure
        serving.convert_to_fp8_serving(target, weight_scaling="tensorwise")
        if load == "safetensors":
            st.load_model(target, str(tmp_path / "m.safetensors"))
        else:
            target.load_state_dict(torch.load(tmp_path / "m.pt"))
        _assert_packed(target)
        _same_outputs(source, target)
    entry = st.load_file(str(tmp_path / "m.safetensors"))["model.layers.0.self_attn.k_proj.weight"]
    assert entry.dtype == E4M3 and entry.shape == (32 * 64,)  # flattened: see the next test


def test_loaders_unaware_of_the_format_fail_loudly(op, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression (new-user report): a plain model, or transformers without the splitlinear_fp8 quantizer
    (splitlinear.serving not imported), loaded the FP8 bytes as bf16 weights without their scales, with
    warnings only. The flattened weight entries make both fail with a size mismatch."""
    source = _llama(16)
    serving.convert_to_fp8_serving(source)
    with pytest.raises(RuntimeError, match="size mismatch for model.layers.0.self_attn.q_proj.weight"):
        _llama(17).load_state_dict(source.state_dict())
    source.save_pretrained(tmp_path / "hf")
    from transformers.quantizers import auto

    monkeypatch.delitem(auto.AUTO_QUANTIZER_MAPPING, serving.QUANT_METHOD)
    monkeypatch.delitem(auto.AUTO_QUANTIZATION_CONFIG_MAPPING, serving.QUANT_METHOD)
    with pytest.raises(RuntimeError, match="ignore_mismatched_sizes"):
        transformers.LlamaForCausalLM.from_pretrained(tmp_path / "hf")


def test_save_pretrained_from_pretrained(op, tmp_path: Path) -> None:
    source = _llama(12)
    serving.convert_to_fp8_serving(source)
    source.save_pretrained(tmp_path / "hf")
    loaded = transformers.LlamaForCausalLM.from_pretrained(tmp_path / "hf")
    assert _fp8_linears(loaded) == _fp8_linears(source)
    assert loaded.model.layers[1].mlp.up_proj.weight.dtype == E4M3
    assert not any(p.requires_grad for n, p in loaded.named_parameters() if "proj" in n)
    _assert_packed(loaded)
    _same_outputs(source, loaded.eval())


def test_second_and_partial_conversions_are_recorded(op, tmp_path: Path) -> None:
    """Regression (new-user report): a second call overwrote the recorded groups (with none), so the
    checkpoint came back with plain nn.Linear modules holding FP8 bytes. The records now accumulate,
    each group with its own scalings."""
    source = _llama(18)
    serving.convert_to_fp8_serving(source, fp8_filter=lambda fqn: "mlp" not in fqn, weight_scaling="tensorwise")
    serving.convert_to_fp8_serving(source, activation_scaling="tensorwise")
    serving.convert_to_fp8_serving(source)  # converts nothing more
    source.save_pretrained(tmp_path / "hf")
    loaded = transformers.LlamaForCausalLM.from_pretrained(tmp_path / "hf")
    assert _fp8_linears(loaded) == _fp8_linears(source) and len(_fp8_linears(loaded)) == 2 * 7 + 1  # + lm_head
    mlp = loaded.model.layers[0].mlp.up_proj
    assert mlp.activation_scaling == "tensorwise" and mlp.weight_scale_inv.numel() == mlp.out_features
    assert loaded.model.layers[0].self_attn.q_proj.weight_scale_inv.numel() == 1
    _same_outputs(source, loaded.eval())


def test_groups_argument_is_checked(op) -> None:
    model = nn.ModuleDict({n: nn.Linear(64, 64) for n in "qkv"})
    for groups, match in (([["q", "q"]], "'q' twice"), ([["q", "k"], ["q", "v"]], "'q' twice"),
                          (["q", "k"], "lists of module names"), ([[]], "non-empty"),
                          ([["q", "x"]], "'x', which is not an nn.Linear")):
        with pytest.raises(ValueError, match=match):
            serving.convert_to_fp8_serving(model, groups=groups)
    assert not _fp8_linears(model)  # a refused call changes nothing
    serving.convert_to_fp8_serving(model, groups=[["q", "k"]])
    with pytest.raises(ValueError, match="'q', which is already converted"):
        serving.convert_to_fp8_serving(model, groups=[["q"]])


def test_lora_adapters_and_fp32_modules_stay(op) -> None:
    """Regression (new-user report): PEFT's lora_A/lora_B and a model's _keep_in_fp32_modules (T5's wo)
    were converted, and their callers' `x.to(module.weight.dtype)` fed FP8 into the op."""
    peft = pytest.importorskip("peft")
    base = _llama(19, layers=1)
    model = peft.get_peft_model(base, peft.LoraConfig(r=16, target_modules=["q_proj"], init_lora_weights=False))
    report = serving.convert_to_fp8_serving(model)
    assert [n for n, r in report.skipped if "LoRA adapter" in r] == [
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default",
        "base_model.model.model.layers.0.self_attn.q_proj.lora_B.default"]
    assert isinstance(base.model.layers[0].self_attn.q_proj.base_layer, serving.Fp8ServingLinear)
    with torch.no_grad():
        assert torch.isfinite(model(torch.randint(0, 96, (1, 5))).logits).all()

    t5 = transformers.T5ForConditionalGeneration(transformers.T5Config(
        vocab_size=96, d_model=64, d_kv=16, d_ff=128, num_layers=1, num_heads=4)).eval()
    report = serving.convert_to_fp8_serving(t5)
    assert "encoder.block.0.layer.1.DenseReluDense.wo" in [n for n, r in report.skipped if "float32" in r]
    ids = torch.randint(0, 96, (1, 5))
    with torch.no_grad():
        assert torch.isfinite(t5(input_ids=ids, decoder_input_ids=ids).logits).all()


@pytest.mark.parametrize("weight_scaling", ["tensorwise", "rowwise"])
def test_peft_wrapped_group_matches_emulation(op, weight_scaling: str) -> None:
    """A PEFT-wrapped q_proj is converted in its q/k/v group (its ``base_layer`` with k_proj and
    v_proj, per-part scales): each projection, adapter included, equals the float64 emulation of
    the group plus the adapter's delta, eagerly and compiled."""
    peft = pytest.importorskip("peft")
    base = _llama(23, layers=1)
    model = peft.get_peft_model(base, peft.LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj"],
                                                       lora_dropout=0.0, init_lora_weights=False))
    attn = base.model.layers[0].self_attn
    ref = copy.deepcopy(attn)
    report = serving.convert_to_fp8_serving(model, weight_scaling=weight_scaling)
    prefix = "base_model.model.model.layers.0.self_attn."
    assert [prefix + n for n in ("q_proj.base_layer", "k_proj", "v_proj")] in report.converted
    siblings = [ref.q_proj.base_layer, ref.k_proj, ref.v_proj]
    x = torch.randn(2, 5, 64)
    lora_a, lora_b = ref.q_proj.lora_A["default"].weight.double(), ref.q_proj.lora_B["default"].weight.double()
    delta = (x.double() @ lora_a.T @ lora_b.T) * ref.q_proj.scaling["default"]
    with torch.no_grad():
        for name, lin in zip(("q_proj", "k_proj", "v_proj"), siblings):
            want = _emulated(lin, x, weight_scaling, "rowwise", siblings)
            if name == "q_proj":
                want = want + delta
            got = getattr(attn, name)(x)
            torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5 * want.abs().max().item())
        ids = torch.randint(0, 96, (2, 6))
        eager = model(ids).logits
        splitlinear.reset_stats()
        compiled = torch.compile(model, backend="splitlinear", options={"fallback": "eager"})(ids).logits
    assert splitlinear.stats()["serving_groups_fused"] >= 1
    torch.testing.assert_close(compiled, eager, rtol=1e-5, atol=1e-5)


def test_fp8_input_names_the_cause(op) -> None:
    model = nn.Sequential(nn.Linear(32, 16))
    serving.convert_to_fp8_serving(model)
    x8 = torch.randn(2, 32).to(E4M3)
    with pytest.raises(RuntimeError, match=r"Fp8ServingLinear\(32, 16\): the input is already"):
        model(x8)


def test_generate_with_static_cache_compiled(op) -> None:
    model = _llama(13)
    serving.convert_to_fp8_serving(model)
    ids = torch.randint(0, 96, (2, 5))
    kwargs = {"max_new_tokens": 6, "do_sample": False, "pad_token_id": 0}
    with torch.no_grad():
        want = model.generate(ids, **kwargs)
    compile_config = transformers.CompileConfig(backend="splitlinear", fullgraph=True)
    compile_config._compile_all_devices = True  # HF auto-compiles on accelerators only; CI is a CPU
    config = transformers.GenerationConfig(cache_implementation="static", compile_config=compile_config, **kwargs)
    splitlinear.reset_stats()
    with torch.no_grad():
        got = model.generate(ids, generation_config=config)
    assert splitlinear.stats()["serving_groups_fused"] >= 4
    assert torch.equal(got, want)


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
def test_activation_quantization_in_the_graph(op, tmp_path: Path, fallback: str) -> None:
    """Option fp8_activation_quant="graph": the activations are quantized by ATen ops in the graph (which
    Inductor may fuse into the RMSNorm) and the op takes the FP8 input; the same bytes as the op's own
    quantization, so the same outputs (bit for bit without Inductor)."""
    model = _qwen2(20)
    serving.convert_to_fp8_serving(model)
    ids = torch.randint(0, 96, (2, 9))
    options = {"fallback": fallback, "fp8_activation_quant": "graph", "dump_dir": str(tmp_path)}
    with torch.no_grad():
        want = torch.compile(model, backend="splitlinear", options={"fallback": fallback})(ids).logits
        torch._dynamo.reset()
        got = torch.compile(model, backend="splitlinear", options=options)(ids).logits
    after = "".join(p.read_text() for p in tmp_path.glob("graph_*_after.txt"))
    calls = after.count("torch.ops.splitlinear.fp8_serving_linear.default(")
    assert after.count(".amax(") == 8 and calls == 8, after  # 4 fused groups + 4 lone linears
    if fallback == "eager":
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    else:  # Inductor may round the fused RMSNorm differently; FP8 magnifies that to an e4m3 step
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    # Tensorwise activation scales keep the op's quantization (amax of an empty batch has no value).
    tensorwise = nn.Sequential(nn.Linear(64, 32))
    serving.convert_to_fp8_serving(tensorwise, activation_scaling="tensorwise")
    with torch.no_grad():
        compiled = torch.compile(tensorwise, backend="splitlinear", dynamic=True,
                                 options={"fallback": "eager", "fp8_activation_quant": "graph"})
        for rows in (3, 0, 5):
            x = torch.randn(rows, 64)
            torch.testing.assert_close(compiled(x), tensorwise(x), rtol=0, atol=0)
    with pytest.raises(ValueError, match="option 'fp8_activation_quant' must be one of"):
        splitlinear.SplitLinearOptions.from_dict({"fp8_activation_quant": "kernel"})

"""``splitlinear.pack_parameters``: sibling projections become adjacent views of
one storage while Parameter objects, names, values and optimizers keep working."""

from __future__ import annotations

import logging
import re
import warnings

import pytest
import torch
from torch import nn
from torch.nn.utils import parametrize

import splitlinear


class Attention(nn.Module):
    def __init__(self, bias: bool) -> None:
        super().__init__()
        self.q_proj = nn.Linear(16, 16, bias=bias)
        self.k_proj = nn.Linear(16, 8, bias=bias)
        self.v_proj = nn.Linear(16, 8, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.q_proj(x), self.k_proj(x), self.v_proj(x)], -1)


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def test_packs_siblings_in_place() -> None:
    torch.manual_seed(0)
    model = Attention(bias=True)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    params = dict(model.named_parameters())
    report = splitlinear.pack_parameters(model)
    assert report.packed == [["q_proj", "k_proj", "v_proj"]]
    assert dict(model.named_parameters()) == params  # the same Parameter objects
    after = model.state_dict()
    assert list(after) == list(before)
    for k in before:
        torch.testing.assert_close(after[k], before[k], rtol=0, atol=0)
    w = [model.q_proj.weight, model.k_proj.weight, model.v_proj.weight]
    assert len({_storage(p) for p in w}) == 1
    assert [p.storage_offset() for p in w] == [0, 16 * 16, 16 * 16 + 8 * 16]
    assert len({_storage(m.bias) for m in (model.q_proj, model.k_proj, model.v_proj)}) == 1


def test_optimizer_and_load_state_dict_after_packing() -> None:
    torch.manual_seed(0)
    model = Attention(bias=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    splitlinear.pack_parameters(model)
    x = torch.randn(4, 16)
    model(x).square().sum().backward()
    old = model.k_proj.weight.detach().clone()
    opt.step()  # updates the packed storage through the same Parameter objects
    assert not torch.equal(model.k_proj.weight, old)
    state = {k: torch.randn_like(v) for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    assert len({_storage(m.weight) for m in (model.q_proj, model.k_proj, model.v_proj)}) == 1
    torch.testing.assert_close(model.v_proj.weight, state["v_proj.weight"], rtol=0, atol=0)


def test_skips_groups_it_cannot_pack() -> None:
    model = Attention(bias=False)
    model.v_proj.to(torch.float64)
    report = splitlinear.pack_parameters(model, groups=[["q_proj", "k_proj", "v_proj"]])
    assert report.packed == []
    assert report.skipped and "dtypes" in report.skipped[0][1]
    # The default group packs the members one op call can take, and names the one left.
    report = splitlinear.pack_parameters(model)
    assert report.packed == [["q_proj", "k_proj"]]
    assert [g for g, _ in report.skipped] == [["v_proj"]] and "unlike its siblings" in report.skipped[0][1]
    assert _storage(model.q_proj.weight) == _storage(model.k_proj.weight) != _storage(model.v_proj.weight)


class UnlikeSiblings(nn.Module):
    """q/k/v siblings the backend does not fuse as one: Whisper's k without a bias, or a
    cross-attention whose k/v read the encoder's states (another K) and q the decoder's."""

    def __init__(self, case: str) -> None:
        super().__init__()
        self.case = case
        k_in = 24 if case == "cross" else 16
        self.q_proj = nn.Linear(16, 8)
        self.k_proj = nn.Linear(k_in, 8, bias=case == "cross")
        self.v_proj = nn.Linear(k_in, 8)

    def forward(self, x: torch.Tensor, enc: torch.Tensor) -> torch.Tensor:
        kv_in = enc if self.case == "cross" else x
        return self.q_proj(x) * self.k_proj(kv_in) + self.v_proj(kv_in)


@pytest.mark.parametrize("case, packed, alone", [
    ("whisper", ["q_proj", "v_proj"], ["k_proj"]),
    ("cross", ["k_proj", "v_proj"], ["q_proj"]),
])
def test_default_group_packs_the_members_the_backend_fuses(op: object, case: str, packed: list[str],
                                                           alone: list[str]) -> None:
    torch.manual_seed(0)
    model, ref = UnlikeSiblings(case), UnlikeSiblings(case)
    ref.load_state_dict(model.state_dict())
    report = splitlinear.pack_parameters(model)
    assert report.packed == [packed] and [g for g, _ in report.skipped] == [alone]
    x, enc = torch.randn(5, 16), torch.randn(5, 24)
    compiled = torch.compile(model, backend="splitlinear", options={"fallback": "eager"})
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not adjacent")  # the fused pair is packed
        out = compiled(x, enc)
    expected = ref(x, enc)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    out.square().sum().backward()
    expected.square().sum().backward()
    for (name, p), (_, r) in zip(model.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(p.grad, r.grad, rtol=1e-5, atol=1e-5, msg=name)
    stats = splitlinear.stats()
    assert stats["views"] >= 1 and stats["cats"] == 0 and stats["per_part_gemms"] == 0


@pytest.mark.parametrize("groups, message", [
    (["q_proj", "k_proj"], r"got the entry 'q_proj': wrap one group in a list of its own"),
    ("qk", r"groups must be a list of non-empty lists of module names"),
    ([["q_proj", 3]], r"a group holds 3 \(int\); module names are strings"),
])
def test_groups_of_the_wrong_shape_are_named(groups: object, message: str) -> None:
    """A flat list of names (or one string) is refused by name: read as groups, its characters would
    name modules ('q' is not a submodule) or, with one-letter names, pack the wrong ones silently."""
    model = Attention(bias=False)
    storages = [_storage(m.weight) for m in (model.q_proj, model.k_proj, model.v_proj)]
    with pytest.raises(ValueError, match=message):
        splitlinear.pack_parameters(model, groups=groups)
    assert [_storage(m.weight) for m in (model.q_proj, model.k_proj, model.v_proj)] == storages
    with pytest.raises(ValueError, match="pack_parameters: groups holds an empty group"):
        splitlinear.pack_parameters(model, groups=[[]])


def test_module_that_is_not_a_module_is_named() -> None:
    with pytest.raises(TypeError, match="pack_parameters: module must be an nn.Module, got str"):
        splitlinear.pack_parameters("model")  # type: ignore[arg-type]


def test_meta_device_is_skipped_with_its_reason() -> None:
    """Meta tensors all report storage 0, which read as views of one another ("shares storage
    with 'q_proj.weight'"); the reason given is the meta device."""
    with torch.device("meta"):
        model = Attention(bias=True)
    report = splitlinear.pack_parameters(model)
    assert report.packed == [] and "meta device" in report.skipped[0][1]


def test_default_groups_find_peft_wrapped_siblings() -> None:
    """After ``get_peft_model`` the LoRA-wrapped siblings are ``lora.Linear`` modules: their
    ``base_layer`` joins the group (packed adjacent with the unwrapped ones), and the model computes
    what it computed before packing."""
    peft = pytest.importorskip("peft")
    torch.manual_seed(0)
    model = peft.get_peft_model(Attention(bias=True), peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p)  # not zeros: the adapters change the output
    x = torch.randn(4, 16)
    want = model(x)
    report = splitlinear.pack_parameters(model)
    base = model.base_model.model
    assert report.packed == [["base_model.model.q_proj.base_layer", "base_model.model.k_proj",
                              "base_model.model.v_proj.base_layer"]]
    w = [base.q_proj.base_layer.weight, base.k_proj.weight, base.v_proj.base_layer.weight]
    assert len({_storage(t) for t in w}) == 1
    assert [t.storage_offset() for t in w] == [0, 16 * 16, 16 * 16 + 8 * 16]
    torch.testing.assert_close(model(x), want, rtol=0, atol=0)


def test_tied_weight_stays_tied() -> None:
    model = Attention(bias=False)
    other = nn.Linear(16, 16, bias=False)
    other.weight = model.q_proj.weight  # tied
    splitlinear.pack_parameters(model)
    assert other.weight is model.q_proj.weight
    assert _storage(other.weight) == _storage(model.k_proj.weight)


def test_compiled_packed_model_takes_the_view(op) -> None:
    torch.manual_seed(0)
    model = Attention(bias=True)
    splitlinear.pack_parameters(model)
    x = torch.randn(4, 16)
    ref = model(x)
    compiled = torch.compile(model, backend="splitlinear", fullgraph=True, options={"fallback": "eager"})
    torch.testing.assert_close(compiled(x), ref, rtol=1e-5, atol=1e-5)
    stats = splitlinear.stats()
    assert stats["regions_matched"] == 1 and stats["views"] >= 1 and stats["cats"] == 0


@pytest.mark.parametrize("how", ["to_dtype", "data"])
def test_group_that_lost_its_buffer_is_named_once_at_compile(op, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Packed, then given new storage (``model.to(dtype)``, a ``.data`` assignment): compiling names the
    group once (not silently slower), the results stay equal to eager, and
    ``SPLITLINEAR_PACK_WARNINGS=0`` silences it. Packing again takes the view again."""
    from splitlinear import _siblings

    monkeypatch.setattr(_siblings, "_warned", set())
    torch.manual_seed(5)
    model = Attention(bias=False)
    splitlinear.pack_parameters(model)
    if how == "to_dtype":
        model.to(torch.float64)
    else:
        model.k_proj.weight.data = model.k_proj.weight.detach().clone()
    x = torch.randn(4, 16, dtype=model.q_proj.weight.dtype)
    ref = model(x)
    with pytest.warns(UserWarning, match=r"packed group \['q_proj', 'k_proj', 'v_proj'\] is not adjacent.*"
                                         r"no longer share one buffer"):
        compiled = torch.compile(model, backend="splitlinear", options={"fallback": "eager"})
        torch.testing.assert_close(compiled(x), ref)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch._dynamo.reset()
        torch.compile(model, backend="splitlinear", options={"fallback": "eager"})(x)  # warned once
    monkeypatch.setattr(_siblings, "_warned", set())
    monkeypatch.setenv("SPLITLINEAR_PACK_WARNINGS", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch._dynamo.reset()
        torch.compile(model, backend="splitlinear", options={"fallback": "eager"})(x)
    monkeypatch.delenv("SPLITLINEAR_PACK_WARNINGS")
    monkeypatch.setattr(_siblings, "_warned", set())
    splitlinear.pack_parameters(model)
    splitlinear.reset_stats()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(model, backend="splitlinear", options={"fallback": "eager"})(x), ref)
    assert splitlinear.stats()["views"] >= 1


def test_second_model_with_the_same_names_is_warned_about_too(op, monkeypatch: pytest.MonkeyPatch) -> None:
    """The not-adjacent warning comes once per model, not once per group name: a second model whose
    q/k/v lost their buffer is named as well (its module names equal the first's)."""
    from splitlinear import _siblings

    monkeypatch.setattr(_siblings, "_warned", set())
    torch.manual_seed(6)
    for _ in range(2):
        model = Attention(bias=False)
        splitlinear.pack_parameters(model)
        model.k_proj.weight.data = model.k_proj.weight.detach().clone()
        x = torch.randn(4, 16)
        torch._dynamo.reset()
        with pytest.warns(UserWarning, match=r"packed group \['q_proj', 'k_proj', 'v_proj'\] is not adjacent"):
            out = torch.compile(model, backend="splitlinear", options={"fallback": "eager"})(x)
        torch.testing.assert_close(out, model(x))


def test_load_with_assign_names_the_group_it_unpacked(op, monkeypatch: pytest.MonkeyPatch) -> None:
    """``load_state_dict(assign=True)`` puts the loaded tensors in place of the packed Parameters:
    the group is named once (not silently slower), results equal eager with the loaded values; a
    plain load copies into the packed storage, keeps the views and warns about nothing."""
    from splitlinear import _siblings

    monkeypatch.setattr(_siblings, "_warned", set())
    torch.manual_seed(7)
    model, source = Attention(bias=True), Attention(bias=True)
    splitlinear.pack_parameters(model)
    x = torch.randn(4, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.load_state_dict(source.state_dict())
    splitlinear.reset_stats()
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(model, backend="splitlinear")(x), source(x))
    assert splitlinear.stats()["views"] >= 1
    with pytest.warns(UserWarning, match=r"packed group \['q_proj', 'k_proj', 'v_proj'\] is not adjacent.*"
                                         r"new Parameters took the packed ones' place"):
        model.load_state_dict(source.state_dict(), assign=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.load_state_dict(source.state_dict(), assign=True)  # named once
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(model, backend="splitlinear")(x), source(x))


def test_loading_a_deepcopy_of_a_packed_model_names_the_group(op, monkeypatch: pytest.MonkeyPatch) -> None:
    """``copy.deepcopy`` copies each Parameter alone: the copy is not packed, and loading it (a plain
    ``load_state_dict``) names the group; the original, loaded the same way, stays packed and silent."""
    import copy

    from splitlinear import _siblings

    monkeypatch.setattr(_siblings, "_warned", set())
    torch.manual_seed(8)
    model, source = Attention(bias=False), Attention(bias=False)
    splitlinear.pack_parameters(model)
    twin = copy.deepcopy(model)
    with pytest.warns(UserWarning, match=r"packed group \['q_proj', 'k_proj', 'v_proj'\] is not adjacent.*deepcopy"):
        twin.load_state_dict(source.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.load_state_dict(source.state_dict())
    x = torch.randn(4, 16)
    torch.testing.assert_close(twin(x), source(x))
    torch.testing.assert_close(model(x), source(x))


@pytest.mark.parametrize("how", ["assign", "deepcopy"])
def test_loading_replaced_groups_names_them_in_one_warning(op, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Regression: a model of 5 packed q/k/v groups warned 5 times on ``load_state_dict(assign=True)``
    (a 32-layer Llama: 64 warnings). One load names its groups in one warning; loading one layer alone
    still names that layer's group."""
    import copy

    from splitlinear import _siblings

    monkeypatch.setattr(_siblings, "_warned", set())
    torch.manual_seed(9)
    model, source = nn.ModuleList(Attention(bias=False) for _ in range(5)), nn.ModuleList(
        Attention(bias=False) for _ in range(5))
    assert len(splitlinear.pack_parameters(model, groups=[[f"{i}.q_proj", f"{i}.k_proj", f"{i}.v_proj"]
                                                          for i in range(5)]).packed) == 5
    target = copy.deepcopy(model) if how == "deepcopy" else model
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        target.load_state_dict(source.state_dict(), assign=how == "assign")
    texts = [str(w.message) for w in caught if "not adjacent" in str(w.message)]
    assert len(texts) == 1, texts
    assert re.search(r"packed groups \['0.q_proj', '0.k_proj', '0.v_proj'\], \['1.q_proj', .*\] and 2 more are "
                     r"not adjacent in memory \(new Parameters took the packed ones' place", texts[0]), texts[0]
    x = torch.randn(4, 16)
    for layer, want in zip(target, source):
        torch.testing.assert_close(layer(x), want(x))
    layer = copy.deepcopy(model[0])
    with pytest.warns(UserWarning, match=r"packed group \['0.q_proj', '0.k_proj', '0.v_proj'\] is not adjacent"):
        layer.load_state_dict(source[0].state_dict())


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_packing_under_no_grad_or_inference_mode_keeps_the_model_trainable(mode: str) -> None:
    torch.manual_seed(1)
    context = torch.no_grad if mode == "no_grad" else torch.inference_mode
    reference = Attention(bias=True)
    model = Attention(bias=True)
    model.load_state_dict(reference.state_dict())
    with context():
        report = splitlinear.pack_parameters(model)
    assert report.packed == [["q_proj", "k_proj", "v_proj"]]
    assert not any(p.is_inference() for p in model.parameters())
    assert _storage(model.q_proj.weight) == _storage(model.v_proj.weight)
    x = torch.randn(3, 16)
    model(x).square().sum().backward()
    reference(x).square().sum().backward()
    for (name, p), q in zip(reference.named_parameters(), model.parameters()):
        torch.testing.assert_close(q.grad, p.grad, msg=name)


def _orthogonal_like(module: nn.Linear) -> None:
    class Double(nn.Module):
        def forward(self, w: torch.Tensor) -> torch.Tensor:
            return 2 * w

    parametrize.register_parametrization(module, "weight", Double())


@pytest.mark.parametrize("how", ["register_parametrization", "parametrizations.weight_norm",
                                 "utils.weight_norm"])
def test_computed_weights_are_skipped_with_a_reason(how: str) -> None:
    model = Attention(bias=False)
    if how == "register_parametrization":
        _orthogonal_like(model.k_proj)
    elif how == "parametrizations.weight_norm":
        torch.nn.utils.parametrizations.weight_norm(model.k_proj)
    else:
        with pytest.warns(FutureWarning):
            torch.nn.utils.weight_norm(model.k_proj)
    before = {name: _storage(p) for name, p in model.named_parameters()}
    x = torch.randn(3, 16)
    expected = model(x)
    report = splitlinear.pack_parameters(model)
    assert report.packed == []
    ((group, reason),) = report.skipped
    assert group == ["q_proj", "k_proj", "v_proj"] and "k_proj.weight" in reason
    assert ("parametrized" in reason) == (how != "utils.weight_norm")
    assert {name: _storage(p) for name, p in model.named_parameters()} == before  # nothing moved
    torch.testing.assert_close(model(x), expected)


def test_views_of_another_modules_storage_are_skipped() -> None:
    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(32, 16)
            self.attn = Attention(bias=False)

    model = Model()
    model.attn.k_proj.weight = nn.Parameter(model.embed.weight.data[:8])  # a view of embed's weight
    report = splitlinear.pack_parameters(model)
    assert report.packed == []
    ((_, reason),) = report.skipped
    assert "embed.weight" in reason
    assert model.attn.k_proj.weight.data_ptr() == model.embed.weight.data_ptr()  # still tied


def _tiny_config(cls_name: str, **extra: int) -> object:
    transformers = pytest.importorskip("transformers")
    return getattr(transformers, cls_name)(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                           num_attention_heads=4, vocab_size=64, pad_token_id=None,
                                           bos_token_id=None, eos_token_id=None, **extra)


@pytest.mark.parametrize("arch, fused", [
    ("Phi3", ["model.layers.0.self_attn.qkv_proj", "model.layers.0.mlp.gate_up_proj",
              "model.layers.1.self_attn.qkv_proj", "model.layers.1.mlp.gate_up_proj"]),
    ("GPTNeoX", ["gpt_neox.layers.0.attention.query_key_value", "gpt_neox.layers.1.attention.query_key_value"]),
])
def test_natively_fused_model_is_not_warned_about(arch: str, fused: list[str],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """Phi-3 (``qkv_proj``, ``gate_up_proj``) and GPT-NeoX (``query_key_value``) hold each projection
    as one Linear already: nothing to pack, which is said at INFO level, not warned about."""
    transformers = pytest.importorskip("transformers")
    extra = {"num_key_value_heads": 2} if arch == "Phi3" else {}
    model = getattr(transformers, f"{arch}ForCausalLM")(_tiny_config(f"{arch}Config", **extra))
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO, logger="splitlinear"):
        warnings.simplefilter("always")
        report = splitlinear.pack_parameters(model)
    assert [str(w.message) for w in caught if "pack_parameters" in str(w.message)] == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert report.packed == [] and report.skipped == [] and report.already_fused == fused
    (info,) = [r.getMessage() for r in caplog.records if "pack_parameters" in r.getMessage()]
    assert "nothing to pack" in info and "already fused" in info and f"{arch}ForCausalLM" in info


def test_unknown_model_warns_and_named_groups_pack(caplog: pytest.LogCaptureFixture) -> None:
    class Odd(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.left = nn.Linear(16, 8)
            self.right = nn.Linear(16, 4)

    model = Odd()
    with pytest.warns(UserWarning, match="found no sibling projections in Odd"), \
            caplog.at_level(logging.INFO, logger="splitlinear"):
        report = splitlinear.pack_parameters(model)
    # Said once: a WARNING log record would print a second copy where logging is not set up.
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("found no sibling projections" in r.getMessage() for r in caplog.records)
    assert report.packed == [] and report.skipped == []
    report = splitlinear.pack_parameters(model, groups=[["left", "right"]])
    assert report.packed == [["left", "right"]]
    assert _storage(model.left.weight) == _storage(model.right.weight)


def _compiled_counters(model: nn.Module, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, dict[str, int]]:
    """The logits of eager and of ``backend="splitlinear"`` (rest eager), and the op's counters."""
    want = model(input_ids=ids, use_cache=False).logits
    splitlinear.reset_stats()
    compiled = torch.compile(model, backend="splitlinear", options={"fallback": "eager"})
    return compiled(input_ids=ids, use_cache=False).logits, want, splitlinear.stats()


@pytest.mark.parametrize("arch, mlp_inputs", [("Phi", ["fc1"]), ("Cohere", ["gate_proj", "up_proj"])])
def test_parallel_block_packs_attention_and_mlp_inputs_together(op: object, arch: str, mlp_inputs: list[str]) -> None:
    """Phi-1/2 and Cohere run attention and MLP on one normed input: the backend fuses q, k, v
    and the MLP's input projections into one region, and the default groups pack them as one, so
    the region takes its view (one per layer, no copy, no per-part GEMM)."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    extra = {"num_key_value_heads": 2} if arch == "Cohere" else {}
    config = _tiny_config(f"{arch}Config", attn_implementation="eager", **extra)
    model = getattr(transformers, f"{arch}ForCausalLM")(config).double()
    report = splitlinear.pack_parameters(model)
    assert report.packed == [[f"model.layers.{i}.self_attn.{p}" for p in ("q_proj", "k_proj", "v_proj")]
                             + [f"model.layers.{i}.mlp.{p}" for p in mlp_inputs] for i in range(2)]
    out, want, stats = _compiled_counters(model, torch.randint(0, 64, (2, 8)))
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    assert stats["regions_matched"] == 2, stats
    assert stats["views"] == 2 and stats["cats"] == 0 and stats["per_part_gemms"] == 0, stats


def test_sequential_block_keeps_attention_and_mlp_apart() -> None:
    """Llama normalizes again before its MLP (two norms per layer): q/k/v and gate/up read
    different inputs and stay two groups."""
    transformers = pytest.importorskip("transformers")
    model = transformers.LlamaForCausalLM(_tiny_config("LlamaConfig", num_key_value_heads=2))
    groups = splitlinear.packing.find_sibling_groups(model)
    assert groups[:2] == [[f"model.layers.0.self_attn.{p}" for p in ("q_proj", "k_proj", "v_proj")],
                          ["model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"]]


@pytest.mark.parametrize("rows", [2 * 8, 128])
def test_lora_adapters_stay_out_of_the_packed_region(op: object, rows: int) -> None:
    """PEFT LoRA on q and v: ``lora_A`` reads the layer's input like q/k/v, but the backend leaves
    the adapters out of the sibling region, so the packed base q/k/v (and gate/up) keep their view
    (at few rows, where scattered parts would run one GEMM each, and at many, where they would be
    copied)."""
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    torch.manual_seed(0)
    base = transformers.LlamaForCausalLM(_tiny_config("LlamaConfig", num_key_value_heads=2,
                                                      attn_implementation="eager")).double()
    model = peft.get_peft_model(base, peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], lora_dropout=0.0,
                                                      init_lora_weights=False))
    assert len(splitlinear.pack_parameters(model).packed) == 4
    out, want, stats = _compiled_counters(model, torch.randint(0, 64, (2, rows // 2)))
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    assert stats["regions_matched"] == 4, stats  # q/k/v and gate/up per layer; adapters apart
    assert stats["views"] == 4 and stats["cats"] == 0 and stats["per_part_gemms"] == 0, stats

"""Backend option ``fp8``: which linears run in FP8, their numbers against eager ``fp8_linear``, errors.

The rewritten graph must compute exactly what ``Block.reference`` computes eagerly (the same
``fp8_linear`` calls on the same groups), forward and backward, on fresh random data.
"""

from __future__ import annotations

import copy
import os
import warnings

import pytest
import torch
from _fp8_models import FP8_REGIONS, Block
from _util import compile_sl

import splitlinear
from splitlinear._dtypes import FP8_OUTER_VECTOR_RECIPES as FP8_RECIPES  # blockwise: test_fp8_blockwise.py
from splitlinear.options import SplitLinearOptions


def _dump_after(tmp_path: os.PathLike) -> str:
    files = sorted(p for p in os.listdir(tmp_path) if p.endswith("_after.txt"))
    return "".join(open(os.path.join(tmp_path, f), encoding="utf-8").read() for f in files)


def _pair(seed: int, bias: bool = False) -> tuple[Block, Block]:
    torch.manual_seed(seed)
    model = Block(bias=bias)
    return model, copy.deepcopy(model)


def _grads(m: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad for n, p in m.named_parameters() if p.grad is not None}


# --- options -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad, message", [
    ({"fp8": "mxfp8"}, "option 'fp8' must be one of"),
    ({"fp8": True}, "option 'fp8' must be one of"),
    ({"fp8_filter": ["lm_head"]}, "option 'fp8_filter' needs option 'fp8'"),
    ({"fp8": "rowwise", "fp8_filter": "lm_head"}, "option 'fp8_filter' must be a callable"),
    ({"fp8": "rowwise", "fp8_filter": [3]}, "option 'fp8_filter' must be a callable"),
    ({"fp8": "rowwise", "fp8_weight_cache": 1}, "option 'fp8_weight_cache' must be a bool"),
    ({"fp8_weight_cache": True}, "option 'fp8_weight_cache' needs option 'fp8'"),
    ({"fp8": "blockwise", "fp8_weight_cache": True}, "option 'fp8_weight_cache' is not supported with fp8='blockwise'"),
])
def test_bad_options_name_the_option(bad: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SplitLinearOptions.from_dict(bad)


def test_default_is_no_fp8() -> None:
    opts = SplitLinearOptions.from_dict({})
    assert opts.fp8 is None and opts.fp8_filter is None


# --- the rewrite ---------------------------------------------------------------------------


@pytest.mark.parametrize("recipe", FP8_RECIPES)
@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
def test_matches_eager_fp8_linear(op, recipe: str, bias: bool, tmp_path) -> None:
    model, ref = _pair(11, bias)
    compiled = compile_sl(model, fp8=recipe, dump_dir=str(tmp_path))
    x = torch.randn(3, 5, 64, dtype=torch.float64).float().requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    out = compiled(x)
    want = ref.reference(x_ref, recipe)
    for a, b in zip(out, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    # The FP8 outputs feed lm_head/odd: equal FP8 results give equal logits.
    dy = [torch.randn_like(o) for o in out]
    torch.autograd.backward(out, dy)
    torch.autograd.backward(want, dy)
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=1e-5, atol=1e-6)
    g, g_ref = _grads(model), _grads(ref)
    assert g.keys() == g_ref.keys() and len(g) == len(list(model.parameters()))
    for name in g:
        torch.testing.assert_close(g[name], g_ref[name], rtol=1e-5, atol=1e-6, msg=name)
    text = _dump_after(tmp_path)
    # The weight cache is off by default: the uncached form of the op.
    assert text.count(f"= splitlinear_fx_fp8_fp8_linear_{recipe}(") == FP8_REGIONS, text


def test_default_filter_skips_lm_head_and_odd_dims(op, tmp_path) -> None:
    model, _ = _pair(12)
    compile_sl(model, fp8="tensorwise", dump_dir=str(tmp_path))(torch.randn(4, 64))
    text = _dump_after(tmp_path)
    # lm_head (filter) and odd (24 rows) stay in float32: one plain 2-part region.
    assert "matched horizontal region ['linear_7', 'linear_8'] with 2 parts" in text, text
    assert text.count("splitlinear_ops_linear(") == 1


@pytest.mark.parametrize("flt", [["*_proj"], lambda fqn: not fqn.endswith("_proj")], ids=["patterns", "callable"])
def test_filter_option(op, flt, tmp_path) -> None:
    model, _ = _pair(13)
    x = torch.randn(4, 64)
    out = compile_sl(model, fp8="rowwise", fp8_filter=flt, dump_dir=str(tmp_path))(x)
    text = _dump_after(tmp_path)
    # Every *_proj stays in float32; lm_head (the default skip is replaced) runs in FP8.
    assert text.count("= splitlinear_fx_fp8_fp8_linear_rowwise(") == 1 and "with 1 parts" in text, text
    want = op.fp8_linear(_hidden(model, x), [model.lm_head.weight], recipe="rowwise")
    torch.testing.assert_close(out[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("flt", [lambda fqn: 1 / 0, lambda: True], ids=["raises", "arity"])
def test_failing_filter_names_the_option_and_module(op, flt) -> None:
    """A callable filter that fails surfaces as an error naming the option and the module it was
    asked about, not as the user's bare exception inside Dynamo's."""
    model, _ = _pair(14)
    with pytest.raises(Exception, match=r"option 'fp8_filter' raised (ZeroDivisionError|TypeError) on module '"):
        compile_sl(model, fp8="tensorwise", fp8_filter=flt)(torch.randn(4, 64))


def test_filter_returning_non_bool_names_the_option_and_module(op) -> None:
    """Regression: a callable filter that forgot its ``return`` answered None, read as False,
    so every linear silently stayed in bf16."""
    model, _ = _pair(15)

    def flt(fqn: str) -> bool:
        fqn.endswith("_proj")  # no return: answers None

    with pytest.raises(Exception, match=r"option 'fp8_filter' must return True or False, got NoneType None "
                                        r"on module '"):
        compile_sl(model, fp8="tensorwise", fp8_filter=flt)(torch.randn(4, 64))


def test_refused_linears_are_named_once_over_recompiles(op) -> None:
    """Regression: each recompile of the frame (new shapes, here 3 of them, static) named the same
    linears again. One warning for the frame; after ``torch._dynamo.reset()`` a new compile names
    them again."""
    torch._dynamo.reset()
    model = _Refused()
    compiled = torch.compile(model, backend="splitlinear", dynamic=False,
                             options={"fallback": "eager", "fp8": "tensorwise"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for rows in (4, 5, 6):
            x = torch.randn(rows, 24)
            torch.testing.assert_close(compiled(x), model(x))
    assert splitlinear.stats()["graphs_compiled"] == 3
    named = [w for w in caught if "stay in their precision: q_proj" in str(w.message)]
    assert len(named) == 1, [str(w.message) for w in caught]
    torch._dynamo.reset()
    with pytest.warns(UserWarning, match="stay in their precision: q_proj"):
        compiled(torch.randn(4, 24))


def test_filter_sees_peft_base_layer_fqns(op) -> None:
    """The FQNs the filter sees under PEFT LoRA, as the UserGuide states them: the base linear is
    ``....q_proj.base_layer``, its adapters ``....q_proj.lora_A.default``."""
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    torch.manual_seed(16)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=96)
    model = peft.get_peft_model(transformers.LlamaForCausalLM(cfg),
                                peft.LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
    seen: list[str] = []

    def flt(fqn: str) -> bool:
        seen.append(fqn)
        return True

    ids = torch.randint(0, 96, (2, 16))
    compile_sl(model, fullgraph=False, fp8="tensorwise", fp8_filter=flt)(input_ids=ids, use_cache=False)
    prefix = "base_model.model.model.layers.0.self_attn.q_proj"
    assert {f"{prefix}.base_layer", f"{prefix}.lora_A.default", "base_model.model.lm_head"} <= set(seen), seen


def _hidden(model: Block, x: torch.Tensor) -> torch.Tensor:
    """The block's output before lm_head, in float32."""
    with torch.no_grad():
        h = model.norm(x)
        h = h + model.o_proj(torch.cat([model.q_proj(h), model.k_proj(h), model.v_proj(h)], -1))
        g = model.norm(h)
        return h + model.down_proj(torch.nn.functional.silu(model.gate_proj(g)) * model.up_proj(g))


def test_no_fp8_option_keeps_plain_regions(op, tmp_path) -> None:
    model, _ = _pair(14)
    compile_sl(model, dump_dir=str(tmp_path))(torch.randn(4, 64))
    text = _dump_after(tmp_path)
    assert "splitlinear_fx_fp8" not in text
    assert text.count("splitlinear_ops_linear(") == 3  # q/k/v, gate/up, lm_head/odd


def test_strict_does_not_reject_skipped_linears(op) -> None:
    model, ref = _pair(15)
    x = torch.randn(2, 64)
    out = compile_sl(model, fp8="tensorwise", strict=True)(x)
    torch.testing.assert_close(out[0], ref.reference(x, "tensorwise")[0], rtol=1e-5, atol=1e-5)


def test_inductor_fallback_matches_eager(op) -> None:
    model, ref = _pair(16)
    compiled = compile_sl(model, fallback="inductor", fp8="tensorwise")
    x = torch.randn(2, 7, 64)
    out = compiled(x)
    want = ref.reference(x, "tensorwise")
    # Inductor's RMSNorm/SiLU may round differently from eager, and FP8 amplifies a flipped
    # rounding to an e4m3 step: compare at FP8 accuracy.
    for a, b in zip(out, want):
        assert ((a - b).norm() / b.norm()).item() < 2e-2
    out[0].sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    assert splitlinear.stats()["regions_matched"] == FP8_REGIONS + 1


def test_cache_key_names_the_recipe(op) -> None:
    from splitlinear._cache_key import keyed_on_build
    from splitlinear.fx import fp8

    marked = keyed_on_build({})["unsafe_marked_cacheable_functions"]
    keys = {marked[f"{fn.__module__}.{fn.__name__}"] for fn in fp8.GRAPH_FNS.values()}
    linear_key = marked["splitlinear.ops.linear"]
    assert len(keys) == len(fp8.GRAPH_FNS) and linear_key not in keys
    assert all("fp8=" in k for k in keys)


class _OwnFp8(torch.nn.Module):
    """A model with an FP8 value of its own (another FP8 library's cast, say)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(64, 32, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(torch.float8_e4m3fn).to(torch.float32)
        return self.proj(x)


def _dynamo_graph(model: torch.nn.Module, x: torch.Tensor) -> tuple[torch.fx.GraphModule, list]:
    captured = []

    def capture(gm, example_inputs):  # noqa: ANN001, ANN202
        captured.append((gm, list(example_inputs)))
        return gm.forward

    torch.compile(model, backend=capture, fullgraph=True)(x)
    return captured[0]


@pytest.mark.parametrize("fallback, cached", [("inductor", False), ("eager", True)])
def test_graph_with_own_fp8_runs_uncached_under_inductor(op, fallback: str, cached: bool) -> None:
    from splitlinear.fx.driver import rewrite_graph

    gm, example = _dynamo_graph(_OwnFp8(), torch.randn(4, 64))
    plan = rewrite_graph(gm, example, {"fp8": "tensorwise", "fallback": fallback, "fp8_weight_cache": True})
    assert len(plan.regions) == 1
    assert ("fp8_linear_tensorwise_cached(" in gm.code) == cached, gm.code
    assert "fp8_linear_tensorwise(" in gm.code or cached


class _Refused(torch.nn.Module):
    """Siblings the outer-vector recipes refuse: K = 24 (not a multiple of 16)."""

    def __init__(self) -> None:
        super().__init__()
        self.q_proj = torch.nn.Linear(24, 32, bias=False)
        self.k_proj = torch.nn.Linear(24, 16, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.q_proj(x), self.k_proj(x)], -1)


@pytest.mark.parametrize("recipe", FP8_RECIPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_linears_fp8_cannot_take_are_named(op, recipe: str, dtype: torch.dtype) -> None:
    """A linear left in its precision under option ``fp8`` (K not a multiple of 16, or float64
    operands) runs slower than asked: one warning per compiled frame names it and why."""
    torch.manual_seed(3)
    model = _Refused().to(dtype)
    if dtype == torch.float64:  # K a multiple of 16: the dtype is the reason
        model.q_proj, model.k_proj = (torch.nn.Linear(32, 32, bias=False, dtype=dtype),
                                      torch.nn.Linear(32, 16, bias=False, dtype=dtype))
    x = torch.randn(4, model.q_proj.in_features, dtype=dtype)
    reason = r"K = 24 is not a multiple of 16" if dtype == torch.float32 else r"dtype torch.float64"
    with pytest.warns(UserWarning, match=rf"fp8='{recipe}' needs .*stay in their precision: q_proj \({reason}"):
        torch.testing.assert_close(compile_sl(model, fp8=recipe)(x), model(x))

"""``SplitLinearOptions`` validation and how ``torch.compile`` options reach the backend."""

from __future__ import annotations

import dataclasses
import logging

import pytest
import torch
from _models import CatLinear, CatLinearTanh
from _util import randn

from splitlinear import SplitLinearOptions


def test_defaults() -> None:
    opts = SplitLinearOptions.from_dict(None)
    assert opts == SplitLinearOptions()
    assert (opts.fallback, opts.strict, opts.dump_dir, opts.horizontal_fusion, opts.min_parts) == (
        "inductor", False, None, True, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.strict = True  # type: ignore[misc]


def test_from_dict_and_passthrough() -> None:
    opts = SplitLinearOptions.from_dict({"fallback": "eager", "strict": True, "min_parts": 3,
                                         "horizontal_fusion": False, "dump_dir": "/tmp/x"})
    assert opts == SplitLinearOptions("eager", True, "/tmp/x", False, 3)
    assert SplitLinearOptions.from_dict(opts) is opts


def test_unknown_key_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['fallbak'\].*fallback.*strict.*dump_dir"):
        SplitLinearOptions.from_dict({"fallbak": "eager"})


@pytest.mark.parametrize(
    "key, value",
    [("fallback", "tvm"), ("fallback", 1), ("strict", 1), ("strict", "yes"), ("horizontal_fusion", None),
     ("min_parts", 1.5), ("min_parts", True), ("min_parts", 0), ("dump_dir", 3)],
)
def test_wrong_type_names_the_key(key: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"option '{key}'"):
        SplitLinearOptions.from_dict({key: value})


def test_options_not_a_mapping() -> None:
    with pytest.raises(ValueError, match="'options' must be a dict"):
        SplitLinearOptions.from_dict([("strict", True)])  # type: ignore[arg-type]


def test_dump_dir_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPLITLINEAR_DUMP_DIR", "/tmp/from-env")
    assert SplitLinearOptions().resolved_dump_dir() == "/tmp/from-env"
    assert SplitLinearOptions(dump_dir="/tmp/opt").resolved_dump_dir() == "/tmp/opt"
    monkeypatch.delenv("SPLITLINEAR_DUMP_DIR")
    assert SplitLinearOptions().resolved_dump_dir() is None


def test_invalid_options_through_torch_compile() -> None:
    """Dynamo wraps backend errors; the ValueError is the cause."""
    model = CatLinear(8, [4, 4])
    compiled = torch.compile(model, backend="splitlinear", options={"nope": 1})
    with pytest.raises(RuntimeError, match=r"ValueError: splitlinear: unknown option\(s\) \['nope'\]") as info:
        compiled(randn(2, 8))
    assert isinstance(getattr(info.value, "inner_exception", None), ValueError)


def _record_inductor_config(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    """The ``config_patches`` each Inductor compile of the backend receives (compile_fx
    re-enters itself once patched; only outermost calls are recorded)."""
    import torch._inductor.compile_fx as compile_fx_module

    seen: list[dict[str, object]] = []
    depth = [0]
    original = compile_fx_module.compile_fx

    def recording(gm, inputs, *args, config_patches=None, **kwargs):  # type: ignore[no-untyped-def]
        if depth[0] == 0:
            seen.append(dict(config_patches or {}))
        depth[0] += 1
        try:
            return original(gm, inputs, *args, config_patches=config_patches, **kwargs)
        finally:
            depth[0] -= 1

    monkeypatch.setattr(compile_fx_module, "compile_fx", recording)
    return seen


def _without_build_key(patches: dict[str, object]) -> dict[str, object]:
    """``patches`` less the entry keying the caches on the op library's build (test_compile_cache.py)
    and the post-grad pass of splitlinear.grad_concat, which must be there: the graphs these tests
    compile call the op."""
    import splitlinear._library
    from splitlinear.fx import fp8
    from splitlinear.grad_concat import ConcatNarrowGrads

    rest = dict(patches)
    concat_pass = rest.pop("post_grad_custom_pre_pass")
    assert isinstance(concat_pass, ConcatNarrowGrads) and concat_pass.then is None
    marked = rest.pop("unsafe_marked_cacheable_functions")
    assert marked.pop("splitlinear.ops.linear") == splitlinear._library.build_id()
    # The FP8 graph functions (option fp8), keyed on the build and their recipe.
    assert sorted(marked) == sorted(f"{fn.__module__}.{fn.__name__}" for fn in fp8.GRAPH_FNS.values())
    return rest


@pytest.mark.parametrize("mode", ["max-autotune-no-cudagraphs", "reduce-overhead", "default"])
def test_mode_reaches_inductor_as_backend_inductor_gets_it(
        op: object, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``mode`` gives Inductor the configuration ``backend="inductor"`` builds for it (on the CPU,
    cudagraph trees skip the graph, so ``reduce-overhead`` still runs and matches eager)."""
    seen = _record_inductor_config(monkeypatch)
    torch._dynamo.reset()
    model = CatLinearTanh(8, [4, 4])  # a graph of the op alone would run eagerly (fx.residue)
    x = randn(2, 8)
    compiled = torch.compile(model, backend="splitlinear", mode=mode)
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    expected = torch._TorchCompileInductorWrapper(mode, None, None).config
    assert [_without_build_key(p) for p in seen] == [expected]
    if mode != "default":
        assert expected  # the mode changed something


def test_mode_and_inductor_options_in_options(op: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """``torch.compile`` takes ``mode`` or ``options``; both fit in ``options``."""
    seen = _record_inductor_config(monkeypatch)
    torch._dynamo.reset()
    model = CatLinearTanh(8, [4, 4])
    x = randn(2, 8)
    compiled = torch.compile(model, backend="splitlinear", options={
        "mode": "max-autotune-no-cudagraphs", "inductor_options": {"epilogue_fusion": False}, "strict": True})
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    expected = torch._TorchCompileInductorWrapper("max-autotune-no-cudagraphs", {"epilogue_fusion": False},
                                                  None).config
    assert [_without_build_key(p) for p in seen] == [expected]


def test_eager_fallback_with_reduce_overhead_goes_through_cudagraph_trees(op: object) -> None:
    """On the CPU, cudagraph trees decline the graph (counted as a skip) and it runs as is."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    model = CatLinear(8, [4, 4])
    x = randn(2, 8).requires_grad_()
    compiled = torch.compile(model, backend="splitlinear", options={"fallback": "eager", "mode": "reduce-overhead"})
    out = compiled(x)
    torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)
    out.sum().backward()
    assert counters["inductor"]["cudagraph_skips"] >= 1


@pytest.mark.parametrize("options, mode, match", [
    ({"mode": "fast"}, None, "option 'mode' must be one of"),
    ({"mode": "reduce-overhead"}, "max-autotune", "conflicts with options"),
    ({"inductor_options": {"epilogue_fusion": False}, "fallback": "eager"}, None, "needs fallback='inductor'"),
    ({"inductor_options": [1]}, None, "'inductor_options' must be a dict"),
    ({"inductor_options": {"bogus_key": 1}}, None, "option 'inductor_options': Unexpected optimization option"),
    ({"inductor_options": {"max_autotune": "yes"}}, None, "option 'inductor_options': Unexpected type"),
])
def test_bad_mode_options(options: dict[str, object], mode: str | None, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SplitLinearOptions.from_dict(options).with_mode(mode)


def test_inductor_options_read_as_backend_inductor_reads_them() -> None:
    """Inductor's spelling rules apply ('-' for '_'); an empty dict and mode="default" are no-ops."""
    opts = SplitLinearOptions.from_dict({"inductor_options": {"epilogue-fusion": False}})
    assert opts.inductor_config() == {"epilogue_fusion": False}
    assert SplitLinearOptions.from_dict({"fallback": "eager", "inductor_options": {}}).cudagraphs is False
    ro = SplitLinearOptions.from_dict({"mode": "reduce-overhead"})
    assert ro.with_mode("default") is ro and ro.cudagraphs


def test_unwritable_dump_dir_names_the_option(op, tmp_path) -> None:
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("")
    model = torch.nn.Linear(8, 8)
    compiled = torch.compile(model, backend="splitlinear",
                             options={"fallback": "eager", "dump_dir": str(blocker / "dumps")})
    with pytest.raises(Exception, match=r"option 'dump_dir' \(or SPLITLINEAR_DUMP_DIR\): cannot write .*not_a_folder"):
        compiled(torch.randn(2, 8))

"""Inductor's FX graph cache and the AOTAutograd cache key the backend's compiles on the op
library's build (``splitlinear._library.build_id``): a cached graph is reused by the same build
and never by another one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch._dynamo.utils import counters

import splitlinear
import splitlinear._library
from _models import CatLinear, CatLinearTanh
from _util import randn


@pytest.fixture
def fresh_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Empty on-disk compile caches in ``tmp_path``, both enabled."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    with (torch.compiler.config.patch(force_disable_caches=False),
          torch._inductor.config.patch(fx_graph_cache=True, fx_graph_remote_cache=False),
          torch._functorch.config.patch(enable_autograd_cache=True, enable_remote_autograd_cache=False)):
        yield


def _compile_and_check(model: CatLinear, training: bool) -> dict[str, int]:
    """Compile ``model`` afresh (Dynamo reset), compare one step with eager, return the cache counters."""
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(model, backend="splitlinear", options={"fallback": "inductor", "strict": True})
    x = randn(5, 16)
    with torch.set_grad_enabled(training):
        actual, expected = compiled(x), model(x)
        torch.testing.assert_close(actual, expected)
        if training:
            grad = randn(*actual.shape)
            got = torch.autograd.grad(actual, model.weights(), grad)
            want = torch.autograd.grad(expected, model.weights(), grad)
            torch.testing.assert_close(got, want)
    return {name: counters[group][name] for group, names in (
        ("inductor", ("fxgraph_cache_hit", "fxgraph_cache_miss")),
        ("aot_autograd", ("autograd_cache_hit", "autograd_cache_miss", "autograd_cache_bypass")),
    ) for name in names}


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_caches_key_on_the_op_library_build(op: object, fresh_caches: None, monkeypatch: pytest.MonkeyPatch,
                                            training: bool) -> None:
    model = CatLinearTanh(16, [8, 4, 4])  # a graph of the op alone would not reach Inductor
    graphs = 2 if training else 1  # forward (and backward) FX graphs

    first = _compile_and_check(model, training)
    assert splitlinear.stats()["regions_matched"] == 1
    assert (first["fxgraph_cache_miss"], first["autograd_cache_miss"]) == (graphs, 1), first

    same_build = _compile_and_check(model, training)
    assert (same_build["fxgraph_cache_hit"], same_build["autograd_cache_hit"]) == (graphs, 1), same_build
    assert (same_build["fxgraph_cache_miss"], same_build["autograd_cache_miss"]) == (0, 0), same_build

    build = splitlinear._library.build_id()
    monkeypatch.setattr(splitlinear._library, "build_id", lambda: build + " (another build)")
    other_build = _compile_and_check(model, training)
    assert (other_build["fxgraph_cache_miss"], other_build["autograd_cache_miss"]) == (graphs, 1), other_build
    assert (other_build["fxgraph_cache_hit"], other_build["autograd_cache_hit"]) == (0, 0), other_build


def test_build_id_names_the_build(op: object) -> None:
    build = splitlinear._library.build_id()
    assert build == splitlinear._library.build_id()  # computed once: stable within the process
    assert f"torch={torch.__version__}" in build
    assert f"cxx11abi={int(torch.compiled_with_cxx11_abi())}" in build
    digest = build.rsplit("sha256=", 1)[1]
    assert len(digest) == 64 and int(digest, 16) >= 0

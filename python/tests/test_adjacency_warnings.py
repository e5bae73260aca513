"""A fused region whose weight parts are not adjacent runs slower (a copy or one GEMM per part): the
backend names it once when it compiles the graph, and again when a compiled graph runs with other
weights (Dynamo reuses it for a second instance of the same model class)."""

from __future__ import annotations

import warnings

import pytest
import torch
from _models import SiblingQKV
from torch import nn

import splitlinear
from splitlinear import _siblings


def _attention() -> SiblingQKV:
    """q/k/v siblings (16, 8, 8 rows, K 16), unpacked."""
    return SiblingQKV(16, 16, 8, bias=False)


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_siblings, "_warned", set())
    monkeypatch.delenv("SPLITLINEAR_PACK_WARNINGS", raising=False)
    torch._dynamo.reset()


def _compile(model: nn.Module, fallback: str = "eager") -> nn.Module:
    return torch.compile(model, backend="splitlinear", options={"fallback": fallback})


def _packed_and_compiled(model: nn.Module, x: torch.Tensor) -> nn.Module:
    """``model`` packed and compiled, its first call run without a warning."""
    splitlinear.pack_parameters(model)
    compiled = _compile(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        compiled(x)
    return compiled


def test_unpacked_region_is_named_once_when_it_compiles(op) -> None:
    torch.manual_seed(0)
    model, x = _attention(), torch.randn(4, 16)
    splitlinear.reset_stats()
    with pytest.warns(UserWarning, match=r"1 fused linear group\(s\) are not adjacent in memory: "
                                         r"\['q_proj', 'k_proj', 'v_proj'\].*pack_parameters"):
        torch.testing.assert_close(_compile(model)(x), model(x))
    assert splitlinear.stats()["views"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        torch._dynamo.reset()
        _compile(model)(x)  # named once
    splitlinear.pack_parameters(model)
    splitlinear.reset_stats()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        torch._dynamo.reset()
        torch.testing.assert_close(_compile(model)(x), model(x))
    assert splitlinear.stats()["views"] >= 1


def test_silenced_by_the_environment_variable(op, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPLITLINEAR_PACK_WARNINGS", "0")
    model = _attention()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _compile(model)(torch.randn(2, 16))


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
def test_second_instance_reusing_the_graph_is_named(op, fallback: str) -> None:
    """A packed model compiles silently; an unpacked one of the same class reuses its graph without
    a recompile, and is named on its first call, once; the packed one stays silent."""
    torch.manual_seed(1)
    packed, other = _attention(), _attention()
    splitlinear.pack_parameters(packed)
    x = torch.randn(4, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        torch.testing.assert_close(_compile(packed, fallback)(x), packed(x))
    compiles = splitlinear.stats()["graphs_compiled"]
    splitlinear.reset_stats()
    compiled_other = _compile(other, fallback)
    with pytest.warns(UserWarning, match=r"not adjacent in memory \(in the weights this compiled graph now runs "
                                         r"with.*\['q_proj', 'k_proj', 'v_proj'\]"):
        torch.testing.assert_close(compiled_other(x), other(x))
    assert splitlinear.stats()["graphs_compiled"] == 0 and compiles >= 1  # the graph was reused
    assert splitlinear.stats()["views"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        compiled_other(x)  # named once
        splitlinear.reset_stats()
        _compile(packed, fallback)(x)
    assert splitlinear.stats()["views"] >= 1


def test_a_data_assignment_after_compiling_is_named(op) -> None:
    """A later part (not the group's first) given new storage after the graph compiled."""
    torch.manual_seed(2)
    model, x = _attention(), torch.randn(4, 16)
    compiled = _packed_and_compiled(model, x)
    model.k_proj.weight.data = model.k_proj.weight.data.clone()
    splitlinear.reset_stats()
    with pytest.warns(UserWarning, match=r"not adjacent in memory \(in the weights this compiled graph now runs "
                                         r"with.*\['q_proj', 'k_proj', 'v_proj'\]"):
        torch.testing.assert_close(compiled(x), model(x))
    assert splitlinear.stats()["views"] == 0


class TwoBlocks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = _attention(), _attention()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (*self.first(x), *self.second(x.sin()))


def test_a_data_assignment_in_a_later_group_is_named_within_a_round(op) -> None:
    """Each call compares the first group and one more in turn: new storage for a part of the
    second group is named within two calls (one per group), and only once."""
    torch.manual_seed(3)
    model, x = TwoBlocks(), torch.randn(4, 16)
    compiled = _packed_and_compiled(model, x)
    model.second.k_proj.weight.data = model.second.k_proj.weight.data.clone()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # two groups
            for got, want in zip(compiled(x), model(x)):
                torch.testing.assert_close(got, want)
    named = [str(w.message) for w in caught if "not adjacent" in str(w.message)]
    assert len(named) == 1, named
    assert "['second.q_proj', 'second.k_proj', 'second.v_proj']" in named[0] and "first." not in named[0]


def test_packed_groups_that_lost_their_buffer_are_named_in_one_warning(op) -> None:
    model, x = TwoBlocks(), torch.randn(4, 16)
    splitlinear.pack_parameters(model)
    for block in (model.first, model.second):
        block.v_proj.weight.data = block.v_proj.weight.data.clone()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.testing.assert_close(_compile(model)(x), model(x))
    named = [str(w.message) for w in caught if "not adjacent" in str(w.message)]
    assert len(named) == 1, named
    assert "packed groups ['first.q_proj', 'first.k_proj', 'first.v_proj'], ['second.q_proj'" in named[0]
    assert "no longer share one buffer" in named[0]

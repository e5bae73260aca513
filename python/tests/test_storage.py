"""Parameter storage changes between calls: correct results, no recompiles, view/cat switch.

Dynamo guards Parameters on dtype/device/shape/stride/requires_grad only, not on
data pointers, so adjacency must be decided by the op on every call.
"""

from __future__ import annotations

import pytest
import torch
from _models import CatLinear, SiblingQKV
from _util import compile_sl, graphs, non_view_runs, randn

import splitlinear


def _make_adjacent(params: list[torch.nn.Parameter]) -> torch.Tensor:
    """Move ``params`` (same trailing shape) into one buffer, back to back; return the buffer."""
    buf = torch.cat([p.detach() for p in params])
    offset = 0
    for p in params:
        p.data = buf[offset:offset + p.shape[0]]
        offset += p.shape[0]
    return buf


def _make_disjoint(params: list[torch.nn.Parameter]) -> None:
    for p in params:
        p.data = p.detach().clone()


def _views() -> int:
    return splitlinear.stats()["views"]


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
def test_adjacent_disjoint_adjacent(op: object, device: str, fallback: str) -> None:
    torch.manual_seed(20)
    model = CatLinear(16, [8, 4, 4], bias=True, device=device)
    compiled = compile_sl(model, fallback=fallback)
    x = randn(3, 16, device=device)

    def check() -> None:
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)

    _make_disjoint(model.weights())
    _make_disjoint(model.biases())
    check()
    assert graphs() == 1

    for phase in ("adjacent", "disjoint", "adjacent"):
        if phase == "adjacent":
            _make_adjacent(model.weights())
            _make_adjacent(model.biases())
        else:
            _make_disjoint(model.weights())
            _make_disjoint(model.biases())
        views, others = _views(), non_view_runs()
        check()
        if phase == "adjacent":
            assert _views() > views and non_view_runs() == others, phase
        else:
            assert non_view_runs() > others and _views() == views, phase
    assert graphs() == 1, "storage swaps must not recompile"


def test_load_state_dict(op: object, device: str) -> None:
    torch.manual_seed(21)
    model = CatLinear(16, [8, 8], bias=True, device=device)
    compiled = compile_sl(model)
    x = randn(4, 16, device=device)
    with torch.no_grad():
        compiled(x)
        donor = CatLinear(16, [8, 8], bias=True, device=device)
        model.load_state_dict(donor.state_dict())  # copies into the existing storages
        torch.testing.assert_close(compiled(x), donor(x), rtol=1e-5, atol=1e-5)

        # assign=True replaces the Parameters with the state dict's tensors: views of one buffer.
        sd = donor.state_dict()
        wbuf = torch.cat([sd["weight_0"], sd["weight_1"]]) * 0.5
        bbuf = torch.cat([sd["bias_0"], sd["bias_1"]]) * 0.5
        sd = {"weight_0": wbuf[:8], "weight_1": wbuf[8:], "bias_0": bbuf[:8], "bias_1": bbuf[8:]}
        model.load_state_dict(sd, assign=True)
        views = _views()
        torch.testing.assert_close(compiled(x), torch.nn.functional.linear(x, wbuf, bbuf),
                                   rtol=1e-5, atol=1e-5)
        assert _views() > views
    assert graphs() == 1


def test_to_round_trip(op: object, device: str) -> None:
    """``.to(float64).to(float32)`` gives fresh (disjoint) storages of the same dtype: no recompile."""
    torch.manual_seed(22)
    model = SiblingQKV(16, 16, 8, bias=True, device=device)
    compiled = compile_sl(model)
    x = randn(2, 16, device=device)
    with torch.no_grad():
        compiled(x)
        model.to(torch.float64).to(torch.float32)
        for g, e in zip(compiled(x), model(x)):
            torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)
    assert graphs() == 1


def test_training_after_swap(op: object, device: str) -> None:
    """Gradients still land on the Parameters after their storage moved into one buffer."""
    torch.manual_seed(23)
    model = CatLinear(16, [8, 4], bias=True, device=device)
    compiled = compile_sl(model)
    x = randn(3, 16, device=device)
    compiled(x).sum().backward()
    _make_adjacent(model.weights())
    _make_adjacent(model.biases())
    for p in model.parameters():
        p.grad = None
    compiled(x).sum().backward()
    expected_w = x.sum(0).expand(12, 16)
    for w, rows in zip(model.weights(), (slice(0, 8), slice(8, 12))):
        torch.testing.assert_close(w.grad, expected_w[rows], rtol=1e-5, atol=1e-5)
    for b in model.biases():
        torch.testing.assert_close(b.grad, torch.full_like(b, 3.0))
    assert graphs() == 1

"""Higher-order gradients: ``create_graph=True`` through the op is exact, never silently wrong.

The backward ops (``linear_dgrad``, ``linear_wgrad``) have Autograd kernels:
under grad mode with an argument requiring grad they run as differentiable
compositions, so the gradient of a gradient is the eager one.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _models import CatLinear, CatLinearTanh
from _util import compile_sl, randn


def _params(device: str, bias: bool) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor] | None]:
    x = randn(4, 8, device=device, dtype=torch.float64).requires_grad_()
    ws = [randn(n, 8, device=device, dtype=torch.float64).requires_grad_() for n in (3, 5)]
    bs = [randn(n, device=device, dtype=torch.float64).requires_grad_() for n in (3, 5)] if bias else None
    return x, ws, bs


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_second_order_matches_eager(op: object, device: str, bias: bool) -> None:
    """The recipe of the bug report: grad of the input gradient's norm w.r.t. the weights."""
    torch.manual_seed(80)
    x, ws, bs = _params(device, bias)
    leaves = [*ws, *(bs or [])]

    def second(fn: object) -> tuple[torch.Tensor, ...]:
        loss = fn(x).tanh().square().sum()
        (g,) = torch.autograd.grad(loss, x, create_graph=True)
        return torch.autograd.grad(g.pow(2).sum(), [x, *leaves])

    got = second(lambda t: op.linear(t, ws, bs))
    expected = second(lambda t: F.linear(t, torch.cat(ws), None if bs is None else torch.cat(bs)))
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_gradgradcheck(op: object, device: str, bias: bool) -> None:
    torch.manual_seed(81)
    x, ws, bs = _params(device, bias)
    n = len(ws)

    def fn(x: torch.Tensor, *parts: torch.Tensor) -> torch.Tensor:
        return op.linear(x, list(parts[:n]), list(parts[n:]) if bias else None).sin()

    inputs = (x, *ws, *(bs or []))
    assert torch.autograd.gradcheck(fn, inputs)
    assert torch.autograd.gradgradcheck(fn, inputs)


def test_backward_ops_are_differentiable(op: object, device: str) -> None:
    """``linear_dgrad`` and ``linear_wgrad`` called directly pass gradcheck."""
    torch.manual_seed(82)
    dy = randn(2, 3, 6, device=device, dtype=torch.float64).requires_grad_()
    x = randn(2, 3, 4, device=device, dtype=torch.float64).requires_grad_()
    ws = [randn(n, 4, device=device, dtype=torch.float64).requires_grad_() for n in (2, 4)]
    assert torch.autograd.gradcheck(lambda d, a, b: torch.ops.splitlinear.linear_dgrad(d, [a, b]), (dy, *ws))
    assert torch.autograd.gradcheck(lambda d, t: torch.ops.splitlinear.linear_wgrad(d, t, True), (dy, x))
    assert torch.autograd.gradcheck(lambda d, t: torch.ops.splitlinear.linear_wgrad(d, t, False)[0], (dy, x))


def test_frozen_weights_second_order(op: object, device: str) -> None:
    """Frozen weights with trainable biases (the column-sum path) under create_graph."""
    torch.manual_seed(83)
    x, ws, bs = _params(device, True)
    for w in ws:
        w.requires_grad_(False)
    loss = op.linear(x, ws, bs).tanh().square().sum()
    gx, *gb = torch.autograd.grad(loss, [x, *bs], create_graph=True)
    got = torch.autograd.grad(gx.square().sum() + sum(g.square().sum() for g in gb), [x, *bs])
    ref_loss = F.linear(x, torch.cat(ws), torch.cat(bs)).tanh().square().sum()
    rx, *rb = torch.autograd.grad(ref_loss, [x, *bs], create_graph=True)
    expected = torch.autograd.grad(rx.square().sum() + sum(g.square().sum() for g in rb), [x, *bs])
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
def test_compiled_second_order(op: object, device: str, fallback: str) -> None:
    """With ``fallback="eager"``, or with Inductor on a graph left with nothing but the op call
    (run eagerly: ``graphs_run_eagerly``), the op runs as in eager code: double backward is exact."""
    import splitlinear

    torch.manual_seed(84)
    model = CatLinear(8, [3, 5], bias=True, dtype=torch.float64, device=device)
    before = splitlinear.stats()["graphs_run_eagerly"]
    compiled = compile_sl(model, fallback=fallback)
    x = randn(4, 8, device=device, dtype=torch.float64).requires_grad_()

    def second(fn: object) -> tuple[torch.Tensor, ...]:
        (g,) = torch.autograd.grad(fn(x).tanh().square().sum(), x, create_graph=True)
        return torch.autograd.grad(g.pow(2).sum(), list(model.parameters()))

    for g, e in zip(second(compiled), second(model)):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-10)
    assert splitlinear.stats()["graphs_run_eagerly"] - before == (fallback == "inductor")


def test_compiled_inductor_double_backward_raises(op: object, device: str) -> None:
    """AOTAutograd (under Inductor) does not support double backward: a clear error, as with
    ``backend="inductor"``, never a wrong number."""
    model = CatLinearTanh(8, [3, 5], bias=True, dtype=torch.float64, device=device)
    compiled = compile_sl(model, fallback="inductor")
    x = randn(4, 8, device=device, dtype=torch.float64).requires_grad_()
    (g,) = torch.autograd.grad(compiled(x).square().sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="double backward"):
        torch.autograd.grad(g.pow(2).sum(), list(model.parameters()))

"""The op's autograd node (``splitlinear::LinearBackward``): recorded only when a gradient is needed.

The node is hand-written (for host time per call): these tests pin what a ``torch::autograd::Function``
gave for free — no node without a gradient to compute, saved tensors freed after backward, an
undefined output gradient, forward-mode AD refused with a clear error — and the gradients of every
input against float64 ``F.linear`` on a cat, eagerly and through ``torch.func.grad``.
"""

from __future__ import annotations

import pytest
import torch
import torch.autograd.forward_ad as fwAD
import torch.nn.functional as F
from _util import randn


def _inputs(device: str, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, list[torch.Tensor],
                                                                      list[torch.Tensor]]:
    x = randn(3, 2, 16, device=device, dtype=dtype)
    ws = [randn(n, 16, device=device, dtype=dtype) for n in (8, 4, 12)]
    bs = [randn(n, device=device, dtype=dtype) for n in (8, 4, 12)]
    return x, ws, bs


def test_no_node_without_a_gradient(op: object, device: str) -> None:
    torch.manual_seed(200)
    x, ws, bs = _inputs(device)
    frozen = op.linear(x, ws, bs)  # grad mode on, nothing requires grad
    assert frozen.grad_fn is None and not frozen.requires_grad
    x.requires_grad_()
    with torch.no_grad():
        out = op.linear(x, ws, bs)
    assert out.grad_fn is None and not out.requires_grad
    torch.testing.assert_close(out, F.linear(x.detach(), torch.cat(ws), torch.cat(bs)))


def test_node_gradients_and_release(op: object, device: str) -> None:
    torch.manual_seed(201)
    x, ws, bs = _inputs(device)
    leaves = [x, *ws, *bs]
    for t in leaves:
        t.requires_grad_()
    out = op.linear(x, ws, bs)
    assert out.grad_fn.name() == "splitlinear::LinearBackward"
    assert len(out.grad_fn.next_functions) == len(leaves)
    dy = randn(*out.shape, device=device, dtype=out.dtype)
    got = torch.autograd.grad(out, leaves, dy)
    expected = torch.autograd.grad(F.linear(x, torch.cat(ws), torch.cat(bs)), leaves, dy)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-10)
    # The saved input and weights were freed (retain_graph=False).
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        torch.autograd.grad(out, leaves, dy)


def test_undefined_output_gradient(op: object, device: str) -> None:
    """A custom Function downstream that returns no gradient (None) gives the parts none."""
    torch.manual_seed(202)
    x, ws, bs = _inputs(device)
    x.requires_grad_()

    class Drop(torch.autograd.Function):
        @staticmethod
        def forward(ctx: object, t: torch.Tensor) -> torch.Tensor:
            return t.clone()

        @staticmethod
        def backward(ctx: object, g: torch.Tensor) -> None:
            return None

    y = Drop.apply(op.linear(x, ws, bs))
    (y + x.sum()).sum().backward()
    # Only the x.sum() path contributes: d/dx of y.numel() * x.sum().
    torch.testing.assert_close(x.grad, torch.full_like(x, y.numel()))


def test_forward_mode_ad_is_refused(op: object, device: str) -> None:
    torch.manual_seed(203)
    x, ws, bs = _inputs(device)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.ones_like(x))
        with pytest.raises(RuntimeError, match="splitlinear.linear: forward-mode AD"):
            op.linear(dual, ws, bs)


def test_torch_func_grad(op: object, device: str) -> None:
    """``torch.func.grad`` differentiates through the node (a Function refused functorch)."""
    torch.manual_seed(204)
    x, ws, bs = _inputs(device)

    def loss(fn: object, x: torch.Tensor, w0: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        return (fn(x, [w0, w1, w2]) ** 2).sum()

    got = torch.func.grad(lambda *a: loss(lambda x, w: op.linear(x, w, bs), *a), argnums=(0, 1, 2, 3))(x, *ws)
    expected = torch.func.grad(lambda *a: loss(lambda x, w: F.linear(x, torch.cat(w), torch.cat(bs)), *a),
                               argnums=(0, 1, 2, 3))(x, *ws)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-10)

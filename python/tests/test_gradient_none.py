"""A sibling whose output carries no gradient keeps a ``None`` gradient, as in eager PyTorch.

Fused with siblings whose outputs do get gradients, its weight would get the zero block of the
call's weight gradient instead (and an optimizer with weight decay or momentum would then move
it where eager leaves it). The plan leaves such a sibling unfused (a skip, not a rejection).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
from _util import compile_sl
from torch import nn

import splitlinear

#: How the third sibling's output ``v`` is used without carrying a gradient, one case per way.
_DEAD_USES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "detach": lambda v: v.detach(),
    "detach_after_ops": lambda v: (v * 2 + 1).detach(),
    "no_grad": lambda v: _under_no_grad(v),
    "argmax": lambda v: v.argmax(-1, keepdim=True).to(v.dtype),
    "comparison": lambda v: (v > 0).to(v.dtype),
}


def _under_no_grad(v: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return v.tanh()


class Siblings(nn.Module):
    def __init__(self, use: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(32, 32), nn.Linear(32, 16), nn.Linear(32, 16)
        self.use = use

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.q(x), self.k(x), self.v(x)
        return q.sin().sum() + (k * self.use(v)).sum()


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
@pytest.mark.parametrize("use", list(_DEAD_USES))
def test_sibling_without_gradient_keeps_none(op: object, device: str, use: str, fallback: str) -> None:
    torch.manual_seed(7)
    eager = Siblings(_DEAD_USES[use]).double().to(device)
    model = copy.deepcopy(eager)
    x = torch.randn(3, 5, 32, dtype=torch.float64, device=device)
    eager(x).backward()
    compile_sl(model, fallback=fallback, strict=True)(x).backward()
    assert model.v.weight.grad is None and model.v.bias.grad is None
    for name in ("q", "k"):
        for p, p_eager in zip(getattr(model, name).parameters(), getattr(eager, name).parameters()):
            torch.testing.assert_close(p.grad, p_eager.grad, rtol=1e-12, atol=1e-12)
    stats = splitlinear.stats()
    assert stats["regions_matched"] == 1 and stats["linears_fused"] == 2  # q and k
    assert stats["candidates_rejected"] == 0


def test_fp8_lone_sibling_without_gradient_keeps_none(op: object) -> None:
    """With option ``fp8`` the skipped sibling runs in FP8 as one part; its call gets no gradient."""
    torch.manual_seed(8)
    model = Siblings(_DEAD_USES["detach"])
    compile_sl(model, fp8="tensorwise")(torch.randn(4, 32)).backward()
    assert model.v.weight.grad is None
    assert model.q.weight.grad is not None and model.k.weight.grad is not None
    assert splitlinear.stats()["regions_matched"] == 2  # q+k, and v alone


def test_every_sibling_without_gradient_still_fuses(op: object) -> None:
    """No sibling's output carries a gradient: the call gets none, so all three fuse."""

    class AllDetached(Siblings):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = torch.cat([self.q(x), self.k(x), self.v(x)], -1).detach()
            return (x * out[..., :32]).sum()

    torch.manual_seed(9)
    eager = AllDetached(_DEAD_USES["detach"]).double()
    model = copy.deepcopy(eager)
    x = torch.randn(4, 32, dtype=torch.float64, requires_grad=True)
    eager(x).backward()
    x2 = x.detach().clone().requires_grad_()
    compile_sl(model)(x2).backward()
    torch.testing.assert_close(x2.grad, x.grad, rtol=1e-12, atol=1e-12)
    assert all(p.grad is None for p in model.parameters())
    assert splitlinear.stats()["linears_fused"] == 3


def test_sibling_output_returned_is_fused(op: object) -> None:
    """A graph output may get a gradient from outside: it counts as carrying one."""

    class Returns(Siblings):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            q, k, v = self.q(x), self.k(x), self.v(x)
            return (q.sin() + 0).sum() + k.sum(), v

    torch.manual_seed(10)
    eager = Returns(_DEAD_USES["detach"]).double()
    model = copy.deepcopy(eager)
    x = torch.randn(4, 32, dtype=torch.float64)
    g = torch.randn(4, 16, dtype=torch.float64)
    for m, fn in ((eager, eager), (model, compile_sl(model))):
        loss, v = fn(x)
        torch.autograd.backward([loss, v], [torch.ones(()), g])
    for p, p_eager in zip(model.parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, p_eager.grad, rtol=1e-12, atol=1e-12)
    assert splitlinear.stats()["linears_fused"] == 3


def test_two_siblings_one_without_gradient_under_strict(op: object) -> None:
    """The sibling left alone by the skip is skipped too, not rejected: ``strict=True`` compiles."""

    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(32, 16), nn.Linear(32, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (self.a(x) * self.b(x).detach()).sum()

    torch.manual_seed(11)
    eager = Two().double()
    model = copy.deepcopy(eager)
    x = torch.randn(4, 32, dtype=torch.float64)
    eager(x).backward()
    compile_sl(model, strict=True)(x).backward()
    assert model.b.weight.grad is None
    torch.testing.assert_close(model.a.weight.grad, eager.a.weight.grad, rtol=1e-12, atol=1e-12)
    assert splitlinear.stats()["candidates_rejected"] == 0


def test_gradient_through_an_in_place_write_counts(op: object) -> None:
    """Siblings whose outputs reach the loss only through in-place writes (no users in the graph)
    still carry a gradient: all three fuse, with eager's gradients."""

    class Written(Siblings):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q, k, v = self.q(x), self.k(x), self.v(x)
            buf = torch.zeros(x.shape[0], 32, dtype=x.dtype)
            buf[:, :16] = k
            buf[:, 16:].add_(v)
            return (q.sin() * buf).sum()

    torch.manual_seed(12)
    eager = Written(_DEAD_USES["detach"]).double()
    model = copy.deepcopy(eager)
    x = torch.randn(4, 32, dtype=torch.float64)
    eager(x).backward()
    compile_sl(model, strict=True)(x).backward()
    for p, p_eager in zip(model.parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, p_eager.grad, rtol=1e-12, atol=1e-12)
    assert splitlinear.stats()["linears_fused"] == 3

"""The op saves only what its backward reads (as ATen's linear does).

wgrad reads the input, dgrad reads the weight parts: with frozen weights
(LoRA-style fine-tuning) the input is not kept; with an input that needs no
gradient (the first layer), the weights are not kept.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _util import randn


def _saved(fn: object) -> list[torch.Tensor]:
    saved: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return saved


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.data_ptr() == b.data_ptr() and a.shape == b.shape


@pytest.mark.parametrize("case, bias", [
    (case, bias) for case in ("frozen-weights", "input-no-grad", "all-trainable", "only-bias")
    for bias in (True, False) if case != "only-bias" or bias  # only-bias needs a bias
])
def test_saves_only_what_backward_reads(op: object, device: str, case: str, bias: bool) -> None:
    torch.manual_seed(110)
    x = randn(4, 3, 8, device=device).requires_grad_(case != "input-no-grad")
    ws = [randn(n, 8, device=device).requires_grad_(case in ("input-no-grad", "all-trainable"))
          for n in (4, 6)]
    bs = [randn(n, device=device).requires_grad_() for n in (4, 6)] if bias else None
    if case == "only-bias":
        x.requires_grad_(False)

    out: list[torch.Tensor] = []
    saved = _saved(lambda: out.append(op.linear(x, ws, bs)))
    weights_needed = any(w.requires_grad for w in ws)
    assert any(_same(t, x) for t in saved) == weights_needed
    for w in ws:
        assert any(_same(t, w) for t in saved) == x.requires_grad
    assert len(saved) == int(weights_needed) + (len(ws) if x.requires_grad else 0)

    # Gradients are still right.
    leaves = [t for t in (x, *ws, *(bs or [])) if t.requires_grad]
    dy = randn(*out[0].shape, device=device)
    got = torch.autograd.grad(out[0], leaves, dy)
    expected = torch.autograd.grad(F.linear(x, torch.cat(ws), None if bs is None else torch.cat(bs)), leaves, dy)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)

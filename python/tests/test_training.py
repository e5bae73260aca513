"""A few SGD steps under the backend equal eager training."""

from __future__ import annotations

import copy

import pytest
import torch
from _models import TwoLayer
from _util import compile_sl, randn

import splitlinear


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
def test_sgd_three_steps(op: object, device: str, fallback: str) -> None:
    torch.manual_seed(40)
    eager_model = TwoLayer().to(device)
    model = copy.deepcopy(eager_model)
    compiled = compile_sl(model, fallback=fallback)
    opt_eager = torch.optim.SGD(eager_model.parameters(), lr=0.1, momentum=0.9)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = [(randn(4, 5, 16, device=device), randn(4, 5, 16, device=device)) for _ in range(3)]
    for x, target in data:
        for fn, o in ((eager_model, opt_eager), (compiled, opt)):
            o.zero_grad()
            loss = torch.nn.functional.mse_loss(fn(x), target)
            loss.backward()
            o.step()
        for (name, p_eager), p in zip(eager_model.named_parameters(), model.parameters()):
            assert torch.allclose(p, p_eager, rtol=1e-4, atol=1e-5), name
    stats = splitlinear.stats()
    assert stats["regions_matched"] == 2  # qkv cat; gate/up siblings
    assert stats["graphs_compiled"] == 1
    assert list(model.state_dict()) == list(eager_model.state_dict())

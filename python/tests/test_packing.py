"""``splitlinear.pack_parameters``: sibling projections become adjacent views of
one storage while Parameter objects, names, values and optimizers keep working."""

from __future__ import annotations

import torch
from torch import nn

import splitlinear


class Attention(nn.Module):
    def __init__(self, bias: bool) -> None:
        super().__init__()
        self.q_proj = nn.Linear(16, 16, bias=bias)
        self.k_proj = nn.Linear(16, 8, bias=bias)
        self.v_proj = nn.Linear(16, 8, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.q_proj(x), self.k_proj(x), self.v_proj(x)], -1)


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def test_packs_siblings_in_place() -> None:
    torch.manual_seed(0)
    model = Attention(bias=True)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    params = dict(model.named_parameters())
    report = splitlinear.pack_parameters(model)
    assert report.packed == [["q_proj", "k_proj", "v_proj"]]
    assert dict(model.named_parameters()) == params  # the same Parameter objects
    after = model.state_dict()
    assert list(after) == list(before)
    for k in before:
        torch.testing.assert_close(after[k], before[k], rtol=0, atol=0)
    w = [model.q_proj.weight, model.k_proj.weight, model.v_proj.weight]
    assert len({_storage(p) for p in w}) == 1
    assert [p.storage_offset() for p in w] == [0, 16 * 16, 16 * 16 + 8 * 16]
    assert len({_storage(m.bias) for m in (model.q_proj, model.k_proj, model.v_proj)}) == 1


def test_optimizer_and_load_state_dict_after_packing() -> None:
    torch.manual_seed(0)
    model = Attention(bias=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    splitlinear.pack_parameters(model)
    x = torch.randn(4, 16)
    model(x).square().sum().backward()
    old = model.k_proj.weight.detach().clone()
    opt.step()  # updates the packed storage through the same Parameter objects
    assert not torch.equal(model.k_proj.weight, old)
    state = {k: torch.randn_like(v) for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    assert len({_storage(m.weight) for m in (model.q_proj, model.k_proj, model.v_proj)}) == 1
    torch.testing.assert_close(model.v_proj.weight, state["v_proj.weight"], rtol=0, atol=0)


def test_skips_groups_it_cannot_pack() -> None:
    model = Attention(bias=False)
    model.v_proj.to(torch.float64)
    report = splitlinear.pack_parameters(model)
    assert report.packed == []
    assert report.skipped and "dtypes" in report.skipped[0][1]


def test_tied_weight_stays_tied() -> None:
    model = Attention(bias=False)
    other = nn.Linear(16, 16, bias=False)
    other.weight = model.q_proj.weight  # tied
    splitlinear.pack_parameters(model)
    assert other.weight is model.q_proj.weight
    assert _storage(other.weight) == _storage(model.k_proj.weight)


def test_compiled_packed_model_takes_the_view(op) -> None:
    torch.manual_seed(0)
    model = Attention(bias=True)
    splitlinear.pack_parameters(model)
    x = torch.randn(4, 16)
    ref = model(x)
    compiled = torch.compile(model, backend="splitlinear", fullgraph=True, options={"fallback": "eager"})
    torch.testing.assert_close(compiled(x), ref, rtol=1e-5, atol=1e-5)
    stats = splitlinear.stats()
    assert stats["regions_matched"] == 1 and stats["views"] >= 1 and stats["cats"] == 0

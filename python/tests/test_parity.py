"""Forward/backward parity of compiled split linears against eager PyTorch."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from _models import CatLinear, SiblingQKV
from _util import assert_close_to, compile_sl, graph_breaks, graphs, op_runs, randn

import splitlinear

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _run(model: nn.Module, x: torch.Tensor,
         fn: object = None) -> tuple[list[torch.Tensor], dict[str, torch.Tensor | None]]:
    """Forward (``fn``, default ``model``), then backward of a fixed random projection of the
    outputs; returns the outputs and the gradients of ``model``'s Parameters."""
    for p in model.parameters():
        p.grad = None
    out = (model if fn is None else fn)(x)  # type: ignore[operator]
    outs = list(out) if isinstance(out, tuple) else [out]
    gen = torch.Generator().manual_seed(1234)
    loss = sum((o.double() * torch.randn(o.shape, generator=gen, dtype=torch.float64).to(o.device)).sum()
               for o in outs)
    loss.backward()
    return [o.detach() for o in outs], {n: p.grad for n, p in model.named_parameters()}


def _check_parity(model: nn.Module, x: torch.Tensor, compiled: object) -> None:
    dtype = x.dtype
    reference = copy.deepcopy(model).double()
    x_ref = x.detach().double().requires_grad_()
    ref_out, ref_grads = _run(reference, x_ref)
    x_c = x.detach().clone().requires_grad_()
    outs, got_grads = _run(model, x_c, compiled)
    assert len(outs) == len(ref_out)
    for o, r in zip(outs, ref_out):
        assert o.dtype == dtype and o.shape == r.shape
        assert_close_to(o, r, dtype)
    assert_close_to(x_c.grad, x_ref.grad, dtype, scale=4)
    for name, g in got_grads.items():
        if ref_grads[name] is None:
            assert g is None, name
        else:
            assert g is not None, f"no gradient on Parameter {name}"
            assert_close_to(g, ref_grads[name], dtype, scale=4)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_explicit_cat_fullgraph(op: object, device: str, dtype: torch.dtype, bias: bool) -> None:
    torch.manual_seed(0)
    model = CatLinear(32, [16, 8, 8], bias=bias, dtype=dtype, device=device)
    compiled = compile_sl(model)
    _check_parity(model, randn(2, 5, 32, dtype=dtype, device=device), compiled)
    assert graph_breaks() == 0
    assert graphs() == 1
    stats = splitlinear.stats()
    assert stats["regions_matched"] == 1 and stats["candidates_rejected"] == 0
    assert op_runs() >= 1  # the op ran


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_sibling_linears_fullgraph(op: object, device: str, dtype: torch.dtype, bias: bool) -> None:
    torch.manual_seed(1)
    model = SiblingQKV(32, 32, 16, bias=bias, dtype=dtype, device=device)
    compiled = compile_sl(model)
    _check_parity(model, randn(3, 4, 32, dtype=dtype, device=device), compiled)
    assert graph_breaks() == 0
    stats = splitlinear.stats()
    assert stats["regions_matched"] == 1 and stats["linears_fused"] == 3
    assert stats["candidates_rejected"] == 0


@pytest.mark.parametrize("model_kind", ["cat", "siblings"])
def test_inductor_fallback(op: object, device: str, model_kind: str) -> None:
    """The op survives inside an Inductor-compiled graph (extern kernel) forward and backward."""
    torch.manual_seed(2)
    if model_kind == "cat":
        model: nn.Module = CatLinear(32, [16, 8, 8], bias=True, device=device)
    else:
        model = SiblingQKV(32, 32, 16, bias=True, device=device)
    compiled = compile_sl(model, fallback="inductor")
    _check_parity(model, randn(2, 3, 32, device=device), compiled)
    assert graph_breaks() == 0 and splitlinear.stats()["regions_matched"] == 1
    assert op_runs() >= 1


def test_grads_land_on_real_parameters(op: object, device: str) -> None:
    torch.manual_seed(3)
    model = CatLinear(16, [8, 8, 4], device=device)
    params_before = {n: p for n, p in model.named_parameters()}
    compiled = compile_sl(model)
    compiled(randn(4, 16, device=device)).sum().backward()
    for name, p in model.named_parameters():
        assert p is params_before[name]
        assert p.grad is not None and p.grad.shape == p.shape, name
        assert p.grad.abs().sum() > 0


def test_state_dict_unchanged(op: object, device: str) -> None:
    torch.manual_seed(4)
    model = SiblingQKV(16, 16, 8, bias=True, device=device)
    sd_before = {k: v.clone() for k, v in model.state_dict().items()}
    compiled = compile_sl(model)
    compiled(randn(2, 16, device=device))
    sd_after = model.state_dict()
    assert list(sd_after) == list(sd_before)
    for key, value in sd_before.items():
        assert torch.equal(sd_after[key], value), key
    assert [k.removeprefix("_orig_mod.") for k in compiled.state_dict()] == list(sd_before)


@pytest.mark.parametrize(
    "rows",
    [[64, 16, 16], [4] * 16, [8, 0, 8]],
    ids=["gqa-unequal", "16-parts", "empty-part"],
)
def test_part_shapes(op: object, device: str, rows: list[int]) -> None:
    torch.manual_seed(5)
    model = CatLinear(32, rows, bias=True, device=device)
    _check_parity(model, randn(3, 32, device=device), compile_sl(model))
    assert splitlinear.stats()["regions_matched"] == 1


@pytest.mark.parametrize("min_parts", [1, 2])
def test_single_part(op: object, device: str, min_parts: int) -> None:
    """A one-part cat is left to the fallback by default and replaced with ``min_parts=1``."""
    torch.manual_seed(6)
    model = CatLinear(16, [12], bias=True, device=device)
    _check_parity(model, randn(5, 16, device=device), compile_sl(model, min_parts=min_parts))
    assert splitlinear.stats()["regions_matched"] == (1 if min_parts == 1 else 0)


class _SameTwice(nn.Module):
    def __init__(self, device: str) -> None:
        super().__init__()
        self.w = nn.Parameter(randn(8, 16, device=device, scale=0.25))
        self.u = nn.Parameter(randn(4, 16, device=device, scale=0.25))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, torch.cat([self.w, self.u, self.w]))


def test_same_parameter_twice(op: object, device: str) -> None:
    """Both occurrences contribute to the gradient."""
    torch.manual_seed(7)
    model = _SameTwice(device)
    _check_parity(model, randn(6, 16, device=device), compile_sl(model))
    assert splitlinear.stats()["regions_matched"] == 1


class _NonContiguousPart(nn.Module):
    """One part is a transposed view of a ``[K, N]`` Parameter, one a column slice of a wider one."""

    def __init__(self, device: str) -> None:
        super().__init__()
        self.a = nn.Parameter(randn(8, 16, device=device, scale=0.25))
        self.bt = nn.Parameter(randn(16, 6, device=device, scale=0.25))  # used as bt.t(): [6, 16]
        self.wide = nn.Parameter(randn(4, 32, device=device, scale=0.25))  # used as wide[:, :16]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, torch.cat([self.a, self.bt.t(), self.wide[:, :16]]))


def test_non_contiguous_part(op: object, device: str) -> None:
    torch.manual_seed(8)
    model = _NonContiguousPart(device)
    _check_parity(model, randn(5, 16, device=device), compile_sl(model))
    assert splitlinear.stats()["regions_matched"] == 1


def test_misaligned_adjacent_views(op: object, device: str) -> None:
    """Adjacent parts whose first element is 4 bytes past an aligned address: correct results."""
    torch.manual_seed(9)
    model = CatLinear(16, [8, 8, 4], bias=True, device=device)
    compiled = compile_sl(model)
    x = randn(3, 16, device=device)
    buf = torch.empty(1 + 20 * 16, device=device)
    bbuf = torch.empty(1 + 20, device=device)
    offset, boffset = 1, 1
    for w, b in zip(model.weights(), model.biases()):
        n = w.shape[0]
        view = buf[offset:offset + n * 16].view(n, 16)
        view.copy_(w.detach())
        w.data = view
        bview = bbuf[boffset:boffset + n]
        bview.copy_(b.detach())
        b.data = bview
        offset += n * 16
        boffset += n
    assert model.weight_0.data_ptr() % 16 != 0
    _check_parity(model, x, compiled)


def test_requires_grad_toggled_on_one_part(op: object, device: str) -> None:
    torch.manual_seed(10)
    model = CatLinear(16, [8, 8, 8], bias=True, device=device)
    compiled = compile_sl(model)
    _check_parity(model, randn(4, 16, device=device), compiled)
    model.weight_1.requires_grad_(False)
    model.bias_2.requires_grad_(False)
    _check_parity(model, randn(4, 16, device=device), compiled)
    assert model.weight_1.grad is None and model.bias_2.grad is None
    assert model.weight_0.grad is not None and model.bias_1.grad is not None
    model.weight_1.requires_grad_(True)
    model.bias_2.requires_grad_(True)
    _check_parity(model, randn(4, 16, device=device), compiled)


def test_no_grad_inference(op: object, device: str) -> None:
    torch.manual_seed(11)
    model = SiblingQKV(16, 16, 8, bias=True, device=device)
    compiled = compile_sl(model)
    x = randn(2, 3, 16, device=device)
    with torch.no_grad():
        got = compiled(x)
        expected = model(x)
    for g, e in zip(got, expected):
        assert not g.requires_grad
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)
    assert splitlinear.stats()["regions_matched"] == 1


def test_batch_and_sequence_changes(op: object, device: str) -> None:
    """Changing batch and sequence length recompiles exactly as often as plain Dynamo does
    (once, when the dims become dynamic), not more."""
    torch.manual_seed(12)
    model = SiblingQKV(16, 16, 8, bias=False, device=device)
    shapes = [(2, 3), (3, 5), (4, 7), (5, 2), (2, 9)]
    plain: list[int] = []

    def counting_backend(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> object:
        plain.append(1)
        return gm.forward

    reference = torch.compile(model, backend=counting_backend, fullgraph=True)
    for batch, seq in shapes:
        reference(randn(batch, seq, 16, device=device))
    torch._dynamo.reset()

    compiled = compile_sl(model)
    for batch, seq in shapes:
        x = randn(batch, seq, 16, device=device)
        for g, e in zip(compiled(x), model(x)):
            torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)
    assert graphs() == len(plain) <= 2
    stats = splitlinear.stats()
    assert stats["candidates_rejected"] == 0 and stats["regions_matched"] == graphs()

"""``torch.autocast``: the op follows ``F.linear``'s policy; compiled regions under autocast are fused.

The standard mixed-precision recipe keeps float32 Parameters and runs the
forward under ``torch.autocast(device, dtype=bfloat16)``: ``F.linear`` casts
input, weight and bias to bfloat16, returns bfloat16, and gradients reach the
Parameters in float32. The op does the same (its Autocast kernel), and the
backend fuses linears under autocast, whether autocast is entered inside the
compiled function or around the compiled call.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from _models import CatLinear, SiblingQKV
from _util import assert_close_to, compile_sl, graphs, op_runs, randn

import splitlinear


def _amp_dtypes(device: str) -> list[torch.dtype]:
    return [torch.bfloat16] if device == "cpu" else [torch.bfloat16, torch.float16]


def _reference(x: torch.Tensor, ws: list[torch.Tensor], bs: list[torch.Tensor] | None,
               dtype: torch.dtype) -> torch.Tensor:
    """float64 linear over operands rounded to ``dtype`` (what autocast computes, exactly)."""
    w = torch.cat([t.detach().to(dtype).double() for t in ws])
    b = None if bs is None else torch.cat([t.detach().to(dtype).double() for t in bs])
    return F.linear(x.detach().to(dtype).double(), w, b)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("input_dtype", [torch.float32, "amp"], ids=["fp32-input", "amp-input"])
def test_op_under_autocast_matches_f_linear(op: object, device: str, bias: bool,
                                            input_dtype: object) -> None:
    torch.manual_seed(70)
    for dtype in _amp_dtypes(device):
        ws = [randn(n, 32, device=device, scale=0.2).requires_grad_() for n in (16, 8, 8)]
        bs = [randn(n, device=device).requires_grad_() for n in (16, 8, 8)] if bias else None
        x = randn(4, 3, 32, device=device, dtype=dtype if input_dtype == "amp" else torch.float32)
        x.requires_grad_()
        with torch.autocast(device, dtype=dtype):
            y = op.linear(x, ws, bs)
            expected = F.linear(x, torch.cat(ws), None if bs is None else torch.cat(bs))
        assert y.dtype == expected.dtype == dtype
        assert_close_to(y, _reference(x, ws, bs, dtype), dtype)

        dy = randn(*y.shape, device=device, dtype=dtype)
        got = torch.autograd.grad(y, [x, *ws, *(bs or [])], dy)
        want = torch.autograd.grad(expected, [x, *ws, *(bs or [])], dy)
        for g, w, t in zip(got, want, [x, *ws, *(bs or [])]):
            assert g.dtype == t.dtype  # float32 Parameters get float32 gradients
            torch.testing.assert_close(g.double(), w.double(), rtol=3e-2, atol=3e-2)


def test_op_float64_under_autocast_is_not_cast(op: object, device: str) -> None:
    """Autocast leaves float64 alone (as for ``F.linear``)."""
    torch.manual_seed(71)
    ws = [randn(n, 8, device=device, dtype=torch.float64) for n in (4, 4)]
    x = randn(3, 8, device=device, dtype=torch.float64)
    with torch.autocast(device, dtype=torch.bfloat16):
        y = op.linear(x, ws)
    assert y.dtype == torch.float64
    assert_close_to(y, F.linear(x, torch.cat(ws)), torch.float64)


def test_op_mixed_dtypes_without_autocast_still_raise(op: object, device: str) -> None:
    ws = [randn(4, 8, device=device) for _ in range(2)]
    x = randn(3, 8, device=device, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match=r"weight\[0\] has dtype Float but input has BFloat16"):
        op.linear(x, ws)


class _AutocastInside(nn.Module):
    """``inner`` run under ``torch.autocast`` entered inside the compiled forward."""

    def __init__(self, inner: nn.Module, device: str, dtype: torch.dtype) -> None:
        super().__init__()
        self.inner, self.device, self.dtype = inner, device, dtype

    def forward(self, x: torch.Tensor) -> object:
        with torch.autocast(self.device, dtype=self.dtype):
            return self.inner(x)


def _outputs(value: object) -> list[torch.Tensor]:
    return list(value) if isinstance(value, tuple) else [value]


@pytest.mark.parametrize("where", ["inside", "around"])
@pytest.mark.parametrize("pattern", ["cat", "siblings"])
@pytest.mark.parametrize("fallback", ["eager", "inductor"])
def test_compiled_under_autocast(op: object, device: str, fallback: str, pattern: str, where: str) -> None:
    torch.manual_seed(72)
    dtype = torch.bfloat16
    inner: nn.Module = (CatLinear(32, [16, 8, 8], bias=True, device=device) if pattern == "cat"
                        else SiblingQKV(32, 16, 8, bias=True, device=device))
    reference = _AutocastInside(inner, device, dtype) if where == "inside" else inner
    model = copy.deepcopy(reference)
    compiled = compile_sl(model, fallback=fallback)

    for _ in range(2):
        x = randn(4, 3, 32, device=device)
        if where == "around":
            with torch.autocast(device, dtype=dtype):
                got, expected = _outputs(compiled(x)), _outputs(reference(x))
        else:
            got, expected = _outputs(compiled(x)), _outputs(reference(x))
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype == dtype
            torch.testing.assert_close(g.double(), e.double(), rtol=3e-2, atol=3e-2)
        sum(g.float().square().sum() for g in got).backward()
        sum(e.float().square().sum() for e in expected).backward()
        for (name, p), q in zip(reference.named_parameters(), model.parameters()):
            assert q.grad is not None and q.grad.dtype == torch.float32, name
            torch.testing.assert_close(q.grad, p.grad, rtol=5e-2, atol=5e-2, msg=name)
        for m in (model, reference):
            m.zero_grad()
    stats = splitlinear.stats()
    assert stats["regions_matched"] == 1 and stats["candidates_rejected"] == 0
    assert graphs() == 1
    assert op_runs() > 0


def _cast_concat_layouts(device: str) -> dict[str, list[torch.Tensor]]:
    """Float32 parts [3, 8], [5, 8], [2, 8] laid out as each layout says (fresh random data)."""
    rows = [3, 5, 2]
    flat = randn(sum(rows) + 4, 8, device=device)
    packed = list(flat[:10].split(rows))
    gap = [flat[0:3], flat[4:9], flat[9:11]]  # one row between the first two parts
    reordered = [packed[1], packed[0], packed[2]]  # one storage, out of order
    strided = [randn(8, r, device=device).t() for r in rows]  # not contiguous
    separate = [randn(r, 8, device=device) for r in rows]
    return {"packed": packed, "gap": gap, "reordered": reordered, "strided": strided, "separate": separate}


@pytest.mark.parametrize("layout", ["packed", "gap", "reordered", "strided", "separate"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_cast_concat_equals_cat_then_cast(op: object, device: str, layout: str, dtype: torch.dtype) -> None:
    """``cast_concat`` equals ``cat(parts).to(dtype)`` in every layout; packed parts take one cast of
    their storage (regression: `cat` with a converting output cost ~100 µs of host time per call).
    The output is a new contiguous tensor, even for the parts' own dtype, and gradients reach each
    part in its dtype; the parts get row blocks of one cast gradient."""
    parts = [p.detach().requires_grad_() for p in _cast_concat_layouts(device)[layout]]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = torch.ops.splitlinear.cast_concat(parts, dtype)
    ran = {e.key for e in prof.key_averages()}
    assert ("aten::cat" in ran) == (layout != "packed"), sorted(ran)
    want = torch.cat([p.detach() for p in parts]).to(dtype)
    assert out.dtype == dtype and out.is_contiguous() and out.shape == want.shape
    assert torch.equal(out, want)
    assert all(out.untyped_storage().data_ptr() != p.untyped_storage().data_ptr() for p in parts)
    seed = randn(*out.shape, device=device).to(dtype)
    grads = torch.autograd.grad(out, parts, seed)
    offset = 0
    for p, g in zip(parts, grads, strict=True):
        assert g.dtype == p.dtype and g.shape == p.shape
        assert torch.equal(g, seed[offset:offset + p.shape[0]].to(p.dtype))
        offset += p.shape[0]


def test_cast_concat_packed_output_is_independent(op: object, device: str) -> None:
    """Writing to the cast buffer never reaches the parts (the one-cast path copies)."""
    parts = _cast_concat_layouts(device)["packed"]
    before = [p.clone() for p in parts]
    out = torch.ops.splitlinear.cast_concat(parts, torch.float32)
    out.add_(1.0)
    for p, b in zip(parts, before, strict=True):
        assert torch.equal(p, b)


def test_cast_concat_resolves_lazy_conjugates(op: object) -> None:
    """Parts of one storage that are lazy conjugate views are not read as one block (the bit
    belongs to each view): the result equals ``cat(parts).to(dtype)``."""
    flat = torch.complex(randn(5, 4), randn(5, 4))
    a, b = flat.split([2, 3])
    for parts in ([a.conj(), b], [a, b.conj()], [a.conj(), b.conj()], [torch._neg_view(a), b]):
        got = torch.ops.splitlinear.cast_concat(parts, torch.complex128)
        want = torch.cat([p.resolve_conj().resolve_neg() for p in parts]).to(torch.complex128)
        assert torch.equal(got, want)

"""An independent emulation of the FP8 ops, for the tests: quantization in float32, GEMMs in float64.

Written from the conventions (``Runtime.h``, "FP8 quantization";
``lib/Torch/Fp8Autograd.cpp`` for the backward), not from the C++ code:
``scale = fp8_max / amax`` (1 for amax 0, FLT_MAX where it overflows; with ``pow2``
``exp2(floor(log2(scale)))``, torchao's rounding), ``x8 = clamp(v * scale).to(fp8)``
(torch's cast rounds to nearest even; the clamp saturates), ``scale_inv =
1 / scale``, every step a float32 operation. Decoding FP8 is exact, so the
GEMMs here are exact in float64 up to their last rounding.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

E4M3 = torch.float8_e4m3fn
E5M2 = torch.float8_e5m2
FP8_MAX = {E4M3: 448.0, E5M2: 57344.0}
#: Explicit mantissa bits and smallest normal exponent of the output dtypes.
_FORMAT = {torch.bfloat16: (7, -126), torch.float16: (10, -14), torch.float32: (23, -126)}


class Quantized(NamedTuple):
    data: Tensor  # [M, K] FP8
    data_t: Tensor  # [K, M] FP8
    scale_inv: Tensor  # float32 [1] / [M] / [K]


def _scale(amax: Tensor, dtype: torch.dtype, pow2: bool = False) -> Tensor:
    fp8_max = torch.tensor(FP8_MAX[dtype], dtype=torch.float32)
    scale = fp8_max / amax
    # An overflowing quotient (amax < fp8_max / FLT_MAX) is clamped to FLT_MAX.
    scale = torch.where(scale == torch.inf, torch.finfo(torch.float32).max, scale)
    if pow2:
        scale = torch.exp2(torch.floor(torch.log2(scale)))
    return torch.where(amax == 0, torch.ones_like(amax), scale)


def _cast(v: Tensor, scale: Tensor, dtype: torch.dtype) -> Tensor:
    m = FP8_MAX[dtype]
    return (v * scale).clamp(-m, m).to(dtype)


def quantize(x: Tensor, dtype: torch.dtype, axis: str, col_scale: Tensor | None = None,
             pow2: bool = False) -> Quantized:
    """``fp8_quantize`` of ``x`` [..., K] (flattened to [M, K]); ``pow2``: ``pow2_scales``."""
    v = x.detach().reshape(-1, x.shape[-1]).cpu().float()
    if col_scale is not None:
        v = v * col_scale.cpu()
    a = v.abs()
    if axis == "tensor":
        amax = a.amax().reshape(1) if a.numel() else torch.zeros(1)
        scale = _scale(amax, dtype, pow2)
        q = _cast(v, scale, dtype)
    elif axis == "rows":
        scale = _scale(a.amax(1) if a.shape[1] else torch.zeros(a.shape[0]), dtype, pow2)
        q = _cast(v, scale[:, None], dtype)
    else:
        scale = _scale(a.amax(0) if a.shape[0] else torch.zeros(a.shape[1]), dtype, pow2)
        q = _cast(v, scale[None, :], dtype)
    return Quantized(q, q.t().contiguous(), 1.0 / scale)


class Parts(NamedTuple):
    data: Tensor  # [N, K]
    data_t: Tensor  # [K, N]
    scale_inv: Tensor  # [P]
    row_scale_inv: Tensor  # [N]


def cast_parts(parts: list[Tensor], dtype: torch.dtype, pow2: bool = False) -> Parts:
    """``fp8_cast_parts``: each part with its own tensorwise scale."""
    qs = [quantize(p, dtype, "tensor", pow2=pow2) for p in parts]
    data = torch.cat([q.data for q in qs])
    scale_inv = torch.cat([q.scale_inv for q in qs])
    rows = torch.tensor([p.shape[0] for p in parts])
    return Parts(data, data.t().contiguous(), scale_inv, scale_inv.repeat_interleave(rows))


def shared_scale_parts(parts: list[Tensor], dtype: torch.dtype) -> Parts:
    """What one scale for the concatenated weight gives (TransformerEngine's choice)."""
    q = quantize(torch.cat([p.detach().cpu() for p in parts]), dtype, "tensor")
    n = q.data.shape[0]
    return Parts(q.data, q.data_t, q.scale_inv.expand(len(parts)).clone(), q.scale_inv.expand(n).clone())


class Gemm(NamedTuple):
    exact: Tensor  # float64 [M, N]: the scaled GEMM of the FP8 operands, exactly
    bound: Tensor  # float64 [M, N]: a bound on an fp32-accumulating GEMM's rounding before the last one


def scaled_gemm(a8: Tensor, sa: Tensor, b8: Tensor, sb: Tensor, bias: Tensor | None = None,
                acc_eps: float = 2.0**-24) -> Gemm:
    """``sa * sb * (a8 · b8ᵀ) + bias`` for ``a8`` [M, K], ``b8`` [N, K] in float64.

    ``bound``: what an implementation that accumulates in float32 (unit
    roundoff ``acc_eps``) and then applies the scales and the bias may add
    before it rounds to the output dtype, ``(K + 3) * acc_eps * Σ|terms|``
    (the classic dot-product bound, plus the scale product and bias adds).
    """
    a = a8.cpu().double()
    b = b8.cpu().double()
    s = sa.cpu().double().reshape(-1, 1) * sb.cpu().double().reshape(1, -1)
    exact = s * (a @ b.t())
    mag = s * (a.abs() @ b.abs().t())
    if bias is not None:
        exact = exact + bias.cpu().double()
        mag = mag + bias.cpu().double().abs()
    return Gemm(exact, (a.shape[1] + 3) * acc_eps * mag)


def tensor_core_bound(g: Gemm, k: int) -> Gemm:
    """``g`` with its fp32 accumulation bound ``(k + 3) 2^-24 Σ|terms|`` replaced by the FP8 tensor
    cores' ``2^-12 Σ|terms|``: Hopper's FP8 MMA keeps about 14 bits of its partial sums (the runtime
    gtests' bound, which the H200 met with and without fast accumulation). For GEMMs on a GPU."""
    return Gemm(g.exact, g.bound * (2.0**-12 / ((k + 3) * 2.0**-24)))


def ulp(x: Tensor, dtype: torch.dtype) -> Tensor:
    """The spacing of ``dtype``'s numbers at |x| (float64 in and out; subnormal spacing near 0)."""
    mantissa, min_exp = _FORMAT[dtype]
    _, e = torch.frexp(x.abs().double())
    exp = torch.clamp(e - 1, min=min_exp)
    return torch.ldexp(torch.ones_like(x, dtype=torch.float64), exp - mantissa)


def assert_within_ulp(actual: Tensor, gemm: Gemm, dtype: torch.dtype, ulps: float = 1.0, what: str = "") -> None:
    """``|actual - exact| <= ulps * ulp(exact) + 2 * bound`` elementwise (see :func:`scaled_gemm`)."""
    assert actual.dtype == dtype, f"{what}: dtype {actual.dtype}, expected {dtype}"
    a = actual.detach().cpu().double().reshape(gemm.exact.shape)
    err = (a - gemm.exact).abs()
    tol = ulps * ulp(gemm.exact, dtype) + 2 * gemm.bound
    bad = err > tol
    if bad.any():
        i = int(bad.flatten().nonzero()[0])
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.numel()} elements beyond {ulps} ulp of {dtype}; first at flat "
            f"index {i}: got {a.flatten()[i].item()!r}, exact {gemm.exact.flatten()[i].item()!r}, "
            f"tolerance {tol.flatten()[i].item()!r}"
        )


def assert_same_fp8(actual: Tensor, expected: Tensor, what: str = "") -> None:
    """Bit-for-bit equality of FP8 tensors (bytes), shapes included."""
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, expected {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}"
    a = actual.cpu().contiguous().view(torch.uint8)
    e = expected.cpu().contiguous().view(torch.uint8)
    diff = (a != e)
    assert not diff.any(), f"{what}: {int(diff.sum())} of {diff.numel()} bytes differ"


def rel_err(actual: Tensor, exact: Tensor) -> float:
    """Frobenius-norm relative error against a float64 reference."""
    a = actual.detach().cpu().double()
    e = exact.detach().cpu().double()
    return float((a - e).norm() / e.norm())


class LinearRef(NamedTuple):
    """The emulation of ``fp8_linear``'s forward and backward."""

    y: Gemm
    dx: Gemm | None
    dw: Gemm | None  # [N, K]: the weight gradients of all parts, stacked
    db: Tensor | None  # float64 [N]


def fp8_linear(x: Tensor, weight: list[Tensor], bias: list[Tensor] | None, recipe: str,
               dy: Tensor | None = None) -> LinearRef:
    """The forward of ``fp8_linear`` and, with ``dy``, its backward as ``Fp8Autograd.cpp`` describes it.

    Forward: x -> e4m3 (tensor, or rows), parts -> e4m3 with their own scales,
    ``sx * ŝ * (x8 · W8ᵀ) + cat(bias)``. dgrad: ``dy * ŝ`` (column scale)
    quantized to dY's type (tensorwise: e5m2 per tensor; rowwise: e4m3 per row), times ``W8`` (``W8ᵀ``'s
    rows), unit weight scale; tensorwise with one part: ``dy`` quantized as it is, the
    part's scale as the weight scale. wgrad: ``dyᵀ`` and ``xᵀ`` quantized (tensorwise:
    x's forward scale; rowwise: per column of x and of dy), or ``dyᵀ · x`` in
    high precision (``rowwise_with_gw_hp``: exact here, rounded by the op). The rowwise
    recipes round every scale down to a power of 2 (torchao's rowwise).
    """
    rowwise = recipe != "tensorwise"
    pow2 = rowwise
    gdt = E4M3 if rowwise else E5M2
    xq = quantize(x, E4M3, "rows" if rowwise else "tensor", pow2=pow2)
    wq = cast_parts(weight, E4M3, pow2)
    sw = wq.scale_inv if len(weight) == 1 else wq.row_scale_inv
    b = None if bias is None else torch.cat([t.detach().cpu() for t in bias])
    y = scaled_gemm(xq.data, xq.scale_inv, wq.data, sw, b)
    if dy is None:
        return LinearRef(y, None, None, None)
    g = dy.detach().reshape(-1, dy.shape[-1])
    if not rowwise and len(weight) == 1:
        # One part: its scale goes to the GEMM, and dy is quantized once for dgrad and wgrad.
        dq = quantize(g, E5M2, "tensor")
        dx = scaled_gemm(dq.data, dq.scale_inv, wq.data_t, wq.scale_inv)
    else:
        dq = quantize(g, gdt, "rows" if rowwise else "tensor", col_scale=wq.row_scale_inv, pow2=pow2)
        dx = scaled_gemm(dq.data, dq.scale_inv, wq.data_t, torch.ones(1))
    if recipe == "rowwise_with_gw_hp":
        xd = x.detach().reshape(-1, x.shape[-1]).cpu().double()
        gd = g.cpu().double()
        exact = gd.t() @ xd
        dw = Gemm(exact, (xd.shape[0] + 3) * 2.0**-24 * (gd.abs().t() @ xd.abs()))
    else:
        gq = quantize(g, gdt, "cols" if rowwise else "tensor", pow2=pow2)
        if rowwise:
            xc = quantize(x, E4M3, "cols", pow2=pow2)
            dw = scaled_gemm(gq.data_t, gq.scale_inv, xc.data_t, xc.scale_inv)
        else:
            dw = scaled_gemm(gq.data_t, gq.scale_inv, xq.data_t, xq.scale_inv)
    db = g.cpu().double().sum(0) if bias is not None else None
    return LinearRef(y, dx, dw, db)


def fresh(*shape: int, scale: float = 1.0, dtype: torch.dtype = torch.float32, device: str = "cpu",
          generator: torch.Generator | None = None) -> Tensor:
    """Random normal data (never zeros) times ``scale``, in ``dtype``."""
    t = torch.randn(*shape, dtype=torch.float64, generator=generator) * scale
    return t.to(dtype=dtype, device=device)


def rows_of(shape: tuple[int, ...]) -> int:
    return math.prod(shape[:-1])


BLOCK = 128


def quantize_blocks(x: Tensor, block_rows: int, pow2: bool) -> tuple[Tensor, Tensor]:
    """``x`` [R, C] quantized to e4m3 in ``block_rows`` x 128 blocks (1x128 or 128x128), with
    ``pow2`` the scales rounded down to powers of 2: ``(q [R, C], scale_inv [R / block_rows, C / 128])``."""
    v = x.detach().reshape(-1, x.shape[-1]).cpu().float()
    r, c = v.shape
    blocks = v.reshape(r // block_rows, block_rows, c // BLOCK, BLOCK)
    scale = _scale(blocks.abs().amax(dim=(1, 3)), E4M3, pow2)
    q = _cast(blocks, scale[:, None, :, None], E4M3).reshape(r, c)
    return q, 1.0 / scale


def _dequantize_blocks(q: Tensor, scale_inv: Tensor) -> Tensor:
    """float64 ``q`` times its block scales (exact: an FP8 value times a float32)."""
    block_rows = q.shape[0] // scale_inv.shape[0]
    s = scale_inv.double().repeat_interleave(block_rows, 0).repeat_interleave(BLOCK, 1)
    return q.double() * s


def block_gemm(a8: Tensor, sa: Tensor, b8: Tensor, sb: Tensor, bias: Tensor | None = None) -> Gemm:
    """``deq(a8) · deq(b8)ᵀ + bias`` in float64 for block-scaled ``a8`` [M, K] (1x128) and ``b8`` [N, K]
    (1x128 or 128x128, from ``sb``'s shape), with :func:`scaled_gemm`'s float32 accumulation bound."""
    a, b = _dequantize_blocks(a8, sa), _dequantize_blocks(b8, sb)
    exact, mag = a @ b.t(), a.abs() @ b.abs().t()
    if bias is not None:
        exact = exact + bias.cpu().double()
        mag = mag + bias.cpu().double().abs()
    return Gemm(exact, (a.shape[1] + 3) * 2.0**-24 * mag)


def pad_rows(t: Tensor) -> Tensor:
    """``t`` [M, C] with zero rows appended up to a multiple of 128 (the recipe's wgrad operands)."""
    pad = -t.shape[0] % BLOCK
    return torch.cat([t, t.new_zeros(pad, t.shape[1])]) if pad else t


def fp8_linear_blockwise(x: Tensor, weight: list[Tensor], bias: list[Tensor] | None, pow2: bool = True,
                         dy: Tensor | None = None) -> LinearRef:
    """``fp8_linear`` under ``blockwise`` (``pow2``) or ``blockwise_fp32_scales``, as
    ``lib/Torch/Fp8Blockwise.cpp`` describes it (TransformerEngine's Float8BlockScaling): x and dy
    in 1x128 blocks along the contraction, every part in its own 128x128 blocks, all e4m3; dgrad
    ``dy8 · W8`` with the forward's blocks; wgrad ``dyᵀ · x``, both quantized in 1x128 blocks along
    the tokens (zero-padded to a multiple of 128)."""
    x2 = x.detach().reshape(-1, x.shape[-1]).cpu().float()
    xq, sx = quantize_blocks(x2, 1, pow2)
    wq = [quantize_blocks(w.detach().cpu().float(), BLOCK, pow2) for w in weight]
    w8, sw = torch.cat([q for q, _ in wq]), torch.cat([s for _, s in wq])
    b = None if bias is None else torch.cat([t.detach().cpu() for t in bias])
    y = block_gemm(xq, sx, w8, sw, b)
    if dy is None:
        return LinearRef(y, None, None, None)
    g = dy.detach().reshape(-1, dy.shape[-1]).cpu().float()
    gq, sg = quantize_blocks(g, 1, pow2)
    dx = block_gemm(gq, sg, w8.t().contiguous(), sw.t().contiguous())
    gt, sgt = quantize_blocks(pad_rows(g).t().contiguous(), 1, pow2)
    xt, sxt = quantize_blocks(pad_rows(x2).t().contiguous(), 1, pow2)
    dw = block_gemm(gt, sgt, xt, sxt)
    db = g.double().sum(0) if bias is not None else None
    return LinearRef(y, dx, dw, db)

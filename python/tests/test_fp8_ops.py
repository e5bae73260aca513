"""The FP8 building blocks on the CPU: ``fp8_quantize``, ``fp8_cast_parts``, ``scaled_linear``.

Every result is compared with the independent emulation of ``_fp8_ref``
(float32 quantization, float64 GEMMs): FP8 bytes and scale_invs bit for bit,
GEMM outputs within 1 ulp of the output dtype (plus the float32 accumulation
bound). Bad input must raise an error naming the argument, and the fake
kernel (meta tensors) must raise the same message as the C++ op.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import _fp8_ref as ref
import pytest
import torch
from _fp8_ref import E4M3, E5M2, assert_same_fp8, assert_within_ulp

import splitlinear

HIGH = [torch.float32, torch.bfloat16, torch.float16]
OUT = [torch.bfloat16, torch.float16, torch.float32]


def _wide(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    """Normal data spread over ~6 binades either way (FP8 subnormals, ties, the amax element)."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(*shape, generator=g, dtype=torch.float64) * torch.exp(2 * torch.randn(*shape, generator=g,
                                                                                        dtype=torch.float64))
    return t.to(dtype)


@pytest.fixture
def per_part_rows(op) -> Iterator[Callable[[int | None], None]]:
    """Sets ``set_per_part_max_rows`` for one test and restores it after."""
    previous = op.set_per_part_max_rows(None)
    yield op.set_per_part_max_rows
    op.set_per_part_max_rows(previous)


# --- fp8_quantize ---------------------------------------------------------------------------

@pytest.mark.parametrize("src", HIGH, ids=str)
@pytest.mark.parametrize("dtype", [E4M3, E5M2], ids=["e4m3", "e5m2"])
@pytest.mark.parametrize("axis", ["tensor", "rows", "cols"])
@pytest.mark.parametrize("col_scale", [False, True], ids=["plain", "col_scale"])
@pytest.mark.parametrize("pow2", [False, True], ids=["exact", "pow2"])
def test_quantize_bit_exact(op, src: torch.dtype, dtype: torch.dtype, axis: str, col_scale: bool,
                            pow2: bool) -> None:
    """Bit for bit the emulation; ``pow2_scales`` gives scales that are powers of 2 (torchao's rounding)."""
    x = _wide(3, 5, 48, dtype=src, seed=1)
    cs = torch.exp(torch.randn(48, generator=torch.Generator().manual_seed(2))) if col_scale else None
    want = ref.quantize(x, dtype, axis, cs, pow2=pow2)
    if pow2:
        assert torch.equal(torch.frexp(want.scale_inv).mantissa.abs(), torch.full_like(want.scale_inv, 0.5))
    else:
        assert not torch.equal(torch.frexp(want.scale_inv).mantissa.abs(), torch.full_like(want.scale_inv, 0.5))
    for write_out, write_t in [(True, False), (False, True), (True, True)]:
        got = op.fp8_quantize(x, dtype, axis, col_scale=cs, write_out=write_out, write_transposed=write_t,
                              pow2_scales=pow2)
        assert got.scale_inv.dtype == torch.float32
        assert torch.equal(got.scale_inv, want.scale_inv), "scale_inv"
        empty = torch.empty(0, 0, dtype=dtype)
        assert_same_fp8(got.data, want.data if write_out else empty, "data")
        assert_same_fp8(got.data_t, want.data_t if write_t else empty, "data_t")


def test_quantize_strided_and_empty(op) -> None:
    """A row stride larger than K is read in place; no rows gives unit scales."""
    big = _wide(20, 64, seed=3)
    x = big[:, :48]
    for axis in ("tensor", "rows", "cols"):
        got = op.fp8_quantize(x, E4M3, axis, write_transposed=True)
        want = ref.quantize(x.contiguous(), E4M3, axis)
        assert torch.equal(got.scale_inv, want.scale_inv)
        assert_same_fp8(got.data, want.data)
        assert_same_fp8(got.data_t, want.data_t)
    for axis, n in (("tensor", 1), ("rows", 0), ("cols", 32)):
        got = op.fp8_quantize(torch.empty(0, 32), E4M3, axis)
        assert got.data.shape == (0, 32) and got.scale_inv.shape == (n,)
        assert torch.equal(got.scale_inv, torch.ones(n))


def test_quantize_saturates_and_keeps_tiny_values(op) -> None:
    """The amax element maps to fp8_max exactly; values far below it become subnormals or zero as in the
    emulation; a column scale takes part in the amax."""
    x = torch.tensor([[1.0, -3.0, 1e-6, 2.5e-3], [0.75, 1e-9, -1e-4, 3.0]])
    for dtype in (E4M3, E5M2):
        got = op.fp8_quantize(x, dtype, "tensor")
        assert_same_fp8(got.data, ref.quantize(x, dtype, "tensor").data)
        assert got.data[0, 1].float().item() == -ref.FP8_MAX[dtype]
    cs = torch.tensor([4.0, 0.5, 1.0, 1.0])
    got = op.fp8_quantize(x, E4M3, "rows", col_scale=cs)
    assert torch.equal(got.scale_inv, torch.tensor([4.0 / 448.0, 3.0 / 448.0]))


@pytest.mark.parametrize("src", HIGH, ids=str)
@pytest.mark.parametrize("dtype", [E4M3, E5M2], ids=["e4m3", "e5m2"])
@pytest.mark.parametrize("shape", [(3, 5, 48), (37, 40), (1, 16)], ids=["3d", "ragged", "one-row"])
def test_quantize_dual_is_the_two_tensorwise_quantizations(op, src: torch.dtype, dtype: torch.dtype,
                                                          shape: tuple[int, ...]) -> None:
    """``data``: ``x * col_scale`` with its own amax (dgrad); ``data_t``: ``xᵀ`` with x's amax (wgrad).
    Bit for bit the emulation and the two ``fp8_quantize`` calls it replaces; the column scales span
    four decades so that the two amaxes differ."""
    x = _wide(*shape, dtype=src, seed=5)
    k = shape[-1]
    cs = torch.exp(4 * torch.randn(k, generator=torch.Generator().manual_seed(6)))
    got = op.fp8_quantize_dual(x, dtype, cs)
    folded, plain = ref.quantize(x, dtype, "tensor", cs), ref.quantize(x, dtype, "tensor")
    assert not torch.equal(folded.scale_inv, plain.scale_inv)
    assert torch.equal(got.scale_inv, folded.scale_inv) and torch.equal(got.scale_inv_t, plain.scale_inv)
    assert_same_fp8(got.data, folded.data, "data")
    assert_same_fp8(got.data_t, plain.data_t, "data_t")
    one = op.fp8_quantize(x, dtype, "tensor", col_scale=cs)
    other = op.fp8_quantize(x, dtype, "tensor", write_out=False, write_transposed=True)
    assert_same_fp8(got.data, one.data, "data vs fp8_quantize")
    assert_same_fp8(got.data_t, other.data_t, "data_t vs fp8_quantize")


@pytest.mark.parametrize("src", HIGH, ids=str)
@pytest.mark.parametrize("dtype", [E4M3, E5M2], ids=["e4m3", "e5m2"])
@pytest.mark.parametrize("shape", [(3, 5, 48), (37, 40), (1, 16)], ids=["3d", "ragged", "one-row"])
@pytest.mark.parametrize("folded", [False, True], ids=["plain", "col_scale"])
@pytest.mark.parametrize("pow2", [False, True], ids=["exact", "pow2"])
def test_quantize_dual_rows_is_the_row_and_column_quantizations(op, src: torch.dtype, dtype: torch.dtype,
                                                                shape: tuple[int, ...], folded: bool,
                                                                pow2: bool) -> None:
    """Axis ``"rows"``: ``data`` is ``x (* col_scale)`` per row (dgrad, or the rowwise forward's x),
    ``data_t`` is ``xᵀ`` per column of x (wgrad). Bit for bit the emulation and the two
    ``fp8_quantize`` calls it replaces, with either scale rule."""
    x = _wide(*shape, dtype=src, seed=15)
    k = shape[-1]
    cs = torch.exp(4 * torch.randn(k, generator=torch.Generator().manual_seed(16))) if folded else None
    got = op.fp8_quantize_dual(x, dtype, cs, axis="rows", pow2_scales=pow2)
    rows, cols = ref.quantize(x, dtype, "rows", cs, pow2=pow2), ref.quantize(x, dtype, "cols", pow2=pow2)
    m = x.numel() // k
    assert got.scale_inv.shape == (m,) and got.scale_inv_t.shape == (k,)
    assert torch.equal(got.scale_inv, rows.scale_inv) and torch.equal(got.scale_inv_t, cols.scale_inv)
    assert_same_fp8(got.data, rows.data, "data")
    assert_same_fp8(got.data_t, cols.data_t, "data_t")
    one = op.fp8_quantize(x, dtype, "rows", col_scale=cs, pow2_scales=pow2)
    other = op.fp8_quantize(x, dtype, "cols", write_out=False, write_transposed=True, pow2_scales=pow2)
    assert torch.equal(got.scale_inv, one.scale_inv) and torch.equal(got.scale_inv_t, other.scale_inv)
    assert_same_fp8(got.data, one.data, "data vs fp8_quantize")
    assert_same_fp8(got.data_t, other.data_t, "data_t vs fp8_quantize")


def test_quantize_dual_op_defaults(op) -> None:
    """The raw op takes ``col_scale`` and ``axis`` by default, as ``fp8_quantize`` and the wrapper do
    (the schema lacked ``col_scale=None``; found by a new-user test); on meta tensors too."""
    x = _wide(6, 32, seed=17)
    got = torch.ops.splitlinear.fp8_quantize_dual(x, E4M3, axis="rows")
    want = op.fp8_quantize_dual(x, E4M3, None, "rows")
    assert torch.equal(got[1], want.scale_inv) and torch.equal(got[3], want.scale_inv_t)
    assert_same_fp8(got[0], want.data, "data")
    assert_same_fp8(got[2], want.data_t, "data_t")
    meta = torch.ops.splitlinear.fp8_quantize_dual(torch.empty(6, 32, device="meta"), E4M3, axis="rows")
    assert meta[1].shape == (6,) and meta[3].shape == (32,)


def test_quantize_dual_rows_empty(op) -> None:
    """No rows: unit scales for every column; no columns: unit scales for every row."""
    empty = op.fp8_quantize_dual(torch.empty(0, 32), E4M3, axis="rows")
    assert empty.data.shape == (0, 32) and empty.data_t.shape == (32, 0)
    assert empty.scale_inv.shape == (0,) and torch.equal(empty.scale_inv_t, torch.ones(32))
    none = op.fp8_quantize_dual(torch.empty(3, 0), E4M3, axis="rows")
    assert torch.equal(none.scale_inv, torch.ones(3)) and none.scale_inv_t.shape == (0,)


def test_quantize_dual_strided_and_empty(op) -> None:
    """A row stride larger than K is read in place; no rows gives unit scales and empty copies."""
    big = _wide(20, 64, seed=7)
    x = big[:, :48]
    cs = torch.rand(48) + 0.1
    got = op.fp8_quantize_dual(x, E5M2, cs)
    want = op.fp8_quantize_dual(x.contiguous(), E5M2, cs)
    for a, b in zip(got, want):
        assert torch.equal(a.view(torch.uint8) if a.element_size() == 1 else a,
                           b.view(torch.uint8) if b.element_size() == 1 else b)
    empty = op.fp8_quantize_dual(torch.empty(0, 32), E5M2, torch.ones(32))
    assert empty.data.shape == (0, 32) and empty.data_t.shape == (32, 0)
    assert torch.equal(empty.scale_inv, torch.ones(1)) and torch.equal(empty.scale_inv_t, torch.ones(1))


# --- fp8_cast_parts -------------------------------------------------------------------------

@pytest.mark.parametrize("src", HIGH, ids=str)
@pytest.mark.parametrize("dtype", [E4M3, E5M2], ids=["e4m3", "e5m2"])
@pytest.mark.parametrize("pow2", [False, True], ids=["exact", "pow2"])
def test_cast_parts_bit_exact(op, src: torch.dtype, dtype: torch.dtype, pow2: bool) -> None:
    scales = (1.0, 1e-3, 30.0)
    parts = [_wide(n, 32, dtype=src, seed=10 + i) * s for i, (n, s) in enumerate(zip((16, 48, 32), scales))]
    parts[1] = torch.cat([parts[1], parts[1]], 1)[:, 5:37]  # a part with a row stride of 64
    want = ref.cast_parts(parts, dtype, pow2)
    for write_t in (False, True):
        got = op.fp8_cast_parts(parts, dtype, write_transposed=write_t, pow2_scales=pow2)
        assert_same_fp8(got.data, want.data, "data")
        assert_same_fp8(got.data_t, want.data_t if write_t else torch.empty(0, 0, dtype=dtype), "data_t")
        assert torch.equal(got.scale_inv, want.scale_inv)
        assert torch.equal(got.row_scale_inv, want.row_scale_inv)
    # Each part keeps its own scale: the scale_invs span the parts' magnitudes.
    assert got.scale_inv[1] < got.scale_inv[0] < got.scale_inv[2]


# --- scaled_linear --------------------------------------------------------------------------

def _quantized_problem(rows: tuple[int, ...], k: int, x_dtype: torch.dtype, w_dtype: torch.dtype, seed: int,
                       rowwise: bool = True, lead: tuple[int, ...] = (2, 7)):
    torch.manual_seed(seed)
    x = ref.fresh(*lead, k)
    parts = [ref.fresh(n, k, scale=s) for n, s in zip(rows, (1.0, 0.01, 5.0, 0.3))]
    xq = ref.quantize(x, x_dtype, "rows" if rowwise else "tensor")
    wq = ref.cast_parts(parts, w_dtype)
    return xq.data.view(*lead, k), xq.scale_inv, wq


@pytest.mark.parametrize("out_dtype", OUT, ids=str)
@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("types", [(E4M3, E4M3), (E5M2, E4M3), (E4M3, E5M2)], ids=["e4m3xe4m3", "e5m2xe4m3",
                                                                                    "e4m3xe5m2"])
def test_scaled_linear_view_path(op, out_dtype: torch.dtype, bias: bool, types) -> None:
    """Parts that are row blocks of one FP8 buffer are used in place (``scaled_views``)."""
    rows = (32, 16, 48)
    x8, sx, wq = _quantized_problem(rows, 64, *types, seed=20)
    views = list(wq.data.split(rows))
    b = [ref.fresh(n, dtype=out_dtype) for n in rows] if bias else None
    splitlinear.reset_stats()
    y = op.scaled_linear(x8, sx, views, wq.row_scale_inv, b, out_dtype=out_dtype)
    counters = op.runtime_counters()
    assert (counters["scaled_views"], counters["scaled_cats"], counters["scaled_per_part_gemms"]) == (1, 0, 0)
    assert y.shape == (2, 7, sum(rows))
    want = ref.scaled_gemm(x8.reshape(-1, 64), sx, wq.data, wq.row_scale_inv, None if b is None else torch.cat(b))
    assert_within_ulp(y, want, out_dtype, what="scaled_linear")


@pytest.mark.parametrize("path,max_rows", [("scaled_cats", 0), ("scaled_per_part_gemms", 1 << 40),
                                           ("either", None)])
def test_scaled_linear_separate_buffers(op, per_part_rows, path: str, max_rows: int | None) -> None:
    """FP8 parts in separate buffers: a copy into one buffer or one GEMM per part, both exact."""
    rows = (32, 16, 48)
    x8, sx, wq = _quantized_problem(rows, 64, E4M3, E4M3, seed=21)
    separate = [v.clone() for v in wq.data.split(rows)]
    b = [ref.fresh(n, dtype=torch.bfloat16) for n in rows]
    per_part_rows(max_rows)
    splitlinear.reset_stats()
    y = op.scaled_linear(x8, sx, separate, wq.row_scale_inv, b)
    c = op.runtime_counters()
    assert c["scaled_views"] == 0
    if path == "either":
        assert c["scaled_cats"] + c["scaled_per_part_gemms"] == 1
    else:
        assert c[path] == 1 and c["scaled_cats"] + c["scaled_per_part_gemms"] == 1
    want = ref.scaled_gemm(x8.reshape(-1, 64), sx, wq.data, wq.row_scale_inv, torch.cat(b))
    assert_within_ulp(y, want, torch.bfloat16, what=path)


@pytest.mark.parametrize("sizes", [(1, 1), (1, "N"), ("M", 1)], ids=["tensorwise", "x-tensor", "w-tensor"])
def test_scaled_linear_scalar_scales(op, sizes) -> None:
    """One scale on a side (broadcast), and one part with two scalars (cuBLASLt's tensorwise mode)."""
    rows = (48,) if sizes == (1, 1) else (32, 16)
    x8, _, wq = _quantized_problem(rows, 32, E4M3, E4M3, seed=22, rowwise=False, lead=(9,))
    m, n = 9, sum(rows)
    sx = torch.tensor([0.37]) if sizes[0] == 1 else torch.rand(m) + 0.5
    sw = torch.tensor([0.011]) if sizes[1] == 1 else wq.row_scale_inv
    for out_dtype in OUT:
        y = op.scaled_linear(x8, sx, list(wq.data.split(rows)), sw, out_dtype=out_dtype)
        assert_within_ulp(y, ref.scaled_gemm(x8, sx.expand(m), wq.data, sw.expand(n)), out_dtype, what=str(sizes))


def test_scaled_linear_empty_and_k_zero(op) -> None:
    w = [torch.zeros(16, 0, dtype=E4M3)]
    b = [ref.fresh(16, dtype=torch.bfloat16)]
    y = op.scaled_linear(torch.zeros(3, 0, dtype=E4M3), torch.ones(1), w, torch.ones(16), b)
    assert torch.equal(y, b[0].expand(3, 16))
    y = op.scaled_linear(torch.zeros(0, 32, dtype=E4M3), torch.ones(1), [torch.zeros(16, 32, dtype=E4M3)],
                         torch.ones(1))
    assert y.shape == (0, 16) and y.dtype == torch.bfloat16


def test_small_part_keeps_its_accuracy(op) -> None:
    """A part 10⁴ times smaller than its siblings: with its own scale its output block is as accurate as
    the others'; with one scale over the concatenated weight (the emulation) it falls into e4m3's
    subnormals and its error grows by half or more."""
    torch.manual_seed(30)
    k, rows = 256, (64, 32, 48)
    x = ref.fresh(4, 32, k)
    parts = [ref.fresh(64, k), ref.fresh(32, k, scale=1e-4), ref.fresh(48, k)]
    exact = x.reshape(-1, k).double() @ torch.cat(parts).double().t()
    blocks = [slice(0, 64), slice(64, 96), slice(96, 144)]

    def ratio(y: torch.Tensor) -> float:
        err = [ref.rel_err(y.reshape(-1, 144)[:, s], exact[:, s]) for s in blocks]
        return err[1] / max(err[0], err[2])

    y = op.fp8_linear(x, parts)
    xq = ref.quantize(x, E4M3, "tensor")
    shared = ref.shared_scale_parts(parts, E4M3)
    y_shared = ref.scaled_gemm(xq.data, xq.scale_inv, shared.data, shared.row_scale_inv).exact
    assert ratio(y) < 1.15
    assert ratio(y_shared) > 1.3


# --- errors ---------------------------------------------------------------------------------

def _e4(*s: int) -> torch.Tensor:
    return torch.ones(*s).to(E4M3)


def _x() -> torch.Tensor:
    return torch.randn(4, 32)


ERRORS: list[tuple[str, Callable[[], object], str]] = [
    # fp8_quantize
    ("q-dtype", lambda: torch.ops.splitlinear.fp8_quantize(_x(), torch.float16, "rows"), "dtype is Half"),
    ("q-input", lambda: torch.ops.splitlinear.fp8_quantize(_x().double(), E4M3, "rows"), "input has dtype Double"),
    ("q-axis", lambda: torch.ops.splitlinear.fp8_quantize(_x(), E4M3, "row"), 'axis must be "tensor"'),
    ("q-col_scale-size", lambda: torch.ops.splitlinear.fp8_quantize(_x(), E4M3, "rows", torch.ones(31)),
     "col_scale has 31 entries but input has K = 32"),
    ("q-col_scale-one", lambda: torch.ops.splitlinear.fp8_quantize(_x(), E4M3, "rows", torch.ones(1)),
     "col_scale has 1 entries but input has K = 32"),
    ("q-col_scale-dtype", lambda: torch.ops.splitlinear.fp8_quantize(_x(), E4M3, "rows", torch.ones(32).half()),
     "col_scale must be a 1-D float32 tensor [K]"),
    # fp8_quantize_dual
    ("d-dtype", lambda: torch.ops.splitlinear.fp8_quantize_dual(_x(), torch.float16, torch.ones(32)),
     "fp8_quantize_dual: dtype is Half"),
    ("d-input", lambda: torch.ops.splitlinear.fp8_quantize_dual(_x().double(), E5M2, torch.ones(32)),
     "fp8_quantize_dual: input has dtype Double"),
    ("d-col_scale-size", lambda: torch.ops.splitlinear.fp8_quantize_dual(_x(), E5M2, torch.ones(31)),
     "fp8_quantize_dual: col_scale has 31 entries but input has K = 32"),
    ("d-col_scale-dtype", lambda: torch.ops.splitlinear.fp8_quantize_dual(_x(), E5M2, torch.ones(32).half()),
     "fp8_quantize_dual: col_scale must be a 1-D float32 tensor [K]"),
    # fp8_cast_parts
    # An empty list cannot reach the C++ op (nothing to dispatch on): the wrapper says it.
    ("c-empty", lambda: splitlinear.ops.fp8_cast_parts([], E4M3), "parts must hold at least one tensor"),
    ("c-dtype", lambda: torch.ops.splitlinear.fp8_cast_parts([torch.ones(16, 32)], torch.bfloat16),
     "dtype is BFloat16"),
    ("c-cols", lambda: torch.ops.splitlinear.fp8_cast_parts([torch.ones(16, 32), torch.ones(16, 16)], E4M3),
     "parts[1] has 16 columns but parts[0] has K = 32"),
    ("c-mixed", lambda: torch.ops.splitlinear.fp8_cast_parts([torch.ones(16, 32), torch.ones(16, 32).half()], E4M3),
     "parts[1] has dtype Half but parts[0] has Float"),
    ("c-1d", lambda: torch.ops.splitlinear.fp8_cast_parts([torch.ones(16, 32), torch.ones(16)], E4M3),
     "parts[1] must be 2-D"),
    # scaled_linear
    ("s-input", lambda: torch.ops.splitlinear.scaled_linear(_x(), torch.ones(1), [_e4(16, 32)], torch.ones(1)),
     "input has dtype Float; FP8 means"),
    ("s-k", lambda: torch.ops.splitlinear.scaled_linear(_e4(4, 24), torch.ones(1), [_e4(16, 24)], torch.ones(1)),
     "input has K = 24 columns; FP8 GEMMs need a multiple of 16"),
    ("s-n", lambda: torch.ops.splitlinear.scaled_linear(_e4(4, 32), torch.ones(1), [_e4(16, 32), _e4(8, 32)],
                                                        torch.ones(1)),
     "weight[1] has 8 rows; FP8 GEMMs need a multiple of 16"),
    ("s-weight-dtype", lambda: torch.ops.splitlinear.scaled_linear(_e4(4, 32), torch.ones(1), [torch.ones(16, 32)],
                                                                   torch.ones(1)),
     "weight[0] has dtype Float; FP8 means"),
    ("s-e5m2xe5m2", lambda: torch.ops.splitlinear.scaled_linear(_e4(4, 32).to(E5M2), torch.ones(1),
                                                                [_e4(16, 32).to(E5M2)], torch.ones(1)),
     "input and weight are both float8_e5m2"),
    ("s-x-scale", lambda: torch.ops.splitlinear.scaled_linear(_e4(4, 32), torch.ones(3), [_e4(16, 32)], torch.ones(1)),
     "input_scale_inv has 3 entries; expected 1 or 4"),
    ("s-w-scale", lambda: torch.ops.splitlinear.scaled_linear(_e4(4, 32), torch.ones(4), [_e4(16, 32), _e4(16, 32)],
                                                              torch.ones(16)),
     "weight_scale_inv has 16 entries; expected 1 or 32"),
    ("s-scale-2d", lambda: torch.ops.splitlinear.scaled_linear(_e4(4, 32), torch.ones(4, 1), [_e4(16, 32)],
                                                               torch.ones(1)),
     "input_scale_inv must be a 1-D float32 tensor"),
    ("s-bias-dtype", lambda: torch.ops.splitlinear.scaled_linear(_e4(4, 32), torch.ones(1), [_e4(16, 32)],
                                                                 torch.ones(1), [torch.ones(16)]),
     "bias[0] has dtype Float but out_dtype is BFloat16"),
    ("s-out", lambda: torch.ops.splitlinear.scaled_linear(_e4(4, 32), torch.ones(1), [_e4(16, 32)], torch.ones(1),
                                                          None, torch.float64),
     "out_dtype Double is not supported"),
    # fp8_linear
    ("l-recipe", lambda: torch.ops.splitlinear.fp8_linear(_x(), [torch.ones(16, 32)], None, "rowwise_hp"),
     'recipe must be "tensorwise", "rowwise", "rowwise_with_gw_hp", "blockwise" or "blockwise_fp32_scales", got "rowwise_hp"'),
    ("l-k", lambda: torch.ops.splitlinear.fp8_linear(torch.ones(4, 40), [torch.ones(16, 40)]),
     "input has K = 40 features; FP8 GEMMs need a multiple of 16"),
    ("l-n", lambda: torch.ops.splitlinear.fp8_linear(_x(), [torch.ones(16, 32), torch.ones(20, 32)]),
     "weight[1] has 20 rows; FP8 GEMMs need a multiple of 16"),
    ("l-input", lambda: torch.ops.splitlinear.fp8_linear(_x().double(), [torch.ones(16, 32).double()]),
     "input has dtype Double; FP8 quantization takes float32, float16 or bfloat16"),
    ("l-fp8-input", lambda: torch.ops.splitlinear.fp8_linear(_e4(4, 32), [torch.ones(16, 32)]),
     "input has dtype Float8_e4m3fn"),
    ("l-bias-dtype", lambda: torch.ops.splitlinear.fp8_linear(_x(), [torch.ones(16, 32)], [torch.ones(16).half()]),
     "bias[0] has dtype Half but input has Float"),
    ("l-bias-count", lambda: torch.ops.splitlinear.fp8_linear(_x(), [torch.ones(16, 32)] * 2, [torch.ones(16)]),
     "bias has 1 tensor but weight has 2"),
    ("l-cols", lambda: torch.ops.splitlinear.fp8_linear(_x(), [torch.ones(16, 48)]),
     "weight[0] has 48 columns but input has K = 32"),
    # fp8_quantize_dual
    ("d-axis", lambda: torch.ops.splitlinear.fp8_quantize_dual(_x(), E5M2, torch.ones(32), "cols"),
     'fp8_quantize_dual: axis must be "tensor", "rows" or "blocks", got "cols"'),
    ("d-blocks-col-scale",
     lambda: torch.ops.splitlinear.fp8_quantize_dual(torch.randn(4, 128), E4M3, torch.ones(128), "blocks"),
     'fp8_quantize_dual: col_scale is not supported with axis "blocks"'),
    ("d-blocks-k", lambda: torch.ops.splitlinear.fp8_quantize_dual(_x(), E4M3, None, "blocks"),
     'fp8_quantize_dual: input has K = 32 features; axis "blocks" needs a multiple of 128'),
    ("d-no-scale", lambda: torch.ops.splitlinear.fp8_quantize_dual(_x(), E5M2, None),
     'fp8_quantize_dual: col_scale is required with axis "tensor"'),
    ("d-scale-len", lambda: torch.ops.splitlinear.fp8_quantize_dual(_x(), E5M2, torch.ones(16), "rows"),
     "fp8_quantize_dual: col_scale has 16 entries but input has K = 32"),
    # fp8_serving_linear
    ("v-input", lambda: torch.ops.splitlinear.fp8_serving_linear(_e4(4, 32), [_e4(16, 32)], [torch.ones(1)]),
     "fp8_serving_linear: input has dtype Float8_e4m3fn; FP8 quantization takes"),
    ("v-axis", lambda: torch.ops.splitlinear.fp8_serving_linear(_x(), [_e4(16, 32)], [torch.ones(1)], None, "cols"),
     'activation axis must be "tensor", "rows" or "blocks", got "cols"'),
    ("v-count", lambda: torch.ops.splitlinear.fp8_serving_linear(_x(), [_e4(16, 32)] * 2, [torch.ones(1)]),
     "weight has 2 parts but weight_scale_inv has 1 tensors; one per part"),
    ("v-scale", lambda: torch.ops.splitlinear.fp8_serving_linear(_x(), [_e4(16, 32), _e4(32, 32)],
                                                                 [torch.ones(16), torch.ones(16)]),
     "weight_scale_inv[1] has 16 entries; expected 1 or 32"),
    ("v-weight", lambda: torch.ops.splitlinear.fp8_serving_linear(_x(), [torch.ones(16, 32)], [torch.ones(1)]),
     "weight[0] has dtype Float; FP8 means"),
    ("v-bias", lambda: torch.ops.splitlinear.fp8_serving_linear(_x(), [_e4(16, 32)], [torch.ones(1)],
                                                                [torch.ones(16).half()]),
     "bias[0] has dtype Half but out_dtype is Float"),
]


def _on_meta(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` with every tensor factory making meta tensors (the fake kernels run: the Meta key)."""
    def run() -> object:
        with torch.device("meta"), torch.inference_mode():
            return fn()
    return run


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_bad_input_names_the_argument(op, case) -> None:
    """The C++ op raises an error naming the argument; the fake kernel raises the same message."""
    _, fn, expected = case
    with pytest.raises(RuntimeError) as real:
        fn()
    message = str(real.value).splitlines()[0]
    assert expected in message
    assert message.startswith("splitlinear.")
    with pytest.raises(RuntimeError) as fake:
        _on_meta(fn)()
    assert str(fake.value).splitlines()[0] == message


# --- opcheck --------------------------------------------------------------------------------

def test_opcheck_quantize_and_cast(op) -> None:
    x = ref.fresh(3, 5, 32)
    torch.library.opcheck(torch.ops.splitlinear.fp8_quantize.default, (x, E4M3, "rows"),
                          {"col_scale": torch.rand(32) + 0.5, "write_transposed": True})
    torch.library.opcheck(torch.ops.splitlinear.fp8_quantize.default, (x, E5M2, "tensor"),
                          {"write_out": False, "write_transposed": True})
    torch.library.opcheck(torch.ops.splitlinear.fp8_quantize_dual.default, (x, E5M2, torch.rand(32) + 0.5))
    torch.library.opcheck(torch.ops.splitlinear.fp8_quantize_dual.default, (x, E4M3, None, "rows"))
    torch.library.opcheck(torch.ops.splitlinear.fp8_quantize_dual.default, (x, E5M2, torch.rand(32) + 0.5, "rows"))
    parts = [ref.fresh(16, 32), ref.fresh(32, 32, dtype=torch.float32)]
    torch.library.opcheck(torch.ops.splitlinear.fp8_cast_parts.default, (parts, E4M3, True))


#: opcheck's schema test (SchemaCheckMode) compares inputs before and after with arithmetic that has no
#: FP8 kernel on the CPU ("mul_cpu_reduced_float" not implemented), so ops that take FP8 inputs skip it.
FP8_INPUT_TEST_UTILS = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def test_opcheck_scaled_linear(op) -> None:
    rows = (32, 16)
    x8, sx, wq = _quantized_problem(rows, 32, E4M3, E4M3, seed=40)
    b = [ref.fresh(n, dtype=torch.bfloat16) for n in rows]
    torch.library.opcheck(torch.ops.splitlinear.scaled_linear.default,
                          (x8, sx, list(wq.data.split(rows)), wq.row_scale_inv, b), test_utils=FP8_INPUT_TEST_UTILS)


def test_opcheck_fp8_serving_linear(op) -> None:
    x = ref.fresh(3, 5, 32)
    p = op.fp8_cast_parts([ref.fresh(32, 32), ref.fresh(16, 32)], E4M3)
    b = [ref.fresh(n) for n in (32, 16)]
    torch.library.opcheck(torch.ops.splitlinear.fp8_serving_linear.default,
                          (x, [p.data[:32], p.data[32:]], [p.scale_inv[:1], p.scale_inv[1:]], b),
                          test_utils=FP8_INPUT_TEST_UTILS)


@pytest.mark.parametrize("axis", ["rows", "tensor"])
@pytest.mark.parametrize("scales", ["adjacent", "separate", "per_part"])
def test_fp8_serving_linear_is_quantize_then_scaled_linear(op, axis: str, scales: str) -> None:
    """One call = fp8_quantize of the input, then scaled_linear with the spread weight scales, bit for bit,
    whether the [N_i] scale vectors are adjacent (used in place), separate (copied) or one per part."""
    torch.manual_seed(48)
    rows = [32, 16, 48]
    x = ref.fresh(2, 7, 64)
    w = [ref.fresh(n, 64, scale=10.0 ** -i) for i, n in enumerate(rows)]
    q = op.fp8_quantize(torch.cat(w), E4M3, "rows")
    parts = list(q.data.split(rows))
    if scales == "per_part":
        p = op.fp8_cast_parts(w, E4M3)
        parts = list(p.data.split(rows))
        part_scales = [p.scale_inv[i:i + 1] for i in range(len(rows))]
        spread = p.row_scale_inv
    else:
        part_scales = list(q.scale_inv.split(rows))
        if scales == "separate":
            part_scales = [s.clone() for s in part_scales]
        spread = q.scale_inv
    b = [ref.fresh(n) for n in rows]
    got = op.fp8_serving_linear(x, parts, part_scales, b, axis=axis)
    qx = op.fp8_quantize(x, E4M3, "rows" if axis == "rows" else "tensor")
    want = op.scaled_linear(qx.data.view(2, 7, 64), qx.scale_inv, parts, spread, b, out_dtype=torch.float32)
    assert got.shape == (2, 7, sum(rows)) and got.dtype == torch.float32
    assert torch.equal(got, want)
    # and the float64 emulation of quantize -> dequantize -> GEMM
    ex = ref.quantize(x, E4M3, "rows" if axis == "rows" else "tensor")
    gemm = ref.scaled_gemm(ex.data, ex.scale_inv, torch.cat(parts), spread, torch.cat(b))
    torch.testing.assert_close(got.reshape(-1, sum(rows)).double(), gemm.exact, rtol=1e-6, atol=1e-6)


# --- regressions ----------------------------------------------------------------------------

def _tiny(*shape: int, seed: int) -> torch.Tensor:
    """Finite float32 data whose amax (~1e-38) is below fp8_max / FLT_MAX, with zeros among it: an
    unclamped scale of fp8_max / amax overflows to inf and turns each zero into 0 * inf = NaN."""
    t = ref.fresh(*shape, scale=1e-38)
    t.view(-1)[::3] = 0.0
    return t


@pytest.mark.parametrize("dtype", [E4M3, E5M2], ids=["e4m3", "e5m2"])
@pytest.mark.parametrize("axis", ["tensor", "rows", "cols"])
def test_quantize_tiny_amax_is_finite(op, dtype: torch.dtype, axis: str) -> None:
    """Regression (new-user report): a finite input with a tiny amax quantized to all NaN. The scale is
    clamped to FLT_MAX, as TransformerEngine does; bytes and scale_inv equal the emulation."""
    torch.manual_seed(40)
    x = _tiny(8, 32, seed=40)
    got = op.fp8_quantize(x, dtype, axis, write_transposed=True)
    want = ref.quantize(x, dtype, axis)
    assert not got.data.float().isnan().any() and not got.data_t.float().isnan().any()
    assert torch.isfinite(got.scale_inv).all() and (got.scale_inv > 0).all()
    assert torch.equal(got.scale_inv, want.scale_inv)
    assert_same_fp8(got.data, want.data)
    assert_same_fp8(got.data_t, want.data_t)


def test_cast_parts_tiny_amax_is_finite(op) -> None:
    """The same for a weight part with a tiny amax next to a normal one."""
    torch.manual_seed(41)
    parts = [ref.fresh(16, 32), _tiny(16, 32, seed=41)]
    got = op.fp8_cast_parts(parts, E4M3, write_transposed=True)
    want = ref.cast_parts(parts, E4M3)
    assert not got.data.float().isnan().any()
    assert torch.isfinite(got.scale_inv).all()
    assert torch.equal(got.scale_inv, want.scale_inv)
    assert torch.equal(got.row_scale_inv, want.row_scale_inv)
    assert_same_fp8(got.data, want.data)


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise", "rowwise_with_gw_hp"])
def test_fp8_linear_tiny_values_stay_finite(op, recipe: str) -> None:
    """fp8_linear's output and every gradient stay finite when the input or a weight part is tiny."""
    torch.manual_seed(42)
    x = _tiny(4, 32, seed=42).requires_grad_()
    w = [ref.fresh(16, 32).requires_grad_(), _tiny(16, 32, seed=43).requires_grad_()]
    y = op.fp8_linear(x, w, recipe=recipe)
    y.backward(ref.fresh(4, 32))
    for t in (y, x.grad, w[0].grad, w[1].grad):
        assert torch.isfinite(t).all()


def test_building_blocks_refuse_backward(op) -> None:
    """Regression (new-user report): the building blocks have no derivative; their outputs required grad
    and backward dropped the gradient with a warning only. Backward now raises, naming the op."""
    torch.manual_seed(44)
    x = ref.fresh(8, 32).requires_grad_()
    w = ref.fresh(16, 32).requires_grad_()
    q = op.fp8_quantize(x, E4M3, "rows")
    with pytest.raises(RuntimeError, match="fp8_quantize"):
        q.scale_inv.sum().backward()
    d = op.fp8_quantize_dual(x, E5M2, torch.ones(32))
    with pytest.raises(RuntimeError, match="fp8_quantize_dual"):
        d.scale_inv_t.sum().backward()
    p = op.fp8_cast_parts([w], E4M3)
    with pytest.raises(RuntimeError, match="fp8_cast_parts"):
        p.row_scale_inv.sum().backward()
    xq = op.fp8_quantize(x.detach(), E4M3, "rows")
    s = op.fp8_quantize(x, E4M3, "rows").scale_inv
    y = op.scaled_linear(xq.data, s, [p.data.detach()], p.row_scale_inv.detach())
    with pytest.raises(RuntimeError, match="scaled_linear"):
        y.float().sum().backward()


def test_fp8_linear_double_backward_raises(op) -> None:
    """Regression (new-user report): create_graph=True returned a dx that silently did not require grad."""
    torch.manual_seed(45)
    x = ref.fresh(16, 32).requires_grad_()
    w = [ref.fresh(16, 32).requires_grad_()]
    y = op.fp8_linear(x, w)
    with pytest.raises(RuntimeError, match="fp8_linear.*create_graph"):
        torch.autograd.grad(y.sum(), x, create_graph=True)


def test_layouts_the_gemm_cannot_read_are_copied(op) -> None:
    """Regression (new-user report): an expanded (stride 0) weight part and transposed FP8 operands failed
    inside the runtime with a message naming its entry point. They are copied to row-major first."""
    torch.manual_seed(46)
    x = ref.fresh(8, 32)
    w = ref.fresh(1, 32).expand(16, 32)
    y = op.fp8_linear(x, [w])
    assert torch.equal(y, op.fp8_linear(x, [w.contiguous()]))
    q = op.fp8_quantize(x, E4M3, "tensor", write_transposed=True)
    p = op.fp8_cast_parts([ref.fresh(16, 32)], E4M3, write_transposed=True)
    want = op.scaled_linear(q.data, q.scale_inv, [p.data], p.scale_inv)
    got = op.scaled_linear(q.data_t.t(), q.scale_inv, [p.data_t.t()], p.scale_inv)
    assert torch.equal(got, want)


def _misaligned(t: torch.Tensor) -> torch.Tensor:
    """``t``'s values in a tensor whose first element is 1 byte past a 16-byte boundary."""
    raw = torch.empty(t.numel() * t.element_size() + 16, dtype=torch.uint8, device=t.device)
    start = (16 - raw.data_ptr() % 16) % 16 + 1
    out = raw[start:start + t.numel() * t.element_size()].view(t.dtype).view(t.shape)
    out.copy_(t)
    assert out.data_ptr() % 16 == 1
    return out


def test_misaligned_fp8_operands_are_copied(op) -> None:
    """Regression: an FP8 weight or input at an address that is not 16-byte aligned (a tensor
    of a memory-mapped checkpoint) was refused by the runtime. It is copied to an aligned buffer."""
    torch.manual_seed(47)
    q = op.fp8_quantize(ref.fresh(8, 32), E4M3, "rows")
    p = op.fp8_cast_parts([ref.fresh(16, 32), ref.fresh(32, 32)], E4M3)
    parts = [p.data[:16], p.data[16:]]
    want = op.scaled_linear(q.data, q.scale_inv, parts, p.row_scale_inv)
    for x8, ws in ((_misaligned(q.data), parts), (q.data, [_misaligned(parts[0]), parts[1]]),
                   (q.data, [parts[0], _misaligned(parts[1])])):
        assert torch.equal(op.scaled_linear(x8, q.scale_inv, ws, p.row_scale_inv), want)


def test_col_scale_and_dtype_messages(op) -> None:
    """Regression (new-user report): a wrong col_scale length said "expected 1 or K" though 1 is refused;
    a non-FP8 dtype said "dtype has dtype"."""
    x = ref.fresh(8, 16)
    for n in (1, 17):
        with pytest.raises(RuntimeError, match=f"col_scale has {n} entries but input has K = 16"):
            op.fp8_quantize(x, E4M3, "rows", col_scale=torch.ones(n))
    with pytest.raises(RuntimeError, match="dtype is Float; FP8 means float8_e4m3fn or float8_e5m2"):
        op.fp8_quantize(x, torch.float32, "rows")


def test_fp8_serving_linear_with_a_quantized_input(op) -> None:
    """input_scale_inv: the input is taken as FP8 as given, the same result as the op's own quantization."""
    torch.manual_seed(49)
    x = ref.fresh(3, 64)
    p = op.fp8_cast_parts([ref.fresh(32, 64), ref.fresh(16, 64)], E4M3)
    parts, scales = [p.data[:32], p.data[32:]], [p.scale_inv[:1], p.scale_inv[1:]]
    q = op.fp8_quantize(x, E4M3, "rows")
    got = op.fp8_serving_linear(q.data, parts, scales, out_dtype=torch.float32, input_scale_inv=q.scale_inv)
    assert torch.equal(got, op.fp8_serving_linear(x, parts, scales))
    with pytest.raises(RuntimeError, match="out_dtype is required with input_scale_inv"):
        op.fp8_serving_linear(q.data, parts, scales, input_scale_inv=q.scale_inv)
    with pytest.raises(RuntimeError, match=r"input \(with input_scale_inv\) has dtype Float"):
        op.fp8_serving_linear(x, parts, scales, out_dtype=torch.float32, input_scale_inv=q.scale_inv)

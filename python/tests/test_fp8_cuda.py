"""The FP8 ops on CUDA (sm89+; skipped elsewhere): against ``torch._scaled_mm``, the CPU op and the emulation.

On sm90 ``torch._scaled_mm`` with a ``(M, 1)`` and a ``(1, N)`` scale
("rowwise") runs the same cuBLASLt outer-vector kernel, so it is a ready
reference: one call over the concatenated weight, or one per part. The
CPU op computes the same bytes for the quantization, so those must be equal.
"""

from __future__ import annotations

import _fp8_ref as ref
import pytest
import torch
from _fp8_ref import E4M3, E5M2, assert_same_fp8, assert_within_ulp

from splitlinear._dtypes import FP8_OUTER_VECTOR_RECIPES as FP8_RECIPES  # blockwise: test_fp8_blockwise.py

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 9),
    reason="FP8 GEMMs need a CUDA GPU of compute capability 8.9 or more",
)

ROWS = (256, 64, 64)
K = 256


def _bf16_ulps(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """|a - b| in bf16 ulps of the larger magnitude (both bf16)."""
    a64, b64 = a.double(), b.double()
    return (a64 - b64).abs() / ref.ulp(torch.maximum(a64.abs(), b64.abs()), torch.bfloat16)


def _problem(m: int, seed: int):
    torch.manual_seed(seed)
    x = ref.fresh(m, K, dtype=torch.bfloat16, device="cuda")
    parts = [ref.fresh(n, K, scale=s, dtype=torch.bfloat16, device="cuda") for n, s in zip(ROWS, (0.02, 0.5, 3e-4))]
    return x, parts


@pytest.mark.parametrize("fast_accum", [False, True], ids=["exact-accum", "fast-accum"])
@pytest.mark.parametrize("m", [16, 128, 272])
def test_scaled_linear_matches_scaled_mm(op, m: int, fast_accum: bool) -> None:
    x, parts = _problem(m, seed=m)
    xq = op.fp8_quantize(x, E4M3, "rows")
    wq = op.fp8_cast_parts(parts, E4M3)
    y = op.scaled_linear(xq.data, xq.scale_inv, list(wq.data.split(ROWS)), wq.row_scale_inv,
                         out_dtype=torch.bfloat16, fast_accum=fast_accum)
    one = torch._scaled_mm(xq.data, wq.data.t(), scale_a=xq.scale_inv.view(-1, 1),
                           scale_b=wq.row_scale_inv.view(1, -1), out_dtype=torch.bfloat16, use_fast_accum=fast_accum)
    if m <= 16:
        # The runtime's decode kernel (SPLITLINEAR_FP8_DECODE_MAX_M, default 16), not cuBLASLt's: it adds
        # every 32-term MMA in fp32, so it meets the fp32 bound, and torch._scaled_mm the tensor cores'.
        want = ref.scaled_gemm(xq.data, xq.scale_inv, wq.data, wq.row_scale_inv)
        assert_within_ulp(y, want, torch.bfloat16, what="decode kernel")
        assert_within_ulp(one, ref.tensor_core_bound(want, K), torch.bfloat16, what="torch._scaled_mm")
        return
    assert float(_bf16_ulps(y, one).max()) <= 1.0
    per_part = torch.cat([
        torch._scaled_mm(xq.data, w.t(), scale_a=xq.scale_inv.view(-1, 1), scale_b=s.view(1, -1),
                         out_dtype=torch.bfloat16, use_fast_accum=fast_accum)
        for w, s in zip(wq.data.split(ROWS), wq.row_scale_inv.split(ROWS))
    ], 1)
    assert float(_bf16_ulps(y, per_part).max()) <= 1.0


@pytest.mark.parametrize("dtype", [E4M3, E5M2], ids=["e4m3", "e5m2"])
@pytest.mark.parametrize("axis", ["tensor", "rows", "cols"])
def test_quantization_equals_cpu(op, dtype: torch.dtype, axis: str) -> None:
    torch.manual_seed(1)
    x = (torch.randn(300, 272) * torch.exp(2 * torch.randn(300, 272))).to(torch.bfloat16)
    cs = torch.rand(272) + 0.25
    for col_scale in (None, cs):
        cpu = op.fp8_quantize(x, dtype, axis, col_scale=col_scale, write_transposed=True)
        gpu = op.fp8_quantize(x.cuda(), dtype, axis, col_scale=None if col_scale is None else col_scale.cuda(),
                              write_transposed=True)
        assert torch.equal(gpu.scale_inv.cpu(), cpu.scale_inv)
        assert_same_fp8(gpu.data, cpu.data, "data")
        assert_same_fp8(gpu.data_t, cpu.data_t, "data_t")
    # The dual quantization: the folded and the plain tensorwise copies from one read.
    cpu = op.fp8_quantize_dual(x, dtype, cs)
    gpu = op.fp8_quantize_dual(x.cuda(), dtype, cs.cuda())
    for a, b in zip(gpu, cpu):
        if a.dtype == torch.float32:
            assert torch.equal(a.cpu(), b)
        else:
            assert_same_fp8(a, b)
    parts = [x[:64], x[64:96] * 1e-3, x[96:]]
    cpu = op.fp8_cast_parts(parts, dtype, write_transposed=True)
    gpu = op.fp8_cast_parts([p.cuda() for p in parts], dtype, write_transposed=True)
    for a, b in zip(gpu, cpu):
        if a.dtype == torch.float32:
            assert torch.equal(a.cpu(), b)
        else:
            assert_same_fp8(a, b)


@pytest.mark.parametrize("src", [torch.bfloat16, torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("shape", [(8192, 6144), (2048, 1024), (200, 264), (33, 40)],
                         ids=["qkv", "aligned", "ragged-rows", "ragged"])
def test_quantize_dual_equals_cpu(op, src: torch.dtype, shape: tuple[int, int]) -> None:
    """The dual kernels (one amax pass taking both maxima, one cast writing both copies) on the fast
    path (aligned 64 x 64 tiles) and the ragged one give the CPU's bytes."""
    torch.manual_seed(shape[0])
    # Finite in float16 too: an inf would give inf * 0 = NaN, whose sign x86 and CUDA differ on.
    x = (torch.randn(*shape) * torch.exp(2 * torch.randn(*shape))).clamp(-6e4, 6e4).to(src)
    cs = torch.exp(3 * torch.randn(shape[1]))
    cpu = op.fp8_quantize_dual(x, E5M2, cs)
    gpu = op.fp8_quantize_dual(x.cuda(), E5M2, cs.cuda())
    assert torch.equal(gpu.scale_inv.cpu(), cpu.scale_inv)
    assert torch.equal(gpu.scale_inv_t.cpu(), cpu.scale_inv_t)
    assert_same_fp8(gpu.data, cpu.data, "data")
    assert_same_fp8(gpu.data_t, cpu.data_t, "data_t")


@pytest.mark.parametrize("src", [torch.bfloat16, torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("shape", [(8192, 6144), (8192, 4096), (200, 264), (33, 40), (520, 28672), (67, 16400)],
                         ids=["qkv-dy", "x", "ragged-rows", "ragged", "gate-up-dy", "wide-ragged-rows"])
@pytest.mark.parametrize("folded", [False, True], ids=["plain", "col_scale"])
def test_quantize_dual_rows_equals_cpu(op, src: torch.dtype, shape: tuple[int, int], folded: bool) -> None:
    """The rows/cols dual quantization gives the CPU's bytes on both of its CUDA paths: the row and
    the column passes up to 16384 columns, above that one amax pass taking the row and the column
    maxima and one cast writing the per-row copy and the per-column transposed one."""
    torch.manual_seed(shape[0] + shape[1])
    x = (torch.randn(*shape) * torch.exp(2 * torch.randn(*shape))).clamp(-6e4, 6e4).to(src)
    cs = torch.exp(3 * torch.randn(shape[1])) if folded else None
    cpu = op.fp8_quantize_dual(x, E5M2, cs, axis="rows")
    gpu = op.fp8_quantize_dual(x.cuda(), E5M2, None if cs is None else cs.cuda(), axis="rows")
    assert torch.equal(gpu.scale_inv.cpu(), cpu.scale_inv)
    assert torch.equal(gpu.scale_inv_t.cpu(), cpu.scale_inv_t)
    assert_same_fp8(gpu.data, cpu.data, "data")
    assert_same_fp8(gpu.data_t, cpu.data_t, "data_t")




@pytest.mark.parametrize("recipe", FP8_RECIPES)
@pytest.mark.parametrize("m", [128, 200])
def test_fp8_linear_forward_backward(op, recipe: str, m: int) -> None:
    """Against the emulation. Hopper's FP8 tensor cores keep about 14 bits of their partial sums, so the
    accumulation bound is theirs (``_fp8_ref.tensor_core_bound``), not fp32's."""
    x, parts = _problem(m, seed=3)
    x.requires_grad_()
    ws = [p.float().requires_grad_() for p in parts]
    bs = [ref.fresh(n, dtype=torch.bfloat16, device="cuda").requires_grad_() for n in ROWS]
    y = op.fp8_linear(x, ws, bs, recipe=recipe)
    dy = ref.fresh(*y.shape, dtype=torch.bfloat16, device="cuda")
    y.backward(dy)
    want = ref.fp8_linear(x.cpu(), [w.cpu() for w in ws], [b.cpu() for b in bs], recipe, dy=dy.cpu())
    assert_within_ulp(y, ref.tensor_core_bound(want.y, K), torch.bfloat16, what="forward")
    assert_within_ulp(x.grad, ref.tensor_core_bound(want.dx, sum(ROWS)), torch.bfloat16, what="dx")
    offsets = [0, 256, 320, 384]
    for i, w in enumerate(ws):
        block = slice(offsets[i], offsets[i + 1])
        dtype = torch.bfloat16 if recipe == "rowwise_with_gw_hp" else torch.float32
        part = ref.Gemm(want.dw.exact[block], want.dw.bound[block])
        assert_within_ulp(w.grad.to(dtype), ref.tensor_core_bound(part, m), dtype, what=f"dw[{i}]")


def test_cuda_graph_capture_and_replay(op) -> None:
    x, parts = _problem(128, seed=4)
    static_x = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up: kernels JIT-compiled outside the capture
        for _ in range(2):
            op.fp8_linear(static_x, parts, recipe="rowwise")
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = op.fp8_linear(static_x, parts, recipe="rowwise")
    for seed in (5, 6):
        torch.manual_seed(seed)
        fresh = ref.fresh(128, K, dtype=torch.bfloat16, device="cuda")
        static_x.copy_(fresh)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(static_y, op.fp8_linear(fresh, parts, recipe="rowwise"))


DECODE_ROWS = (128, 32, 48)  # parts of different sizes, N = 208 (a partial tile of the decode kernel)


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "f16", "f32"])
@pytest.mark.parametrize("scaling", ["rows", "tensor"])
@pytest.mark.parametrize("m", [1, 16])
def test_decode_scaled_linear(op, m: int, scaling: str, out_dtype: torch.dtype) -> None:
    """M <= 16 runs the runtime's decode kernel (SPLITLINEAR_FP8_DECODE_MAX_M, default 16): against the
    float64 emulation at K = 4096 (with and without bias), and against ``torch._scaled_mm`` rowwise."""
    torch.manual_seed(7 + m)
    k = 4096
    x = ref.fresh(m, k, dtype=torch.bfloat16, device="cuda")
    parts = [ref.fresh(n, k, scale=s, dtype=torch.bfloat16, device="cuda")
             for n, s in zip(DECODE_ROWS, (0.02, 2e-6, 0.5))]
    xq = op.fp8_quantize(x, E4M3, scaling)
    if scaling == "tensor":
        cast = ref.cast_parts([torch.cat(parts).cpu()], E4M3)
        w8, sw = cast.data.cuda(), cast.scale_inv.reshape(1).cuda()
    else:
        wq = op.fp8_cast_parts(parts, E4M3)
        w8, sw = wq.data, wq.row_scale_inv
    biases = [ref.fresh(n, dtype=out_dtype, device="cuda") for n in DECODE_ROWS]
    for bias in (None, biases):
        y = op.scaled_linear(xq.data, xq.scale_inv, list(w8.split(DECODE_ROWS)), sw, bias,
                             out_dtype=out_dtype, fast_accum=bias is None)
        want = ref.scaled_gemm(xq.data, xq.scale_inv, w8, sw, None if bias is None else torch.cat(bias))
        assert_within_ulp(y, want, out_dtype, what=f"bias={bias is not None}")
    if scaling == "rows" and out_dtype == torch.bfloat16 and m % 16 == 0:
        # torch._scaled_mm (cuBLASLt takes M in multiples of 16) on the same bytes: both against the
        # emulation, the decode kernel within fp32's bound and cuBLASLt within its tensor cores' (the two
        # differ by up to ~65 bf16 ulps on outputs that cancel, measured on the H200).
        xs, ws = xq.data[:, :256].contiguous(), w8[:, :256].contiguous()
        y = op.scaled_linear(xs, xq.scale_inv, list(ws.split(DECODE_ROWS)), sw, out_dtype=out_dtype)
        one = torch._scaled_mm(xs, ws.t(), scale_a=xq.scale_inv.view(-1, 1), scale_b=sw.view(1, -1),
                               out_dtype=torch.bfloat16)
        want = ref.scaled_gemm(xs, xq.scale_inv, ws, sw)
        assert_within_ulp(y, want, out_dtype, what="decode kernel, K = 256")
        assert_within_ulp(one, ref.tensor_core_bound(want, 256), out_dtype, what="torch._scaled_mm, K = 256")


@pytest.mark.parametrize("recipe", FP8_RECIPES)
@pytest.mark.parametrize("frozen", [(1,), (0, 2), (0, 1)], ids=["middle", "ends", "first-two"])
def test_frozen_parts_wgrad_runs_equal_full(op, recipe: str, frozen: tuple[int, ...]) -> None:
    """wgrad runs one GEMM per run of trainable parts (row blocks of dyᵀ at part offsets): the gradients
    equal the all-trainable ones bit for bit (Llama q/k/v rows, M = 200 takes the zero-padding path)."""
    rows, k, m = (4096, 1024, 1024), 256, 200
    out = []
    for freeze in ((), frozen):
        g = torch.Generator(device="cuda").manual_seed(1)
        x = torch.randn(m, k, device="cuda", generator=g, dtype=torch.bfloat16).requires_grad_()
        ws = [(torch.randn(n, k, device="cuda", generator=g) * s).to(torch.bfloat16).requires_grad_(i not in freeze)
              for i, (n, s) in enumerate(zip(rows, (0.02, 0.5, 3e-4)))]
        y = op.fp8_linear(x, ws, None, recipe=recipe)
        y.backward(torch.randn(y.shape, device="cuda", generator=g, dtype=y.dtype))
        out.append([x.grad] + [w.grad for w in ws])
    for i, (a, b) in enumerate(zip(*out)):
        if i - 1 in frozen:
            assert b is None
        else:
            assert torch.equal(a, b), f"gradient {i} differs with parts {frozen} frozen"


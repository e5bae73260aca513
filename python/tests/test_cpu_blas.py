"""The CPU op runs its GEMMs on PyTorch's BLAS and thread pool.

The runtime's own OpenBLAS threads competed with PyTorch's OpenMP workers for
the cores (the CPU main job ran 4-15x slower than Inductor on 2 cores). The op
library installs a CPU GEMM hook that runs every float32/float64 GEMM through
ATen, so ``torch.set_num_threads`` governs them and no second pool exists.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _util import assert_close_to, randn


def _aten_gemms(fn: object) -> int:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return sum(e.count for e in prof.key_averages() if e.key in ("aten::mm", "aten::addmm_", "aten::addmm"))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_cpu_gemms_run_on_aten(op: object, dtype: torch.dtype, threads: int) -> None:
    torch.manual_seed(130)
    ws = [randn(n, 24, dtype=dtype, scale=0.2) for n in (8, 16, 8)]
    bs = [randn(n, dtype=dtype) for n in (8, 16, 8)]
    x = randn(5, 24, dtype=dtype)
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        out: list[torch.Tensor] = []
        assert _aten_gemms(lambda: out.append(op.linear(x, ws, bs))) >= 1
    finally:
        torch.set_num_threads(previous)
    reference = F.linear(x.double(), torch.cat(ws).double(), torch.cat(bs).double())
    assert_close_to(out[0], reference, dtype)


def test_backward_gemms_run_on_aten(op: object) -> None:
    """dgrad (accumulating per part, beta = 1) and wgrad go through the hook too."""
    torch.manual_seed(131)
    ws = [randn(n, 24).requires_grad_() for n in (8, 16)]
    x = randn(5, 24).requires_grad_()
    y = op.linear(x, [w.clone() for w in ws])  # disjoint parts: the per-part dgrad path
    dy = randn(*y.shape)
    grads: list[tuple[torch.Tensor, ...]] = []
    assert _aten_gemms(lambda: grads.append(torch.autograd.grad(y, [x, *ws], dy))) >= 2
    expected = torch.autograd.grad(F.linear(x, torch.cat(ws)), [x, *ws], dy)
    for g, e in zip(grads[0], expected):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)

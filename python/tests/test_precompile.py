"""Kernels are JIT-compiled while the backend compiles a graph, never inside the first forward or
backward: the op library's ``compiles`` counter grows only by what the backend's precompile step
counted (``kernels_precompiled``)."""

from __future__ import annotations

import pytest
import torch
from _models import CatLinear
from _util import assert_close_to, randn

import splitlinear


@pytest.mark.parametrize("training", [False, True], ids=["infer", "train"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("fallback", ["inductor", "eager"])
def test_no_kernel_compiled_in_the_first_call(op: object, training: bool, bias: bool, fallback: str) -> None:
    torch._dynamo.reset()
    # A signature no other test uses (6 parts, float64), so the kernels are not cached already.
    rows = [3, 5, 2, 4, 6, 1] if bias else [2, 2, 3, 3, 1, 5]
    model = CatLinear(16, rows, bias=bias, dtype=torch.float64).requires_grad_(training)
    compiled = torch.compile(model, backend="splitlinear", fullgraph=True,
                             options={"fallback": fallback, "strict": True})
    before = splitlinear.stats()
    x = randn(4, 16, dtype=torch.float64).requires_grad_(training)
    with torch.set_grad_enabled(training):
        out = compiled(x)
        if training:
            out.sum().backward()
    after = splitlinear.stats()
    precompiled = after["kernels_precompiled"] - before["kernels_precompiled"]
    compiled_kernels = after["compiles"] - before["compiles"]
    assert precompiled >= 1
    assert compiled_kernels == precompiled  # nothing compiled during the first forward/backward
    assert_close_to(out, torch.nn.functional.linear(
        x.detach(), torch.cat(model.weights()).detach(),
        torch.cat(model.biases()).detach() if bias else None), torch.float64)

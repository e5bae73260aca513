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
    # A signature no other test or case uses (float64, 20 to 27 parts; test_op_inputs precompiles
    # 13), so no kernel is cached already and the precompile step must compile (the cache is
    # process-wide, and one kernel per signature leaves it to no eviction).
    case = 4 * (fallback == "eager") + 2 * bias + training
    rows = [1 + (i % 5) for i in range(20 + case)]
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

"""Dynamic shapes: never more graphs than the same fallback without splitlinear.

Dynamo compiles once per static shape, then marks a changed dim dynamic and
compiles one more (automatic dynamic shapes). Nothing splitlinear adds (the
rewrite, the op's fake kernels, its autograd formula under AOT tracing) may
read a symbolic batch size as a concrete one: that would guard on it and
recompile for every new batch.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
import torch
import torch._dynamo.utils
from _models import CatLinear, SiblingQKV
from _util import op_runs, randn

import splitlinear

BATCHES = (2, 7, 3, 11, 5)


def _frames(make: Callable[[], torch.nn.Module], backend: str, fallback: str, rank: int,
            grad: bool, device: str, mark_dynamic: bool = False) -> int:
    """Graphs Dynamo compiled running ``BATCHES`` through the model; checks values on the way."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    torch.manual_seed(100)
    model = make()
    if backend == "splitlinear":
        compiled = torch.compile(model, backend="splitlinear", options={"fallback": fallback})
    else:
        compiled = torch.compile(model, backend=fallback)
    for batch in BATCHES:
        x = randn(*((batch, 16) if rank == 2 else (batch, 3, 16)), device=device)
        if mark_dynamic:
            torch._dynamo.mark_dynamic(x, 0)
        x.requires_grad_(grad)
        with torch.set_grad_enabled(grad):
            got, expected = compiled(x), model(x)
            torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
            if grad:
                loss = sum(t.square().sum() for t in (got if isinstance(got, tuple) else (got,)))
                loss.backward()
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


MODELS = {
    "cat": lambda bias, device: (lambda: CatLinear(16, [8, 4, 4], bias=bias, device=device)),
    "siblings": lambda bias, device: (lambda: SiblingQKV(16, 8, 4, bias=bias, device=device)),
}


@pytest.mark.parametrize("grad", [False, True], ids=["infer", "train"])
@pytest.mark.parametrize("fallback", ["eager", "inductor"])
@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("pattern", list(MODELS))
def test_no_more_graphs_than_plain_dynamo(op: object, device: str, pattern: str, bias: bool, rank: int,
                                          fallback: str, grad: bool) -> None:
    make = MODELS[pattern](bias, device)
    plain = _frames(make, "plain", fallback, rank, grad, device)
    splitlinear.reset_stats()
    ours = _frames(make, "splitlinear", fallback, rank, grad, device)
    assert op_runs() > 0
    assert ours <= plain == 2


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
@pytest.mark.parametrize("pattern", list(MODELS))
def test_mark_dynamic_gives_one_graph(op: object, device: str, pattern: str, fallback: str) -> None:
    for bias, grad in itertools.product((True, False), (False, True)):
        make = MODELS[pattern](bias, device)
        splitlinear.reset_stats()
        assert _frames(make, "splitlinear", fallback, 3, grad, device, mark_dynamic=True) == 1
        assert splitlinear.stats()["regions_matched"] == 1

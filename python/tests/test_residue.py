"""A rewritten graph left with nothing but op calls (and views of their outputs) runs eagerly under
``fallback="inductor"`` (``splitlinear.fx.residue``): the counter ``graphs_run_eagerly`` says so,
Inductor is not called, and results equal eager PyTorch. A graph with any other op still goes to
Inductor."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
import torch.fx as fx

import splitlinear
from _models import CatLinear, CatLinearTanh, SiblingQKV
from _util import compile_sl, randn
from splitlinear.fx.residue import only_op_calls


@pytest.fixture
def inductor_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the backend's calls of Inductor's ``compile_fx`` (the real one still runs)."""
    import torch._inductor.compile_fx as compile_fx_module

    calls: list[int] = []
    real = compile_fx_module.compile_fx

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(compile_fx_module, "compile_fx", counting)
    yield calls


def _eager_count() -> int:
    return splitlinear.stats()["graphs_run_eagerly"]


def _check_step(model: torch.nn.Module, compiled: Callable[..., Any], x: torch.Tensor) -> None:
    """Forward and backward of ``compiled`` equal ``model``'s (float64: exact up to rounding)."""
    xc, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
    got, want = compiled(xc), model(xe)
    got, want = (got,) if isinstance(got, torch.Tensor) else got, (want,) if isinstance(want, torch.Tensor) else want
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)
        assert g.is_contiguous() == w.is_contiguous()
    seeds = [randn(*w.shape, dtype=torch.float64) for w in want]
    params = list(model.parameters())
    g_got = torch.autograd.grad(got, [xc, *params], seeds)
    g_want = torch.autograd.grad(want, [xe, *params], seeds)
    for g, w in zip(g_got, g_want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(5, 16), (2, 3, 16)], ids=["2d", "3d"])
def test_op_only_graph_runs_eagerly(op: object, inductor_calls: list[int], shape: tuple[int, ...]) -> None:
    torch.manual_seed(3)
    model = CatLinear(16, [8, 4, 4], dtype=torch.float64)
    before = _eager_count()
    compiled = compile_sl(model, fallback="inductor")
    _check_step(model, compiled, randn(*shape, dtype=torch.float64))
    assert _eager_count() - before == 1
    assert splitlinear.stats()["regions_matched"] >= 1
    assert inductor_calls == []


def test_sibling_outputs_with_contiguous_run_eagerly(op: object, inductor_calls: list[int]) -> None:
    """A horizontal region returned as graph outputs: narrows made ``.contiguous()``, still eager."""
    torch.manual_seed(4)
    model = SiblingQKV(16, 8, 4, bias=True).double()
    before = _eager_count()
    compiled = compile_sl(model, fallback="inductor")
    _check_step(model, compiled, randn(3, 16, dtype=torch.float64))
    assert _eager_count() - before == 1
    assert inductor_calls == []


def test_graph_with_other_ops_goes_to_inductor(op: object, inductor_calls: list[int]) -> None:
    torch.manual_seed(5)
    model = CatLinearTanh(16, [8, 4, 4], dtype=torch.float64)
    before = _eager_count()
    compiled = compile_sl(model, fallback="inductor")
    _check_step(model, compiled, randn(5, 16, dtype=torch.float64))
    assert _eager_count() == before
    assert inductor_calls, "Inductor was not called for a graph with a tanh"


def test_eager_fallback_does_not_count(op: object) -> None:
    model = CatLinear(16, [8, 4, 4], dtype=torch.float64)
    before = _eager_count()
    compiled = compile_sl(model, fallback="eager")
    _check_step(model, compiled, randn(5, 16, dtype=torch.float64))
    assert _eager_count() == before


def _op_call(graph: fx.Graph, x: fx.Node) -> fx.Node:
    return graph.call_function(torch.ops.splitlinear.linear.default, (x, [x], None))


@pytest.mark.parametrize(("build", "expected"), [
    (_op_call, True),
    (lambda g, x: g.call_function(torch.narrow, (_op_call(g, x), -1, 0, 2)), True),
    (lambda g, x: g.call_method("contiguous", (g.call_function(torch.narrow, (_op_call(g, x), -1, 0, 2)),)), True),
    (lambda g, x: g.call_function(operator.getitem,
                                  (g.call_function(torch.split, (_op_call(g, x), [1, 1]), {"dim": -1}), 0)), True),
    (lambda g, x: x, False),  # no op call
    (lambda g, x: g.call_function(torch.tanh, (_op_call(g, x),)), False),
    (lambda g, x: g.call_method("view", (_op_call(g, x), -1)), False),
    (lambda g, x: g.call_method("contiguous", (_op_call(g, x),), {"memory_format": torch.channels_last}), False),
    (lambda g, x: g.call_function(torch.ops.aten.mm.default, (x, x)), False),
    (lambda g, x: g.call_module("m", (x,)), False),
    (lambda g, x: g.get_attr("w"), False),
], ids=["op", "narrow", "contiguous", "split-getitem", "no-op", "tanh", "view", "contiguous-kwargs", "aten-mm",
        "module", "get-attr"])
def test_only_op_calls(op: object, build: Callable[[fx.Graph, fx.Node], fx.Node], expected: bool) -> None:
    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.output(build(graph, x))
    assert only_op_calls(fx.GraphModule({"m": torch.nn.Identity(), "w": torch.zeros(1)}, graph)) is expected


def _backward_under_compiled_autograd(loss: torch.Tensor) -> None:
    with torch._dynamo.compiled_autograd._enable(torch.compile(backend="eager")):
        loss.backward()


def test_compiled_autograd_flag_keeps_inductor(op: object, inductor_calls: list[int]) -> None:
    """Regression (new-user report): compiled autograd cannot trace the op's C++ backward node,
    which a graph run eagerly leaves in the autograd graph. With ``compiled_autograd`` on when the
    graph is compiled, the graph goes to Inductor (AOTAutograd's backward), and gradients match."""
    torch.manual_seed(6)
    model = SiblingQKV(16, 8, 4, bias=True).double()
    before = _eager_count()
    with torch._dynamo.config.patch(compiled_autograd=True):
        compiled = compile_sl(model, fallback="inductor")
        x = randn(3, 16, dtype=torch.float64).requires_grad_()
        outs = compiled(x)
    assert _eager_count() == before and inductor_calls
    xe = x.detach().clone().requires_grad_()
    want = model(xe)
    loss = sum((o * (i + 1)).sin().sum() for i, o in enumerate(outs))
    _backward_under_compiled_autograd(loss)
    sum((o * (i + 1)).sin().sum() for i, o in enumerate(want)).backward()
    torch.testing.assert_close(x.grad, xe.grad, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
def test_compiled_autograd_turned_on_later_names_the_cause(op: object, fallback: str) -> None:
    """Compiled autograd turned on only around the backward of a graph run eagerly reaches the
    op's backward node: a clear error naming the node and the way out, not PyTorch's bare
    'compiled_args not implemented'."""
    torch.manual_seed(7)
    model = SiblingQKV(16, 8, 4, bias=True).double()
    compiled = compile_sl(model, fallback=fallback)
    x = randn(3, 16, dtype=torch.float64).requires_grad_()
    loss = sum(o.sin().sum() for o in compiled(x))
    with pytest.raises(NotImplementedError, match=r"splitlinear.linear: compiled autograd cannot trace.*"
                                                  r"torch._dynamo.config.compiled_autograd"):
        _backward_under_compiled_autograd(loss)

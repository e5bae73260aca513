"""In-place code around fused linears: a mutation is a barrier, results equal eager.

Fusing sibling linears moves the later ones up to the first; using the parts
of a ``torch.cat`` in place reads them at the linear, not at the cat. A node
that writes memory between those points would make the rewrite read other
values than eager, so it blocks the rewrite. One test per mutation form and
per pattern; the values (outputs and the mutated tensors afterwards) must equal
eager's, and the region must not be formed across the mutation.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from _util import randn

import splitlinear

Mutation = Callable[[torch.Tensor, torch.Tensor], None]


def _mul_(t: torch.Tensor, other: torch.Tensor) -> None:
    t.mul_(2)


def _add_(t: torch.Tensor, other: torch.Tensor) -> None:
    t.add_(other)


def _tensor_fn(t: torch.Tensor, other: torch.Tensor) -> None:
    torch.Tensor.mul_(t, 3)


def _copy_(t: torch.Tensor, other: torch.Tensor) -> None:
    t.copy_(other)


def _index_add_(t: torch.Tensor, other: torch.Tensor) -> None:
    t.index_add_(0, torch.tensor([0], device=t.device), other[:1])


def _out(t: torch.Tensor, other: torch.Tensor) -> None:
    torch.add(other, 1, out=t)


def _set_(t: torch.Tensor, other: torch.Tensor) -> None:
    t.set_(other)


def _data(t: torch.Tensor, other: torch.Tensor) -> None:
    t.data = other


def _setitem(t: torch.Tensor, other: torch.Tensor) -> None:
    t[0] = 1.5


def _relu_(t: torch.Tensor, other: torch.Tensor) -> None:
    torch.relu_(t)


def _inplace_kwarg(t: torch.Tensor, other: torch.Tensor) -> None:
    F.relu(t, inplace=True)


def _iadd(t: torch.Tensor, other: torch.Tensor) -> None:
    t += other


def _view_copy(t: torch.Tensor, other: torch.Tensor) -> None:
    t.view(-1)[:3].fill_(0.25)  # through a view of the tensor


def _inplace_positional(t: torch.Tensor, other: torch.Tensor) -> None:
    F.leaky_relu(t, 0.1, True)


_LEAKY = torch.nn.LeakyReLU(0.1, inplace=True)  # passes inplace by position


def _inplace_module(t: torch.Tensor, other: torch.Tensor) -> None:
    _LEAKY(t)


def _iadd_dunder(t: torch.Tensor, other: torch.Tensor) -> None:
    t.__iadd__(other)


def _foreach(t: torch.Tensor, other: torch.Tensor) -> None:
    torch._foreach_mul_([t], 2.0)


@torch.compiler.allow_in_graph
def _opaque_scale(t: torch.Tensor) -> torch.Tensor:
    t.mul_(2)
    return t


def _allow_in_graph(t: torch.Tensor, other: torch.Tensor) -> None:
    _opaque_scale(t)


MUTATIONS: dict[str, Mutation] = {
    "mul_": _mul_, "add_": _add_, "Tensor.mul_": _tensor_fn, "copy_": _copy_, "index_add_": _index_add_,
    "out=": _out, "set_": _set_, ".data=": _data, "setitem": _setitem, "relu_": _relu_,
    "inplace=True": _inplace_kwarg, "+=": _iadd, "view.fill_": _view_copy,
    "inplace-positional": _inplace_positional, "nn.LeakyReLU(inplace=True)": _inplace_module,
    "__iadd__": _iadd_dunder, "_foreach_mul_": _foreach, "allow_in_graph": _allow_in_graph,
}

# pattern -> (function of (mutation, x, wa, wb, ba, bb, other), index of the mutated argument)
Pattern = Callable[..., object]


def _siblings_input(mut: Mutation, x, wa, wb, ba, bb, other):  # noqa: ANN001, ANN202
    q = F.linear(x, wa, ba)
    mut(x, other)
    return q, F.linear(x, wb, bb)


def _siblings_weight(mut: Mutation, x, wa, wb, ba, bb, other):  # noqa: ANN001, ANN202
    q = F.linear(x, wa, ba)
    mut(wb, other)
    return q, F.linear(x, wb, bb)


def _cat_weight(mut: Mutation, x, wa, wb, ba, bb, other):  # noqa: ANN001, ANN202
    w, b = torch.cat([wa, wb]), torch.cat([ba, bb])
    mut(wa, other)
    return F.linear(x, w, b)


def _cat_bias(mut: Mutation, x, wa, wb, ba, bb, other):  # noqa: ANN001, ANN202
    w, b = torch.cat([wa, wb]), torch.cat([ba, bb])
    mut(ba, other)
    return F.linear(x, w, b)


PATTERNS: dict[str, tuple[Pattern, int]] = {
    "siblings-input": (_siblings_input, 0),
    "siblings-weight": (_siblings_weight, 2),
    "cat-weight": (_cat_weight, 1),
    "cat-bias": (_cat_bias, 3),
}


def _inputs(device: str, mutated: int) -> list[torch.Tensor]:
    x = randn(4, 8, device=device)
    wa, wb = randn(6, 8, device=device, scale=0.3), randn(6, 8, device=device, scale=0.3)
    ba, bb = randn(6, device=device), randn(6, device=device)
    args = [x, wa, wb, ba, bb]
    return [*args, randn(*args[mutated].shape, device=device)]


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
@pytest.mark.parametrize("pattern", list(PATTERNS))
@pytest.mark.parametrize("form", list(MUTATIONS))
def test_mutation_is_a_barrier(op: object, device: str, form: str, pattern: str, fallback: str) -> None:
    torch.manual_seed(90)
    fn, mutated = PATTERNS[pattern]
    mut = MUTATIONS[form]

    def f(*args: torch.Tensor) -> object:
        return fn(mut, *args)

    # Dynamo graph-breaks on ``set_`` of a graph input (``.data =`` is traced
    # as ``set_`` and stays in the graph): the break itself splits the region.
    compiled = torch.compile(f, backend="splitlinear", fullgraph=form != "set_",
                             options={"fallback": fallback})
    for _ in range(2):
        args = _inputs(device, mutated)
        eager_args = [a.clone() for a in args]
        with torch.no_grad():
            got, expected = compiled(*args), f(*eager_args)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
        for a, e in zip(args, eager_args):  # the mutation itself happened as in eager
            torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-5)
    stats = splitlinear.stats()
    assert stats["regions_matched"] == 0, "no region may span the mutation"
    if form != "set_":  # one graph: the matcher saw the candidate and refused it
        assert stats["candidates_rejected"] >= 1


@pytest.mark.parametrize("pattern", ["siblings", "cat"])
def test_mutation_outside_the_region_does_not_block(op: object, device: str, pattern: str) -> None:
    """Control: the same mutation before or after the region leaves it fused."""
    torch.manual_seed(91)

    def f(x: torch.Tensor, wa: torch.Tensor, wb: torch.Tensor) -> object:
        x.mul_(2)
        if pattern == "siblings":
            out = (F.linear(x, wa), F.linear(x, wb))
        else:
            out = F.linear(x, torch.cat([wa, wb]))
        wa.add_(1)
        return out

    compiled = torch.compile(f, backend="splitlinear", fullgraph=True, options={"fallback": "eager"})
    args = [randn(4, 8, device=device), randn(6, 8, device=device), randn(6, 8, device=device)]
    eager_args = [a.clone() for a in args]
    with torch.no_grad():
        torch.testing.assert_close(compiled(*args), f(*eager_args))
    for a, e in zip(args, eager_args):
        torch.testing.assert_close(a, e)
    assert splitlinear.stats()["regions_matched"] == 1


def test_rejection_names_the_mutating_node(op: object) -> None:
    from splitlinear.backend import rewrite_graph
    from splitlinear.options import SplitLinearOptions

    plans = []

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable[..., object]:
        plans.append(rewrite_graph(gm, example_inputs, SplitLinearOptions()))
        return gm.forward

    args = _inputs("cpu", 0)
    with torch.no_grad():
        torch.compile(lambda *a: _siblings_input(_mul_, *a), backend=backend, fullgraph=True)(*args)
    (plan,) = plans
    assert any("in-place/mutating node 'mul_'" in r.reason for r in plan.rejections), plan.rejections


def test_inference_mode_block_is_a_barrier(op: object) -> None:
    """A sibling inside ``torch.inference_mode()`` is not fused with one outside: its
    output must stay out of autograd, as in eager. (Eager fallback only:
    ``backend="inductor"`` itself cannot compile an inference_mode block.)"""
    torch.manual_seed(92)

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k = torch.nn.Linear(8, 6), torch.nn.Linear(8, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q = self.q(x)
            with torch.inference_mode():
                k = self.k(x)
            return q + k.clone().sum()

    model = Model()
    x = randn(6, 8).requires_grad_()
    torch.compile(model, backend="splitlinear", options={"fallback": "eager"})(x).sum().backward()
    got = (x.grad.clone(), model.q.weight.grad.clone(), model.k.weight.grad)
    x.grad, model.q.weight.grad = None, None
    model(x).sum().backward()
    torch.testing.assert_close(got[0], x.grad)
    torch.testing.assert_close(got[1], model.q.weight.grad)
    assert got[2] is None and model.k.weight.grad is None
    assert splitlinear.stats()["regions_matched"] == 0

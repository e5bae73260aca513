"""The post-grad pass writing a narrowed op output's gradient as one concatenation (splitlinear.grad_concat)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from _util import compile_sl
from torch import nn
from torch._inductor.custom_graph_pass import CustomGraphPass
from torch.fx.experimental.proxy_tensor import make_fx

import splitlinear
from splitlinear.grad_concat import ConcatNarrowGrads, with_concat_pass

aten = torch.ops.aten


class QkvSwiGLU(nn.Module):
    """q/k/v siblings, then gate/up siblings through SiLU: both sums of narrows' gradients."""

    def __init__(self, d: int = 24, ff: int = 40) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, 8), nn.Linear(d, 8)
        self.o = nn.Linear(d + 16, d)
        self.gate, self.up = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.o(torch.cat([self.q(x).sin(), self.k(x) * self.v(x).cos(), self.v(x)], -1))
        return self.down(F.silu(self.gate(h)) * self.up(h))


class Recorder(CustomGraphPass):
    """A user's post-grad pass: records the targets it saw."""

    def __init__(self) -> None:
        self.targets: list[list[Any]] = []

    def __call__(self, graph: torch.fx.Graph) -> None:
        self.targets.append([n.target for n in graph.nodes if n.op == "call_function"])

    def uuid(self) -> Any:
        return "recorder"


def _grads(model: nn.Module, fn: Callable[..., torch.Tensor], x: torch.Tensor, g: torch.Tensor) -> list[torch.Tensor]:
    x = x.clone().requires_grad_()
    fn(x).backward(g)
    return [x.grad, *(p.grad for p in model.parameters())]


def test_training_gradients_equal_eager_and_graph_holds_concat(op: object, device: str) -> None:
    torch.manual_seed(3)
    eager = QkvSwiGLU().double().to(device)
    model = copy.deepcopy(eager)
    recorder = Recorder()
    compiled = compile_sl(model, fallback="inductor",
                          inductor_options={"post_grad_custom_pre_pass": recorder, "fx_graph_cache": False})
    x = torch.randn(3, 5, 24, dtype=torch.float64, device=device)
    g = torch.randn(3, 5, 24, dtype=torch.float64, device=device)
    expected = _grads(eager, eager, x, g)
    got = _grads(model, compiled, x, g)
    for e, a in zip(expected, got):
        torch.testing.assert_close(a, e, rtol=1e-12, atol=1e-12)
    assert splitlinear.stats()["regions_matched"] == 2
    assert splitlinear.stats()["narrow_grads_concatenated"] == 2
    # The user's pass still runs, after ours: it sees the concatenations and no slice_scatter.
    backward = [t for t in recorder.targets if torch.ops.splitlinear.concat.default in t]
    assert len(backward) == 1
    assert aten.slice_scatter.default not in backward[0]


def test_no_sum_of_blocks_in_forward_only_graphs(op: object) -> None:
    torch.manual_seed(4)
    model = QkvSwiGLU().double()
    compiled = compile_sl(model, fallback="inductor")
    x = torch.randn(2, 24, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-12, atol=1e-12)
    assert splitlinear.stats()["narrow_grads_concatenated"] == 0


def _pass_on(fn: Callable[..., torch.Tensor], *args: torch.Tensor) -> tuple[torch.fx.GraphModule, list[Any]]:
    """``fn`` traced to ATen, with the pass run on its graph; the targets left."""
    gm = make_fx(fn, tracing_mode="fake")(*args)
    ConcatNarrowGrads()(gm.graph)
    gm.recompile()
    return gm, [n.target for n in gm.graph.nodes if n.op == "call_function"]


def _blocks(*srcs: torch.Tensor, dim: int = 1, starts: list[int] | None = None, fill: float = 0.0,
            size: int | None = None) -> torch.Tensor:
    shape = list(srcs[0].shape)
    shape[dim] = size if size is not None else sum(s.shape[dim] for s in srcs)
    base = torch.full(shape, fill, dtype=srcs[0].dtype)
    starts = starts if starts is not None else [sum(s.shape[dim] for s in srcs[:i]) for i in range(len(srcs))]
    out = None
    for s, start in zip(srcs, starts):
        block = torch.slice_scatter(base, s, dim, start, start + s.shape[dim])
        out = block if out is None else out + block
    assert out is not None
    return out


def test_pass_rewrites_exact_tiling_in_any_order() -> None:
    a, b, c = torch.randn(4, 3), torch.randn(4, 5), torch.randn(4, 2)

    def f(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return _blocks(b, c, a, starts=[3, 8, 0])

    gm, targets = _pass_on(f, a, b, c)
    assert targets == [torch.ops.splitlinear.concat.default]
    torch.testing.assert_close(gm(a, b, c), torch.cat([a, b, c], 1), rtol=0, atol=0)


def test_pass_erases_only_what_it_replaced() -> None:
    a, b = torch.randn(4, 3), torch.randn(4, 5)

    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a * 2  # dead, and not the pass's to erase
        return _blocks(a, b)

    gm, targets = _pass_on(f, a, b)
    assert targets == [aten.mul.Tensor, torch.ops.splitlinear.concat.default]


def test_pass_rewrites_negative_dim() -> None:
    a, b = torch.randn(2, 3, 4), torch.randn(2, 3, 6)
    gm, targets = _pass_on(lambda a, b: _blocks(a, b, dim=-1), a, b)
    assert targets == [torch.ops.splitlinear.concat.default]
    assert gm.graph.find_nodes(op="call_function", target=torch.ops.splitlinear.concat.default)[0].args[1] == 2
    torch.testing.assert_close(gm(a, b), torch.cat([a, b], -1), rtol=0, atol=0)


@pytest.mark.parametrize("case", ["gap", "overlap", "nonzero_base", "other_term", "one_block", "two_dims"])
def test_pass_leaves_other_sums(case: str) -> None:
    a, b = torch.randn(4, 3), torch.randn(4, 5)
    fns: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
        "gap": lambda a, b: _blocks(a, b, starts=[0, 4], size=9),
        "overlap": lambda a, b: _blocks(a, b, starts=[0, 2], size=7),
        "nonzero_base": lambda a, b: _blocks(a, b, fill=1.0),
        "other_term": lambda a, b: _blocks(a, size=8) + torch.ones(4, 8) + _blocks(b, starts=[3], size=8),
        "one_block": lambda a, b: _blocks(a, size=3) + _blocks(a, size=3),
        "two_dims": lambda a, b: (torch.slice_scatter(torch.full((8, 8), 0.0), a.new_ones(8, 3), 1, 0, 3)
                                  + torch.slice_scatter(torch.full((8, 8), 0.0), a.new_ones(3, 8), 0, 3, 6)),
    }
    fn = fns[case]
    gm, targets = _pass_on(fn, a, b)
    assert torch.ops.splitlinear.concat.default not in targets
    torch.testing.assert_close(gm(a, b), fn(a, b), rtol=0, atol=0)


def test_pass_keeps_a_shared_partial_sum() -> None:
    a, b, c = torch.randn(4, 3), torch.randn(4, 5), torch.randn(4, 2)

    def f(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        base = torch.full((4, 10), 0.0)
        ab = torch.slice_scatter(base, a, 1, 0, 3) + torch.slice_scatter(base, b, 1, 3, 8)
        return ab, ab + torch.slice_scatter(base, c, 1, 8, 10)

    gm, targets = _pass_on(f, a, b, c)
    # The outer sum's inner add has another user: neither is a tiling of its own.
    assert torch.ops.splitlinear.concat.default not in targets
    for got, want in zip(gm(a, b, c), f(a, b, c)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_concat_op_contract() -> None:
    a, b = torch.randn(3, 2), torch.randn(3, 4)
    torch.testing.assert_close(torch.ops.splitlinear.concat([a, b], 1), torch.cat([a, b], 1), rtol=0, atol=0)
    torch.library.opcheck(torch.ops.splitlinear.concat.default, ([a.requires_grad_(), b], 1))
    with pytest.raises(ValueError, match="at least two tensors"):
        torch.ops.splitlinear.concat([a], 0)
    with pytest.raises(ValueError, match=r"dim must be in \[0, 2\), got 2"):
        torch.ops.splitlinear.concat([a, b], 2)
    with pytest.raises(ValueError, match=r"tensors\[1\] is torch.float64"):
        torch.ops.splitlinear.concat([a, b.double()], 1)
    with pytest.raises(ValueError, match=r"tensors\[1\] has 1 dims, tensors\[0\] has 2"):
        torch.ops.splitlinear.concat([a, torch.empty(0)], 0)


def test_negative_zero_of_a_block_is_kept() -> None:
    """The rewrite keeps a block's -0.0 (the sum of blocks made it +0.0; module docstring)."""
    a, b = torch.tensor([[-0.0, 1.0]]), torch.tensor([[-0.0]])
    gm, _ = _pass_on(lambda a, b: _blocks(a, b), a, b)
    out = gm(a, b)
    assert torch.equal(out, _blocks(a, b))
    assert torch.signbit(out).tolist() == [[True, False, True]]


def test_concat_gradient_is_split() -> None:
    a, b = torch.randn(3, 2, dtype=torch.float64, requires_grad=True), torch.randn(3, 4, dtype=torch.float64,
                                                                                   requires_grad=True)
    g = torch.randn(3, 6, dtype=torch.float64)
    torch.ops.splitlinear.concat([a, b], 1).backward(g)
    torch.testing.assert_close(a.grad, g[:, :2], rtol=0, atol=0)
    torch.testing.assert_close(b.grad, g[:, 2:], rtol=0, atol=0)


def test_with_concat_pass_chains_and_keys_the_cache() -> None:
    user = Recorder()
    patches = with_concat_pass({"post_grad_custom_pre_pass": user})
    ours = patches["post_grad_custom_pre_pass"]
    assert isinstance(ours, ConcatNarrowGrads) and ours.then is user
    assert ours.uuid() is not None and ours.uuid()[1] == "recorder"
    assert with_concat_pass(patches)["post_grad_custom_pre_pass"] is ours
    # A user pass without a uuid makes the chain uncacheable, as it was alone.
    assert ConcatNarrowGrads(lambda graph: None).uuid() is None
    assert ConcatNarrowGrads().uuid() is not None


def test_dynamic_batch(op: object) -> None:
    torch.manual_seed(5)
    eager = QkvSwiGLU().double()
    model = copy.deepcopy(eager)
    compiled = torch.compile(model, backend="splitlinear", dynamic=True, fullgraph=True,
                             options={"fallback": "inductor"})
    for rows in (3, 7):
        x, g = torch.randn(rows, 24, dtype=torch.float64), torch.randn(rows, 24, dtype=torch.float64)
        for p in (*eager.parameters(), *model.parameters()):
            p.grad = None
        for e, a in zip(_grads(eager, eager, x, g), _grads(model, compiled, x, g)):
            torch.testing.assert_close(a, e, rtol=1e-12, atol=1e-12)
    assert splitlinear.stats()["narrow_grads_concatenated"] == 2

"""What the backend matches and what it leaves alone (with the reason)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from _util import compile_sl, randn

import splitlinear
from splitlinear.backend import rewrite_graph
from splitlinear.fx import Plan
from splitlinear.options import SplitLinearOptions


def _capture(fn: Callable[..., Any], *args: Any, **options: Any) -> tuple[Any, Plan, torch.fx.GraphModule]:
    """Compile ``fn`` with a backend running the rewrite only; return its output, plan and graph."""
    seen: list[tuple[Plan, torch.fx.GraphModule]] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        seen.append((rewrite_graph(gm, example_inputs, SplitLinearOptions.from_dict(options)), gm))
        return gm.forward

    out = torch.compile(fn, backend=backend, fullgraph=True)(*args)
    assert len(seen) == 1
    return out, seen[0][0], seen[0][1]


def _op_calls(gm: torch.fx.GraphModule) -> int:
    import splitlinear.ops

    return sum(1 for n in gm.graph.nodes if n.op == "call_function" and n.target is splitlinear.ops.linear)


def _assert_same(got: Any, expected: Any) -> None:
    if isinstance(expected, (tuple, list)):
        for g, e in zip(got, expected):
            _assert_same(g, e)
    else:
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def _weights(device: str, *rows: int, k: int = 16) -> list[torch.Tensor]:
    return [randn(n, k, device=device, scale=0.25) for n in rows]


def test_linear_forms(op: object, device: str) -> None:
    """``linear``, ``@ .t()``, ``@ .T``, ``addmm(.., permute)``, ``matmul(.., transpose) + b``, ``mm``."""
    torch.manual_seed(30)
    wa, wb = _weights(device, 8, 4)
    ba, bb = randn(8, device=device), randn(4, device=device)

    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        w, b = torch.cat([wa, wb]), torch.cat([ba, bb])
        return (
            F.linear(x, w, b),
            x @ torch.cat([wa, wb]).t(),
            x @ torch.cat([wa, wb]).T,
            torch.addmm(torch.cat([ba, bb]), x, torch.cat([wa, wb]).permute(1, 0)),
            torch.matmul(x, torch.cat([wa, wb], dim=0).transpose(0, 1)) + torch.cat((ba, bb)),
            torch.mm(x, torch.cat([wa, wb]).t()),
        )

    x = randn(5, 16, device=device)
    out, plan, gm = _capture(f, x, horizontal_fusion=False)
    _assert_same(out, f(x))
    assert [r.kind for r in plan.regions] == ["vertical"] * 6 and not plan.rejections
    assert _op_calls(gm) == 6
    assert not any(n.target is torch.cat for n in gm.graph.nodes), "dead concatenations are removed"

    torch._dynamo.reset()
    out, plan, gm = _capture(f, x)  # horizontal: all read x; with/without bias fuse separately
    _assert_same(out, f(x))
    assert sorted(len(r.sites) for r in plan.regions) == [3, 3] and _op_calls(gm) == 2


def test_cat_of_computed_values_and_partial_cats(op: object, device: str) -> None:
    """Parts may be any graph values; a cat on only the weight or only the bias is matched too."""
    torch.manual_seed(31)
    wa, wb = _weights(device, 8, 4)
    w_full = torch.cat([wa, wb]).clone()
    ba, bb = randn(8, device=device), randn(4, device=device)
    b_full = torch.cat([ba, bb]).clone()

    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            F.linear(x, torch.cat([wa * 2, torch.tanh(wb)]), torch.cat([ba, bb]) + 1),
            F.linear(x, torch.cat([wa, wb]), b_full),
            F.linear(x, w_full, torch.cat([ba, bb])),
        )

    x = randn(2, 3, 16, device=device)
    out, plan, gm = _capture(f, x, horizontal_fusion=False)
    _assert_same(out, f(x))
    assert len(plan.regions) == 3 and not plan.rejections
    assert _op_calls(gm) == 3


def test_siblings_mixed_bias(op: object, device: str) -> None:
    """q has a bias, k and v do not: k and v are fused, q is left alone (rejected: mixed bias)."""
    torch.manual_seed(32)
    wq, wk, wv = _weights(device, 8, 4, 4)
    bq = randn(8, device=device)

    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return F.linear(x, wq, bq), F.linear(x, wk), F.linear(x, wv)

    x = randn(3, 16, device=device)
    out, plan, gm = _capture(f, x)
    _assert_same(out, f(x))
    assert [len(r.sites) for r in plan.regions] == [2]
    assert len(plan.rejections) == 1 and "mix bias" in plan.rejections[0].reason


def test_sibling_output_strides(op: object, device: str) -> None:
    """Outputs of a horizontal region that are returned or ``.view``-ed are dense, as in eager."""
    torch.manual_seed(33)
    wq, wk = _weights(device, 8, 8)

    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return F.linear(x, wq).view(-1), F.linear(x, wk)

    x = randn(2, 3, 16, device=device)
    out, plan, _ = _capture(f, x)
    _assert_same(out, f(x))
    assert len(plan.regions) == 1
    assert all(o.is_contiguous() for o in out)


_THROUGH_VIEWS = {
    # (returned values, from q and k) -- each reaches the graph output or a ``.view`` through views
    "getitem": lambda q, k: (q[0], k),
    "narrow": lambda q, k: (torch.narrow(q, 0, 1, 1), k),
    "split": lambda q, k: (torch.split(q, 1, 0)[0], k.split(2, -1)[1]),
    "transpose": lambda q, k: (q.transpose(0, 1), k),
    "unbind-view": lambda q, k: (q.unbind(0)[1].view(-1), k),
    "getitem-view": lambda q, k: (q[0].view(-1), k.unsqueeze(0).view(-1)),
}


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
@pytest.mark.parametrize("case", list(_THROUGH_VIEWS))
def test_sibling_output_strides_through_views(op: object, device: str, case: str, fallback: str) -> None:
    """Regression (new-user report): an output reaching the graph output or a ``.view`` through
    views that pass strides on (``q[0]``, ``split``, ``transpose``, ...) kept the fused buffer's
    strides: non-contiguous where eager's was dense, so a later ``.view`` raised (or, inside the
    compiled function, the compile failed)."""
    torch.manual_seed(35)
    wq, wk = _weights(device, 8, 4)
    pick = _THROUGH_VIEWS[case]

    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return pick(F.linear(x, wq), F.linear(x, wk))

    x = randn(3, 2, 16, device=device)
    splitlinear.reset_stats()
    compiled = torch.compile(f, backend="splitlinear", fullgraph=True, options={"fallback": fallback})
    got, want = compiled(x), f(x)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w)
        assert g.stride() == w.stride() and g.is_contiguous() == w.is_contiguous()
        if w.is_contiguous():
            g.view(-1)  # as eager allows
    assert splitlinear.stats()["regions_matched"] >= 1


@pytest.mark.parametrize(
    "case, reason",
    [
        ("mixed-dtype", "dtype"),
        ("complex", "dtype"),
        ("cat-dim-1", "dim 1"),
        ("autocast-float64", "autocast"),  # autocast leaves float64 alone
    ],
)
def test_rejections(op: object, device: str, case: str, reason: str,
                    caplog: pytest.LogCaptureFixture) -> None:
    torch.manual_seed(34)
    wa, wb = _weights(device, 8, 4)
    if case == "mixed-dtype":
        wb = wb.half()
        f = lambda x: F.linear(x, torch.cat([wa, wb]))  # noqa: E731
    elif case == "complex":
        wa, wb = wa.to(torch.complex64), wb.to(torch.complex64)
        f = lambda x: F.linear(x, torch.cat([wa, wb]))  # noqa: E731
    elif case == "cat-dim-1":
        wa, wb = _weights(device, 8, 8, k=8)
        f = lambda x: F.linear(x, torch.cat([wa, wb], dim=1))  # noqa: E731
    else:
        dtype = torch.bfloat16 if device == "cpu" else torch.float16
        wa, wb = wa.double(), wb.double()

        def f(x: torch.Tensor) -> torch.Tensor:
            with torch.autocast(device, dtype=dtype):
                return F.linear(x, torch.cat([wa, wb]))

    x = randn(3, 16, device=device)
    if case == "complex":
        x = x.to(torch.complex64)
    elif case == "autocast-float64":
        x = x.double()
    with caplog.at_level("DEBUG", logger="splitlinear"):
        out, plan, gm = _capture(f, x)
    torch.testing.assert_close(out, f(x))
    assert not plan.regions and _op_calls(gm) == 0
    assert len(plan.rejections) == 1 and reason in plan.rejections[0].reason
    assert any("rejected" in r.getMessage() and reason in r.getMessage() for r in caplog.records)


def test_strict_raises_naming_the_node(op: object, device: str) -> None:
    wa, wb = _weights(device, 8, 4)
    wb = wb.double()

    def f(x: torch.Tensor) -> torch.Tensor:  # cat promotes to float64: mixed part dtypes
        return F.linear(x.double(), torch.cat([wa, wb]))

    with pytest.raises(RuntimeError, match=r"(?s)strict=True.*node 'linear'.*weight part #0.*dtype"):
        compile_sl(f, strict=True)(randn(3, 16, device=device))
    torch._dynamo.reset()
    x = randn(3, 16, device=device)
    torch.testing.assert_close(compile_sl(f)(x), f(x))
    assert splitlinear.stats()["candidates_rejected"] >= 1


def test_grad_mode_change_between_siblings(op: object, device: str) -> None:
    """A sibling under ``torch.no_grad()`` is not fused with one that records autograd."""
    torch.manual_seed(35)
    wq, wk, wv = (w.requires_grad_() for w in _weights(device, 8, 8, 8))

    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        q = F.linear(x, wq)
        with torch.no_grad():
            k = F.linear(x, wk)
        return q, k, F.linear(x, wv)

    x = randn(3, 16, device=device)
    out, plan, _ = _capture(f, x)
    _assert_same(out, f(x))
    assert out[0].requires_grad and not out[1].requires_grad and out[2].requires_grad
    # q and v (both with grad) are fused; k stays apart.
    assert [len(r.sites) for r in plan.regions] == [2]
    assert [r.reason for r in plan.rejections if "grad-mode" in r.reason]


def test_operand_defined_after_sibling(op: object, device: str) -> None:
    """A sibling whose weight depends on another sibling's output cannot be fused with it."""
    torch.manual_seed(36)
    wq, wk = _weights(device, 8, 8)

    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        q = F.linear(x, wq)
        k = F.linear(x, wk * q.mean())
        return q, k

    x = randn(3, 16, device=device)
    out, plan, _ = _capture(f, x)
    _assert_same(out, f(x))
    assert not plan.regions
    assert any("defined after" in r.reason for r in plan.rejections)


def test_chained_regions(op: object, device: str) -> None:
    """A region reading another region's output (stacked split linears, q/k/v feeding on)."""
    torch.manual_seed(37)
    wa, wb = _weights(device, 8, 8)
    wc, wd = _weights(device, 8, 8)
    wq, wk = _weights(device, 16, 16)

    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = F.linear(x, torch.cat([wa, wb]))
        g = F.linear(h, torch.cat([wc, wd]))
        return F.linear(g, wq), F.linear(g, wk) * 2

    x = randn(3, 16, device=device)
    out, plan, gm = _capture(f, x)
    _assert_same(out, f(x))
    assert [r.kind for r in plan.regions] == ["vertical", "vertical", "horizontal"]
    assert _op_calls(gm) == 3


def test_backend_on_symbolic_trace_graph(op: object, device: str) -> None:
    """Called directly on an FX graph without Dynamo metadata, fake values are propagated first."""
    from _models import CatLinear

    from splitlinear.backend import splitlinear_backend

    torch.manual_seed(38)
    model = CatLinear(16, [8, 4], bias=True, device=device)
    gm = torch.fx.symbolic_trace(model)
    x = randn(3, 16, device=device)
    compiled = splitlinear_backend(gm, [x], options={"fallback": "eager"})
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert _op_calls(gm) == 1 and splitlinear.stats()["regions_matched"] == 1


def test_rewrite_graph_takes_an_options_dict_and_checks_its_arguments() -> None:
    """``rewrite_graph`` is public: options as a dict or None work like SplitLinearOptions,
    and a module that is not a GraphModule or an unknown option is a clear error."""

    class TwoLinears(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wa, self.wb = torch.nn.Parameter(torch.randn(4, 8)), torch.nn.Parameter(torch.randn(2, 8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.linear(x, torch.cat([self.wa, self.wb]))

    model, x = TwoLinears().double(), torch.randn(3, 8, dtype=torch.float64)
    expected = model(x)
    for options in ({"min_parts": 2}, None):
        gm = torch.fx.symbolic_trace(model)
        plan = rewrite_graph(gm, [x], options)
        assert len(plan.regions) == 1
        torch.testing.assert_close(gm(x), expected)
    with pytest.raises(TypeError, match="gm must be a torch.fx.GraphModule, got TwoLinears"):
        rewrite_graph(model, [x], None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['bogus'\]"):
        rewrite_graph(torch.fx.symbolic_trace(model), [x], {"bogus": 1})

"""CUDA graphs: the op captured by ``torch.cuda.graph`` (fresh thread, side stream), graphed
training through ``make_graphed_callables``, ``mode="reduce-overhead"`` with both fallbacks, and
what a replay does when a parameter's storage changes after the capture.

Every result is compared with eager PyTorch in float64 on fresh random data. CUDA only.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from _models import CatLinear
from _util import assert_close_to, non_view_runs, op_runs, randn

import splitlinear
from splitlinear.cudagraphs import recorded_graph_count

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")

ROWS = [48, 16, 16]
K = 64


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    yield
    torch._dynamo.reset()


def _parts(adjacent: bool, rows: list[int], k: int, dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    if adjacent:
        return list(randn(sum(rows), k, dtype=dtype, device="cuda").split(rows))
    return [randn(r, k, dtype=dtype, device="cuda") for r in rows]


def _reference(x: torch.Tensor, weight: list[torch.Tensor], bias: list[torch.Tensor] | None) -> torch.Tensor:
    b = torch.cat(bias).double() if bias is not None else None
    return F.linear(x.double(), torch.cat(weight).double(), b)


@pytest.mark.parametrize("adjacent", [True, False], ids=["adjacent", "separate"])
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "nobias"])
def test_op_captured_on_a_fresh_thread_and_side_stream(op: object, adjacent: bool, with_bias: bool) -> None:
    """Global-mode capture fails on any cudaMalloc, stream creation or host synchronization, by
    any thread: the op's first call on a fresh thread (new runtime context) must do none."""
    weight = _parts(adjacent, ROWS, K)
    bias = [b.view(-1) for b in _parts(adjacent, ROWS, 1)] if with_bias else None
    x = randn(8, K, device="cuda")
    op.linear(x, weight, bias)  # compiles the kernel on this thread (not a capture concern)
    torch.cuda.synchronize()
    before = splitlinear.stats()
    captured: dict[str, object] = {}

    def capture() -> None:
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=torch.cuda.Stream()):
                captured["y"] = op.linear(x, weight, bias)
            captured["graph"] = graph
        except BaseException as exc:  # re-raised on the test's thread
            captured["error"] = exc

    thread = threading.Thread(target=capture)
    thread.start()
    thread.join()
    if "error" in captured:
        raise captured["error"]  # type: ignore[misc]
    after = splitlinear.stats()
    # The path was decided once, at capture.
    assert after["views"] - before["views"] == (1 if adjacent else 0)
    graph, y = captured["graph"], captured["y"]
    for _ in range(2):  # new input values, same addresses
        x.copy_(randn(8, K, device="cuda"))
        graph.replay()  # type: ignore[attr-defined]
        torch.cuda.synchronize()
        assert_close_to(y, _reference(x, weight, bias), torch.float32)  # type: ignore[arg-type]


class _OpLinear(nn.Module):
    """A linear over Parameters that are views of one buffer, calling the op directly."""

    def __init__(self) -> None:
        super().__init__()
        w = randn(sum(ROWS), K, device="cuda", scale=K ** -0.5)
        b = randn(sum(ROWS), device="cuda")
        self.weight = nn.ParameterList([nn.Parameter(v) for v in w.split(ROWS)])
        self.bias = nn.ParameterList([nn.Parameter(v) for v in b.split(ROWS)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import splitlinear.ops as ops

        return ops.linear(x, list(self.weight), list(self.bias))


def test_make_graphed_callables_trains_like_eager(op: object) -> None:
    model = _OpLinear()
    assert model.weight[0].untyped_storage().data_ptr() == model.weight[1].untyped_storage().data_ptr()
    reference = copy.deepcopy(model)
    x = randn(8, K, device="cuda").requires_grad_()
    graphed = torch.cuda.make_graphed_callables(model, (x,))
    for _ in range(3):
        model.zero_grad()
        data = randn(8, K, device="cuda")
        grad = randn(8, sum(ROWS), device="cuda")
        xa = data.clone().requires_grad_()
        xb = data.double().requires_grad_()
        out = graphed(xa)
        out.backward(grad)
        ref = F.linear(xb, torch.cat(list(reference.weight)).double(), torch.cat(list(reference.bias)).double())
        ref.backward(grad.double())
        assert_close_to(out, ref, torch.float32)
        assert_close_to(xa.grad, xb.grad, torch.float32)
        ref_wgrad = xb.detach().T @ grad.double()
        for i, p in enumerate(model.weight):
            start = sum(ROWS[:i])
            assert_close_to(p.grad, ref_wgrad.T[start:start + ROWS[i]], torch.float32, scale=8)
        for i, p in enumerate(model.bias):
            start = sum(ROWS[:i])
            assert_close_to(p.grad, grad.double().sum(0)[start:start + ROWS[i]], torch.float32, scale=8)


def _packed_cat_linear(bias: bool = True) -> CatLinear:
    """A CatLinear whose parts are views of one buffer (as ``pack_parameters`` leaves them)."""
    model = CatLinear(K, ROWS, bias=bias, device="cuda")
    for group in ([model.weights()] + ([model.biases()] if bias else [])):
        whole = torch.cat([p.data for p in group])
        for p, view in zip(group, whole.split(ROWS)):
            p.data = view
    return model


def _eager(model: CatLinear, x: torch.Tensor) -> torch.Tensor:
    """The model's function in float64, reading its parameters (no gradient flows to them)."""
    bias = torch.cat(model.biases()).detach().double() if model.has_bias else None
    return F.linear(x.double(), torch.cat(model.weights()).detach().double(), bias)


@pytest.mark.parametrize("fallback", ["inductor", "eager"])
@pytest.mark.parametrize("training", [False, True], ids=["infer", "train"])
def test_reduce_overhead_replays_cuda_graphs(op: object, fallback: str, training: bool) -> None:
    model = _packed_cat_linear()
    compiled = torch.compile(model, backend="splitlinear", fullgraph=True,
                             options={"fallback": fallback, "mode": "reduce-overhead", "strict": True})
    for _ in range(4):
        torch.compiler.cudagraph_mark_step_begin()
        x = randn(8, K, device="cuda").requires_grad_(training)
        with torch.set_grad_enabled(training):
            out = compiled(x)
        assert_close_to(out, _eager(model, x), torch.float32)
        if training:
            grad = randn(*out.shape, device="cuda")
            model.zero_grad()
            out.backward(grad)
            xb = x.detach().double().requires_grad_()
            ref = _eager(model, xb)
            ref.backward(grad.double())
            assert_close_to(x.grad, xb.grad, torch.float32)
            ref_w = (grad.double().T @ x.detach().double())
            assert_close_to(torch.cat([p.grad for p in model.weights()]), ref_w, torch.float32, scale=8)
    assert torch._dynamo.utils.counters["inductor"]["cudagraph_skips"] == 0
    assert recorded_graph_count() >= (2 if training else 1)
    assert non_view_runs() == 0  # the packed parts were used in place at capture


@pytest.mark.parametrize("fallback", ["inductor", "eager"])
def test_storage_swap_after_capture_rerecords(op: object, fallback: str) -> None:
    """A parameter moved to a new storage after the capture: the replay must not read the old
    pointers. cudagraph trees see the new address and re-record, so the op decides again (the
    part is no longer adjacent: a non-view path) and the output follows the new values."""
    model = _packed_cat_linear()
    compiled = torch.compile(model, backend="splitlinear", fullgraph=True,
                             options={"fallback": fallback, "mode": "reduce-overhead"})
    with torch.no_grad():
        for _ in range(3):
            torch.compiler.cudagraph_mark_step_begin()
            x = randn(8, K, device="cuda")
            assert_close_to(compiled(x), _eager(model, x), torch.float32)
        recorded, non_views = recorded_graph_count(), non_view_runs()

        # p.data = ...: a new storage (and new values).
        model.weight_1.data = model.weight_1.data.clone() + 1.0
        for _ in range(3):
            torch.compiler.cudagraph_mark_step_begin()
            x = randn(8, K, device="cuda")
            assert_close_to(compiled(x), _eager(model, x), torch.float32)
        assert recorded_graph_count() > recorded
        assert non_view_runs() > non_views

        # load_state_dict copies in place: same addresses, new values, no re-record needed.
        state = {name: randn(*t.shape, device="cuda") for name, t in model.state_dict().items()}
        model.load_state_dict(state)
        for _ in range(2):
            torch.compiler.cudagraph_mark_step_begin()
            x = randn(8, K, device="cuda")
            assert_close_to(compiled(x), _eager(model, x), torch.float32)

        # .to(float64): Dynamo's dtype guards fail and the model recompiles.
        model.to(torch.float64)
        torch.compiler.cudagraph_mark_step_begin()
        x = randn(8, K, dtype=torch.float64, device="cuda")
        assert_close_to(compiled(x), _eager(model, x), torch.float64)
    assert op_runs() > 0


@pytest.mark.parametrize("fallback", ["inductor", "eager"])
def test_compiled_model_captured_by_torch_cuda_graph(op: object, fallback: str) -> None:
    """A model compiled in the default mode, captured by ``torch.cuda.graph`` after a warm-up on
    a side stream (PyTorch's recipe), replays with new input values like eager."""
    model = _packed_cat_linear()
    compiled = torch.compile(model, backend="splitlinear", fullgraph=True,
                             options={"fallback": fallback, "strict": True})
    x = randn(8, K, device="cuda")
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                compiled(x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = compiled(x)
        for _ in range(2):
            x.copy_(randn(8, K, device="cuda"))
            graph.replay()
            torch.cuda.synchronize()
            assert_close_to(y, _eager(model, x), torch.float32)
    assert non_view_runs() == 0

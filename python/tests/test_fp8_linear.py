"""``fp8_linear`` on the CPU: forward and backward against the emulation, autograd, compile, autocast.

The emulation (``_fp8_ref.fp8_linear``) follows the recipe that
``lib/Torch/Fp8Autograd.cpp`` documents; outputs and gradients must be
within 1 ulp of their dtype of it (plus the float32 accumulation bound), and
within FP8's error of the exact float64 result.
"""

from __future__ import annotations

import _fp8_ref as ref
import pytest
import torch
import torch.nn.functional as F
from _fp8_ref import assert_within_ulp

from splitlinear._dtypes import FP8_OUTER_VECTOR_RECIPES as FP8_RECIPES  # blockwise: test_fp8_blockwise.py

HIGH = [torch.bfloat16, torch.float16, torch.float32]
K = 64


def _problem(rows: tuple[int, ...], lead: tuple[int, ...], dtype: torch.dtype, bias: bool, seed: int,
             weight_dtype: torch.dtype | None = None, requires_grad: bool = True):
    torch.manual_seed(seed)
    x = ref.fresh(*lead, K, dtype=dtype).requires_grad_(requires_grad)
    ws = [ref.fresh(n, K, scale=s, dtype=weight_dtype or dtype).requires_grad_(requires_grad)
          for n, s in zip(rows, (0.1, 0.003, 0.5))]
    bs = [ref.fresh(n, dtype=dtype).requires_grad_(requires_grad) for n in rows] if bias else None
    return x, ws, bs


def _exact(x: torch.Tensor, ws: list[torch.Tensor], bs: list[torch.Tensor] | None) -> torch.Tensor:
    w = torch.cat([t.detach().double() for t in ws])
    b = None if bs is None else torch.cat([t.detach().double() for t in bs])
    return F.linear(x.detach().double(), w, b)


@pytest.mark.parametrize("dtype", HIGH, ids=str)
@pytest.mark.parametrize("rows", [(48,), (32, 16, 48)], ids=["1part", "3parts"])
@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("recipe", FP8_RECIPES)
def test_forward_matches_emulation(op, dtype: torch.dtype, rows, bias: bool, recipe: str) -> None:
    x, ws, bs = _problem(rows, (2, 3), dtype, bias, seed=1, requires_grad=False)
    y = op.fp8_linear(x, ws, bs, recipe=recipe)
    assert y.shape == (2, 3, sum(rows)) and y.dtype == dtype
    want = ref.fp8_linear(x, ws, bs, recipe)
    assert_within_ulp(y, want.y, dtype, what=f"forward {recipe}")
    assert ref.rel_err(y, _exact(x, ws, bs)) < 0.08


def test_forward_float32_master_weights(op) -> None:
    """bfloat16 activations with float32 weight parts: the parts are quantized from float32."""
    x, ws, bs = _problem((32, 16), (5,), torch.bfloat16, True, seed=2, weight_dtype=torch.float32,
                         requires_grad=False)
    y = op.fp8_linear(x, ws, bs)
    assert y.dtype == torch.bfloat16
    assert_within_ulp(y, ref.fp8_linear(x, ws, bs, "tensorwise").y, torch.bfloat16, what="fp32 weights")


def _check_grads(x, ws, bs, dy, recipe: str, got: dict[str, torch.Tensor | None]) -> None:
    """Gradients against the emulated backward (1 ulp) and the exact one (FP8's error)."""
    want = ref.fp8_linear(x, ws, bs, recipe, dy=dy)
    offsets = [0]
    for w in ws:
        offsets.append(offsets[-1] + w.shape[0])
    gd = dy.detach().reshape(-1, dy.shape[-1]).double()
    xd = x.detach().reshape(-1, x.shape[-1]).double()
    w_exact = torch.cat([w.detach().double() for w in ws])
    if x.requires_grad:
        dx = got["x"]
        assert dx is not None and dx.shape == x.shape and dx.dtype == x.dtype
        assert_within_ulp(dx.reshape(-1, x.shape[-1]), want.dx, x.dtype, what=f"dx {recipe}")
        assert ref.rel_err(dx.reshape(-1, x.shape[-1]), gd @ w_exact) < 0.12
    else:
        assert got["x"] is None
    dw_exact = gd.t() @ xd
    for i, w in enumerate(ws):
        g = got[f"w{i}"]
        if not w.requires_grad:
            assert g is None, f"frozen weight[{i}] got a gradient"
            continue
        assert g is not None and g.shape == w.shape and g.dtype == w.dtype
        block = slice(offsets[i], offsets[i + 1])
        part = ref.Gemm(want.dw.exact[block], want.dw.bound[block])
        # High-precision wgrad rounds in the input's dtype, then casts to the part's.
        ulp_dtype = x.dtype if recipe == "rowwise_with_gw_hp" else w.dtype
        assert_within_ulp(g.to(ulp_dtype), part, ulp_dtype, what=f"dw[{i}] {recipe}")
        assert ref.rel_err(g, dw_exact[block]) < (0.02 if recipe == "rowwise_with_gw_hp" else 0.12)
    for i in range(len(ws)):
        g = got.get(f"b{i}")
        if bs is None or not bs[i].requires_grad:
            assert g is None
            continue
        block = slice(offsets[i], offsets[i + 1])
        db = ref.Gemm(want.db[block], (gd.shape[0] + 3) * 2.0**-24 * gd.abs().sum(0)[block])
        assert_within_ulp(g, db, bs[i].dtype, what=f"db[{i}]")


def _run_backward(op, x, ws, bs, recipe: str, seed: int = 7) -> tuple[torch.Tensor, dict]:
    y = op.fp8_linear(x, ws, bs, recipe=recipe)
    torch.manual_seed(seed)
    dy = ref.fresh(*y.shape, dtype=y.dtype)
    y.backward(dy)
    got = {"x": x.grad, **{f"w{i}": w.grad for i, w in enumerate(ws)},
           **({} if bs is None else {f"b{i}": b.grad for i, b in enumerate(bs)})}
    return dy, got


@pytest.mark.parametrize("recipe", FP8_RECIPES)
@pytest.mark.parametrize("dtype", HIGH, ids=str)
@pytest.mark.parametrize("lead", [(2, 16), (19,)], ids=["M32", "M19"])
def test_gradients_match_emulation(op, recipe: str, dtype: torch.dtype, lead) -> None:
    """Every gradient, 3 parts with biases; M = 19 takes wgrad's zero-padding path."""
    x, ws, bs = _problem((32, 16, 48), lead, dtype, True, seed=3)
    dy, got = _run_backward(op, x, ws, bs, recipe)
    _check_grads(x, ws, bs, dy, recipe, got)


@pytest.mark.parametrize("recipe", FP8_RECIPES)
def test_float32_master_weights_get_float32_grads(op, recipe: str) -> None:
    x, ws, bs = _problem((32, 16), (24,), torch.bfloat16, True, seed=4, weight_dtype=torch.float32)
    dy, got = _run_backward(op, x, ws, bs, recipe)
    assert all(got[f"w{i}"].dtype == torch.float32 for i in range(2))
    _check_grads(x, ws, bs, dy, recipe, got)


@pytest.mark.parametrize("recipe", FP8_RECIPES)
@pytest.mark.parametrize("frozen", ["w1", "x", "weights", "x+w0"])
def test_frozen_parts(op, recipe: str, frozen: str) -> None:
    """Frozen tensors get None; the others are still right (bias-only gradients when all weights and x are
    frozen)."""
    x, ws, bs = _problem((32, 16, 48), (40,), torch.bfloat16, True, seed=5)
    names = {"w1": ["w1"], "x": ["x"], "weights": ["x", "w0", "w1", "w2"], "x+w0": ["x", "w0"]}[frozen]
    for name in names:
        t = x if name == "x" else ws[int(name[1])]
        t.requires_grad_(False)
    dy, got = _run_backward(op, x, ws, bs, recipe)
    _check_grads(x, ws, bs, dy, recipe, got)


@pytest.mark.parametrize("recipe", FP8_RECIPES)
@pytest.mark.parametrize("frozen", [(1,), (0, 2), (0, 1)], ids=["middle", "ends", "first-two"])
def test_frozen_parts_get_no_wgrad_and_the_rest_is_unchanged(op, recipe: str, frozen: tuple[int, ...]) -> None:
    """wgrad runs one GEMM per run of trainable parts (a frozen LoRA base gets none): each trainable
    part's gradient equals, bit for bit, the one it gets when every part trains."""
    def grads(freeze: tuple[int, ...]) -> dict:
        x, ws, bs = _problem((32, 16, 48), (19,), torch.bfloat16, True, seed=9)
        for i in freeze:
            ws[i].requires_grad_(False)
        return _run_backward(op, x, ws, bs, recipe)[1]

    full, part = grads(()), grads(frozen)
    for name, g in part.items():
        if name.startswith("w") and int(name[1:]) in frozen:
            assert g is None, f"frozen {name} got a gradient"
        else:
            assert torch.equal(g, full[name]), f"{name} differs once {frozen} are frozen"


@pytest.mark.parametrize("recipe", FP8_RECIPES)
def test_wgrad_gemms_cover_only_trainable_runs(op, recipe: str) -> None:
    """The backward's wgrad GEMMs (seen through a dispatch mode) span exactly the runs of trainable
    parts: rows 32 | 16 | 48 with the middle one frozen give two GEMMs, of 32 and 48 rows."""
    from torch.utils._python_dispatch import TorchDispatchMode

    x, ws, bs = _problem((32, 16, 48), (19,), torch.bfloat16, False, seed=10)
    ws = [w.requires_grad_(i != 1) for i, w in enumerate(ws)]
    y = op.fp8_linear(x, ws, None, recipe=recipe)
    seen: list[int] = []

    class Wgrads(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            name = func.overloadpacket.__name__
            if name == "linear_wgrad":  # high precision: dy's columns of the run
                seen.append(args[0].shape[-1])
            elif name == "scaled_linear" and args[0].shape[0] != x.shape[0]:  # FP8: dyᵀ's rows (dgrad has M)
                seen.append(args[0].shape[0])
            return func(*args, **(kwargs or {}))

    with Wgrads():
        y.backward(ref.fresh(*y.shape, dtype=y.dtype))
    assert sorted(seen) == [32, 48], seen
    assert ws[1].grad is None and ws[0].grad is not None and ws[2].grad is not None


def test_bias_only_and_input_only(op) -> None:
    x, ws, bs = _problem((32, 16), (21,), torch.float32, True, seed=6)
    for w in ws:
        w.requires_grad_(False)
    bs[1].requires_grad_(False)
    x.requires_grad_(False)
    dy, got = _run_backward(op, x, ws, bs, "tensorwise")
    assert got["b1"] is None
    _check_grads(x, ws, bs, dy, "tensorwise", got)
    x2, ws2, _ = _problem((32, 16), (21,), torch.float32, False, seed=6)
    for w in ws2:
        w.requires_grad_(False)
    dy, got = _run_backward(op, x2, ws2, None, "rowwise")
    _check_grads(x2, ws2, None, dy, "rowwise", got)


def test_opcheck_fp8_linear(op) -> None:
    """Autograd registration, fake kernel and AOT dispatch (with gradients). Not the schema test: its
    SchemaCheckMode also checks the FP8 ops inside, with arithmetic that has no CPU FP8 kernel."""
    for recipe in FP8_RECIPES:
        x, ws, bs = _problem((32, 16), (3, 16), torch.float32, True, seed=8)
        torch.library.opcheck(torch.ops.splitlinear.fp8_linear.default, (x, ws, bs, recipe),
                              test_utils=("test_autograd_registration", "test_faketensor",
                                          "test_aot_dispatch_dynamic"))


def _fn(x: torch.Tensor, w0: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, b0: torch.Tensor,
        b1: torch.Tensor, b2: torch.Tensor, recipe: str) -> torch.Tensor:
    return torch.ops.splitlinear.fp8_linear(torch.relu(x) * 2, [w0, w1, w2], [b0, b1, b2], recipe).sin()


def _fwd_bwd(fn, x, ws, bs, recipe: str):
    xs = x.detach().clone().requires_grad_()
    wc = [w.detach().clone().requires_grad_() for w in ws]
    bc = [b.detach().clone().requires_grad_() for b in bs]
    y = fn(xs, *wc, *bc, recipe)
    torch.manual_seed(11)
    y.backward(ref.fresh(*y.shape, dtype=y.dtype))
    return y.detach(), [t.grad for t in (xs, *wc, *bc)]


@pytest.mark.parametrize("recipe", FP8_RECIPES)
def test_compile_aot_eager_dynamic_batch(op, recipe: str) -> None:
    """fullgraph, dynamic batch size: the same output and gradients as eager, bit for bit, and no
    recompile between batch sizes of one class mod 16."""
    from torch._dynamo.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(_fn, backend=counter, fullgraph=True, dynamic=True)
    for m in (80, 96, 19):  # not the parts' row counts: duck sizing would tie M to an N_i (static)
        x, ws, bs = _problem((32, 16, 48), (m,), torch.bfloat16, True, seed=m)
        y_e, g_e = _fwd_bwd(_fn, x, ws, bs, recipe)
        y_c, g_c = _fwd_bwd(compiled, x, ws, bs, recipe)
        assert torch.equal(y_c, y_e)
        for a, b in zip(g_c, g_e):
            assert torch.equal(a, b)
        if m == 96:
            assert counter.frame_count == 1, "recompiled for another batch size"


def test_compile_inductor(op) -> None:
    x, ws, bs = _problem((32, 16, 48), (2, 16), torch.float32, True, seed=12)
    compiled = torch.compile(_fn, backend="inductor", fullgraph=True)
    y_e, g_e = _fwd_bwd(_fn, x, ws, bs, "rowwise")
    y_c, g_c = _fwd_bwd(compiled, x, ws, bs, "rowwise")
    torch.testing.assert_close(y_c, y_e, rtol=1e-6, atol=1e-6)
    for a, b in zip(g_c, g_e):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_autocast_cpu_bf16(op) -> None:
    """Under CPU autocast: bfloat16 output, float32 weights quantized from float32 and given float32
    gradients, the bias cast to bfloat16."""
    x, ws, bs = _problem((32, 16), (2, 8), torch.float32, True, seed=13)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = op.fp8_linear(x, ws, bs, recipe="rowwise")
    assert y.dtype == torch.bfloat16
    xb = x.detach().to(torch.bfloat16)
    bb = [b.detach().to(torch.bfloat16) for b in bs]
    want = ref.fp8_linear(xb, [w.detach() for w in ws], bb, "rowwise")
    assert_within_ulp(y, want.y, torch.bfloat16, what="autocast forward")
    y.float().sum().backward()
    assert x.grad.dtype == torch.float32
    assert all(w.grad.dtype == torch.float32 and b.grad.dtype == torch.float32 for w, b in zip(ws, bs))
    dy = torch.ones(2, 8, 48, dtype=torch.bfloat16)
    want = ref.fp8_linear(xb, [w.detach() for w in ws], bb, "rowwise", dy=dy)
    assert_within_ulp(ws[0].grad, ref.Gemm(want.dw.exact[:32], want.dw.bound[:32]), torch.float32,
                      what="autocast dw")


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_activation_checkpointing_matches(op, use_reentrant: bool) -> None:
    """Recomputing fp8_linear under torch.utils.checkpoint gives the same gradients, bit for bit (the
    backward refuses only create_graph, which neither checkpoint mode uses)."""
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(50)
    x = ref.fresh(8, 32).requires_grad_()
    w = [ref.fresh(16, 32).requires_grad_(), ref.fresh(32, 32).requires_grad_()]

    def grads(wrap: bool) -> list[torch.Tensor]:
        for t in [x, *w]:
            t.grad = None
        fn = lambda t: op.fp8_linear(t, w, recipe="rowwise")  # noqa: E731
        y = checkpoint(fn, x, use_reentrant=use_reentrant) if wrap else fn(x)
        y.square().sum().backward()
        return [x.grad.clone(), *(p.grad.clone() for p in w)]

    for got, want in zip(grads(True), grads(False)):
        assert torch.equal(got, want)


def test_no_grad_and_inference_mode_build_no_graph(op) -> None:
    torch.manual_seed(51)
    x = ref.fresh(8, 32).requires_grad_()
    w = [ref.fresh(16, 32).requires_grad_()]
    want = op.fp8_linear(x, w).detach()
    with torch.no_grad():
        y = op.fp8_linear(x, w)
    assert not y.requires_grad and torch.equal(y, want)
    with torch.inference_mode():
        z = op.fp8_linear(x.detach(), [w[0].detach()])
    assert torch.equal(z, want)


@pytest.mark.parametrize("rows", [(48,), (32, 16, 48)], ids=["1part", "3parts"])
@pytest.mark.parametrize("recipe", FP8_RECIPES)
def test_backward_quantizes_dy_once_for_one_part(op, rows, recipe: str) -> None:
    """dgrad and wgrad share one quantization call of dy. Tensorwise with one part: its scale goes
    to the GEMM and one cast writes both layouts; with several (the scales folded into dy's columns
    for dgrad) one ``fp8_quantize_dual`` writes the folded and the plain copy. Rowwise: one
    ``fp8_quantize_dual(axis="rows")`` writes the folded copy per row and the plain transposed one
    per column; ``rowwise_with_gw_hp`` quantizes only for dgrad. dy's type is the recipe's (e5m2 for
    tensorwise, e4m3 for the rowwise recipes, as torchao's). The gradients stay within 1 ulp of
    the emulation."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class CountQuantize(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.dtypes: list[torch.dtype] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            quantizers = (torch.ops.splitlinear.fp8_quantize.default, torch.ops.splitlinear.fp8_quantize_dual.default)
            if func in quantizers:
                self.dtypes.append(args[1])
            return func(*args, **(kwargs or {}))

    x, ws, bs = _problem(rows, (2, 3), torch.float32, True, seed=11)
    y = op.fp8_linear(x, ws, bs, recipe=recipe)
    dy = ref.fresh(*y.shape)
    counter = CountQuantize()
    with counter:
        y.backward(dy)
    assert counter.dtypes == [torch.float8_e5m2 if recipe == "tensorwise" else torch.float8_e4m3fn]
    _check_grads(x, ws, bs, dy, recipe, {"x": x.grad, **{f"w{i}": w.grad for i, w in enumerate(ws)},
                                         **{f"b{i}": b.grad for i, b in enumerate(bs)}})


@pytest.mark.parametrize("rows", [(48,), (32, 16, 48)], ids=["1part", "3parts"])
@pytest.mark.parametrize("recipe", FP8_RECIPES)
def test_backward_recasts_the_weights(op, rows, recipe: str) -> None:
    """The forward casts the parts without their transpose and the backward casts them again with it
    (no FP8 weight is saved in between), with the cache on too: then the backward's cast goes
    through the cache. The gradients are bit for bit the same either way."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class RecordCasts(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.transposed: list[bool] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            if func is torch.ops.splitlinear.fp8_cast_parts.default:
                kw = kwargs or {}
                self.transposed.append(bool(args[2] if len(args) > 2 else kw.get("write_transposed", False)))
            return func(*args, **(kwargs or {}))

    grads = {}
    for cache in (False, True):
        op.fp8_weight_cache_clear()
        x, ws, bs = _problem(rows, (2, 3), torch.bfloat16, True, seed=12)
        dy = ref.fresh(2, 3, sum(rows), dtype=torch.bfloat16, generator=torch.Generator().manual_seed(13))
        forward, backward = RecordCasts(), RecordCasts()
        with forward:
            y = op.fp8_linear(x, ws, bs, recipe=recipe, cache_weights=cache)
        with backward:
            y.backward(dy)
        assert forward.transposed == [False]
        assert backward.transposed == [True]
        grads[cache] = [x.grad, *(w.grad for w in ws), *(b.grad for b in bs)]
    op.fp8_weight_cache_clear()
    for a, b in zip(grads[False], grads[True]):
        assert torch.equal(a, b)


def test_weight_changed_before_backward_raises_without_cache(op) -> None:
    """The recast reads the parts again: one changed in place after the forward is refused by
    autograd's saved-tensor check, never used with the forward's other bytes."""
    x, ws, _ = _problem((32, 16), (4,), torch.float32, False, seed=14)
    y = op.fp8_linear(x, ws)
    with torch.no_grad():
        ws[1].mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_param_data_swap_before_backward_keeps_the_forward_weights(op) -> None:
    """Regression (new-user report): without the cache the backward recast the Parameters
    themselves, so ``p.data = t`` between forward and backward (no version bump) silently gave
    gradients of the new weights. It saves views now, as ``F.linear`` saves ``w.t()``: the
    forward's storage and values, bit for bit the cached path's gradients."""
    grads = {}
    for cache in (True, False):
        op.fp8_weight_cache_clear()
        x, ws, _ = _problem((32, 16), (4,), torch.float32, False, seed=15)
        ws = [torch.nn.Parameter(w.detach()) for w in ws]
        y = op.fp8_linear(x, ws, cache_weights=cache)
        ws[0].data = ref.fresh(32, K, scale=3.0)
        y.backward(ref.fresh(4, 48, generator=torch.Generator().manual_seed(16)))
        grads[cache] = x.grad
    op.fp8_weight_cache_clear()
    assert torch.equal(grads[False], grads[True])

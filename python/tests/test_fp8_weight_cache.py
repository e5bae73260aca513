"""The FP8 weight cache: weights quantized once while unchanged, never stale after a change.

Each kind of change (an optimizer's in-place step, ``p.copy_``, ``load_state_dict``,
``param.data = t``, a storage swap with ``set_``) must make the next call cast again and give
what an uncached call gives on the new values; repeated calls on unchanged weights
(gradient-accumulation micro-batches, no_grad forwards) must hit. Eager op, then compiled.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
from _fp8_models import FP8_REGIONS, Block
from _util import compile_sl

K = 64


@pytest.fixture(autouse=True)
def _empty_cache(op) -> None:
    op.fp8_weight_cache_clear()


def _parts(seed: int) -> list[torch.nn.Parameter]:
    torch.manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(n, K) * s) for n, s in ((32, 0.1), (16, 0.01))]


def _check_fresh(op, ws: list[torch.Tensor], x: torch.Tensor) -> None:
    """A cached call equals an uncached one on the current values."""
    got = op.fp8_linear(x, ws, cache_weights=True)
    want = op.fp8_linear(x, [w.detach().clone() for w in ws])
    assert torch.equal(got, want)


def test_unchanged_weights_hit(op) -> None:
    ws = _parts(1)
    x = torch.randn(8, K)
    for _ in range(3):
        _check_fresh(op, ws, x)
    info = op.fp8_weight_cache_info()
    assert info["misses"] == 1 and info["hits"] == 2 and info["entries"] == 1, info
    assert info["bytes"] == 48 * K  # the FP8 copy (no_grad-free call: no transposed copy needed)


def test_entries_are_kept_per_scale_rule(op) -> None:
    """tensorwise (exact scales) and rowwise (power-of-2 scales) on the same weights: each recipe gets
    its own entry and its own scales, never the other's (regression: a shared entry would hand the
    rowwise GEMM exact scales)."""
    ws = _parts(2)
    x = torch.randn(8, K)
    for recipe in ("tensorwise", "rowwise", "tensorwise", "rowwise"):
        got = op.fp8_linear(x, ws, recipe=recipe, cache_weights=True)
        want = op.fp8_linear(x, [w.detach().clone() for w in ws], recipe=recipe)
        assert torch.equal(got, want), recipe
    info = op.fp8_weight_cache_info()
    assert info["misses"] == 2 and info["hits"] == 2 and info["entries"] == 2, info
    exact = op.fp8_cast_parts(ws, torch.float8_e4m3fn, cache=True).scale_inv
    pow2 = op.fp8_cast_parts(ws, torch.float8_e4m3fn, cache=True, pow2_scales=True).scale_inv
    assert torch.equal(pow2, torch.exp2(torch.ceil(torch.log2(exact)))), (exact, pow2)


def _inplace_step(ws: list[torch.nn.Parameter]) -> None:
    ws[0].grad = torch.randn_like(ws[0])
    ws[1].grad = torch.randn_like(ws[1])
    torch.optim.SGD(ws, lr=0.5).step()


def _fused_adamw(ws: list[torch.nn.Parameter]) -> None:
    for w in ws:
        w.grad = torch.randn_like(w)
    torch.optim.AdamW(ws, lr=0.1, fused=True).step()


def _copy(ws: list[torch.nn.Parameter]) -> None:
    with torch.no_grad():
        ws[1].copy_(torch.randn_like(ws[1]))


def _assign_data(ws: list[torch.nn.Parameter]) -> None:
    ws[0].data = torch.randn_like(ws[0]) * 3


def _set_storage(ws: list[torch.nn.Parameter]) -> None:
    with torch.no_grad():
        ws[1].set_(torch.randn(16, K))


def _foreach(ws: list[torch.nn.Parameter]) -> None:
    with torch.no_grad():
        torch._foreach_mul_(ws, 2.0)


CHANGES: dict[str, Callable[[list[torch.nn.Parameter]], None]] = {
    "sgd_step": _inplace_step, "fused_adamw": _fused_adamw, "copy_": _copy, "param.data=": _assign_data,
    "set_": _set_storage, "foreach_mul_": _foreach,
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_change_invalidates(op, change: str) -> None:
    ws = _parts(2)
    x = torch.randn(8, K)
    _check_fresh(op, ws, x)
    CHANGES[change](ws)
    _check_fresh(op, ws, x)
    info = op.fp8_weight_cache_info()
    assert info["misses"] == 2 and info["hits"] == 0, info
    assert info["entries"] == 1, info  # the old value's entry was replaced (or died with its storage)


def test_load_state_dict_invalidates(op) -> None:
    torch.manual_seed(3)
    lin = torch.nn.Linear(K, 32, bias=False)
    other = torch.nn.Linear(K, 32, bias=False)
    x = torch.randn(4, K)
    _check_fresh(op, [lin.weight], x)
    lin.load_state_dict(other.state_dict())
    _check_fresh(op, [lin.weight], x)
    lin.load_state_dict({"weight": torch.randn(32, K)}, assign=True)
    _check_fresh(op, [lin.weight], x)
    assert op.fp8_weight_cache_info()["hits"] == 0


def test_grad_accumulation_and_no_grad_hit(op) -> None:
    ws = _parts(4)
    micro = [torch.randn(8, K) for _ in range(3)]
    for x in micro:
        op.fp8_linear(x, ws, cache_weights=True).square().sum().backward()
    with torch.no_grad():
        op.fp8_linear(micro[0], ws, cache_weights=True)
    info = op.fp8_weight_cache_info()
    assert info["misses"] == 1 and info["hits"] == 3, info
    # The accumulated gradients equal uncached ones.
    ref = [w.detach().clone().requires_grad_() for w in ws]
    for x in micro:
        op.fp8_linear(x, ref).square().sum().backward()
    for w, r in zip(ws, ref):
        assert torch.equal(w.grad, r.grad)


def test_inplace_change_between_forward_and_backward_raises(op) -> None:
    """As for F.linear, and as without the cache (regression, found by a new-user test: the cached
    op saved the forward's W8ᵀ, and its backward silently ran on the old weights)."""
    ws = _parts(5)
    x = torch.randn(8, K, requires_grad=True)
    y = op.fp8_linear(x, ws, cache_weights=True)
    with torch.no_grad():
        ws[1].mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.square().sum().backward()


def test_entries_of_dead_weights_are_dropped(op) -> None:
    """Once a group's weights are freed its entry can never hit: the next look at the cache drops
    it and frees its FP8 copy (found by a new-user test: entries of deleted models stayed counted,
    and allocated, until the next store)."""
    ws = _parts(9)
    op.fp8_linear(torch.randn(4, K), ws, cache_weights=True)
    assert op.fp8_weight_cache_info()["entries"] == 1
    del ws
    info = op.fp8_weight_cache_info()
    assert info["entries"] == 0 and info["bytes"] == 0, info


def test_inference_tensors_bypass(op) -> None:
    with torch.inference_mode():
        ws = [torch.randn(32, K)]
        x = torch.randn(4, K)
        a = op.fp8_linear(x, ws, cache_weights=True)
    assert torch.equal(a, op.fp8_linear(x, ws))
    info = op.fp8_weight_cache_info()
    assert info["bypasses"] == 1 and info["entries"] == 0, info


def test_views_of_one_tensor_are_keyed_by_place(op) -> None:
    """Two row blocks of one storage, same shapes: different entries."""
    base = torch.randn(64, K)
    x = torch.randn(4, K)
    a = op.fp8_linear(x, [base[:32]], cache_weights=True)
    b = op.fp8_linear(x, [base[32:]], cache_weights=True)
    assert torch.equal(a, op.fp8_linear(x, [base[:32].clone()]))
    assert torch.equal(b, op.fp8_linear(x, [base[32:].clone()]))


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
def test_compiled_training_quantizes_once_per_step(op, fallback: str) -> None:
    torch.manual_seed(5)
    model = Block()
    ref = copy.deepcopy(model)
    compiled = compile_sl(model, fallback=fallback, fp8="tensorwise", fp8_weight_cache=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=1e-2)
    probe = torch.randn(2, 8, 64)  # the no_grad forward: the training shape (no recompile)
    for step in range(2):
        before = op.fp8_weight_cache_info()
        for _ in range(2):  # micro-batches
            x = torch.randn(2, 8, 64)
            compiled(x)[0].square().mean().backward()
            ref.reference(x, "tensorwise")[0].square().mean().backward()
        info = op.fp8_weight_cache_info()
        misses, hits = info["misses"] - before["misses"], info["hits"] - before["hits"]
        # Per group and step: the first backward casts W8 and W8ᵀ; the first forward casts W8 in
        # step 0 and finds the no_grad probe's W8 (the step's weights) in step 1; the second
        # micro-batch's forward and backward find them.
        first_forward_misses = FP8_REGIONS if step == 0 else 0
        assert misses == FP8_REGIONS + first_forward_misses, (step, before, info)
        assert hits == 4 * FP8_REGIONS - misses, (step, before, info)
        for (name, p), r in zip(model.named_parameters(), ref.parameters()):
            if r.grad is None:  # odd: its output is not in the loss
                assert p.grad is None or not p.grad.any(), name
                continue
            # Inductor's RMSNorm/SiLU round differently from eager's: FP8-level tolerance there.
            tol = 1e-6 if fallback == "eager" else 5e-2
            err = ((p.grad - r.grad).norm() / r.grad.norm()).item()
            assert err <= tol, (step, name, err)
        opt.step()
        opt_ref.step()
        opt.zero_grad()
        opt_ref.zero_grad()
        with torch.no_grad():  # the no_grad forward after the step sees the new weights
            got = compiled(probe)[0]
            want = ref.reference(probe, "tensorwise")[0]
            assert ((got - want).norm() / want.norm()).item() <= (1e-5 if fallback == "eager" else 2e-2)


def test_optimizer_step_clears(op) -> None:
    """Fused optimizers bump no version counter: every torch.optim step drops the cache."""
    ws = _parts(6)
    x = torch.randn(8, K)
    _check_fresh(op, ws, x)
    for w in ws:
        w.grad = torch.randn_like(w)
    version = ws[0]._version
    torch.optim.SGD(ws, lr=0.5, fused=True).step()
    assert ws[0]._version == version  # what the hook is for
    assert op.fp8_weight_cache_info()["entries"] == 0
    _check_fresh(op, ws, x)


class _TwoParts(torch.nn.Module):
    """q and k of one input: one FP8 region of two parts."""

    def __init__(self) -> None:
        super().__init__()
        self.q = torch.nn.Linear(K, 64, bias=False)
        self.k = torch.nn.Linear(K, 32, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.q(x), self.k(x)], -1)


@pytest.mark.parametrize(("kind", "fallback"), [("fused", "eager"), ("fused", "inductor"), ("foreach", "eager")])
def test_compiled_optimizer_step_clears(op, kind: str, fallback: str) -> None:
    """A compiled ``opt.step`` (regression: with ``fused=True`` the clear was traced into the step's
    graph and dropped, so the compiled forward kept the first step's FP8 weights, silently). Each
    forward after a step equals an uncached ``fp8_linear`` on the current weights."""
    torch.manual_seed(0)
    model = _TwoParts()
    f = compile_sl(model, fp8="tensorwise", fallback=fallback, fp8_weight_cache=True)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1, **{kind: True})
    step = torch.compile(opt.step)
    x = torch.randn(16, K)
    for _ in range(3):
        opt.zero_grad(set_to_none=True)
        f(x).square().sum().backward()
        step()
        with torch.no_grad():
            got = f(x)
        want = op.fp8_linear(x, [model.q.weight.detach().clone(), model.k.weight.detach().clone()],
                             recipe="tensorwise")
        assert torch.equal(got, want)


def test_clear_and_info_run_inside_compiled_code(op) -> None:
    """The cache's clear and info, called from a compiled function, act at every call (traced, the
    clear was a node without inputs or outputs that did not run, and info a constant)."""
    ws = _parts(7)
    x = torch.randn(8, K)

    @torch.compile  # Inductor: the backend that dropped the node
    def clear_and_count(t: torch.Tensor) -> tuple[torch.Tensor, int]:
        op.fp8_weight_cache_clear(False)
        return t + 1, op.fp8_weight_cache_info()["entries"]

    for _ in range(3):
        op.fp8_linear(x, ws, cache_weights=True)
        assert op.fp8_weight_cache_info()["entries"] == 1
        _, entries = clear_and_count(x)
        assert entries == 0 and op.fp8_weight_cache_info()["entries"] == 0


def test_option_off_does_not_cache(op) -> None:
    model = Block()
    compile_sl(model, fp8="tensorwise", fp8_weight_cache=False)(torch.randn(2, 64))
    info = op.fp8_weight_cache_info()
    assert info["misses"] == 0 and info["entries"] == 0, info


def test_default_keeps_no_fp8_weights(op) -> None:
    """The option is off by default (as torchao; regression: on by default it kept W8 and W8ᵀ of
    every group through the backward of a one-micro-batch step, where they are never reused)."""
    torch.manual_seed(6)
    model = Block()
    ref = copy.deepcopy(model)
    x = torch.randn(2, 8, 64)
    y = compile_sl(model, fp8="tensorwise")(x)
    info = op.fp8_weight_cache_info()
    assert info["misses"] == 0 and info["entries"] == 0 and info["bytes"] == 0, info
    y[0].square().mean().backward()
    ref.reference(x, "tensorwise")[0].square().mean().backward()
    assert op.fp8_weight_cache_info()["entries"] == 0
    for (name, p), r in zip(model.named_parameters(), ref.parameters()):
        if r.grad is not None:
            err = ((p.grad - r.grad).norm() / r.grad.norm()).item()
            assert err <= 1e-6, (name, err)


class _Siblings(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = torch.nn.Linear(K, 32, bias=False)
        self.k = torch.nn.Linear(K, 16, bias=False)


def _packed_siblings(seed: int) -> _Siblings:
    import splitlinear

    torch.manual_seed(seed)
    m = _Siblings()
    report = splitlinear.pack_parameters(m, groups=[["q", "k"]])
    assert report.packed, report
    return m


# Writes through the state_dict() entries of packed parameters: whole-storage aliases with a
# version counter of their own (packing._whole), which the cache watches.
ALIAS_WRITES: dict[str, Callable[[dict[str, torch.Tensor]], None]] = {
    "mul_": lambda sd: sd["q.weight"].mul_(-3.0),
    "copy_": lambda sd: sd["k.weight"].copy_(torch.randn(16, K)),
    "view": lambda sd: sd["q.weight"][3:5].fill_(0.25),
    "foreach": lambda sd: torch._foreach_mul_(list(sd.values()), 0.5),
}


@pytest.mark.parametrize("write", list(ALIAS_WRITES))
def test_write_through_packed_state_dict_entry_invalidates(op, write: str) -> None:
    m = _packed_siblings(11)
    ws = [m.q.weight, m.k.weight]
    x = torch.randn(8, K)
    with torch.no_grad():
        sd = m.state_dict()
        versions = [w._version for w in ws]
        _check_fresh(op, ws, x)
        _check_fresh(op, ws, x)  # a hit while the aliases live
        ALIAS_WRITES[write](sd)
        # The aliases have counters of their own: the parameters' did not move.
        assert [w._version for w in ws] == versions
        _check_fresh(op, ws, x)
    info = op.fp8_weight_cache_info()
    assert info["hits"] == 1 and info["misses"] == 2, info


def test_alias_made_after_the_entry_invalidates_it(op) -> None:
    """An entry stored before an alias existed is not trusted once one overlaps its parts."""
    m = _packed_siblings(12)
    ws = [m.q.weight, m.k.weight]
    x = torch.randn(8, K)
    with torch.no_grad():
        _check_fresh(op, ws, x)
        sd = m.state_dict()
        sd["q.weight"].add_(1.0)
        _check_fresh(op, ws, x)


def test_dead_aliases_stop_costing_misses(op) -> None:
    """Once no tensor shares a watched alias' counter, entries hit again."""
    import gc

    m = _packed_siblings(13)
    ws = [m.q.weight, m.k.weight]
    x = torch.randn(8, K)
    with torch.no_grad():
        sd = m.state_dict()
        _check_fresh(op, ws, x)
        del sd
        gc.collect()
        _check_fresh(op, ws, x)  # the alias set changed: one miss
        _check_fresh(op, ws, x)
    info = op.fp8_weight_cache_info()
    assert info["misses"] == 2 and info["hits"] == 1, info


def test_compiled_forward_sees_a_write_through_a_packed_state_dict_entry(op) -> None:
    """The reported case: an EMA-style helper scaling state_dict() values between compiled forwards."""

    class Cat(torch.nn.Module):
        def __init__(self, inner: _Siblings) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cat([self.inner.q(x), self.inner.k(x)], -1)

    m = Cat(_packed_siblings(14))
    cm = compile_sl(m, fp8="tensorwise", fp8_weight_cache=True)
    x = torch.randn(8, K)
    with torch.no_grad():
        old = cm(x).clone()
        for v in m.state_dict().values():
            v.mul_(-3.0)
        new = cm(x)
        want = op.fp8_linear(x, [m.inner.q.weight.detach().clone(), m.inner.k.weight.detach().clone()])
    assert torch.equal(new, want)
    assert not torch.equal(new, old)

"""Bad-input matrix of models compiled with the splitlinear backend.

Each case runs a model eagerly and compiled (``backend="splitlinear"``) on the
same inputs, call after call, possibly changing the model between calls, and
requires eager PyTorch's outcome: the same result (compared with a float64
reference) or an error of the same kind whose message names the problem (the
``error`` regex must match both). After an error, a valid call must work again
(no state left behind, no CUDA error). ``op`` says whether the region must run
through the op library (True), must be left to eager (False), or either (None,
for errors raised while tracing). Runs on every available device.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from _util import compile_sl, graphs, op_runs


class PartsLinear(nn.Module):
    """``F.linear(x, cat(weights), cat(biases))`` over given tensors as Parameters.

    ``transpose[i]`` registers ``weights[i]`` as stored ([K, N_i]) and uses its
    transpose in the forward (a column-major part).
    """

    def __init__(self, weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor] | None = None,
                 transpose: Sequence[bool] = ()) -> None:
        super().__init__()
        self.n = len(weights)
        self.transpose = list(transpose) + [False] * (len(weights) - len(transpose))
        for i, w in enumerate(weights):
            self.register_parameter(f"w{i}", nn.Parameter(w, requires_grad=False))
        self.has_bias = biases is not None
        for i, b in enumerate(biases or []):
            self.register_parameter(f"b{i}", nn.Parameter(b, requires_grad=False))

    def weights(self) -> list[torch.Tensor]:
        ws = [getattr(self, f"w{i}") for i in range(self.n)]
        return [w.t() if t else w for w, t in zip(ws, self.transpose)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = torch.cat([getattr(self, f"b{i}") for i in range(self.n)]) if self.has_bias else None
        return F.linear(x, torch.cat(self.weights()), bias)


@dataclass
class Call:
    """One call of the model: ``change(model)`` runs first, then ``model(x)``."""

    x: torch.Tensor
    change: Callable[[PartsLinear], None] | None = None
    error: str | None = None  # regex eager's error must match; None: a value
    compiled_error: str | None = None  # regex for the compiled error, if it differs
    compiled_type: type[BaseException] | None = None  # exact class required, if any
    op: bool | None = True


@dataclass
class Scenario:
    model: PartsLinear
    calls: list[Call]
    max_graphs: int = 1  # compiles + recompiles the calls may cause
    needs_cuda: bool = False
    cleanup: Callable[[], None] = field(default=lambda: None)


def _rand(*shape: int, device: str, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64).to(device=device, dtype=dtype)


def _split(device: str, rows: Sequence[int] = (8, 4, 4), k: int = 16, offset: int = 0,
           order: Sequence[int] | None = None) -> list[torch.Tensor]:
    """Row blocks of one storage (starting ``offset`` elements in), in ``order``."""
    buf = _rand(sum(rows) * k + offset, device=device)[offset:].view(sum(rows), k)
    parts = list(buf.split(list(rows)))
    return [parts[i] for i in (order or range(len(rows)))]


def _separate(device: str, rows: Sequence[int] = (8, 4, 4), k: int = 16,
              dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    return [_rand(n, k, device=device, dtype=dtype) for n in rows]


def _x(device: str, m: int = 5, k: int = 16, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return _rand(m, k, device=device, dtype=dtype)


def _set_part(i: int, value: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[PartsLinear], None]:
    def change(model: PartsLinear) -> None:
        p = getattr(model, f"w{i}")
        p.data = value(p.data)
    return change


def _replace_part(i: int, value: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[PartsLinear], None]:
    def change(model: PartsLinear) -> None:
        old = getattr(model, f"w{i}")
        setattr(model, f"w{i}", nn.Parameter(value(old.data), requires_grad=False))
    return change


def _repack(model: PartsLinear) -> None:
    """Moves the weights into one storage, back to back (the old ones are freed)."""
    ws = [getattr(model, f"w{i}") for i in range(model.n)]
    buf = torch.cat([w.detach() for w in ws])
    for w, v in zip(ws, buf.split([w.shape[0] for w in ws])):
        w.data = v


def _unpack(model: PartsLinear) -> None:
    for i in range(model.n):
        p = getattr(model, f"w{i}")
        p.data = p.data.clone()


# -- value cases: the same result as eager ------------------------------------

def _values(device: str, parts: list[torch.Tensor], x: torch.Tensor | None = None,
            biases: list[torch.Tensor] | None = None, transpose: Sequence[bool] = ()) -> Scenario:
    k = x.shape[-1] if x is not None else 16
    x = _x(device, k=k) if x is None else x
    return Scenario(PartsLinear(parts, biases, transpose), [Call(x), Call(torch.randn_like(x))])


def _huge_input(device: str) -> Scenario:
    # 2^46 rows (K = 1) as a stride-0 view: any GEMM operand or output in
    # that many rows needs >= 256 TiB, beyond a 47-bit user address space, so
    # even a host that overcommits memory refuses it.
    huge = _rand(1, 1, device=device).expand(2 ** 46, 1)
    return Scenario(PartsLinear(_separate(device, k=1)),
                    [Call(huge, error=r"memory", op=None), Call(_x(device, k=1))], max_graphs=2)


def _cuda_out_of_memory(device: str) -> Scenario:
    # Limit the caching allocator so that two 64 MiB parts fit but their cat
    # does not: eager's torch.cat and the op's runtime buffer both fail.
    torch.cuda.empty_cache()
    parts = [p / 64 for p in _separate(device, rows=(4096, 4096), k=4096)]  # O(1) outputs at K = 4096
    model = PartsLinear(parts)

    from splitlinear import ops

    previous = ops.set_per_part_max_rows(0)  # the op copies the parts at any M

    def limit(_: PartsLinear) -> None:
        torch.cuda.empty_cache()
        total = torch.cuda.get_device_properties(device).total_memory
        torch.cuda.set_per_process_memory_fraction((torch.cuda.memory_reserved() + (48 << 20)) / total)

    def unlimit(_: PartsLinear | None = None) -> None:
        torch.cuda.set_per_process_memory_fraction(1.0)

    def cleanup() -> None:
        unlimit()
        ops.set_per_part_max_rows(previous)

    x = _x(device, m=128, k=4096)
    # The failing call raises before the op counts a run: op=None.
    oom = Call(x, change=limit, error=r"CUDA out of memory. Tried to allocate 128.00 MiB",
               compiled_error=r"splitlinear\.linear: .*could not allocate 134217728 bytes on CUDA device 0",
               compiled_type=torch.OutOfMemoryError, op=None)
    return Scenario(model, [Call(x), oom, Call(x, change=unlimit)], needs_cuda=True, cleanup=cleanup)


SCENARIOS: dict[str, Callable[[str], Scenario]] = {
    # Storage layouts of the parts.
    "adjacent_parts": lambda d: _values(d, _split(d)),
    "separate_parts": lambda d: _values(d, _separate(d)),
    "reversed_adjacency": lambda d: _values(d, _split(d, order=(2, 1, 0))),
    "overlapping_parts": lambda d: _values(d, (lambda b: [b[0:8], b[4:12]])(_rand(12, 16, device=d))),
    "misaligned_views": lambda d: _values(d, _split(d, offset=1)),
    "non_contiguous_part": lambda d: _values(d, [_rand(8, 32, device=d)[:, ::2], _rand(4, 16, device=d)]),
    "transposed_part": lambda d: _values(d, [_rand(8, 16, device=d), _rand(16, 4, device=d)], transpose=(False, True)),
    "strided_bias": lambda d: _values(d, _separate(d, (8, 4)), biases=[_rand(16, device=d)[::2], _rand(4, device=d)]),
    "empty_part": lambda d: _values(d, _separate(d, (8, 0, 4))),
    # Input sizes and values.
    # The op returns the empty output before any counter moves: op=None.
    "zero_rows_input": lambda d: Scenario(PartsLinear(_split(d)), [Call(_x(d, m=0), op=None)]),
    "batched_input": lambda d: _values(d, _split(d), x=_rand(2, 3, 16, device=d)),
    "nan_and_inf_input": lambda d: Scenario(PartsLinear(_split(d)), [
        Call(torch.where(torch.rand(5, 16, device=d) < 0.2, float("nan"), _x(d))),
        Call(torch.where(torch.rand(5, 16, device=d) < 0.2, float("inf"), _x(d)))]),
    "nan_in_a_part": lambda d: _values(d, [_rand(8, 16, device=d), _rand(4, 16, device=d).index_fill(1, torch.tensor([3], device=d), float("nan"))]),
    # Changes between calls.
    "storage_swapped_between_calls": lambda d: Scenario(PartsLinear(_separate(d)), [
        Call(_x(d)), Call(_x(d), change=_repack), Call(_x(d), change=_unpack), Call(_x(d), change=_repack)]),
    "part_data_replaced": lambda d: Scenario(PartsLinear(_split(d)), [
        Call(_x(d)), Call(_x(d), change=_set_part(1, lambda w: torch.randn_like(w)))]),
    "parameter_replaced": lambda d: Scenario(PartsLinear(_split(d)), [
        Call(_x(d)), Call(_x(d), change=_replace_part(1, lambda w: torch.randn_like(w)))], max_graphs=2),
    "parameter_replaced_with_other_rows": lambda d: Scenario(PartsLinear(_split(d)), [
        Call(_x(d)), Call(_x(d), change=_replace_part(1, lambda w: torch.randn(6, 16, device=w.device)))],
        max_graphs=2),
    "dtype_changed_between_calls": lambda d: Scenario(PartsLinear(_split(d)), [
        Call(_x(d)), Call(_x(d, dtype=torch.float64), change=lambda m: m.double())], max_graphs=2),
    # Errors eager raises too.
    "k_mismatch_input": lambda d: Scenario(PartsLinear(_split(d)), [
        # Dynamo's fake-tensor trace raises the meta kernel's message.
        Call(_x(d, k=12), error=r"mat1 and mat2 shapes cannot be multiplied \(5x12 and 16x16\)",
             compiled_error=r"same reduction dim, but got \[5, 12\] X \[16, 16\]", op=None), Call(_x(d))],
        max_graphs=2),
    "k_mismatch_parts": lambda d: Scenario(PartsLinear([_rand(8, 16, device=d), _rand(4, 12, device=d)]), [
        Call(_x(d), error=r"Sizes of tensors must match", op=None)], max_graphs=0),
    "bias_size_mismatch": lambda d: Scenario(PartsLinear(_separate(d, (8, 4)), biases=[_rand(8, device=d), _rand(3, device=d)]), [
        Call(_x(d), error=r"expanded size of the tensor \(12\) must match the existing size \(11\)",
             compiled_error=r"broadcast a dimension of length 11", op=None)],
        max_graphs=0),
    "mixed_part_dtypes": lambda d: Scenario(PartsLinear([_rand(8, 16, device=d), _rand(4, 16, device=d, dtype=torch.float64)]), [
        Call(_x(d), error=r"dtype", op=None)], max_graphs=1),
    "input_dtype_mismatch": lambda d: Scenario(PartsLinear(_split(d)), [
        Call(_x(d, dtype=torch.bfloat16), error=r"dtype", op=None), Call(_x(d))], max_graphs=2),
    "integer_model": lambda d: Scenario(
        PartsLinear([torch.randint(-3, 4, (n, 16), device=d) for n in (8, 4)]),
        [Call(torch.randint(-3, 4, (5, 16), device=d),
              error=None if d == "cpu" else r"not implemented for 'Long'", op=False)]),
    "parameter_deleted": lambda d: Scenario(PartsLinear(_split(d)), [
        Call(_x(d)), Call(_x(d), change=lambda m: delattr(m, "w1"), error=r"w1", op=None)], max_graphs=2),
    "huge_input_out_of_memory": _huge_input,
    # CUDA only.
    "parts_on_cpu_and_cuda": lambda d: Scenario(PartsLinear([_rand(8, 16, device=d), _rand(4, 16, device="cpu")]), [
        Call(_x(d), error=r"same device|two different devices", op=None)], max_graphs=0, needs_cuda=True),
    "input_on_cpu_model_on_cuda": lambda d: Scenario(PartsLinear(_split(d)), [
        Call(_x("cpu"), error=r"same device|two different devices", op=None), Call(_x(d))],
        max_graphs=2, needs_cuda=True),
    "cuda_out_of_memory": _cuda_out_of_memory,
}


def _outcome(fn: Callable[[], torch.Tensor]) -> torch.Tensor | BaseException:
    try:
        with torch.no_grad():
            return fn()
    except Exception as exc:  # noqa: BLE001 -- the outcome is compared with eager's
        return exc


def _reference(model: PartsLinear, x: torch.Tensor) -> torch.Tensor:
    """The forward in float64 on the CPU."""
    w = torch.cat([w.detach().double().cpu() for w in model.weights()])
    b = (torch.cat([getattr(model, f"b{i}").detach().double().cpu() for i in range(model.n)])
         if model.has_bias else None)
    return F.linear(x.double().cpu(), w, b)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_compiled_model_matches_eager(op: object, device: str, name: str) -> None:
    scenario_fn = SCENARIOS[name]
    if device == "cpu" and name in ("parts_on_cpu_and_cuda", "input_on_cpu_model_on_cuda", "cuda_out_of_memory"):
        pytest.skip("a CUDA case")
    torch.manual_seed(0)
    scenario = scenario_fn(device)
    compiled = compile_sl(scenario.model)
    try:
        for step, call in enumerate(scenario.calls):
            if call.change is not None:
                call.change(scenario.model)
            eager = _outcome(lambda: scenario.model(call.x))
            runs = op_runs()
            got = _outcome(lambda: compiled(call.x))
            where = f"{name}, call {step}"
            if call.error is None:
                assert isinstance(eager, torch.Tensor), f"{where}: eager raised {eager!r}"
                assert isinstance(got, torch.Tensor), f"{where}: compiled raised {got!r}"
                assert got.shape == eager.shape and got.dtype == eager.dtype and got.device == eager.device, where
                ref = _reference(scenario.model, call.x)
                tol = 1e-10 if got.dtype == torch.float64 else 1e-5
                if got.dtype.is_floating_point:
                    torch.testing.assert_close(got.double().cpu(), ref, rtol=tol, atol=tol, equal_nan=True, msg=where)
                else:
                    assert torch.equal(got, eager), where
            else:
                assert isinstance(eager, BaseException), f"{where}: eager did not raise"
                assert re.search(call.error, str(eager)), f"{where}: eager raised {eager!r}"
                assert isinstance(got, BaseException), f"{where}: compiled did not raise (eager: {eager!r})"
                allowed = call.compiled_type or (type(eager), RuntimeError)
                assert isinstance(got, allowed), f"{where}: {got!r} is not a {allowed}"
                assert re.search(call.compiled_error or call.error, str(got)), f"{where}: compiled raised {got!r}"
            if call.op is True:
                assert op_runs() > runs, f"{where}: the region did not run through the op library"
            elif call.op is False:
                assert op_runs() == runs, f"{where}: the op library ran"
            if device == "cuda":
                torch.cuda.synchronize()  # no asynchronous CUDA error left behind
    finally:
        scenario.cleanup()
    assert graphs() <= scenario.max_graphs, f"{name}: {graphs()} graphs compiled"



"""Bad-input matrix of ``torch.ops.splitlinear.linear`` (and its backward ops):
each case either raises a RuntimeError naming the offending argument, or gives
the same result as eager PyTorch. Runs on every available device. (Compiled
models: test_model_inputs.py.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

Case = Callable[[str], tuple]


def _parts(device: str, rows=(4, 2, 2), k: int = 8, dtype=torch.float32) -> list[torch.Tensor]:
    return [torch.randn(n, k, device=device, dtype=dtype) for n in rows]


# Each case builds (input, weight, bias) and names the expected message.
ERROR_CASES: dict[str, tuple[Callable[[str], tuple], str]] = {
    "k_mismatch": (lambda d: (torch.randn(3, 8, device=d), [torch.randn(4, 8, device=d), torch.randn(2, 6, device=d)], None),
                   "weight[1] has 6 columns but input has K = 8"),
    "zero_parts": (lambda d: (torch.randn(3, 8, device=d), [], None), "weight must hold at least one tensor"),
    "bias_count": (lambda d: (torch.randn(3, 8, device=d), _parts(d), [torch.randn(4, device=d)]),
                   "bias has 1 tensor but weight has 3"),
    "bias_size": (lambda d: (torch.randn(3, 8, device=d), _parts(d), [torch.randn(4, device=d), torch.randn(3, device=d), torch.randn(2, device=d)]),
                  "bias[1] has 3 elements but weight[1] has 2 rows"),
    "bias_2d": (lambda d: (torch.randn(3, 8, device=d), _parts(d, (4,)), [torch.randn(4, 1, device=d)]),
                "bias[0] must be 1-D"),
    "weight_1d": (lambda d: (torch.randn(3, 8, device=d), [torch.randn(8, device=d)], None),
                  "weight[0] must be 2-D"),
    "weight_3d": (lambda d: (torch.randn(3, 8, device=d), [torch.randn(2, 4, 8, device=d)], None),
                  "weight[0] must be 2-D"),
    "mixed_weight_dtype": (lambda d: (torch.randn(3, 8, device=d), [torch.randn(4, 8, device=d), torch.randn(2, 8, device=d, dtype=torch.float64)], None),
                           "weight[1] has dtype Double but input has Float"),
    "bias_dtype": (lambda d: (torch.randn(3, 8, device=d), _parts(d, (4,)), [torch.randn(4, device=d, dtype=torch.float16)]),
                   "bias[0] has dtype Half but input has Float"),
    "integer_input": (lambda d: (torch.ones(3, 8, device=d, dtype=torch.int32), [torch.ones(4, 8, device=d, dtype=torch.int32)], None),
                      "input has dtype Int"),
    "bool_input": (lambda d: (torch.ones(3, 8, device=d, dtype=torch.bool), [torch.ones(4, 8, device=d, dtype=torch.bool)], None),
                   "input has dtype Bool"),
    "complex_input": (lambda d: (torch.ones(3, 8, device=d, dtype=torch.complex64), [torch.ones(4, 8, device=d, dtype=torch.complex64)], None),
                      "input has dtype ComplexFloat"),
    "scalar_input": (lambda d: (torch.tensor(1.0, device=d), _parts(d), None), "input must be a tensor of at least 1 dim"),
}


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_bad_input_raises_naming_the_argument(op, device: str, name: str) -> None:
    build, message = ERROR_CASES[name]
    x, w, b = build(device)
    with pytest.raises(RuntimeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        op.linear(x, w, b)


def test_parts_on_another_device(op, device: str) -> None:
    """CPU and CUDA tensors in one call: an error naming the part, either way round."""
    if device != "cuda":
        pytest.skip("needs a CUDA device")
    x = torch.randn(3, 8, device="cuda")
    with pytest.raises(RuntimeError, match=r"weight\[1\] is on cpu but input is on cuda:0"):
        op.linear(x, [torch.randn(4, 8, device="cuda"), torch.randn(2, 8)])
    with pytest.raises(RuntimeError, match=r"weight\[0\] is on cuda:0 but input is on cpu"):
        op.linear(x.cpu(), [torch.randn(4, 8, device="cuda"), torch.randn(2, 8)])
    with pytest.raises(RuntimeError, match=r"bias\[0\] is on cpu but input is on cuda:0"):
        op.linear(x, [torch.randn(4, 8, device="cuda")], [torch.randn(4)])
    torch.cuda.synchronize()


# Real calls that mix a "meta" tensor with real ones dispatch to the Meta (fake)
# kernel: each op's fake must refuse the device mix, not return uninitialized
# memory (regression: weight[1] on meta gave a CPU tensor of garbage).
META_MIX_CASES: dict[str, tuple[Callable[[str], object], str]] = {
    "linear_weight": (lambda d: torch.ops.splitlinear.linear(torch.randn(3, 8, device=d), [torch.randn(4, 8, device=d), torch.randn(2, 8, device="meta")]),
                      r"splitlinear.linear: weight\[1\] is on meta but input is on"),
    "linear_only_weight": (lambda d: torch.ops.splitlinear.linear(torch.randn(3, 8, device=d), [torch.randn(4, 8, device="meta")]),
                           r"splitlinear.linear: weight\[0\] is on meta but input is on"),
    "linear_bias": (lambda d: torch.ops.splitlinear.linear(torch.randn(3, 8, device=d), [torch.randn(4, 8, device=d)], [torch.randn(4, device="meta")]),
                    r"splitlinear.linear: bias\[0\] is on meta but input is on"),
    "linear_input": (lambda d: torch.ops.splitlinear.linear(torch.randn(3, 8, device="meta"), [torch.randn(4, 8, device=d)]),
                     r"splitlinear.linear: weight\[0\] is on .* but input is on meta"),
    "dgrad": (lambda d: torch.ops.splitlinear.linear_dgrad(torch.randn(3, 6, device=d), [torch.randn(4, 8, device=d), torch.randn(2, 8, device="meta")]),
              r"splitlinear.linear_dgrad: weight\[1\] is on meta but grad_output is on"),
    "wgrad": (lambda d: torch.ops.splitlinear.linear_wgrad(torch.randn(3, 6, device=d), torch.randn(3, 8, device="meta"), True),
              r"splitlinear.linear_wgrad: input is on meta but grad_output is on"),
    "cast_concat": (lambda d: torch.ops.splitlinear.cast_concat([torch.randn(4, 8, device=d), torch.randn(2, 8, device="meta")], torch.float32),
                    r"splitlinear.cast_concat: parts\[1\] is on meta but parts\[0\] is on"),
}


@pytest.mark.parametrize("name", sorted(META_MIX_CASES))
def test_meta_tensor_mixed_in_raises(op, device: str, name: str) -> None:
    call, message = META_MIX_CASES[name]
    with pytest.raises(RuntimeError, match=message):
        call(device)


def test_all_meta_call_gives_shapes(op) -> None:
    """Only meta tensors: the fake kernels give the output shapes (shape propagation)."""
    y = op.linear(torch.randn(2, 3, 8, device="meta"), [torch.randn(4, 8, device="meta"), torch.randn(2, 8, device="meta")],
                  [torch.randn(4, device="meta"), torch.randn(2, device="meta")])
    assert y.device.type == "meta" and y.shape == (2, 3, 6)
    dx = torch.ops.splitlinear.linear_dgrad(torch.randn(5, 6, device="meta"), [torch.randn(4, 8, device="meta"), torch.randn(2, 8, device="meta")])
    assert dx.device.type == "meta" and dx.shape == (5, 8)


def _reference(x, w, b):
    return F.linear(x.double(), torch.cat([p.double() for p in w]),
                    None if b is None else torch.cat([p.double() for p in b]))


# Cases that must give eager's result (storage layouts, edge sizes, specials).
def _one_storage(device, order=(0, 1, 2), offset=0, rows=(4, 2, 2), k=8):
    buf = torch.randn(sum(rows) * k + offset, device=device)[offset:].view(sum(rows), k)
    parts = list(buf.split(list(rows)))
    return [parts[i] for i in order]


VALUE_CASES: dict[str, Callable[[str], tuple]] = {
    "adjacent": lambda d: (torch.randn(5, 8, device=d), _one_storage(d), None),
    "reversed_adjacency": lambda d: (torch.randn(5, 8, device=d), _one_storage(d, order=(2, 1, 0)), None),
    "overlapping": lambda d: (torch.randn(5, 8, device=d), (lambda buf: [buf[0:4], buf[2:6]])(torch.randn(8, 8, device=d)), None),
    "same_part_twice": lambda d: (torch.randn(5, 8, device=d), (lambda w: [w, w])(torch.randn(4, 8, device=d)), None),
    "misaligned_views": lambda d: (torch.randn(5, 8, device=d), _one_storage(d, offset=1), None),
    "transposed_part": lambda d: (torch.randn(5, 8, device=d), [torch.randn(4, 8, device=d), torch.randn(8, 2, device=d).t()], None),
    "non_contiguous_part": lambda d: (torch.randn(5, 8, device=d), [torch.randn(4, 16, device=d)[:, ::2], torch.randn(2, 8, device=d)], None),
    "expanded_part": lambda d: (torch.randn(5, 8, device=d), [torch.randn(1, 8, device=d).expand(4, 8), torch.randn(2, 8, device=d)], None),
    "strided_bias": lambda d: (torch.randn(5, 8, device=d), _parts(d, (4, 2)), [torch.randn(8, device=d)[::2], torch.randn(2, device=d)]),
    "zero_rows_input": lambda d: (torch.randn(0, 8, device=d), _parts(d), None),
    "zero_k": lambda d: (torch.randn(5, 0, device=d), _parts(d, k=0), [torch.randn(4, device=d), torch.randn(2, device=d), torch.randn(2, device=d)]),
    "empty_part": lambda d: (torch.randn(5, 8, device=d), _parts(d, (4, 0, 2)), None),
    "all_parts_empty": lambda d: (torch.randn(5, 8, device=d), _parts(d, (0, 0)), None),
    "one_part": lambda d: (torch.randn(5, 8, device=d), _parts(d, (6,)), [torch.randn(6, device=d)]),
    "sixteen_parts": lambda d: (torch.randn(5, 8, device=d), _parts(d, tuple(range(1, 17))), None),
    "batched_input": lambda d: (torch.randn(2, 3, 5, 8, device=d), _parts(d), None),
    "input_1d": lambda d: (torch.randn(8, device=d), _parts(d), None),
    "non_contiguous_input": lambda d: (torch.randn(8, 5, device=d).t(), _parts(d), None),
    "float64": lambda d: (torch.randn(5, 8, device=d, dtype=torch.float64), _parts(d, dtype=torch.float64), None),
    "nan_and_inf": lambda d: (torch.tensor([[float("nan")] + [1.0] * 7, [float("inf")] + [1.0] * 7], device=d), _parts(d), None),
}


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_value_cases_match_eager(op, device: str, name: str) -> None:
    torch.manual_seed(0)
    x, w, b = VALUE_CASES[name](device)
    y = op.linear(x, w, b)
    ref = _reference(x, w, b)
    assert y.shape == ref.shape and y.dtype == x.dtype
    torch.testing.assert_close(y.double(), ref, rtol=1e-5, atol=1e-5, equal_nan=True)
    # The output never aliases an input.
    assert all(y.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
               for t in [x, *w, *(b or [])] if t.numel() and y.numel())


def test_storage_swapped_between_calls(op, device: str) -> None:
    torch.manual_seed(0)
    x = torch.randn(5, 8, device=device)
    w = [torch.nn.Parameter(p.clone()) for p in _parts(device)]
    buf = torch.cat([p.detach() for p in w])
    for step in range(3):
        if step == 1:  # disjoint storages
            for p in w:
                p.data = p.data.clone()
        if step == 2:  # back to one storage
            for p, v in zip(w, buf.split([4, 2, 2])):
                p.data = v
        torch.testing.assert_close(op.linear(x, w).double(), _reference(x, w, None), rtol=1e-5, atol=1e-5)


def test_parameter_freed_and_replaced(op, device: str) -> None:
    torch.manual_seed(0)
    x = torch.randn(5, 8, device=device)
    w = _parts(device)
    op.linear(x, w)
    w[1] = torch.randn(2, 8, device=device)  # the old part is freed
    torch.testing.assert_close(op.linear(x, w).double(), _reference(x, w, None), rtol=1e-5, atol=1e-5)


def test_no_bias_autograd_through_the_raw_op(op, device: str) -> None:
    """Regression: the autograd formula with the bias left at its default
    returned one gradient too many ("return from backward ... structure")."""
    x = torch.randn(3, 8, device=device, requires_grad=True)
    w = [torch.randn(4, 8, device=device, requires_grad=True), torch.randn(2, 8, device=device, requires_grad=True)]
    y = torch.ops.splitlinear.linear(x, w)
    g = torch.randn_like(y)
    grads = torch.autograd.grad(y, [x, *w], g)
    ref = torch.autograd.grad(F.linear(x, torch.cat(w)), [x, *w], g)
    for a, r in zip(grads, ref):
        torch.testing.assert_close(a, r, rtol=1e-5, atol=1e-5)


def test_expanded_output_gradient(op, device: str) -> None:
    """Regression: the gradient of ``y.sum()`` is an expanded (stride 0)
    tensor, which dgrad rejected as a GEMM operand."""
    x = torch.randn(3, 8, device=device, requires_grad=True)
    w = [torch.randn(4, 8, device=device, requires_grad=True)]
    op.linear(x, w).sum().backward()
    torch.testing.assert_close(x.grad, torch.cat(w).detach().sum(0).expand(3, 8), rtol=1e-5, atol=1e-5)


def test_error_leaves_no_sticky_state(op, device: str) -> None:
    """After a rejected call, the next valid call works (no error left behind)."""
    x = torch.randn(3, 8, device=device)
    with pytest.raises(RuntimeError):
        op.linear(x, [torch.randn(4, 7, device=device)])
    w = _parts(device)
    torch.testing.assert_close(op.linear(x, w).double(), _reference(x, w, None), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("with_bias", [False, True])
def test_opcheck(op, device: str, with_bias: bool) -> None:
    """torch.library.opcheck: schema, fake kernel, autograd registration and
    AOT dispatch of the op agree with its real kernel."""
    torch.manual_seed(0)
    x = torch.randn(3, 8, device=device, requires_grad=True)
    w = [torch.randn(n, 8, device=device, requires_grad=True) for n in (4, 2)]
    b = [torch.randn(n, device=device, requires_grad=True) for n in (4, 2)] if with_bias else None
    torch.library.opcheck(torch.ops.splitlinear.linear.default, (x, w, b))


def test_kernel_ir_dump(op, tmp_path, monkeypatch) -> None:
    """SPLITLINEAR_DUMP_DIR: a kernel compile writes its IR and the IR after
    every pass of the pipeline."""
    monkeypatch.setenv("SPLITLINEAR_DUMP_DIR", str(tmp_path))
    x = torch.randn(3, 8, dtype=torch.float64)
    # A signature no other test compiles, so the kernel is compiled here.
    w = [torch.randn(1, 8, dtype=torch.float64) for _ in range(11)]
    op.linear(x, w)
    inputs = [p for p in tmp_path.glob("kernel-*.mlir") if not p.name.endswith(".passes.mlir")]
    passes = list(tmp_path.glob("kernel-*.passes.mlir"))
    assert inputs and passes
    assert "slin.linear" in inputs[0].read_text()
    log = passes[0].read_text()
    assert "IR Dump After SlinElideConcat" in log and "IR Dump After ReconcileUnrealizedCasts" in log


def test_precompile_then_no_compile_at_first_call(op, device: str) -> None:
    """Kernels compiled ahead of time (as the backend does at graph-compile
    time) are not compiled again by the first call."""
    op.precompile(torch.float64, device, 13, True, True)
    before = op.runtime_counters()["compiles"]
    x = torch.randn(3, 8, device=device, dtype=torch.float64, requires_grad=True)
    w = [torch.randn(1, 8, device=device, dtype=torch.float64, requires_grad=True) for _ in range(13)]
    b = [torch.randn(1, device=device, dtype=torch.float64, requires_grad=True) for _ in range(13)]
    op.linear(x, w, b).sum().backward()
    assert op.runtime_counters()["compiles"] == before
    with pytest.raises(RuntimeError, match="num_parts must be >= 1"):
        op.precompile(torch.float32, device, 0, False, False)
    with pytest.raises(RuntimeError, match="dtype Int is not supported"):
        op.precompile(torch.int32, device, 2, False, False)
    with pytest.raises(RuntimeError, match="requires_grad has 1 flags but the signature has 5 tensor inputs"):
        op.precompile(torch.float32, device, 2, True, True, requires_grad=[True])
    with pytest.raises(RuntimeError, match="autocast_dtype Int is not supported"):
        op.precompile(torch.float32, device, 2, True, True, autocast_dtype=torch.int32)
    with pytest.raises(ValueError, match=r"splitlinear.precompile: device 'tpu' is not a device"):
        op.precompile(torch.float32, "tpu", 2, True, True)


def test_more_parts_than_one_call_takes_are_named(op, device: str) -> None:
    """Above 1024 weight parts the op and precompile raise, naming the argument, before compiling
    (a million parts once exhausted the host's memory in the compiler)."""
    before = op.runtime_counters()["compiles"]
    with pytest.raises(RuntimeError, match="num_parts has 1000000 weight parts; one call takes at most 1024"):
        op.precompile(torch.float32, device, 10**6, True, False)
    x = torch.randn(2, 4, device=device)
    w = [torch.randn(1, 4, device=device)] * 1025
    with pytest.raises(RuntimeError, match="splitlinear.linear: weight has 1025 weight parts"):
        op.linear(x, w)
    with pytest.raises(RuntimeError, match="splitlinear.linear_dgrad: weight has 1025 weight parts"):
        torch.ops.splitlinear.linear_dgrad(torch.randn(2, 1025, device=device), w)
    assert op.runtime_counters()["compiles"] == before


@pytest.mark.parametrize("packed", [True, False])
def test_many_parts_match_eager(op, device: str, packed: bool) -> None:
    """40 parts, beyond the 16 whose kernels are optimized (their machine code is generated at
    O0): forward, dgrad and wgrad against float64 eager, packed (one view) and separate."""
    torch.manual_seed(0)
    rows = [int(r) for r in torch.randint(1, 9, (40,))]
    full = torch.randn(sum(rows), 24, dtype=torch.float64, device=device)
    leaf = full.float().requires_grad_()  # packed: the parts are row views of it
    w = list(leaf.split(rows)) if packed else [p.float().requires_grad_() for p in full.split(rows)]
    b = [torch.randn(r, device=device, requires_grad=True) for r in rows]
    x = torch.randn(5, 24, device=device, requires_grad=True)
    y = op.linear(x, w, b)
    dy = torch.randn_like(y)
    y.backward(dy)
    x64, w64 = x.detach().double(), full
    ref = x64 @ w64.T + torch.cat([bi.detach() for bi in b]).double()
    torch.testing.assert_close(y.double(), ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x.grad.double(), dy.double() @ w64, rtol=1e-5, atol=1e-5)
    dw = dy.double().T @ x64
    got = leaf.grad if packed else torch.cat([p.grad for p in w])
    torch.testing.assert_close(got.double(), dw, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.cat([bi.grad for bi in b]).double(), dy.double().sum(0), rtol=1e-5, atol=1e-5)


def test_output_out_of_memory(op, device: str) -> None:
    """An input too large for the device (256 TiB once copied, beyond a
    47-bit address space even where the host overcommits memory) raises
    PyTorch's out-of-memory error, and the next call works."""
    huge = torch.randn(1, 1, device=device).expand(2 ** 46, 1)
    with pytest.raises(RuntimeError, match=r"memory"):
        op.linear(huge, [torch.randn(4, 1, device=device), torch.randn(2, 1, device=device)])
    x, w = torch.randn(5, 8, device=device), _parts(device)
    torch.testing.assert_close(op.linear(x, w).double(), _reference(x, w, None), rtol=1e-5, atol=1e-5)


def test_cat_buffer_out_of_memory_cuda(op, device: str) -> None:
    """The concat of non-adjacent parts (a runtime buffer from PyTorch's
    caching allocator) does not fit: torch.OutOfMemoryError naming the size,
    the output is not returned, and the next call (with memory) is right."""
    if device != "cuda":
        pytest.skip("needs a CUDA device")
    torch.manual_seed(0)
    x = torch.randn(128, 4096, device="cuda")
    # 2 x 64 MiB, not adjacent; scaled for O(1) outputs at K = 4096.
    w = [torch.randn(4096, 4096, device="cuda") / 64 for _ in range(2)]
    torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory
    previous = op.set_per_part_max_rows(0)  # copy the parts at any M
    try:
        torch.cuda.set_per_process_memory_fraction((torch.cuda.memory_reserved() + (48 << 20)) / total)
        with pytest.raises(torch.OutOfMemoryError, match=r"splitlinear.linear: .*could not allocate 134217728 bytes on CUDA device 0"):
            op.linear(x, w)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        op.set_per_part_max_rows(previous)
    torch.cuda.synchronize()
    torch.testing.assert_close(op.linear(x, w).double(), _reference(x, w, None), rtol=1e-5, atol=1e-5)


_CPU_OOM_SCRIPT = textwrap.dedent("""
    import resource, torch, torch.nn.functional as F
    import splitlinear.ops as op

    def vm_bytes():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))

    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(128, 1024)
    w = [torch.randn(16384, 1024) for _ in range(2)]    # 2 x 64 MiB, not adjacent
    op.set_per_part_max_rows(0)                          # copy the parts at any M
    op.linear(x[:, :8], [p[:4, :8] for p in w])        # compile the kernel first
    ref = F.linear(x.double(), torch.cat(w).double())
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    # Room for the 16 MiB output, not for the 128 MiB concat buffer.
    resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + (64 << 20), hard))
    try:
        op.linear(x, w)
        raise SystemExit("no error")
    except torch.OutOfMemoryError as e:
        assert "could not allocate 134217728 bytes on the host" in str(e), str(e)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    torch.testing.assert_close(op.linear(x, w).double(), ref, rtol=1e-5, atol=1e-4)
    print("ok")
""")


def test_cat_buffer_out_of_memory_cpu(op) -> None:
    """The same on the host, under an address-space limit (RLIMIT_AS) in a
    child process: the runtime's allocation fails cleanly."""
    done = subprocess.run([sys.executable, "-c", _CPU_OOM_SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr


def test_per_part_threshold(op, device: str) -> None:
    """set_per_part_max_rows picks the path for non-adjacent parts: one GEMM
    per part up to that many input rows, a copy into one buffer above; both
    give eager's result."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8, device=device)  # M = 6 rows once flattened
    w, b = _parts(device), [torch.randn(n, device=device) for n in (4, 2, 2)]
    previous = op.set_per_part_max_rows(6)
    try:
        for rows, path in ((6, "per_part_gemms"), (5, "cats"), (0, "cats"), (1 << 40, "per_part_gemms")):
            op.set_per_part_max_rows(rows)
            before = op.runtime_counters()
            y = op.linear(x, w, b)
            after = op.runtime_counters()
            assert after[path] == before[path] + 1, (rows, before, after)
            torch.testing.assert_close(y.double(), _reference(x, w, b), rtol=1e-5, atol=1e-5)
        with pytest.raises(RuntimeError, match=r"rows must be >= 0 or None, got -1"):
            op.set_per_part_max_rows(-1)
        with pytest.raises(RuntimeError, match=r"rows must be >= 0, or -1 for the automatic choice, got -2"):
            torch.ops.splitlinear.set_per_part_max_rows(-2)
    finally:
        last = op.set_per_part_max_rows(previous)
    assert last == 1 << 40


# (parts, M, path) under the automatic choice: on the CPU up to 64 rows; on
# CUDA per part for a few large parts at any M, a copy for many small ones.
AUTO_CASES = {
    "cpu": [([(4, 8), (2, 8)], 64, "per_part_gemms"), ([(4, 8), (2, 8)], 65, "cats")],
    "cuda": [([(1024, 1024), (1024, 1024)], 1, "per_part_gemms"),
             ([(1024, 1024), (1024, 1024)], 4096, "per_part_gemms"),
             ([(32, 256)] * 16, 1, "cats"), ([(32, 256)] * 16, 4096, "cats")],
}


def test_per_part_threshold_type_is_checked(op) -> None:
    with pytest.raises(TypeError, match=r"rows must be an int >= 0 or None, got 'x'"):
        op.set_per_part_max_rows("x")
    with pytest.raises(TypeError, match=r"got True"):
        op.set_per_part_max_rows(True)


def test_per_part_automatic_choice(op, device: str) -> None:
    torch.manual_seed(0)
    previous = op.set_per_part_max_rows(None)
    try:
        assert previous is None, "the default is the automatic choice"
        for shapes, m, path in AUTO_CASES[device]:
            w = [torch.randn(n, k, device=device) / k ** 0.5 for n, k in shapes]
            x = torch.randn(m, shapes[0][1], device=device)
            before = op.runtime_counters()
            y = op.linear(x, w)
            after = op.runtime_counters()
            assert after[path] == before[path] + 1, (shapes, m, before, after)
            torch.testing.assert_close(y.double(), _reference(x, w, None), rtol=1e-5, atol=1e-5)
    finally:
        op.set_per_part_max_rows(previous)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16], ids=str)
def test_dgrad_paths(op, device: str, dtype: torch.dtype) -> None:
    """The input gradient over weight parts: a view when they are adjacent,
    else one GEMM per part accumulating into dx (up to the per-part
    threshold), else a copy; every path gives eager's dx (float64 reference)
    and the same weight gradients."""
    torch.manual_seed(0)
    rows, k = (4, 3, 5), 8
    buf = torch.randn(sum(rows), k, dtype=torch.float64)
    cases = {
        "dgrad_views": list(buf.to(device=device, dtype=dtype, copy=True).split(rows)),
        "dgrad_per_part_gemms": [p.clone().to(device=device, dtype=dtype) for p in buf.split(rows)],
        "dgrad_cats": [p.clone().to(device=device, dtype=dtype) for p in buf.split(rows)],
    }
    x64 = torch.randn(2, 3, k, dtype=torch.float64)  # M = 6 rows once flattened
    g64 = torch.randn(2, 3, sum(rows), dtype=torch.float64)
    ref_dx = (g64 @ buf).to(device)
    ref_dw = torch.einsum("bmn,bmk->nk", g64, x64).to(device)
    rtol, atol = {torch.float64: (1e-10, 1e-10), torch.float32: (1e-5, 1e-5), torch.bfloat16: (3e-2, 3e-2)}[dtype]
    previous = op.set_per_part_max_rows(6)
    try:
        for path, parts in cases.items():
            op.set_per_part_max_rows(5 if path == "dgrad_cats" else 6)
            x = x64.to(device=device, dtype=dtype, copy=True).requires_grad_()
            w = [p.detach().requires_grad_() for p in parts]
            before = op.runtime_counters()
            op.linear(x, w).backward(g64.to(device=device, dtype=dtype))
            after = op.runtime_counters()
            assert after[path] == before[path] + 1, (path, before, after)
            torch.testing.assert_close(x.grad.double(), ref_dx, rtol=rtol, atol=atol * k ** 0.5)
            torch.testing.assert_close(torch.cat([p.grad for p in w]).double(), ref_dw, rtol=rtol, atol=atol * 6 ** 0.5)
    finally:
        op.set_per_part_max_rows(previous)


def test_one_part_kernel_ignores_the_threshold(op, device: str) -> None:
    """With one weight part there is nothing to combine: changing the
    per-part threshold does not compile another kernel for it."""
    x = torch.randn(3, 8, device=device, dtype=torch.float64)
    w = [torch.randn(5, 8, device=device, dtype=torch.float64)]
    previous = op.set_per_part_max_rows(7)
    try:
        op.linear(x, w)
        compiles = op.runtime_counters()["compiles"]
        for rows in (0, 9, None):
            op.set_per_part_max_rows(rows)
            torch.testing.assert_close(op.linear(x, w), x @ w[0].t(), rtol=1e-12, atol=1e-12)
        assert op.runtime_counters()["compiles"] == compiles
    finally:
        op.set_per_part_max_rows(previous)

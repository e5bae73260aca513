"""The Python wrappers of ``splitlinear.ops`` that take lists of parts check them first.

The ops' ``Tensor[]`` arguments (``weight``, ``bias``, ``weight_scale_inv``,
``parts``) would iterate a single tensor into its rows (``weight[0] must be
2-D, got 1-D``), and their schema's ``Tensor[]? bias`` takes no None entry (a
TorchScript type error): both raise first, naming the argument. So does an
``input`` that is not a tensor.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

E4M3 = torch.float8_e4m3fn


def _call(ops: object, name: str) -> Callable[..., torch.Tensor]:
    return getattr(ops, name)


def test_linear_weight_tensor_raises_type_error(op) -> None:
    x, w = torch.randn(3, 16), torch.randn(8, 16)
    with pytest.raises(TypeError, match=r"splitlinear\.linear: weight must be a list or tuple of 2-D tensors, "
                                        r"got a Tensor; for one part pass \[weight\]"):
        op.linear(x, w)
    torch.testing.assert_close(op.linear(x, [w]), x @ w.T)


def test_linear_bias_tensor_raises_type_error(op) -> None:
    x, w, b = torch.randn(3, 16), torch.randn(8, 16), torch.randn(8)
    with pytest.raises(TypeError, match=r"splitlinear\.linear: bias must be a list or tuple of 1-D tensors, "
                                        r"got a Tensor; for one part pass \[bias\]"):
        op.linear(x, [w], b)


def test_linear_bias_none_entry_raises_value_error(op) -> None:
    x, ws = torch.randn(3, 16), [torch.randn(8, 16), torch.randn(4, 16)]
    with pytest.raises(ValueError, match=r"splitlinear\.linear: bias\[1\] is None; pass bias=None for no bias, "
                                         r"or a tensor for every part"):
        op.linear(x, ws, [torch.randn(8), None])
    # The schema (Tensor[]? bias) is why: the raw op cannot take a None entry either.
    with pytest.raises(RuntimeError):
        torch.ops.splitlinear.linear.default(x, ws, [torch.randn(8), None])
    # What the message suggests: zeros for the part without a bias.
    b0 = torch.randn(8)
    torch.testing.assert_close(op.linear(x, ws, [b0, torch.zeros(4)]),
                               x @ torch.cat(ws).T + torch.cat([b0, torch.zeros(4)]))


def test_other_iterables_still_accepted(op) -> None:
    x, ws = torch.randn(3, 16), [torch.randn(8, 16), torch.randn(4, 16)]
    torch.testing.assert_close(op.linear(x, (w for w in ws)), op.linear(x, ws))
    torch.testing.assert_close(op.linear(x, torch.nn.ParameterList(ws)), op.linear(x, ws))
    with pytest.raises(TypeError, match=r"splitlinear\.linear: weight must be a list or tuple of 2-D tensors, got int"):
        op.linear(x, 3)
    with pytest.raises(TypeError, match=r"splitlinear\.linear: weight\[1\] must be a Tensor, got str"):
        op.linear(x, [ws[0], "k_proj"])


@pytest.mark.parametrize("name", ["fp8_linear", "scaled_linear", "fp8_serving_linear"])
def test_fp8_ops_weight_tensor_raises_type_error(op, name: str) -> None:
    x, w = torch.randn(4, 32), torch.randn(16, 32)
    args = {"fp8_linear": (x, w),
            "scaled_linear": (x.to(E4M3), torch.ones(1), w.to(E4M3), torch.ones(1)),
            "fp8_serving_linear": (x, w.to(E4M3), [torch.ones(1)])}[name]
    with pytest.raises(TypeError, match=rf"splitlinear\.{name}: weight must be a list or tuple of 2-D tensors, "
                                        r"got a Tensor; for one part pass \[weight\]"):
        _call(op, name)(*args)


@pytest.mark.parametrize("name", ["fp8_linear", "scaled_linear", "fp8_serving_linear"])
def test_fp8_ops_bias_checked(op, name: str) -> None:
    x, w = torch.randn(4, 32), torch.randn(16, 32)
    args = {"fp8_linear": (x, [w, w]),
            "scaled_linear": (x.to(E4M3), torch.ones(1), [w.to(E4M3)] * 2, torch.ones(1)),
            "fp8_serving_linear": (x, [w.to(E4M3)] * 2, [torch.ones(1)] * 2)}[name]
    with pytest.raises(TypeError, match=rf"splitlinear\.{name}: bias must be a list or tuple of 1-D tensors, "
                                        "got a Tensor"):
        _call(op, name)(*args, torch.zeros(32))
    with pytest.raises(ValueError, match=rf"splitlinear\.{name}: bias\[0\] is None; pass bias=None"):
        _call(op, name)(*args, [None, torch.zeros(16)])


def test_fp8_serving_linear_scales_and_cast_parts_checked(op) -> None:
    x, w8 = torch.randn(4, 32), torch.randn(16, 32).to(E4M3)
    with pytest.raises(TypeError, match=r"splitlinear\.fp8_serving_linear: weight_scale_inv must be a list or tuple "
                                        r"of float32 tensors, got a Tensor; for one part pass \[weight_scale_inv\]"):
        op.fp8_serving_linear(x, [w8], torch.ones(1))
    with pytest.raises(ValueError, match=r"splitlinear\.fp8_serving_linear: weight_scale_inv\[0\] is None"):
        op.fp8_serving_linear(x, [w8], [None])
    with pytest.raises(TypeError, match=r"splitlinear\.fp8_cast_parts: parts must be a list or tuple of 2-D tensors, "
                                        r"got a Tensor; for one part pass \[parts\]"):
        op.fp8_cast_parts(torch.randn(16, 32), E4M3)


@pytest.mark.parametrize("name", ["linear", "fp8_linear", "scaled_linear", "fp8_serving_linear", "fp8_quantize",
                                  "fp8_quantize_dual"])
def test_input_not_a_tensor_names_it(op, name: str) -> None:
    """A None input raises a TypeError naming the op and ``input``, not the dispatcher's "no tensor
    arguments ... no fallback function" error."""
    w = torch.randn(16, 32)
    rest = {"linear": ([w],), "fp8_linear": ([w],), "scaled_linear": (torch.ones(1), [w.to(E4M3)], torch.ones(1)),
            "fp8_serving_linear": ([w.to(E4M3)], [torch.ones(1)]), "fp8_quantize": (E4M3, "rows"),
            "fp8_quantize_dual": (E4M3, None, "blocks")}[name]
    with pytest.raises(TypeError, match=rf"splitlinear\.{name}: input must be a Tensor, got NoneType"):
        _call(op, name)(None, *rest)


@pytest.mark.parametrize("name", ["fp8_quantize", "fp8_quantize_dual", "fp8_cast_parts", "fp8_quantize_weight_blocks"])
def test_dtype_not_a_dtype_names_it(op, name: str) -> None:
    """dtype=None raises a TypeError naming the op and ``dtype``, not pybind11's cast error."""
    x = torch.randn(128, 128)
    first, rest = {"fp8_quantize": (x, ("rows",)), "fp8_quantize_dual": (x, ()),
                   "fp8_cast_parts": ([x], ()), "fp8_quantize_weight_blocks": ([x], ())}[name]
    with pytest.raises(TypeError, match=rf"splitlinear\.{name}: dtype must be a torch\.dtype .*got NoneType"):
        _call(op, name)(first, None, *rest)


@pytest.mark.parametrize("args, message", [
    ((None, "cpu", 2, True, True), "dtype must be a torch.dtype, got NoneType"),
    ((torch.float32, 3, 2, True, True), "device must be a torch.device or str, got int"),
    ((torch.float32, "cpu", "3", True, True), "num_parts must be an int, got str"),
    ((torch.float32, "cpu", True, True, True), "num_parts must be an int, got bool"),
    ((torch.float32, "cpu", 2, "yes", True), "bias must be a bool, got str"),
    ((torch.float32, "cpu", 2, True, 1), "training must be a bool, got int"),
])
def test_precompile_argument_types_named(op, args: tuple, message: str) -> None:
    """precompile names a mistyped argument, where the schema would say 'int' for a dtype."""
    with pytest.raises(TypeError, match=rf"splitlinear\.precompile: {message}"):
        op.precompile(*args)


def test_per_part_max_rows_beyond_int64_named(op) -> None:
    """A Python int past int64 is refused by name, not by pybind11's cast error."""
    with pytest.raises(ValueError, match=r"set_per_part_max_rows: rows must be at most 2\*\*63 - 1"):
        op.set_per_part_max_rows(2**70)

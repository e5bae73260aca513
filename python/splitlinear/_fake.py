"""Fake (meta) kernels of ``torch.ops.splitlinear.*``: output shapes for fake tensors.

Dynamo, AOTAutograd and Inductor trace the ops on fake tensors; these kernels
give the output shapes and repeat the C++ op's argument checks
(``lib/Torch/LinearOps.cpp``: devices, dtypes, shapes) with ``torch._check``,
so that bad input fails at trace time with the same message. They also run
for real calls that mix a ``meta`` tensor with others (the Meta kernel wins the
dispatch), so the device checks are what stops such a call. Imported by
:mod:`splitlinear.ops` once the op library is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from ._dtypes import SUPPORTED_DTYPES, count, prose_list

#: The C++ op's wording: "...; supported are float32, float16, bfloat16 and float64".
_SUPPORTED_TEXT = f"supported are {prose_list(SUPPORTED_DTYPES)}"


def _check_float(t: Tensor, who: str, name: str) -> None:
    torch._check(
        t.dtype in SUPPORTED_DTYPES,
        lambda: f"{who}: {name} has dtype {t.dtype}; {_SUPPORTED_TEXT}",
    )


def _check_like(t: Tensor, ref: Tensor, who: str, name: str, ref_name: str) -> None:
    # A part on another device (e.g. "meta" next to a CPU input) sends the real
    # call here too: without this check it would return uninitialized memory.
    torch._check(t.device == ref.device, lambda: f"{who}: {name} is on {t.device} but {ref_name} is on {ref.device}")
    torch._check(t.dtype == ref.dtype, lambda: f"{who}: {name} has dtype {t.dtype} but {ref_name} has {ref.dtype}")


def _check_parts(ref: Tensor, input_k: int, weight: Sequence[Tensor], who: str, ref_name: str) -> int:
    """Weight parts against ``ref`` (device, dtype) and K; returns their rows, Σ N_i."""
    torch._check(len(weight) > 0, lambda: f"{who}: weight must hold at least one tensor")
    for i, w in enumerate(weight):
        torch._check(w.dim() == 2, lambda: f"{who}: weight[{i}] must be 2-D [N_i, K], got {w.dim()}-D")
        _check_like(w, ref, who, f"weight[{i}]", ref_name)
        torch._check(
            w.shape[1] == input_k,
            lambda: f"{who}: weight[{i}] has {w.shape[1]} columns but {ref_name} has K = {input_k}",
        )
    return sum(w.shape[0] for w in weight)


@torch.library.register_fake("splitlinear::linear")
def _linear_fake(input: Tensor, weight: Sequence[Tensor], bias: Sequence[Tensor] | None = None) -> Tensor:
    who = "splitlinear.linear"
    torch._check(input.dim() >= 1, lambda: f"{who}: input must be a tensor of at least 1 dim [..., K]")
    _check_float(input, who, "input")
    n = _check_parts(input, input.shape[-1], weight, who, "input")
    if bias is not None:
        torch._check(
            len(bias) == len(weight),
            lambda: f"{who}: bias has {count(len(bias), 'tensor')} but weight has {len(weight)}",
        )
        for i, b in enumerate(bias):
            torch._check(b.dim() == 1, lambda: f"{who}: bias[{i}] must be 1-D [N_i]")
            _check_like(b, input, who, f"bias[{i}]", "input")
            torch._check(
                b.shape[0] == weight[i].shape[0],
                lambda: f"{who}: bias[{i}] has {b.shape[0]} elements but weight[{i}] has {weight[i].shape[0]} rows",
            )
    return input.new_empty((*input.shape[:-1], n))


@torch.library.register_fake("splitlinear::linear_dgrad")
def _dgrad_fake(grad_output: Tensor, weight: Sequence[Tensor]) -> Tensor:
    who = "splitlinear.linear_dgrad"
    torch._check(grad_output.dim() >= 1, lambda: f"{who}: grad_output must be a tensor of at least 1 dim [..., N]")
    _check_float(grad_output, who, "grad_output")
    torch._check(len(weight) > 0 and weight[0].dim() == 2, lambda: f"{who}: weight must hold 2-D tensors [N_i, K]")
    k = weight[0].shape[1]
    n = _check_parts(grad_output, k, weight, who, "grad_output")
    torch._check(
        grad_output.shape[-1] == n,
        lambda: f"{who}: grad_output has {grad_output.shape[-1]} columns but the weight parts have {n} rows in all",
    )
    return grad_output.new_empty((*grad_output.shape[:-1], k))


@torch.library.register_fake("splitlinear::linear_wgrad")
def _wgrad_fake(grad_output: Tensor, input: Tensor, bias: bool) -> tuple[Tensor, Tensor]:
    who = "splitlinear.linear_wgrad"
    torch._check(grad_output.dim() >= 1, lambda: f"{who}: grad_output must be a tensor of at least 1 dim [..., N]")
    torch._check(input.dim() >= 1, lambda: f"{who}: input must be a tensor of at least 1 dim [..., K]")
    _check_float(grad_output, who, "grad_output")
    _check_like(input, grad_output, who, "input", "grad_output")
    # The rows of the two are compared at run time (the C++ op): here they
    # may be symbolic, and a check would only add guards.
    n, k = grad_output.shape[-1], input.shape[-1]
    return grad_output.new_empty((n, k)), grad_output.new_empty((n if bias else 0,))


@torch.library.register_fake("splitlinear::cast_concat")
def _cast_concat_fake(parts: Sequence[Tensor], dtype: torch.dtype) -> Tensor:
    who = "splitlinear.cast_concat"
    torch._check(len(parts) > 0, lambda: f"{who}: parts must hold at least one tensor")
    first = parts[0]
    for i, p in enumerate(parts):
        torch._check(p.dim() >= 1, lambda: f"{who}: parts[{i}] must have at least 1 dim")
        torch._check(
            p.dim() == first.dim() and p.shape[1:] == first.shape[1:],
            lambda: f"{who}: parts[{i}] has shape {tuple(p.shape)} but parts[0] has "
            f"{tuple(first.shape)} (all but dim 0 must agree)",
        )
        _check_like(p, first, who, f"parts[{i}]", "parts[0]")
    return first.new_empty((sum(p.shape[0] for p in parts), *first.shape[1:]), dtype=dtype)

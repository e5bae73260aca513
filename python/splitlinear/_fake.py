"""Fake (meta) kernels of ``torch.ops.splitlinear.*``: output shapes for fake tensors.

Dynamo, AOTAutograd and Inductor trace the ops on fake tensors; these kernels
give the output shapes and repeat the C++ op's argument checks
(``lib/Torch/LinearOps.cpp``) with ``torch._check``, so that bad input fails at
trace time with the same message. Imported by :mod:`splitlinear.ops` once the
op library is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

def _check_parts(input_k: int, weight: Sequence[Tensor], who: str) -> int:
    torch._check(len(weight) > 0, lambda: f"{who}: weight must hold at least one tensor")
    for i, w in enumerate(weight):
        torch._check(w.dim() == 2, lambda: f"{who}: weight[{i}] must be 2-D [N_i, K]")
        torch._check(
            w.shape[1] == input_k,
            lambda: f"{who}: weight[{i}] has {w.shape[1]} columns but input has K = {input_k}",
        )
    return sum(w.shape[0] for w in weight)


@torch.library.register_fake("splitlinear::linear")
def _linear_fake(input: Tensor, weight: Sequence[Tensor], bias: Sequence[Tensor] | None = None) -> Tensor:
    n = _check_parts(input.shape[-1], weight, "splitlinear.linear")
    if bias is not None:
        torch._check(
            len(bias) == len(weight),
            lambda: f"splitlinear.linear: bias has {len(bias)} tensors but weight has {len(weight)}",
        )
    return input.new_empty((*input.shape[:-1], n))


@torch.library.register_fake("splitlinear::linear_dgrad")
def _dgrad_fake(grad_output: Tensor, weight: Sequence[Tensor]) -> Tensor:
    return grad_output.new_empty((*grad_output.shape[:-1], weight[0].shape[1]))


@torch.library.register_fake("splitlinear::linear_wgrad")
def _wgrad_fake(grad_output: Tensor, input: Tensor, bias: bool) -> tuple[Tensor, Tensor]:
    n, k = grad_output.shape[-1], input.shape[-1]
    return grad_output.new_empty((n, k)), grad_output.new_empty((n if bias else 0,))


@torch.library.register_fake("splitlinear::cast_concat")
def _cast_concat_fake(parts: Sequence[Tensor], dtype: torch.dtype) -> Tensor:
    torch._check(len(parts) > 0, lambda: "splitlinear.cast_concat: parts must hold at least one tensor")
    first = parts[0]
    for i, p in enumerate(parts):
        torch._check(
            p.dim() == first.dim() and p.shape[1:] == first.shape[1:],
            lambda: f"splitlinear.cast_concat: parts[{i}] has shape {tuple(p.shape)} but parts[0] has "
            f"{tuple(first.shape)} (all but dim 0 must agree)",
        )
    return first.new_empty((sum(p.shape[0] for p in parts), *first.shape[1:]), dtype=dtype)

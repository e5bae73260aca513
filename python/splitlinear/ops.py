"""``torch.ops.splitlinear.*``: the eager entry points (fake kernels: :mod:`._fake`).

The op computes ``y = x · concat(W_0..W_{n-1})ᵀ + concat(b_0..b_{n-1})`` with
``x`` ``[..., K]``, ``W_i`` ``[N_i, K]``, ``b_i`` ``[N_i]`` and ``y``
``[..., ΣN_i]``, on CPU (OpenBLAS) or CUDA (cuBLASLt), in float32, float16,
bfloat16 or float64 (accumulating in float32/float64). The parts are used in
place when they are adjacent in one storage (checked on every call inside the
compiled kernel); otherwise they are concatenated into a temporary buffer.

Backward: the input gradient (dgrad) uses the same checked view of the
weights; the weight gradient (wgrad) of each run of consecutive trainable
parts is one GEMM into one full gradient buffer, with the bias gradient fused
into it as the GEMM's epilogue, and each part's gradient is a view (row block)
of that buffer. Frozen parts get no wgrad; frozen weights with trainable
biases still get bias gradients.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
from torch import Tensor

from ._library import load_library

load_library()

from . import _fake  # noqa: E402,F401  (registers the fake kernels)

_LINEAR = torch.ops.splitlinear.linear.default


def linear(input: Tensor, weight: Sequence[Tensor], bias: Sequence[Tensor] | None = None) -> Tensor:
    """Split-parameter linear layer: ``F.linear(input, cat(weight), cat(bias))`` without the cat.

    Args:
        input: ``[..., K]`` floating tensor.
        weight: one or more ``[N_i, K]`` tensors with input's dtype and device.
        bias: None, or one ``[N_i]`` tensor per weight part.

    Returns:
        A new ``[..., ΣN_i]`` tensor (never a view of an input).

    Raises:
        RuntimeError: on mismatched shapes, dtypes or devices, naming the argument
            (e.g. ``weight[1] has 32 columns but input has K = 16``).
    """
    # The overload, not the packet: the packet's overload resolution costs ~16 us per call.
    return _LINEAR(input, list(weight), None if bias is None else list(bias))


def precompile(dtype: torch.dtype, device: torch.device | str, num_parts: int, bias: bool,
               training: bool, dump_dir: str | None = None, *,
               autocast_dtype: torch.dtype | None = None,
               requires_grad: Sequence[bool] | None = None) -> None:
    """JIT-compiles (and caches) the kernels a call of :func:`linear` will ask for
    — forward, and with ``training`` (grad mode on) the backward kernels its
    autograd formula runs — so the first call does not pay the compile.

    The op decides which kernels those are (``kernelsFor`` in the op library):
    under autocast to ``autocast_dtype`` a floating-point input other than
    float64 runs in that dtype; ``requires_grad`` holds one flag per tensor
    input ``[input, weight_0..weight_{n-1}, bias_0..bias_{n-1}]`` (default: all
    true): dgrad when the input needs a gradient, one wgrad per kind of run of
    trainable weight parts. With ``dump_dir``, each kernel is compiled even if
    cached and writes its IR and the IR after every pass into ``dump_dir``.

    Raises:
        RuntimeError: for an unsupported dtype/device, ``num_parts < 1``, a
            ``requires_grad`` of another length, or when the compiler fails (the
            message holds the IR and a repro command).
    """
    torch.ops.splitlinear.precompile(dtype, torch.device(device), num_parts, bias, training,
                                     None if dump_dir is None else os.fspath(dump_dir),
                                     autocast_dtype,
                                     None if requires_grad is None else [bool(f) for f in requires_grad])


def runtime_counters() -> dict[str, int]:
    """What the op library did so far: ``views`` (calls whose parts were used in
    place), ``cats`` (calls that copied parts), ``per_part_gemms`` (calls that ran
    one GEMM per part), ``compiles`` (kernels JIT-compiled), ``cache_hits``,
    ``evictions`` and ``cache_size`` of the kernel cache, and ``dgrad_views``,
    ``dgrad_cats``, ``dgrad_per_part_gemms``: the same paths for the input
    gradient (dgrad) calls. The paths are those the compiled kernels report
    for each call."""
    return dict(torch.ops.splitlinear.runtime_counters())


def reset_runtime_counters() -> None:
    """Zeroes the counters of :func:`runtime_counters` (the cache is kept)."""
    torch.ops.splitlinear.reset_runtime_counters()


def set_per_part_max_rows(rows: int | None) -> int | None:
    """Sets how :func:`linear` and its input gradient (dgrad) combine weight
    parts that are not adjacent: one GEMM per part for inputs (dgrad: output
    gradients) of at most ``rows`` rows (M, leading dims flattened), else a
    copy of the parts into one buffer and one GEMM; 0 turns the per-part path
    off. ``None`` (the default) chooses automatically, inside the kernel at
    every call: on CUDA from the parts' number and size (a cost model fitted with
    ``bench/bench_per_part.py`` on an H200: per-part for a few large parts at
    any M, the copy for many small ones), on the CPU up to 64 rows.
    ``SPLITLINEAR_PER_PART_MAX_ROWS`` (``auto`` or an integer) sets it when
    the op library first needs it. Applies to calls that start afterwards, in every thread; returns the
    previous setting.

    Raises:
        TypeError: ``rows`` is neither an int nor None.
        RuntimeError: for ``rows < 0``.
    """
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int)):
        raise TypeError(f"splitlinear.set_per_part_max_rows: rows must be an int >= 0 or None, got {rows!r}")
    if rows is not None and rows < 0:
        raise RuntimeError(f"splitlinear.set_per_part_max_rows: rows must be >= 0 or None, got {rows}")
    previous = int(torch.ops.splitlinear.set_per_part_max_rows(-1 if rows is None else rows))
    return None if previous < 0 else previous


# The autograd formula lives in the op library (C++, ``LinearFunction`` in
# lib/Torch/Autograd.cpp): a training step pays no Python on its hot path.

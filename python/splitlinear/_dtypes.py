"""The element types ``torch.ops.splitlinear.*`` computes in, and the FP8 ops' types and names: the one list.

The C++ op (``lib/Torch/LinearOps.cpp``) checks the same types; the order here
is its error message's, so the fake kernels' message stays identical to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

import torch

#: Element types the op computes in (float32 and float64 accumulate in their own type).
SUPPORTED_DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.float16, torch.bfloat16, torch.float64)

#: Operand dtypes autocast casts to its lower-precision dtype (it leaves float64 as is).
AUTOCAST_CAST_DTYPES: tuple[torch.dtype, ...] = tuple(d for d in SUPPORTED_DTYPES if d != torch.float64)


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``"float32"``."""
    return str(dtype).removeprefix("torch.")


def slash_list(dtypes: Iterable[torch.dtype]) -> str:
    """``"float32/float16/..."``: the dtypes in a rejection reason."""
    return "/".join(dtype_name(d) for d in dtypes)


def prose_list(dtypes: Iterable[torch.dtype]) -> str:
    """``"float32, float16, bfloat16 and float64"``: the dtypes as the C++ op's message lists them."""
    names = [dtype_name(d) for d in dtypes]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def count(n: int, noun: str) -> str:
    """``"1 tensor"``, ``"2 tensors"``: a count in a message, as the C++ ops write it."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# --- FP8 (the C++ side is lib/Torch/Fp8Ops.cpp) -----------------------------------------------

#: The FP8 storage types: ``float8_e4m3fn`` (max 448; activations, weights) and
#: ``float8_e5m2`` (max 57344; gradients).
FP8_DTYPES: tuple[torch.dtype, ...] = (torch.float8_e4m3fn, torch.float8_e5m2)

#: Largest finite value of each FP8 type: ``scale = FP8_MAX[dtype] / amax``.
FP8_MAX: dict[torch.dtype, float] = {torch.float8_e4m3fn: 448.0, torch.float8_e5m2: 57344.0}

#: What FP8 is quantized from, and what a scaled GEMM writes (the order of the C++ messages).
FP8_HIGH_PRECISION_DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.float16, torch.bfloat16)

#: The training recipes of ``fp8_linear``: torchao's names and numerics, and the block-scaled
#: recipe (TransformerEngine's ``Float8BlockScaling``: power-of-2 scales, or fp32 ones).
Fp8Recipe = Literal["tensorwise", "rowwise", "rowwise_with_gw_hp", "blockwise", "blockwise_fp32_scales"]
FP8_RECIPES: tuple[str, ...] = get_args(Fp8Recipe)
#: The block-scaled recipes: K and every part's rows must be multiples of :data:`FP8_BLOCK`.
FP8_BLOCKWISE_RECIPES: tuple[str, ...] = ("blockwise", "blockwise_fp32_scales")
#: The block of the block-scaled recipes (1x128 activations and gradients, 128x128 weights).
FP8_BLOCK = 128
#: The recipes with per-part (outer-vector) weight scales: K and every part's rows multiples of 16.
FP8_OUTER_VECTOR_RECIPES: tuple[str, ...] = tuple(r for r in FP8_RECIPES if r not in FP8_BLOCKWISE_RECIPES)

#: Along what ``fp8_quantize`` takes its amax: one scale, one per row, one per column, or one per
#: 1x128 block along each row.
Fp8Axis = Literal["tensor", "rows", "cols", "blocks"]
FP8_AXES: tuple[str, ...] = get_args(Fp8Axis)

#: ``fp8_quantize_dual``'s axis: both copies tensorwise, or the row-major copy per row and the
#: transposed one per column.
Fp8DualAxis = Literal["tensor", "rows", "blocks"]
FP8_DUAL_AXES: tuple[str, ...] = get_args(Fp8DualAxis)

#: c10's names of the scalar types (``operator<<(ScalarType)``), which the C++ messages print.
_C10_NAMES: dict[torch.dtype, str] = {
    torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.bfloat16: "BFloat16",
    torch.float8_e4m3fn: "Float8_e4m3fn", torch.float8_e5m2: "Float8_e5m2",
    torch.float8_e4m3fnuz: "Float8_e4m3fnuz", torch.float8_e5m2fnuz: "Float8_e5m2fnuz",
    torch.uint8: "Byte", torch.int8: "Char", torch.int16: "Short", torch.int32: "Int", torch.int64: "Long",
    torch.bool: "Bool", torch.complex64: "ComplexFloat", torch.complex128: "ComplexDouble",
}


def c10_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``"Float"``: the dtype as a C++ ``TORCH_CHECK`` message prints it."""
    return _C10_NAMES.get(dtype, dtype_name(dtype))

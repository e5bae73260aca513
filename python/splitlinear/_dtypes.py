"""The element types ``torch.ops.splitlinear.*`` computes in: the one list.

The C++ op (``lib/Torch/LinearOps.cpp``) checks the same types; the order here
is its error message's, so the fake kernels' message stays identical to it.
"""

from __future__ import annotations

from collections.abc import Iterable

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

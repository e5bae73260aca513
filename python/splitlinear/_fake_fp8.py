"""Fake (meta) kernels of the FP8 ops: ``fp8_quantize(_dual)``, ``fp8_cast_parts``, ``scaled_linear``,
``block_scaled_mm``, ``fp8_linear``.

As :mod:`._fake` does for ``linear``: output shapes and dtypes exactly as the
C++ ops (``lib/Torch/Fp8Ops.cpp``) return them, ``[0, 0]`` tensors for the
FP8 copies not asked for, and the C++ argument checks repeated with
``torch._check`` and the same messages (dtypes printed as c10 prints them:
``Float``, ``BFloat16``, ``Float8_e4m3fn``). ``fp8_linear``'s autograd kernel
(``lib/Torch/Fp8Autograd.cpp``) calls the other three through the dispatcher,
so AOTAutograd traces its forward and backward through these kernels.

Sizes: K and every N_i must be multiples of 16 (the C++ op checks them, so
here they are read, which specializes them; they are static in practice). The
row count M (the input's flattened leading dims) is never read: the scale
vectors are compared with it symbolically.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor
from torch.fx.experimental.symbolic_shapes import guard_or_false

from ._dtypes import (FP8_AXES, FP8_BLOCK, FP8_BLOCKWISE_RECIPES, FP8_DTYPES, FP8_DUAL_AXES,
                      FP8_HIGH_PRECISION_DTYPES, FP8_RECIPES, c10_name, count)

#: The FP8 GEMM's granularity for K and N (cuBLASLt on sm89+; the CPU target checks the same).
FP8_MULTIPLE = 16

_EMPTY = (0, 0)


def _quoted(names: Sequence[str]) -> str:
    """``"a", "b" or "c"``: the valid names as the C++ messages list them."""
    quoted = [f'"{n}"' for n in names]
    return f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _check_high_precision(dtype: torch.dtype, who: str, name: str) -> None:
    torch._check(
        dtype in FP8_HIGH_PRECISION_DTYPES,
        lambda: f"{who}: {name} has dtype {c10_name(dtype)}; FP8 quantization takes float32, float16 or bfloat16",
    )


def _check_fp8(dtype: torch.dtype, who: str, name: str) -> None:
    torch._check(
        dtype in FP8_DTYPES,
        lambda: f"{who}: {name} has dtype {c10_name(dtype)}; FP8 means float8_e4m3fn or float8_e5m2",
    )


def _check_scale_vector(t: Tensor, n: int | torch.SymInt, who: str, name: str, ref: Tensor) -> None:
    """A 1-D float32 scale of 1 or ``n`` entries on ``ref``'s device (``checkScaleVector``)."""
    torch._check(t.dim() == 1, lambda: f"{who}: {name} must be a 1-D float32 tensor")
    torch._check(t.dtype == torch.float32,
                 lambda: f"{who}: {name} has dtype {c10_name(t.dtype)} but scales are float32")
    torch._check(t.device == ref.device, lambda: f"{who}: {name} is on {t.device} but input is on {ref.device}")
    entries = t.shape[0]
    # Either size may be symbolic (M): a known 1 reads nothing, else the check is deferred.
    torch._check(guard_or_false(entries == 1) or entries == n,
                 lambda: f"{who}: {name} has {entries} entries; expected 1 or {n}")


def _check_fp8_target(dtype: torch.dtype, who: str) -> None:
    """The ``dtype`` argument of the quantization ops (``checkFp8Target``)."""
    torch._check(
        dtype in FP8_DTYPES,
        lambda: f"{who}: dtype is {c10_name(dtype)}; FP8 means float8_e4m3fn or float8_e5m2",
    )


def _rows(t: Tensor) -> int | torch.SymInt:
    """M: the product of all dims but the last (``flatten2d``)."""
    return math.prod(t.shape[:-1])


def _check_recipe(recipe: str, who: str) -> None:
    torch._check(recipe in FP8_RECIPES,
                 lambda: f'{who}: recipe must be {_quoted(FP8_RECIPES)}, got "{recipe}"')


def _check_col_scale(col_scale: Tensor, input: Tensor, who: str) -> None:
    """``col_scale``: float32 ``[K]`` on ``input``'s device (``checkedColScale``)."""
    k = input.shape[-1]
    torch._check(col_scale.dim() == 1 and col_scale.dtype == torch.float32,
                 lambda: f"{who}: col_scale must be a 1-D float32 tensor [K]")
    torch._check(col_scale.device == input.device,
                 lambda: f"{who}: col_scale is on {col_scale.device} but input is on {input.device}")
    torch._check(col_scale.shape[0] == k,
                 lambda: f"{who}: col_scale has {col_scale.shape[0]} entries but input has K = {k}")


@torch.library.register_fake("splitlinear::fp8_quantize")
def _fp8_quantize_fake(input: Tensor, dtype: torch.dtype, axis: str, col_scale: Tensor | None = None,
                       write_out: bool = True, write_transposed: bool = False,
                       pow2_scales: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    who = "splitlinear.fp8_quantize"
    torch._check(input.dim() >= 1, lambda: f"{who}: input must be a tensor of at least 1 dim [..., K]")
    _check_high_precision(input.dtype, who, "input")
    _check_fp8_target(dtype, who)
    torch._check(axis in FP8_AXES, lambda: f'{who}: axis must be {_quoted(FP8_AXES)}, got "{axis}"')
    m, k = _rows(input), input.shape[-1]
    if axis == "blocks":
        torch._check(k % FP8_BLOCK == 0,
                     lambda: f'{who}: input has K = {k} features; axis "blocks" needs a multiple of {FP8_BLOCK}')
        torch._check(not write_transposed,
                     lambda: f'{who}: write_transposed is not supported with axis "blocks"')
    if col_scale is not None:
        _check_col_scale(col_scale, input, who)
    out = input.new_empty((m, k) if write_out else _EMPTY, dtype=dtype)
    out_t = input.new_empty((k, m) if write_transposed else _EMPTY, dtype=dtype)
    scales = (1,) if axis == "tensor" else (m,) if axis == "rows" else (k,) if axis == "cols" else (m, k // FP8_BLOCK)
    return out, out_t, input.new_empty(scales, dtype=torch.float32)


def _check_quantized_parts(parts: Sequence[Tensor], name: str, who: str) -> tuple[int, int]:
    """Parts ``[N_i, K]`` of one high-precision dtype and device, as the C++ ops check those they
    quantize; returns ``(ΣN_i, K)``."""
    first = parts[0]
    torch._check(first.dim() == 2, lambda: f"{who}: {name}[0] must be 2-D [N_0, K]")
    k = first.shape[1]
    for i, p in enumerate(parts):
        torch._check(p.dim() == 2, lambda: f"{who}: {name}[{i}] must be 2-D [N_i, K]")
        _check_high_precision(p.dtype, who, f"{name}[{i}]")
        torch._check(p.dtype == first.dtype, lambda: f"{who}: {name}[{i}] has dtype {c10_name(p.dtype)} "
                     f"but {name}[0] has {c10_name(first.dtype)}")
        torch._check(p.device == first.device,
                     lambda: f"{who}: {name}[{i}] is on {p.device} but {name}[0] is on {first.device}")
        torch._check(p.shape[1] == k,
                     lambda: f"{who}: {name}[{i}] has {p.shape[1]} columns but {name}[0] has K = {k}")
    return sum(p.shape[0] for p in parts), k


@torch.library.register_fake("splitlinear::fp8_quantize_weight_blocks")
def _fp8_quantize_weight_blocks_fake(weight: Sequence[Tensor], dtype: torch.dtype, write_out: bool = True,
                                     write_transposed: bool = False,
                                     pow2_scales: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    who = "splitlinear.fp8_quantize_weight_blocks"
    torch._check(len(weight) > 0, lambda: f"{who}: weight must hold at least one part")
    _check_fp8_target(dtype, who)
    n, k = _check_quantized_parts(weight, "weight", who)
    for i, w in enumerate(weight):
        torch._check(w.shape[0] % FP8_BLOCK == 0 and k % FP8_BLOCK == 0,
                     lambda: f"{who}: weight[{i}] is {list(w.shape)}; 128x128 blocks need both sizes multiples "
                             f"of 128")
    first = weight[0]
    out = first.new_empty((n, k) if write_out else _EMPTY, dtype=dtype)
    out_t = first.new_empty((k, n) if write_transposed else _EMPTY, dtype=dtype)
    return out, out_t, first.new_empty((n // FP8_BLOCK, k // FP8_BLOCK), dtype=torch.float32)


@torch.library.register_fake("splitlinear::fp8_quantize_dual")
def _fp8_quantize_dual_fake(input: Tensor, dtype: torch.dtype, col_scale: Tensor | None = None,
                            axis: str = "tensor", pow2_scales: bool = False) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    who = "splitlinear.fp8_quantize_dual"
    torch._check(input.dim() >= 1, lambda: f"{who}: input must be a tensor of at least 1 dim [..., K]")
    _check_high_precision(input.dtype, who, "input")
    _check_fp8_target(dtype, who)
    torch._check(axis in FP8_DUAL_AXES, lambda: f'{who}: axis must be {_quoted(FP8_DUAL_AXES)}, got "{axis}"')
    torch._check(axis != "tensor" or col_scale is not None, lambda: f'{who}: col_scale is required with axis "tensor"')
    torch._check(axis != "blocks" or col_scale is None, lambda: f'{who}: col_scale is not supported with axis "blocks"')
    if col_scale is not None:
        _check_col_scale(col_scale, input, who)
    m, k = _rows(input), input.shape[-1]
    if axis == "blocks":
        torch._check(k % FP8_BLOCK == 0,
                     lambda: f'{who}: input has K = {k} features; axis "blocks" needs a multiple of {FP8_BLOCK}')
        m_blocks = (m + FP8_BLOCK - 1) // FP8_BLOCK
        return (input.new_empty((m, k), dtype=dtype), input.new_empty((m, k // FP8_BLOCK), dtype=torch.float32),
                input.new_empty((k, m_blocks * FP8_BLOCK), dtype=dtype),
                input.new_empty((k, m_blocks), dtype=torch.float32))
    rows = axis == "rows"
    return (input.new_empty((m, k), dtype=dtype), input.new_empty((m if rows else 1,), dtype=torch.float32),
            input.new_empty((k, m), dtype=dtype), input.new_empty((k if rows else 1,), dtype=torch.float32))


@torch.library.register_fake("splitlinear::fp8_cast_parts")
def _fp8_cast_parts_fake(parts: Sequence[Tensor], dtype: torch.dtype,
                         write_transposed: bool = False, cache: bool = False,
                         pow2_scales: bool = False) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    who = "splitlinear.fp8_cast_parts"
    torch._check(len(parts) > 0, lambda: f"{who}: parts must hold at least one tensor")
    _check_fp8_target(dtype, who)
    first = parts[0]
    n, k = _check_quantized_parts(parts, "parts", who)
    w8 = first.new_empty((n, k), dtype=dtype)
    w8_t = first.new_empty((k, n) if write_transposed else _EMPTY, dtype=dtype)
    scale_inv = first.new_empty((len(parts),), dtype=torch.float32)
    return w8, w8_t, scale_inv, first.new_empty((n,), dtype=torch.float32)


def _check_bias(bias: Sequence[Tensor], weight: Sequence[Tensor], dtype: torch.dtype, dtype_owner: str,
                input: Tensor, who: str) -> None:
    """Bias parts ``[N_i]`` of ``dtype`` on the input's device, one per weight part."""
    torch._check(len(bias) == len(weight),
                 lambda: f"{who}: bias has {count(len(bias), 'tensor')} but weight has {len(weight)}")
    for i, b in enumerate(bias):
        rows = weight[i].shape[0]
        torch._check(b.dim() == 1 and b.shape[0] == rows,
                     lambda: f"{who}: bias[{i}] must be 1-D with {rows} elements (the rows of weight[{i}])")
        torch._check(b.dtype == dtype, lambda: f"{who}: bias[{i}] has dtype {c10_name(b.dtype)} "
                     f"but {dtype_owner} {c10_name(dtype)}")
        torch._check(b.device == input.device, lambda: f"{who}: bias[{i}] is on {b.device} but input is on {input.device}")


def _check_parts_layout(weight: Sequence[Tensor], input: Tensor, k: int, who: str, fp8: bool,
                        multiple: int = FP8_MULTIPLE, need: str = "FP8 GEMMs need") -> int:
    """The weight parts' dtype (FP8 or high precision, one for all), device and sizes (rows a multiple of
    `multiple`, which `need` names); returns Σ N_i."""
    torch._check(len(weight) > 0, lambda: f"{who}: weight must hold at least one tensor")
    first = weight[0]
    for i, w in enumerate(weight):
        name = f"weight[{i}]"
        torch._check(w.dim() == 2, lambda: f"{who}: {name} must be 2-D [N_i, K]")
        if fp8:
            _check_fp8(w.dtype, who, name)
        else:
            _check_high_precision(w.dtype, who, name)
        torch._check(w.dtype == first.dtype, lambda: f"{who}: {name} has dtype {c10_name(w.dtype)} "
                     f"but weight[0] has {c10_name(first.dtype)}")
        torch._check(w.device == input.device, lambda: f"{who}: {name} is on {w.device} but input is on {input.device}")
        torch._check(w.shape[1] == k, lambda: f"{who}: {name} has {w.shape[1]} columns but input has K = {k}")
        torch._check(w.shape[0] % multiple == 0,
                     lambda: f"{who}: {name} has {w.shape[0]} rows; {need} a multiple of {multiple}")
    return sum(w.shape[0] for w in weight)


@torch.library.register_fake("splitlinear::scaled_linear")
def _scaled_linear_fake(input: Tensor, input_scale_inv: Tensor, weight: Sequence[Tensor], weight_scale_inv: Tensor,
                        bias: Sequence[Tensor] | None = None, out_dtype: torch.dtype = torch.bfloat16,
                        fast_accum: bool = False) -> Tensor:
    who = "splitlinear.scaled_linear"
    torch._check(input.dim() >= 1, lambda: f"{who}: input must be a tensor of at least 1 dim [..., K]")
    _check_fp8(input.dtype, who, "input")
    torch._check(out_dtype in FP8_HIGH_PRECISION_DTYPES,
                 lambda: f"{who}: out_dtype {c10_name(out_dtype)} is not supported (float32, float16, bfloat16)")
    k = input.shape[-1]
    torch._check(k % FP8_MULTIPLE == 0, lambda: f"{who}: input has K = {k} columns; FP8 GEMMs need a multiple of 16")
    n = _check_parts_layout(weight, input, k, who, fp8=True)
    torch._check(
        not (input.dtype == torch.float8_e5m2 and weight[0].dtype == torch.float8_e5m2),
        lambda: f"{who}: input and weight are both float8_e5m2; the FP8 GEMM takes e4m3fn x e4m3fn, "
        "e5m2 x e4m3fn or e4m3fn x e5m2",
    )
    if bias is not None:
        _check_bias(bias, weight, out_dtype, "out_dtype is", input, who)
    _check_scale_vector(input_scale_inv, _rows(input), who, "input_scale_inv", input)
    _check_scale_vector(weight_scale_inv, n, who, "weight_scale_inv", input)
    return input.new_empty((*input.shape[:-1], n), dtype=out_dtype)


def _check_block_scales(s: Tensor, rows: int | torch.SymInt, cols: int | torch.SymInt, name: str, a: Tensor) -> None:
    who = "splitlinear.block_scaled_mm"
    torch._check(s.dim() == 2 and s.dtype == torch.float32, lambda: f"{who}: {name} must be a 2-D float32 tensor")
    torch._check(s.shape[0] == rows and s.shape[1] == cols,
                 lambda: f"{who}: {name} has shape [{s.shape[0]}, {s.shape[1]}]; expected [{rows}, {cols}]")
    torch._check(s.device == a.device, lambda: f"{who}: {name} is on {s.device} but a is on {a.device}")


@torch.library.register_fake("splitlinear::block_scaled_mm")
def _block_scaled_mm_fake(a: Tensor, a_scale_inv: Tensor, b: Tensor, b_scale_inv: Tensor,
                          b_blocks: str = "128x128", bias: Tensor | None = None,
                          out_dtype: torch.dtype = torch.bfloat16) -> Tensor:
    # The order of the C++ kernel (blockScaledMm, lib/Torch/Fp8Blockwise.cpp).
    who = "splitlinear.block_scaled_mm"
    torch._check(b_blocks in ("128x128", "1x128"),
                 lambda: f'{who}: b_blocks must be "128x128" or "1x128", got "{b_blocks}"')
    square = b_blocks == "128x128"
    torch._check(a.dim() == 2 and a.dtype in FP8_DTYPES,
                 lambda: f"{who}: a must be a 2-D FP8 tensor [M, K] (float8_e4m3fn or float8_e5m2)")
    torch._check(b.dim() == 2 and b.dtype in FP8_DTYPES,
                 lambda: f"{who}: b must be a 2-D FP8 tensor [N, K] (float8_e4m3fn or float8_e5m2)")
    torch._check(b.device == a.device, lambda: f"{who}: b is on {b.device} but a is on {a.device}")
    m, k, n = a.shape[0], a.shape[1], b.shape[0]
    torch._check(b.shape[1] == k, lambda: f"{who}: b has {b.shape[1]} columns but a has K = {k}")
    torch._check(k % FP8_BLOCK == 0, lambda: f"{who}: K = {k} is not a multiple of 128 (the scale blocks)")
    torch._check(not square or n % FP8_BLOCK == 0,
                 lambda: f"{who}: b has {n} rows; 128x128 blocks need a multiple of 128")
    torch._check(out_dtype in FP8_HIGH_PRECISION_DTYPES,
                 lambda: f"{who}: out_dtype {c10_name(out_dtype)} is not supported (float32, float16, bfloat16)")
    _check_block_scales(a_scale_inv, m, k // FP8_BLOCK, "a_scale_inv", a)
    _check_block_scales(b_scale_inv, n // FP8_BLOCK if square else n, k // FP8_BLOCK, "b_scale_inv", a)
    if bias is not None:
        torch._check(bias.dim() == 1 and bias.shape[0] == n,
                     lambda: f"{who}: bias must be 1-D with {n} elements (the rows of b)")
        torch._check(bias.dtype == out_dtype, lambda: f"{who}: bias has dtype {c10_name(bias.dtype)} "
                     f"but out_dtype is {c10_name(out_dtype)}")
    return a.new_empty((m, n), dtype=out_dtype)


@torch.library.register_fake("splitlinear::fp8_linear")
def _fp8_linear_fake(input: Tensor, weight: Sequence[Tensor], bias: Sequence[Tensor] | None = None,
                     recipe: str = "tensorwise", cache_weights: bool = False) -> Tensor:
    # The order of the C++ kernel (fp8Linear): the recipe, then checkFp8LinearArgs.
    who = "splitlinear.fp8_linear"
    _check_recipe(recipe, who)
    torch._check(input.dim() >= 1, lambda: f"{who}: input must be a tensor of at least 1 dim [..., K]")
    _check_high_precision(input.dtype, who, "input")
    blockwise = recipe in FP8_BLOCKWISE_RECIPES
    if blockwise:
        torch._check(not cache_weights, lambda: f'{who}: cache_weights is not supported with recipe "blockwise" '
                     "(the FP8 weight cache holds per-part tensorwise casts); pass cache_weights=False "
                     "(backend option fp8_weight_cache off)")
    multiple, need = (FP8_BLOCK, 'recipe "blockwise" needs') if blockwise else (FP8_MULTIPLE, "FP8 GEMMs need")
    k = input.shape[-1]
    torch._check(k % multiple == 0, lambda: f"{who}: input has K = {k} features; {need} a multiple of {multiple}")
    n = _check_parts_layout(weight, input, k, who, fp8=False, multiple=multiple, need=need)
    if bias is not None:
        _check_bias(bias, weight, input.dtype, "input has", input, who)
    return input.new_empty((*input.shape[:-1], n))


@torch.library.register_fake("splitlinear::fp8_serving_linear")
def _fp8_serving_linear_fake(input: Tensor, weight: Sequence[Tensor], weight_scale_inv: Sequence[Tensor],
                             bias: Sequence[Tensor] | None = None, axis: str = "rows",
                             out_dtype: torch.dtype | None = None, fast_accum: bool = False,
                             input_scale_inv: Tensor | None = None) -> Tensor:
    # The order of the C++ kernel (fp8ServingLinear), then scaledLinear's checks.
    who = "splitlinear.fp8_serving_linear"
    torch._check(input.dim() >= 1, lambda: f"{who}: input must be a tensor of at least 1 dim [..., K]")
    if input_scale_inv is not None:
        _check_fp8(input.dtype, who, "input (with input_scale_inv)")
        torch._check(out_dtype is not None,
                     lambda: f"{who}: out_dtype is required with input_scale_inv (the input is FP8)")
    else:
        _check_high_precision(input.dtype, who, "input")
    torch._check(axis in ("tensor", "rows", "blocks"),
                 lambda: f'{who}: activation axis must be "tensor", "rows" or "blocks", got "{axis}"')
    torch._check(len(weight) > 0, lambda: f"{who}: weight must hold at least one tensor")
    torch._check(len(weight_scale_inv) == len(weight),
                 lambda: f"{who}: weight has {len(weight)} parts but weight_scale_inv has "
                 f"{len(weight_scale_inv)} tensors; one per part")
    if axis == "blocks":
        return _fp8_serving_blocks_fake(input, weight, weight_scale_inv, bias, out_dtype, input_scale_inv)
    for i, (w, s) in enumerate(zip(weight, weight_scale_inv)):
        _check_scale_vector(s, w.shape[0] if w.dim() == 2 else 1, who, f"weight_scale_inv[{i}]", input)
    out = input.dtype if out_dtype is None else out_dtype
    who = "splitlinear.scaled_linear"
    torch._check(out in FP8_HIGH_PRECISION_DTYPES,
                 lambda: f"{who}: out_dtype {c10_name(out)} is not supported (float32, float16, bfloat16)")
    k = input.shape[-1]
    torch._check(k % FP8_MULTIPLE == 0, lambda: f"{who}: input has K = {k} columns; FP8 GEMMs need a multiple of 16")
    n = _check_parts_layout(weight, input, k, who, fp8=True)
    if bias is not None:
        _check_bias(bias, weight, out, "out_dtype is", input, who)
    if input_scale_inv is not None:
        _check_scale_vector(input_scale_inv, _rows(input), who, "input_scale_inv", input)
    return input.new_empty((*input.shape[:-1], n), dtype=out)


def _fp8_serving_blocks_fake(input: Tensor, weight: Sequence[Tensor], weight_scale_inv: Sequence[Tensor],
                             bias: Sequence[Tensor] | None, out_dtype: torch.dtype | None,
                             input_scale_inv: Tensor | None) -> Tensor:
    # The checks of fp8ServingLinearBlockwise (Fp8Blockwise.cpp), in its order.
    who = "splitlinear.fp8_serving_linear"
    torch._check(input_scale_inv is None, lambda: f'{who}: input_scale_inv is not supported with axis "blocks" '
                 "(the graph quantizes activations per row only)")
    out = input.dtype if out_dtype is None else out_dtype
    torch._check(out in FP8_HIGH_PRECISION_DTYPES,
                 lambda: f"{who}: out_dtype {c10_name(out)} is not supported (float32, float16, bfloat16)")
    k = input.shape[-1]
    torch._check(k % FP8_BLOCK == 0,
                 lambda: f'{who}: input has K = {k} features; axis "blocks" needs a multiple of 128')
    for i, (w, s) in enumerate(zip(weight, weight_scale_inv)):
        torch._check(w.dim() == 2 and w.dtype == torch.float8_e4m3fn,
                     lambda: f"{who}: weight[{i}] must be a 2-D float8_e4m3fn tensor, got {w.dtype} {list(w.shape)}")
        torch._check(w.device == input.device,
                     lambda: f"{who}: weight[{i}] is on {w.device} but input is on {input.device}")
        torch._check(w.shape[1] == k, lambda: f"{who}: weight[{i}] has {w.shape[1]} columns but input has K = {k}")
        torch._check(w.shape[0] % FP8_BLOCK == 0,
                     lambda: f'{who}: weight[{i}] has {w.shape[0]} rows; axis "blocks" needs a multiple of 128')
        blocks = [w.shape[0] // FP8_BLOCK, k // FP8_BLOCK]
        torch._check(s.dim() == 2 and s.dtype == torch.float32 and list(s.shape) == blocks,
                     lambda: f"{who}: weight_scale_inv[{i}] must be float32 {blocks} (one scale per 128x128 "
                     f"block of weight[{i}]), got {s.dtype} {list(s.shape)}")
        torch._check(s.device == input.device,
                     lambda: f"{who}: weight_scale_inv[{i}] is on {s.device} but input is on {input.device}")
    n = sum(w.shape[0] for w in weight)
    if bias is not None:
        torch._check(len(bias) == len(weight) and all(b.dim() == 1 for b in bias)
                     and sum(b.shape[0] for b in bias) == n,
                     lambda: f"{who}: bias must hold one [N_i] tensor per weight part ({len(weight)} parts, "
                     f"{n} rows in all)")
        for b in bias:
            torch._check(b.dtype == out and b.device == input.device,
                         lambda: f"{who}: bias must be {c10_name(out)} on {input.device} (the output's dtype), "
                         f"got {c10_name(b.dtype)} on {b.device}")
    return input.new_empty((*input.shape[:-1], n), dtype=out)

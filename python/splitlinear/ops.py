"""``torch.ops.splitlinear.*``: the eager entry points (fake kernels: :mod:`._fake`, :mod:`._fake_fp8`).

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

FP8 (:func:`fp8_linear`, :func:`scaled_linear`, :func:`fp8_quantize`,
:func:`fp8_quantize_dual`, :func:`fp8_cast_parts`): one FP8 GEMM over weight parts that keep their own
scales. Conventions (the runtime's, ``Runtime.h`` "FP8 quantization"; the
TransformerEngine / torchao terms), all in float32 with IEEE division: for an
FP8 type of largest value ``fp8_max`` (448 for ``float8_e4m3fn``, 57344 for
``float8_e5m2``) and ``amax = max |x|`` over the tensor, a row or a column,
``scale = fp8_max / amax`` (1 when amax is 0, FLT_MAX where the quotient overflows), ``x8 = saturate(rne(x * scale))``
and ``scale_inv = 1 / scale``, so ``x ≈ scale_inv * x8``. With
``W = [W_1; ...; W_P]`` and part ``i`` quantized with its own ``scale_inv_i``,
the spread vector ``ŝ`` holds ``scale_inv_i`` for every row of part ``i``, and
``y[:, j] = sx * ŝ_j * (x8 · W8ᵀ)[:, j]``: cuBLASLt's outer-vector scaling
(``CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F`` on both operands, sm90), one
GEMM for all parts. The CPU target computes the same (exact decodings, an
fp32 GEMM, ``sx * ŝ * acc + bias`` rounded once).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal, NamedTuple

import torch
from torch import Tensor

from ._dtypes import Fp8Axis, Fp8DualAxis, Fp8Recipe
from ._library import load_library

load_library()

from . import _fake, _fake_fp8  # noqa: E402,F401  (register the fake kernels)

if torch.distributed.is_available():
    from . import _sharding  # noqa: E402,F401  (DTensor sharding rules)

_LINEAR = torch.ops.splitlinear.linear.default


def _parts(op: str, name: str, value: Sequence[Tensor], what: str = "2-D tensors") -> list[Tensor]:
    """``value`` as the list of tensors the op's ``Tensor[]`` argument takes.

    Raises:
        TypeError: ``value`` is one tensor (iterating it would hand the op its rows) or not
            iterable, or an entry is not a tensor; the message names ``op``, ``name`` and the entry.
        ValueError: an entry is None (the schema's ``Tensor[]`` has no optional entries).
    """
    if isinstance(value, Tensor):
        raise TypeError(f"splitlinear.{op}: {name} must be a list or tuple of {what}, got a Tensor; "
                        f"for one part pass [{name}]")
    if not isinstance(value, (list, tuple)):
        try:  # any other iterable of tensors (a generator, an nn.ParameterList) is taken as before
            value = list(value)
        except TypeError:
            raise TypeError(f"splitlinear.{op}: {name} must be a list or tuple of {what}, "
                            f"got {type(value).__name__}") from None
    for i, entry in enumerate(value):
        if entry is None:
            hint = (f"pass {name}=None for no bias, or a tensor for every part (zeros for a part without one)"
                    if name == "bias" else "pass a tensor for every part")
            raise ValueError(f"splitlinear.{op}: {name}[{i}] is None; {hint}")
        if not isinstance(entry, Tensor):
            raise TypeError(f"splitlinear.{op}: {name}[{i}] must be a Tensor, got {type(entry).__name__}")
    return list(value)


def _tensor(op: str, name: str, value: Tensor) -> Tensor:
    """``value`` itself when it is a tensor.

    Raises:
        TypeError: naming ``op`` and ``name``, where the dispatcher would say only that the
            schema has no fallback for calls without tensor arguments.
    """
    if not isinstance(value, Tensor):
        raise TypeError(f"splitlinear.{op}: {name} must be a Tensor, got {type(value).__name__}")
    return value


#: The largest value of the op library's int arguments (int64_t).
_INT64_MAX = 2**63 - 1


def _dtype(op: str, value: torch.dtype) -> torch.dtype:
    """``value`` itself when it is a ``torch.dtype``.

    Raises:
        TypeError: naming ``op`` and ``dtype``, where pybind11 would say only that it cannot cast the
            value to a C++ type.
    """
    if not isinstance(value, torch.dtype):
        raise TypeError(f"splitlinear.{op}: dtype must be a torch.dtype (torch.float8_e4m3fn or "
                        f"torch.float8_e5m2), got {type(value).__name__}")
    return value


def _bias_parts(op: str, bias: Sequence[Tensor] | None) -> list[Tensor] | None:
    """``bias`` checked as :func:`_parts` does (None stays None: no bias at all)."""
    return None if bias is None else _parts(op, "bias", bias, "1-D tensors")


def linear(input: Tensor, weight: Sequence[Tensor], bias: Sequence[Tensor] | None = None) -> Tensor:
    """Split-parameter linear layer: ``F.linear(input, cat(weight), cat(bias))`` without the cat.

    Args:
        input: ``[..., K]`` floating tensor.
        weight: a list or tuple of one or more ``[N_i, K]`` tensors with input's dtype and device.
        bias: None, or a list or tuple of one ``[N_i]`` tensor per weight part (no None entries).

    Returns:
        A new ``[..., ΣN_i]`` tensor (never a view of an input).

    Raises:
        TypeError: ``weight`` or ``bias`` is a single tensor rather than a list or tuple of them.
        ValueError: a ``bias`` entry is None: the bias is all or nothing (pass ``bias=None``, or a
            zero tensor for the parts without one).
        RuntimeError: on mismatched shapes, dtypes or devices, naming the argument
            (e.g. ``weight[1] has 32 columns but input has K = 16``).
    """
    # The overload, not the packet: the packet's overload resolution costs ~16 us per call.
    return _LINEAR(_tensor("linear", "input", input), _parts("linear", "weight", weight), _bias_parts("linear", bias))


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
        TypeError: ``dtype`` or ``autocast_dtype`` not a ``torch.dtype``, ``device`` not a device or
            string, ``num_parts`` not an int, ``bias`` or ``training`` not a bool.
        ValueError: ``device`` a string that names no device (``"tpu"``).
        RuntimeError: for an unsupported dtype/device, ``num_parts < 1`` or above 1024 (one call
            takes at most 1024 weight parts: a kernel's compile time grows faster than them), a
            ``requires_grad`` of another length, or when the compiler fails (the
            message holds the IR and a repro command).
    """
    expected = {"dtype": (dtype, torch.dtype, "a torch.dtype"),
                "device": (device, (torch.device, str), "a torch.device or str"),
                "num_parts": (num_parts, int, "an int"), "bias": (bias, bool, "a bool"),
                "training": (training, bool, "a bool")}
    if autocast_dtype is not None:
        expected["autocast_dtype"] = (autocast_dtype, torch.dtype, "a torch.dtype or None")
    for name, (value, kind, what) in expected.items():
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TypeError(f"splitlinear.precompile: {name} must be {what}, got {type(value).__name__} {value!r:.40}")
    try:
        device = torch.device(device)
    except RuntimeError as exc:  # torch's own message names neither the function nor the argument
        raise ValueError(f"splitlinear.precompile: device {device!r} is not a device: {exc}") from None
    torch.ops.splitlinear.precompile(dtype, device, num_parts, bias, training,
                                     None if dump_dir is None else os.fspath(dump_dir),
                                     autocast_dtype,
                                     None if requires_grad is None else [bool(f) for f in requires_grad])


def runtime_counters() -> dict[str, int]:
    """What the op library did so far: ``views`` (calls whose parts were used in
    place), ``cats`` (calls that copied parts), ``per_part_gemms`` (calls that ran
    one GEMM per part), ``compiles`` (kernels JIT-compiled), ``cache_hits``,
    ``evictions`` and ``cache_size`` of the kernel cache, ``dgrad_views``,
    ``dgrad_cats``, ``dgrad_per_part_gemms``: the same paths for the input
    gradient (dgrad) calls, and ``scaled_views``, ``scaled_cats``,
    ``scaled_per_part_gemms``: the same paths for the FP8 GEMMs of
    :func:`scaled_linear` (:func:`fp8_linear`'s forward, dgrad and FP8 wgrad
    among them). The paths are those the compiled kernels report for each
    call."""
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
    ``bench/tools/per_part_threshold.py`` on an H200: per-part for a few large parts at
    any M, the copy for many small ones), on the CPU up to 64 rows.
    ``SPLITLINEAR_PER_PART_MAX_ROWS`` (``auto`` or an integer) sets it when
    the op library first needs it. Applies to calls that start afterwards, in every thread; returns the
    previous setting.

    Raises:
        TypeError: ``rows`` is neither an int nor None.
        ValueError: ``rows`` does not fit an int64.
        RuntimeError: for ``rows < 0``.
    """
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int)):
        raise TypeError(f"splitlinear.set_per_part_max_rows: rows must be an int >= 0 or None, got {rows!r}")
    if rows is not None and rows < 0:
        raise RuntimeError(f"splitlinear.set_per_part_max_rows: rows must be >= 0 or None, got {rows}")
    if rows is not None and rows > _INT64_MAX:
        raise ValueError(f"splitlinear.set_per_part_max_rows: rows must be at most 2**63 - 1 (an int64), got {rows}")
    previous = int(torch.ops.splitlinear.set_per_part_max_rows(-1 if rows is None else rows))
    return None if previous < 0 else previous



# --- FP8 ------------------------------------------------------------------------------------

class Fp8Quantized(NamedTuple):
    """What :func:`fp8_quantize` returns."""

    #: ``[M, K]`` FP8, row-major (``[0, 0]`` when ``write_out`` is false).
    data: Tensor
    #: ``[K, M]`` FP8, the transpose (``[0, 0]`` unless ``write_transposed``).
    data_t: Tensor
    #: float32 ``[1]`` (axis ``"tensor"``), ``[M]`` (``"rows"``), ``[K]`` (``"cols"``) or
    #: ``[M, K/128]`` (``"blocks"``).
    scale_inv: Tensor


class Fp8QuantizedDual(NamedTuple):
    """What :func:`fp8_quantize_dual` returns."""

    #: ``[M, K]`` FP8: ``input * col_scale``, quantized with the amax of those products (per row for
    #: axis ``"rows"``).
    data: Tensor
    #: float32 ``[1]`` (axis ``"tensor"``) or ``[M]`` (``"rows"``): ``data``'s ``scale_inv``.
    scale_inv: Tensor
    #: ``[K, M]`` FP8: ``inputᵀ``, quantized with the amax of ``input`` (per column of ``input`` for
    #: axis ``"rows"``).
    data_t: Tensor
    #: float32 ``[1]`` (axis ``"tensor"``) or ``[K]`` (``"rows"``): ``data_t``'s ``scale_inv``.
    scale_inv_t: Tensor


class Fp8Parts(NamedTuple):
    """What :func:`fp8_cast_parts` returns."""

    #: ``[ΣN_i, K]`` FP8: part ``i`` at rows ``off_i .. off_i + N_i``, quantized with its own scale.
    data: Tensor
    #: ``[K, ΣN_i]`` FP8, the transpose (``[0, 0]`` unless ``write_transposed``).
    data_t: Tensor
    #: float32 ``[P]``: each part's ``scale_inv``.
    scale_inv: Tensor
    #: float32 ``[ΣN_i]``: the ``scale_inv`` of each row's part (the spread vector ŝ).
    row_scale_inv: Tensor


_FP8_QUANTIZE = torch.ops.splitlinear.fp8_quantize.default
_FP8_QUANTIZE_DUAL = torch.ops.splitlinear.fp8_quantize_dual.default
_FP8_CAST_PARTS = torch.ops.splitlinear.fp8_cast_parts.default
_FP8_QUANTIZE_WEIGHT_BLOCKS = torch.ops.splitlinear.fp8_quantize_weight_blocks.default
_SCALED_LINEAR = torch.ops.splitlinear.scaled_linear.default
_FP8_LINEAR = torch.ops.splitlinear.fp8_linear.default
_FP8_SERVING_LINEAR = torch.ops.splitlinear.fp8_serving_linear.default


def fp8_linear(input: Tensor, weight: Sequence[Tensor], bias: Sequence[Tensor] | None = None, *,
               recipe: Fp8Recipe = "tensorwise", cache_weights: bool = False) -> Tensor:
    """``F.linear(input, cat(weight), cat(bias))`` computed in FP8, with autograd: the training op.

    Forward: ``input`` is quantized to ``float8_e4m3fn`` (one scale, or one per
    row for the ``rowwise`` recipes), every weight part to ``float8_e4m3fn``
    with its own scale into one buffer (:func:`fp8_cast_parts`), and one scaled
    GEMM with fast accumulation computes ``y = sx * ŝ * (x8 · W8ᵀ) + cat(bias)``
    (:func:`scaled_linear`). A part much smaller than its siblings keeps its own
    accuracy: one scale shared by the concatenated weight (TransformerEngine's
    choice) would drop it into e4m3's subnormals.

    Backward (``lib/Torch/Fp8Autograd.cpp``; the derivation is in
    ``docs/Design.md``, "FP8"):

    - dgrad ``dx = dy · W = (dy · diag(ŝ)) · W8``: the parts' scales are folded
      into ``dy``'s columns while ``dy`` is quantized (``float8_e5m2`` per
      tensor for ``tensorwise``, ``float8_e4m3fn`` per row for the rowwise
      recipes), then one GEMM with the transposed FP8 weight, cast
      again from the parts in backward (the same bytes, so that no FP8 weight
      is held between forward and backward, and a part changed in place since
      the forward raises; with ``cache_weights``, through the cache);
    - wgrad ``dW = dyᵀ · x``: one FP8 GEMM over the transposed FP8 copies of
      ``dy`` and ``x`` (``rowwise``: one scale per column, over the tokens), or
      in the input's precision for ``rowwise_with_gw_hp``. Each
      part's gradient is a row block of the one ``dW``, in the part's dtype;
      frozen parts (``requires_grad=False``) get none.

    Args:
        input: ``[..., K]`` float32, float16 or bfloat16; K a multiple of 16.
        weight: parts ``[N_i, K]`` of one of those dtypes (it may differ from
            ``input``'s: float32 master weights), on ``input``'s device, each
            N_i a multiple of 16.
        bias: None, or one ``[N_i]`` tensor per part, of ``input``'s dtype.
        recipe: ``"tensorwise"``, ``"rowwise"`` or ``"rowwise_with_gw_hp"``,
            torchao's names and dtypes (tensorwise: dY e5m2, fp32 scales; the
            rowwise recipes: dY e4m3, every scale rounded down to a power of
            2). Where we differ -- one scale per weight part instead of per
            row -- docs/UserGuide.md's recipe table says how. ``"blockwise"``
            (TransformerEngine's ``Float8BlockScaling``; ``lib/Torch/Fp8Blockwise.h``):
            x and dY in 1x128 blocks along the contraction, the weight in
            128x128 blocks, all e4m3, power-of-2 scales
            (``"blockwise_fp32_scales"``: exact ones); K and every N_i must be
            multiples of 128, the GEMM is cuBLASLt's block-scaled one (sm_90
            only) or, on the CPU, its dequantize-then-GEMM emulation; no
            ``cache_weights``.
        cache_weights: cast the weight parts through the FP8 weight cache
            (:func:`fp8_cast_parts` with ``cache=True``): quantized at most
            twice while they do not change (``W8`` by the first forward,
            ``W8`` and its transpose by the first backward; then reused by
            gradient-accumulation micro-batches and no_grad forwards), at the
            cost of keeping their FP8 copies. Without it every backward casts
            the transposed copy again (an amax pass and a cast of the parts).

    Returns:
        A new ``[..., ΣN_i]`` tensor of ``input``'s dtype. Under
        ``torch.autocast`` the input and biases are cast to the autocast dtype;
        the weight parts are quantized from their own dtype.

    Raises:
        TypeError, ValueError: ``weight`` or ``bias`` not a list or tuple of tensors, or a None bias
            entry (as :func:`linear`).
        RuntimeError: naming the argument, for a bad recipe, a dtype outside
            float32/float16/bfloat16, K or an N_i that is not a multiple of 16
            (128 for ``blockwise``), mismatched shapes or devices, a bias of
            another dtype than the input, FP8 on a GPU below sm89, or
            ``blockwise`` on a GPU other than sm_90.
    """
    return _FP8_LINEAR(_tensor("fp8_linear", "input", input), _parts("fp8_linear", "weight", weight),
                       _bias_parts("fp8_linear", bias), recipe, cache_weights)


def scaled_linear(input: Tensor, input_scale_inv: Tensor, weight: Sequence[Tensor], weight_scale_inv: Tensor,
                  bias: Sequence[Tensor] | None = None, *, out_dtype: torch.dtype = torch.bfloat16,
                  fast_accum: bool = False) -> Tensor:
    """``y = sx * ŝ * (input · cat(weight)ᵀ) + cat(bias)`` over FP8 operands: one scaled GEMM.

    ``sx`` is ``input_scale_inv`` (one value or one per row of the flattened
    input), ``ŝ`` is ``weight_scale_inv`` (one value, or one per output column:
    each row's part's ``scale_inv``, as :func:`fp8_cast_parts` returns it in
    ``row_scale_inv``). On CUDA this is one cuBLASLt FP8 GEMM with outer-vector
    scaling (one scalar scale on each side and one part: tensorwise scaling).
    As for :func:`linear`, parts that are adjacent in one storage (row blocks of
    one FP8 buffer) are used in place; others are copied into one FP8 buffer or
    run one GEMM each (counters ``scaled_views``, ``scaled_cats``,
    ``scaled_per_part_gemms`` of :func:`runtime_counters`).

    Args:
        input: ``[..., K]`` ``float8_e4m3fn`` or ``float8_e5m2``; K a multiple of 16.
        input_scale_inv: float32 ``[1]`` or ``[M]`` (M: the leading dims flattened).
        weight: FP8 parts ``[N_i, K]`` of one dtype, N_i multiples of 16;
            ``float8_e5m2`` for both input and weight is not supported.
        weight_scale_inv: float32 ``[1]`` or ``[ΣN_i]``.
        bias: None, or one ``[N_i]`` tensor per part, of ``out_dtype``.
        out_dtype: float32, float16 or bfloat16.
        fast_accum: cuBLASLt's fast FP8 accumulation (faster, less exact; the
            CPU target ignores it).

    Returns:
        A new ``[..., ΣN_i]`` tensor of ``out_dtype``. No autograd.

    Raises:
        TypeError, ValueError: ``weight`` or ``bias`` not a list or tuple of tensors, or a None bias
            entry (as :func:`linear`).
        RuntimeError: naming the argument, for a dtype, shape, scale size or
            device that does not fit, e5m2 × e5m2, or a GPU below sm89.
    """
    return _SCALED_LINEAR(_tensor("scaled_linear", "input", input), input_scale_inv,
                          _parts("scaled_linear", "weight", weight), weight_scale_inv,
                          _bias_parts("scaled_linear", bias), out_dtype, fast_accum)


def fp8_serving_linear(input: Tensor, weight: Sequence[Tensor], weight_scale_inv: Sequence[Tensor],
                       bias: Sequence[Tensor] | None = None, *, axis: Literal["rows", "tensor", "blocks"] = "rows",
                       out_dtype: torch.dtype | None = None, fast_accum: bool = False,
                       input_scale_inv: Tensor | None = None) -> Tensor:
    """``y = sx * ŝ * (x8 · cat(weight)ᵀ) + cat(bias)`` over weights held in FP8: the serving GEMM.

    ``input`` is quantized to ``float8_e4m3fn`` on every call (``axis="rows"``:
    one scale per row of the flattened input; ``"tensor"``: one), then one
    scaled GEMM runs over the FP8 parts (:func:`scaled_linear`, in place when
    they are adjacent). ``ŝ`` is each output column's weight ``scale_inv``:
    the parts' ``weight_scale_inv`` entries, ``[1]`` (one scale for the part)
    or ``[N_i]`` (one per row), used in place when the ``[N_i]`` vectors lie
    back to back in one storage, else spread into one vector. What
    :class:`~splitlinear.serving.Fp8ServingLinear` and the backend's fused
    siblings call.

    ``axis="blocks"`` is the block-scaled form (DeepSeek-V3's FP8 inference):
    ``input`` quantized in 1x128 blocks along K (exact scales), each part's
    ``weight_scale_inv`` ``[N_i/128, K/128]`` (one scale per 128x128 block),
    one cuBLASLt block-scaled GEMM (sm_90; the CPU emulates it exactly); K and
    every N_i multiples of 128, ``fast_accum`` and ``input_scale_inv`` unused.

    Args:
        input: ``[..., K]`` float32, float16 or bfloat16; K a multiple of 16.
        weight: ``float8_e4m3fn`` parts ``[N_i, K]``, N_i multiples of 16.
        weight_scale_inv: one float32 tensor per part, ``[1]`` or ``[N_i]``
            (``[N_i/128, K/128]`` with ``axis="blocks"``).
        bias: None, or one ``[N_i]`` tensor per part, of the output dtype.
        axis: ``"rows"``, ``"tensor"`` or ``"blocks"``: the activation scales.
        out_dtype: float32, float16 or bfloat16; default the input's dtype.
        fast_accum: cuBLASLt's fast FP8 accumulation (ignored on the CPU).
        input_scale_inv: None, or float32 ``[1]``/``[M]``: ``input`` is then
            already FP8 (quantized by the caller, e.g. the graph's own ops
            under option ``fp8_activation_quant="graph"``), ``axis`` is not
            used and ``out_dtype`` is required.

    Returns:
        A new ``[..., ΣN_i]`` tensor of ``out_dtype``. No autograd (a backward
        through it raises).

    Raises:
        TypeError, ValueError: ``weight``, ``weight_scale_inv`` or ``bias`` not a list or tuple of
            tensors, or a None entry (as :func:`linear`).
        RuntimeError: naming the argument, for a bad dtype, axis, scale count
            or size, shape or device, or a GPU below sm89.
    """
    op = "fp8_serving_linear"
    return _FP8_SERVING_LINEAR(_tensor(op, "input", input), _parts(op, "weight", weight),
                               _parts(op, "weight_scale_inv", weight_scale_inv, "float32 tensors"),
                               _bias_parts(op, bias), axis, out_dtype, fast_accum, input_scale_inv)


def fp8_quantize(input: Tensor, dtype: torch.dtype, axis: Fp8Axis, *, col_scale: Tensor | None = None,
                 write_out: bool = True, write_transposed: bool = False, pow2_scales: bool = False) -> Fp8Quantized:
    """Quantizes ``input`` to FP8 with one scale per tensor, row, column or 1x128 block.

    ``input`` ``[..., K]`` is flattened to ``[M, K]``. ``amax`` is taken over the
    whole tensor (``axis="tensor"``), each row (``"rows"``), each column
    (``"cols"``) or each block of 128 consecutive elements of a row (``"blocks"``, K a multiple of
    128: the activations and dY of the ``blockwise`` recipe, DeepSeek-V3's 1x128 tiles), then ``scale = fp8_max / amax`` (1 for amax 0, FLT_MAX where it overflows; with
    ``pow2_scales`` rounded down to a power of 2, torchao's ``round_scales_to_power_of_2``), the FP8 value
    is ``saturate(rne(v * scale))`` and ``scale_inv = 1 / scale``, all in
    float32, where ``v = input[m, k]``, or ``input[m, k] * col_scale[k]`` with
    ``col_scale`` (the dgrad of :func:`fp8_linear` folds the weight parts'
    ``scale_inv`` into ``dy``'s columns so). The CPU and CUDA targets give the
    same bytes. On CUDA it never synchronizes with the host (CUDA-graph safe).

    Args:
        input: float32, float16 or bfloat16, at least 1-D.
        dtype: ``torch.float8_e4m3fn`` or ``torch.float8_e5m2``.
        axis: ``"tensor"``, ``"rows"``, ``"cols"`` or ``"blocks"``.
        col_scale: None, or float32 ``[K]`` on ``input``'s device.
        write_out: write the row-major copy ``[M, K]``.
        write_transposed: write the transposed copy ``[K, M]`` (the K-major
            operand Hopper's TN-only FP8 GEMM needs); not with ``"blocks"``.
        pow2_scales: round every scale down to a power of 2 (exact scaling;
            the rowwise recipes' rule).

    Returns:
        :class:`Fp8Quantized` ``(data, data_t, scale_inv)``; copies not asked
        for are ``[0, 0]`` tensors.

    Raises:
        TypeError: ``input`` not a tensor or ``dtype`` not a ``torch.dtype``.
        RuntimeError: naming the argument, for a bad dtype, axis or
            ``col_scale``, or with ``"blocks"`` a K that is not a multiple of 128 or
            ``write_transposed``.
    """
    return Fp8Quantized(*_FP8_QUANTIZE(_tensor("fp8_quantize", "input", input), _dtype("fp8_quantize", dtype),
                                       axis, col_scale, write_out,
                                       write_transposed, pow2_scales))


def fp8_quantize_dual(input: Tensor, dtype: torch.dtype, col_scale: Tensor | None = None,
                      axis: Fp8DualAxis = "tensor", *, pow2_scales: bool = False) -> Fp8QuantizedDual:
    """The two quantizations of one tensor that :func:`fp8_linear` needs (dgrad and wgrad of ``dy``,
    or the rowwise forward's ``x`` and its wgrad copy), from one read.

    ``input`` ``[..., K]`` is flattened to ``[M, K]``. ``data`` is
    ``input * col_scale`` (``input`` without ``col_scale``; dgrad folds the
    weight parts' ``scale_inv`` into ``dy``'s columns so) and ``data_t`` is
    ``inputᵀ`` itself. Axis ``"tensor"``: each with the amax of its values, bit
    for bit ``fp8_quantize(input, dtype, "tensor", col_scale=col_scale)`` and
    ``fp8_quantize(input, dtype, "tensor", write_out=False,
    write_transposed=True)``. Axis ``"rows"``: ``data`` per row and ``data_t``
    per column of ``input``, bit for bit ``fp8_quantize(input, dtype, "rows",
    col_scale=col_scale)`` and ``fp8_quantize(input, dtype, "cols",
    write_out=False, write_transposed=True)``. Axis ``"blocks"`` (no
    ``col_scale``; K a multiple of 128), the block-scaled recipe's operands as
    TransformerEngine's ``Float8BlockScaling`` makes them: ``data`` in 1×128
    blocks along the rows, ``scale_inv`` ``[M, K/128]``, bit for bit
    ``fp8_quantize(input, dtype, "blocks")``; ``data_t`` ``[K, M']`` (M'
    = M rounded up to 128, zero past M) in 1×128 blocks along M,
    ``scale_inv_t`` ``[K, M'/128]``; on CUDA one launch per 128×128 tile. On
    CUDA, axis ``"tensor"`` and
    rows wider than 16384 elements take one amax pass for both maxima and one
    cast writing both copies, so ``input`` is read twice instead of three or
    four times (narrower rows take the two quantizations, faster there on the
    H200). It never synchronizes with the host.

    Args:
        input: float32, float16 or bfloat16, at least 1-D.
        dtype: ``torch.float8_e4m3fn`` or ``torch.float8_e5m2``.
        col_scale: float32 ``[K]`` on ``input``'s device; required for axis
            ``"tensor"``, refused with ``"blocks"``.
        axis: ``"tensor"``, ``"rows"`` or ``"blocks"``.
        pow2_scales: as for :func:`fp8_quantize`, for both copies.

    Returns:
        :class:`Fp8QuantizedDual` ``(data, scale_inv, data_t, scale_inv_t)``.

    Raises:
        TypeError: ``input`` not a tensor or ``dtype`` not a ``torch.dtype``.
        RuntimeError: naming the argument, for a bad dtype, axis or ``col_scale``,
            or with ``"blocks"`` a K that is not a multiple of 128.
    """
    return Fp8QuantizedDual(*_FP8_QUANTIZE_DUAL(_tensor("fp8_quantize_dual", "input", input),
                                                _dtype("fp8_quantize_dual", dtype), col_scale,
                                                axis, pow2_scales))


def fp8_cast_parts(parts: Sequence[Tensor], dtype: torch.dtype, *, write_transposed: bool = False,
                   cache: bool = False, pow2_scales: bool = False) -> Fp8Parts:
    """Quantizes weight parts ``[N_i, K]`` into one FP8 buffer ``[ΣN_i, K]``, each with its own scale.

    Part ``i`` gets ``scale_i = fp8_max / max |parts[i]|`` (the conventions of
    :func:`fp8_quantize`, one scale per part). Two launches on CUDA (the amax
    of every part, then the cast, which also writes the transpose when asked),
    no host synchronization. The buffer's row blocks are adjacent, so
    :func:`scaled_linear` uses them in place.

    Args:
        parts: one or more 2-D tensors of one dtype (float32, float16 or
            bfloat16) and device, with the same K.
        dtype: ``torch.float8_e4m3fn`` or ``torch.float8_e5m2``.
        write_transposed: also write ``[K, ΣN_i]`` (dgrad's operand).
        cache: reuse the result of an earlier ``cache=True`` call on the same
            parts while none of them changed (the same storage, place, shape,
            dtype and version counter; see :func:`fp8_weight_cache_info`), and
            keep this one. The FP8 tensors returned are then shared with the
            cache: do not write to them. Writes that bump no version counter
            (through ``.data`` or the untyped storage) are not seen: call
            :func:`fp8_weight_cache_clear` after them. Every ``torch.optim``
            optimizer step clears the cache (fused optimizers bump no
            version counter). CUDA graph capture and inference tensors
            bypass the cache.
        pow2_scales: round each part's scale down to a power of 2 (as
            :func:`fp8_quantize`); an entry of the cache serves only calls
            with the same rule.

    Returns:
        :class:`Fp8Parts` ``(data, data_t, scale_inv, row_scale_inv)``.

    Raises:
        TypeError, ValueError: ``parts`` not a list or tuple of tensors (as :func:`linear`), or
            ``dtype`` not a ``torch.dtype``.
        RuntimeError: naming the part, for an empty list, a bad dtype, or
            parts of other dtypes, devices or K.
    """
    parts = _parts("fp8_cast_parts", "parts", parts)
    if not parts:  # the dispatcher would only say it has no tensor to dispatch on
        raise RuntimeError("splitlinear.fp8_cast_parts: parts must hold at least one tensor")
    return Fp8Parts(*_FP8_CAST_PARTS(parts, _dtype("fp8_cast_parts", dtype), write_transposed, cache, pow2_scales))


def fp8_quantize_weight_blocks(weight: Sequence[Tensor], dtype: torch.dtype = torch.float8_e4m3fn, *,
                               write_out: bool = True, write_transposed: bool = False,
                               pow2_scales: bool = True) -> Fp8Quantized:
    """Quantizes weight parts ``[N_i, K]`` as one ``[ΣN_i, K]`` weight in 128x128 blocks.

    The weight of the ``blockwise`` recipe (DeepSeek-V3's 128x128 blocks, cuBLASLt's
    ``BLK128x128_32F`` scales): each block gets ``scale = fp8_max / amax`` of its 16384 values (the
    conventions of :func:`fp8_quantize`; ``pow2_scales`` rounds down to a power of 2, as TE's
    ``Float8BlockScaling``). Every ``N_i`` is a multiple of 128, so no block crosses a part and each
    part keeps scales of its own. Parts with unit column stride are read in place (no
    concatenation; others are copied first), one launch per part on CUDA, no host synchronization. A block of ``data_t`` is the transpose of a block of
    ``data`` with the same scale (dgrad's operand, without a second rounding). An inf or NaN makes
    its block's amax non-finite: that block's ``scale_inv`` is inf or NaN and its values 0 or NaN;
    other blocks are unaffected.

    Args:
        weight: one or more 2-D tensors of one dtype (float32, float16 or bfloat16) and device,
            with the same K; every ``N_i`` and K multiples of 128.
        dtype: ``torch.float8_e4m3fn`` or ``torch.float8_e5m2``.
        write_out: write ``[ΣN_i, K]``.
        write_transposed: write ``[K, ΣN_i]``.
        pow2_scales: round every scale down to a power of 2.

    Returns:
        :class:`Fp8Quantized` ``(data, data_t, scale_inv)``, ``scale_inv`` float32
        ``[ΣN_i/128, K/128]``; copies not asked for are ``[0, 0]`` tensors.

    Raises:
        TypeError, ValueError: ``weight`` not a list or tuple of tensors (as :func:`linear`), or
            ``dtype`` not a ``torch.dtype``.
        RuntimeError: naming the part, for an empty list, a bad dtype, sizes that are not
            multiples of 128, or parts of other dtypes, devices or K.
    """
    weight = _parts("fp8_quantize_weight_blocks", "weight", weight)
    if not weight:  # the dispatcher would only say it has no tensor to dispatch on
        raise RuntimeError("splitlinear.fp8_quantize_weight_blocks: weight must hold at least one part")
    return Fp8Quantized(*_FP8_QUANTIZE_WEIGHT_BLOCKS(weight, _dtype("fp8_quantize_weight_blocks", dtype), write_out, write_transposed, pow2_scales))


@torch.compiler.disable  # read when called, not once when traced
def fp8_weight_cache_info() -> dict[str, int]:
    """The FP8 weight cache (``fp8_cast_parts(cache=True)``, ``fp8_linear(cache_weights=True)``,
    backend option ``fp8``): ``entries``, ``bytes`` of FP8 data held, and since the last clear
    ``hits``, ``misses`` and ``bypasses`` (calls that could not use it)."""
    return dict(torch.ops.splitlinear.fp8_weight_cache_info())


@torch.compiler.disable  # traced, the call would be a graph node without inputs or outputs: dropped
def fp8_weight_cache_clear(reset_counts: bool = True) -> None:
    """Drops every entry of the FP8 weight cache (the FP8 copies are freed once nothing else holds
    them) and, with ``reset_counts``, zeroes the counts of :func:`fp8_weight_cache_info`. Inside a
    function compiled with ``torch.compile`` it still runs at every call (a graph break there)."""
    torch.ops.splitlinear.fp8_weight_cache_clear(reset_counts)


@torch.compiler.disable
def _invalidate_after_step(optimizer: torch.optim.Optimizer, args: object, kwargs: object) -> None:
    # PyTorch's fused optimizers (``fused=True``; Hugging Face's default ``adamw_torch_fused``)
    # update parameters without bumping their version counters, which the cache keys on: every
    # optimizer step drops the cache, so the next forward quantizes the new weights. Never traced:
    # in a compiled ``opt.step`` the clear became a graph node without inputs or outputs, which
    # did not run, and the cache went stale. (A compiled torch.optim step breaks its graph anyway.)
    torch.ops.splitlinear.fp8_weight_cache_clear(False)


from torch.optim.optimizer import register_optimizer_step_post_hook  # noqa: E402

register_optimizer_step_post_hook(_invalidate_after_step)


# The autograd formula lives in the op library (C++, ``LinearBackward`` in
# lib/Torch/Autograd.cpp; ``Fp8LinearFunction`` in lib/Torch/Fp8Autograd.cpp):
# a training step pays no Python on its hot path.

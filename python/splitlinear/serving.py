"""FP8 serving weights: each part stored in ``float8_e4m3fn`` with its own scale, packed adjacent.

:func:`convert_to_fp8_serving` replaces the model's eligible ``nn.Linear``
modules by :class:`Fp8ServingLinear`. The weights of each sibling group
(q/k/v, gate/up: :func:`~splitlinear.packing.find_sibling_groups`) are
quantized part by part into one FP8 buffer whose row blocks are the parts, so
a decode step reads half the bytes of bf16 and one scaled GEMM covers the
group:

- eagerly, each module runs :func:`~splitlinear.ops.fp8_serving_linear`: its
  input quantized (per row or per tensor), one scaled GEMM;
- under ``torch.compile(backend="splitlinear")`` the siblings share one
  activation quantization and one scaled GEMM over the adjacent parts
  (:mod:`splitlinear.fx.serving`), each part keeping its own scale.

Weight scales (``weight_scaling``): ``"rowwise"`` (the default) is one scale
per output row (channel-wise, as vLLM's FP8 checkpoints), ``"tensorwise"``
one per part. The GEMM's weight scale is a vector over the output columns
either way; with rowwise scales it is the parts' packed scale vectors in
place, while one scale per part is spread into that vector on every call (a
small copy). Activation scales
(``activation_scaling``): ``"rowwise"`` (one per token, computed per call: the
default, as torchao's and vLLM's dynamic FP8) or ``"tensorwise"``.

``weight_scaling="blockwise"`` with ``activation_scaling="blockwise"`` is
DeepSeek-V3's FP8 inference format: one scale per 128x128 weight block
(``weight_scale_inv`` ``[N/128, K/128]``), the input quantized in 1x128 blocks
per call, one cuBLASLt block-scaled GEMM (sm_90; the CPU emulates it
exactly). Every part's rows are a multiple of 128, so no block crosses a part
and the group's scales stack along the rows.

The FP8 weights are inference weights: no gradient flows through
:class:`Fp8ServingLinear`, and a forward whose input requires a gradient
raises. Saving and loading: ``state_dict`` holds ``weight`` (FP8),
``weight_scale_inv`` (float32) and ``bias`` for each converted module, the
weight flattened (also with ``keep_vars=True``) so that an unconverted model
cannot take it; loading refuses a non-FP8 weight and a weight without its
scales. ``safetensors`` and ``torch.save`` round-trip into a converted model; a
transformers model records the conversion in ``config.quantization_config``
and loads back with ``from_pretrained`` once :mod:`splitlinear.serving` is
imported (:mod:`splitlinear.hf_quantizer`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from ._dtypes import FP8_BLOCK, FP8_HIGH_PRECISION_DTYPES
from ._fp8_record import FP8_SCALINGS, QUANT_METHOD, ConvertedGroup, Fp8Scaling, check_scaling_pair
from ._logging import logger
from .options import check_fp8_filter, fp8_filter_allows
from .packing import checked_groups, find_sibling_groups, install_whole_state_dict_hook

__all__ = ["ConvertedGroup", "Fp8Scaling", "Fp8ServingLinear", "ServingReport", "convert_to_fp8_serving"]

#: The FP8 GEMM's granule: K and every part's rows must be multiples of it.
_GRANULE = 16
_E4M3 = torch.float8_e4m3fn


def _ops() -> Any:
    from . import ops  # loads the op library (torch.ops.splitlinear.*)

    return ops


class Fp8ServingLinear(nn.Module):
    """``y = x · Wᵀ + b`` with ``W`` held in ``float8_e4m3fn``: an inference-only ``nn.Linear``.

    Attributes:
        weight: ``[out_features, in_features]`` ``float8_e4m3fn`` Parameter
            (``requires_grad=False``); a row block of its group's FP8 buffer.
        weight_scale_inv: float32 buffer, ``[1]`` (``weight_scaling="tensorwise"``),
            ``[out_features]`` (``"rowwise"``): ``W ≈ weight * weight_scale_inv``; or
            ``[out_features/128, in_features/128]`` (``"blockwise"``, one per 128x128 block).
        bias: ``[out_features]`` Parameter in the model's dtype, or None.
        activation_scaling: ``"rowwise"``, ``"tensorwise"`` or ``"blockwise"`` (1x128
            blocks; with block weight scales only): how the input is quantized to
            ``float8_e4m3fn`` on every call.

    Forward: ``input`` ``[..., in_features]`` float32, float16 or bfloat16
    (under ``torch.autocast``, the output has the autocast dtype) -> ``[...,
    out_features]`` of that dtype. Raises RuntimeError, naming the module's
    input, when the input requires a gradient (grad mode on): FP8 serving
    weights have no backward; or when it has another dtype (float64 after
    ``model.double()``, or FP8).
    """

    def __init__(self, weight: Tensor, weight_scale_inv: Tensor, bias: Tensor | None,
                 activation_scaling: Fp8Scaling = "rowwise") -> None:
        super().__init__()
        _ops()  # registers torch.ops.splitlinear.fp8_serving_linear
        if weight.dtype != _E4M3 or weight.dim() != 2:
            raise ValueError(f"Fp8ServingLinear: weight must be a 2-D float8_e4m3fn tensor, got "
                             f"{weight.dtype} {list(weight.shape)}")
        if activation_scaling not in FP8_SCALINGS:
            raise ValueError(f"Fp8ServingLinear: activation_scaling must be one of {FP8_SCALINGS}, "
                             f"got {activation_scaling!r}")
        n, k = weight.shape
        if activation_scaling == "blockwise":
            blocks = [n // FP8_BLOCK, k // FP8_BLOCK]
            if (n % FP8_BLOCK or k % FP8_BLOCK or weight_scale_inv.dtype != torch.float32
                    or list(weight_scale_inv.shape) != blocks):
                raise ValueError(f"Fp8ServingLinear: activation_scaling='blockwise' needs a weight whose sizes are "
                                 f"multiples of {FP8_BLOCK} and weight_scale_inv float32 {blocks} (one scale per "
                                 f"128x128 block), got weight {list(weight.shape)}, weight_scale_inv "
                                 f"{weight_scale_inv.dtype} {list(weight_scale_inv.shape)}")
        elif (weight_scale_inv.dtype != torch.float32 or weight_scale_inv.dim() != 1
              or weight_scale_inv.numel() not in (1, n)):
            raise ValueError(f"Fp8ServingLinear: weight_scale_inv must be float32 [1] or [{n}] (block scales "
                             f"need activation_scaling='blockwise'), got {weight_scale_inv.dtype} "
                             f"{list(weight_scale_inv.shape)}")
        self.in_features = int(weight.shape[1])
        self.out_features = int(weight.shape[0])
        self.activation_scaling: Fp8Scaling = activation_scaling
        self.weight = nn.Parameter(weight, requires_grad=False)
        self.register_buffer("weight_scale_inv", weight_scale_inv)
        self.bias = None if bias is None else nn.Parameter(bias, requires_grad=False)
        #: Keys the load_state_dict in progress refused (see _unflatten_weight_entry).
        self._refused_keys: list[str] = []
        self.register_state_dict_post_hook(_flatten_weight_entry)
        self.register_load_state_dict_pre_hook(_unflatten_weight_entry)
        self.register_load_state_dict_post_hook(_unlist_refused_keys)

    def extra_repr(self) -> str:
        scaling = ("blockwise" if self.weight_scale_inv.dim() == 2 else
                   "tensorwise" if self.weight_scale_inv.numel() == 1 else "rowwise")
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, weight_scaling={scaling}, "
                f"activation_scaling={self.activation_scaling}")

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> nn.Module:
        # ``.to(dtype)``/``.half()`` cast floating-point tensors, FP8 ones included; the weight and
        # its scale keep their dtypes (a cast would drop the scale's meaning), only the bias casts.
        weight, scale = self.weight.detach(), self.weight_scale_inv  # aliases of the FP8 storage
        super()._apply(fn, recurse)
        if self.weight.dtype != _E4M3:
            self.weight.data = weight.to(self.weight.device)
        if self.weight_scale_inv.dtype != torch.float32:
            self.weight_scale_inv = scale.to(self.weight_scale_inv.device)
        return self

    def forward(self, input: Tensor) -> Tensor:
        if torch.is_grad_enabled() and input.requires_grad:
            raise RuntimeError("Fp8ServingLinear: the input requires a gradient, but FP8 serving weights have "
                               "no backward (convert_to_fp8_serving is for inference: run under "
                               "torch.no_grad() or torch.inference_mode())")
        if input.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            raise RuntimeError(f"Fp8ServingLinear({self.in_features}, {self.out_features}): the input is already "
                               f"{input.dtype}; this module quantizes its input itself. Code that casts "
                               "activations to `module.weight.dtype` (FP8 here) cannot use it: leave that module "
                               "out with fp8_filter")
        if input.dtype not in (torch.float32, torch.float16, torch.bfloat16):
            raise RuntimeError(f"Fp8ServingLinear({self.in_features}, {self.out_features}): the input is "
                               f"{input.dtype}, but FP8 serving linears take float32, float16 or bfloat16 "
                               "inputs (a model cast with .double() after convert_to_fp8_serving feeds them "
                               "float64: cast it to one of those instead)")
        out_dtype = input.dtype
        if torch.is_autocast_enabled(input.device.type):
            out_dtype = torch.get_autocast_dtype(input.device.type)
        axis = {"rowwise": "rows", "tensorwise": "tensor", "blockwise": "blocks"}[self.activation_scaling]
        bias = None if self.bias is None else [self.bias if self.bias.dtype == out_dtype else self.bias.to(out_dtype)]
        return torch.ops.splitlinear.fp8_serving_linear.default(
            input, [self.weight], [self.weight_scale_inv], bias, axis, out_dtype, False)


def _flatten_weight_entry(module: nn.Module, state_dict: dict[str, Any], prefix: str,
                          local_metadata: dict[str, Any]) -> None:
    """Checkpoints hold the FP8 weight flattened to ``[out_features * in_features]``: a loader that
    does not know the format (a plain ``nn.Linear``, transformers without the ``splitlinear_fp8``
    quantizer) fails with a size mismatch instead of taking FP8 bytes without their scales.

    With ``keep_vars=True`` the entry is a flattened Parameter aliasing the module's weight (not the
    module's Parameter object itself), for the same reason: a 2-D FP8 Parameter loaded into an
    unconverted model with ``strict=False`` would be cast to its dtype silently."""
    key = prefix + "weight"
    value = state_dict.get(key)
    if not isinstance(value, Tensor) or value.dim() != 2:
        return
    if isinstance(value, nn.Parameter):
        state_dict[key] = nn.Parameter(value.detach().reshape(-1), requires_grad=False)
    else:
        state_dict[key] = value.reshape(-1)


def _unflatten_weight_entry(module: nn.Module, state_dict: dict[str, Any], prefix: str,
                            local_metadata: dict[str, Any], strict: bool, missing_keys: list[str],
                            unexpected_keys: list[str], error_msgs: list[str]) -> None:
    """Restores the weight's 2-D shape, and refuses, whatever ``strict``, entries that would give wrong
    numbers: a weight that is not ``float8_e4m3fn`` (an unconverted model's: copying would cast it
    to FP8 without a scale), or an FP8 weight without its ``weight_scale_inv`` or the reverse (the
    new bytes read with the old scales). Refused entries are dropped: the module keeps its tensors."""
    key, scale_key = prefix + "weight", prefix + "weight_scale_inv"
    value = state_dict.get(key)
    problem = None
    if isinstance(value, Tensor) and value.dtype != _E4M3:
        problem = (f"the checkpoint holds a {value.dtype} weight {list(value.shape)}, but this Fp8ServingLinear "
                   f"holds float8_e4m3fn weights with scales (load an unconverted checkpoint before "
                   f"convert_to_fp8_serving)")
    elif (key in state_dict) != (scale_key in state_dict):
        have, lack = (key, scale_key) if key in state_dict else (scale_key, key)
        problem = f"the checkpoint holds {have} but not {lack}; FP8 weights mean nothing without their own scales"
    if problem is not None:
        error_msgs.append(f"Fp8ServingLinear {prefix[:-1] or '<root>'}: {problem}")
        state_dict.pop(key, None)
        state_dict.pop(scale_key, None)
        if isinstance(module, Fp8ServingLinear):
            module._refused_keys = [key, scale_key]
        return
    if isinstance(value, Tensor) and value.dim() == 1 and value.numel() == module.weight.numel():
        state_dict[key] = value.view(module.weight.shape)


def _unlist_refused_keys(module: nn.Module, incompatible_keys: Any) -> None:
    """Drops the entries this module refused from the missing keys: its error message says why they
    were not loaded, and PyTorch puts the missing keys first, so a model-wide list of them (every
    converted module refuses a plain checkpoint) would hide the messages."""
    refused = getattr(module, "_refused_keys", [])
    for key in refused:
        while key in incompatible_keys.missing_keys:
            incompatible_keys.missing_keys.remove(key)
    module._refused_keys = []


@dataclass
class ServingReport:
    """What :func:`convert_to_fp8_serving` did."""

    #: Converted groups (qualified module names, in output order); a lone linear is a group of one.
    converted: list[list[str]] = field(default_factory=list)
    #: Linears left as they were, with the reason.
    skipped: list[tuple[str, str]] = field(default_factory=list)


#: PEFT's adapter containers (``q_proj.lora_A.default``): never converted.
_PEFT_ADAPTER_NAMES = frozenset({"lora_A", "lora_B", "lora_embedding_A", "lora_embedding_B"})


def _always_skipped(fqn: str, keep_fp32: Sequence[str]) -> str | None:
    """Linears whose callers cast activations to their weight's dtype: never converted."""
    parts = fqn.split(".")
    if any(p in _PEFT_ADAPTER_NAMES for p in parts):
        return "a LoRA adapter (PEFT casts its input to the adapter's weight dtype; merge adapters first)"
    if any(k in parts for k in keep_fp32):
        return "kept in float32 by the model (_keep_in_fp32_modules)"
    return None


def _problem(lin: nn.Linear, granule: int) -> str | None:
    """Why ``lin`` cannot hold FP8 serving weights whose sizes must be multiples of ``granule``, or None."""
    w = lin.weight
    if type(lin) is not nn.Linear and not isinstance(lin, nn.Linear):
        return "not an nn.Linear"
    if w.dtype not in FP8_HIGH_PRECISION_DTYPES:
        return f"weight dtype {w.dtype} (FP8 is quantized from float32/float16/bfloat16)"
    if w.shape[1] % granule or w.shape[0] % granule:
        return f"weight {list(w.shape)}: in_features and out_features must be multiples of {granule}"
    if w.device.type not in ("cpu", "cuda", "meta"):
        return f"device {w.device} (FP8 runs on the CPU and CUDA)"
    if type(w) is not nn.Parameter and not isinstance(w, nn.Parameter):
        return "weight is not a Parameter (computed by a hook or parametrization)"
    if torch.nn.utils.parametrize.is_parametrized(lin):
        return "parametrized"
    return None


def quantize_blocks_128x128(w: Tensor) -> tuple[Tensor, Tensor]:
    """``w`` ``[N, K]`` (float32/float16/bfloat16, N and K multiples of 128) in ``float8_e4m3fn``
    128x128 blocks: per block ``scale = 448 / amax`` (1 for an all-zero block, at most float32's
    largest), ``q = e4m3(clamp(w * scale, ±448))`` rounding to nearest even; returns ``(q [N, K],
    scale_inv [N/128, K/128] float32 = 1 / scale)``. The rule of the runtime's block quantization
    (``lib/Torch/Fp8Blockwise.h``), exact float32 scales as DeepSeek-V3's checkpoints hold."""
    n, k = w.shape
    blocks = w.float().reshape(n // FP8_BLOCK, FP8_BLOCK, k // FP8_BLOCK, FP8_BLOCK)
    amax = blocks.abs().amax(dim=(1, 3), keepdim=True)
    scale = (448.0 / amax).clamp(max=torch.finfo(torch.float32).max)
    scale = torch.where(amax == 0, torch.ones_like(scale), scale)
    q = (blocks * scale).clamp(-448.0, 448.0).to(_E4M3).reshape(n, k)
    return q, (1.0 / scale).reshape(n // FP8_BLOCK, k // FP8_BLOCK)


def _quantize_group(linears: Sequence[nn.Linear], weight_scaling: Fp8Scaling) -> tuple[Tensor, Tensor]:
    """The group's FP8 buffer ``[ΣN, K]`` and its scales (``[P]`` per part, ``[ΣN]`` per row, or
    ``[ΣN/128, K/128]`` per block)."""
    weights = [lin.weight.detach() for lin in linears]
    if weights[0].device.type == "meta":  # structure only (from_pretrained fills it)
        rows, k = sum(w.shape[0] for w in weights), weights[0].shape[1]
        shape = ([len(weights)] if weight_scaling == "tensorwise" else [rows] if weight_scaling == "rowwise"
                 else [rows // FP8_BLOCK, k // FP8_BLOCK])
        return (torch.empty(rows, k, dtype=_E4M3, device="meta"),
                torch.ones(shape, dtype=torch.float32, device="meta"))
    ops = _ops()
    with torch.no_grad(), torch.inference_mode(False):
        if weight_scaling == "blockwise":
            return quantize_blocks_128x128(torch.cat(weights))
        if weight_scaling == "tensorwise":
            parts = ops.fp8_cast_parts(weights, _E4M3)
            return parts.data, parts.scale_inv
        q = ops.fp8_quantize(torch.cat(weights), _E4M3, "rows")
        return q.data, q.scale_inv


def _replace(model: nn.Module, names: Sequence[str], linears: Sequence[nn.Linear], weight_scaling: Fp8Scaling,
             activation_scaling: Fp8Scaling) -> None:
    data, scales = _quantize_group(linears, weight_scaling)
    biases = [lin.bias for lin in linears]
    packed_bias = None
    if biases[0] is not None:
        with torch.no_grad(), torch.inference_mode(False):
            packed_bias = torch.cat([b.detach() for b in biases])
    offset = 0
    for i, (name, lin) in enumerate(zip(names, linears)):
        n = lin.weight.shape[0]
        scale = (scales[i:i + 1] if weight_scaling == "tensorwise" else scales[offset:offset + n]
                 if weight_scaling == "rowwise" else scales[offset // FP8_BLOCK:(offset + n) // FP8_BLOCK])
        bias = None if packed_bias is None else packed_bias[offset:offset + n]
        new = Fp8ServingLinear(data[offset:offset + n], scale, bias, activation_scaling)
        install_whole_state_dict_hook(new)
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, new)
        offset += n


#: How errors name convert_to_fp8_serving's fp8_filter.
_FILTER = "convert_to_fp8_serving: fp8_filter"


def convert_to_fp8_serving(model: nn.Module, *, weight_scaling: Fp8Scaling = "rowwise",
                           activation_scaling: Fp8Scaling = "rowwise",
                           fp8_filter: Sequence[str] | Callable[[str], bool] | None = None,
                           groups: Iterable[Sequence[str]] | None = None) -> ServingReport:
    """Stores the model's linears in FP8 for inference, each part with its own scale, siblings packed adjacent.

    Every ``nn.Linear`` the filter lets through becomes an
    :class:`Fp8ServingLinear` (in place, same FQN). The members of each group
    are quantized row by row (``scale_r = 448 / max|W[r, :]|``; or part by part) into
    one ``float8_e4m3fn`` buffer ``[ΣN_i, K]`` whose row blocks they hold, so
    the compiled model runs one FP8 GEMM per group and decode reads half the
    bytes of bf16. Biases stay in their dtype, packed likewise. The high
    precision weights are released (unless referenced elsewhere).

    Args:
        model: the model, modified in place (CPU or CUDA; ``meta`` for
            structure only, as ``from_pretrained`` does before loading).
        weight_scaling: ``"rowwise"`` (one scale per output row),
            ``"tensorwise"`` (one per part) or ``"blockwise"`` (one per 128x128
            block; linears whose sizes are not multiples of 128 are skipped).
        activation_scaling: ``"rowwise"`` (one scale per token, per call),
            ``"tensorwise"``, or ``"blockwise"`` (1x128 blocks; exactly when
            ``weight_scaling`` is ``"blockwise"``).
        fp8_filter: as the backend option of that name: None skips FQNs
            matching ``lm_head``/``*.lm_head``; a sequence of ``fnmatch``
            patterns names the FQNs to skip; a callable ``fn(fqn) -> bool``
            returns True to convert.
        groups: sibling groups (qualified names, in output order); default
            :func:`~splitlinear.packing.find_sibling_groups`. Linears in no
            group are converted alone.

    Returns:
        A :class:`ServingReport`: the converted groups and the skipped linears
        with their reasons (not multiples of 16, or of 128 for blockwise;
        float64, tied to another module's weight, filtered).

    Raises:
        ValueError: a bad ``weight_scaling``/``activation_scaling`` (or only one
            of them ``"blockwise"``), a bad ``fp8_filter``
            (a lone string included), a callable filter that raised, or a name
            in ``groups`` that is not an ``nn.Linear`` submodule, or ``groups`` not a list of
            lists of names (a flat list of names included).
    """
    check_scaling_pair("convert_to_fp8_serving", weight_scaling, activation_scaling)
    granule = FP8_BLOCK if weight_scaling == "blockwise" else _GRANULE
    check_fp8_filter(fp8_filter, _FILTER)
    _check_config_is_free(model)
    modules = dict(model.named_modules())
    group_list = find_sibling_groups(model) if groups is None else _checked_groups(groups, modules, model)
    grouped = {name for g in group_list for name in g}
    group_list += [[name] for name, m in modules.items() if isinstance(m, nn.Linear) and name not in grouped]
    # A weight held by several modules (tied lm_head/embedding) stays as it is.
    holders: dict[int, int] = {}
    for _, p in model.named_parameters(remove_duplicate=False):
        holders[id(p)] = holders.get(id(p), 0) + 1

    keep_fp32 = list(getattr(model, "_keep_in_fp32_modules", None) or [])
    report = ServingReport()
    for group in group_list:
        eligible: list[str] = []
        for name in group:
            lin = modules[name]
            reason = _always_skipped(name, keep_fp32)
            if reason is None and not fp8_filter_allows(fp8_filter, name, _FILTER):
                reason = "fp8_filter skips it"
            reason = reason or _problem(lin, granule)
            if reason is None and holders.get(id(lin.weight), 0) > 1:
                reason = "its weight is tied to another module's (converting would untie them)"
            if reason is not None:
                report.skipped.append((name, reason))
                logger.debug("convert_to_fp8_serving: skipping %s: %s", name, reason)
            else:
                eligible.append(name)
        # Members must agree on K, dtype, device and bias presence to share a buffer; else alone.
        runs = _compatible_runs(eligible, modules)
        if len(runs) > 1:
            logger.warning("convert_to_fp8_serving: %s differ in K, dtype, device or bias presence; each is "
                           "converted alone (one FP8 GEMM each)", eligible)
        for run in runs:
            _replace(model, run, [modules[n] for n in run], weight_scaling, activation_scaling)
            report.converted.append(run)
    _record_in_config(model, report, weight_scaling, activation_scaling)
    return report


def _checked_groups(groups: Iterable[Sequence[str]], modules: dict[str, nn.Module],
                    model: nn.Module) -> list[list[str]]:
    """``groups`` as lists of names, each an ``nn.Linear`` of ``model`` named once in all.

    Raises:
        ValueError: ``groups`` not a list of non-empty lists of names, a name that is no
            ``nn.Linear`` submodule, or a name in two places.
    """
    checked: list[list[str]] = []
    seen: set[str] = set()
    for group in checked_groups(groups, "convert_to_fp8_serving"):
        for name in group:
            if isinstance(modules.get(name), Fp8ServingLinear):
                raise ValueError(f"convert_to_fp8_serving: groups names {name!r}, which is already converted")
            if not isinstance(name, str) or not isinstance(modules.get(name), nn.Linear):
                raise ValueError(f"convert_to_fp8_serving: groups names {name!r}, which is not an nn.Linear "
                                 f"submodule of {type(model).__name__}")
            if name in seen:
                raise ValueError(f"convert_to_fp8_serving: groups names {name!r} twice")
            seen.add(name)
        checked.append(list(group))
    return checked


def _compatible_runs(names: Sequence[str], modules: dict[str, nn.Module]) -> list[list[str]]:
    """``names`` as one group when the members can share a buffer, else one group each."""
    if not names:
        return []
    first = modules[names[0]]
    same = all(
        m.weight.shape[1] == first.weight.shape[1] and m.weight.dtype == first.weight.dtype
        and m.weight.device == first.weight.device and (m.bias is None) == (first.bias is None)
        and (m.bias is None or m.bias.dtype == first.bias.dtype)
        for m in (modules[n] for n in names))
    return [list(names)] if same else [[n] for n in names]


def _existing_record(model: nn.Module) -> Any:
    """The model config's ``quantization_config`` (None without one or without a config)."""
    config = getattr(model, "config", None)
    return None if config is None else getattr(config, "quantization_config", None)


def _check_config_is_free(model: nn.Module) -> None:
    """Raises ValueError when the model's config records another quantization method (its
    checkpoint could not say which linears are ours)."""
    existing = _existing_record(model)
    if existing is None:
        return
    method = existing.get("quant_method") if isinstance(existing, dict) else getattr(existing, "quant_method", None)
    if str(method) != QUANT_METHOD:
        raise ValueError(f"convert_to_fp8_serving: the model's config already records quantization_config with "
                         f"quant_method {method!r}; a model quantized by another method cannot be converted")


def _record_in_config(model: nn.Module, report: ServingReport, weight_scaling: str,
                      activation_scaling: str) -> None:
    """A transformers model: add the conversion's groups to ``config.quantization_config`` (what
    ``save_pretrained`` writes and ``from_pretrained`` replays), keeping earlier conversions'."""
    config = getattr(model, "config", None)
    if not _WITH_TRANSFORMERS or config is None or not hasattr(config, "to_dict"):
        return
    from .hf_quantizer import SplitLinearFp8Config

    existing = _existing_record(model)
    groups = [] if existing is None else SplitLinearFp8Config.from_any(existing).groups
    groups = groups + [ConvertedGroup(tuple(g), weight_scaling, activation_scaling) for g in report.converted]
    config.quantization_config = SplitLinearFp8Config(groups=groups)


def replay_conversion(model: nn.Module, groups: Sequence[ConvertedGroup]) -> None:
    """Converts exactly ``groups`` (as recorded by :func:`convert_to_fp8_serving`), for loading.

    Raises:
        ValueError: a recorded name is not an ``nn.Linear`` of ``model``.
    """
    modules = dict(model.named_modules())
    for group in groups:
        linears = []
        for name in group.modules:
            lin = modules.get(name)
            if not isinstance(lin, nn.Linear):
                raise ValueError(f"splitlinear FP8 checkpoint: {name!r} is not an nn.Linear of "
                                 f"{type(model).__name__} (was the checkpoint saved from another model?)")
            linears.append(lin)
        _replace(model, list(group.modules), linears, group.weight_scaling, group.activation_scaling)


def repack(model: nn.Module, groups: Sequence[ConvertedGroup]) -> None:
    """Makes each group's FP8 weights, scales and biases adjacent again, in fresh aligned
    buffers (after a load that assigned tensors of their own, maybe flattened)."""
    from .packing import pack_tensors

    modules = dict(model.named_modules())
    for group in groups:
        members = [modules[n] for n in group.modules]
        if not all(isinstance(m, Fp8ServingLinear) for m in members):
            continue
        for m in members:  # a loader may hand back Parameters that require a gradient, or flat ones
            if m.weight.dim() == 1:
                m.weight.data = m.weight.data.view(m.out_features, m.in_features)
            m.weight.requires_grad_(False)
            if m.bias is not None:
                m.bias.requires_grad_(False)
        # Also a lone member: a loader's tensor may be a view of a memory-mapped file at an offset
        # the FP8 GEMM would have to copy from on every call (not 16-byte aligned).
        pack_tensors([m.weight for m in members])
        _pack_buffers(members, "weight_scale_inv")
        if members[0].bias is not None:
            pack_tensors([m.bias for m in members])


def _pack_buffers(members: Sequence[Fp8ServingLinear], name: str) -> None:
    tensors = [getattr(m, name) for m in members]
    with torch.no_grad(), torch.inference_mode(False):
        flat = torch.cat([t.detach().reshape(-1) for t in tensors])
    offset = 0
    for m, t in zip(members, tensors):
        n = t.numel()
        m._buffers[name] = flat[offset:offset + n].view(t.shape)
        offset += n


def _register_with_transformers() -> bool:
    """Registers quant_method ``"splitlinear_fp8"`` when transformers is installed."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        return False
    from . import hf_quantizer

    hf_quantizer.register(replay_conversion, repack)
    return True


_WITH_TRANSFORMERS = _register_with_transformers()

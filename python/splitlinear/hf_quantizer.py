"""transformers integration of FP8 serving weights: ``save_pretrained``/``from_pretrained``.

:func:`~splitlinear.serving.convert_to_fp8_serving` records what it converted
in ``model.config.quantization_config`` (a :class:`SplitLinearFp8Config`,
``quant_method = "splitlinear_fp8"``), which ``save_pretrained`` writes into
``config.json`` next to the FP8 weights. Importing :mod:`splitlinear.serving`
registers the config and :class:`SplitLinearFp8Quantizer` with transformers
(:func:`register`, which also hands over serving's loader hooks), so
``from_pretrained`` of such a checkpoint rebuilds the same
:class:`~splitlinear.serving.Fp8ServingLinear` modules before the weights
load (FP8 as stored, no cast), then packs each group adjacent again.

This module does not import :mod:`splitlinear.serving` (serving imports it):
the record both share is :mod:`splitlinear._fp8_record`, and the two steps of
a load that need serving's modules come in through :func:`register`.

Without the import transformers does not know the method: it warns "Unknown
quantization type" and would load the FP8 bytes into bf16 ``nn.Linear``
weights without their scales, so always import :mod:`splitlinear.serving`
before loading such a checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from transformers.quantizers import HfQuantizer
from transformers.quantizers.auto import (
    AUTO_QUANTIZATION_CONFIG_MAPPING,
    AUTO_QUANTIZER_MAPPING,
    register_quantization_config,
    register_quantizer,
)
from transformers.utils.quantization_config import QuantizationConfigMixin

from ._fp8_record import QUANT_METHOD, ConvertedGroup

__all__ = ["LoaderHook", "SplitLinearFp8Config", "SplitLinearFp8Quantizer", "register"]

#: A step of loading a checkpoint: ``(model, recorded groups)``, modifying the model in place.
LoaderHook = Callable[[Any, Sequence[ConvertedGroup]], None]

#: Serving's ``replay_conversion`` (before the weights load) and ``repack`` (after), once registered.
_hooks: dict[str, LoaderHook] = {}


def _hook(name: str) -> LoaderHook:
    hook = _hooks.get(name)
    if hook is None:
        raise RuntimeError(f"{QUANT_METHOD}: no {name} loader hook is registered; import splitlinear.serving "
                           f"before loading a checkpoint converted by convert_to_fp8_serving")
    return hook


class SplitLinearFp8Config(QuantizationConfigMixin):
    """What ``config.json`` records of the conversions: each converted group (FQNs in output
    order) with its weight and activation scalings."""

    def __init__(self, groups: Sequence[ConvertedGroup | dict[str, Any]] = (), **kwargs: Any) -> None:
        self.quant_method = QUANT_METHOD
        self.groups = [g if isinstance(g, ConvertedGroup) else ConvertedGroup.from_dict(g) for g in groups]

    @classmethod
    def from_any(cls, record: Any) -> SplitLinearFp8Config:
        """``record`` (this class, or its dict form as a config may hold it) as this class."""
        if isinstance(record, cls):
            return record
        if isinstance(record, dict):
            return cls(groups=record.get("groups", ()))
        return cls(groups=getattr(record, "groups", ()))

    def to_dict(self) -> dict[str, Any]:
        return {"quant_method": self.quant_method, "groups": [g.to_dict() for g in self.groups]}


class SplitLinearFp8Quantizer(HfQuantizer):
    """Loads a checkpoint saved after :func:`~splitlinear.serving.convert_to_fp8_serving` (pre-quantized only)."""

    requires_calibration = True  # there is no quantize-on-load: convert a loaded model instead

    def validate_environment(self, *args: Any, **kwargs: Any) -> None:
        if not self.pre_quantized:
            raise ValueError("splitlinear_fp8: quantizing while loading is not supported; load the model, "
                             "then call splitlinear.serving.convert_to_fp8_serving(model)")

    def _process_model_before_weight_loading(self, model: Any, **kwargs: Any) -> None:
        _hook("replay")(model, self.quantization_config.groups)

    def _process_model_after_weight_loading(self, model: Any, **kwargs: Any) -> Any:
        _hook("repack")(model, self.quantization_config.groups)
        return model

    def is_serializable(self, safe_serialization: bool = True) -> bool:
        return True

    @property
    def is_trainable(self) -> bool:
        return False

    @property
    def is_compileable(self) -> bool:
        return True


def register(replay: LoaderHook, repack: LoaderHook) -> None:
    """Registers the method with transformers and the two loader steps it runs (idempotent).

    ``replay`` converts the recorded groups of a freshly built model before its weights load;
    ``repack`` makes each group's loaded tensors adjacent again afterwards.
    :mod:`splitlinear.serving` calls this with its ``replay_conversion`` and ``repack``.
    """
    _hooks["replay"] = replay
    _hooks["repack"] = repack
    if QUANT_METHOD not in AUTO_QUANTIZATION_CONFIG_MAPPING:
        register_quantization_config(QUANT_METHOD)(SplitLinearFp8Config)
    if QUANT_METHOD not in AUTO_QUANTIZER_MAPPING:
        register_quantizer(QUANT_METHOD)(SplitLinearFp8Quantizer)

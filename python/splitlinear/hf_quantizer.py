"""transformers integration of FP8 serving weights: ``save_pretrained``/``from_pretrained``.

:func:`~splitlinear.serving.convert_to_fp8_serving` records what it converted
in ``model.config.quantization_config`` (a :class:`SplitLinearFp8Config`,
``quant_method = "splitlinear_fp8"``), which ``save_pretrained`` writes into
``config.json`` next to the FP8 weights. Importing :mod:`splitlinear.serving`
registers the config and :class:`SplitLinearFp8Quantizer` with transformers,
so ``from_pretrained`` of such a checkpoint rebuilds the same
:class:`~splitlinear.serving.Fp8ServingLinear` modules before the weights
load (FP8 as stored, no cast), then packs each group adjacent again.

Without the import transformers does not know the method: it warns "Unknown
quantization type" and would load the FP8 bytes into bf16 ``nn.Linear``
weights without their scales, so always import :mod:`splitlinear.serving`
before loading such a checkpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from transformers.quantizers import HfQuantizer
from transformers.quantizers.auto import (
    AUTO_QUANTIZATION_CONFIG_MAPPING,
    AUTO_QUANTIZER_MAPPING,
    register_quantization_config,
    register_quantizer,
)
from transformers.utils.quantization_config import QuantizationConfigMixin

from . import serving  # noqa: I001  (serving imports this module at its end)

__all__ = ["SplitLinearFp8Config", "SplitLinearFp8Quantizer"]


class SplitLinearFp8Config(QuantizationConfigMixin):
    """What ``config.json`` records of the conversions: each converted group (FQNs in output
    order) with its weight and activation scalings."""

    def __init__(self, groups: Sequence[serving.ConvertedGroup | dict[str, Any]] = (), **kwargs: Any) -> None:
        self.quant_method = serving.QUANT_METHOD
        self.groups = [g if isinstance(g, serving.ConvertedGroup) else serving.ConvertedGroup.from_dict(g)
                       for g in groups]

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
        serving.replay_conversion(model, self.quantization_config.groups)

    def _process_model_after_weight_loading(self, model: Any, **kwargs: Any) -> Any:
        serving.repack(model, self.quantization_config.groups)
        return model

    def is_serializable(self, safe_serialization: bool = True) -> bool:
        return True

    @property
    def is_trainable(self) -> bool:
        return False

    @property
    def is_compileable(self) -> bool:
        return True


def register() -> None:
    """Registers the method with transformers (idempotent)."""
    if serving.QUANT_METHOD not in AUTO_QUANTIZATION_CONFIG_MAPPING:
        register_quantization_config(serving.QUANT_METHOD)(SplitLinearFp8Config)
    if serving.QUANT_METHOD not in AUTO_QUANTIZER_MAPPING:
        register_quantizer(serving.QUANT_METHOD)(SplitLinearFp8Quantizer)


register()

"""What a checkpoint records of an FP8 serving conversion (no torch, no transformers).

:func:`~splitlinear.serving.convert_to_fp8_serving` writes one
:class:`ConvertedGroup` per converted sibling group into a transformers
model's ``config.quantization_config`` (``quant_method = "splitlinear_fp8"``);
:mod:`splitlinear.hf_quantizer` reads them back when a checkpoint loads. Both
import this leaf module, so neither imports the other for the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

__all__ = ["FP8_SCALINGS", "QUANT_METHOD", "ConvertedGroup", "Fp8Scaling", "check_scaling", "check_scaling_pair"]

#: The ``quant_method`` of a transformers config holding a splitlinear FP8 conversion.
QUANT_METHOD = "splitlinear_fp8"

#: How scales are taken: one per tensor (for weights: per part), one per row, or one per block
#: (weights 128x128, activations 1x128: DeepSeek-V3's FP8 inference).
Fp8Scaling = Literal["tensorwise", "rowwise", "blockwise"]
FP8_SCALINGS: tuple[str, ...] = get_args(Fp8Scaling)


def check_scaling(where: str, name: str, value: object) -> None:
    """Raises ValueError naming ``where`` and the argument ``name`` unless ``value`` is one of
    :data:`FP8_SCALINGS`."""
    if value not in FP8_SCALINGS:
        raise ValueError(f"{where}: {name} must be one of {FP8_SCALINGS}, got {value!r}")


def check_scaling_pair(where: str, weight_scaling: object, activation_scaling: object) -> None:
    """Raises ValueError naming ``where`` unless both scalings are valid and ``"blockwise"`` is either
    both or neither: the block-scaled GEMM takes 128x128 weight blocks with 1x128 activation blocks
    only (cuBLASLt's BLK128x128 x VEC128)."""
    check_scaling(where, "weight_scaling", weight_scaling)
    check_scaling(where, "activation_scaling", activation_scaling)
    if (weight_scaling == "blockwise") != (activation_scaling == "blockwise"):
        raise ValueError(f"{where}: weight_scaling={weight_scaling!r} with activation_scaling="
                         f"{activation_scaling!r}; \"blockwise\" must be both (128x128 weight blocks against "
                         f"1x128 activation blocks) or neither")


@dataclass(frozen=True)
class ConvertedGroup:
    """One converted group as a checkpoint records it."""

    modules: tuple[str, ...]  #: qualified names, in output order
    weight_scaling: Fp8Scaling
    activation_scaling: Fp8Scaling

    def to_dict(self) -> dict[str, Any]:
        return {"modules": list(self.modules), "weight_scaling": self.weight_scaling,
                "activation_scaling": self.activation_scaling}

    @staticmethod
    def from_dict(entry: dict[str, Any]) -> ConvertedGroup:
        """Raises ValueError for an entry that is not one (a corrupt or foreign config)."""
        where = f"{QUANT_METHOD} quantization_config"
        try:
            group = ConvertedGroup(tuple(entry["modules"]), entry["weight_scaling"], entry["activation_scaling"])
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{where}: bad group entry {entry!r}") from exc
        check_scaling_pair(where, group.weight_scaling, group.activation_scaling)
        return group

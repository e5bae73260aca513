"""Saving and loading packed models: every common path, names and values as for the unpacked model.

A packed Parameter is a view of a shared buffer. ``state_dict()`` presents it
as a tensor of its own (a DLPack alias, no copy), so checkpoint writers that
refuse partial views (``safetensors.torch.save_model``) work and ``torch.save``
writes each entry, not the buffer under every name. Loading into a packed model
copies in place: it stays packed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import splitlinear

transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")

CONFIG = dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=256)


def _model(seed: int, arch: str = "qwen2") -> torch.nn.Module:
    torch.manual_seed(seed)
    if arch == "llama":
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG))
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**CONFIG))  # q/k/v biases


def _packed(seed: int) -> torch.nn.Module:
    model = _model(seed)
    assert len(splitlinear.pack_parameters(model).packed) == 2 * CONFIG["num_hidden_layers"]
    return model


def _is_packed(model: torch.nn.Module) -> bool:
    attn = model.model.layers[0].self_attn
    return all(
        attn.q_proj.weight.untyped_storage().data_ptr() == p.untyped_storage().data_ptr()
        for p in (attn.k_proj.weight, attn.v_proj.weight)
    )


def _same_values(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert list(a) == list(b)
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0, msg=name)


def _save_safetensors_model(model: torch.nn.Module, path: Path) -> None:
    safetensors_torch.save_model(model, str(path))


def _load_safetensors_model(model: torch.nn.Module, path: Path) -> None:
    safetensors_torch.load_model(model, str(path))


def _save_file(model: torch.nn.Module, path: Path) -> None:
    safetensors_torch.save_file(model.state_dict(), str(path))


def _load_file(model: torch.nn.Module, path: Path) -> None:
    model.load_state_dict(safetensors_torch.load_file(str(path)))


def _torch_save(model: torch.nn.Module, path: Path) -> None:
    torch.save(model.state_dict(), path)


def _torch_load(model: torch.nn.Module, path: Path) -> None:
    model.load_state_dict(torch.load(path, weights_only=True))


PATHS: dict[str, tuple[Callable[[torch.nn.Module, Path], None], Callable[[torch.nn.Module, Path], None]]] = {
    "safetensors.save_model": (_save_safetensors_model, _load_safetensors_model),
    "safetensors.save_file": (_save_file, _load_file),
    "torch.save": (_torch_save, _torch_load),
}


@pytest.mark.parametrize("path_kind", list(PATHS))
def test_save_packed_load_into_packed(tmp_path: Path, path_kind: str) -> None:
    save, load = PATHS[path_kind]
    source = _packed(seed=1)
    unpacked = _model(seed=1)  # the same weights, never packed
    _same_values(source.state_dict(), unpacked.state_dict())
    save(source, tmp_path / "packed")
    save(unpacked, tmp_path / "unpacked")

    target = _packed(seed=2)  # other weights, packed
    load(target, tmp_path / "packed")
    _same_values(target.state_dict(), unpacked.state_dict())
    assert _is_packed(target), "loading copies into the packed storage"

    fresh = _model(seed=3)  # an unpacked model loads the packed model's file
    load(fresh, tmp_path / "packed")
    _same_values(fresh.state_dict(), unpacked.state_dict())
    # The file holds what the unpacked model's file holds (no shared buffer per entry).
    assert (tmp_path / "packed").stat().st_size <= (tmp_path / "unpacked").stat().st_size * 1.01


def test_save_pretrained_from_pretrained(tmp_path: Path) -> None:
    source = _packed(seed=4)
    reference = _model(seed=4)
    source.save_pretrained(tmp_path / "hf")
    loaded = type(source).from_pretrained(tmp_path / "hf")
    _same_values(loaded.state_dict(), reference.state_dict())
    target = _packed(seed=5)
    target.load_state_dict(loaded.state_dict())
    _same_values(target.state_dict(), reference.state_dict())
    assert _is_packed(target)


def test_state_dict_entries_alias_the_parameters() -> None:
    """No copy: entries share memory with the Parameters, as for an unpacked model;
    ``keep_vars=True`` still returns the Parameters themselves."""
    model = _packed(seed=6)
    sd = model.state_dict()
    q = model.model.layers[0].self_attn.q_proj
    entry = sd["model.layers.0.self_attn.q_proj.weight"]
    assert entry.data_ptr() == q.weight.data_ptr()
    assert entry.untyped_storage().nbytes() == entry.nbytes  # a whole-storage tensor
    assert model.state_dict(keep_vars=True)["model.layers.0.self_attn.q_proj.weight"] is q.weight
    copied = copy.deepcopy(sd)
    _same_values(copied, sd)

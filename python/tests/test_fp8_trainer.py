"""The Hugging Face ``Trainer`` recipe: a model compiled with ``backend="splitlinear"`` (FP8) before
it is handed to ``Trainer`` trains, and its losses match the same model trained uncompiled in eager
FP8 (``Block.reference``-style: the compiled FP8 forward is checked against the baseline Trainer)."""

from __future__ import annotations

import copy

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

import splitlinear  # noqa: E402

CONFIG = dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=128, max_position_embeddings=64, attn_implementation="eager")


class _Data(torch.utils.data.Dataset):
    def __init__(self) -> None:
        g = torch.Generator().manual_seed(7)
        self.ids = torch.randint(0, CONFIG["vocab_size"], (16, 24), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def _train(model: torch.nn.Module, tmp_path, name: str) -> list[float]:
    args = transformers.TrainingArguments(output_dir=str(tmp_path / name), per_device_train_batch_size=4,
                                          max_steps=4, learning_rate=1e-3, logging_steps=1, report_to=[],
                                          use_cpu=True, torch_compile=False, save_strategy="no",
                                          gradient_accumulation_steps=2, disable_tqdm=True)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=_Data())
    trainer.train()
    return [h["loss"] for h in trainer.state.log_history if "loss" in h]


def test_compiled_before_trainer_fp8(op, tmp_path) -> None:
    torch.manual_seed(8)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG))
    baseline = copy.deepcopy(model)
    model.forward = torch.compile(model.forward, backend="splitlinear",
                                  options={"fp8": "tensorwise", "fallback": "eager", "fp8_weight_cache": True})
    losses = _train(model, tmp_path, "fp8")
    want = _train(baseline, tmp_path, "base")
    assert len(losses) == len(want) == 4
    for a, b in zip(losses, want):
        assert abs(a - b) / b < 2e-2, (losses, want)
    assert splitlinear.stats()["regions_matched"] >= 2 * 4  # q/k/v, o, gate/up, down per layer
    # Gradient accumulation: two micro-batches per step, one weight cast per step.
    info = op.fp8_weight_cache_info()
    assert info["hits"] > 0, info

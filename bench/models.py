"""Model configurations and shape lists of the benchmarks, written once.

Layer sizes are those of the released models; the benchmarks build a few layers with random
weights (``transformers``), so the numbers depend on the shapes, not on trained values.
"""

from __future__ import annotations

from typing import Any

import torch

#: Llama-3's vocabulary; every model benchmark uses it.
VOCAB = 128256

#: Llama-3-8B's layer sizes.
LLAMA3_8B: dict[str, Any] = dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                                 num_key_value_heads=8, vocab_size=VOCAB, max_position_embeddings=8192,
                                 rope_theta=500000.0)
#: Qwen2-7B's layer sizes (q/k/v with biases), with Llama-3's vocabulary.
QWEN2_7B: dict[str, Any] = dict(hidden_size=3584, intermediate_size=18944, num_attention_heads=28,
                                num_key_value_heads=4, vocab_size=VOCAB, max_position_embeddings=8192,
                                rope_theta=1000000.0)
#: A model small enough for ``--quick`` runs on the CPU.
TINY: dict[str, Any] = dict(hidden_size=64, intermediate_size=160, num_attention_heads=4, num_key_value_heads=2,
                            vocab_size=256, max_position_embeddings=128)

CONFIGS = {"llama3-8b": LLAMA3_8B, "qwen2-7b": QWEN2_7B, "tiny": TINY}
#: Decoder layers the model benchmarks build (the step time scales with it; 2 keeps a run short).
LAYERS = 2

#: The split projections of one layer: (name, K, rows of the parts).
OP_SHAPES: list[tuple[str, int, list[int]]] = [
    ("llama3-8b q/k/v", 4096, [4096, 1024, 1024]),
    ("llama3-8b gate/up", 4096, [14336, 14336]),
    ("qwen2-7b q/k/v", 3584, [3584, 512, 512]),
]
#: Tokens (M) of the op-level sweeps: decode batches to a training step's 4 x 2048.
OP_ROWS = [16, 128, 512, 2048, 8192]
#: The same for ``--quick``.
QUICK_SHAPES: list[tuple[str, int, list[int]]] = [("tiny q/k/v", 64, [64, 32, 32]), ("tiny gate/up", 64, [96, 96])]
QUICK_ROWS = [4, 32]

#: Training step tokens: batch x sequence.
TRAIN_BATCH, TRAIN_SEQ = 4, 2048
#: Decode (batch x 1) and prefill (1 x sequence) shapes of the serving suite.
DECODE_BATCH, PREFILL_SEQ = 16, 2048
#: HF ``generate`` with a static cache: prompt length, new tokens, batches.
GENERATE_PROMPT, GENERATE_NEW_TOKENS, GENERATE_BATCHES = 16, 64, (1, 16)

#: HBM bandwidth of the decode floors where none is measured (``--quick``, on the CPU): the H200's
#: 4.3 TB/s reached by a copy. On a GPU, serve measures its own (``common.copy_bytes_per_s``).
FLOOR_BYTES_PER_S = 4.3e12


def build(name: str, layers: int = LAYERS, device: str = "cuda", dtype: torch.dtype = torch.bfloat16,
          seed: int = 0, **overrides: Any) -> torch.nn.Module:
    """A transformers causal LM with the layer sizes of ``name`` (``llama3-8b``: Llama; ``qwen2-7b``:
    Qwen2; ``tiny``: Llama), ``layers`` decoder layers, random weights, SDPA attention."""
    import transformers

    torch.manual_seed(seed)
    config = {**CONFIGS[name], **overrides}
    config_cls, model_cls = ((transformers.Qwen2Config, transformers.Qwen2ForCausalLM) if name.startswith("qwen2")
                             else (transformers.LlamaConfig, transformers.LlamaForCausalLM))
    cfg = config_cls(**config, num_hidden_layers=layers, attn_implementation="sdpa")
    with torch.device(device):  # initialized where it runs: a CPU init of the 128256-word embeddings is slow
        return model_cls(cfg).to(dtype=dtype)

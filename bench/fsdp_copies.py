"""The copies one FSDP2 unshard runs, stock against ``pack_fsdp_parameters``, on two gloo CPU ranks.

Run ``PYTHONPATH=python python3 bench/fsdp_copies.py``. A Llama (hidden 512,
intermediate 1408, 8 heads, 2 KV heads, float32) is sharded per layer and on
the root twice; one copy gets ``pack_fsdp_parameters``. For each, rank 0 prints
the ATen copy/cat ops that unsharding layer 0 dispatches (the all-gather
copy-in and copy-out), whether q/k/v are then adjacent, and the median of 20
unshard times (wall time of this machine; meaningless on a loaded one).
"""

from __future__ import annotations

import copy
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))

import test_fsdp as T  # noqa: E402  (the test's model builder, sharding and probes)
from _dist import spawn  # noqa: E402


def worker() -> None:
    ref = T._build("llama", torch.float32, hidden_size=512, intermediate_size=1408, num_attention_heads=8,
                   num_key_value_heads=2)
    stock = T._shard(copy.deepcopy(ref))
    packed = T._shard(copy.deepcopy(ref))
    T.pack_fsdp_parameters(packed)
    for name, model in (("stock", stock), ("packed", packed)):
        ops = T._copies_in_unshard(model)
        layer = model.model.layers[0]
        times = []
        for _ in range(20):
            start = time.perf_counter()
            layer.unshard()
            times.append(time.perf_counter() - start)
            layer.reshard()
        layer.unshard()
        attn = layer.self_attn
        adjacent = T._adjacent([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])
        layer.reshard()
        if dist.get_rank() == 0:
            print(f"{name}: copies {ops}, q/k/v adjacent {adjacent}, unshard median "
                  f"{sorted(times)[10] * 1e3:.2f} ms", flush=True)


if __name__ == "__main__":
    spawn(worker, Path(tempfile.mkdtemp()))

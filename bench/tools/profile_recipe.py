"""Kernel profile of one training step of the recipe (see bench_recipe.py):
Inductor against splitlinear, Llama large config, bf16 autocast, gradient
checkpointing, with ``--frozen`` every ``nn.Linear`` weight frozen. Prints the
top CUDA kernels of each and the total CUDA time per step.

Usage: ``python3 bench/profile_recipe.py [--frozen] [--arch llama|qwen2]``
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import torch
from torch.autograd import DeviceType

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recipe import build  # noqa: E402

from splitlinear.packing import pack_parameters  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frozen", action="store_true")
    parser.add_argument("--arch", default="llama")
    parser.add_argument("--rows", type=int, default=25)
    args = parser.parse_args()
    base = build(args.arch, "large", "cuda")
    ids = torch.randint(0, base.config.vocab_size, (4, 512), device="cuda")
    for backend in ("inductor", "splitlinear"):
        model = copy.deepcopy(base)
        if backend == "splitlinear":
            pack_parameters(model)
        if args.frozen:
            for m in model.modules():
                if isinstance(m, torch.nn.Linear):
                    m.weight.requires_grad_(False)
        model.gradient_checkpointing_enable()
        model.train()
        fn = torch.compile(model, backend=backend)

        def step() -> None:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = fn(input_ids=ids, labels=ids, use_cache=False).loss
            loss.backward()
            model.zero_grad(set_to_none=True)

        for _ in range(3):
            step()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA,
                                                torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(3):
                step()
            torch.cuda.synchronize()
        events = prof.key_averages()
        # Device events only (CPU ops also carry their kernels' time).
        total = sum(e.self_device_time_total for e in events if e.device_type != DeviceType.CPU) / 3 / 1e3
        host = sum(e.self_cpu_time_total for e in events) / 3 / 1e3

        def count(*needles: str) -> float:
            return sum(e.count for e in events if any(n in e.key for n in needles)) / 3

        print(f"==== {backend} {'frozen' if args.frozen else 'train'}: CUDA time per step {total:.2f} ms, "
              f"host (self CPU) {host:.2f} ms; per step: launches {count('LaunchKernel'):.0f}, "
              f"synchronizations {count('Synchronize'):.0f}, event/stream waits {count('StreamWaitEvent', 'EventQuery'):.0f}, "
              f"copies {count('Memcpy', 'Memset'):.0f}, device allocations {count('cudaMalloc', 'cudaFree'):.0f}")
        print(events.table(sort_by="self_device_time_total", row_limit=args.rows, max_name_column_width=90))
        print(events.table(sort_by="self_cpu_time_total", row_limit=args.rows, max_name_column_width=90))
        del fn, model
        torch._dynamo.reset()
    return 0


if __name__ == "__main__":
    sys.exit(main())

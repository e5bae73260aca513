"""Real-model decode without CUDA graphs, where host time decides: Inductor against splitlinear.

transformers Llama with Llama-3-8B layer sizes (4 layers, random weights, packed, bf16), a no-cache
forward of 16x1 tokens in the default compile mode. Times are medians of CUDA-event timings of
back-to-back calls (``bench/common.py``), ms; both backends run in this one process, side by side.
With ``--profile`` each backend's step is profiled (torch.profiler, CPU and CUDA) and the top host
ops are printed, so the table says where the host time goes.

Usage (on a GPU machine)::

    python bench/host_decode.py --json out.json [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cuda_time_ms  # noqa: E402


def _model(layers: int) -> torch.nn.Module:
    import transformers

    from splitlinear import pack_parameters

    config = transformers.LlamaConfig(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                                      num_key_value_heads=8, num_hidden_layers=layers, vocab_size=32000,
                                      max_position_embeddings=4096)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to("cuda", torch.bfloat16).eval()
    pack_parameters(model)
    return model


def _profile(name: str, fn: Callable[[], object]) -> dict[str, float]:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
    averages = prof.key_averages()
    print(f"\n-- profile {name} (per 20 steps)\n{averages.table(sort_by='self_cpu_time_total', row_limit=15)}")
    return {"cpu_us_per_step": sum(e.self_cpu_time_total for e in averages) / 20,
            "gpu_us_per_step": sum(e.self_device_time_total for e in averages) / 20}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    model = _model(args.layers)
    ids = torch.randint(0, 32000, (args.batch, 1), device="cuda")
    rows: dict[str, Any] = {}
    outputs = {}
    for backend in ["inductor", "splitlinear"]:
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=backend, dynamic=False)

        def call(fn: Callable[..., Any] = compiled) -> torch.Tensor:
            return fn(input_ids=ids, use_cache=False).logits

        with torch.no_grad():
            outputs[backend] = call().float()
            row: dict[str, Any] = {"ms": cuda_time_ms(call, warmup=5, reps=30, batch=5)}
            if args.profile:
                row["profile"] = _profile(backend, call)
        rows[backend] = row
    ratio = rows["splitlinear"]["ms"] / rows["inductor"]["ms"]
    err = ((outputs["splitlinear"] - outputs["inductor"]).abs().max() /
           outputs["inductor"].abs().max()).item()
    print(f"\nLlama, Llama-3-8B layer sizes, {args.layers} layers, bf16, packed; "
          f"no-cache forward {args.batch}x1, default mode (ms, median)")
    for name, row in rows.items():
        print(f"{name:<12} {row['ms']:8.3f}")
    print(f"splitlinear / Inductor: {ratio:.3f}  (logits max rel. difference {err:.2e})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "layers": args.layers, "batch": args.batch, "rows": rows,
                       "splitlinear_over_inductor": ratio, "logits_max_rel_diff": err}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

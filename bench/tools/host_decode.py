"""Real-model decode without CUDA graphs, where host time decides: Inductor against splitlinear.

transformers Llama with Llama-3-8B layer sizes (4 layers, random weights, packed, bf16), a no-cache
forward of 16x1 tokens in the default compile mode. Times are medians of CUDA-event timings of
back-to-back calls (``bench/common.py``), ms; both backends run in this one process, side by side.
Each row also has the host's own time per forward (``host_ms``: ``time.perf_counter`` around
back-to-back calls after a synchronize, so the GPU never holds the host back; when ``host_ms`` is
close to ``ms`` the forward is host-bound) and the wall-clock time with the guards skipped
(``torch.compiler.set_stance(skip_guard_eval_unsafe=True)``, ``ms_no_guards``). With ``--profile``
each backend's step is profiled (torch.profiler, CPU and CUDA): the top host ops are printed, and
the row counts per forward the kernel launches, host synchronizations, copies and device
allocations, so the table says where the host time goes.

Usage (on a GPU machine)::

    python bench/host_decode.py --json out.json [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
    averages = prof.key_averages()
    print(f"\n-- profile {name} (per 20 steps)\n{averages.table(sort_by='self_cpu_time_total', row_limit=25)}")

    def count(*needles: str) -> float:
        return sum(e.count for e in averages if any(n in e.key for n in needles)) / 20

    return {"cpu_us_per_step": sum(e.self_cpu_time_total for e in averages) / 20,
            # Device events only, as the table's total: CPU ops also carry their kernels' time.
            "gpu_us_per_step": sum(e.self_device_time_total for e in averages
                                   if e.device_type != DeviceType.CPU) / 20,
            "launches_per_step": count("LaunchKernel"),
            "syncs_per_step": count("Synchronize", "cudaStreamWaitEvent", "cudaEventQuery"),
            "memcpy_per_step": count("Memcpy", "Memset"),
            "device_mallocs_per_step": count("cudaMalloc", "cudaFree", "cuMemAlloc", "cuMemFree"),
            "host_ops": {e.key: {"count_per_step": e.count / 20, "self_cpu_us_per_step": e.self_cpu_time_total / 20}
                         for e in averages if e.self_cpu_time_total / 20 > 5.0}}


def _host_ms(fn: Callable[[], object], calls: int = 4, reps: int = 30) -> float:
    """Median host time of one call among ``calls`` back-to-back calls started on an idle GPU
    (ms): what the host spends issuing a forward, whatever the GPU does."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) * 1e3 / calls)
    torch.cuda.synchronize()
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--backends", nargs="+", default=["inductor", "splitlinear"],
                        help="compiled and timed in this order (a name twice times it again)")
    parser.add_argument("--interleave", type=int, default=10,
                        help="then this many rounds timing each compiled model in turn (drift cancels; the"
                             " one-after-the-other times favour the backend timed first)")
    args = parser.parse_args(argv)
    model = _model(args.layers)
    ids = torch.randint(0, 32000, (args.batch, 1), device="cuda")
    rows: dict[str, Any] = {}
    outputs = {}
    calls: dict[str, Callable[[], torch.Tensor]] = {}
    for backend in args.backends:
        key = backend if backend not in rows else f"{backend}#{sum(k.split('#')[0] == backend for k in rows) + 1}"
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=backend, dynamic=False)

        def call(fn: Callable[..., Any] = compiled) -> torch.Tensor:
            return fn(input_ids=ids, use_cache=False).logits

        calls.setdefault(backend, call)
        with torch.no_grad():
            outputs[backend] = call().float()
            row: dict[str, Any] = {"ms": cuda_time_ms(call, warmup=5, reps=30, batch=5),
                                   "host_ms": _host_ms(call)}
            with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
                row["ms_no_guards"] = cuda_time_ms(call, warmup=5, reps=30, batch=5)
                row["host_ms_no_guards"] = _host_ms(call)
            if args.profile:
                row["profile"] = _profile(key, call)
        rows[key] = row
    interleaved: dict[str, list[float]] = {name: [] for name in calls}
    with torch.no_grad():
        for name, call in calls.items():  # compiled again where a reset dropped it
            call()
        for _ in range(args.interleave):
            for name, call in calls.items():
                interleaved[name].append(cuda_time_ms(call, warmup=2, reps=7, batch=5))
    ratio = rows["splitlinear"]["ms"] / rows["inductor"]["ms"]
    err = ((outputs["splitlinear"] - outputs["inductor"]).abs().max() /
           outputs["inductor"].abs().max()).item()
    print(f"\nLlama, Llama-3-8B layer sizes, {args.layers} layers, bf16, packed; "
          f"no-cache forward {args.batch}x1, default mode (ms, median)")
    print(f"{'backend':<14} {'ms':>8} {'host ms':>8} {'no guards':>10} {'host, no guards':>16}")
    for name, row in rows.items():
        print(f"{name:<14} {row['ms']:8.3f} {row['host_ms']:8.3f} {row['ms_no_guards']:10.3f} "
              f"{row['host_ms_no_guards']:16.3f}")
        if "profile" in row:
            print("  per forward: " + ", ".join(f"{k} {v:.1f}" for k, v in row["profile"].items()
                                                if isinstance(v, float)))
    print(f"splitlinear / Inductor: {ratio:.3f}  (logits max rel. difference {err:.2e})")
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "layers": args.layers, "batch": args.batch, "order": args.backends, "rows": rows,
                              "splitlinear_over_inductor": ratio, "logits_max_rel_diff": err}
    if args.interleave:
        medians = {name: statistics.median(ts) for name, ts in interleaved.items()}
        result["interleaved"] = {"rounds": interleaved, "medians": medians,
                                 "splitlinear_over_inductor": medians["splitlinear"] / medians["inductor"]}
        print(f"interleaved ({args.interleave} rounds, median of round medians): " +
              ", ".join(f"{n} {m:.3f}" for n, m in medians.items()) +
              f"; splitlinear / Inductor {result['interleaved']['splitlinear_over_inductor']:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

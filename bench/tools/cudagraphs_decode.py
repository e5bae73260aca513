"""CUDA graphs and the decode floor: splitlinear with ``mode="reduce-overhead"`` against the fused
GEMM (plain and graph-replayed), Inductor and Inductor ``reduce-overhead``, on the decode
microbenchmark rows and on real transformers models (Llama and Qwen2 with Llama-3-8B layer sizes).

Each compile mode runs in a process of its own (after a ``reduce-overhead`` compile, later
default-mode compiles in the same process misbehave: ``../shared/notes/gpu-anchor-numbers.md``);
the driver starts one worker per group and merges their JSON. Times are medians of CUDA-event
timings of back-to-back calls (``bench/common.py``), in ms.

Usage (on a GPU machine)::

    python bench/bench_cudagraphs.py --json out.json [--skip-models]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import cuda_time_ms, graph_replayed, run_workers  # noqa: E402

#: (M, K, parts, training): the decode rows of shared/notes/gpu-anchor-numbers.md.
MICRO_ROWS: list[tuple[int, int, list[int], bool]] = [
    (16, 4096, [4096, 1024, 1024], False),
    (16, 8192, [8192, 8192, 8192], False),
    (64, 8192, [8192, 1024, 1024], False),
    (16, 8192, [8192, 8192, 8192], True),
    (16, 4096, [4096, 1024, 1024], True),
]
#: HBM read bandwidth used for the weight-read floor (H200, measured by the fused GEMM).
FLOOR_BYTES_PER_S = 4.3e12
GROUPS = ["base", "inductor_ro", "splitlinear_ro", "splitlinear_ro_eager"]
DTYPE = torch.bfloat16


class CatLinear(nn.Module):
    """``F.linear(x, cat(W_i), cat(b_i))`` over Parameters that are views of one buffer."""

    def __init__(self, rows: list[int], k: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        w = (torch.randn(sum(rows), k, generator=g) / math.sqrt(k)).to("cuda", DTYPE)
        b = torch.randn(sum(rows), generator=g).to("cuda", DTYPE)
        self.full_weight, self.full_bias = w, b
        self.w = nn.ParameterList([nn.Parameter(v) for v in w.split(rows)])
        self.b = nn.ParameterList([nn.Parameter(v) for v in b.split(rows)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, torch.cat(list(self.w)), torch.cat(list(self.b)))


def _step(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, grad: torch.Tensor | None,
          graphs: bool, params: list[torch.Tensor] = ()) -> Callable[[], object]:
    """One inference call, or one training step (gradients set to None first, as an optimizer
    loop does: graph-owned gradient outputs are overwritten by the next replay)."""
    def run() -> object:
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        if grad is not None:
            x.grad = None
            for p in params:
                p.grad = None
        out = fn(x)
        if grad is not None:
            out.backward(grad)
        return out
    return run


def _via_inductor(model: nn.Module, x: torch.Tensor, grad: torch.Tensor | None,
                  params: list[torch.Tensor]) -> Callable[[], object]:
    """splitlinear as before graphs of op calls alone ran eagerly (``splitlinear.fx.residue``):
    the rewritten graph compiled by Inductor all the same. A backend object of its own, so Dynamo
    does not reuse the ``splitlinear`` row's compiled code."""
    from unittest import mock

    from splitlinear.backend import splitlinear_backend

    step = _step(torch.compile(model, backend=lambda gm, ex: splitlinear_backend(gm, ex)), x, grad, False, params)
    with mock.patch("splitlinear.backend.runs_eagerly", lambda gm, options: False):
        step()  # compiles here
    return step


def micro(group: str) -> list[dict[str, Any]]:
    import splitlinear.ops as ops

    rows_out = []
    for m, k, parts, training in MICRO_ROWS:
        torch._dynamo.reset()
        model = CatLinear(parts, k)
        model.requires_grad_(training)
        x = torch.randn(m, k, device="cuda", dtype=DTYPE).requires_grad_(training)
        grad = torch.randn(m, sum(parts), device="cuda", dtype=DTYPE) if training else None
        row: dict[str, Any] = {"M": m, "K": k, "parts": parts, "mode": "train" if training else "infer"}
        timings: dict[str, Callable[[], object]] = {}
        ps = list(model.parameters())
        ctx = torch.enable_grad() if training else torch.no_grad()
        with ctx:
            if group == "base":
                fused_w = nn.Parameter(model.full_weight.clone(), requires_grad=training)
                fused_b = nn.Parameter(model.full_bias.clone(), requires_grad=training)
                timings["fused"] = _step(lambda t: F.linear(t, fused_w, fused_b), x, grad, False,
                                         [fused_w, fused_b])
                if not training:
                    timings["fused_graph"] = graph_replayed(lambda: F.linear(x, fused_w, fused_b))
                timings["op_alone"] = _step(lambda t: ops.linear(t, list(model.w), list(model.b)), x, grad, False, ps)
                timings["inductor"] = _step(torch.compile(model, backend="inductor"), x, grad, False, ps)
                timings["splitlinear"] = _step(torch.compile(model, backend="splitlinear"), x, grad, False, ps)
                timings["splitlinear_eager"] = _step(torch.compile(
                    model, backend="splitlinear", options={"fallback": "eager"}), x, grad, False, ps)
                timings["splitlinear_via_inductor"] = _via_inductor(model, x, grad, ps)
            elif group == "inductor_ro":
                timings["inductor_ro"] = _step(torch.compile(model, mode="reduce-overhead"), x, grad, True, ps)
            elif group == "splitlinear_ro":
                timings["splitlinear_ro"] = _step(
                    torch.compile(model, backend="splitlinear", mode="reduce-overhead"), x, grad, True, ps)
            elif group == "splitlinear_ro_eager":
                timings["splitlinear_ro_eager"] = _step(torch.compile(
                    model, backend="splitlinear", options={"fallback": "eager", "mode": "reduce-overhead"}),
                    x, grad, True, ps)
            for name, fn in timings.items():
                row[name] = cuda_time_ms(fn, warmup=5, reps=30, batch=10)
            if group == "base" and training and m == 16 and k == 8192:
                _profile_host(timings, row)
        rows_out.append(row)
        print(json.dumps(row), flush=True)
    return rows_out


def _profile_host(timings: dict[str, Callable[[], object]], row: dict[str, Any]) -> None:
    """Where a training step's host time goes (torch.profiler, 20 steps): the top operators by
    self CPU time for the op alone and the compiled paths, printed and kept in ``row``."""
    from torch.profiler import ProfilerActivity, profile

    for name in ["op_alone", "splitlinear", "splitlinear_eager", "splitlinear_via_inductor", "inductor"]:
        fn = timings[name]
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                fn()
            torch.cuda.synchronize()
        averages = prof.key_averages()
        cpu_us = sum(e.self_cpu_time_total for e in averages) / 20
        cuda_us = sum(e.self_device_time_total for e in averages) / 20
        table = averages.table(sort_by="self_cpu_time_total", row_limit=12)
        print(f"\n-- profile {name}: {cpu_us:.0f} us CPU, {cuda_us:.0f} us GPU per step\n{table}", flush=True)
        row[f"profile_{name}"] = {"cpu_us_per_step": cpu_us, "gpu_us_per_step": cuda_us}


def _real_model(arch: str) -> nn.Module:
    """transformers ``arch`` with Llama-3-8B layer sizes, 4 layers, random weights, packed."""
    import transformers

    from splitlinear import pack_parameters

    common = dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                  num_hidden_layers=4, vocab_size=32000, max_position_embeddings=4096)
    torch.manual_seed(0)
    if arch == "llama":
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))
    else:
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common))
    model = model.to("cuda", DTYPE).eval()
    pack_parameters(model)
    return model


def models(group: str) -> list[dict[str, Any]]:
    out = []
    variants = {
        "base": ["eager", "inductor", "splitlinear"],
        "inductor_ro": ["inductor_ro"],
        "splitlinear_ro": ["splitlinear_ro"],
        "splitlinear_ro_eager": [],
    }[group]
    for arch in ["llama", "qwen2"]:
        model = _real_model(arch)
        weight_bytes = sum(p.numel() * p.element_size() for n, p in model.named_parameters()
                           if "embed_tokens" not in n)
        for batch, seq in [(16, 1), (1, 2048)]:
            ids = torch.randint(0, 32000, (batch, seq), device="cuda")
            for variant in variants:
                torch._dynamo.reset()
                fn: Callable[..., Any]
                if variant == "eager":
                    fn = model
                elif variant == "inductor":
                    fn = torch.compile(model, backend="inductor", dynamic=False)
                elif variant == "inductor_ro":
                    fn = torch.compile(model, mode="reduce-overhead", dynamic=False)
                elif variant == "splitlinear":
                    fn = torch.compile(model, backend="splitlinear", dynamic=False)
                else:
                    fn = torch.compile(model, backend="splitlinear", mode="reduce-overhead", dynamic=False)
                graphs = variant.endswith("_ro")

                def call(fn: Callable[..., Any] = fn, graphs: bool = graphs) -> object:
                    if graphs:
                        torch.compiler.cudagraph_mark_step_begin()
                    return fn(input_ids=ids, use_cache=False).logits

                with torch.no_grad():
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    call()
                    torch.cuda.synchronize()
                    first_s = time.perf_counter() - start
                    ms = cuda_time_ms(call, warmup=5, reps=20, batch=5)
                row = {"model": arch, "batch": batch, "seq": seq, "variant": variant, "ms": ms,
                       "tokens_per_s": batch * seq / (ms / 1e3), "first_call_s": first_s,
                       "weight_bytes": weight_bytes,
                       "floor_ms": weight_bytes / FLOOR_BYTES_PER_S * 1e3}
                out.append(row)
                print(json.dumps(row), flush=True)
        del model
        torch.cuda.empty_cache()
    return out


def worker(group: str, path: str, skip_models: bool) -> None:
    result = {"group": group, "micro": micro(group), "models": [] if skip_models else models(group)}
    with open(path, "w") as f:
        json.dump(result, f)


def report(results: list[dict[str, Any]]) -> dict[str, Any]:
    micro_rows: dict[tuple, dict[str, Any]] = {}
    for r in results:
        for row in r["micro"]:
            key = (row["M"], row["K"], tuple(row["parts"]), row["mode"])
            micro_rows.setdefault(key, {}).update(row)
    cols = ["fused", "fused_graph", "inductor", "inductor_ro", "splitlinear", "splitlinear_eager",
            "splitlinear_via_inductor", "splitlinear_ro", "splitlinear_ro_eager", "op_alone"]
    print("\nmicrobenchmark (ms, median; bf16, parts adjacent)")
    print(f"{'M, K, parts, mode':<34}" + "".join(f"{c:>14}" for c in cols) + f"{'RO/fusedG':>11}{'IndRO/RO':>10}")
    table = []
    for key, row in micro_rows.items():
        label = f"{key[0]}, {key[1]}, {list(key[2])} {key[3]}"
        line = f"{label:<34}" + "".join(f"{row.get(c, float('nan')):>14.4f}" for c in cols)
        ro, fg, ind_ro = row.get("splitlinear_ro"), row.get("fused_graph"), row.get("inductor_ro")
        base = fg if fg else row.get("fused")
        if ro and base:
            row["ro_over_fused_graph"] = ro / base
            line += f"{ro / base:>11.2f}"
        if ro and ind_ro:
            row["inductor_ro_over_ro"] = ind_ro / ro
            line += f"{ind_ro / ro:>10.2f}"
        if row.get("splitlinear") and row.get("op_alone"):
            row["splitlinear_over_op_alone"] = row["splitlinear"] / row["op_alone"]
            line += f"  sl/op {row['splitlinear_over_op_alone']:.2f}"
        print(line)
        table.append(row)
    model_rows = [row for r in results for row in r["models"]]
    if model_rows:
        print("\nreal models (4 layers, Llama-3-8B sizes, bf16, packed; ms, tokens/s, first call s)")
        for row in model_rows:
            print(f"{row['model']:<6} {row['batch']:>3}x{row['seq']:<5} {row['variant']:<16} {row['ms']:>8.3f} ms"
                  f" {row['tokens_per_s']:>10.0f} tok/s  first {row['first_call_s']:>6.1f} s"
                  f"  floor {row['floor_ms']:.3f} ms")
    return {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "micro": table,
            "models": model_rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", required=True)
    parser.add_argument("--worker", choices=GROUPS)
    parser.add_argument("--skip-models", action="store_true")
    parser.add_argument("--groups", nargs="+", default=GROUPS, choices=GROUPS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.json, args.skip_models)
        return 0
    results, missing = run_workers(__file__, args.groups, args.json, ["--skip-models"] if args.skip_models else [])
    for line in missing:
        print(line)
    with open(args.json, "w") as f:
        json.dump(report(results), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

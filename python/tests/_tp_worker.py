"""The per-rank body of the tensor-parallel tests (``test_tensor_parallel.py``).

Each rank of a two-process gloo group runs every case and records what it
measured into ``<out>/rank<r>.json``; the tests read those records. One spawn
serves all cases: starting processes and importing torch dominate the time.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn as nn

LAYERS = 1
CONFIG = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=LAYERS, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=64, max_position_embeddings=64, attn_implementation="eager")


def _err(a: torch.Tensor, b: torch.Tensor) -> float:
    """Max error relative to the reference's largest magnitude."""
    a, b = a.detach().double(), b.detach().double()
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item()


def _full(t: torch.Tensor) -> torch.Tensor:
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t


def _hf_plan(config: Any) -> dict[str, Any]:
    """``config.base_model_tp_plan`` as torch ``ColwiseParallel`` / ``RowwiseParallel`` styles."""
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    styles = {"colwise": ColwiseParallel, "rowwise": RowwiseParallel}
    return {name: styles[kind]() for name, kind in config.base_model_tp_plan.items()}


def _placements(t: torch.Tensor | None) -> list[str] | None:
    return None if t is None else [str(p) for p in getattr(t, "placements", ["plain"])]


def _grads(model: nn.Module, reference: nn.Module, stock: nn.Module) -> dict[str, Any]:
    """Max relative error of every gradient against the unsharded reference's, and the
    gradients' placements that differ from the stock (eager, uncompiled) TP model's."""
    ref, stock_params = dict(reference.named_parameters()), dict(stock.named_parameters())
    errors, mismatched = {}, []
    for name, p in model.named_parameters():
        if p.grad is None:
            continue
        errors[name] = _err(_full(p.grad), ref[name].grad)
        if _placements(p.grad) != _placements(stock_params[name].grad):
            mismatched.append(f"{name}: {_placements(p.grad)} vs {_placements(stock_params[name].grad)}")
    return {"grad_err": max(errors.values()), "grads": len(errors), "placement_mismatches": mismatched}


def _run_compiled(model: nn.Module, stock: nn.Module, reference: nn.Module,
                  call: Callable[[nn.Module], torch.Tensor], fallback: str) -> dict[str, Any]:
    """Forward and backward of ``model`` compiled, of the stock TP model and of the unsharded reference."""
    import splitlinear

    compiled = torch.compile(model, backend="splitlinear", fullgraph=True, options={"fallback": fallback})
    splitlinear.reset_stats()
    out = call(compiled)
    forward_stats = splitlinear.stats()
    ref, stock_out = call(reference), call(stock)
    weight = torch.randn(ref.shape, dtype=ref.dtype, generator=torch.Generator().manual_seed(5))
    for y in (ref, stock_out, out):
        (y * weight).sum().backward()
    record = {"out_err": _err(out, ref), "forward": forward_stats, "total": splitlinear.stats()}
    record.update(_grads(model, reference, stock))
    return record


def _hf_case(arch: str, mesh: Any, fallback: str) -> dict[str, Any]:
    import transformers
    from torch.distributed.tensor.parallel import parallelize_module

    from splitlinear import pack_parameters

    torch.manual_seed(7)
    cls, cfg = ((transformers.LlamaForCausalLM, transformers.LlamaConfig) if arch == "llama"
                else (transformers.Qwen2ForCausalLM, transformers.Qwen2Config))
    reference = cls(cfg(**CONFIG)).double()
    model, stock = copy.deepcopy(reference), copy.deepcopy(reference)
    for m in (model, stock):
        parallelize_module(m.model, mesh, _hf_plan(m.config))
    report = pack_parameters(model)
    attn = model.model.layers[0].self_attn
    shards = [getattr(attn, n).weight.to_local() for n in ("q_proj", "k_proj", "v_proj")]
    adjacent = all(b.data_ptr() == a.data_ptr() + a.nbytes for a, b in zip(shards, shards[1:]))
    # state_dict(): each packed shard as a DTensor over a storage of exactly its elements.
    entry = model.state_dict()["model.layers.0.self_attn.k_proj.weight"]
    local = entry.to_local()
    whole = (local.untyped_storage().nbytes() == local.nbytes and tuple(entry.placements) == tuple(
        attn.k_proj.weight.placements) and torch.equal(local, attn.k_proj.weight.to_local()))
    ids = torch.randint(0, CONFIG["vocab_size"], (2, 8), generator=torch.Generator().manual_seed(3))
    record = _run_compiled(model, stock, reference, lambda m: m(ids).logits, fallback)
    record.update(packed=len(report.packed), skipped=len(report.skipped), adjacent=adjacent, state_dict_whole=whole,
                  q_placements=[str(p) for p in attn.q_proj.weight.placements])
    return record


class _Block(nn.Module):
    """Norm, q/k/v siblings mixed elementwise (column-local under TP), an output projection."""

    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(hidden, hidden) for _ in range(3))
        self.o_proj = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        return self.o_proj(torch.tanh(self.q_proj(h)) * self.k_proj(h) + self.v_proj(h))


def _aot_backend(dump_dir: str) -> Callable[..., Any]:
    """The backend's rewrite, then AOTAutograd without Inductor's code generation (``aot_eager``'s
    no-op compilers): the path Inductor takes through DTensor, at a fraction of its compile time."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo.backends.debugging import boxed_nop

    from splitlinear.fx.driver import rewrite_graph
    from splitlinear.stats import bump

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        os.makedirs(dump_dir, exist_ok=True)
        Path(dump_dir, "graph_0_before.txt").write_text(gm.print_readable(print_output=False))
        plan = rewrite_graph(gm, example_inputs)
        bump("regions_matched", len(plan.regions))
        bump("linears_fused", sum(len(r.sites) for r in plan.regions))
        Path(dump_dir, "graph_0_after.txt").write_text(gm.print_readable(print_output=False))
        return aot_autograd(fw_compiler=boxed_nop)(gm, example_inputs)

    return backend


def _block_case(mesh: Any, variant: str, rank: int, world: int, dump_dir: str, fallback: str) -> dict[str, Any]:
    """The block under stock TP styles: ``plain``, ``sequence`` (SequenceParallel norm,
    sequence-sharded activations) or ``dtensor_out`` (``use_local_output=False``)."""
    import splitlinear
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, SequenceParallel,
                                                   parallelize_module)

    torch.manual_seed(11)
    reference = _Block().double()
    model = copy.deepcopy(reference)
    if variant == "sequence":
        col, row = ColwiseParallel(input_layouts=Shard(1)), RowwiseParallel(output_layouts=Shard(1))
        plan = {"norm": SequenceParallel(), "q_proj": col, "k_proj": col, "v_proj": col, "o_proj": row}
    elif variant == "dtensor_out":
        col = ColwiseParallel(use_local_output=False)
        plan = {"q_proj": col, "k_proj": col, "v_proj": col, "o_proj": RowwiseParallel(input_layouts=Shard(-1))}
    else:
        plan = {"q_proj": ColwiseParallel(), "k_proj": ColwiseParallel(), "v_proj": ColwiseParallel(),
                "o_proj": RowwiseParallel()}
    stock = copy.deepcopy(reference)
    parallelize_module(model, mesh, plan)
    parallelize_module(stock, mesh, copy.deepcopy(plan))
    splitlinear.pack_parameters(model, groups=[["q_proj", "k_proj", "v_proj"]])
    x = torch.randn(2, 4, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(13))
    local = (lambda t: t.chunk(world, 1)[rank]) if variant == "sequence" else (lambda t: t)
    backend: Any = "splitlinear"
    if fallback == "aot":
        backend = _aot_backend(dump_dir)
        fallback = "eager"
    compiled = torch.compile(model, backend=backend, fullgraph=True,
                             options=None if backend != "splitlinear" else {"fallback": fallback, "dump_dir": dump_dir})
    splitlinear.reset_stats()
    out = compiled(local(x))
    forward_stats = splitlinear.stats()
    ref, stock_out = reference(x), stock(local(x))
    weight = torch.randn(ref.shape, dtype=ref.dtype, generator=torch.Generator().manual_seed(17))
    (ref * weight).sum().backward()
    for y in (stock_out, out):
        (y * local(weight)).sum().backward()
    record = {"out_err": _err(out, local(ref)), "forward": forward_stats}
    record.update(_grads(model, reference, stock))
    before = after = ""
    for name in sorted(os.listdir(dump_dir)):
        text = Path(dump_dir, name).read_text()
        if name.endswith("_before.txt"):
            before += text
        elif name.endswith("_after.txt"):
            after += text
    calls = re.compile(r"= torch__dynamo_variables_tensor_prim_redistribute(_\d+)?\(")
    record["redistributes"] = [len(calls.findall(before)), len(calls.findall(after))]
    return record


def _fsdp_tp_case(rank: int, world: int) -> dict[str, Any]:
    """2-D: ``parallelize_module`` on the ``tp`` dim, then ``fully_shard`` on ``dp`` (a (1, 2) mesh
    of the two ranks), packed before ``fully_shard``; eager fallback."""
    import splitlinear
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    mesh = init_device_mesh("cpu", (1, world), mesh_dim_names=("dp", "tp"))
    torch.manual_seed(23)
    reference = _Block().double()
    model = copy.deepcopy(reference)
    parallelize_module(model, mesh["tp"], {"q_proj": ColwiseParallel(), "k_proj": ColwiseParallel(),
                                           "v_proj": ColwiseParallel(), "o_proj": RowwiseParallel()})
    report = splitlinear.pack_parameters(model, groups=[["q_proj", "k_proj", "v_proj"]])
    fully_shard(model, mesh=mesh["dp"])
    compiled = torch.compile(model, backend="splitlinear", fullgraph=False, options={"fallback": "eager"})
    x = torch.randn(2, 4, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(29))
    splitlinear.reset_stats()
    out = compiled(x)
    forward_stats = splitlinear.stats()
    ref = reference(x)
    weight = torch.randn(ref.shape, dtype=ref.dtype, generator=torch.Generator().manual_seed(31))
    (ref * weight).sum().backward()
    (out * weight).sum().backward()
    refs = dict(reference.named_parameters())
    grad_err = max(_err(_full(p.grad), refs[n].grad) for n, p in model.named_parameters())
    return {"out_err": _err(out, ref), "grad_err": grad_err, "forward": forward_stats, "packed": len(report.packed),
            "q_placements": [str(p) for p in model.q_proj.weight.placements]}


def _eager_op_cases(mesh: Any) -> dict[str, Any]:
    """The eager op on DTensors: forward, input and part gradients against ``F.linear``."""
    import splitlinear.ops as ops
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    cases = {"replicate": ([Replicate()], [Replicate()], [Replicate()]),
             "sequence": ([Shard(1)], [Replicate()], [Replicate()]),
             "rowwise": ([Shard(2)], [Shard(1)], [Replicate()]),
             "colwise": ([Replicate()], [Shard(0)], [Shard(0)])}
    records: dict[str, Any] = {}
    gen = torch.Generator().manual_seed(19)
    for name, (xp, wp, bp) in cases.items():
        for rows in ((6, 10), (16,)):
            x = torch.randn(2, 4, 8, dtype=torch.float64, generator=gen, requires_grad=True)
            ws = [torch.randn(n, 8, dtype=torch.float64, generator=gen, requires_grad=True) for n in rows]
            bs = [torch.randn(n, dtype=torch.float64, generator=gen, requires_grad=True) for n in rows]
            xd = distribute_tensor(x.detach(), mesh, xp).requires_grad_()
            wd = [distribute_tensor(w.detach(), mesh, wp).requires_grad_() for w in ws]
            bd = [distribute_tensor(b.detach(), mesh, bp).requires_grad_() for b in bs]
            key = f"{name}/{len(rows)}"
            try:
                y = ops.linear(xd, wd, bd)
            except RuntimeError as exc:
                records[key] = {"error": str(exc)}
                continue
            ref = torch.nn.functional.linear(x, torch.cat(ws), torch.cat(bs))
            g = torch.randn(ref.shape, dtype=ref.dtype, generator=gen)
            ref.backward(g)
            y.backward(distribute_tensor(g, mesh, [Replicate() if p.is_partial() else p for p in y.placements]))
            grads = [(xd, x)] + list(zip(wd + bd, ws + bs))
            records[key] = {"placements": [str(p) for p in y.placements], "out_err": _err(y.full_tensor(), ref),
                            "grad_err": max(_err(a.grad.full_tensor(), b.grad) for a, b in grads)}
    return records


def run(rank: int, world: int, store: str, out_dir: str) -> None:
    """``torch.multiprocessing.spawn`` entry: every case on this rank, recorded as JSON."""
    from torch.distributed.device_mesh import init_device_mesh

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        mesh = init_device_mesh("cpu", (world,))
        records: dict[str, Any] = {}
        seconds: dict[str, float] = {}

        def record(name: str, case: Callable[[], dict[str, Any]]) -> None:
            torch._dynamo.reset()
            start = time.perf_counter()
            records[name] = case()
            seconds[name] = round(time.perf_counter() - start, 2)

        for arch in ("llama", "qwen2"):
            record(arch, lambda arch=arch: _hf_case(arch, mesh, "eager"))
        # Through AOTAutograd (as Inductor) on the block only; Inductor's own compile would take minutes.
        for variant, fallback in (("plain", "aot"), ("sequence", "eager"), ("dtensor_out", "eager")):
            dump = os.path.join(out_dir, f"dump-{variant}-{rank}")
            record(f"block/{variant}",
                   lambda v=variant, d=dump, f=fallback: _block_case(mesh, v, rank, world, d, f))
        record("fsdp2_tp", lambda: _fsdp_tp_case(rank, world))
        record("eager_op", lambda: _eager_op_cases(mesh))
        records["seconds"] = seconds
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(records))
    finally:
        dist.destroy_process_group()

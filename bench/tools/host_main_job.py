"""Where the CPU main job's forward time goes: the compiled graph's body against everything around it.

Builds the main job's small Llama or Qwen2 (``examples/real_models.py``, random weights), compiles
copies of it in one process as named by ``--variants`` (``backend/packed/fullgraph``, e.g.
``sl/1/1`` is splitlinear on the packed model with ``fullgraph=True``, as the main job compiles
it), runs one no-grad forward and one training step on each (as the main job does), and times
no-grad prefill (2x16 tokens) and decode (2x1) forwards in this thread's CPU time
(``time.thread_time``: time spent descheduled by other jobs does not count), minimum over
interleaved rounds. For prefill it also times the Inductor-generated ``call`` of each variant's
graph alone (the "body": kernels, extern GEMMs, the op calls, ``assert_size_stride``) and prints
the difference (the "outside": Dynamo's frame hook, cache lookup and guards, the transformed
bytecode, AOTAutograd's runtime wrappers). With ``--skip-guards`` each variant is also timed under
``torch.compiler.set_stance(skip_guard_eval_unsafe=True)``, whose difference is the guards' cost.

To reach the body, ``CompiledFxGraph.__call__`` is wrapped for one forward per variant (to keep
its callable and inputs) and restored; nothing else is changed.

Usage (from the repository root, with the op library built)::

    PYTHONPATH=python python3 bench/host_main_job.py [--arch llama|qwen2] [--rounds 200] [--calls 15]
        [--variants ind/0/1,sl/1/1] [--skip-guards] [--prime]

With ``--prime`` each timed block starts after one untimed forward, as ``examples/real_models.py``
warms up: the variants share the cache of one Dynamo frame, and without it the block's first call
finds the other variant's entries first (docs/Performance.md, 2026-12-03).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from splitlinear import pack_parameters

_SMALL = dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=256, max_position_embeddings=256, attn_implementation="eager")


def _timed(times: dict[tuple[str, str], list[float]], key: tuple[str, str], fn: Callable[[], Any],
           calls: int, prime: bool = False) -> None:
    if prime:  # untimed: moves this variant's cache entry to the front of the shared frame's list
        fn()
    times.setdefault(key, []).append(_per_call_us(fn, calls))


def _compile(eager: torch.nn.Module, spec: str) -> torch.nn.Module:
    """A compiled copy of ``eager`` for ``spec`` = ``backend/packed/fullgraph`` (``ind`` or ``sl``, 0/1, 0/1).

    Raises:
        ValueError: ``spec`` is not of that form.
    """
    parts = spec.split("/")
    if len(parts) != 3 or parts[0] not in ("ind", "sl") or not {parts[1], parts[2]} <= {"0", "1"}:
        raise ValueError(f"--variants: {spec!r} is not backend/packed/fullgraph, e.g. sl/1/1 or ind/0/0")
    backend, packed, fullgraph = parts
    model = copy.deepcopy(eager)
    if packed == "1":
        pack_parameters(model)
    return torch.compile(model, backend="splitlinear" if backend == "sl" else "inductor",
                         fullgraph=fullgraph == "1")


def _capture(models: dict[str, torch.nn.Module],
             ids: torch.Tensor) -> dict[str, tuple[Callable[..., Any], list]]:
    """Each variant's generated ``call`` and the inputs it got for ``ids`` (one no-grad forward each)."""
    import torch._inductor.output_code as output_code

    captured: dict[str, tuple[Callable[..., Any], list]] = {}
    original = output_code.CompiledFxGraph.__call__
    current = ""

    def keep(self: Any, inputs: list) -> Any:
        captured.setdefault(current, (self.current_callable, list(inputs)))
        return original(self, inputs)

    output_code.CompiledFxGraph.__call__ = keep
    try:
        for current, model in models.items():
            model(ids)
    finally:
        output_code.CompiledFxGraph.__call__ = original
    return captured


def _per_call_us(fn: Callable[[], Any], calls: int) -> float:
    start = time.thread_time()
    for _ in range(calls):
        fn()
    return (time.thread_time() - start) / calls * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="llama", choices=["llama", "qwen2"])
    parser.add_argument("--variants", default="ind/0/0,ind/0/1,sl/1/0,sl/1/1")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--calls", type=int, default=15, help="forwards per timed block")
    parser.add_argument("--skip-guards", action="store_true")
    parser.add_argument("--prime", action="store_true",
                        help="one untimed forward before each timed block (cache-entry order; see Performance.md)")
    args = parser.parse_args(argv)
    import transformers

    torch._dynamo.config.recompile_limit = 64
    torch.manual_seed(0)
    if args.arch == "llama":
        eager = transformers.LlamaForCausalLM(transformers.LlamaConfig(**_SMALL))
    else:
        eager = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**_SMALL))
    models = {spec: _compile(eager, spec) for spec in args.variants.split(",")}
    ids = torch.randint(0, _SMALL["vocab_size"], (2, 16))
    shapes = {"prefill": ids, "decode": ids[:, :1].contiguous()}
    for model in models.values():
        with torch.no_grad():
            model(ids)
        model(ids, labels=ids).loss.backward()
    times: dict[tuple[str, str], list[float]] = {}
    with torch.no_grad():
        for model in models.values():
            for inp in shapes.values():
                model(inp)
        bodies = _capture(models, ids)
        for _ in range(args.rounds):
            for shape, inp in shapes.items():
                for spec, model in models.items():
                    _timed(times, (spec, shape), lambda: model(inp), args.calls, args.prime)
                    if shape == "prefill":
                        fn, inputs = bodies[spec]
                        _timed(times, (spec, "body"), lambda: fn(list(inputs)), args.calls)
                    if args.skip_guards:
                        with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
                            _timed(times, (spec, shape + " noguards"), lambda: model(inp), args.calls)
    print(f"{args.arch}: us per forward, thread CPU time, min of {args.rounds} rounds of {args.calls} "
          "(median in brackets; ratio to the first variant)")
    first = next(iter(models))
    for shape in shapes:
        for spec in models:
            full = min(times[(spec, shape)])
            line = (f"{shape:8s} {spec:8s} {full:7.1f} [{statistics.median(times[(spec, shape)]):7.1f}] "
                    f"({full / min(times[(first, shape)]):.3f})")
            if shape == "prefill":
                body = min(times[(spec, "body")])
                line += f"  body {body:7.1f}  outside {full - body:6.1f}"
            if args.skip_guards:
                line += f"  guards {full - min(times[(spec, shape + ' noguards')]):6.1f}"
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

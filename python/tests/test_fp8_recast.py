"""Option ``fp8_weight_cache=False`` (backward recasts W8ᵀ from the weight parts) in training recipes.

Without the weight cache ``fp8_linear`` saves the weight parts, not the forward's transposed
FP8 weight, and casts them again in backward; with it (the default) it keeps the forward's
copy. Casting is deterministic, so every loss and every gradient must be bit for bit the
same either way. Each test trains the same model (a small random transformers Llama, its
siblings packed with ``pack_parameters``, or the ``Block`` of ``_fp8_models``) compiled
with both settings and compares them with ``torch.equal``, then checks the uncached run
against the same recipe in eager PyTorch (no FP8) at FP8 accuracy. Covered: bfloat16
autocast over float32 master weights, activation checkpointing (``torch.utils.checkpoint``
and Hugging Face's ``gradient_checkpointing_enable``), LoRA adapters over frozen base
weights and frozen siblings, gradient accumulation, FSDP2 (two gloo ranks), changing batch
sizes, and an in-place change of a weight between forward and backward (an error, never
stale bytes).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from _dist import cpu_mesh, spawn
from _fp8_models import FP8_REGIONS, Block
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

import splitlinear
from splitlinear.packing import pack_parameters

transformers = pytest.importorskip("transformers")

LAYERS = 1  # one decoder layer: every FP8 path, half the compile time of two
CONFIG: dict[str, Any] = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=LAYERS,
                              num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
                              max_position_embeddings=64, attn_implementation="eager")
#: FP8 regions of one Llama forward: q/k/v, o, gate/up, down per layer (lm_head is skipped).
LLAMA_FP8_REGIONS = 4 * LAYERS
#: W8ᵀ [K, ΣN] of its q/k/v, o, gate/up, down (x8ᵀ is [K, batch * SEQ]: never one of these).
_LLAMA_W8T_SHAPES = {(64, 128), (64, 64), (64, 256), (128, 64)}
SEQ = 20  # M = batch * 20: never a multiple of 16 for odd batches (the padded wgrad path)

#: Relative error bounds against eager PyTorch without FP8: the loss, all gradients together,
#: and each parameter's gradient (e5m2 gradients: up to 2^-3 relative rounding per element;
#: measured up to 5e-3, 0.099 (LoRA A through two FP8 GEMMs; 0.04-0.09 elsewhere) and 0.14).
LOSS_TOL, GRAD_TOL, PARAM_GRAD_TOL = 2e-2, 0.15, 0.3

Model = Callable[..., Any]
#: One micro-batch's loss: (the model, compiled or not, and its input) -> scalar.
LossFn = Callable[[Model, Tensor], Tensor]


def _llama(seed: int, **overrides: Any) -> nn.Module:
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**{**CONFIG, **overrides}))


def _lm_loss(model: Model, ids: Tensor) -> Tensor:
    return model(input_ids=ids, labels=ids, use_cache=False).loss


def _block_loss(model: Model, x: Tensor) -> Tensor:
    out = model(x)
    return out[0].float().square().mean() + out[1].float().mean()


def _ids(seed: int, *shape: int) -> Tensor:
    return torch.randint(0, CONFIG["vocab_size"], shape, generator=torch.Generator().manual_seed(seed))


@dataclasses.dataclass
class Trace:
    """What one training run produced."""

    losses: list[Tensor]  #: every micro-batch's loss
    grads: list[dict[str, Tensor | None]]  #: every parameter's .grad before each optimizer step
    params: dict[str, Tensor]  #: the parameters at the end
    graphs: int  #: graphs the backend compiled
    cache_info: dict[str, int]  #: ``fp8_weight_cache_info()`` at the end (cleared at the start)


def _train(model: nn.Module, steps: Sequence[Sequence[Tensor]], loss_fn: LossFn, *,
           cache: bool | None, recipe: str = "tensorwise", autocast: bool = False,
           fallback: str = "eager", options: dict[str, Any] | None = None) -> Trace:
    """Trains ``model`` (in place) with AdamW, one step per entry of ``steps``, each the
    micro-batches whose gradients accumulate before it. ``cache=None``: eager, no FP8;
    otherwise compiled with ``fp8=recipe`` and ``fp8_weight_cache=cache``."""
    splitlinear.ops.fp8_weight_cache_clear()
    before = splitlinear.stats()["graphs_compiled"]
    fn: Model = model
    if cache is not None:
        torch._dynamo.reset()  # each run compiles (and picks its dynamic dims) on its own
        fn = torch.compile(model, backend="splitlinear",
                           options={"fallback": fallback, "fp8": recipe, "fp8_weight_cache": cache,
                                    **(options or {})})
    amp = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    losses: list[Tensor] = []
    grads: list[dict[str, Tensor | None]] = []
    for micro in steps:
        for batch in micro:
            with amp:
                loss = loss_fn(fn, batch)
            loss.backward()
            losses.append(loss.detach())
        grads.append({n: None if p.grad is None else p.grad.clone() for n, p in model.named_parameters()})
        opt.step()
        opt.zero_grad()
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    return Trace(losses, grads, params, splitlinear.stats()["graphs_compiled"] - before,
                 splitlinear.ops.fp8_weight_cache_info())


def _assert_identical(a: Trace, b: Trace) -> None:
    """Same losses, gradients and final parameters, bit for bit."""
    assert len(a.losses) == len(b.losses) and len(a.grads) == len(b.grads)
    for i, (x, y) in enumerate(zip(a.losses, b.losses)):
        assert torch.equal(x, y), (f"loss {i}", x.item(), y.item())
    for step, (ga, gb) in enumerate(zip(a.grads, b.grads)):
        assert ga.keys() == gb.keys()
        for name, g in ga.items():
            if g is None:
                assert gb[name] is None, (step, name)
                continue
            assert gb[name] is not None and torch.equal(g, gb[name]), (
                step, name, None if gb[name] is None else (g - gb[name]).abs().max().item())
    for name, p in a.params.items():
        assert torch.equal(p, b.params[name]), name


def _rel(a: Tensor, b: Tensor) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def _assert_near(fp8: Trace, ref: Trace) -> None:
    """The first step of an FP8 run against eager PyTorch: losses and gradients at FP8 accuracy,
    the same parameters with and without a gradient, and real (non-zero) gradients."""
    for i in range(len(ref.losses)):
        assert _rel(fp8.losses[i], ref.losses[i]) < LOSS_TOL, (i, fp8.losses[i], ref.losses[i])
    got, want = fp8.grads[0], ref.grads[0]
    names = [n for n, g in want.items() if g is not None]
    assert names, "no parameter got a gradient"
    assert [n for n, g in got.items() if g is not None] == names
    for n in names:
        assert want[n].abs().sum() > 0, n  # a zero gradient would compare equal trivially
        assert _rel(got[n], want[n]) < PARAM_GRAD_TOL, (n, _rel(got[n], want[n]))
    total = _rel(torch.cat([got[n].flatten() for n in names]), torch.cat([want[n].flatten() for n in names]))
    assert total < GRAD_TOL, total


def _check_recipe(base: nn.Module, steps: Sequence[Sequence[Tensor]], loss_fn: LossFn, *,
                  pack: bool = True, prepare: Callable[[nn.Module], None] | None = None,
                  **kwargs: Any) -> tuple[Trace, Trace]:
    """Trains copies of ``base`` with the cache on, off, and eagerly without FP8; asserts the
    first two equal and the second's first step near the third's. Returns (cached, uncached)."""
    runs: dict[bool | None, Trace] = {}
    for cache in (True, False, None):
        model = copy.deepcopy(base)
        if prepare is not None:
            prepare(model)
        if pack and cache is not None:
            assert pack_parameters(model).packed
        # The eager reference is only compared on the first step.
        runs[cache] = _train(model, steps if cache is not None else steps[:1], loss_fn, cache=cache, **kwargs)
    _assert_identical(runs[True], runs[False])
    _assert_near(runs[False], runs[None])
    return runs[True], runs[False]


def _one_step(*batches: Tensor) -> list[list[Tensor]]:
    return [list(batches)]


# (1) bfloat16 autocast over float32 master weights.


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise", "rowwise_with_gw_hp"])
def test_bf16_autocast_fp32_master_weights(op: object, recipe: str) -> None:
    cached, _ = _check_recipe(_llama(1), _one_step(_ids(10, 2, SEQ)), _lm_loss, recipe=recipe, autocast=True)
    # The gradients reach the float32 masters in float32.
    assert all(g is None or g.dtype == torch.float32 for g in cached.grads[0].values())
    assert splitlinear.stats()["scaled_views"] > 0  # the FP8 GEMMs ran


# (2) Activation checkpointing.


class _Checkpointed(nn.Module):
    def __init__(self, block: Block) -> None:
        super().__init__()
        self.block = block

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        return checkpoint(self.block, x, use_reentrant=False)


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise"])
def test_torch_utils_checkpoint(op: object, recipe: str) -> None:
    torch.manual_seed(2)
    base = _Checkpointed(Block(bias=True))
    steps = [[torch.randn(3, 5, 64)], [torch.randn(3, 5, 64)]]
    _check_recipe(base, steps, _block_loss, pack=False, recipe=recipe)
    # Both compiles found every FP8 region inside the checkpointed subgraph.
    assert splitlinear.stats()["regions_matched"] == 2 * (FP8_REGIONS + 1)


def test_hf_gradient_checkpointing_under_autocast(op: object, tmp_path: Path) -> None:
    def enable(model: nn.Module) -> None:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()

    _check_recipe(_llama(3), _one_step(_ids(11, 3, SEQ)), _lm_loss, prepare=enable, autocast=True,
                  options={"dump_dir": str(tmp_path)})
    # q/k/v, o, gate/up, down of each layer, inside the checkpointed layers, in both compiles.
    assert splitlinear.stats()["regions_matched"] == 2 * LLAMA_FP8_REGIONS
    dumps = sorted(tmp_path.glob("graph_*_after.txt"))
    assert len(dumps) == 2 and all("tag_activation_checkpoint" in d.read_text() for d in dumps)


# (3) Frozen weights: LoRA adapters over a frozen base, frozen siblings.


class _LoraLinear(nn.Module):
    """``base(x) + B(A(x))`` with a frozen ``base``; rank 16 (the FP8 GEMM's granule)."""

    def __init__(self, base: nn.Linear, rank: int = 16) -> None:
        super().__init__()
        self.base = base.requires_grad_(False)
        self.lora_A = nn.Linear(base.in_features, rank, bias=False)
        self.lora_B = nn.Linear(rank, base.out_features, bias=False)
        nn.init.normal_(self.lora_B.weight, std=0.05)  # not peft's zeros: a real gradient for A

    def forward(self, x: Tensor) -> Tensor:
        return self.base(x) + self.lora_B(self.lora_A(x))


def _add_lora(model: nn.Module) -> None:
    model.requires_grad_(False)
    for layer in model.model.layers:
        for parent, name in ((layer.self_attn, "q_proj"), (layer.self_attn, "v_proj"), (layer.mlp, "down_proj")):
            setattr(parent, name, _LoraLinear(getattr(parent, name)))


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise_with_gw_hp"])
def test_lora_frozen_base(op: object, recipe: str) -> None:
    base = _llama(4)
    torch.manual_seed(40)
    _add_lora(base)  # before the copies: every run gets the same adapters
    cached, uncached = _check_recipe(base, _one_step(_ids(12, 2, SEQ)), _lm_loss, pack=False, recipe=recipe)
    trainable = {n for n, g in cached.grads[0].items() if g is not None}
    assert trainable and all("lora_" in n for n in trainable), trainable
    # The adapters' A matrices are FP8 parts too, grouped with the frozen bases reading their input.
    assert splitlinear.stats()["regions_matched"] > 2 * LLAMA_FP8_REGIONS


def _freeze_some(model: nn.Module) -> None:
    """Frozen k and up siblings in their groups; frozen embedding and first norm, so that the
    q/k/v group's input needs no gradient; a whole frozen o_proj (dgrad only)."""
    model.model.embed_tokens.requires_grad_(False)
    layer = model.model.layers[0]
    layer.input_layernorm.requires_grad_(False)
    layer.self_attn.k_proj.weight.requires_grad_(False)  # its bias stays trainable
    layer.mlp.up_proj.requires_grad_(False)
    layer.self_attn.o_proj.requires_grad_(False)


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise"])
def test_frozen_siblings(op: object, recipe: str) -> None:
    cached, _ = _check_recipe(_llama(5, attention_bias=True), _one_step(_ids(13, 3, SEQ)), _lm_loss,
                              prepare=_freeze_some, recipe=recipe)
    grads = cached.grads[0]
    assert grads["model.layers.0.self_attn.k_proj.weight"] is None
    assert grads["model.layers.0.self_attn.k_proj.bias"] is not None  # a trainable bias of a frozen part
    assert grads["model.layers.0.self_attn.q_proj.weight"] is not None
    assert grads["model.layers.0.self_attn.o_proj.weight"] is None


# (4) Gradient accumulation.


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise_with_gw_hp"])
def test_grad_accumulation_two_steps(op: object, recipe: str) -> None:
    steps = [[_ids(20 + 3 * s + i, 2, SEQ) for i in range(3)] for s in range(2)]
    base = _llama(6, attention_bias=True)
    cached, uncached = _check_recipe(base, steps, _lm_loss, recipe=recipe)
    assert len(cached.losses) == 6
    # The optimizer steps changed the weights (the second step ran on new ones).
    assert not torch.equal(cached.params["model.layers.0.self_attn.q_proj.weight"],
                           base.model.layers[0].self_attn.q_proj.weight)
    # The cached run cast each group twice per step (W8 in the first forward, W8 and W8ᵀ in the
    # first backward); micro-batches 2 and 3 hit in both. The uncached one never touched the cache.
    info = cached.cache_info
    assert info["misses"] == 2 * 2 * LLAMA_FP8_REGIONS and info["hits"] == 2 * 4 * LLAMA_FP8_REGIONS, info
    info = uncached.cache_info
    assert info["misses"] == 0 and info["hits"] == 0 and info["entries"] == 0, info


# (5) FSDP2 on two CPU ranks (gloo).


def _fsdp_worker() -> None:
    from torch.distributed.fsdp import fully_shard

    from splitlinear.distributed import pack_fsdp_parameters

    rank = dist.get_rank()
    base = _llama(8)
    reference = copy.deepcopy(base)
    for reshard in (True, False):
        # Resharding after forward, the backward's recast reads parameters all-gathered again.
        # The second step runs after a sharded optimizer step. (Dynamo reuses the first
        # setting's graphs for the second: FSDP2's hooks stay outside them.)
        steps = 2
        traces: dict[bool, tuple[list[Tensor], list[dict[str, Tensor]]]] = {}
        for cache in (True, False):
            model = copy.deepcopy(base)
            for layer in model.model.layers:
                fully_shard(layer, mesh=cpu_mesh(), reshard_after_forward=reshard)
            fully_shard(model, mesh=cpu_mesh(), reshard_after_forward=reshard)
            pack_fsdp_parameters(model)
            compiled = torch.compile(model, backend="splitlinear",
                                     options={"fallback": "eager", "fp8": "tensorwise", "fp8_weight_cache": cache})
            opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
            losses: list[Tensor] = []
            grads: list[dict[str, Tensor]] = []
            for step in range(steps):
                ids = _ids(100 + 2 * step + rank, 2, SEQ)  # each rank its own batch
                # Neither run keeps W8ᵀ for backward: it casts from the all-gathered parts (the
                # cached run stores that cast for later micro-batches).
                loss, saved = _saved_fp8_weights(lambda: _lm_loss(compiled, ids), _LLAMA_W8T_SHAPES)
                assert saved == 0, (reshard, cache, saved)
                loss.backward()
                losses.append(loss.detach())
                grads.append({n: p.grad.to_local().clone() for n, p in model.named_parameters()})
                opt.step()
                opt.zero_grad()
            traces[cache] = (losses, grads)
        (l_on, g_on), (l_off, g_off) = traces[True], traces[False]
        for step in range(steps):
            assert torch.equal(l_on[step], l_off[step]), (reshard, step, l_on[step], l_off[step])
            for name, g in g_on[step].items():
                assert torch.equal(g, g_off[step][name]), (reshard, step, name)
        # Sanity: the first loss is the unsharded eager model's (no FP8) at FP8 accuracy.
        want = _lm_loss(reference, _ids(100 + rank, 2, SEQ)).detach()
        assert _rel(l_off[0], want) < LOSS_TOL, (reshard, l_off[0], want)


def test_fsdp2_both_reshard_settings(op: object, tmp_path: Path) -> None:
    spawn(_fsdp_worker, tmp_path)


# (6) Changing batch sizes.


def test_dynamic_batch_sizes(op: object) -> None:
    # Batch 3, then 5 (a recompile with a dynamic batch), then 2 (that graph again).
    steps = [[_ids(40, 3, SEQ)], [_ids(41, 5, SEQ)], [_ids(42, 2, SEQ)]]
    cached, uncached = _check_recipe(_llama(9), steps, _lm_loss)
    assert cached.graphs == uncached.graphs == 2, (cached.graphs, uncached.graphs)


# (7) An in-place change of a weight between forward and backward.


def _saved_fp8_weights(fn: Callable[[], Tensor], shapes: set[tuple[int, int]]) -> tuple[Tensor, int]:
    """``fn()`` and how many float8_e4m3fn tensors of one of ``shapes`` autograd saved meanwhile."""
    found = [0]

    def pack(t: Tensor) -> Tensor:
        if t.dtype == torch.float8_e4m3fn and tuple(t.shape) in shapes:
            found[0] += 1
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, found[0]


@contextlib.contextmanager
def _maybe_autocast(on: bool) -> Iterator[None]:
    with torch.autocast("cpu", dtype=torch.bfloat16) if on else contextlib.nullcontext():
        yield


@dataclasses.dataclass
class _InplaceCase:
    """A model, one input, the loss, the weight changed in place, and W8ᵀ's shapes ([K, ΣN])."""

    model: nn.Module
    batch: Tensor
    loss_fn: LossFn
    weight: Callable[[nn.Module], Tensor]
    w8t_shapes: set[tuple[int, int]]


def _llama_case() -> _InplaceCase:
    return _InplaceCase(_llama(10), _ids(50, 3, SEQ), _lm_loss,
                        lambda m: m.model.layers[0].self_attn.k_proj.weight,  # a row block of packed q/k/v
                        _LLAMA_W8T_SHAPES)


class _Attn(nn.Module):
    """q/k/v siblings, then o: two FP8 groups and little else for Inductor to compile."""

    def __init__(self) -> None:
        super().__init__()
        self.q_proj = nn.Linear(64, 32, bias=False)
        self.k_proj = nn.Linear(64, 16, bias=False)
        self.v_proj = nn.Linear(64, 16, bias=False)
        self.o_proj = nn.Linear(64, 64, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.o_proj(torch.cat([self.q_proj(x), self.k_proj(x), self.v_proj(x)], -1))


def _attn_case() -> _InplaceCase:
    # x needs no gradient: q/k/v's backward reads no weight (keeps no W8ᵀ); o's reads o_proj.
    torch.manual_seed(10)
    return _InplaceCase(_Attn(), torch.randn(3, 5, 64), lambda m, x: m(x).square().mean(),
                        lambda m: m.o_proj.weight, {(64, 64)})


@pytest.mark.parametrize("fallback,autocast,case", [("eager", False, "llama"), ("eager", True, "llama"),
                                                    ("inductor", False, "attn")])
def test_inplace_weight_change_raises(op: object, fallback: str, autocast: bool, case: str) -> None:
    """No W8ᵀ is kept: the backward's cast reads the parts, and a change of one since the forward
    raises, as in eager PyTorch. Regression (found by a new-user test): with the cache on the
    forward's W8ᵀ used to serve the backward, which then silently ran on the old weights."""
    spec = _llama_case() if case == "llama" else _attn_case()
    grads: dict[bool, dict[str, Tensor | None]] = {}
    for cache in (True, False):
        model = copy.deepcopy(spec.model)
        pack_parameters(model)
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="splitlinear",
                                 options={"fallback": fallback, "fp8": "tensorwise", "fp8_weight_cache": cache})

        def forward() -> Tensor:
            with _maybe_autocast(autocast):
                return spec.loss_fn(compiled, spec.batch)

        loss, saved = _saved_fp8_weights(forward, spec.w8t_shapes)
        assert saved == 0, (cache, saved)
        loss.backward()  # unchanged: fine
        grads[cache] = {n: None if p.grad is None else p.grad.clone() for n, p in model.named_parameters()}
        model.zero_grad()

        loss = forward()
        weight = spec.weight(model)
        with torch.no_grad():
            weight.add_(torch.randn_like(weight) * 0.05)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()
    assert any(g is not None for g in grads[True].values())
    for n, g in grads[True].items():
        assert (g is None) == (grads[False][n] is None), n
        assert g is None or torch.equal(g, grads[False][n]), n


def test_optimizer_step_between_forward_and_backward_raises(op: object) -> None:
    """A (non-fused) optimizer step between a forward and its backward bumps the parts' versions."""
    torch.manual_seed(11)
    model = Block()
    compiled = torch.compile(model, backend="splitlinear",
                             options={"fallback": "eager", "fp8": "rowwise", "fp8_weight_cache": False})
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    _block_loss(compiled, torch.randn(4, 64)).backward()
    loss = _block_loss(compiled, torch.randn(4, 64))
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_eager_op_recasts_the_same_bytes(op: object) -> None:
    """The op itself, eagerly, several parts (the dual dy quantization) and one part: identical
    dx and dW with and without the cache, for each recipe."""
    torch.manual_seed(12)
    for recipe in ("tensorwise", "rowwise", "rowwise_with_gw_hp"):
        for scales in ((1.0, 0.01, 3.0), (0.5,)):
            ws = [(torch.randn(16 * (i + 1), 64) * s).requires_grad_() for i, s in enumerate(scales)]
            x = torch.randn(2, 9, 64)
            dy = torch.randn(2, 9, sum(w.shape[0] for w in ws))
            out: dict[bool, tuple[Tensor, ...]] = {}
            for cache in (True, False):
                xi = x.clone().requires_grad_()
                wi = [w.detach().clone().requires_grad_() for w in ws]
                y = splitlinear.ops.fp8_linear(xi, wi, recipe=recipe, cache_weights=cache)
                y.backward(dy)
                out[cache] = (y.detach(), xi.grad, *(w.grad for w in wi))
            for a, b in zip(out[True], out[False]):
                assert torch.equal(a, b), (recipe, len(scales))
            want = F.linear(x, torch.cat(ws))
            assert _rel(out[False][0], want) < 0.1, recipe


def test_param_data_assignment_between_forward_and_backward(op: object) -> None:
    """Regression: ``p.data = t`` after the forward: the backward must use the forward's weights
    (as eager PyTorch and the cached path do) or raise, never silently the new values. It used
    the new ones while the recast saved the Parameters themselves; it saves detached aliases now."""
    torch.manual_seed(14)
    base = Block()
    x = torch.randn(3, 5, 64)
    dx: dict[bool, Tensor | None] = {}
    for cache in (True, False):
        model = copy.deepcopy(base)
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="splitlinear",
                                 options={"fallback": "eager", "fp8": "tensorwise", "fp8_weight_cache": cache})
        xi = x.clone().requires_grad_()
        loss = _block_loss(compiled, xi)
        model.o_proj.weight.data = torch.randn_like(model.o_proj.weight) * 3
        try:
            loss.backward()
            dx[cache] = xi.grad
        except RuntimeError:
            dx[cache] = None  # refusing is fine too
    assert dx[True] is not None
    # What eager PyTorch does: F.linear's saved view keeps the forward's storage.
    w = nn.Parameter(torch.randn(16, 64))
    xe = torch.randn(4, 64, requires_grad=True)
    y = F.linear(xe, w)
    w0 = w.detach().clone()
    w.data = torch.randn(16, 64)
    y.sum().backward()
    torch.testing.assert_close(xe.grad, torch.ones(4, 16) @ w0)
    assert dx[False] is None or torch.equal(dx[False], dx[True])

"""FSDP2 (``fully_shard``) with ``pack_fsdp_parameters``: zero-copy views of packed groups.

Two CPU ranks on gloo, started by each test (``torch.multiprocessing.spawn``).
Tiny transformers Llama and Qwen2 (q/k/v biases) in float64, ``fully_shard``
per decoder layer and on the root, compiled with ``backend="splitlinear"``:
losses, every gradient and the weights after AdamW steps equal the unsharded
eager model's, and the op takes its view path for every packed group.
Eagerly: the sharded side (state dict, DTensor Parameters) is stock FSDP2's, an
unshard runs the same ATen copies as stock (the copy-out writes into the group
buffer), the parts stay adjacent across reshard/unshard cycles (also with
``reshard_after_forward=False``) and train as stock FSDP2 does, and
unsupported settings raise.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
from _dist import cpu_mesh, spawn

import splitlinear
from splitlinear.distributed import pack_fsdp_parameters

transformers = pytest.importorskip("transformers")

LAYERS = 2
CONFIG = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=LAYERS, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=64, max_position_embeddings=64, attn_implementation="eager")
GROUPS = 2 * LAYERS  # q/k/v and gate/up per layer


def _build(arch: str, dtype: torch.dtype = torch.float64, **overrides: Any) -> torch.nn.Module:
    torch.manual_seed(7)
    config_type = transformers.LlamaConfig if arch == "llama" else transformers.Qwen2Config
    model_type = transformers.LlamaForCausalLM if arch == "llama" else transformers.Qwen2ForCausalLM
    return model_type(config_type(**{**CONFIG, **overrides})).to(dtype)


def _shard(model: torch.nn.Module, **kwargs: Any) -> torch.nn.Module:
    from torch.distributed.fsdp import fully_shard

    mesh = cpu_mesh()
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh, **kwargs)
    fully_shard(model, mesh=mesh, **kwargs)
    return model


def _full(t: torch.Tensor) -> torch.Tensor:
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def _assert_close(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    """float64: equal up to rounding, relative to the reference's largest magnitude."""
    error = ((actual - expected).abs().max() / expected.abs().max().clamp_min(1e-300)).item()
    assert error < 1e-10, f"{what}: max error {error:.2e} of its magnitude"


def _batches(step: int) -> list[torch.Tensor]:
    """One batch per rank (every rank draws all of them, for the reference)."""
    generator = torch.Generator().manual_seed(1000 + step)
    return [torch.randint(0, CONFIG["vocab_size"], (2, 12), generator=generator)
            for _ in range(dist.get_world_size())]


def _train_worker(arch: str, reshard_after_forward: bool, order: str = "fully_shard_first") -> None:
    rank = dist.get_rank()
    reference = _build(arch)
    model = copy.deepcopy(reference)
    if order == "pack_first":  # the layout is made again for FSDP2 on the first forward
        assert len(splitlinear.pack_parameters(model).packed) == GROUPS
        _shard(model, reshard_after_forward=reshard_after_forward)
    else:
        _shard(model, reshard_after_forward=reshard_after_forward)
        report = pack_fsdp_parameters(model)
        assert len(report.packed) == GROUPS, report
    caught = warnings.catch_warnings(record=True)
    seen_warnings = caught.__enter__()
    warnings.simplefilter("always")
    # The rest of the graph runs eagerly, so float64 results match eager to rounding.
    compiled = torch.compile(model, backend="splitlinear", options={"fallback": "eager"})
    opts = [torch.optim.AdamW(m.parameters(), lr=1e-2) for m in (reference, model)]
    for step in range(3):
        batches = _batches(step)
        ref_losses = [reference(input_ids=ids, labels=ids, use_cache=False).loss for ids in batches]
        torch.stack(ref_losses).mean().backward()  # FSDP2 averages the ranks' gradients
        splitlinear.reset_stats()
        loss = compiled(input_ids=batches[rank], labels=batches[rank], use_cache=False).loss
        loss.backward()
        stats = splitlinear.stats()
        torch.testing.assert_close(loss, ref_losses[rank].detach(), rtol=1e-12, atol=0)
        for (name, p_ref), p in zip(reference.named_parameters(), model.parameters()):
            _assert_close(_full(p.grad), p_ref.grad, f"step {step} {name}.grad")
        for opt in opts:
            opt.step()
            opt.zero_grad()
        assert stats["views"] == GROUPS and stats["cats"] == 0 and stats["per_part_gemms"] == 0, stats
        assert stats["dgrad_views"] == GROUPS and stats["dgrad_cats"] == 0, stats
    for (name, p_ref), p in zip(reference.named_parameters(), model.parameters()):
        _assert_close(_full(p.detach()), p_ref.detach(), f"{name} after 3 steps")
    caught.__exit__(None, None, None)
    assert not [str(w.message) for w in seen_warnings if "splitlinear" in str(w.message)]


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_compiled_training_matches_eager_with_views(op: object, tmp_path: Path, arch: str) -> None:
    spawn(_train_worker, tmp_path, arch, True)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_pack_parameters_before_fully_shard_takes_views(op: object, tmp_path: Path, arch: str) -> None:
    """The natural order, ``pack_parameters`` → ``fully_shard`` → ``torch.compile``: the groups
    recorded by ``pack_parameters`` are laid out for FSDP2 on the first forward, so every region
    takes its view (no copy, no per-part GEMM) and training matches unsharded eager."""
    spawn(_train_worker, tmp_path, arch, True, "pack_first")


def _root_unit_worker() -> None:
    """A group in the root's own unit has unsharded before the first-forward hook runs: it is
    named in a warning (once) and runs as stock FSDP2 (correct, not zero-copy)."""
    from torch.distributed.fsdp import fully_shard

    reference = _build("llama")
    model = copy.deepcopy(reference)
    splitlinear.pack_parameters(model)
    fully_shard(model.model.layers[1], mesh=cpu_mesh())
    fully_shard(model, mesh=cpu_mesh())  # layer 0 is in the root's unit
    ids = _batches(0)[dist.get_rank()]
    with pytest.warns(UserWarning, match=r"packed group \['model.layers.0.self_attn.q_proj'.*root's own"):
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
    torch.testing.assert_close(loss, reference(input_ids=ids, labels=ids, use_cache=False).loss,
                               rtol=1e-12, atol=0)
    layer = model.model.layers[1]
    layer.unshard()
    assert all(map(_adjacent, _parts(layer)))  # layer 1's own unit was laid out
    layer.reshard()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model(input_ids=ids, labels=ids, use_cache=False)  # warned once


def test_group_in_root_unit_is_named_in_a_warning(tmp_path: Path) -> None:
    spawn(_root_unit_worker, tmp_path)


def _parts(layer: torch.nn.Module) -> list[list[torch.Tensor]]:
    """The unsharded q/k/v weights, q/k/v biases (if any) and gate/up weights of a decoder layer."""
    attn, mlp = layer.self_attn, layer.mlp
    groups = [[attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight],
              [mlp.gate_proj.weight, mlp.up_proj.weight]]
    if attn.q_proj.bias is not None:
        groups.append([attn.q_proj.bias, attn.k_proj.bias, attn.v_proj.bias])
    return groups


def _adjacent(parts: list[torch.Tensor]) -> bool:
    storage = parts[0].untyped_storage()
    return all(p.untyped_storage()._cdata == storage._cdata for p in parts) and all(
        a.data_ptr() + a.nbytes == b.data_ptr() for a, b in zip(parts, parts[1:]))


def _copies_in_unshard(model: torch.nn.Module) -> list[str]:
    """The ATen copy ops one layer's unshard runs (all-gather copy-in and copy-out)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[str] = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if "copy" in func.__name__ or "cat" in func.__name__:
                seen.append(func.__name__)
            return func(*args, **(kwargs or {}))

    layer = model.model.layers[0]
    with Record():
        layer.unshard()
    layer.reshard()
    return seen


def _layout_worker(arch: str) -> None:
    reference = _build(arch)
    stock = _shard(copy.deepcopy(reference))
    model = _shard(copy.deepcopy(reference))
    stock_state = {k: _full(v).clone() for k, v in stock.state_dict().items()}
    pack_fsdp_parameters(model)
    # The sharded side is FSDP2's: same keys and values, the optimizer sees DTensor shards.
    state = model.state_dict()
    assert list(state) == list(stock_state)
    for key, value in state.items():
        assert torch.equal(_full(value), stock_state[key]), key
    assert all(type(p).__name__ == "DTensor" for p in model.parameters())
    # The copy-out writes into the group buffer: the same copies as stock FSDP2, no extra one.
    assert _copies_in_unshard(model) == _copies_in_unshard(stock)

    # Several steps, side by side with stock FSDP2 (eager, so the losses must be identical):
    # every unshard re-allocates the freed storage, and the parts must be adjacent every
    # time, hold the gathered values, and be freed after backward. reshard_after_forward=False
    # keeps the parameters unsharded from the forward to the end of the backward.
    kept = _shard(copy.deepcopy(reference), reshard_after_forward=False)
    pack_fsdp_parameters(kept)
    seen: list[bool] = []
    layer = model.model.layers[0]
    fsdp_param = next(p for p in layer._get_fsdp_state()._fsdp_param_group.fsdp_params
                      if p._module_info.module is layer.self_attn.q_proj and p._module_info.param_name == "weight")
    layout = fsdp_param._splitlinear_layout[0]
    for m in (model, kept):
        m.model.layers[0].register_forward_pre_hook(lambda mod, args: seen.append(all(map(_adjacent, _parts(mod)))))
    models = (stock, model, kept)
    opts = [torch.optim.SGD(m.parameters(), lr=0.5) for m in models]
    rank = dist.get_rank()
    for step in range(3):
        ids = _batches(step)[rank]
        losses = []
        for m, opt in zip(models, opts):
            loss = m(input_ids=ids, labels=ids, use_cache=False).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.detach())
        for loss in losses[1:]:  # float64; BLAS may round differently for a differently aligned part
            torch.testing.assert_close(loss, losses[0], rtol=1e-12, atol=0)
        assert layout.buffer.untyped_storage().size() == 0, "the group buffer was not freed after backward"
    assert seen == [True] * 6, seen
    # The unsharded values are the (updated) sharded Parameters, gathered.
    attn = layer.self_attn
    full = {k: _full(v) for k, v in model.state_dict().items()}
    layer.unshard()
    for name in ("q_proj", "k_proj", "v_proj"):
        key = f"model.layers.0.self_attn.{name}.weight"
        assert torch.equal(getattr(attn, name).weight.detach(), full[key]), key
    assert all(map(_adjacent, _parts(layer)))
    layer.reshard()
    # load_state_dict goes to the sharded Parameters; the layout survives it.
    model.load_state_dict(stock.state_dict())
    layer.unshard()
    assert all(map(_adjacent, _parts(layer)))
    assert torch.equal(attn.v_proj.weight.detach(), _full(stock.state_dict()["model.layers.0.self_attn.v_proj.weight"]))
    layer.reshard()
    # MixedPrecisionPolicy(param_dtype): the group buffer has the all-gather dtype.
    from torch.distributed.fsdp import MixedPrecisionPolicy

    mixed = _shard(copy.deepcopy(reference), mp_policy=MixedPrecisionPolicy(param_dtype=torch.float32))
    pack_fsdp_parameters(mixed)
    ids = _batches(0)[rank]
    mixed(input_ids=ids, labels=ids, use_cache=False).loss.backward()
    mixed_layer = mixed.model.layers[0]
    mixed_layer.unshard()
    assert all(map(_adjacent, _parts(mixed_layer)))
    assert mixed_layer.self_attn.k_proj.weight.dtype == torch.float32
    mixed_layer.reshard()
    assert attn.q_proj.weight.to_local().numel() * dist.get_world_size() == full[
        "model.layers.0.self_attn.q_proj.weight"].numel()


@pytest.mark.parametrize("arch", ["qwen2"])
def test_layout_state_dict_and_reshard_steps(op: object, tmp_path: Path, arch: str) -> None:
    spawn(_layout_worker, tmp_path, arch)


def _raises(match: str, make: Callable[[], torch.nn.Module], **kwargs: Any) -> None:
    model = make()
    with pytest.raises(ValueError, match=match):
        pack_fsdp_parameters(model, **kwargs)


def _errors_worker() -> None:
    from torch.distributed.fsdp import CPUOffloadPolicy, fully_shard

    def split_units() -> torch.nn.Module:
        model = _build("llama")
        fully_shard(model.model.layers[1].self_attn.q_proj, mesh=cpu_mesh())
        return _shard(model)

    def mixed_dtypes() -> torch.nn.Module:
        model = _build("llama")
        model.model.layers[0].self_attn.k_proj.float()
        return _shard(model)

    def after_forward() -> torch.nn.Module:
        model = _shard(_build("llama"))
        ids = _batches(0)[0]
        model(input_ids=ids, use_cache=False)
        return model

    def packed_twice() -> torch.nn.Module:
        model = _shard(_build("llama"))
        pack_fsdp_parameters(model)
        return model

    _raises("spans 2 fully_shard units", split_units)
    _raises("several dtypes", mixed_dtypes)
    _raises("already unsharded", after_forward)
    _raises("already in a packed group", packed_twice)
    _raises("offloads to CPU", lambda: _shard(_build("llama"), offload_policy=CPUOffloadPolicy(pin_memory=False)))
    # reshard_after_forward=<int> needs 4 ranks (on 2, 1 and 2 mean False and True).
    # head_dim 3: k/v have 3 rows, which 2 ranks cannot split evenly.
    _raises("not divisible by the world size",
            lambda: _shard(_build("llama", hidden_size=12, num_attention_heads=4, num_key_value_heads=1,
                                  intermediate_size=16)))
    _raises("not managed by fully_shard", lambda: _build("llama"))
    _raises("not an nn.Linear", lambda: _shard(_build("llama")), groups=[["model.norm", "lm_head"]])
    # A call that raises changes nothing (layer 0's groups were fine, layer 1's q/k/v were not).
    model = split_units()
    with pytest.raises(ValueError):
        pack_fsdp_parameters(model)
    assert not any(hasattr(p, "_splitlinear_layout") for m in model.modules()
                   if hasattr(m, "_get_fsdp_state") and m._get_fsdp_state()._fsdp_param_group
                   for p in m._get_fsdp_state()._fsdp_param_group.fsdp_params)


def test_unsupported_cases_raise(tmp_path: Path) -> None:
    spawn(_errors_worker, tmp_path)


def test_unsupported_torch_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch, "__version__", "2.12.0")
    with pytest.raises(RuntimeError, match="torch 2.12.0 is not supported"):
        pack_fsdp_parameters(torch.nn.Linear(2, 2))


def _one_rank_worker() -> None:
    _raises("world size 1", lambda: _shard(_build("llama")))


def test_world_size_one_raises(tmp_path: Path) -> None:
    spawn(_one_rank_worker, tmp_path, world_size=1)

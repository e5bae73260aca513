"""Activation checkpointing around and inside compiled regions.

Around: ``torch.utils.checkpoint.checkpoint(compiled_model, x)`` (what
``gradient_checkpointing_enable()`` in transformers does per layer when the
layers are compiled). Non-reentrant checkpointing counts the tensors saved in
the forward and in the recompute; they must match, and gradients must equal
eager's. Inside: the checkpoint call is part of the compiled code, Dynamo turns
it into a ``tag_activation_checkpoint`` higher-order op whose subgraph holds
the linears; they are matched like top-level ones.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from _models import TwoLayer
from _util import compile_sl, graphs, grads, op_runs, randn
from torch.utils.checkpoint import checkpoint

import splitlinear
from splitlinear.packing import pack_parameters


def _compare_grads(model: nn.Module, reference: nn.Module) -> None:
    got, expected = grads(dict(model.named_parameters())), grads(dict(reference.named_parameters()))
    for name, g in expected.items():
        assert g is not None and got[name] is not None, name
        torch.testing.assert_close(got[name], g, rtol=1e-4, atol=1e-5, msg=name)


def _saved_count(fn: Callable[[], torch.Tensor]) -> int:
    """Tensors autograd saves while ``fn`` runs (through a saved-tensor hook)."""
    count = [0]

    def pack(t: torch.Tensor) -> torch.Tensor:
        count[0] += 1
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return count[0]


class _Packable(nn.Module):
    """q/k/v siblings (packable by name) followed by an explicit-cat projection."""

    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.q_proj = nn.Linear(hidden, hidden)
        self.k_proj = nn.Linear(hidden, hidden // 2)
        self.v_proj = nn.Linear(hidden, hidden // 2)
        self.out = TwoLayer(hidden, 24)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cat([self.q_proj(x), self.k_proj(x), self.v_proj(x)], dim=-1)
        return self.out(h[..., :16] * torch.sigmoid(h[..., 16:]))


@pytest.mark.parametrize("packed", [False, True], ids=["unpacked", "packed"])
@pytest.mark.parametrize("reentrant", [False, True], ids=["nonreentrant", "reentrant"])
@pytest.mark.parametrize("fallback", ["eager", "inductor"])
def test_checkpoint_around_compiled(op: object, device: str, fallback: str, reentrant: bool,
                                    packed: bool) -> None:
    torch.manual_seed(60)
    reference = _Packable().to(device)
    model = copy.deepcopy(reference)
    if packed:
        assert pack_parameters(model).packed
    compiled = compile_sl(model, fallback=fallback)
    for step in range(2):
        # Reentrant checkpointing needs an input that requires grad (as in eager).
        x = randn(3, 5, 16, device=device).requires_grad_(reentrant)
        for m in (model, reference):
            m.zero_grad()
        out = checkpoint(compiled, x, use_reentrant=reentrant)
        expected = checkpoint(reference, x, use_reentrant=reentrant)
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
        out.square().sum().backward()
        expected.square().sum().backward()
        _compare_grads(model, reference)
    # Reentrant checkpointing runs the forward under no_grad, then again with
    # grad: one graph per grad mode, as with any backend.
    assert graphs() == (2 if reentrant else 1)
    assert splitlinear.stats()["regions_matched"] == 3 * graphs()  # q/k/v, the explicit cat, gate/up
    assert op_runs() > 0


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
def test_compile_does_not_reach_user_saved_tensor_hooks(op: object, fallback: str) -> None:
    """The first call (which compiles) saves as many tensors as later calls."""
    torch.manual_seed(61)
    compiled = compile_sl(TwoLayer(), fallback=fallback)
    x = randn(3, 5, 16)
    counts = [_saved_count(lambda: compiled(x)) for _ in range(3)]
    assert counts[0] == counts[1] == counts[2] > 0


class _CheckpointedBlocks(nn.Module):
    """Two TwoLayer blocks, each under non-reentrant checkpointing inside ``forward``."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([TwoLayer(), TwoLayer()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + checkpoint(block, x, use_reentrant=False)
        return x


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
def test_checkpoint_inside_compiled(op: object, device: str, fallback: str) -> None:
    torch.manual_seed(62)
    reference = _CheckpointedBlocks().to(device)
    model = copy.deepcopy(reference)
    compiled = compile_sl(model, fallback=fallback)
    for _ in range(2):
        x = randn(3, 5, 16, device=device)
        for m in (model, reference):
            m.zero_grad()
        out, expected = compiled(x), reference(x)
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
        F.mse_loss(out, torch.ones_like(out)).backward()
        F.mse_loss(expected, torch.ones_like(expected)).backward()
        _compare_grads(model, reference)
    stats = splitlinear.stats()
    assert stats["regions_matched"] == 4  # per block: qkv cat, gate/up siblings
    assert stats["candidates_rejected"] == 0
    assert graphs() == 1
    assert op_runs() > 0

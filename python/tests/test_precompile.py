"""Kernels are JIT-compiled while the backend compiles a graph, never inside the first forward or
backward: the op library's ``compiles`` counter grows only by what the backend's precompile step
counted (``kernels_precompiled``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from _models import CatLinear
from _util import assert_close_to, randn

import splitlinear


@pytest.mark.parametrize("training", [False, True], ids=["infer", "train"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("fallback", ["inductor", "eager"])
def test_no_kernel_compiled_in_the_first_call(op: object, training: bool, bias: bool, fallback: str) -> None:
    torch._dynamo.reset()
    # A signature no other test or case uses (float64, 20 to 27 parts; test_op_inputs precompiles
    # 13), so no kernel is cached already and the precompile step must compile (the cache is
    # process-wide, and one kernel per signature leaves it to no eviction).
    case = 4 * (fallback == "eager") + 2 * bias + training
    rows = [1 + (i % 5) for i in range(20 + case)]
    model = CatLinear(16, rows, bias=bias, dtype=torch.float64).requires_grad_(training)
    compiled = torch.compile(model, backend="splitlinear", fullgraph=True,
                             options={"fallback": fallback, "strict": True})
    before = splitlinear.stats()
    x = randn(4, 16, dtype=torch.float64).requires_grad_(training)
    with torch.set_grad_enabled(training):
        out = compiled(x)
        if training:
            out.sum().backward()
    after = splitlinear.stats()
    precompiled = after["kernels_precompiled"] - before["kernels_precompiled"]
    compiled_kernels = after["compiles"] - before["compiles"]
    assert precompiled >= 1
    assert compiled_kernels == precompiled  # nothing compiled during the first forward/backward
    assert_close_to(out, torch.nn.functional.linear(
        x.detach(), torch.cat(model.weights()).detach(),
        torch.cat(model.biases()).detach() if bias else None), torch.float64)


class _OpCatLinear(CatLinear):
    """:class:`CatLinear` calling the op eagerly, as the compiled region does."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return splitlinear.ops.linear(x, self.weights(), self.biases() if self.has_bias else None)


class _Recipe(torch.nn.Module):
    """A :class:`CatLinear` run in one of the recipes whose mode the region, not the caller, sets:
    plain, inside ``torch.no_grad()``, inside ``torch.autocast``, or inside activation checkpointing."""

    def __init__(self, inner: CatLinear, recipe: str) -> None:
        super().__init__()
        self.inner, self.recipe = inner, recipe

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.recipe == "no_grad":
            with torch.no_grad():
                return self.inner(x) * 2
        if self.recipe == "autocast":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self.inner(x).float()
        if self.recipe == "checkpoint":
            return torch.utils.checkpoint.checkpoint(self.inner, x, use_reentrant=False)
        return self.inner(x)


def _kernel_kind(ir: str) -> str:
    """``fprop``, ``dgrad``, ``wgrad`` or ``wgrad+db``, read off a dumped kernel's IR, with its dtype."""
    dtype = "bf16" if "xbf16" in ir else "f32"
    if "slin.linear_dgrad" in ir:
        return f"dgrad/{dtype}"
    if "slin.linear " in ir:
        return f"fprop/{dtype}"
    return f"wgrad+db/{dtype}" if "bias_grad" in ir else f"wgrad/{dtype}"


#: (recipe, trainable parts) -> the kernels the first forward and backward ask for, by the op's
#: rules: fprop always; with grad mode, dgrad (the input requires grad) and one wgrad per kind of
#: run of trainable weight parts. "mixed" trains weights 1, 2 and 4 and biases 0 and 2: the run
#: [1, 3) has a trainable bias (wgrad+db), the run [4, 5) has none, and bias 0 of the frozen
#: weight 0 is a column sum (no kernel).
_CASES: dict[tuple[str, str], list[str]] = {
    ("grad", "all"): ["fprop/f32", "dgrad/f32", "wgrad+db/f32"],
    ("grad", "mixed"): ["fprop/f32", "dgrad/f32", "wgrad+db/f32", "wgrad/f32"],
    ("no_grad", "all"): ["fprop/f32"],
    ("autocast", "all"): ["fprop/bf16", "dgrad/bf16", "wgrad+db/bf16"],
    ("autocast", "mixed"): ["fprop/bf16", "dgrad/bf16", "wgrad+db/bf16", "wgrad/bf16"],
    ("checkpoint", "all"): ["fprop/f32", "dgrad/f32", "wgrad+db/f32"],
    ("checkpoint", "mixed"): ["fprop/f32", "dgrad/f32", "wgrad+db/f32", "wgrad/f32"],
}


@pytest.mark.parametrize(("recipe", "trainable"), list(_CASES), ids=[f"{r}-{t}" for r, t in _CASES])
def test_precompile_compiles_what_the_first_call_needs(op: object, tmp_path: Path, recipe: str,
                                                       trainable: str) -> None:
    """The backend's precompile step requests exactly the kernels the first forward and backward
    need, decided by the region's grad mode, autocast dtype and requires_grad flags (not the
    caller's global state), and the call itself compiles none."""
    torch._dynamo.reset()
    in_features = 16
    # A part count no other test uses (30-36), so fprop and dgrad are not cached yet.
    inner = CatLinear(in_features, [1 + (i % 4) for i in range(30 + list(_CASES).index((recipe, trainable)))])
    if trainable == "mixed":
        for i, w in enumerate(inner.weights()):
            w.requires_grad_(i in (1, 2, 4))
        for i, b in enumerate(inner.biases()):
            b.requires_grad_(i in (0, 2))
    model = _Recipe(inner, recipe)
    compiled = torch.compile(model, backend="splitlinear", fullgraph=True,
                             options={"strict": True, "dump_dir": str(tmp_path)})
    x = randn(5, in_features).requires_grad_(True)
    before = splitlinear.stats()
    out = compiled(x)  # the backend compiles (and precompiles) here
    if out.requires_grad:
        out.sum().backward()
    after = splitlinear.stats()
    assert after["compiles"] - before["compiles"] == after["kernels_precompiled"] - before["kernels_precompiled"]
    dumped = [p.read_text() for p in tmp_path.glob("kernel-*.mlir") if not p.name.endswith(".passes.mlir")]
    assert sorted(_kernel_kind(ir) for ir in dumped) == sorted(_CASES[(recipe, trainable)])
    with torch.no_grad():
        expected = model(x)
    assert_close_to(out, expected, torch.bfloat16 if recipe == "autocast" else torch.float32)
    if trainable == "mixed" and recipe != "no_grad":
        grads = [t.grad for t in inner.weights() + inner.biases()]
        assert [g is not None for g in grads] == [t.requires_grad for t in inner.weights() + inner.biases()]

"""The block-scaled FP8 recipes (``blockwise``, ``blockwise_fp32_scales``) against their float64 emulation.

The op (``fp8_linear``) forward, dgrad and wgrad against ``_fp8_ref.fp8_linear_blockwise``
(1x128 activation and gradient blocks, 128x128 weight blocks per part) on the CPU and, on an
sm_90 GPU, through cuBLASLt's block-scaled GEMM; the backend option ``fp8="blockwise"`` against
eager ``fp8_linear`` with autocast, checkpointing and ``inference_mode``; and the errors: sizes
that are not multiples of 128, the weight cache, a GPU other than sm_90.
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from _fp8_models import Block
from _fp8_ref import (BLOCK, assert_within_ulp, block_gemm, fp8_linear_blockwise, fresh, pad_rows,
                     quantize_blocks, tensor_core_bound)
from _util import compile_sl
from torch.utils.checkpoint import checkpoint

import splitlinear
from splitlinear.options import SplitLinearOptions

RECIPES = ["blockwise", "blockwise_fp32_scales"]
#: Block sizes the recipe takes: every K and part row count a multiple of 128 but ``odd``'s (64).
SIZES = {"d": 128, "kv": 128, "h": 256, "odd": 64}


def _sm90(device: str) -> bool:
    return device == "cpu" or torch.cuda.get_device_capability()[0] == 9


def _skip_unless_sm90(device: str) -> None:
    if not _sm90(device):
        pytest.skip("cuBLASLt's block scales run on sm_90 only (test_not_sm90_names_device covers others)")


@pytest.mark.parametrize("recipe", RECIPES)
def test_op_matches_emulation(op, device: str, recipe: str) -> None:
    _skip_unless_sm90(device)
    g = torch.Generator().manual_seed(3)
    # Parts of different magnitudes keep their own scales; 15 tokens exercise the padding of the
    # wgrad blocks (to 128) and of the GEMM's M (to a multiple of 4).
    x = fresh(3, 5, 256, generator=g, dtype=torch.bfloat16, device=device).requires_grad_()
    ws = [fresh(n, 256, scale=s, generator=g, dtype=torch.bfloat16, device=device).requires_grad_()
          for n, s in ((128, 1.0), (256, 30.0))]
    bs = [fresh(n, generator=g, dtype=torch.bfloat16, device=device).requires_grad_() for n in (128, 256)]
    dy = fresh(3, 5, 384, generator=g, dtype=torch.bfloat16, device=device)
    y = op.fp8_linear(x, ws, bs, recipe=recipe)
    y.backward(dy)
    ref = fp8_linear_blockwise(x, ws, bs, pow2=recipe == "blockwise", dy=dy)
    # On CUDA the GEMM writes bfloat16 and the bias is added after it: two roundings (on the H200,
    # 6 of 5760 elements were beyond 1 ulp, the first by 1.3 ulp; within 2 ulp on an H100). The
    # gradients' bound on CUDA is the FP8 tensor cores' (about 14 bits kept): against fp32's, 1 of
    # 3840 dx and 1 of 98304 dW elements were beyond 1 ulp on an H100.
    cuda = device == "cuda"
    assert_within_ulp(y, ref.y, torch.bfloat16, ulps=2.0 if cuda else 1.0, what="y")
    dx, dw = (tensor_core_bound(ref.dx, 384), tensor_core_bound(ref.dw, BLOCK)) if cuda else (ref.dx, ref.dw)
    assert_within_ulp(x.grad, dx, torch.bfloat16, what="dx")
    assert_within_ulp(torch.cat([w.grad for w in ws]), dw, torch.bfloat16, what="dw")
    torch.testing.assert_close(torch.cat([b.grad for b in bs]).double().cpu(), ref.db, rtol=1e-2, atol=1e-2)


def test_block_scaled_mm_matches_emulation(op, device: str) -> None:
    _skip_unless_sm90(device)
    g = torch.Generator().manual_seed(4)
    a, b = fresh(7, 384, generator=g), fresh(256, 384, scale=5.0, generator=g)
    a8, sa = quantize_blocks(a, 1, pow2=False)
    for rows, blocks in ((BLOCK, "128x128"), (1, "1x128")):
        b8, sb = quantize_blocks(b, rows, pow2=False)
        y = torch.ops.splitlinear.block_scaled_mm(a8.to(device), sa.to(device), b8.to(device), sb.to(device),
                                                  blocks, None, torch.bfloat16)
        assert_within_ulp(y, block_gemm(a8, sa, b8, sb), torch.bfloat16, what=blocks)


@pytest.mark.parametrize("pow2", [False, True], ids=["fp32_scales", "pow2_scales"])
def test_fp8_quantize_blocks_matches_emulation(op, device: str, pow2: bool) -> None:
    """``fp8_quantize(axis="blocks")`` (the runtime's one-launch 1x128 quantization, which FP8
    serving with block scales uses) gives the emulation's bytes and scales, a 3-D input flattened;
    its errors name the argument."""
    torch.manual_seed(45)
    # Blocks of very different magnitude, so that a scale shared across blocks would show.
    x = torch.randn(2, 5, 384, device=device, dtype=torch.bfloat16) * torch.tensor(
        [1.0, 64.0, 1 / 64], device=device, dtype=torch.bfloat16).repeat_interleave(BLOCK)
    q, q_t, scale_inv = splitlinear.ops.fp8_quantize(x, torch.float8_e4m3fn, "blocks", pow2_scales=pow2)
    want_q, want_s = quantize_blocks(x, 1, pow2)
    assert q.shape == (10, 384) and q_t.numel() == 0 and scale_inv.shape == (10, 3)
    assert torch.equal(q.cpu().view(torch.uint8), want_q.view(torch.uint8))
    assert torch.equal(scale_inv.cpu(), want_s)
    with pytest.raises(RuntimeError, match=r'fp8_quantize: input has K = 200 features; axis "blocks" needs a '
                                           r'multiple of 128'):
        splitlinear.ops.fp8_quantize(x[..., :200], torch.float8_e4m3fn, "blocks")
    with pytest.raises(RuntimeError, match=r'fp8_quantize: write_transposed is not supported with axis "blocks"'):
        splitlinear.ops.fp8_quantize(x, torch.float8_e4m3fn, "blocks", write_transposed=True)


@pytest.mark.parametrize("pow2", [False, True], ids=["fp32_scales", "pow2_scales"])
def test_fp8_quantize_dual_blocks_matches_emulation(op, device: str, pow2: bool) -> None:
    """``fp8_quantize_dual(axis="blocks")`` (x and dy of the recipe, both copies from one read) gives
    the emulation's 1x128 row blocks and its 1x128 blocks along M of xᵀ zero-padded to 256 tokens
    (150 rows: a partial last block), bytes and scales; the fake kernel's shapes agree."""
    torch.manual_seed(47)
    # Magnitudes that differ along both axes, so that a block taken along the wrong one would show.
    rows = torch.logspace(-3, 3, 150, device=device).reshape(3, 50, 1)
    cols = torch.tensor([1.0, 64.0, 1 / 64], device=device).repeat_interleave(BLOCK)
    x = (torch.randn(3, 50, 384, device=device) * rows * cols).to(torch.bfloat16)
    q, scale_inv, q_t, scale_inv_t = splitlinear.ops.fp8_quantize_dual(x, torch.float8_e4m3fn, axis="blocks",
                                                                       pow2_scales=pow2)
    x2 = x.reshape(150, 384)
    want_q, want_s = quantize_blocks(x2, 1, pow2)
    want_qt, want_st = quantize_blocks(pad_rows(x2.cpu()).t().contiguous(), 1, pow2)
    assert q.shape == (150, 384) and scale_inv.shape == (150, 3)
    assert q_t.shape == (384, 256) and scale_inv_t.shape == (384, 2)
    assert torch.equal(q.cpu().view(torch.uint8), want_q.view(torch.uint8))
    assert torch.equal(scale_inv.cpu(), want_s)
    assert torch.equal(q_t.cpu().view(torch.uint8), want_qt.view(torch.uint8))
    assert torch.equal(scale_inv_t.cpu(), want_st)
    with torch._subclasses.FakeTensorMode() as mode:
        fake = torch.ops.splitlinear.fp8_quantize_dual(mode.from_tensor(x), torch.float8_e4m3fn, None, "blocks",
                                                      pow2)
    assert [tuple(t.shape) for t in fake] == [(150, 384), (150, 3), (384, 256), (384, 2)]


@pytest.mark.parametrize("pow2", [True, False])
def test_fp8_quantize_weight_blocks_matches_emulation(op, device: str, pow2: bool) -> None:
    """``fp8_quantize_weight_blocks`` (the runtime's one-launch 128x128 quantization of the weight
    parts) gives the emulation's bytes and scales, and its transposed copy is the same bytes
    transposed, for adjacent parts (read in place) and separate ones (one copy); under a fake tensor
    mode the shapes agree; its errors name the part."""
    torch.manual_seed(46)
    # Blocks of very different magnitude, so that a scale shared across blocks would show.
    packed = torch.randn(384, 256, device=device, dtype=torch.bfloat16) * torch.tensor(
        [4.0, 1 / 16, 256.0], device=device, dtype=torch.bfloat16).repeat_interleave(BLOCK)[:, None]
    want_q, want_s = quantize_blocks(packed, BLOCK, pow2)
    adjacent = [packed[:256], packed[256:]]
    separate = [p.clone() for p in adjacent]
    for parts in (adjacent, separate):
        q, q_t, scale_inv = splitlinear.ops.fp8_quantize_weight_blocks(parts, write_transposed=True,
                                                                        pow2_scales=pow2)
        assert q.shape == (384, 256) and q_t.shape == (256, 384) and scale_inv.shape == (3, 2)
        assert torch.equal(q.cpu().view(torch.uint8), want_q.view(torch.uint8))
        assert torch.equal(q_t.cpu().view(torch.uint8), want_q.view(torch.uint8).t())
        assert torch.equal(scale_inv.cpu(), want_s)
    # No derivative: a backward through it raises instead of leaving a gradient silently missing.
    leaf = adjacent[0].detach().requires_grad_()
    with pytest.raises(RuntimeError, match="derivative for splitlinear::fp8_quantize_weight_blocks is not implemented"):
        splitlinear.ops.fp8_quantize_weight_blocks([leaf]).scale_inv.sum().backward()
    only_t = torch.ops.splitlinear.fp8_quantize_weight_blocks(adjacent, torch.float8_e4m3fn, False, True, pow2)
    assert only_t[0].numel() == 0 and torch.equal(only_t[1].cpu().view(torch.uint8), want_q.view(torch.uint8).t())
    with torch._subclasses.FakeTensorMode() as mode:
        fake = torch.ops.splitlinear.fp8_quantize_weight_blocks([mode.from_tensor(p) for p in adjacent],
                                                                torch.float8_e4m3fn, True, False, pow2)
    assert [tuple(t.shape) for t in fake] == [(384, 256), (0, 0), (3, 2)]
    with pytest.raises(TypeError, match="weight"):
        splitlinear.ops.fp8_quantize_weight_blocks(packed)
    with pytest.raises(RuntimeError, match=r"fp8_quantize_weight_blocks: weight\[1\] is \[64, 256\]; 128x128 blocks "
                                           r"need both sizes multiples of 128"):
        torch.ops.splitlinear.fp8_quantize_weight_blocks([packed[:128], packed[128:192]], torch.float8_e4m3fn,
                                                         True, False, pow2)
    with pytest.raises(RuntimeError, match=r"fp8_quantize_weight_blocks: weight\[1\] has 128 columns but weight\[0\] "
                                           r"has K = 256"):
        torch.ops.splitlinear.fp8_quantize_weight_blocks([packed[:128], packed[:128, :128]], torch.float8_e4m3fn,
                                                         True, False, pow2)



def test_block_scaled_mm_errors(op) -> None:
    a8, sa = quantize_blocks(torch.randn(4, 256), 1, pow2=True)
    b8, sb = quantize_blocks(torch.randn(128, 256), BLOCK, pow2=True)
    mm = torch.ops.splitlinear.block_scaled_mm
    with pytest.raises(RuntimeError, match='b_blocks must be "128x128" or "1x128", got "2x2"'):
        mm(a8, sa, b8, sb, "2x2", None, torch.bfloat16)
    with pytest.raises(RuntimeError, match=r"b_scale_inv has shape \[1, 1\]; expected \[1, 2\]"):
        mm(a8, sa, b8, sb[:, :1], "128x128", None, torch.bfloat16)
    with pytest.raises(RuntimeError, match="K = 64 is not a multiple of 128"):
        mm(a8[:, :64], sa[:, :1], b8[:, :64], sb[:, :1], "128x128", None, torch.bfloat16)
    with pytest.raises(RuntimeError, match="a must be a 2-D FP8 tensor"):
        mm(a8.float(), sa, b8, sb, "128x128", None, torch.bfloat16)


def test_fp8_linear_errors(op) -> None:
    x = torch.randn(4, 256)
    with pytest.raises(RuntimeError, match=r'weight\[1\] has 64 rows; recipe "blockwise" needs a multiple of 128'):
        op.fp8_linear(x, [torch.randn(128, 256), torch.randn(64, 256)], None, recipe="blockwise")
    with pytest.raises(RuntimeError, match='K = 192 features; recipe "blockwise" needs a multiple of 128'):
        op.fp8_linear(torch.randn(4, 192), [torch.randn(128, 192)], None, recipe="blockwise")
    # Sizes that are not even multiples of 16 name the 128 that blockwise needs, not the 16 of other recipes.
    with pytest.raises(RuntimeError, match=r'weight\[0\] has 100 rows; recipe "blockwise" needs a multiple of 128'):
        op.fp8_linear(x, [torch.randn(100, 256)], None, recipe="blockwise")
    with pytest.raises(RuntimeError, match='K = 100 features; recipe "blockwise" needs a multiple of 128'):
        op.fp8_linear(torch.randn(4, 100), [torch.randn(128, 100)], None, recipe="blockwise")
    with pytest.raises(RuntimeError, match="cache_weights is not supported with recipe \"blockwise\""):
        op.fp8_linear(x, [torch.randn(128, 256)], None, recipe="blockwise", cache_weights=True)
    with pytest.raises(ValueError, match="option 'fp8_weight_cache' is not supported with fp8='blockwise'"):
        SplitLinearOptions.from_dict({"fp8": "blockwise", "fp8_weight_cache": True})


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_not_sm90_names_device(op) -> None:
    if torch.cuda.get_device_capability()[0] == 9:
        pytest.skip("an sm_90 GPU runs the recipe")
    x = torch.randn(4, 256, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(128, 256, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match=r'recipe "blockwise" needs an sm_90 GPU.*cuda:0'):
        op.fp8_linear(x, [w], None, recipe="blockwise")


def test_opcheck(op) -> None:
    """Autograd registration, fake kernel and AOT dispatch with a dynamic batch."""
    g = torch.Generator().manual_seed(5)
    x = fresh(6, 128, generator=g).requires_grad_()
    ws = [fresh(n, 128, generator=g).requires_grad_() for n in (128, 256)]
    for recipe in RECIPES:
        torch.library.opcheck(torch.ops.splitlinear.fp8_linear.default, (x, ws, None, recipe),
                              test_utils=("test_autograd_registration", "test_faketensor",
                                          "test_aot_dispatch_dynamic"))


def _pair(seed: int, device: str) -> tuple[Block, Block]:
    torch.manual_seed(seed)
    model = Block(**SIZES).to(device)
    return model, copy.deepcopy(model)


def _close(a: torch.Tensor, b: torch.Tensor, rtol: float = 1e-5) -> None:
    torch.testing.assert_close(a.float(), b.float(), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("recipe", RECIPES)
def test_backend_matches_eager_with_autocast_and_checkpointing(op, device: str, recipe: str) -> None:
    """bfloat16 autocast over float32 parameters, the block under activation checkpointing; ``odd``
    (64 rows) stays in its precision with one warning naming it, at the caller's line."""
    _skip_unless_sm90(device)
    model, ref = _pair(31, device)

    def run(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return checkpoint(model, x, use_reentrant=False)

    compiled = compile_sl(run, fp8=recipe)
    x = torch.randn(2, 6, 128, device=device)
    with pytest.warns(UserWarning, match=r"stay in their precision: odd \(a weight part has 64 rows, not a "
                                         r"multiple of 128\)") as record:
        with torch.autocast(device, dtype=torch.bfloat16):
            out = compiled(x)
    # Raised while Dynamo compiles, it names the user's line, not a frame of torch or splitlinear.
    assert [w.filename for w in record if "stay in their precision" in str(w.message)] == [__file__]
    with torch.autocast(device, dtype=torch.bfloat16):
        want = ref.reference(x, recipe)
    for a, b in zip(out, want):
        _close(a, b)
    (out[0].float().square().mean() + out[1].float().mean()).backward()
    (want[0].float().square().mean() + want[1].float().mean()).backward()
    for (name, p), r in zip(model.named_parameters(), ref.parameters()):
        assert p.grad.dtype == torch.float32, name
        _close(p.grad, r.grad, rtol=1e-2)
    # q/k/v, o, gate/up, down in FP8; odd and lm_head alone as they were.
    assert splitlinear.stats()["regions_matched"] >= 4


def test_backend_inference_mode(op, device: str) -> None:
    _skip_unless_sm90(device)
    model, ref = _pair(32, device)
    model, ref = model.to(torch.bfloat16), ref.to(torch.bfloat16)
    compiled = compile_sl(model, fp8="blockwise", fp8_filter=["lm_head", "odd"])
    x = torch.randn(3, 128, device=device, dtype=torch.bfloat16)
    with torch.inference_mode():
        out = compiled(x)
        want = ref.reference(x, "blockwise")
    for a, b in zip(out, want):
        _close(a, b)


class _QK(torch.nn.Module):
    """q (256 rows) and k (128) over K = 256, then o: one FP8 group and one lone linear."""

    def __init__(self) -> None:
        super().__init__()
        self.q = torch.nn.Linear(256, 256, bias=False)
        self.k = torch.nn.Linear(256, 128, bias=False)
        self.o = torch.nn.Linear(384, 256, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.o(torch.cat([self.q(x), self.k(x)], -1).relu())


def _eager_blockwise(model: _QK, x: torch.Tensor) -> torch.Tensor:
    h = splitlinear.ops.fp8_linear(x, [model.q.weight, model.k.weight], recipe="blockwise").relu()
    return splitlinear.ops.fp8_linear(h, [model.o.weight], recipe="blockwise")


def _check_against_eager(op, compiled, model: _QK, ref: _QK, x: torch.Tensor) -> None:
    y = compiled(x)
    want = _eager_blockwise(ref, x)
    _close(y, want)
    y.square().sum().backward()
    want.square().sum().backward()
    for (name, p), r in zip(model.named_parameters(), ref.parameters()):
        _close(p.grad, r.grad, rtol=1e-4)
        p.grad, r.grad = None, None


@pytest.mark.parametrize("tokens", [64, 128, 256])
def test_inductor_at_token_counts_of_128(op, tokens: int) -> None:
    """Under Inductor (CPU code generation), token counts that are multiples of 128: the wgrad's
    transposed block view of an unpadded input failed to compile at 128 and 256."""
    torch.manual_seed(41)
    model = _QK()
    ref = copy.deepcopy(model)
    compiled = compile_sl(model, fallback="inductor", fp8="blockwise")
    _check_against_eager(op, compiled, model, ref, torch.randn(tokens, 256))
    assert splitlinear.stats()["regions_matched"] == 2


def test_inductor_quantizes_the_rounded_input_under_autocast(op) -> None:
    """Under autocast over float32 parameters, compiled (Inductor) equals eager bit for bit: the
    quantizations run inside the ops, so Inductor cannot fuse them with autocast's bf16 casts and
    quantize the unrounded float32 values (3% of the FP8 bytes of a 64x256 input differed so)."""
    torch.manual_seed(44)
    model = _QK()
    ref = copy.deepcopy(model)
    compiled = compile_sl(model, fallback="inductor", fp8="blockwise")
    x = torch.randn(64, 256)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = compiled(x)
        want = _eager_blockwise(ref, x)
    assert y.dtype == torch.bfloat16 and torch.equal(y, want)
    y.float().square().sum().backward()
    want.float().square().sum().backward()
    for (name, p), r in zip(model.named_parameters(), ref.parameters()):
        assert torch.equal(p.grad, r.grad), name


def test_dynamic_token_count_does_not_recompile_per_size(op) -> None:
    """``dynamic=True``: token counts of one padding class share one graph (M used to be specialized,
    one compile per size); every size matches the eager op."""
    torch.manual_seed(42)
    model = _QK()
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="splitlinear", dynamic=True,
                             options={"fallback": "inductor", "fp8": "blockwise"})
    for tokens in (130, 200, 300, 333):
        _check_against_eager(op, compiled, model, ref, torch.randn(tokens, 256))
    stats = splitlinear.stats()
    assert stats["graphs_compiled"] == 1 and stats["regions_matched"] == 2


def test_lora_adapters_stay_unnamed(op) -> None:
    """PEFT LoRA (rank 8) on q/v: the adapters stay in their precision without the sizes warning,
    the bases run in blocks, and the adapters get gradients."""
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    torch.manual_seed(43)
    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=256, num_hidden_layers=1,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=96)
    model = peft.get_peft_model(transformers.LlamaForCausalLM(cfg),
                                peft.LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
    splitlinear.pack_parameters(model)  # unpacked, the bases would be named as not adjacent
    compiled = compile_sl(model, fullgraph=False, fp8="blockwise")
    ids = torch.randint(0, 96, (2, 16))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the sizes warning would fail here
        compiled(input_ids=ids, labels=ids, use_cache=False).loss.backward()
    adapters = [p for n, p in model.named_parameters() if "lora_" in n]
    # lora_B starts at zero, so only its gradient is nonzero after one step.
    assert len(adapters) == 4 and all(p.grad is not None for p in adapters)
    assert all(p.grad.abs().sum() > 0 for n, p in model.named_parameters() if "lora_B" in n)
    assert splitlinear.stats()["regions_matched"] >= 3  # q/k/v, o, gate/up, down bases in FP8


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_reduce_overhead_training_replays_cuda_graphs(op) -> None:
    """``mode="reduce-overhead"``: the forward and backward of the recipe (quantization, the
    block-scaled GEMMs) are captured and replayed, each step equal to the eager op."""
    _skip_unless_sm90("cuda")
    from splitlinear.cudagraphs import recorded_graph_count

    torch._dynamo.utils.counters.clear()
    torch.manual_seed(44)
    model = _QK().cuda()
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="splitlinear", fullgraph=True,
                             options={"fp8": "blockwise", "mode": "reduce-overhead"})
    for _ in range(4):
        torch.compiler.cudagraph_mark_step_begin()
        _check_against_eager(op, compiled, model, ref, torch.randn(256, 256, device="cuda"))
    assert torch._dynamo.utils.counters["inductor"]["cudagraph_skips"] == 0
    assert recorded_graph_count() >= 2

//===- Fp8Autograd.cpp - Autograd kernel of fp8_linear ----------*- C++ -*-===//
//
// The autograd formula of `fp8_linear`, in C++, composed of the dispatcher
// ops of Fp8Ops.h (so that AOTAutograd traces it through their fake
// kernels). With W = [W_1; ...; W_P], each part quantized with its own
// scale_inv s_i, and ŝ the spread vector (ŝ_j = s_i for every row j of
// part i), W = diag(ŝ) · W8. Then (../shared derivation, docs/Design.md
// "FP8"):
//
//  * forward: y = sx · ŝ · (x8 · W8ᵀ): one GEMM, outer-vector scales.
//  * dgrad: dx = dy · W = (dy · diag(ŝ)) · W8. The weight scales cannot be
//    carried by outer-vector scales here (the GEMM contracts over N, across
//    the parts), so they are folded into dy's columns before dy is
//    quantized (fp8GradDtype: e5m2 for tensorwise, e4m3 for the rowwise
//    recipes): one GEMM with the transposed FP8 weight W8ᵀ [K, N],
//    cast by the backward from the parts the forward saved (or found in the
//    weight cache).
//  * wgrad: dW = dyᵀ · x, which does not involve the weight scales: one
//    FP8 GEMM over dy's and x's transposed FP8 copies (TN, K-major),
//    or, for `rowwise_with_gw_hp`, the high-precision `linear_wgrad`, per
//    run of consecutive trainable parts (frozen parts get no GEMM). Each
//    part's gradient is a row block of its run's dW. A row count that is not
//    a multiple of 16 is padded with zero columns, which add nothing.
//
// Scales per recipe: tensorwise: one per tensor (x, dy); rowwise: x and dy
// per row for the forward and dgrad, per column (over the rows) for wgrad.
// Weight parts always have one scale each. The rowwise recipes round every
// scale down to a power of 2 (fp8Pow2Scales), so folding ŝ into dy is exact.
// Both choices are torchao's rowwise (docs/UserGuide.md, "FP8 recipes").
//
//===----------------------------------------------------------------------===//

#include "Fp8Blockwise.h"
#include "Fp8Ops.h"
#include "KernelPlan.h"
#include "OpHandles.h"
#include "SavedCall.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

#include <string>
#include <vector>

using namespace splitlinear;

namespace {

constexpr const char *kOp = "splitlinear.fp8_linear";

/// `t` [R, C] (FP8) with zero columns appended up to a multiple of 16 (the
/// FP8 GEMM's contraction length). Zero bytes are +0 in both FP8 formats.
at::Tensor padColumns(const at::Tensor &t) {
  c10::SymInt cols = t.sym_size(1);
  c10::SymInt pad = (16 - cols % 16) % 16;
  if (pad == 0) // guards on the row count mod 16 under dynamic shapes
    return t;
  at::Tensor raw = t.view(at::kByte);
  std::vector<c10::SymInt> padding{0, pad};
  return at::constant_pad_nd_symint(raw, padding, 0).view(t.scalar_type());
}

class Fp8LinearFunction : public torch::autograd::Function<Fp8LinearFunction> {
public:
  /// `parts` holds the weight parts, then (when `hasBias`) the bias parts.
  static at::Tensor forward(torch::autograd::AutogradContext *ctx,
                            const at::Tensor &input, at::TensorList parts,
                            int64_t numWeights, bool hasBias,
                            const std::string &recipeName, bool cacheWeights) {
    std::vector<at::Tensor> weight(parts.begin(), parts.begin() + numWeights);
    std::optional<at::TensorList> bias;
    if (hasBias)
      bias = parts.slice(numWeights);
    checkFp8LinearArgs(input, weight, bias, kOp);
    Fp8Recipe recipe = parseFp8Recipe(recipeName, kOp);
    bool rowwise = recipe != Fp8Recipe::Tensorwise;
    bool pow2 = fp8Pow2Scales(recipe);
    SavedCall call = saveCall(ctx, input, parts, numWeights, hasBias);
    bool needInput = call.needs.input, anyWeight = call.needs.anyWeight();
    // Backward casts W8ᵀ from the parts, through the weight cache when it is
    // on: the first backward of a weight version casts W8 and W8ᵀ and stores
    // them, later forwards and backwards find them. (Were the forward to
    // write W8ᵀ too, the two casts would be the same call, which
    // AOTAutograd's CSE merges: the forward's W8ᵀ would then be saved, not
    // the parts.) The parts are saved as detached aliases, as F.linear saves
    // w.t(): an alias keeps the forward's storage when `p.data = t` swaps the
    // Parameter's, and detach() shares the version counter, so an in-place
    // change between forward and backward raises autograd's "modified by an
    // inplace operation", with the cache too (which used to save its W8ᵀ
    // instead, and the backward silently ran on the old weights). Made
    // before the guard below, which would leave the counter unshared.
    std::vector<at::Tensor> weightViews;
    if (needInput)
      for (const at::Tensor &w : weight)
        weightViews.push_back(w.detach());
    at::AutoDispatchBelowADInplaceOrView guard;
    const OpHandles &h = ops();
    // Tensorwise wgrad reuses the forward's scale, so the transposed copy
    // comes from the same pass. Rowwise wgrad scales x per column: the
    // rows/cols dual quantization writes both copies from one read.
    bool xTransposed = anyWeight && recipe == Fp8Recipe::Tensorwise;
    at::Tensor x8, x8t, sx, xCols, sxCols;
    if (anyWeight && recipe == Fp8Recipe::Rowwise) {
      std::tie(x8, sx, xCols, sxCols) = h.fp8QuantizeDual.call(
          input, at::kFloat8_e4m3fn, std::nullopt, "rows", pow2);
    } else {
      std::tie(x8, x8t, sx) = h.fp8Quantize.call(
          input, at::kFloat8_e4m3fn, rowwise ? "rows" : "tensor", std::nullopt,
          /*write_out=*/true, xTransposed, pow2);
    }
    // Without the weight cache no FP8 copy of the weights outlives this
    // GEMM (as torchao recasts its weights).
    auto [w8, unusedW8t, partScaleInv, rowScaleInv] =
        h.fp8CastParts.call(weight, at::kFloat8_e4m3fn,
                            /*write_transposed=*/false, cacheWeights, pow2);
    std::vector<at::Tensor> oneBias;
    if (hasBias)
      oneBias.push_back(at::cat(*bias));
    // One part's one scale is cuBLASLt's tensorwise mode when x's is one
    // too; against x's per-row scales it must be a vector, the spread one
    // (not the scalar, which scaled_linear would expand with a copy).
    at::Tensor y = h.scaledLinear.call(
        x8.view_symint(input.sym_sizes()), sx, {w8},
        numWeights == 1 && !rowwise ? partScaleInv : rowScaleInv,
        hasBias ? std::optional<at::TensorList>(oneBias) : std::nullopt,
        input.scalar_type(), /*fast_accum=*/true);

    // Only what backward reads: the parts for dgrad; x's FP8 transpose and
    // its scale (or x itself, for high-precision wgrad) for wgrad.
    std::vector<at::Tensor> saved;
    if (needInput)
      saved.insert(saved.end(), weightViews.begin(), weightViews.end());
    if (anyWeight) {
      if (recipe == Fp8Recipe::RowwiseWithGwHp) {
        saved.push_back(input);
      } else if (recipe == Fp8Recipe::Rowwise) {
        saved.push_back(xCols);
        saved.push_back(sxCols);
      } else {
        saved.push_back(x8t);
        saved.push_back(sx);
      }
    }
    ctx->save_for_backward(saved);
    ctx->saved_data["recipe"] = static_cast<int64_t>(recipe);
    ctx->saved_data["weight_dtype"] = weight[0].scalar_type();
    ctx->saved_data["cache_weights"] = cacheWeights;
    return y;
  }

  static torch::autograd::variable_list
  backward(torch::autograd::AutogradContext *ctx,
           torch::autograd::variable_list gradOutputs) {
    // The backward ops have no derivative of their own: a gradient of the
    // gradient would silently be missing, so refuse it.
    TORCH_CHECK(!at::GradMode::is_enabled(), kOp,
                ": double backward (create_graph=True) is not supported");
    at::Tensor grad = gradOutputs[0];
    std::vector<at::Tensor> saved = ctx->get_saved_variables();
    SavedCall call = loadCall(ctx);
    const GradNeeds &needs = call.needs;
    int64_t n = static_cast<int64_t>(call.rows.size());
    bool hasBias = call.hasBias;
    auto recipe = static_cast<Fp8Recipe>(ctx->saved_data["recipe"].toInt());
    at::ScalarType weightDtype = ctx->saved_data["weight_dtype"].toScalarType();
    bool rowwise = recipe != Fp8Recipe::Tensorwise;
    bool pow2 = fp8Pow2Scales(recipe);
    at::ScalarType gradFp8 = fp8GradDtype(recipe);
    const OpHandles &h = ops();
    // One slot per flattened tensor input, then the four non-tensor inputs.
    torch::autograd::variable_list grads(1 + n + (hasBias ? n : 0) + 4);
    size_t next = 0;
    // Tensorwise with one part: its weight scale is one number, so dgrad
    // takes it as the GEMM's weight scale instead of folding it into dy's
    // columns, and one quantization of dy (one amax pass, one cast writing
    // both layouts) serves dgrad and wgrad. With several parts the folded
    // and the plain dy differ, but one dual quantization still reads dy once.
    bool lonePart =
        recipe == Fp8Recipe::Tensorwise && n == 1 && call.rows[0] > 0;
    at::Tensor dy8t, sdy;
    if (needs.input) {
      // W8ᵀ and ŝ of the parts as they are now: the forward's values, unless
      // a write that bumps no version changed them. Then, uncached, dgrad
      // uses the new weights with their own scales, as eager F.linear
      // would.
      std::vector<at::Tensor> weight(saved.begin() + next,
                                     saved.begin() + next + n);
      next += n;
      auto [unusedW8, w8t, unusedPartScaleInv, rowScaleInv] =
          h.fp8CastParts.call(weight, at::kFloat8_e4m3fn,
                              /*write_transposed=*/true,
                              ctx->saved_data["cache_weights"].toBool(), pow2);
      at::Tensor dz8, sz, sw;
      // No weight scale left for the GEMM (folded into dy): ones, as many as
      // dx has columns when dy's scales are per row (outer-vector mode), so
      // that scaled_linear needs no expanding copy.
      c10::SymInt swSize = rowwise ? w8t.sym_size(0) : c10::SymInt(1);
      auto ones = [&] {
        return at::ones_symint({swSize}, grad.options().dtype(at::kFloat));
      };
      if (lonePart) {
        auto [out, outT, scaleInv] = h.fp8Quantize.call(
            grad, gradFp8, "tensor", std::nullopt,
            /*write_out=*/true, /*write_transposed=*/needs.anyWeight(), pow2);
        dz8 = out, sz = scaleInv;
        if (needs.anyWeight())
          dy8t = padColumns(outT), sdy = scaleInv;
        sw = rowScaleInv.narrow(0, 0, 1);
      } else if (!rowwise && needs.anyWeight()) {
        // Tensorwise with several parts: the folded dy for dgrad and the
        // plain transposed dy for wgrad from one read (two amaxes, one cast).
        auto [out, scaleInv, outT, scaleInvT] =
            h.fp8QuantizeDual.call(grad, gradFp8, rowScaleInv, "tensor", pow2);
        dz8 = out, sz = scaleInv;
        dy8t = padColumns(outT), sdy = scaleInvT;
        sw = ones();
      } else if (recipe == Fp8Recipe::Rowwise && needs.anyWeight()) {
        // Rowwise: dy per row (folded) for dgrad and per column (plain,
        // transposed) for wgrad, from one read of dy.
        auto [out, scaleInv, outT, scaleInvT] =
            h.fp8QuantizeDual.call(grad, gradFp8, rowScaleInv, "rows", pow2);
        dz8 = out, sz = scaleInv;
        dy8t = padColumns(outT), sdy = scaleInvT;
        sw = ones();
      } else {
        auto [out, unused, scaleInv] =
            h.fp8Quantize.call(grad, gradFp8, rowwise ? "rows" : "tensor",
                               rowScaleInv, /*write_out=*/true,
                               /*write_transposed=*/false, pow2);
        dz8 = out, sz = scaleInv;
        sw = ones();
      }
      grads[0] = h.scaledLinear.call(dz8.view_symint(grad.sym_sizes()), sz,
                                     {w8t}, sw, std::nullopt,
                                     grad.scalar_type(), /*fast_accum=*/false);
    }
    if (needs.anyWeight()) {
      // One wgrad GEMM per run of consecutive trainable parts (a frozen base
      // next to a LoRA adapter gets none). Every row of dW depends on its
      // own column of dy only, so the runs equal the full GEMM's row blocks.
      std::vector<WgradRun> runs = wgradRuns(needs);
      if (recipe != Fp8Recipe::RowwiseWithGwHp && !dy8t.defined()) {
        auto quantized =
            h.fp8Quantize.call(grad, gradFp8, rowwise ? "cols" : "tensor",
                               std::nullopt, /*write_out=*/false,
                               /*write_transposed=*/true, pow2);
        dy8t = padColumns(std::get<1>(quantized));
        sdy = std::get<2>(quantized);
      }
      for (const WgradRun &run : runs) {
        int64_t begin = call.offsets[run.begin];
        int64_t rows = call.offsets[run.end] - begin;
        bool whole = run.begin == 0 && run.end == n;
        at::Tensor dw;
        if (recipe == Fp8Recipe::RowwiseWithGwHp) {
          at::Tensor block = whole ? grad : grad.narrow(-1, begin, rows);
          dw = std::get<0>(h.wgrad.call(block, saved[next], false))
                   .to(weightDtype);
        } else {
          const at::Tensor &x8t = saved[next];
          const at::Tensor &sx = saved[next + 1];
          at::Tensor d = whole ? dy8t : dy8t.narrow(0, begin, rows);
          at::Tensor sd = whole || !rowwise ? sdy : sdy.narrow(-1, begin, rows);
          dw = h.scaledLinear.call(d, sd, {padColumns(x8t)}, sx, std::nullopt,
                                   weightDtype, /*fast_accum=*/false);
        }
        for (int64_t p = run.begin; p < run.end; ++p)
          grads[1 + p] = dw.narrow(0, call.offsets[p] - begin, call.rows[p]);
      }
    }
    // Without biases there are no bias slots: writing them would run past
    // `grads` once there are more parts than non-tensor inputs.
    if (hasBias) {
      std::vector<at::Tensor> db = biasGradients(grad, call);
      for (int64_t p = 0; p < n; ++p)
        grads[1 + n + p] = db[p];
    }
    return grads;
  }
};

at::Tensor fp8LinearAutograd(const at::Tensor &input, at::TensorList weight,
                             std::optional<at::TensorList> bias,
                             c10::string_view recipe, bool cacheWeights) {
  Fp8Recipe r = parseFp8Recipe(recipe, kOp);
  if (isBlockwise(r)) {
    checkBlockwiseCache(cacheWeights, kOp);
    return fp8LinearBlockwiseAutograd(input, weight, bias, fp8Pow2Scales(r));
  }
  std::vector<at::Tensor> parts(weight.begin(), weight.end());
  bool hasBias = bias.has_value();
  if (hasBias)
    parts.insert(parts.end(), bias->begin(), bias->end());
  return Fp8LinearFunction::apply(input, at::TensorList(parts),
                                  static_cast<int64_t>(weight.size()), hasBias,
                                  std::string(recipe), cacheWeights);
}

} // namespace

TORCH_LIBRARY_IMPL(splitlinear, Autograd, m) {
  m.impl("fp8_linear", &fp8LinearAutograd);
  // The building blocks have no derivative: a backward through one raises
  // (naming the op) instead of leaving the gradient silently missing.
  m.impl("fp8_quantize", torch::autograd::autogradNotImplementedFallback());
  m.impl("fp8_quantize_dual",
         torch::autograd::autogradNotImplementedFallback());
  m.impl("fp8_cast_parts", torch::autograd::autogradNotImplementedFallback());
  m.impl("scaled_linear", torch::autograd::autogradNotImplementedFallback());
  m.impl("fp8_quantize_weight_blocks",
         torch::autograd::autogradNotImplementedFallback());
  m.impl("block_scaled_mm", torch::autograd::autogradNotImplementedFallback());
  m.impl("fp8_serving_linear",
         torch::autograd::autogradNotImplementedFallback());
}

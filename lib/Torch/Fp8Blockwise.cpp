//===- Fp8Blockwise.cpp - the block-scaled FP8 recipe -----------*- C++ -*-===//
//
// Implements Fp8Blockwise.h. With W = [W_1; ...; W_P] (every N_i a multiple
// of 128) quantized in 128×128 blocks, and x, dy in 1×128 blocks along the
// contraction:
//
//  * forward: y = x · Wᵀ: x 1×128 along K, W 128×128 (VEC128 × BLK128x128).
//  * dgrad: dx = dy · W: dy 1×128 along N, W8ᵀ 128×128. A 128×128 block is
//    its own transpose's block, so W8ᵀ is the forward's W8 transposed (no
//    second rounding) with the transposed scales; every dy block and every
//    W block lies inside one part, so each part keeps its scales here too.
//  * wgrad: dW = dyᵀ · x: both 1×128 along the tokens M (VEC128 × VEC128),
//    from copies quantized column-wise from the high-precision tensors (as
//    TE does), M zero-padded to a multiple of 128 (zeros add nothing).
//
// The quantizations are the runtime's one-launch kernels, opaque to
// Inductor (docs/Design.md, Measured decisions: blockwise quantization in
// the runtime): x and dy each in one read for both of their copies, the
// weight parts read in place.
//
//===----------------------------------------------------------------------===//

#include "Fp8Blockwise.h"
#include "Counters.h"
#include "Fp8Ops.h"
#include "KernelPlan.h"
#include "OpHandles.h"
#include "SavedCall.h"

#include <ATen/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <torch/autograd.h>

#ifdef SPLITLINEAR_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

#include <string>
#include <vector>

using namespace splitlinear;

namespace {

constexpr const char *kLinearOp = "splitlinear.fp8_linear";
constexpr const char *kMmOp = "splitlinear.block_scaled_mm";
constexpr const char *kServingOp = "splitlinear.fp8_serving_linear";

/// x2d [M, K] in 1×128 blocks along its rows (the forward's x, dgrad's dy):
/// (data [M, K] e4m3, scale_inv [M, K/128]).
std::tuple<at::Tensor, at::Tensor> quantizeRows(const at::Tensor &x2d,
                                                bool pow2) {
  auto [q, unused, scaleInv] = ops().fp8Quantize.call(
      x2d, at::kFloat8_e4m3fn, "blocks", std::nullopt,
      /*writeOut=*/true, /*writeTransposed=*/false, pow2);
  return {q, scaleInv};
}

/// quantizeRows and the wgrad operand from one read of x2d [M, K]: xᵀ [K,
/// M'] in 1×128 blocks along M (M' = M rounded up to 128, zero columns past
/// M: zero rows of x add nothing to a wgrad sum), scale_inv [K, M'/128].
/// Returns (rows, rows' scale_inv, cols, cols' scale_inv).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>
quantizeRowsAndCols(const at::Tensor &x2d, bool pow2) {
  return ops().fp8QuantizeDual.call(x2d, at::kFloat8_e4m3fn, std::nullopt,
                                    "blocks", pow2);
}

/// The parts' 128×128 blocks, read in place: (W8 [N, K], scale_inv [N/128,
/// K/128]), or with `transposed` dgrad's (W8ᵀ [K, N], scale_inv [K/128,
/// N/128]): a block of W8ᵀ is a block of W8 transposed, same scale.
std::tuple<at::Tensor, at::Tensor> quantizeWeight(at::TensorList weight,
                                                  bool transposed, bool pow2) {
  auto [w8, w8t, sw] = ops().fp8QuantizeWeightBlocks.call(
      weight, at::kFloat8_e4m3fn, !transposed, transposed, pow2);
  if (!transposed)
    return {w8, sw};
  return {w8t, sw.t().contiguous()};
}

bool isFp8(at::ScalarType s) {
  return s == at::kFloat8_e4m3fn || s == at::kFloat8_e5m2;
}

/// Checks a scale_inv argument of block_scaled_mm: float32 [rows, cols] on
/// `device`.
void checkScales(const at::Tensor &s, int64_t rows, int64_t cols,
                 const char *name, at::Device device) {
  TORCH_CHECK(s.defined() && s.dim() == 2 && s.scalar_type() == at::kFloat,
              kMmOp, ": ", name, " must be a 2-D float32 tensor");
  TORCH_CHECK(s.size(0) == rows && s.size(1) == cols, kMmOp, ": ", name,
              " has shape [", s.size(0), ", ", s.size(1), "]; expected [", rows,
              ", ", cols, "]");
  TORCH_CHECK(s.device() == device, kMmOp, ": ", name, " is on ", s.device(),
              " but a is on ", device);
}

/// The dequantized operand: `t` [R, C] FP8 times its scales, float32.
at::Tensor dequantize(const at::Tensor &t, const at::Tensor &scaleInv,
                      bool square) {
  int64_t r = t.size(0), c = t.size(1);
  at::Tensor f = t.to(at::kFloat);
  if (square)
    return f.reshape({r / kFp8Block, kFp8Block, c / kFp8Block, kFp8Block})
        .mul(scaleInv.reshape({r / kFp8Block, 1, c / kFp8Block, 1}))
        .reshape({r, c});
  return f.reshape({r, c / kFp8Block, kFp8Block})
      .mul(scaleInv.unsqueeze(-1))
      .reshape({r, c});
}

#ifdef SPLITLINEAR_TORCH_CUDA
/// cuBLASLt's block scales run on sm_90 only: a clear error elsewhere.
void checkBlockScalingDevice(const at::Tensor &a) {
  const cudaDeviceProp *prop = at::cuda::getDeviceProperties(a.get_device());
  TORCH_CHECK(prop->major == 9, kMmOp, ": fp8 recipe \"blockwise\" needs an ",
              "sm_90 GPU (cuBLASLt's 128-element block scales run on Hopper ",
              "only; Blackwell's block-scaled FP8 is MXFP8, 1x32 blocks with ",
              "e8m0 scales, which splitlinear does not use yet); ", a.device(),
              " (", prop->name, ") is sm_", prop->major, prop->minor);
}

/// `t` [R, C] with `cols` columns of `value` appended (an FP8 tensor is
/// padded through its bytes).
at::Tensor padColumns(const at::Tensor &t, int64_t cols, double value) {
  if (!cols)
    return t;
  bool fp8 = isFp8(t.scalar_type());
  at::Tensor src = fp8 ? t.contiguous().view(at::kByte) : t;
  at::Tensor out = at::constant_pad_nd(src, {0, cols}, value);
  return fp8 ? out.view(t.scalar_type()) : out;
}

/// The GEMM on CUDA through at::_scaled_mm, which maps these scale shapes
/// to CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F / BLK128x128_32F. Its layout
/// rules: a's scales M-major ([M, K/128], strides (1, M)); b's 128×128
/// scales row-major [N/128, K/128]; b's 1×128 scales N-major. cuBLASLt wants
/// the M-major scale vectors 16-byte aligned, so M is padded to a multiple
/// of 4 (zero rows, sliced off). It also reads the 128×128 scales with a row
/// stride rounded up to 4 blocks, which torch 2.11's layout check does not
/// allow: on the H100 a K of 256 or 384 gave wrong sums. So K is padded to a
/// multiple of 512 there (zero columns, unit scales: they add nothing).
at::Tensor blockScaledMmCuda(const at::Tensor &a, const at::Tensor &aScaleInv,
                             const at::Tensor &b, const at::Tensor &bScaleInv,
                             bool square) {
  checkBlockScalingDevice(a);
  int64_t m = a.size(0);
  int64_t pad = (4 - m % 4) % 4;
  at::Tensor a8 = a.contiguous(), sa = aScaleInv, b8 = b, sb = bScaleInv;
  if (pad) {
    a8 = at::constant_pad_nd(a8.view(at::kByte), {0, 0, 0, pad}, 0)
             .view(a.scalar_type());
    sa = at::constant_pad_nd(sa, {0, 0, 0, pad}, 1);
  }
  int64_t kBlocks = a.size(1) / kFp8Block;
  int64_t kPad = square ? (4 - kBlocks % 4) % 4 : 0;
  if (kPad) {
    a8 = padColumns(a8, kPad * kFp8Block, 0);
    b8 = padColumns(b8, kPad * kFp8Block, 0);
    sa = padColumns(sa, kPad, 1);
    sb = padColumns(sb, kPad, 1);
  }
  sa = sa.t().contiguous().t();
  sb = square ? sb.contiguous().t() : sb.t().contiguous();
  at::Tensor y = at::_scaled_mm(a8, b8.contiguous().t(), sa, sb, std::nullopt,
                                std::nullopt, at::kBFloat16,
                                /*use_fast_accum=*/false);
  return pad ? y.narrow(0, 0, m) : y;
}
#endif

} // namespace

at::Tensor splitlinear::blockScaledMm(
    const at::Tensor &a, const at::Tensor &aScaleInv, const at::Tensor &b,
    const at::Tensor &bScaleInv, c10::string_view bBlocks,
    const std::optional<at::Tensor> &bias, at::ScalarType outDtype) {
  TORCH_CHECK(bBlocks == "128x128" || bBlocks == "1x128", kMmOp,
              ": b_blocks must be \"128x128\" or \"1x128\", got \"", bBlocks,
              "\"");
  bool square = bBlocks == "128x128";
  TORCH_CHECK(a.defined() && a.dim() == 2 && isFp8(a.scalar_type()), kMmOp,
              ": a must be a 2-D FP8 tensor [M, K] (float8_e4m3fn or "
              "float8_e5m2)");
  TORCH_CHECK(b.defined() && b.dim() == 2 && isFp8(b.scalar_type()), kMmOp,
              ": b must be a 2-D FP8 tensor [N, K] (float8_e4m3fn or "
              "float8_e5m2)");
  TORCH_CHECK(b.device() == a.device(), kMmOp, ": b is on ", b.device(),
              " but a is on ", a.device());
  int64_t m = a.size(0), k = a.size(1), n = b.size(0);
  TORCH_CHECK(b.size(1) == k, kMmOp, ": b has ", b.size(1),
              " columns but a has K = ", k);
  TORCH_CHECK(k % kFp8Block == 0, kMmOp, ": K = ", k,
              " is not a multiple of 128 (the scale blocks)");
  TORCH_CHECK(!square || n % kFp8Block == 0, kMmOp, ": b has ", n,
              " rows; 128x128 blocks need a multiple of 128");
  checkOutDtype(outDtype, kMmOp);
  checkScales(aScaleInv, m, k / kFp8Block, "a_scale_inv", a.device());
  checkScales(bScaleInv, square ? n / kFp8Block : n, k / kFp8Block,
              "b_scale_inv", a.device());
  if (bias) {
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == n, kMmOp,
                ": bias must be 1-D with ", n, " elements (the rows of b)");
    TORCH_CHECK(bias->scalar_type() == outDtype, kMmOp, ": bias has dtype ",
                bias->scalar_type(), " but out_dtype is ", outDtype);
    TORCH_CHECK(bias->device() == a.device(), kMmOp, ": bias is on ",
                bias->device(), " but a is on ", a.device());
  }
  c10::OptionalDeviceGuard guard(at::device_of(a));
  at::Tensor y;
  if (m == 0 || n == 0) {
    y = at::zeros({m, n}, a.options().dtype(at::kFloat));
  } else if (a.is_cuda()) {
#ifdef SPLITLINEAR_TORCH_CUDA
    y = blockScaledMmCuda(a, aScaleInv, b, bScaleInv, square);
#else
    TORCH_CHECK(false, kMmOp, ": this build has no CUDA support");
#endif
  } else {
    TORCH_CHECK(a.is_cpu(), kMmOp, ": device ", a.device(),
                " is not supported (CPU and CUDA)");
    y = at::matmul(dequantize(a, aScaleInv, false),
                   dequantize(b, bScaleInv, square).t());
  }
  if (bias)
    y = y.to(at::kFloat).add_(bias->to(at::kFloat));
  return y.to(outDtype);
}

void splitlinear::checkBlockwiseCache(bool cacheWeights, const char *op) {
  TORCH_CHECK(!cacheWeights, op, ": cache_weights is not supported with ",
              "recipe \"blockwise\" (the FP8 weight cache holds per-part ",
              "tensorwise casts); pass cache_weights=False (backend option "
              "fp8_weight_cache off)");
}

namespace {

at::Tensor concatBias(std::optional<at::TensorList> bias) {
  if (!bias)
    return at::Tensor();
  return bias->size() == 1 ? (*bias)[0] : at::cat(*bias);
}

/// The forward GEMM of the recipe: x2d [M, K] quantized as x8, sx, and
/// the parts.
at::Tensor forwardGemm(const at::Tensor &x8, const at::Tensor &sx,
                       at::TensorList weight, const at::Tensor &bias,
                       at::ScalarType outDtype, bool pow2) {
  auto [w8, sw] = quantizeWeight(weight, /*transposed=*/false, pow2);
  return ops().blockScaledMm.call(
      x8, sx, w8, sw, "128x128",
      bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt,
      outDtype);
}

std::vector<c10::SymInt> outputShape(const at::Tensor &input,
                                     const c10::SymInt &n) {
  std::vector<c10::SymInt> shape(input.sym_sizes().begin(),
                                 input.sym_sizes().end());
  shape.back() = n;
  return shape;
}

at::Tensor flatten2d(const at::Tensor &t) {
  return t.reshape_symint({-1, t.sym_size(-1)});
}

class Fp8BlockwiseFunction
    : public torch::autograd::Function<Fp8BlockwiseFunction> {
public:
  /// `parts` holds the weight parts, then (when `hasBias`) the bias parts.
  static at::Tensor forward(torch::autograd::AutogradContext *ctx,
                            const at::Tensor &input, at::TensorList parts,
                            int64_t numWeights, bool hasBias, bool pow2) {
    std::vector<at::Tensor> weight(parts.begin(), parts.begin() + numWeights);
    std::optional<at::TensorList> bias;
    if (hasBias)
      bias = parts.slice(numWeights);
    checkFp8LinearArgs(input, weight, bias, kLinearOp, /*blockwise=*/true);
    SavedCall call = saveCall(ctx, input, parts, numWeights, hasBias);
    // Detached aliases, as Fp8Autograd.cpp saves them (an in-place change
    // before backward raises autograd's version error).
    std::vector<at::Tensor> saved;
    if (call.needs.input)
      for (const at::Tensor &w : weight)
        saved.push_back(w.detach());
    at::AutoDispatchBelowADInplaceOrView guard;
    at::Tensor x2d = flatten2d(input);
    at::Tensor x8, sx;
    if (call.needs.anyWeight()) {
      auto [rows, rowsScaleInv, cols, colsScaleInv] =
          quantizeRowsAndCols(x2d, pow2);
      x8 = rows;
      sx = rowsScaleInv;
      saved.push_back(cols);
      saved.push_back(colsScaleInv);
    } else {
      std::tie(x8, sx) = quantizeRows(x2d, pow2);
    }
    at::Tensor y = forwardGemm(x8, sx, weight, concatBias(bias),
                               input.scalar_type(), pow2);
    ctx->save_for_backward(saved);
    ctx->saved_data["pow2"] = pow2;
    ctx->saved_data["weight_dtype"] = weight[0].scalar_type();
    ctx->saved_data["input_dtype"] = input.scalar_type();
    return y.view_symint(outputShape(input, y.sym_size(1)));
  }

  static torch::autograd::variable_list
  backward(torch::autograd::AutogradContext *ctx,
           torch::autograd::variable_list gradOutputs) {
    TORCH_CHECK(!at::GradMode::is_enabled(), kLinearOp,
                ": double backward (create_graph=True) is not supported");
    at::Tensor grad = gradOutputs[0];
    std::vector<at::Tensor> saved = ctx->get_saved_variables();
    SavedCall call = loadCall(ctx);
    const GradNeeds &needs = call.needs;
    int64_t n = static_cast<int64_t>(call.rows.size());
    bool pow2 = ctx->saved_data["pow2"].toBool();
    at::ScalarType weightDtype = ctx->saved_data["weight_dtype"].toScalarType();
    at::ScalarType inputDtype = ctx->saved_data["input_dtype"].toScalarType();
    const OpHandles &h = ops();
    torch::autograd::variable_list grads(1 + n + (call.hasBias ? n : 0) + 3);
    at::Tensor g2d = flatten2d(grad);
    // dy in 1×128 blocks along N (dgrad) and along M (wgrad), from one read
    // when both are needed (wgrad alone takes the dual too: rare, a frozen
    // input).
    at::Tensor dy8, sdy, dy8t, sdyt;
    if (needs.anyWeight())
      std::tie(dy8, sdy, dy8t, sdyt) = quantizeRowsAndCols(g2d, pow2);
    else
      std::tie(dy8, sdy) = quantizeRows(g2d, pow2);
    size_t next = 0;
    if (needs.input) {
      std::vector<at::Tensor> weight(saved.begin(), saved.begin() + n);
      next += n;
      // W8ᵀ: the forward's W8 and scales, transposed (the same bytes).
      auto [w8t, swt] = quantizeWeight(weight, /*transposed=*/true, pow2);
      at::Tensor dx = h.blockScaledMm.call(dy8, sdy, w8t, swt, "128x128",
                                           std::nullopt, inputDtype);
      grads[0] = dx.view_symint(outputShape(grad, dx.sym_size(1)));
    }
    if (needs.anyWeight()) {
      const at::Tensor &x8t = saved[next];
      const at::Tensor &sxt = saved[next + 1];
      // One GEMM per run of consecutive trainable parts: dyᵀ's rows are
      // per output column, so a run's rows (and their 1×128 scales along M)
      // are a row block.
      for (const WgradRun &run : wgradRuns(needs)) {
        int64_t begin = call.offsets[run.begin];
        int64_t rows = call.offsets[run.end] - begin;
        bool whole = run.begin == 0 && run.end == n;
        at::Tensor d = whole ? dy8t : dy8t.narrow(0, begin, rows);
        at::Tensor sd = whole ? sdyt : sdyt.narrow(0, begin, rows);
        at::Tensor dw = h.blockScaledMm.call(d, sd, x8t, sxt, "1x128",
                                             std::nullopt, weightDtype);
        for (int64_t p = run.begin; p < run.end; ++p)
          grads[1 + p] = dw.narrow(0, call.offsets[p] - begin, call.rows[p]);
      }
    }
    if (call.hasBias) {
      std::vector<at::Tensor> db = biasGradients(grad, call);
      for (int64_t p = 0; p < n; ++p)
        grads[1 + n + p] = db[p];
    }
    return grads;
  }
};

} // namespace

at::Tensor splitlinear::fp8LinearBlockwise(const at::Tensor &input,
                                           at::TensorList weight,
                                           std::optional<at::TensorList> bias,
                                           bool pow2) {
  checkFp8LinearArgs(input, weight, bias, kLinearOp, /*blockwise=*/true);
  auto [x8, sx] = quantizeRows(flatten2d(input), pow2);
  at::Tensor y =
      forwardGemm(x8, sx, weight, concatBias(bias), input.scalar_type(), pow2);
  return y.view_symint(outputShape(input, y.sym_size(1)));
}

at::Tensor splitlinear::fp8LinearBlockwiseAutograd(
    const at::Tensor &input, at::TensorList weight,
    std::optional<at::TensorList> bias, bool pow2) {
  std::vector<at::Tensor> parts(weight.begin(), weight.end());
  bool hasBias = bias.has_value();
  if (hasBias)
    parts.insert(parts.end(), bias->begin(), bias->end());
  return Fp8BlockwiseFunction::apply(input, at::TensorList(parts),
                                     static_cast<int64_t>(weight.size()),
                                     hasBias, pow2);
}

namespace {
/// `parts` [R_i, C] as one [ΣR_i, C] tensor: in place when they are row
/// blocks of one row-major buffer, back to back (as convert_to_fp8_serving
/// packs a group's weights and their block scales), else one copy.
/// `adjacent` says which.
at::Tensor packedRows(at::TensorList parts, bool &adjacent) {
  adjacent = true;
  if (parts.size() == 1)
    return parts[0];
  int64_t c = parts[0].size(1), rows = 0;
  size_t bytesPerRow = c * parts[0].element_size();
  const uint8_t *next = nullptr;
  for (size_t i = 0; i < parts.size(); ++i) {
    const at::Tensor &p = parts[i];
    auto *begin = static_cast<const uint8_t *>(p.const_data_ptr());
    adjacent = adjacent && p.stride(1) == 1 && p.stride(0) == c &&
               p.storage().is_alias_of(parts[0].storage()) &&
               (i == 0 || begin == next);
    next = begin + p.size(0) * bytesPerRow;
    rows += p.size(0);
  }
  return adjacent ? parts[0].as_strided({rows, c}, {c, 1}) : at::cat(parts);
}
} // namespace

at::Tensor splitlinear::fp8ServingLinearBlockwise(
    const at::Tensor &input, at::TensorList weight,
    at::TensorList weightScaleInv, std::optional<at::TensorList> bias,
    at::ScalarType outDtype, const std::optional<at::Tensor> &inputScaleInv) {
  const char *op = kServingOp;
  TORCH_CHECK(!inputScaleInv, op,
              ": input_scale_inv is not supported with axis \"blocks\" (the "
              "graph quantizes activations per row only)");
  checkOutDtype(outDtype, op);
  int64_t k = input.size(-1);
  TORCH_CHECK(k % kFp8Block == 0, op, ": input has K = ", k,
              " features; axis \"blocks\" needs a multiple of 128");
  for (size_t i = 0; i < weight.size(); ++i) {
    const at::Tensor &w = weight[i];
    std::string name = "weight[" + std::to_string(i) + "]";
    TORCH_CHECK(w.dim() == 2 && w.scalar_type() == at::kFloat8_e4m3fn, op, ": ",
                name, " must be a 2-D float8_e4m3fn tensor, got ",
                w.scalar_type(), " ", w.sizes());
    TORCH_CHECK(w.device() == input.device(), op, ": ", name, " is on ",
                w.device(), " but input is on ", input.device());
    TORCH_CHECK(w.size(1) == k, op, ": ", name, " has ", w.size(1),
                " columns but input has K = ", k);
    TORCH_CHECK(w.size(0) % kFp8Block == 0, op, ": ", name, " has ", w.size(0),
                " rows; axis \"blocks\" needs a multiple of 128");
    const at::Tensor &s = weightScaleInv[i];
    TORCH_CHECK(s.dim() == 2 && s.scalar_type() == at::kFloat &&
                    s.size(0) == w.size(0) / kFp8Block &&
                    s.size(1) == k / kFp8Block,
                op, ": weight_scale_inv[", i, "] must be float32 [",
                w.size(0) / kFp8Block, ", ", k / kFp8Block,
                "] (one scale per 128x128 block of ", name, "), got ",
                s.scalar_type(), " ", s.sizes());
    TORCH_CHECK(s.device() == input.device(), op, ": weight_scale_inv[", i,
                "] is on ", s.device(), " but input is on ", input.device());
  }
  int64_t n = 0;
  for (const at::Tensor &w : weight)
    n += w.size(0);
  at::Tensor b = concatBias(bias);
  if (b.defined()) {
    TORCH_CHECK(bias->size() == weight.size() && b.dim() == 1 && b.size(0) == n,
                op, ": bias must hold one [N_i] tensor per weight part (",
                weight.size(), " parts, ", n, " rows in all)");
    TORCH_CHECK(b.scalar_type() == outDtype && b.device() == input.device(), op,
                ": bias must be ", outDtype, " on ", input.device(),
                " (the output's dtype), got ", b.scalar_type(), " on ",
                b.device());
  }
  // The runtime's 1×128 quantization: one launch, the training recipe's
  // rule with exact scales.
  auto [x8, unused, sx] =
      fp8Quantize(input, at::kFloat8_e4m3fn, "blocks", std::nullopt,
                  /*writeOut=*/true, /*writeTransposed=*/false,
                  /*pow2Scales=*/false);
  bool weightsAdjacent = true, scalesAdjacent = true;
  at::Tensor w8 = packedRows(weight, weightsAdjacent);
  at::Tensor sw = packedRows(weightScaleInv, scalesAdjacent);
  PathCounters &count = counters().scaled;
  (weightsAdjacent ? count.views : count.cats)
      .fetch_add(1, std::memory_order_relaxed);
  at::Tensor y = ops().blockScaledMm.call(
      x8, sx, w8, sw, "128x128",
      b.defined() ? std::optional<at::Tensor>(b) : std::nullopt, outDtype);
  return y.view_symint(outputShape(input, y.sym_size(1)));
}

//===- Fp8Ops.cpp - the FP8 ops of torch.ops.splitlinear --------*- C++ -*-===//
//
// Implements Fp8Ops.h. The quantization ops call the runtime's FP8 entry
// points directly (they have no weight parts to combine); `scaled_linear`
// runs a SCALED_FPROP kernel of the cache, whose checked view decides per
// call whether FP8 parts are used in place. Errors name the argument.
//
//===----------------------------------------------------------------------===//

#include "Fp8Ops.h"
#include "Counters.h"
#include "Fp8Blockwise.h"
#include "Fp8WeightCache.h"
#include "KernelCall.h"
#include "KernelPlan.h"
#include "RuntimeContext.h"

#include <ATen/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <utility>
#include <vector>

using namespace splitlinear;

namespace {

/// The GEMM needs K and N in multiples of 16 (cuBLASLt FP8 on sm89+; the
/// CPU target checks the same, so CI sees the same errors).
constexpr int64_t kFp8Multiple = 16;

void checkHighPrecision(const at::Tensor &t, const char *op,
                        const std::string &name) {
  at::ScalarType s = t.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16, op,
              ": ", name, " has dtype ", s,
              "; FP8 quantization takes float32, float16 or bfloat16");
}

void checkFp8(at::ScalarType s, const char *op, const std::string &name) {
  TORCH_CHECK(fp8DtypeCode(s) >= 0, op, ": ", name, " has dtype ", s,
              "; FP8 means float8_e4m3fn or float8_e5m2");
}

void checkScaleVector(const at::Tensor &t, int64_t n, const char *op,
                      const std::string &name, const at::Tensor &ref) {
  TORCH_CHECK(t.defined() && t.dim() == 1, op, ": ", name,
              " must be a 1-D float32 tensor");
  TORCH_CHECK(t.scalar_type() == at::kFloat, op, ": ", name,
              " has dtype ", t.scalar_type(), " but scales are float32");
  TORCH_CHECK(t.device() == ref.device(), op, ": ", name, " is on ",
              t.device(), " but input is on ", ref.device());
  TORCH_CHECK(t.size(0) == 1 || t.size(0) == n, op, ": ", name, " has ",
              t.size(0), " entries; expected 1 or ", n);
}

/// What a part's dtype must be.
enum class PartType { HighPrecision, Fp8 };

/// Checks the parts [N_i, K] named `what`[i] for `op`: 2-D, of one dtype of
/// `type`, on `device`, with `k` columns (`ref` names where the device and
/// K come from) and, with `rowMultiple` > 0, a row count that is a multiple
/// of it (`rowsNeed` says who needs it, e.g. "FP8 GEMMs need").
/// Returns Σ N_i.
int64_t checkParts(at::TensorList parts, const char *what, PartType type,
                   at::Device device, int64_t k, const char *ref,
                   int64_t rowMultiple, const char *rowsNeed, const char *op) {
  int64_t n = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string name = std::string(what) + "[" + std::to_string(i) + "]";
    const at::Tensor &p = parts[i];
    TORCH_CHECK(p.defined() && p.dim() == 2, op, ": ", name,
                " must be 2-D [N_i, K]");
    if (type == PartType::Fp8)
      checkFp8(p.scalar_type(), op, name);
    else
      checkHighPrecision(p, op, name);
    TORCH_CHECK(p.scalar_type() == parts[0].scalar_type(), op, ": ", name,
                " has dtype ", p.scalar_type(), " but ", what, "[0] has ",
                parts[0].scalar_type());
    TORCH_CHECK(p.device() == device, op, ": ", name, " is on ", p.device(),
                " but ", ref, " is on ", device);
    TORCH_CHECK(p.size(1) == k, op, ": ", name, " has ", p.size(1),
                " columns but ", ref, " has K = ", k);
    TORCH_CHECK(rowMultiple == 0 || p.size(0) % rowMultiple == 0, op, ": ",
                name, " has ", p.size(0), " rows; ", rowsNeed,
                " a multiple of ", rowMultiple);
    n += p.size(0);
  }
  return n;
}

/// Checks one bias part [N_i] per weight part for `op`: of `dtype` (`ref`
/// says whose: "out_dtype is", "input has") and on the input's `device`.
void checkBiasParts(at::TensorList bias, at::TensorList weight,
                    at::ScalarType dtype, const char *ref, at::Device device,
                    const char *op) {
  TORCH_CHECK(bias.size() == weight.size(), op, ": bias has ", bias.size(),
              bias.size() == 1 ? " tensor" : " tensors", " but weight has ",
              weight.size());
  for (size_t i = 0; i < bias.size(); ++i) {
    std::string name = "bias[" + std::to_string(i) + "]";
    const at::Tensor &b = bias[i];
    TORCH_CHECK(b.defined() && b.dim() == 1 && b.size(0) == weight[i].size(0),
                op, ": ", name, " must be 1-D with ", weight[i].size(0),
                " elements (the rows of weight[", i, "])");
    TORCH_CHECK(b.scalar_type() == dtype, op, ": ", name, " has dtype ",
                b.scalar_type(), " but ", ref, " ", dtype);
    TORCH_CHECK(b.device() == device, op, ": ", name, " is on ", b.device(),
                " but input is on ", device);
  }
}

slinrt_quant_axis parseAxis(c10::string_view axis, const char *op) {
  if (axis == "tensor")
    return SLINRT_QUANT_TENSOR;
  if (axis == "rows")
    return SLINRT_QUANT_ROWS;
  if (axis == "blocks")
    return SLINRT_QUANT_BLOCKS;
  TORCH_CHECK(axis == "cols", op, ": axis must be \"tensor\", \"rows\", ",
              "\"cols\" or \"blocks\", got \"", axis, "\"");
  return SLINRT_QUANT_COLS;
}

/// `t` [R, C] itself when it is row-major with unit column stride (the
/// layout of the quantization kernels and of the FP8 GEMM's K-major
/// operands), else a contiguous copy (a transposed or expanded tensor).
at::Tensor rowMajor(const at::Tensor &t) {
  bool unitColumns = t.size(1) <= 1 || t.stride(1) == 1;
  bool rowsApart = t.size(0) <= 1 || t.stride(0) >= t.size(1);
  return unitColumns && rowsApart ? t : t.contiguous();
}

/// An FP8 GEMM operand [R, C] as the runtime takes it: `rowMajor(t)` when
/// its first element is 16-byte aligned and its row stride a multiple of 16
/// elements (cuBLASLt's FP8 requirements, which the CPU target checks too),
/// else a copy into a fresh, aligned allocation. A slice at an odd offset
/// (a memory-mapped checkpoint tensor, `buffer[1:]`) is so copied rather
/// than refused.
at::Tensor fp8GemmOperand(const at::Tensor &t) {
  at::Tensor r = rowMajor(t);
  bool aligned = reinterpret_cast<uintptr_t>(r.data_ptr()) % 16 == 0;
  bool strided = r.size(0) <= 1 || r.stride(0) % 16 == 0;
  if (r.numel() == 0 || (aligned && strided))
    return r;
  return at::empty(r.sizes(), r.options()).copy_(r);
}

/// The `dtype` argument of the quantization ops: an FP8 type.
void checkFp8Target(at::ScalarType dtype, const char *op) {
  TORCH_CHECK(fp8DtypeCode(dtype) >= 0, op, ": dtype is ", dtype,
              "; FP8 means float8_e4m3fn or float8_e5m2");
}

/// The runtime's scale rule for `pow2Scales`.
int32_t scaleRule(bool pow2Scales) {
  return pow2Scales ? SLINRT_SCALE_POW2 : SLINRT_SCALE_EXACT;
}

float *floatData(const at::Tensor &t) {
  return t.numel() ? t.data_ptr<float>() : nullptr;
}
void *bytes(const at::Tensor &t) { return t.numel() ? t.data_ptr() : nullptr; }

/// A dense float32 vector of `n` entries holding `v`'s one entry or its n.
at::Tensor asVector(const at::Tensor &v, int64_t n) {
  return v.size(0) == n ? v.contiguous() : v.expand({n}).contiguous();
}

/// `c` as a dense float32 [k] on input's device, or an error of `op`.
at::Tensor checkedColScale(const at::Tensor &c, const at::Tensor &input,
                           int64_t k, const char *op) {
  TORCH_CHECK(c.defined() && c.dim() == 1 && c.scalar_type() == at::kFloat,
              op, ": col_scale must be a 1-D float32 tensor [K]");
  TORCH_CHECK(c.device() == input.device(), op, ": col_scale is on ",
              c.device(), " but input is on ", input.device());
  TORCH_CHECK(c.size(0) == k, op, ": col_scale has ", c.size(0),
              " entries but input has K = ", k);
  return c.contiguous();
}

/// Checks the input and target dtype of a quantization op `op`: input at
/// least 1-D [..., K] of a high-precision type, dtype an FP8 type.
void checkQuantizeArgs(const at::Tensor &input, at::ScalarType dtype,
                       const char *op) {
  TORCH_CHECK(input.defined() && input.dim() >= 1, op,
              ": input must be a tensor of at least 1 dim [..., K]");
  checkHighPrecision(input, op, "input");
  checkFp8Target(dtype, op);
}

/// The input of a quantization op as the runtime takes it.
struct QuantizeInput {
  at::Tensor x;        ///< input as a row-major [m, k] matrix
  int64_t m, k;        ///< its sizes
  at::Tensor colScale; ///< the checked col_scale, undefined without one
};

/// `input` (checked by checkQuantizeArgs) flattened to a row-major [m, k]
/// matrix, and `colScale` checked against it; call it under the input's
/// device guard.
QuantizeInput quantizeInput(const at::Tensor &input,
                            const std::optional<at::Tensor> &colScale,
                            const char *op) {
  at::Tensor x = rowMajor(flatten2d(input));
  int64_t m = x.size(0), k = x.size(1);
  at::Tensor scale;
  if (colScale)
    scale = checkedColScale(*colScale, input, k, op);
  return {std::move(x), m, k, std::move(scale)};
}

#define SPLITLINEAR_DEVICE_GUARD(t)                                            \
  c10::OptionalDeviceGuard deviceGuard(at::device_of(t))

} // namespace

Fp8Recipe splitlinear::parseFp8Recipe(c10::string_view name,
                                      const char *op) {
  if (name == "tensorwise")
    return Fp8Recipe::Tensorwise;
  if (name == "rowwise")
    return Fp8Recipe::Rowwise;
  if (name == "blockwise")
    return Fp8Recipe::Blockwise;
  if (name == "blockwise_fp32_scales")
    return Fp8Recipe::BlockwiseFp32Scales;
  TORCH_CHECK(name == "rowwise_with_gw_hp", op,
              ": recipe must be \"tensorwise\", \"rowwise\", ",
              "\"rowwise_with_gw_hp\", \"blockwise\" or ",
              "\"blockwise_fp32_scales\", got \"", name, "\"");
  return Fp8Recipe::RowwiseWithGwHp;
}

bool splitlinear::isBlockwise(Fp8Recipe recipe) {
  return recipe == Fp8Recipe::Blockwise ||
         recipe == Fp8Recipe::BlockwiseFp32Scales;
}

at::ScalarType splitlinear::fp8GradDtype(Fp8Recipe recipe) {
  return recipe == Fp8Recipe::Tensorwise ? at::kFloat8_e5m2
                                         : at::kFloat8_e4m3fn;
}

bool splitlinear::fp8Pow2Scales(Fp8Recipe recipe) {
  return recipe != Fp8Recipe::Tensorwise &&
         recipe != Fp8Recipe::BlockwiseFp32Scales;
}

//===----------------------------------------------------------------------===//
// fp8_quantize
//===----------------------------------------------------------------------===//

std::tuple<at::Tensor, at::Tensor, at::Tensor>
splitlinear::fp8Quantize(const at::Tensor &input, at::ScalarType dtype,
                         c10::string_view axis,
                         const std::optional<at::Tensor> &colScale,
                         bool writeOut, bool writeTransposed, bool pow2Scales) {
  constexpr const char *op = "splitlinear.fp8_quantize";
  checkQuantizeArgs(input, dtype, op);
  slinrt_quant_axis quantAxis = parseAxis(axis, op);
  SPLITLINEAR_DEVICE_GUARD(input);
  bool blocks = quantAxis == SLINRT_QUANT_BLOCKS;
  TORCH_CHECK(!blocks || input.size(-1) % SLINRT_QUANT_BLOCK == 0, op,
              ": input has K = ", input.size(-1),
              " features; axis \"blocks\" needs a multiple of ",
              SLINRT_QUANT_BLOCK);
  TORCH_CHECK(!blocks || !writeTransposed, op,
              ": write_transposed is not supported with axis \"blocks\"");
  auto [x, m, k, scale] = quantizeInput(input, colScale, op);
  auto fp8 = input.options().dtype(dtype);
  at::Tensor out = at::empty({writeOut ? m : 0, writeOut ? k : 0}, fp8);
  at::Tensor outT =
      at::empty({writeTransposed ? k : 0, writeTransposed ? m : 0}, fp8);
  // Blocks: [M, K/128] row-major.
  std::vector<int64_t> scales = {quantAxis == SLINRT_QUANT_TENSOR ? 1
                                 : quantAxis == SLINRT_QUANT_ROWS ? m
                                                                  : k};
  if (blocks)
    scales = {m, k / SLINRT_QUANT_BLOCK};
  auto f32 = input.options().dtype(at::kFloat);
  at::Tensor scaleInv = at::empty(scales, f32);
  if (m == 0 || k == 0) {
    // Nothing to quantize: amax 0, so scale 1 (the runtime's convention).
    scaleInv.fill_(1.0);
    return {out, outT, scaleInv};
  }
  at::Tensor amax = at::empty(scales, f32);
  at::DataPtr workspace;
  slinrt_context *ctx = contextFor(input.device(), op, workspace);
  slinrt_memref2d desc = descriptor2d(x);
  slinrt_quantize_fp8(
      ctx, static_cast<slinrt_dtype>(dtypeCode(x.scalar_type())),
      static_cast<slinrt_dtype>(fp8DtypeCode(dtype)), quantAxis, &desc,
      scale.defined() ? floatData(scale) : nullptr, floatData(amax),
      floatData(scaleInv), writeOut ? bytes(out) : nullptr,
      writeTransposed ? bytes(outT) : nullptr, scaleRule(pow2Scales));
  checkContext(ctx, op);
  return {out, outT, scaleInv};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>
splitlinear::fp8QuantizeDual(const at::Tensor &input, at::ScalarType dtype,
                             const std::optional<at::Tensor> &colScale,
                             c10::string_view axis, bool pow2Scales) {
  constexpr const char *op = "splitlinear.fp8_quantize_dual";
  checkQuantizeArgs(input, dtype, op);
  TORCH_CHECK(axis == "tensor" || axis == "rows" || axis == "blocks", op,
              ": axis must be \"tensor\", \"rows\" or \"blocks\", got \"", axis,
              "\"");
  bool rows = axis == "rows", blocks = axis == "blocks";
  TORCH_CHECK(rows || blocks || colScale.has_value(), op,
              ": col_scale is required with axis \"tensor\"");
  TORCH_CHECK(!blocks || !colScale.has_value(), op,
              ": col_scale is not supported with axis \"blocks\"");
  TORCH_CHECK(!blocks || input.size(-1) % SLINRT_QUANT_BLOCK == 0, op,
              ": input has K = ", input.size(-1),
              " features; axis \"blocks\" needs a multiple of ",
              SLINRT_QUANT_BLOCK);
  SPLITLINEAR_DEVICE_GUARD(input);
  auto [x, m, k, scale] = quantizeInput(input, colScale, op);
  auto fp8 = input.options().dtype(dtype);
  auto f32 = input.options().dtype(at::kFloat);
  at::Tensor out = at::empty({m, k}, fp8);
  at::Tensor outT, scaleInv, scaleInvT;
  if (blocks) {
    // outT [K, M'], M' = M rounded up to 128 (zero columns past M).
    int64_t mBlocks = (m + SLINRT_QUANT_BLOCK - 1) / SLINRT_QUANT_BLOCK;
    outT = at::empty({k, mBlocks * SLINRT_QUANT_BLOCK}, fp8);
    scaleInv = at::empty({m, k / SLINRT_QUANT_BLOCK}, f32);
    scaleInvT = at::empty({k, mBlocks}, f32);
  } else {
    outT = at::empty({k, m}, fp8);
    scaleInv = at::empty({rows ? m : 1}, f32);
    scaleInvT = at::empty({rows ? k : 1}, f32);
  }
  if (m == 0 || k == 0) {
    scaleInv.fill_(1.0);
    scaleInvT.fill_(1.0);
    return {out, scaleInv, outT, scaleInvT};
  }
  at::DataPtr workspace;
  slinrt_context *ctx = contextFor(input.device(), op, workspace);
  slinrt_memref2d desc = descriptor2d(x);
  auto src = static_cast<slinrt_dtype>(dtypeCode(x.scalar_type()));
  auto dst = static_cast<slinrt_dtype>(fp8DtypeCode(dtype));
  const float *cs = scale.defined() ? floatData(scale) : nullptr;
  if (blocks) {
    slinrt_quantize_fp8_dual_blocks(
        ctx, src, dst, &desc, nullptr, floatData(scaleInv), bytes(out),
        floatData(scaleInvT), bytes(outT), scaleRule(pow2Scales));
  } else if (rows) {
    slinrt_quantize_fp8_dual_rows(
        ctx, src, dst, &desc, cs, nullptr, floatData(scaleInv), bytes(out),
        floatData(scaleInvT), bytes(outT), scaleRule(pow2Scales));
  } else {
    at::Tensor amax = at::empty({2}, f32);
    slinrt_quantize_fp8_dual(
        ctx, src, dst, &desc, cs, floatData(amax), floatData(scaleInv),
        bytes(out), floatData(scaleInvT), bytes(outT), scaleRule(pow2Scales));
  }
  checkContext(ctx, op);
  return {out, scaleInv, outT, scaleInvT};
}

//===----------------------------------------------------------------------===//
// fp8_cast_parts
//===----------------------------------------------------------------------===//

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>
splitlinear::fp8CastParts(at::TensorList parts, at::ScalarType dtype,
                          bool writeTransposed, bool cache, bool pow2Scales) {
  constexpr const char *op = "splitlinear.fp8_cast_parts";
  if (cache)
    return cachedFp8CastParts(parts, dtype, writeTransposed, pow2Scales, [&] {
      return fp8CastParts(parts, dtype, writeTransposed, /*cache=*/false,
                          pow2Scales);
    });
  TORCH_CHECK(!parts.empty(), op, ": parts must hold at least one tensor");
  checkFp8Target(dtype, op);
  const at::Tensor &first = parts[0];
  TORCH_CHECK(first.defined() && first.dim() == 2, op,
              ": parts[0] must be 2-D [N_0, K]");
  int64_t k = first.size(1);
  int64_t n =
      checkParts(parts, "parts", PartType::HighPrecision, first.device(), k,
                 "parts[0]", /*rowMultiple=*/0, nullptr, op);
  std::vector<at::Tensor> dense;
  std::vector<slinrt_memref2d> descs;
  for (const at::Tensor &p : parts) {
    dense.push_back(rowMajor(p));
    descs.push_back(descriptor2d(dense.back()));
  }
  SPLITLINEAR_DEVICE_GUARD(first);
  auto fp8 = first.options().dtype(dtype);
  auto f32 = first.options().dtype(at::kFloat);
  int64_t numParts = static_cast<int64_t>(parts.size());
  at::Tensor w8 = at::empty({n, k}, fp8);
  at::Tensor w8T =
      at::empty({writeTransposed ? k : 0, writeTransposed ? n : 0}, fp8);
  at::Tensor scaleInv = at::empty({numParts}, f32);
  at::Tensor rowScaleInv = at::empty({n}, f32);
  if (n == 0 || k == 0) {
    scaleInv.fill_(1.0);
    rowScaleInv.fill_(1.0);
    return {w8, w8T, scaleInv, rowScaleInv};
  }
  at::Tensor amax = at::empty({numParts}, f32);
  at::DataPtr workspace;
  slinrt_context *ctx = contextFor(first.device(), op, workspace);
  auto src = static_cast<slinrt_dtype>(dtypeCode(first.scalar_type()));
  slinrt_amax_parts(ctx, src, numParts, descs.data(), floatData(amax));
  slinrt_cast_parts_fp8(
      ctx, src, static_cast<slinrt_dtype>(fp8DtypeCode(dtype)), numParts,
      descs.data(), floatData(amax), bytes(w8),
      writeTransposed ? bytes(w8T) : nullptr, floatData(scaleInv),
      floatData(rowScaleInv), scaleRule(pow2Scales));
  checkContext(ctx, op);
  return {w8, w8T, scaleInv, rowScaleInv};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
splitlinear::fp8QuantizeWeightBlocks(at::TensorList weight,
                                     at::ScalarType dtype, bool writeOut,
                                     bool writeTransposed, bool pow2Scales) {
  constexpr const char *op = "splitlinear.fp8_quantize_weight_blocks";
  TORCH_CHECK(!weight.empty(), op, ": weight must hold at least one part");
  checkFp8Target(dtype, op);
  const at::Tensor &first = weight[0];
  TORCH_CHECK(first.defined() && first.dim() == 2, op,
              ": weight[0] must be 2-D [N_0, K]");
  int64_t k = first.size(1);
  int64_t n =
      checkParts(weight, "weight", PartType::HighPrecision, first.device(), k,
                 "weight[0]", /*rowMultiple=*/0, nullptr, op);
  for (size_t i = 0; i < weight.size(); ++i)
    TORCH_CHECK(weight[i].size(0) % SLINRT_QUANT_BLOCK == 0 &&
                    k % SLINRT_QUANT_BLOCK == 0,
                op, ": weight[", i, "] is ", weight[i].sizes(),
                "; 128x128 blocks need both sizes multiples of ",
                SLINRT_QUANT_BLOCK);
  std::vector<at::Tensor> dense;
  std::vector<slinrt_memref2d> descs;
  for (const at::Tensor &p : weight) {
    dense.push_back(rowMajor(p));
    descs.push_back(descriptor2d(dense.back()));
  }
  SPLITLINEAR_DEVICE_GUARD(first);
  auto fp8 = first.options().dtype(dtype);
  at::Tensor out = at::empty({writeOut ? n : 0, writeOut ? k : 0}, fp8);
  at::Tensor outT =
      at::empty({writeTransposed ? k : 0, writeTransposed ? n : 0}, fp8);
  at::Tensor scaleInv =
      at::empty({n / SLINRT_QUANT_BLOCK, k / SLINRT_QUANT_BLOCK},
                first.options().dtype(at::kFloat));
  if (n == 0 || k == 0)
    return {out, outT, scaleInv};
  at::DataPtr workspace;
  slinrt_context *ctx = contextFor(first.device(), op, workspace);
  slinrt_quantize_fp8_blocks_parts(
      ctx, static_cast<slinrt_dtype>(dtypeCode(first.scalar_type())),
      static_cast<slinrt_dtype>(fp8DtypeCode(dtype)),
      static_cast<int64_t>(weight.size()), descs.data(), /*amax=*/nullptr,
      floatData(scaleInv), writeOut ? bytes(out) : nullptr,
      writeTransposed ? bytes(outT) : nullptr, scaleRule(pow2Scales));
  checkContext(ctx, op);
  return {out, outT, scaleInv};
}

//===----------------------------------------------------------------------===//
// scaled_linear
//===----------------------------------------------------------------------===//

void splitlinear::checkOutDtype(at::ScalarType outDtype, const char *op) {
  TORCH_CHECK(outDtype == at::kFloat || outDtype == at::kHalf ||
                  outDtype == at::kBFloat16,
              op, ": out_dtype ", outDtype,
              " is not supported (float32, float16, bfloat16)");
}

at::Tensor splitlinear::scaledLinear(const at::Tensor &input,
                                     const at::Tensor &inputScaleInv,
                                     at::TensorList weight,
                                     const at::Tensor &weightScaleInv,
                                     std::optional<at::TensorList> bias,
                                     at::ScalarType outDtype, bool fastAccum) {
  constexpr const char *op = "splitlinear.scaled_linear";
  TORCH_CHECK(input.defined() && input.dim() >= 1, op,
              ": input must be a tensor of at least 1 dim [..., K]");
  checkFp8(input.scalar_type(), op, "input");
  checkOutDtype(outDtype, op);
  int64_t k = input.size(-1);
  TORCH_CHECK(k % kFp8Multiple == 0, op, ": input has K = ", k,
              " columns; FP8 GEMMs need a multiple of 16");
  TORCH_CHECK(!weight.empty(), op, ": weight must hold at least one tensor");
  at::ScalarType weightType = weight[0].scalar_type();
  int64_t n = checkParts(weight, "weight", PartType::Fp8, input.device(), k,
                         "input", kFp8Multiple, "FP8 GEMMs need", op);
  TORCH_CHECK(!(input.scalar_type() == at::kFloat8_e5m2 &&
                weightType == at::kFloat8_e5m2),
              op, ": input and weight are both float8_e5m2; the FP8 GEMM ",
              "takes e4m3fn x e4m3fn, e5m2 x e4m3fn or e4m3fn x e5m2");
  bool hasBias = bias.has_value();
  if (hasBias)
    checkBiasParts(*bias, weight, outDtype, "out_dtype is", input.device(), op);
  SPLITLINEAR_DEVICE_GUARD(input);
  // Both FP8 operands K-major (TN): a transposed or misaligned one is copied.
  at::Tensor x = fp8GemmOperand(flatten2d(input));
  int64_t m = x.size(0);
  checkScaleVector(inputScaleInv, m, op, "input_scale_inv", input);
  checkScaleVector(weightScaleInv, n, op, "weight_scale_inv", input);
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
  shape.back() = n;
  at::Tensor y = at::empty({m, n}, input.options().dtype(outDtype));
  if (m == 0 || n == 0)
    return y.view(shape);
  if (k == 0) {
    if (hasBias)
      y.copy_(at::cat(*bias).unsqueeze(0).expand({m, n}));
    else
      y.zero_();
    return y.view(shape);
  }
  // One scale on each side is cuBLASLt's tensorwise mode, but only for one
  // part: parts with their own scales need a vector on both sides (outer
  // vector mode takes no scalar).
  bool tensorwise = inputScaleInv.size(0) == 1 &&
                    weightScaleInv.size(0) == 1 && weight.size() == 1;
  at::Tensor sx = tensorwise ? inputScaleInv.contiguous()
                             : asVector(inputScaleInv, m);
  at::Tensor sw = tensorwise ? weightScaleInv.contiguous()
                             : asVector(weightScaleInv, n);
  int32_t scaling =
      tensorwise ? SLINRT_SCALING_TENSORWISE : SLINRT_SCALING_OUTER_VECTOR;
  KernelKey key =
      scaledKey(outDtype, input.scalar_type(), weightType, input.device(),
                static_cast<int64_t>(weight.size()), hasBias, scaling,
                fastAccum);
  Call call;
  call.matrix(x);
  call.vector(sx);
  for (const at::Tensor &w : weight)
    call.matrix(fp8GemmOperand(w));
  call.vector(sw);
  if (hasBias)
    for (const at::Tensor &b : *bias)
      call.vector(b);
  call.matrix(y);
  call.run(key, contextFor(input.device(), op, call.workspace), op,
           &counters().scaled);
  return y.view(shape);
}

//===----------------------------------------------------------------------===//
// fp8_linear (forward only)
//===----------------------------------------------------------------------===//

void splitlinear::checkFp8LinearArgs(const at::Tensor &input,
                                     at::TensorList weight,
                                     std::optional<at::TensorList> bias,
                                     const char *op, bool blockwise) {
  TORCH_CHECK(input.defined() && input.dim() >= 1, op,
              ": input must be a tensor of at least 1 dim [..., K]");
  checkHighPrecision(input, op, "input");
  // 128 under blockwise: the scale blocks are 1x128 along K and 128x128 over
  // each part, so that no block crosses a part.
  int64_t multiple = blockwise ? kFp8Block : kFp8Multiple;
  const char *need =
      blockwise ? "recipe \"blockwise\" needs" : "FP8 GEMMs need";
  // sym_size: the autograd kernel runs this on fake tensors, where size(-1)
  // would read (and so specialize) every dim, the row count M among them.
  int64_t k = input.sym_size(-1).guard_int(__FILE__, __LINE__);
  TORCH_CHECK(k % multiple == 0, op, ": input has K = ", k, " features; ", need,
              " a multiple of ", multiple);
  TORCH_CHECK(!weight.empty(), op, ": weight must hold at least one tensor");
  checkParts(weight, "weight", PartType::HighPrecision, input.device(), k,
             "input", multiple, need, op);
  if (bias)
    checkBiasParts(*bias, weight, input.scalar_type(), "input has",
                   input.device(), op);
}

at::Tensor splitlinear::fp8Linear(const at::Tensor &input,
                                  at::TensorList weight,
                                  std::optional<at::TensorList> bias,
                                  c10::string_view recipe,
                                  bool cacheWeights) {
  constexpr const char *op = "splitlinear.fp8_linear";
  Fp8Recipe r = parseFp8Recipe(recipe, op);
  if (isBlockwise(r)) {
    checkBlockwiseCache(cacheWeights, op);
    return fp8LinearBlockwise(input, weight, bias, fp8Pow2Scales(r));
  }
  checkFp8LinearArgs(input, weight, bias, op);
  bool pow2 = fp8Pow2Scales(r);
  auto [x8, unusedT, sx] = fp8Quantize(
      input, at::kFloat8_e4m3fn, r == Fp8Recipe::Tensorwise ? "tensor" : "rows",
      std::nullopt, /*writeOut=*/true, /*writeTransposed=*/false, pow2);
  auto [w8, unusedWT, partScaleInv, rowScaleInv] =
      fp8CastParts(weight, at::kFloat8_e4m3fn, /*writeTransposed=*/false,
                   cacheWeights, pow2);
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
  x8 = x8.view(shape);
  std::optional<std::vector<at::Tensor>> oneBias;
  if (bias)
    oneBias = std::vector<at::Tensor>{at::cat(*bias)};
  // One part's scalar only against x's scalar (tensorwise mode); against
  // per-row scales the spread vector, which needs no expanding copy.
  bool scalarWeightScale = weight.size() == 1 && r == Fp8Recipe::Tensorwise;
  return scaledLinear(
      x8, sx, {w8}, scalarWeightScale ? partScaleInv : rowScaleInv,
      oneBias ? std::optional<at::TensorList>(*oneBias) : std::nullopt,
      input.scalar_type(), /*fastAccum=*/true);
}

namespace {
/// The weight scale vector ŝ [ΣN_i] of `fp8_serving_linear`: one entry per
/// output column, each part's `scale` ([1]: the part's one scale, or [N_i]:
/// one per row). Parts' [N_i] vectors back to back in one storage (as
/// `convert_to_fp8_serving` packs them) are used in place; otherwise they
/// are copied into one vector (one small copy per call).
at::Tensor spreadWeightScales(at::TensorList scales, at::TensorList weight) {
  if (scales.size() == 1)
    return scales[0];
  bool adjacent = true;
  const float *next = nullptr;
  int64_t n = 0;
  for (size_t i = 0; i < scales.size(); ++i) {
    const at::Tensor &s = scales[i];
    int64_t rows = weight[i].size(0);
    adjacent = adjacent && s.size(0) == rows && (rows <= 1 || s.stride(0) == 1) &&
               s.storage().is_alias_of(scales[0].storage()) &&
               (i == 0 || s.const_data_ptr<float>() == next);
    next = s.const_data_ptr<float>() + rows;
    n += rows;
  }
  if (adjacent)
    return scales[0].as_strided({n}, {1});
  std::vector<at::Tensor> spread;
  spread.reserve(scales.size());
  for (size_t i = 0; i < scales.size(); ++i)
    spread.push_back(scales[i].expand({weight[i].size(0)}));
  return at::cat(spread);
}
} // namespace

at::Tensor splitlinear::fp8ServingLinear(const at::Tensor &input,
                                         at::TensorList weight,
                                         at::TensorList weightScaleInv,
                                         std::optional<at::TensorList> bias,
                                         c10::string_view axis,
                                         std::optional<at::ScalarType> outDtype,
                                         bool fastAccum,
                                         const std::optional<at::Tensor> &inputScaleInv) {
  constexpr const char *op = "splitlinear.fp8_serving_linear";
  TORCH_CHECK(input.defined() && input.dim() >= 1, op,
              ": input must be a tensor of at least 1 dim [..., K]");
  if (inputScaleInv) {
    // Quantized by the caller (the graph's own ops): FP8 with its scale_inv.
    checkFp8(input.scalar_type(), op, "input (with input_scale_inv)");
    TORCH_CHECK(outDtype.has_value(), op,
                ": out_dtype is required with input_scale_inv (the input is FP8)");
  } else {
    checkHighPrecision(input, op, "input");
  }
  TORCH_CHECK(axis == "tensor" || axis == "rows" || axis == "blocks", op,
              ": activation axis must be \"tensor\", \"rows\" or \"blocks\", "
              "got \"",
              axis, "\"");
  TORCH_CHECK(!weight.empty(), op, ": weight must hold at least one tensor");
  TORCH_CHECK(weightScaleInv.size() == weight.size(), op, ": weight has ",
              weight.size(), " parts but weight_scale_inv has ",
              weightScaleInv.size(), " tensors; one per part");
  if (axis == "blocks") {
    // 1x128 activation blocks against 128x128 weight blocks (Fp8Blockwise.h).
    SPLITLINEAR_DEVICE_GUARD(input);
    return fp8ServingLinearBlockwise(input, weight, weightScaleInv, bias,
                                     outDtype.value_or(input.scalar_type()),
                                     inputScaleInv);
  }
  for (size_t i = 0; i < weight.size(); ++i)
    checkScaleVector(weightScaleInv[i], weight[i].dim() == 2 ? weight[i].size(0) : 1,
                     op, "weight_scale_inv[" + std::to_string(i) + "]", input);
  at::ScalarType out = outDtype.value_or(input.scalar_type());
  SPLITLINEAR_DEVICE_GUARD(input);
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
  at::Tensor x8 = input, sx;
  if (inputScaleInv) {
    sx = *inputScaleInv;
  } else {
    auto [q, unusedT, s] =
        fp8Quantize(input, at::kFloat8_e4m3fn, axis, std::nullopt,
                    /*writeOut=*/true, /*writeTransposed=*/false,
                    /*pow2Scales=*/false);
    x8 = q.view(shape);
    sx = s;
  }
  // scaled_linear checks the parts (FP8, K, rows of 16, device), the input
  // scale and the biases.
  return scaledLinear(x8, sx, weight,
                      spreadWeightScales(weightScaleInv, weight), bias, out,
                      fastAccum);
}

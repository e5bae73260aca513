//===- Quantize.cpp - FP8 argument checks and entry points ------*- C++ -*-===//
//
// Validates the arguments of the FP8 quantization functions and of the scaled
// GEMM (messages name the operand), and defines the three quantization entry
// points of Runtime.h, which dispatch on the context's target.
//
//===----------------------------------------------------------------------===//

#include "Quantize.h"

#include <utility>

using namespace slinrt;

namespace {

void requireSource(slinrt_dtype src) {
  if (src != SLINRT_F32 && src != SLINRT_F16 && src != SLINRT_BF16)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "src dtype ", dtypeName(src), " (",
          int(src), ") is not f32, f16 or bf16");
}

void requireFp8(const char *name, int64_t dtype) {
  if (dtype != SLINRT_F8E4M3FN && dtype != SLINRT_F8E5M2)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, name, " dtype ",
          dtypeName(static_cast<slinrt_dtype>(dtype)), " (", dtype,
          ") is not f8e4m3fn or f8e5m2");
}

/// Checks a 2-D input of `dtype`: non-negative sizes, unit column stride,
/// row stride >= cols (a single row may have any), data for a non-empty one.
QuantMatrix checkInput(const slinrt_memref2d &ref, slinrt_dtype dtype,
                       const std::string &name) {
  QuantMatrix m;
  m.rows = ref.sizes[0];
  m.cols = ref.sizes[1];
  if (m.rows < 0 || m.cols < 0)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, name, " has negative sizes [", m.rows,
          ", ", m.cols, "]");
  m.ld = m.rows <= 1 ? m.cols : ref.strides[0];
  bool empty = m.rows == 0 || m.cols == 0;
  if (!empty && ((m.cols > 1 && ref.strides[1] != 1) || m.ld < m.cols))
    raise(SLINRT_ERROR_INVALID_ARGUMENT, name, " has strides [", ref.strides[0],
          ", ", ref.strides[1], "] for sizes [", m.rows, ", ", m.cols,
          "]: expected [ld, 1] with ld >= ", m.cols);
  if (!empty && !ref.aligned)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, name, " has a NULL data pointer");
  m.data = static_cast<const char *>(ref.aligned) +
           checkedByteOffset(name.c_str(), ref.offset, m.rows, m.cols, m.ld, 1,
                             dtypeSize(dtype));
  return m;
}

/// The checked `scaleRule` argument: whether scales are rounded to powers
/// of 2.
bool checkScaleRule(int32_t scaleRule) {
  requireEnumValue("scaleRule", scaleRule, SLINRT_SCALE_POW2,
                   "0 = EXACT or 1 = POW2");
  return scaleRule == SLINRT_SCALE_POW2;
}

void requirePointer(const void *p, const char *name) {
  if (!p)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, name, " is NULL");
}

/// The checked parts of an amax / cast / block quantization call of `src`
/// parts. When `sameCols` they are the row blocks of one [ΣN_i, K] output,
/// whose element count must fit int64.
PartsProblem checkParts(slinrt_dtype src, int64_t numParts,
                        const slinrt_memref2d *parts, bool sameCols) {
  requireSource(src);
  PartsProblem p;
  p.src = src;
  if (numParts < 0)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "numParts is ", numParts);
  if (numParts > 0 && !parts)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "parts is NULL for ", numParts,
          " parts");
  p.parts.reserve(size_t(numParts));
  p.rowOffset.reserve(size_t(numParts));
  for (int64_t i = 0; i < numParts; ++i) {
    QuantMatrix m = checkInput(parts[i], p.src, concat("parts[", i, "]"));
    if (sameCols && i > 0 && m.cols != p.cols)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, "parts[", i, "] has ", m.cols,
            " columns, parts[0] has ", p.cols);
    if (i == 0)
      p.cols = m.cols;
    p.rowOffset.push_back(p.totalRows);
    if (__builtin_add_overflow(p.totalRows, m.rows, &p.totalRows))
      raise(SLINRT_ERROR_INVALID_ARGUMENT, "the parts have too many rows");
    p.parts.push_back(m);
  }
  int64_t elements = 0;
  if (sameCols && __builtin_mul_overflow(p.totalRows, p.cols, &elements))
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "out [", p.totalRows, ", ", p.cols,
          "] has more elements than int64 can count");
  return p;
}

} // namespace

PartsProblem slinrt::makeAmaxPartsProblem(slinrt_dtype src, int64_t numParts,
                                          const slinrt_memref2d *parts,
                                          float *amax) {
  PartsProblem p = checkParts(src, numParts, parts, /*sameCols=*/false);
  if (numParts > 0)
    requirePointer(amax, "amax");
  p.amax = amax;
  return p;
}

PartsProblem slinrt::makeCastPartsProblem(
    slinrt_dtype src, slinrt_dtype dst, int64_t numParts,
    const slinrt_memref2d *parts, const float *amax, void *out, void *outT,
    float *scaleInv, float *rowScaleInv, int32_t scaleRule) {
  requireFp8("dst", dst);
  bool pow2 = checkScaleRule(scaleRule);
  PartsProblem p = checkParts(src, numParts, parts, /*sameCols=*/true);
  if (numParts > 0)
    requirePointer(amax, "amax");
  p.dst = dst;
  if (p.totalRows > 0 && p.cols > 0)
    requirePointer(out, "out");
  p.amaxIn = amax;
  p.out = out;
  p.outT = outT;
  p.scaleInv = scaleInv;
  p.rowScaleInv = rowScaleInv;
  p.pow2Scales = pow2;
  return p;
}

PartsProblem slinrt::makeBlockPartsProblem(slinrt_dtype src, slinrt_dtype dst,
                                           int64_t numParts,
                                           const slinrt_memref2d *parts,
                                           float *amax, float *scaleInv,
                                           void *out, void *outT,
                                           int32_t scaleRule) {
  requireFp8("dst", dst);
  bool pow2 = checkScaleRule(scaleRule);
  PartsProblem p = checkParts(src, numParts, parts, /*sameCols=*/true);
  for (int64_t i = 0; i < numParts; ++i)
    if (p.parts[i].rows % SLINRT_QUANT_BLOCK != 0 ||
        p.parts[i].cols % SLINRT_QUANT_BLOCK != 0)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, "parts[", i, "] is [",
            p.parts[i].rows, ", ", p.parts[i].cols,
            "]; 128x128 blocks need both multiples of ", SLINRT_QUANT_BLOCK);
  if (p.totalRows > 0 && p.cols > 0)
    requirePointer(scaleInv, "scaleInv");
  p.dst = dst;
  p.amax = amax;
  p.scaleInv = scaleInv;
  p.out = out;
  p.outT = outT;
  p.pow2Scales = pow2;
  return p;
}

QuantizeProblem slinrt::makeQuantizeProblem(slinrt_dtype src, slinrt_dtype dst,
                                            int32_t axis,
                                            const slinrt_memref2d *x,
                                            const float *colScale, float *amax,
                                            float *scaleInv, void *out,
                                            void *outT, int32_t scaleRule) {
  requireSource(src);
  requireFp8("dst", dst);
  bool pow2 = checkScaleRule(scaleRule);
  requireEnumValue("axis", axis, SLINRT_QUANT_BLOCKS,
                   "0 = TENSOR, 1 = ROWS, 2 = COLS or 3 = BLOCKS");
  requirePointer(x, "x");
  QuantizeProblem p;
  p.src = src;
  p.dst = dst;
  p.axis = static_cast<slinrt_quant_axis>(axis); // checked above
  p.pow2Scales = pow2;
  p.x = checkInput(*x, src, "x");
  requirePointer(scaleInv, "scaleInv");
  if (axis == SLINRT_QUANT_TENSOR)
    requirePointer(amax, "amax (the scratch of a tensorwise quantization)");
  if (axis == SLINRT_QUANT_BLOCKS) {
    if (p.x.cols % SLINRT_QUANT_BLOCK != 0)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, "x has ", p.x.cols,
            " columns; axis BLOCKS needs a multiple of ", SLINRT_QUANT_BLOCK);
    if (outT)
      raise(SLINRT_ERROR_INVALID_ARGUMENT,
            "outT is not NULL; axis BLOCKS writes out only");
  }
  p.colScale = colScale;
  p.amax = amax;
  p.scaleInv = scaleInv;
  p.out = out;
  p.outT = outT;
  return p;
}

QuantizeProblem slinrt::makeQuantizeDualProblem(
    slinrt_dtype src, slinrt_dtype dst, slinrt_quant_axis axis,
    const slinrt_memref2d *x, const float *colScale, float *amax,
    float *scaleInv, void *out, float *scaleInvT, void *outT,
    int32_t scaleRule) {
  bool blocks = axis == SLINRT_QUANT_BLOCKS;
  if (blocks && colScale)
    raise(SLINRT_ERROR_INVALID_ARGUMENT,
          "colScale is not NULL; the 1x128 block dual takes x as it is");
  // The single BLOCKS quantization writes no outT; this one does.
  QuantizeProblem p =
      makeQuantizeProblem(src, dst, axis, x, colScale, amax, scaleInv, out,
                          blocks ? nullptr : outT, scaleRule);
  p.outT = outT;
  if (axis == SLINRT_QUANT_TENSOR)
    requirePointer(colScale,
                   "colScale (a dual quantization folds it into out)");
  requirePointer(scaleInvT, "scaleInvT");
  if (p.x.rows > 0 && p.x.cols > 0) {
    requirePointer(out, "out");
    requirePointer(outT, "outT");
  }
  p.dual = true;
  p.scaleInvT = scaleInvT;
  return p;
}

ScaledGemmProblem slinrt::makeScaledGemmProblem(
    slinrt_dtype outType, const slinrt_memref2d *A, const slinrt_memref2d *B,
    const slinrt_memref2d *D, const slinrt_memref1d *scaleA,
    const slinrt_memref1d *scaleB, const slinrt_memref1d *bias, int32_t aDtype,
    int32_t bDtype, int32_t scaling, int32_t fastAccum) {
  requireGemmDescriptors(A, B, D);
  requireFp8("operand A", aDtype);
  requireFp8("operand B", bDtype);
  if (aDtype == SLINRT_F8E5M2 && bDtype == SLINRT_F8E5M2)
    raise(SLINRT_ERROR_UNSUPPORTED,
          "f8e5m2 x f8e5m2 is not supported (one of A and B must be f8e4m3fn)");
  requireEnumValue("scaling", scaling, SLINRT_SCALING_OUTER_VECTOR,
                   "0 = TENSORWISE or 1 = OUTER_VECTOR");

  ScaledGemmProblem p;
  p.outType = outType;
  p.aType = static_cast<slinrt_dtype>(aDtype);
  p.bType = static_cast<slinrt_dtype>(bDtype);
  p.scaling = static_cast<slinrt_scaling>(scaling);
  p.fastAccum = fastAccum != 0;
  // Row-major, unit column stride, row stride a multiple of 16 elements and
  // a 16-byte aligned first element (cuBLASLt's FP8 requirements).
  auto operand = [](const slinrt_memref2d &ref, slinrt_dtype dtype,
                    const char *name, int64_t &ld) -> const char * {
    QuantMatrix m = checkInput(ref, dtype, concat("operand ", name));
    ld = m.rows <= 1 ? ((m.cols + 15) / 16) * 16 : m.ld;
    if (m.rows > 1 && m.ld % 16 != 0)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, "operand ", name, " has row stride ",
            m.ld, ": FP8 GEMMs need a multiple of 16 elements");
    if (m.rows > 0 && m.cols > 0 &&
        reinterpret_cast<uintptr_t>(m.data) % 16 != 0)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, "operand ", name,
            " starts at an address that is not 16-byte aligned (offset ",
            ref.offset, ")");
    return m.data;
  };
  p.A = operand(*A, p.aType, "A", p.lda);
  p.B = operand(*B, p.bType, "B", p.ldb);
  p.D = const_cast<char *>(operand(*D, outType, "D", p.ldd));
  p.M = A->sizes[0];
  p.K = A->sizes[1];
  p.N = B->sizes[0];
  auto shapes = [&] {
    return concat("A is [", A->sizes[0], ", ", A->sizes[1], "], B is [",
                  B->sizes[0], ", ", B->sizes[1], "], D is [", D->sizes[0],
                  ", ", D->sizes[1], "] (D = A B^T)");
  };
  if (B->sizes[1] != p.K)
    raise(SLINRT_ERROR_INVALID_ARGUMENT,
          "operand B has another K than operand A: ", shapes());
  if (D->sizes[0] != p.M || D->sizes[1] != p.N)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "operand D is not [M, N]: ", shapes());
  if (p.N % 16 != 0)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "N = ", p.N,
          " (rows of operand B) is not a multiple of 16");
  if (p.K % 16 != 0)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "K = ", p.K,
          " (columns of operands A and B) is not a multiple of 16");

  bool outer = p.scaling == SLINRT_SCALING_OUTER_VECTOR;
  auto scale = [&](const slinrt_memref1d *ref, const char *name,
                   int64_t length) -> const float * {
    if (!ref)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, name, " is a NULL descriptor");
    if (ref->sizes[0] != length)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, name, " has ", ref->sizes[0],
            " elements, expected ", length,
            outer ? " (OUTER_VECTOR scaling)" : " (TENSORWISE scaling)");
    requireUnitStride(*ref, length, name);
    if (length > 0 && !ref->aligned)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, name, " has a NULL data pointer");
    return reinterpret_cast<const float *>(
        static_cast<const char *>(ref->aligned) +
        checkedByteOffset(name, ref->offset, 1, length, 0, 1, 4));
  };
  p.scaleA = scale(scaleA, "scaleA", outer ? p.M : 1);
  p.scaleB = scale(scaleB, "scaleB", outer ? p.N : 1);
  if (bias && bias->sizes[0] != 0) {
    if (bias->sizes[0] != p.N)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, "bias has ", bias->sizes[0],
            " elements, expected N = ", p.N);
    requireUnitStride(*bias, p.N, "bias");
    if (!bias->aligned)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, "bias has a NULL data pointer");
    p.bias = static_cast<const char *>(bias->aligned) +
             checkedByteOffset("bias", bias->offset, 1, p.N, 0, 1,
                               dtypeSize(outType));
  }
  return p;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

namespace {

#if SPLITLINEAR_HAVE_CUDA
#define SLINRT_CUDA_FN(FN) &FN
#else
#define SLINRT_CUDA_FN(FN) nullptr
#endif

/// A backend's implementation of a quantization whose problem is `Problem`.
/// Named through a member type, so that `Problem` is never deduced from it
/// (`onCuda` is NULL, a std::nullptr_t, in a runtime built without CUDA).
template <typename Problem> struct BackendFn {
  using type = void (*)(slinrt_context &, const Problem &);
};

/// Runs the quantization `name` on the context's backend and counts it: the
/// problem from `make()`, then `onCpu` or `onCuda` (NULL in a runtime built
/// without CUDA).
template <typename Make, typename Problem = decltype(std::declval<Make>()())>
void runQuantization(slinrt_context *ctx, const char *name, Make &&make,
                     typename BackendFn<Problem>::type onCpu,
                     typename BackendFn<Problem>::type onCuda) {
  guardedCall(ctx, name, [&](slinrt_context &c) {
    auto problem = make();
    if (c.target == Target::CUDA) {
      if (!onCuda)
        raise(SLINRT_ERROR_NOT_AVAILABLE,
              "this runtime was built without CUDA");
      onCuda(c, problem);
    } else {
      onCpu(c, problem);
    }
    c.counters.quantizations.fetch_add(1, std::memory_order_relaxed);
  });
}

/// The dual quantization `name` (slinrt_quantize_fp8_dual{,_rows,_blocks}) with
/// `axis` the scaling of its row-major output.
void runQuantizeDual(slinrt_context *ctx, const char *name,
                     slinrt_quant_axis axis, slinrt_dtype src, slinrt_dtype dst,
                     const slinrt_memref2d *x, const float *colScale,
                     float *amax, float *scaleInv, void *out, float *scaleInvT,
                     void *outT, int32_t scaleRule) {
  runQuantization(
      ctx, name,
      [&] {
        return makeQuantizeDualProblem(src, dst, axis, x, colScale, amax,
                                       scaleInv, out, scaleInvT, outT,
                                       scaleRule);
      },
      cpu::quantize, SLINRT_CUDA_FN(cuda::quantize));
}

} // namespace

extern "C" {

void slinrt_amax_parts(slinrt_context *ctx, slinrt_dtype src, int64_t numParts,
                       const slinrt_memref2d *parts, float *amax) {
  runQuantization(
      ctx, "slinrt_amax_parts",
      [&] { return makeAmaxPartsProblem(src, numParts, parts, amax); },
      cpu::amaxParts, SLINRT_CUDA_FN(cuda::amaxParts));
}

void slinrt_cast_parts_fp8(slinrt_context *ctx, slinrt_dtype src,
                           slinrt_dtype dst, int64_t numParts,
                           const slinrt_memref2d *parts, const float *amax,
                           void *out, void *outT, float *scaleInv,
                           float *rowScaleInv, int32_t scaleRule) {
  runQuantization(
      ctx, "slinrt_cast_parts_fp8",
      [&] {
        return makeCastPartsProblem(src, dst, numParts, parts, amax, out, outT,
                                    scaleInv, rowScaleInv, scaleRule);
      },
      cpu::castParts, SLINRT_CUDA_FN(cuda::castParts));
}

void slinrt_quantize_fp8_blocks_parts(slinrt_context *ctx, slinrt_dtype src,
                                      slinrt_dtype dst, int64_t numParts,
                                      const slinrt_memref2d *parts, float *amax,
                                      float *scaleInv, void *out, void *outT,
                                      int32_t scaleRule) {
  runQuantization(
      ctx, "slinrt_quantize_fp8_blocks_parts",
      [&] {
        return makeBlockPartsProblem(src, dst, numParts, parts, amax, scaleInv,
                                     out, outT, scaleRule);
      },
      cpu::quantizeBlockParts, SLINRT_CUDA_FN(cuda::quantizeBlockParts));
}

void slinrt_quantize_fp8(slinrt_context *ctx, slinrt_dtype src,
                         slinrt_dtype dst, int32_t axis,
                         const slinrt_memref2d *x, const float *colScale,
                         float *amax, float *scaleInv, void *out, void *outT,
                         int32_t scaleRule) {
  runQuantization(
      ctx, "slinrt_quantize_fp8",
      [&] {
        return makeQuantizeProblem(src, dst, axis, x, colScale, amax, scaleInv,
                                   out, outT, scaleRule);
      },
      cpu::quantize, SLINRT_CUDA_FN(cuda::quantize));
}

void slinrt_quantize_fp8_dual(slinrt_context *ctx, slinrt_dtype src,
                              slinrt_dtype dst, const slinrt_memref2d *x,
                              const float *colScale, float *amax,
                              float *scaleInv, void *out, float *scaleInvT,
                              void *outT, int32_t scaleRule) {
  runQuantizeDual(ctx, "slinrt_quantize_fp8_dual", SLINRT_QUANT_TENSOR, src,
                  dst, x, colScale, amax, scaleInv, out, scaleInvT, outT,
                  scaleRule);
}

void slinrt_quantize_fp8_dual_blocks(slinrt_context *ctx, slinrt_dtype src,
                                     slinrt_dtype dst, const slinrt_memref2d *x,
                                     float *amax, float *scaleInv, void *out,
                                     float *scaleInvT, void *outT,
                                     int32_t scaleRule) {
  runQuantizeDual(ctx, "slinrt_quantize_fp8_dual_blocks", SLINRT_QUANT_BLOCKS,
                  src, dst, x, nullptr, amax, scaleInv, out, scaleInvT, outT,
                  scaleRule);
}

void slinrt_quantize_fp8_dual_rows(slinrt_context *ctx, slinrt_dtype src,
                                   slinrt_dtype dst, const slinrt_memref2d *x,
                                   const float *colScale, float *amax,
                                   float *scaleInv, void *out, float *scaleInvT,
                                   void *outT, int32_t scaleRule) {
  runQuantizeDual(ctx, "slinrt_quantize_fp8_dual_rows", SLINRT_QUANT_ROWS, src,
                  dst, x, colScale, amax, scaleInv, out, scaleInvT, outT,
                  scaleRule);
}

} // extern "C"

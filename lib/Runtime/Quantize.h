//===- Quantize.h - Checked FP8 quantization and GEMM problems --*- C++ -*-===//
//
// The checked, target-independent form of the FP8 calls of Runtime.h
// (slinrt_amax_parts, slinrt_cast_parts_fp8, slinrt_quantize_fp8 and the
// scaled GEMM), built from the C arguments by the make* functions below, so
// that the CPU and CUDA backends accept and reject exactly the same calls.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_QUANTIZE_H
#define SPLITLINEAR_LIB_RUNTIME_QUANTIZE_H

#include "RuntimeImpl.h"

#include <vector>

namespace slinrt {

/// A checked 2-D input: row-major `rows x cols` with unit column stride and
/// row stride `ld` (elements, >= cols), at element address `data`.
struct QuantMatrix {
  const char *data = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;
};

/// slinrt_amax_parts (`amax` written) or slinrt_cast_parts_fp8 (`amaxIn`
/// read; all parts have `cols` columns, `rowOffset[i]` is where part i starts
/// in `out`, `totalRows` their sum).
struct PartsProblem {
  slinrt_dtype src = SLINRT_F32, dst = SLINRT_F8E4M3FN;
  std::vector<QuantMatrix> parts;
  std::vector<int64_t> rowOffset;
  int64_t totalRows = 0, cols = 0;
  float *amax = nullptr;         ///< amax_parts: numParts outputs
  const float *amaxIn = nullptr; ///< cast_parts: numParts inputs
  void *out = nullptr, *outT = nullptr;
  float *scaleInv = nullptr, *rowScaleInv = nullptr;
  bool pow2Scales = false; ///< SLINRT_SCALE_POW2 (cast_parts)
};

/// slinrt_quantize_fp8 (or, when `dual`, slinrt_quantize_fp8_dual) on x
/// [M, K].
struct QuantizeProblem {
  slinrt_dtype src = SLINRT_F32, dst = SLINRT_F8E4M3FN;
  slinrt_quant_axis axis = SLINRT_QUANT_TENSOR;
  bool pow2Scales = false; ///< SLINRT_SCALE_POW2
  QuantMatrix x;
  const float *colScale = nullptr;
  float *amax = nullptr, *scaleInv = nullptr;
  void *out = nullptr, *outT = nullptr;
  /// Dual: out takes x · colScale, outT takes x itself. Along `axis`
  /// TENSOR each with its own tensorwise scale (amax[0], scaleInv; amax[1],
  /// scaleInvT); along ROWS out with one scale per row (amax[0, M),
  /// scaleInv [M]) and outT with one per column of x (amax[M, M + K),
  /// scaleInvT [K]); along BLOCKS out in 1x128 blocks along the rows
  /// (scaleInv [M, K/128]) and outT [K, M'] (M' = M rounded up to 128) in
  /// 1x128 blocks along M (scaleInvT [K, M'/128]), no colScale.
  bool dual = false;
  float *scaleInvT = nullptr;
};

/// The scaled GEMM D[M, N] = sA sB A[M, K] B[N, K]^T (+ bias[N]); A and B
/// row-major FP8, D row-major of `outType`.
struct ScaledGemmProblem {
  slinrt_dtype outType = SLINRT_F32, aType = SLINRT_F8E4M3FN,
               bType = SLINRT_F8E4M3FN;
  slinrt_scaling scaling = SLINRT_SCALING_TENSORWISE;
  bool fastAccum = false;
  int64_t M = 0, N = 0, K = 0;
  const char *A = nullptr, *B = nullptr;
  int64_t lda = 0, ldb = 0;
  char *D = nullptr;
  int64_t ldd = 0;
  const float *scaleA = nullptr, *scaleB = nullptr;
  const char *bias = nullptr; ///< NULL: no bias
};

PartsProblem makeAmaxPartsProblem(slinrt_dtype src, int64_t numParts,
                                  const slinrt_memref2d *parts, float *amax);
PartsProblem makeCastPartsProblem(slinrt_dtype src, slinrt_dtype dst,
                                  int64_t numParts,
                                  const slinrt_memref2d *parts,
                                  const float *amax, void *out, void *outT,
                                  float *scaleInv, float *rowScaleInv,
                                  int32_t scaleRule);
/// slinrt_quantize_fp8_blocks_parts: the parts (rows and K multiples of
/// 128), amax (optional, PartsProblem::amax), scaleInv, out, outT.
PartsProblem makeBlockPartsProblem(slinrt_dtype src, slinrt_dtype dst,
                                   int64_t numParts,
                                   const slinrt_memref2d *parts, float *amax,
                                   float *scaleInv, void *out, void *outT,
                                   int32_t scaleRule);
QuantizeProblem makeQuantizeProblem(slinrt_dtype src, slinrt_dtype dst,
                                    int32_t axis, const slinrt_memref2d *x,
                                    const float *colScale, float *amax,
                                    float *scaleInv, void *out, void *outT,
                                    int32_t scaleRule);
QuantizeProblem makeQuantizeDualProblem(slinrt_dtype src, slinrt_dtype dst,
                                        slinrt_quant_axis axis,
                                        const slinrt_memref2d *x,
                                        const float *colScale, float *amax,
                                        float *scaleInv, void *out,
                                        float *scaleInvT, void *outT,
                                        int32_t scaleRule);
/// Throws Error(SLINRT_ERROR_INVALID_ARGUMENT) naming the operand for a bad
/// shape, stride, alignment or dtype, SLINRT_ERROR_UNSUPPORTED for e5m2 x
/// e5m2.
ScaledGemmProblem makeScaledGemmProblem(
    slinrt_dtype outType, const slinrt_memref2d *A, const slinrt_memref2d *B,
    const slinrt_memref2d *D, const slinrt_memref1d *scaleA,
    const slinrt_memref1d *scaleB, const slinrt_memref1d *bias, int32_t aDtype,
    int32_t bDtype, int32_t scaling, int32_t fastAccum);

} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_QUANTIZE_H

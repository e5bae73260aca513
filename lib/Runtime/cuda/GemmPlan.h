//===- GemmPlan.h - cuBLASLt problems, plans, algorithms --------*- C++ -*-===//
//
// How a GEMM reaches cuBLASLt. A GemmProblem or ScaledGemmProblem becomes an
// LtProblem, cuBLASLt's column-major view of it: a row-major X[r, c] with
// leading dimension ld is the column-major X^T[c, r] with the same ld, so the
// row-major problem D = op(A) op(B) is run as the column-major
// D^T = op(B)^T op(A)^T: cuBLASLt's "A" is our B, its "B" is our A, m' = N,
// n' = M, k' = K. runLt runs it through the calling thread's plan (matmul
// descriptor, layouts, algorithm: GemmPlan.cpp), whose algorithm comes from
// the device's algorithm cache or a heuristic query (findAlgorithm,
// Heuristic.cpp) or, for small FP8 problems when enabled, from timing
// candidates (tunedAlgorithm, Autotune.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_CUDA_GEMMPLAN_H
#define SPLITLINEAR_LIB_RUNTIME_CUDA_GEMMPLAN_H

#include "GemmProblem.h"
#include "RuntimeImpl.h"
#include "cuda/Device.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

namespace slinrt {
namespace cuda {

/// The largest power of two <= 256 that divides the address.
inline uint32_t alignmentOf(const void *ptr) {
  uintptr_t address = reinterpret_cast<uintptr_t>(ptr);
  if (address == 0)
    return 256;
  uintptr_t lowest = address & (~address + 1);
  return static_cast<uint32_t>(lowest < 256 ? lowest : 256);
}

/// The cuBLASLt data type of `dtype`.
inline cudaDataType_t cudaTypeOf(slinrt_dtype dtype) {
  switch (dtype) {
  case SLINRT_F32:
    return CUDA_R_32F;
  case SLINRT_F16:
    return CUDA_R_16F;
  case SLINRT_BF16:
    return CUDA_R_16BF;
  case SLINRT_F64:
    return CUDA_R_64F;
  case SLINRT_F8E4M3FN:
    return CUDA_R_8F_E4M3;
  case SLINRT_F8E5M2:
    return CUDA_R_8F_E5M2;
  }
  raise(SLINRT_ERROR_INVALID_ARGUMENT, "unknown dtype ", int(dtype));
}

/// The cuBLASLt view of a GemmProblem or a ScaledGemmProblem (see the file
/// comment for the swap): D' [m, n] = op(A') op(B') column-major, with m = N
/// and n = M of our row-major D.
struct LtProblem {
  slinrt_dtype dtype;  ///< of D (and C, and a fused bias)
  cudaDataType_t type; ///< cudaTypeOf(dtype)
  cudaDataType_t aType, bType;
  cublasComputeType_t computeType;
  cudaDataType_t scaleType;
  cublasOperation_t transa, transb;
  const void *a, *b; ///< cuBLASLt's A (our B) and B (our A)
  void *d;
  int64_t lda, ldb, ldd;
  /// Stored (column-major) sizes of A' and B', and m, n, k.
  int64_t aRows, aCols, bRows, bCols, m, n, k;
  /// Scaled GEMMs: CUBLASLT_MATMUL_MATRIX_SCALE_* of both sides (-1: none),
  /// cuBLASLt's A and B scale pointers (our scaleB and scaleA), fast accum.
  int32_t scaleMode = -1;
  bool fastAccum = false;
  const void *aScale = nullptr, *bScale = nullptr;
};

/// `lt` for error messages: sizes, dtype, transposes, lds and alignments.
std::string describe(const LtProblem &lt);

/// One row-major GEMM operand `rows x cols` (leading dimension `ld`), used
/// transposed when `trans`.
struct RowMajorOperand {
  RowMajorOperand(const void *data, int64_t rows, int64_t cols, int64_t ld,
                  bool trans)
      : data(data), rows(rows), cols(cols), ld(ld), trans(trans) {}
  /// Implicit: a GemmProblem operand is one.
  RowMajorOperand(const StoredMatrix &m)
      : RowMajorOperand(m.data, m.rows, m.cols, m.ld, m.trans) {}

  const void *data;
  int64_t rows, cols, ld;
  bool trans;
};

/// Poses row-major D[M, N] = op(A)[M, K] op(B)[K, N] (leading dimension
/// `ldd`) to cuBLASLt, which is column-major, as D^T = op(B)^T op(A)^T: a
/// row-major matrix is its column-major transpose, so cuBLASLt's A is our B
/// (stored `cols x rows`), its B our A, and m = N, n = M.
void setSwappedOperands(LtProblem &lt, const RowMajorOperand &a,
                        const RowMajorOperand &b, void *d, int64_t ldd);

/// Runs `lt` on the context's stream with the fused epilogue `fused`
/// (BIAS or BGRADB, on `bias`) when an algorithm takes it, else unfused: a
/// BIAS is then pre-broadcast into D and accumulated with beta = 1, so the
/// result is rounded once as in the fused epilogue; the caller does the rest
/// of an unfused BGRADB. `accumulate`: beta = 1 (D += product). Returns
/// whether the epilogue was fused (counts epilogue_fallbacks otherwise).
bool runLt(slinrt_context &ctx, const LtProblem &lt, cublasLtEpilogue_t fused,
           void *bias, bool accumulate);

//===----------------------------------------------------------------------===//
// Algorithms (Heuristic.cpp, Autotune.cpp)
//===----------------------------------------------------------------------===//

/// Everything tuning runs a candidate on: the operands of the call that
/// built the plan (beta = 0, so D is only overwritten; the call itself then
/// writes the real result) and the context's stream and workspace; `flush`
/// (tuneScaledAlgorithm's, may be null) is overwritten before every timed
/// call so that the weights come from HBM as in a decode step, not from L2.
struct TuneOperands {
  const void *a, *b;
  void *d;
  void *workspace;
  size_t workspaceBytes;
  cudaStream_t stream;
  void *flush = nullptr;
  size_t flushBytes = 0;
};

/// Finds (in the device's cache or by a heuristic query) an algorithm for
/// `desc` and the layouts, as configured for `key`. Returns the entry, found
/// or not (shared: an evicted entry lives on in the plans holding it). A
/// failed query throws (ERROR_OUT_OF_MEMORY for ALLOC_FAILED, else
/// ERROR_CUBLAS) and caches nothing, so the next call asks again. `tune`
/// (FP8 GEMMs within fp8AutotuneMaxM only) replaces heuristic #0 by
/// tunedAlgorithm's choice before it is cached.
std::shared_ptr<const AlgoEntry>
findAlgorithm(slinrt_context &ctx, DeviceState &dev, const AlgoKey &key,
              cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t aLayout,
              cublasLtMatrixLayout_t bLayout, cublasLtMatrixLayout_t dLayout,
              const TuneOperands *tune = nullptr);

/// Autotuning for `key` (tuneScaledAlgorithm), once per tuneBucketOf bucket:
/// a later problem of a tuned bucket takes the bucket's algorithm when
/// cublasLtMatmulAlgoCheck accepts it for its own layouts, else `first`,
/// and times nothing.
cublasLtMatmulAlgo_t
tunedAlgorithm(slinrt_context &ctx, DeviceState &dev, const AlgoKey &key,
               cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t aLayout,
               cublasLtMatrixLayout_t bLayout, cublasLtMatrixLayout_t dLayout,
               cublasLtMatmulPreference_t pref,
               const cublasLtMatmulAlgo_t &first, const TuneOperands &ops);

} // namespace cuda
} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_CUDA_GEMMPLAN_H

//===- GemmProblem.h - Validated, normalized GEMM operands ------*- C++ -*-===//
//
// Turns the memref descriptors of a `slinrt_*_gemm_*` call into a
// `GemmProblem`: checked shapes, and every operand expressed as a row-major
// stored matrix plus a transpose flag (a column-major operand is the
// transpose of a row-major one with the same leading dimension). Both
// backends start from it, so they accept and reject exactly the same calls.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_GEMMPROBLEM_H
#define SPLITLINEAR_LIB_RUNTIME_GEMMPROBLEM_H

#include "RuntimeImpl.h"

namespace slinrt {

/// A GEMM operand as stored: a row-major `rows x cols` matrix with leading
/// dimension `ld` (>= max(1, cols)), used transposed when `trans`.
struct StoredMatrix {
  char *data = nullptr;
  int64_t rows = 0, cols = 0, ld = 1;
  bool trans = false;

  /// Rows and columns of op(X).
  int64_t opRows() const { return trans ? cols : rows; }
  int64_t opCols() const { return trans ? rows : cols; }
  /// Element strides of op(X)[i, j] along i and along j.
  int64_t opRowStride() const { return trans ? 1 : ld; }
  int64_t opColStride() const { return trans ? ld : 1; }
};

/// A checked row-major GEMM: D[M, N] = op(A)[M, K] op(B)[K, N] (+ epilogue).
struct GemmProblem {
  slinrt_dtype dtype = SLINRT_F32;
  slinrt_epilogue epilogue = SLINRT_EPILOGUE_NONE;
  int64_t M = 0, N = 0, K = 0;
  StoredMatrix A, B;
  char *D = nullptr;
  int64_t ldd = 1;
  /// Element address of the bias (length N for BIAS, M for BIAS_GRAD); NULL
  /// for NONE.
  char *bias = nullptr;
};

/// Validates the arguments of a GEMM entry point and normalizes the operand
/// layouts. Throws Error(SLINRT_ERROR_INVALID_ARGUMENT) naming the operand and
/// the sizes when something does not fit.
GemmProblem makeGemmProblem(slinrt_dtype dtype, const slinrt_memref2d *A,
                            const slinrt_memref2d *B, const slinrt_memref2d *D,
                            const slinrt_memref1d *bias, int32_t transA,
                            int32_t transB, int32_t epilogue);

} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_GEMMPROBLEM_H

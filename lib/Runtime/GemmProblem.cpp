//===- GemmProblem.cpp - Validation of GEMM arguments -----------*- C++ -*-===//
//
// Checks descriptors, layouts, shapes and the bias of a GEMM call and builds
// the layout-normalized `GemmProblem` both backends execute. Messages name the
// operand and give the sizes, since they reach the user through
// `slinrt_context_error`.
//
//===----------------------------------------------------------------------===//

#include "GemmProblem.h"

#include <algorithm>

using namespace slinrt;

namespace {

/// Formats "[a, b]".
std::string dims(int64_t a, int64_t b) { return concat("[", a, ", ", b, "]"); }

/// Normalizes one 2-D operand. Row-major storage is [ld, 1]; column-major
/// [1, ld] is the transpose of a row-major matrix, so it flips `trans`. A
/// size-1 dimension may have any stride, since it is never stepped over.
StoredMatrix normalizeOperand(const slinrt_memref2d &ref, slinrt_dtype dtype,
                              const char *name, bool trans,
                              bool allowColumnMajor) {
  int64_t rows = ref.sizes[0], cols = ref.sizes[1];
  int64_t s0 = ref.strides[0], s1 = ref.strides[1];
  if (rows < 0 || cols < 0)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "operand ", name,
          " has negative sizes ", dims(rows, cols));

  StoredMatrix m;
  m.data = static_cast<char *>(ref.aligned) +
           checkedByteOffset(name, ref.offset, rows, cols, s0, s1,
                             dtypeSize(dtype), "operand ");
  // An empty operand is never read or written: any strides will do (MLIR's
  // canonical strides for [r, 0] are [0, 1]).
  if (rows == 0 || cols == 0) {
    m.rows = rows;
    m.cols = cols;
    m.ld = std::max<int64_t>(cols, 1);
    m.trans = trans;
    return m;
  }

  bool rowPattern = cols <= 1 || s1 == 1;
  bool colPattern = rows <= 1 || s0 == 1;
  int64_t rowLd = rows <= 1 ? std::max<int64_t>(cols, 1) : s0;
  int64_t colLd = cols <= 1 ? std::max<int64_t>(rows, 1) : s1;
  bool rowOk = rowPattern && rowLd >= std::max<int64_t>(cols, 1);
  bool colOk = colPattern && colLd >= std::max<int64_t>(rows, 1);

  if (rowOk) {
    m.rows = rows;
    m.cols = cols;
    m.ld = rowLd;
    m.trans = trans;
    return m;
  }
  if (allowColumnMajor && colOk) {
    m.rows = cols;
    m.cols = rows;
    m.ld = colLd;
    m.trans = !trans;
    return m;
  }

  std::string where = concat("operand ", name, " with sizes ", dims(rows, cols),
                             " has strides ", dims(s0, s1), ": ");
  if (rowPattern && !(allowColumnMajor && colPattern))
    raise(SLINRT_ERROR_INVALID_ARGUMENT, where, "row-major leading dimension ",
          s0, " is smaller than its ", cols, " columns");
  if (allowColumnMajor && colPattern && !rowPattern)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, where,
          "column-major leading dimension ", s1, " is smaller than its ", rows,
          " rows");
  if (!allowColumnMajor)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "operand ", name, " has strides ",
          dims(s0, s1), ": expected row-major [ld, 1] with ld >= ",
          std::max<int64_t>(cols, 1), " (sizes ", dims(rows, cols), ")");
  raise(SLINRT_ERROR_INVALID_ARGUMENT, "operand ", name, " has strides ",
        dims(s0, s1),
        ": expected row-major [ld, 1] or column-major [1, ld] (sizes ",
        dims(rows, cols), ")");
}

const char *epilogueName(int32_t epilogue) {
  switch (epilogue) {
  case SLINRT_EPILOGUE_NONE:
    return "NONE";
  case SLINRT_EPILOGUE_BIAS:
    return "BIAS";
  case SLINRT_EPILOGUE_BIAS_GRAD:
    return "BIAS_GRAD";
  case SLINRT_EPILOGUE_ACCUMULATE:
    return "ACCUMULATE";
  }
  return "?";
}

} // namespace

GemmProblem slinrt::makeGemmProblem(slinrt_dtype dtype,
                                    const slinrt_memref2d *A,
                                    const slinrt_memref2d *B,
                                    const slinrt_memref2d *D,
                                    const slinrt_memref1d *bias, int32_t transA,
                                    int32_t transB, int32_t epilogue) {
  requireGemmDescriptors(A, B, D);
  requireEnumValue("epilogue", epilogue, SLINRT_EPILOGUE_ACCUMULATE,
                   "0 = NONE, 1 = BIAS, 2 = BIAS_GRAD or 3 = ACCUMULATE");

  GemmProblem p;
  p.dtype = dtype;
  p.epilogue = static_cast<slinrt_epilogue>(epilogue);
  p.A = normalizeOperand(*A, dtype, "A", transA != 0, true);
  p.B = normalizeOperand(*B, dtype, "B", transB != 0, true);
  StoredMatrix d = normalizeOperand(*D, dtype, "D", false, false);
  p.D = d.data;
  p.ldd = d.ld;
  p.M = d.rows;
  p.N = d.cols;
  p.K = p.A.opCols();

  auto shapes = [&] {
    return concat("op(A) is ", p.A.opRows(), "x", p.A.opCols(), " (A ",
                  dims(A->sizes[0], A->sizes[1]), ", transA = ", transA != 0,
                  "), op(B) is ", p.B.opRows(), "x", p.B.opCols(), " (B ",
                  dims(B->sizes[0], B->sizes[1]), ", transB = ", transB != 0,
                  "), D is ", dims(p.M, p.N));
  };
  if (p.A.opCols() != p.B.opRows())
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "inner dimensions differ: ", shapes());
  if (p.A.opRows() != p.M)
    raise(SLINRT_ERROR_INVALID_ARGUMENT,
          "op(A) and D have different rows: ", shapes());
  if (p.B.opCols() != p.N)
    raise(SLINRT_ERROR_INVALID_ARGUMENT,
          "op(B) and D have different columns: ", shapes());

  int64_t biasLength = 0;
  bool needsBias = p.epilogue == SLINRT_EPILOGUE_BIAS ||
                   p.epilogue == SLINRT_EPILOGUE_BIAS_GRAD;
  if (needsBias) {
    bool fprop = p.epilogue == SLINRT_EPILOGUE_BIAS;
    biasLength = fprop ? p.N : p.M;
    if (!bias)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, "epilogue ", epilogueName(epilogue),
            " needs a bias, got a NULL descriptor");
    if (bias->sizes[0] != biasLength)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, "bias has ", bias->sizes[0],
            " elements, expected ", biasLength, fprop ? " (N" : " (M",
            ", the number of ", fprop ? "columns" : "rows",
            " of D) for epilogue ", epilogueName(epilogue));
    requireUnitStride(*bias, biasLength, "bias");
    p.bias = static_cast<char *>(bias->aligned) +
             checkedByteOffset("bias", bias->offset, 1, bias->sizes[0], 0,
                               bias->strides[0], dtypeSize(dtype));
  }

  // A NULL base with elements to touch is a failed allocation upstream.
  // (Sizes compared, not multiplied: a product could overflow.)
  auto requireData = [](const void *aligned, bool hasElements,
                        const char *name) {
    if (!aligned && hasElements)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, "operand ", name,
            " has a NULL data pointer");
  };
  requireData(A->aligned, p.M > 0 && p.K > 0, "A");
  requireData(B->aligned, p.K > 0 && p.N > 0, "B");
  requireData(D->aligned, p.M > 0 && p.N > 0, "D");
  if (needsBias)
    requireData(bias->aligned, biasLength > 0, "bias");
  return p;
}

//===- CPURuntime.cpp - CPU backend (OpenBLAS) ------------------*- C++ -*-===//
//
// GEMM through cblas_sgemm / cblas_dgemm in row-major order (or the
// context's CPU GEMM hook: the torch op library runs them on ATen), element copies
// with conversion, and the default host allocator. bf16 and fp16 GEMMs go
// through fp32 temporaries (fp32 accumulation, one rounding to nearest even on
// store), which is what the CUDA backend computes too. Bias row sums
// (BIAS_GRAD) accumulate in double. The FP8 scaled GEMM decodes its operands
// to fp32 (exact) and runs the same fp32 GEMM; the FP8 quantization lives in
// CPUQuantize.cpp.
//
//===----------------------------------------------------------------------===//

#include "Float8.h"
#include "GemmProblem.h"
#include "Quantize.h"
#include "RuntimeImpl.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

using namespace slinrt;

namespace {

/// Checks that a dimension fits the 32-bit BLAS interface.
int blasInt(int64_t value, const char *what) {
  if (value > INT_MAX)
    raise(SLINRT_ERROR_UNSUPPORTED, what, " = ", value,
          " exceeds the 32-bit CPU BLAS interface");
  return static_cast<int>(value);
}

CBLAS_TRANSPOSE blasTrans(bool trans) {
  return trans ? CblasTrans : CblasNoTrans;
}

/// Row-major D[M, N] = op(A) op(B) + beta D on BLAS-typed operands (float or
/// double): through the context's CPU GEMM hook when it has one, else CPU BLAS.
template <typename T>
void blasGemm(slinrt_context &ctx, const StoredMatrix &A, const StoredMatrix &B,
              const T *a, int64_t lda, const T *b, int64_t ldb, int64_t M,
              int64_t N, int64_t K, T beta, T *d, int64_t ldd) {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "BLAS types only");
  if (ctx.cpuGemm) {
    slinrt_dtype dtype = std::is_same<T, float>::value ? SLINRT_F32 : SLINRT_F64;
    if (ctx.cpuGemm(ctx.cpuGemmUser, dtype, A.trans ? 1 : 0, B.trans ? 1 : 0, M,
                    N, K, a, lda, b, ldb, beta, d, ldd) != 0)
      raise(SLINRT_ERROR_UNSUPPORTED, "the CPU GEMM hook failed (M = ", M,
            ", N = ", N, ", K = ", K, ")");
    return;
  }
  auto gemm = [](auto... args) {
    if constexpr (std::is_same<T, float>::value)
      cblas_sgemm(args...);
    else
      cblas_dgemm(args...);
  };
  gemm(CblasRowMajor, blasTrans(A.trans), blasTrans(B.trans), blasInt(M, "M"),
       blasInt(N, "N"), blasInt(K, "K"), T(1), a, blasInt(lda, "lda"), b,
       blasInt(ldb, "ldb"), beta, d, blasInt(ldd, "ldd"));
}

/// bias[m] = sum_k op(A)[m, k] over a stored matrix of type T, in double.
template <typename T>
std::vector<double> rowSums(const T *data, const StoredMatrix &A) {
  std::vector<double> sums(static_cast<size_t>(A.opRows()), 0.0);
  // Walk the storage in memory order: along rows of op(A) when not
  // transposed, down its columns (accumulating all m at once) otherwise.
  for (int64_t r = 0; r < A.rows; ++r) {
    const T *row = data + r * A.ld;
    if (!A.trans) {
      double sum = 0;
      for (int64_t c = 0; c < A.cols; ++c)
        sum += toDouble(row[c]);
      sums[r] = sum;
    } else {
      for (int64_t c = 0; c < A.cols; ++c)
        sums[c] += toDouble(row[c]);
    }
  }
  return sums;
}

/// Writes the row sums of op(A) to the bias, rounding once.
template <typename T, typename S>
void storeRowSums(const S *aData, const StoredMatrix &A, char *bias) {
  std::vector<double> sums = rowSums(aData, A);
  T *out = reinterpret_cast<T *>(bias);
  for (size_t m = 0; m < sums.size(); ++m)
    out[m] = convertElement<T>(sums[m]);
}

/// Fills each row of a row-major M x N matrix with the bias (or zeros).
template <typename T>
void fillRows(T *d, int64_t ldd, int64_t M, int64_t N, const T *bias) {
  for (int64_t m = 0; m < M; ++m) {
    T *row = d + m * ldd;
    if (bias)
      std::memcpy(row, bias, static_cast<size_t>(N) * sizeof(T));
    else
      std::fill(row, row + N, T{});
  }
}

/// GEMM for the BLAS types float and double, straight on the operands.
template <typename T> void gemmNative(slinrt_context &ctx, const GemmProblem &p) {
  const T *a = reinterpret_cast<const T *>(p.A.data);
  const T *b = reinterpret_cast<const T *>(p.B.data);
  T *d = reinterpret_cast<T *>(p.D);
  if (p.M == 0)
    return;
  if (p.epilogue == SLINRT_EPILOGUE_BIAS_GRAD)
    storeRowSums<T>(a, p.A, p.bias);
  if (p.N == 0)
    return;
  bool withBias = p.epilogue == SLINRT_EPILOGUE_BIAS;
  bool accumulate = p.epilogue == SLINRT_EPILOGUE_ACCUMULATE;
  // The bias is pre-broadcast into D and added by BLAS with beta = 1: one pass
  // over D and one rounding. ACCUMULATE adds to D as it is (an empty
  // reduction leaves it unchanged).
  if (!accumulate && (withBias || p.K == 0))
    fillRows(d, p.ldd, p.M, p.N,
             withBias ? reinterpret_cast<const T *>(p.bias) : nullptr);
  if (p.K == 0)
    return;
  blasGemm(ctx, p.A, p.B, a, p.A.ld, b, p.B.ld, p.M, p.N, p.K,
           T(withBias || accumulate ? 1 : 0), d, p.ldd);
}

/// Copies a stored matrix of T into a dense float matrix (ld = cols).
template <typename T> std::vector<float> widenToFloat(const StoredMatrix &m) {
  std::vector<float> out(static_cast<size_t>(m.rows * m.cols));
  const T *data = reinterpret_cast<const T *>(m.data);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c)
      out[r * m.cols + c] = toFloat(data[r * m.ld + c]);
  return out;
}

/// GEMM for bf16 / fp16 through fp32 temporaries.
template <typename T> void gemmWidened(slinrt_context &ctx, const GemmProblem &p) {
  if (p.M == 0)
    return;
  std::vector<float> a = widenToFloat<T>(p.A);
  StoredMatrix denseA = p.A;
  denseA.ld = std::max<int64_t>(p.A.cols, 1);
  if (p.epilogue == SLINRT_EPILOGUE_BIAS_GRAD)
    storeRowSums<T>(a.data(), denseA, p.bias);
  if (p.N == 0)
    return;

  std::vector<float> d(static_cast<size_t>(p.M * p.N), 0.0f);
  bool withBias = p.epilogue == SLINRT_EPILOGUE_BIAS;
  bool accumulate = p.epilogue == SLINRT_EPILOGUE_ACCUMULATE;
  T *out = reinterpret_cast<T *>(p.D);
  if (withBias) {
    const T *bias = reinterpret_cast<const T *>(p.bias);
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t n = 0; n < p.N; ++n)
        d[m * p.N + n] = toFloat(bias[n]);
  } else if (accumulate) {
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t n = 0; n < p.N; ++n)
        d[m * p.N + n] = toFloat(out[m * p.ldd + n]);
  }
  if (p.K > 0) {
    std::vector<float> b = widenToFloat<T>(p.B);
    blasGemm(ctx, p.A, p.B, a.data(), denseA.ld, b.data(),
             std::max<int64_t>(p.B.cols, 1), p.M, p.N, p.K,
             withBias || accumulate ? 1.0f : 0.0f, d.data(), p.N);
  }
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t n = 0; n < p.N; ++n)
      out[m * p.ldd + n] = convertElement<T>(d[m * p.N + n]);
}

/// Element-wise strided copy with conversion from S to T.
template <typename S, typename T>
void copyTyped(const View2D &src, const View2D &dst) {
  const S *s = reinterpret_cast<const S *>(src.data);
  T *d = reinterpret_cast<T *>(dst.data);
  bool contiguousRows = (src.cols <= 1 || src.colStride == 1) &&
                        (dst.cols <= 1 || dst.colStride == 1);
  if (std::is_same<S, T>::value && contiguousRows) {
    for (int64_t r = 0; r < src.rows; ++r)
      std::memmove(d + r * dst.rowStride, s + r * src.rowStride,
                   static_cast<size_t>(src.cols) * sizeof(T));
    return;
  }
  for (int64_t r = 0; r < src.rows; ++r)
    for (int64_t c = 0; c < src.cols; ++c)
      if constexpr (std::is_same<S, T>::value)
        d[r * dst.rowStride + c * dst.colStride] =
            s[r * src.rowStride + c * src.colStride];
      else
        d[r * dst.rowStride + c * dst.colStride] =
            convertElement<T>(s[r * src.rowStride + c * src.colStride]);
}

/// Decodes a row-major FP8 matrix (rows x cols, row stride ld) into a dense
/// float one (exact).
template <typename F8>
void decodeMatrix(const char *data, int64_t rows, int64_t cols, int64_t ld,
                  float *out) {
  const uint8_t *bytes = reinterpret_cast<const uint8_t *>(data);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = decodeFp8<F8>(bytes[r * ld + c]);
}

std::vector<float> decodeFp8Matrix(slinrt_dtype dtype, const char *data,
                                   int64_t rows, int64_t cols, int64_t ld) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  if (dtype == SLINRT_F8E4M3FN)
    decodeMatrix<Float8E4M3FN>(data, rows, cols, ld, out.data());
  else
    decodeMatrix<Float8E5M2>(data, rows, cols, ld, out.data());
  return out;
}

} // namespace

void cpu::gemm(slinrt_context &ctx, const GemmProblem &p) {
  slinrt_dtype dtype = p.dtype;
  dispatchDtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same<T, float>::value ||
                  std::is_same<T, double>::value)
      gemmNative<T>(ctx, p);
    else
      gemmWidened<T>(ctx, p);
  });
}

void cpu::scaledGemm(slinrt_context &ctx, const ScaledGemmProblem &p) {
  if (p.M == 0 || p.N == 0)
    return;
  // acc = A B^T in fp32 on exact decodings, by the context's fp32 GEMM.
  std::vector<float> acc(static_cast<size_t>(p.M * p.N), 0.0f);
  if (p.K > 0) {
    std::vector<float> a = decodeFp8Matrix(p.aType, p.A, p.M, p.K, p.lda);
    std::vector<float> b = decodeFp8Matrix(p.bType, p.B, p.N, p.K, p.ldb);
    StoredMatrix denseA, denseB;
    denseA.rows = p.M;
    denseA.cols = denseA.ld = p.K;
    denseB.rows = p.N;
    denseB.cols = denseB.ld = p.K;
    denseB.trans = true;
    blasGemm(ctx, denseA, denseB, a.data(), p.K, b.data(), p.K, p.M, p.N, p.K,
             0.0f, acc.data(), p.N);
  }
  bool outer = p.scaling == SLINRT_SCALING_OUTER_VECTOR;
  dispatchDtype(p.outType, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *bias = reinterpret_cast<const T *>(p.bias);
    T *d = reinterpret_cast<T *>(p.D);
    for (int64_t m = 0; m < p.M; ++m) {
      float sA = p.scaleA[outer ? m : 0];
      for (int64_t n = 0; n < p.N; ++n) {
        // The order of Runtime.h: (sA sB) acc (+ bias), fp32, one rounding.
        float v = sA * p.scaleB[outer ? n : 0] * acc[m * p.N + n];
        if (bias)
          v += toFloat(bias[n]);
        d[m * p.ldd + n] = convertElement<T>(v);
      }
    }
  });
}

void cpu::copy(slinrt_context &ctx, slinrt_dtype srcType, slinrt_dtype dstType,
               const View2D &src, const View2D &dst) {
  (void)ctx;
  if (isFp8(srcType) || isFp8(dstType)) {
    if (srcType != dstType)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, "FP8 copies keep the type, got ",
            dtypeName(srcType), " to ", dtypeName(dstType));
    copyTyped<Float8E4M3FN, Float8E4M3FN>(src, dst); // bytes either way
    return;
  }
  dispatchDtype(srcType, [&](auto srcTag) {
    dispatchDtype(dstType, [&](auto dstTag) {
      copyTyped<typename decltype(srcTag)::type,
                typename decltype(dstTag)::type>(src, dst);
    });
  });
}

void *cpu::defaultAlloc(void *, size_t bytes, int, void *) {
  // aligned_alloc needs a size that is a multiple of the alignment.
  size_t rounded = (bytes + 255) & ~size_t(255);
  return std::aligned_alloc(256, rounded);
}

void cpu::defaultFree(void *, void *ptr, int, void *) { std::free(ptr); }

//===- TestUtils.h - Helpers for the runtime unit tests ---------*- C++ -*-===//
//
// Strided test matrices and vectors that own their buffer and expose MLIR
// memref descriptors, plus a reference implementation of the element formats
// (decoding, round-to-nearest-even encoding) written independently of the
// runtime's bit manipulation: rounding goes through frexp/nearbyint on double,
// so a test compares two different derivations of the same IEEE rule.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_UNITTESTS_RUNTIME_TESTUTILS_H
#define SPLITLINEAR_UNITTESTS_RUNTIME_TESTUTILS_H

#include "splitlinear/Runtime/Runtime.h"

#include <algorithm>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

/// Asserts that a CUDA runtime call succeeded (CUDA tests only: they include
/// cuda_runtime_api.h before using it).
#define ASSERT_CUDA(expr)                                                      \
  do {                                                                         \
    cudaError_t err_ = (expr);                                                 \
    ASSERT_EQ(err_, cudaSuccess) << #expr << ": " << cudaGetErrorString(err_); \
  } while (0)

namespace slinrt_test {

inline int64_t elementSize(slinrt_dtype dtype) {
  return dtype == SLINRT_F64                                    ? 8
         : dtype == SLINRT_F32                                  ? 4
         : (dtype == SLINRT_F8E4M3FN || dtype == SLINRT_F8E5M2) ? 1
                                                                : 2;
}

inline const char *dtypeName(slinrt_dtype dtype) {
  switch (dtype) {
  case SLINRT_F32:
    return "f32";
  case SLINRT_F16:
    return "f16";
  case SLINRT_BF16:
    return "bf16";
  case SLINRT_F64:
    return "f64";
  case SLINRT_F8E4M3FN:
    return "f8e4m3fn";
  case SLINRT_F8E5M2:
    return "f8e5m2";
  }
  return "?";
}

/// Rounds `x` to a binary format with `precision` significand bits, minimum
/// normal exponent `minExponent` and largest finite `maxFinite`, ties to even.
inline double roundToFormat(double x, int precision, int minExponent,
                            double maxFinite) {
  if (std::isnan(x) || std::isinf(x) || x == 0)
    return x;
  int e = 0;
  std::frexp(std::fabs(x), &e); // |x| = m * 2^e, m in [0.5, 1)
  int exponent = std::max(e - 1, minExponent);
  double quantum = std::ldexp(1.0, exponent - (precision - 1));
  double r = std::nearbyint(std::fabs(x) / quantum) * quantum;
  if (r > maxFinite)
    r = std::numeric_limits<double>::infinity();
  return std::copysign(r, x);
}

/// The value of `x` in `dtype` (reference round to nearest even).
inline double roundTo(slinrt_dtype dtype, double x) {
  switch (dtype) {
  case SLINRT_F64:
    return x;
  case SLINRT_F32:
    return static_cast<double>(static_cast<float>(x));
  case SLINRT_F16:
    return roundToFormat(x, 11, -14, 65504.0);
  case SLINRT_BF16:
    return roundToFormat(x, 8, -126, std::ldexp(255.0, 120));
  case SLINRT_F8E4M3FN: // saturating, as the FP8 casts
    return roundToFormat(std::max(-448.0, std::min(x, 448.0)), 4, -6, 448.0);
  case SLINRT_F8E5M2:
    return roundToFormat(std::max(-57344.0, std::min(x, 57344.0)), 3, -14,
                         57344.0);
  }
  return x;
}

/// Decodes an IEEE binary16 bit pattern.
inline double decodeHalf(uint16_t h) {
  int sign = h >> 15, exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  double value;
  if (exponent == 0x1F)
    value = mantissa ? std::numeric_limits<double>::quiet_NaN()
                     : std::numeric_limits<double>::infinity();
  else if (exponent == 0)
    value = std::ldexp(mantissa, -24);
  else
    value = std::ldexp(1024 + mantissa, exponent - 25);
  return sign ? -value : value;
}

/// Decodes a bfloat16 bit pattern.
inline double decodeBFloat16(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Encodes a value already representable in binary16.
inline uint16_t encodeHalfExact(double v) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  double a = std::fabs(v);
  if (std::isnan(v))
    return sign | 0x7E00;
  if (std::isinf(v))
    return sign | 0x7C00;
  if (a == 0)
    return sign;
  int e = 0;
  std::frexp(a, &e);
  int exponent = e - 1;
  if (exponent < -14)
    return sign | static_cast<uint16_t>(a / std::ldexp(1.0, -24));
  double mantissa = (a / std::ldexp(1.0, exponent) - 1.0) * 1024.0;
  assert(mantissa == std::floor(mantissa) && "not representable in f16");
  return sign | static_cast<uint16_t>(((exponent + 15) << 10) | int(mantissa));
}

/// Encodes a value already representable in bfloat16.
inline uint16_t encodeBFloat16Exact(double v) {
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(v))
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  assert((bits & 0xFFFF) == 0 && "not representable in bf16");
  return static_cast<uint16_t>(bits >> 16);
}

/// Reads one element of `dtype` at `p` as a double (exact).
inline double load(slinrt_dtype dtype, const uint8_t *p) {
  switch (dtype) {
  case SLINRT_F32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case SLINRT_F64: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  case SLINRT_F16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return decodeHalf(h);
  }
  case SLINRT_BF16: {
    uint16_t b;
    std::memcpy(&b, p, 2);
    return decodeBFloat16(b);
  }
  case SLINRT_F8E4M3FN:
  case SLINRT_F8E5M2:
    break; // FP8 bytes: Fp8TestUtils.h
  }
  return 0;
}

/// Writes `roundTo(dtype, v)` at `p`.
inline void store(slinrt_dtype dtype, double v, uint8_t *p) {
  v = roundTo(dtype, v);
  switch (dtype) {
  case SLINRT_F32: {
    float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
    return;
  }
  case SLINRT_F64:
    std::memcpy(p, &v, 8);
    return;
  case SLINRT_F16: {
    uint16_t h = encodeHalfExact(v);
    std::memcpy(p, &h, 2);
    return;
  }
  case SLINRT_BF16: {
    uint16_t b = encodeBFloat16Exact(v);
    std::memcpy(p, &b, 2);
    return;
  }
  case SLINRT_F8E4M3FN:
  case SLINRT_F8E5M2:
    return; // FP8 bytes: Fp8TestUtils.h
  }
}

/// A strided rank-2 view into a buffer it owns, with its memref descriptor.
/// Strides (in elements) may be negative; `offset` must keep every element of
/// the view inside the buffer.
class TestMatrix {
public:
  TestMatrix(slinrt_dtype dtype, int64_t rows, int64_t cols, int64_t rowStride,
             int64_t colStride, int64_t offset, int64_t slack = 3)
      : dtype(dtype), rows(rows), cols(cols) {
    int64_t hi = offset, lo = offset;
    if (rows > 0 && cols > 0) {
      hi += std::max<int64_t>(0, (rows - 1) * rowStride) +
            std::max<int64_t>(0, (cols - 1) * colStride);
      lo += std::min<int64_t>(0, (rows - 1) * rowStride) +
            std::min<int64_t>(0, (cols - 1) * colStride);
    }
    assert(lo >= 0 && "view starts before its buffer");
    (void)lo;
    capacity = hi + 1 + slack;
    // 256-byte aligned storage, so offsets alone decide the view's alignment.
    storage.resize(static_cast<size_t>(capacity * elementSize(dtype) + 256));
    uint8_t *base = storage.data();
    base += (256 - reinterpret_cast<uintptr_t>(base) % 256) % 256;
    desc.allocated = base;
    desc.aligned = base;
    desc.offset = offset;
    desc.sizes[0] = rows;
    desc.sizes[1] = cols;
    desc.strides[0] = rowStride;
    desc.strides[1] = colStride;
  }

  /// A row-major view with `pad` extra elements per row.
  static TestMatrix rowMajor(slinrt_dtype dtype, int64_t rows, int64_t cols,
                             int64_t pad = 0, int64_t offset = 0) {
    return TestMatrix(dtype, rows, cols, cols + pad, 1, offset);
  }
  /// A column-major view with `pad` extra elements per column.
  static TestMatrix colMajor(slinrt_dtype dtype, int64_t rows, int64_t cols,
                             int64_t pad = 0, int64_t offset = 0) {
    return TestMatrix(dtype, rows, cols, 1, rows + pad, offset);
  }

  // Move-only: moving the vector keeps its buffer, so the descriptor's
  // pointers stay valid; a copy would not be 256-byte aligned the same way.
  TestMatrix(TestMatrix &&) = default;
  TestMatrix &operator=(TestMatrix &&) = default;
  TestMatrix(const TestMatrix &) = delete;
  TestMatrix &operator=(const TestMatrix &) = delete;

  uint8_t *base() const { return static_cast<uint8_t *>(desc.aligned); }
  int64_t index(int64_t i, int64_t j) const {
    return desc.offset + i * desc.strides[0] + j * desc.strides[1];
  }
  double get(int64_t i, int64_t j) const {
    return load(dtype, base() + index(i, j) * elementSize(dtype));
  }
  void set(int64_t i, int64_t j, double v) {
    store(dtype, v, base() + index(i, j) * elementSize(dtype));
  }
  /// Writes `v` to every element of the buffer, inside the view or not.
  void fillBuffer(double v) {
    for (int64_t e = 0; e < capacity; ++e)
      store(dtype, v, base() + e * elementSize(dtype));
  }
  /// Random representable values in [lo, hi) for the view's elements.
  void fillRandom(std::mt19937_64 &rng, double lo = -1, double hi = 1) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        set(i, j, dist(rng));
  }
  /// Counts buffer elements outside the view that no longer equal `v`.
  int64_t changedOutsideView(double v) const {
    std::vector<bool> inView(static_cast<size_t>(capacity), false);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        inView[static_cast<size_t>(index(i, j))] = true;
    int64_t changed = 0;
    for (int64_t e = 0; e < capacity; ++e)
      if (!inView[static_cast<size_t>(e)] &&
          load(dtype, base() + e * elementSize(dtype)) != roundTo(dtype, v))
        ++changed;
    return changed;
  }
  slinrt_memref2d *ref() { return &desc; }

  slinrt_dtype dtype;
  int64_t rows, cols;
  int64_t capacity = 0;
  std::vector<uint8_t> storage;
  slinrt_memref2d desc{};
};

/// A strided rank-1 view into a buffer it owns.
class TestVector {
public:
  TestVector(slinrt_dtype dtype, int64_t size, int64_t stride = 1,
             int64_t offset = 0)
      : matrix(dtype, 1, size, size * stride, stride,
               offset + (stride < 0 && size > 0 ? -(size - 1) * stride : 0)) {
    desc.allocated = matrix.desc.allocated;
    desc.aligned = matrix.desc.aligned;
    desc.offset = matrix.desc.offset;
    desc.sizes[0] = size;
    desc.strides[0] = stride;
  }
  double get(int64_t i) const { return matrix.get(0, i); }
  void set(int64_t i, double v) { matrix.set(0, i, v); }
  void fillBuffer(double v) { matrix.fillBuffer(v); }
  void fillRandom(std::mt19937_64 &rng, double lo = -1, double hi = 1) {
    matrix.fillRandom(rng, lo, hi);
  }
  int64_t changedOutsideView(double v) const {
    return matrix.changedOutsideView(v);
  }
  int64_t size() const { return desc.sizes[0]; }
  slinrt_memref1d *ref() { return &desc; }

  TestMatrix matrix;
  slinrt_memref1d desc{};
};

/// A context that is destroyed at scope exit.
struct ContextHolder {
  explicit ContextHolder(slinrt_context *ctx) : ctx(ctx) {}
  ~ContextHolder() { slinrt_context_destroy(ctx); }
  ContextHolder(const ContextHolder &) = delete;
  ContextHolder &operator=(const ContextHolder &) = delete;
  operator slinrt_context *() const { return ctx; }
  slinrt_context *ctx;
};

/// Pointer to the `_mlir_ciface_slinrt_<tgt>_gemm_<T>` entry point of `dtype`.
using GemmFn = void (*)(slinrt_context *, slinrt_memref2d *, slinrt_memref2d *,
                        slinrt_memref2d *, slinrt_memref1d *, int32_t, int32_t,
                        int32_t);
inline GemmFn cpuGemm(slinrt_dtype dtype) {
  switch (dtype) {
#define SLINRT_DTYPE(T, ENUM)                                                  \
  case ENUM:                                                                   \
    return _mlir_ciface_slinrt_cpu_gemm_##T;
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
  case SLINRT_F8E4M3FN:
  case SLINRT_F8E5M2:
    break;
  }
  return nullptr;
}
inline GemmFn cudaGemm(slinrt_dtype dtype) {
  switch (dtype) {
#define SLINRT_DTYPE(T, ENUM)                                                  \
  case ENUM:                                                                   \
    return _mlir_ciface_slinrt_cuda_gemm_##T;
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
  case SLINRT_F8E4M3FN:
  case SLINRT_F8E5M2:
    break;
  }
  return nullptr;
}

using Copy2dFn = void (*)(slinrt_context *, slinrt_memref2d *,
                          slinrt_memref2d *);
using Copy1dFn = void (*)(slinrt_context *, slinrt_memref1d *,
                          slinrt_memref1d *);

/// The copy entry points of one (source, destination) pair and target.
struct CopyFns {
  slinrt_dtype src, dst;
  Copy2dFn cpu2d, cuda2d;
  Copy1dFn cpu1d, cuda1d;
};

inline std::vector<CopyFns> allCopyFns() {
  std::vector<CopyFns> fns;
#define SLINRT_DTYPE(T, ENUM) constexpr slinrt_dtype kDtype_##T = ENUM;
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
#define SLINRT_DTYPE_PAIR(S, T)                                                \
  fns.push_back(CopyFns{kDtype_##S, kDtype_##T,                                \
                        _mlir_ciface_slinrt_cpu_copy2d_##S##_##T,              \
                        _mlir_ciface_slinrt_cuda_copy2d_##S##_##T,             \
                        _mlir_ciface_slinrt_cpu_copy1d_##S##_##T,              \
                        _mlir_ciface_slinrt_cuda_copy1d_##S##_##T});
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
  return fns;
}

inline CopyFns copyFns(slinrt_dtype src, slinrt_dtype dst) {
  for (const CopyFns &fns : allCopyFns())
    if (fns.src == src && fns.dst == dst)
      return fns;
  return CopyFns{};
}

/// Half an ulp of the output format, relative: the rounding error bound of
/// one store.
inline double outputRounding(slinrt_dtype dtype) {
  switch (dtype) {
  case SLINRT_F64:
    return std::ldexp(1.0, -53);
  case SLINRT_F32:
    return std::ldexp(1.0, -24);
  case SLINRT_F16:
    return std::ldexp(1.0, -11);
  case SLINRT_BF16:
    return std::ldexp(1.0, -8);
  case SLINRT_F8E4M3FN:
    return std::ldexp(1.0, -4);
  case SLINRT_F8E5M2:
    return std::ldexp(1.0, -3);
  }
  return 0;
}

/// Row-major reference GEMM in double, with the bias epilogues. Returns D
/// (M x N), the bias-gradient (M) and, per element, sum |op(A)||op(B)|
/// (+|bias|) for error bounds.
struct Reference {
  std::vector<double> d, dMagnitude, biasGrad, biasGradMagnitude;
};

inline Reference referenceGemm(const TestMatrix &A, const TestMatrix &B,
                               bool transA, bool transB, int M, int N, int K,
                               int epilogue, const TestVector *bias) {
  auto opA = [&](int m, int k) { return transA ? A.get(k, m) : A.get(m, k); };
  auto opB = [&](int k, int n) { return transB ? B.get(n, k) : B.get(k, n); };
  Reference r;
  r.d.assign(size_t(M) * N, 0);
  r.dMagnitude.assign(size_t(M) * N, 0);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double sum = 0, magnitude = 0;
      for (int k = 0; k < K; ++k) {
        sum += opA(m, k) * opB(k, n);
        magnitude += std::fabs(opA(m, k) * opB(k, n));
      }
      if (epilogue == SLINRT_EPILOGUE_BIAS) {
        sum += bias->get(n);
        magnitude += std::fabs(bias->get(n));
      }
      r.d[size_t(m) * N + n] = sum;
      r.dMagnitude[size_t(m) * N + n] = magnitude;
    }
  if (epilogue == SLINRT_EPILOGUE_BIAS_GRAD) {
    r.biasGrad.assign(size_t(M), 0);
    r.biasGradMagnitude.assign(size_t(M), 0);
    for (int m = 0; m < M; ++m)
      for (int k = 0; k < K; ++k) {
        r.biasGrad[m] += opA(m, k);
        r.biasGradMagnitude[m] += std::fabs(opA(m, k));
      }
  }
  return r;
}

} // namespace slinrt_test

#endif // SPLITLINEAR_UNITTESTS_RUNTIME_TESTUTILS_H

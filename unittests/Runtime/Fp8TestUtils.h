//===- Fp8TestUtils.h - FP8 references for the runtime tests ----*- C++ -*-===//
//
// An FP8 reference written independently of lib/Runtime/Float8.h: values are
// rounded in double with frexp/nearbyint (TestUtils.h roundToFormat) and
// encoded from the exact value; the quantization conventions of Runtime.h
// (amax, scale, scale_inv, satcast of the fp32 product) are computed in
// double and rounded to float where Runtime.h says fp32. Shared by the CPU
// and CUDA FP8 tests.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_UNITTESTS_RUNTIME_FP8TESTUTILS_H
#define SPLITLINEAR_UNITTESTS_RUNTIME_FP8TESTUTILS_H

#include "TestUtils.h"

#include <gtest/gtest.h>
#include <limits>

namespace slinrt_test {

/// Mantissa bits, bias and largest finite value of an FP8 dtype.
struct Fp8Params {
  int mantissa, bias;
  double max;
};
inline Fp8Params fp8Params(slinrt_dtype dtype) {
  return dtype == SLINRT_F8E4M3FN ? Fp8Params{3, 7, 448.0}
                                  : Fp8Params{2, 15, 57344.0};
}

/// The value of an FP8 byte (NaN for the NaN encodings, inf for e5m2's).
inline double decodeFp8Ref(slinrt_dtype dtype, uint8_t byte) {
  Fp8Params f = fp8Params(dtype);
  int sign = byte >> 7, exponent = (byte & 0x7F) >> f.mantissa;
  int mantissa = byte & ((1 << f.mantissa) - 1);
  int maxExponent = 0x7F >> f.mantissa;
  double value;
  if (dtype == SLINRT_F8E4M3FN && exponent == maxExponent &&
      mantissa == (1 << f.mantissa) - 1)
    value = std::numeric_limits<double>::quiet_NaN();
  else if (dtype == SLINRT_F8E5M2 && exponent == maxExponent)
    value = mantissa ? std::numeric_limits<double>::quiet_NaN()
                     : std::numeric_limits<double>::infinity();
  else if (exponent == 0)
    value = std::ldexp(mantissa, 1 - f.bias - f.mantissa);
  else
    value = std::ldexp((1 << f.mantissa) + mantissa,
                       exponent - f.bias - f.mantissa);
  return sign ? -value : value;
}

/// satcast of `x` to FP8: clamp to ±max, round to nearest even, encode;
/// NaN -> 0x7F with the sign of x.
inline uint8_t encodeFp8Ref(slinrt_dtype dtype, double x) {
  Fp8Params f = fp8Params(dtype);
  uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x))
    return sign | 0x7F;
  double a = std::min(std::fabs(x), f.max);
  a = roundToFormat(a, f.mantissa + 1, 1 - f.bias, f.max);
  if (a == 0)
    return sign;
  int e = 0;
  std::frexp(a, &e); // a = m 2^e, m in [0.5, 1)
  int exponent = e - 1;
  if (exponent < 1 - f.bias) // subnormal: units of 2^(1 - bias - mantissa)
    return sign | uint8_t(a / std::ldexp(1.0, 1 - f.bias - f.mantissa));
  int mantissa =
      int(a / std::ldexp(1.0, exponent - f.mantissa)) - (1 << f.mantissa);
  return sign | uint8_t(((exponent + f.bias) << f.mantissa) | mantissa);
}

inline float toF32(double v) { return static_cast<float>(v); }

/// scale = fp8_max / amax (fp32 division), 1 for amax 0, FLT_MAX where the
/// quotient overflows; NaN propagates. With `pow2`, then rounded down to a
/// power of 2 as torchao does it (`exp2(floor(log2(scale)))`, here in
/// double precision; 0 and NaN stay).
inline float refScale(slinrt_dtype dtype, float amax, bool pow2 = false) {
  if (amax == 0)
    return 1.0f;
  float scale = toF32(fp8Params(dtype).max / double(amax));
  if (std::isinf(scale))
    scale = std::numeric_limits<float>::max();
  if (pow2 && scale > 0 && std::isfinite(scale))
    scale = toF32(std::exp2(std::floor(std::log2(double(scale)))));
  return scale;
}

/// The FP8 byte of x · scale, the product in fp32.
inline uint8_t refQuant(slinrt_dtype dtype, float x, float scale) {
  return encodeFp8Ref(dtype, double(toF32(double(x) * double(scale))));
}

/// max |v| over values (NaN wins).
inline float refAmax(const std::vector<float> &values) {
  float best = 0;
  for (float v : values) {
    if (std::isnan(v))
      return std::fabs(v);
    best = std::max(best, std::fabs(v));
  }
  return best;
}

/// Bit equality of floats (NaN payloads included).
inline bool sameBits(float a, float b) {
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

/// Bytes of a dense FP8 matrix as a TestMatrix-free buffer.
using Bytes = std::vector<uint8_t>;

/// Random finite FP8 bytes (no NaN, no inf), from values in (-range, range).
inline Bytes randomFp8(std::mt19937_64 &rng, slinrt_dtype dtype, size_t count,
                       double range) {
  std::uniform_real_distribution<double> dist(-range, range);
  Bytes out(count);
  for (auto &b : out)
    b = encodeFp8Ref(dtype, dist(rng));
  return out;
}

/// A 1-D float descriptor over `data` (size n, stride 1).
inline slinrt_memref1d vectorRef(float *data, int64_t n) {
  return slinrt_memref1d{data, data, 0, {n}, {1}};
}

/// A row-major 2-D descriptor over `data` with row stride `ld`.
inline slinrt_memref2d matrixRef(void *data, int64_t rows, int64_t cols,
                                 int64_t ld, int64_t offset = 0) {
  return slinrt_memref2d{data, data, offset, {rows, cols}, {ld, 1}};
}

/// An input matrix of `src` with a padded row stride, element offset
/// `offset`, and random values of magnitude up to `range` (one exact zero).
inline TestMatrix randomInput(std::mt19937_64 &rng, slinrt_dtype src,
                              int64_t rows, int64_t cols, double range,
                              int64_t pad = 5, int64_t offset = 3) {
  TestMatrix x = TestMatrix::rowMajor(src, rows, cols, pad, offset);
  x.fillRandom(rng, -range, range);
  if (rows > 1 && cols > 1)
    x.set(1, 1, 0.0);
  return x;
}

/// Exact comparison of float vectors (bits).
inline ::testing::AssertionResult sameFloats(const std::vector<float> &got,
                                             const std::vector<float> &want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < got.size(); ++i)
    if (!sameBits(got[i], want[i]))
      return ::testing::AssertionFailure() << "[" << i << "]: " << std::hexfloat
                                           << got[i] << " vs " << want[i];
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult sameBytes(const Bytes &got,
                                            const Bytes &want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return ::testing::AssertionFailure()
             << "byte " << i << ": " << int(got[i]) << " vs " << int(want[i]);
  return ::testing::AssertionSuccess();
}

/// Parts [rows_i, K] with their own magnitudes and row strides.
struct PartsFixture {
  std::vector<TestMatrix> parts;
  std::vector<slinrt_memref2d> refs;
  int64_t totalRows = 0;
};

/// Part i has a row padding of i · padStep elements and element offset
/// `offset` (0 and a padStep of 8: 16-byte aligned rows).
inline PartsFixture
makeParts(std::mt19937_64 &rng, slinrt_dtype src, int64_t K,
          const std::vector<std::pair<int64_t, double>> &spec,
          int64_t padStep = 3, int64_t offset = 3) {
  PartsFixture f;
  int64_t pad = 0;
  for (const auto &[rows, range] : spec) {
    f.parts.push_back(randomInput(rng, src, rows, K, range, pad, offset));
    pad += padStep;
    f.totalRows += rows;
  }
  for (TestMatrix &p : f.parts)
    f.refs.push_back(*p.ref());
  return f;
}

using ScaledGemmFn = void (*)(slinrt_context *, slinrt_memref2d *,
                              slinrt_memref2d *, slinrt_memref2d *,
                              slinrt_memref1d *, slinrt_memref1d *,
                              slinrt_memref1d *, int32_t, int32_t, int32_t,
                              int32_t);

/// The `_mlir_ciface_slinrt_<tgt>_scaled_gemm_<out>` entry point.
inline ScaledGemmFn scaledGemmFn(bool cuda, slinrt_dtype out) {
  switch (out) {
#define SLINRT_SCALED_OUT_DTYPE(T, ENUM)                                       \
  case ENUM:                                                                   \
    return cuda ? _mlir_ciface_slinrt_cuda_scaled_gemm_##T                     \
                : _mlir_ciface_slinrt_cpu_scaled_gemm_##T;
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
  default:
    return nullptr;
  }
}
inline ScaledGemmFn cpuScaledGemm(slinrt_dtype out) {
  return scaledGemmFn(false, out);
}

/// The operands of a scaled GEMM test, 16-byte aligned, padded rows (B's
/// rows contiguous, ldb == K, with `contiguousB`).
struct ScaledGemmCase {
  int64_t M, N, K, lda, ldb;
  slinrt_dtype aType, bType, outType;
  /// A slinrt_scaling value, held as the entry point's int32_t so that a
  /// test can pass an out-of-range one.
  int32_t scaling;
  bool withBias;
  Bytes a, b;
  std::vector<float> scaleA, scaleB;
  TestMatrix d;
  TestVector bias;
  slinrt_memref2d aRef, bRef;
  slinrt_memref1d sARef, sBRef;

  ScaledGemmCase(std::mt19937_64 &rng, int64_t M, int64_t N, int64_t K,
                 slinrt_dtype aType, slinrt_dtype bType, slinrt_dtype outType,
                 slinrt_scaling scaling, bool withBias,
                 bool contiguousB = false)
      : M(M), N(N), K(K), lda(K + 16), ldb(contiguousB ? K : K + 32),
        aType(aType), bType(bType), outType(outType), scaling(scaling),
        withBias(withBias), d(TestMatrix::rowMajor(outType, M, N, 16)),
        bias(outType, N) {
    a = randomFp8(rng, aType, size_t(M * lda),
                  aType == SLINRT_F8E5M2 ? 2000 : 400);
    b = randomFp8(rng, bType, size_t(N * ldb),
                  bType == SLINRT_F8E5M2 ? 2000 : 400);
    std::uniform_real_distribution<double> sd(1e-4, 1e-2);
    bool outer = scaling == SLINRT_SCALING_OUTER_VECTOR;
    scaleA.resize(outer ? M : 1);
    scaleB.resize(outer ? N : 1);
    for (float &s : scaleA)
      s = toF32(sd(rng));
    for (float &s : scaleB)
      s = toF32(sd(rng) * 10);
    bias.fillRandom(rng, -5, 5);
    d.fillBuffer(3.0);
    aRef = matrixRef(a.data(), M, K, lda);
    bRef = matrixRef(b.data(), N, K, ldb);
    sARef = vectorRef(scaleA.data(), int64_t(scaleA.size()));
    sBRef = vectorRef(scaleB.data(), int64_t(scaleB.size()));
  }

  double sA(int64_t m) const { return scaleA[scaleA.size() > 1 ? m : 0]; }
  double sB(int64_t n) const { return scaleB[scaleB.size() > 1 ? n : 0]; }
  /// The exact result before the output rounding, and the sum of the
  /// magnitudes of its terms.
  std::pair<double, double> exact(int64_t m, int64_t n) const {
    double sum = 0, magnitude = 0;
    for (int64_t k = 0; k < K; ++k) {
      double t = decodeFp8Ref(aType, a[m * lda + k]) *
                 decodeFp8Ref(bType, b[n * ldb + k]);
      sum += t;
      magnitude += std::fabs(t);
    }
    double s = sA(m) * sB(n);
    double value = s * sum + (withBias ? bias.get(n) : 0.0);
    return {value, s * magnitude + (withBias ? std::fabs(bias.get(n)) : 0.0)};
  }
  void run(ScaledGemmFn fn, slinrt_context *ctx, int fastAccum = 0) {
    fn(ctx, &aRef, &bRef, d.ref(), &sARef, &sBRef,
       withBias ? bias.ref() : nullptr, aType, bType, scaling, fastAccum);
  }
};

} // namespace slinrt_test

#endif // SPLITLINEAR_UNITTESTS_RUNTIME_FP8TESTUTILS_H

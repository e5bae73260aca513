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

/// scale = fp8_max / amax (fp32 division), 1 for amax 0; NaN propagates.
inline float refScale(slinrt_dtype dtype, float amax) {
  return amax == 0 ? 1.0f : toF32(fp8Params(dtype).max / double(amax));
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

} // namespace slinrt_test

#endif // SPLITLINEAR_UNITTESTS_RUNTIME_FP8TESTUTILS_H

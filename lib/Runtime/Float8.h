//===- Float8.h - FP8 storage types, encoding and scales --------*- C++ -*-===//
//
// The OCP FP8 formats e4m3fn (bias 7, no infinity, 0x7F / 0xFF are NaN, max
// 448) and e5m2 (bias 15, IEEE-like, max 57344): exact decoding to float and
// the saturating encoding the quantization uses, plus the scale rule of
// Runtime.h. Shared by the CPU runtime and the CUDA kernels, so that both
// targets produce the same bytes and scales.
//
// The encoding is `satcast`: round to nearest, ties to even, finite values
// (and infinities) beyond ±max become ±max, NaN stays NaN with its sign
// (0x7F / 0xFF for both formats). That is torch's
// `x.clamp(-max, max).to(float8_*)`.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_FLOAT8_H
#define SPLITLINEAR_LIB_RUNTIME_FLOAT8_H

#include "Float16.h"

#include <cstdint>

namespace slinrt {

/// Storage of one e4m3fn value (no arithmetic: decode first).
struct Float8E4M3FN {
  uint8_t bits;
};
/// Storage of one e5m2 value.
struct Float8E5M2 {
  uint8_t bits;
};

/// The parameters of an FP8 format: mantissa bits, exponent bias, the bits
/// and value of its largest finite number and its NaN.
template <typename F8> struct Fp8Format;
template <> struct Fp8Format<Float8E4M3FN> {
  static constexpr int kMantissa = 3, kBias = 7;
  static constexpr uint8_t kMaxBits = 0x7E, kNaNBits = 0x7F;
  static constexpr float kMax = 448.0f;
};
template <> struct Fp8Format<Float8E5M2> {
  static constexpr int kMantissa = 2, kBias = 15;
  static constexpr uint8_t kMaxBits = 0x7B, kNaNBits = 0x7F;
  static constexpr float kMax = 57344.0f;
};

/// satcast: float -> FP8 bits (see the file comment).
template <typename F8> SLINRT_HD uint8_t encodeFp8(float value) {
  using F = Fp8Format<F8>;
  uint32_t x = bitCast<uint32_t>(value);
  uint8_t sign = static_cast<uint8_t>((x >> 24) & 0x80u);
  uint32_t absx = x & 0x7FFFFFFFu;
  if (absx > 0x7F800000u)
    return sign | F::kNaNBits;
  const float maxValue = F::kMax; // a local: no ODR-use in device code
  if (absx >= bitCast<uint32_t>(maxValue))
    return sign | F::kMaxBits; // also infinity: saturated, as after clamp
  // The FP8 biased exponent of the value; <= 0 means an FP8 subnormal.
  int exponent = static_cast<int>(absx >> 23) - 127 + F::kBias;
  uint32_t mantissa = (absx & 0x7FFFFFu) | 0x800000u;
  // Bits dropped from the 24-bit significand: normal numbers keep
  // kMantissa + 1 of them; subnormals 1 - exponent fewer.
  int shift = 23 - F::kMantissa + (exponent < 1 ? 1 - exponent : 0);
  if ((absx >> 23) == 0 || shift > 25)
    return sign; // below half the smallest subnormal (fp32 subnormals too)
  uint32_t result = mantissa >> shift;
  uint32_t rest = mantissa & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1);
  if (exponent >= 1) // replace the implicit bit by the exponent field
    result = (static_cast<uint32_t>(exponent) << F::kMantissa) |
             (result & ((1u << F::kMantissa) - 1u));
  if (rest > halfway || (rest == halfway && (result & 1u)))
    ++result; // a carry into the exponent is the right next binade
  return static_cast<uint8_t>(sign | result);
}

/// FP8 bits -> float (exact).
template <typename F8> SLINRT_HD float decodeFp8(uint8_t bits) {
  using F = Fp8Format<F8>;
  uint32_t sign = static_cast<uint32_t>(bits & 0x80u) << 24;
  uint32_t exponent = (bits & 0x7Fu) >> F::kMantissa;
  uint32_t mantissa = bits & ((1u << F::kMantissa) - 1u);
  uint32_t maxExponent = 0x7Fu >> F::kMantissa;
  bool isE4M3 = F::kMantissa == 3;
  if (exponent == maxExponent && (isE4M3 ? mantissa == 7u : true)) {
    if (isE4M3 || mantissa != 0)
      return bitCast<float>(sign | 0x7FC00000u);
    return bitCast<float>(sign | 0x7F800000u);
  }
  if (exponent == 0) {
    // mantissa · 2^(1 - bias - kMantissa): both factors exact in float.
    float unit = bitCast<float>(
        static_cast<uint32_t>(127 + 1 - F::kBias - F::kMantissa) << 23);
    float magnitude = static_cast<float>(mantissa) * unit;
    return sign ? -magnitude : magnitude;
  }
  return bitCast<float>(sign | ((exponent + 127u - F::kBias) << 23) |
                        (mantissa << (23 - F::kMantissa)));
}

/// The quantization scale of Runtime.h: `fp8Max / amax` in fp32, 1 for a zero
/// amax, and FLT_MAX where the quotient overflows (an amax below
/// fp8Max / FLT_MAX, ~1.3e-36 for e4m3: an infinite scale would turn the
/// zeros of the tensor into 0 · inf = NaN; TransformerEngine clamps the same
/// way). A NaN amax gives a NaN scale and an infinite one 0 (they propagate).
/// With `pow2` (SLINRT_SCALE_POW2) the scale is then rounded down to a power
/// of 2, `exp2(floor(log2(scale)))` as torchao's
/// `_round_scale_down_to_power_of_2` computes it. A finite amax gives a
/// normal scale (>= fp8Max / FLT_MAX, 1.3e-36 for e4m3), whose power of 2 is
/// the scale without its mantissa bits; NaN, and the 0 of an infinite amax,
/// stay.
SLINRT_HD float fp8Scale(float amax, float fp8Max, bool pow2) {
  if (amax == 0.0f)
    return 1.0f;
  float scale = fp8Max / amax;
  scale = scale > 3.40282347e38f ? 3.40282347e38f : scale; // FLT_MAX; NaN stays
  uint32_t bits = bitCast<uint32_t>(scale);
  if (!pow2 || bits >= 0x7F800000u || bits == 0)
    return scale;
  return bitCast<float>(bits & 0xFF800000u);
}

/// The bits of |v|: for non-negative floats the unsigned order of the bits is
/// the numeric order, with every NaN above infinity, so amax reduces with an
/// integer max (atomicMax on CUDA) and a NaN input gives a NaN amax.
SLINRT_HD uint32_t absBits(float v) {
  return bitCast<uint32_t>(v) & 0x7FFFFFFFu;
}

} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_FLOAT8_H

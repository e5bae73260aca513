//===- Float16.h - bf16/fp16 storage types and conversions ------*- C++ -*-===//
//
// Storage types for IEEE binary16 (`Half`) and bfloat16 (`BFloat16`) and the
// element conversions shared by the CPU runtime and the CUDA kernels, so that
// both targets round identically. Narrowing rounds to nearest, ties to even,
// handles subnormals, keeps NaN a (quiet) NaN and overflows to infinity.
// Narrowing from double goes through float rounded to odd, which is exact
// enough (float has more than 11 + 2 bits) for the final rounding to equal a
// direct double -> half rounding: no double-rounding error.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_FLOAT16_H
#define SPLITLINEAR_LIB_RUNTIME_FLOAT16_H

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define SLINRT_HD __host__ __device__ __forceinline__
#else
#define SLINRT_HD inline
#endif

namespace slinrt {

/// IEEE binary16 storage (no arithmetic: convert to float first).
struct Half {
  uint16_t bits;
};
/// bfloat16 storage: the upper 16 bits of a binary32.
struct BFloat16 {
  uint16_t bits;
};

/// Reinterprets the bits of `from` as a `To` (memcpy compiles to a move on
/// both host and device).
template <typename To, typename From> SLINRT_HD To bitCast(const From &from) {
  static_assert(sizeof(To) == sizeof(From), "bitCast needs equal sizes");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

/// Rounds a float to the nearest binary16, ties to even.
SLINRT_HD uint16_t floatToHalfBits(float value) {
  uint32_t x = bitCast<uint32_t>(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) {
    // NaN keeps its sign and top payload bits and is made quiet.
    if (absx > 0x7F800000u)
      return static_cast<uint16_t>(sign | 0x7E00u | ((absx >> 13) & 0x3FFu));
    return static_cast<uint16_t>(sign | 0x7C00u);
  }
  // 65520 is halfway between 65504 (odd mantissa) and 2^16: ties go to inf.
  if (absx >= 0x477FF000u)
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (absx < 0x38800000u) {
    // Below 2^-14: a half subnormal (units of 2^-24) or zero. 2^-25 is the
    // tie between 0 and the smallest subnormal and goes to 0 (even).
    if (absx <= 0x33000000u)
      return static_cast<uint16_t>(sign);
    uint32_t exponent = absx >> 23;
    uint32_t mantissa = (absx & 0x7FFFFFu) | 0x800000u;
    uint32_t shift = 126u - exponent;
    uint32_t result = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (result & 1u)))
      ++result; // may carry into the smallest normal: still the right encoding
    return static_cast<uint16_t>(sign | result);
  }
  uint32_t result = (((absx >> 23) - 112u) << 10) | ((absx >> 13) & 0x3FFu);
  uint32_t rest = absx & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1u)))
    ++result; // a carry into the exponent is the correct next binade
  return static_cast<uint16_t>(sign | result);
}

/// Widens a binary16 to float (exact).
SLINRT_HD float halfBitsToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0x1Fu) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {
      // Subnormal: normalize so that the implicit bit is set.
      uint32_t e = 113;
      while (!(mantissa & 0x400u)) {
        mantissa <<= 1;
        --e;
      }
      bits = sign | (e << 23) | ((mantissa & 0x3FFu) << 13);
    }
  } else {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  return bitCast<float>(bits);
}

/// Rounds a float to the nearest bfloat16, ties to even.
SLINRT_HD uint16_t floatToBFloat16Bits(float value) {
  uint32_t x = bitCast<uint32_t>(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((x >> 16) | 0x0040u); // quiet NaN
  // Adding 0x7FFF plus the kept LSB rounds to nearest even; overflow carries
  // into the exponent and yields inf, as it should.
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

/// Widens a bfloat16 to float (exact).
SLINRT_HD float bfloat16BitsToFloat(uint16_t b) {
  return bitCast<float>(static_cast<uint32_t>(b) << 16);
}

/// Converts double to float rounding to odd: an inexact result gets its last
/// mantissa bit set. A later round-to-nearest to a format with at most 22
/// mantissa bits then equals rounding the double directly.
SLINRT_HD float doubleToFloatRoundToOdd(double value) {
  float rounded = static_cast<float>(value);
  uint64_t bits = bitCast<uint64_t>(value);
  if ((bits & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull)
    return rounded; // NaN
  double back = static_cast<double>(rounded);
  if (back == value)
    return rounded;
  uint32_t r = bitCast<uint32_t>(rounded);
  // Step back toward zero if RNE rounded away from it (inf becomes FLT_MAX).
  if ((back < 0 ? -back : back) > (value < 0 ? -value : value))
    --r;
  return bitCast<float>(r | 1u);
}

//===----------------------------------------------------------------------===//
// Element conversion: convertElement<To>(from)
//===----------------------------------------------------------------------===//

/// Widens any element to float (exact for everything but double).
SLINRT_HD float toFloat(float v) { return v; }
SLINRT_HD float toFloat(double v) { return static_cast<float>(v); }
SLINRT_HD float toFloat(Half v) { return halfBitsToFloat(v.bits); }
SLINRT_HD float toFloat(BFloat16 v) { return bfloat16BitsToFloat(v.bits); }

/// Widens any element to double (exact).
SLINRT_HD double toDouble(float v) { return v; }
SLINRT_HD double toDouble(double v) { return v; }
SLINRT_HD double toDouble(Half v) { return halfBitsToFloat(v.bits); }
SLINRT_HD double toDouble(BFloat16 v) { return bfloat16BitsToFloat(v.bits); }

/// Conversion to a given element type, specialized per destination.
template <typename To> struct Convert;

template <> struct Convert<float> {
  template <typename From> SLINRT_HD static float from(From v) {
    return toFloat(v);
  }
};
template <> struct Convert<double> {
  template <typename From> SLINRT_HD static double from(From v) {
    return toDouble(v);
  }
};
/// float to a 16-bit storage type, rounding to nearest even.
SLINRT_HD void narrowFloat(float v, Half &out) { out.bits = floatToHalfBits(v); }
SLINRT_HD void narrowFloat(float v, BFloat16 &out) {
  out.bits = floatToBFloat16Bits(v);
}

/// Conversion to a 16-bit storage type `H`: from `H` bit for bit; from double
/// through float rounded to odd (so the two roundings act as one); from
/// anything else through float.
template <typename H> struct ConvertTo16Bit {
  SLINRT_HD static H from(H v) { return v; }
  SLINRT_HD static H from(double v) {
    H out;
    narrowFloat(doubleToFloatRoundToOdd(v), out);
    return out;
  }
  template <typename From> SLINRT_HD static H from(From v) {
    H out;
    narrowFloat(toFloat(v), out);
    return out;
  }
};
template <> struct Convert<Half> : ConvertTo16Bit<Half> {};
template <> struct Convert<BFloat16> : ConvertTo16Bit<BFloat16> {};

/// Converts one element, rounding to nearest even when narrowing.
template <typename To, typename From> SLINRT_HD To convertElement(From v) {
  return Convert<To>::from(v);
}

/// The accumulator type of a storage type: double for double, else float.
template <typename T> struct Accumulator { using type = float; };
template <> struct Accumulator<double> { using type = double; };

} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_FLOAT16_H

//===- CopyTest.cpp - Copies and element conversion -------------*- C++ -*-===//
//
// The 16 converting copy2d / copy1d entry points on strided, offset and
// negatively strided views, and the element conversions themselves against
// the reference rounding of TestUtils.h: exhaustively for binary16 and
// bfloat16 inputs, on random bit patterns for float inputs, and on the edge
// cases (subnormals, ties, overflow, NaN, signed zero, double rounding).
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include <gtest/gtest.h>

using namespace slinrt_test;

namespace {

constexpr double kSentinel = 7.0;

/// Equal as values, NaN equal to NaN, and zeros of the same sign.
::testing::AssertionResult sameValue(double got, double want) {
  if ((std::isnan(got) && std::isnan(want)) ||
      (got == want && std::signbit(got) == std::signbit(want)))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << got << " (" << std::hexfloat << got << "), want " << want
         << " (" << want << ")" << std::defaultfloat;
}

/// Random values over many binades (subnormal to overflow for f16), with a
/// few specials, representable in `dtype`.
double wideRandom(std::mt19937_64 &rng, slinrt_dtype dtype) {
  std::uniform_int_distribution<int> kind(0, 40), exponent(-30, 20);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  int k = kind(rng);
  double v;
  if (k == 0)
    v = NAN;
  else if (k == 1)
    v = -INFINITY;
  else if (k == 2)
    v = -0.0;
  else
    v = std::ldexp(mantissa(rng), exponent(rng)) * (k % 2 ? -1 : 1);
  return roundTo(dtype, v);
}

class CopyPairTest
    : public ::testing::TestWithParam<std::tuple<slinrt_dtype, slinrt_dtype>> {
protected:
  void SetUp() override { ctx = slinrt_context_create_cpu(); }
  void TearDown() override { slinrt_context_destroy(ctx); }
  slinrt_context *ctx = nullptr;
};

TEST_P(CopyPairTest, Copy2dConvertsStridedViews) {
  auto [srcType, dstType] = GetParam();
  CopyFns fns = copyFns(srcType, dstType);
  std::mt19937_64 rng(21);
  const int rows = 5, cols = 7;
  // Column-major source into a padded row-major destination: a transpose in
  // memory.
  TestMatrix src = TestMatrix::colMajor(srcType, rows, cols, 1, 2);
  TestMatrix dst = TestMatrix::rowMajor(dstType, rows, cols, 2, 1);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      src.set(i, j, wideRandom(rng, srcType));
  dst.fillBuffer(kSentinel);
  fns.cpu2d(ctx, src.ref(), dst.ref());
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      EXPECT_TRUE(sameValue(dst.get(i, j), roundTo(dstType, src.get(i, j))))
          << "[" << i << ", " << j << "]";
  EXPECT_EQ(dst.changedOutsideView(kSentinel), 0);

  // Rows reversed through a negative row stride; same-dtype copies take the
  // contiguous-row path here.
  TestMatrix reversed(dstType, rows, cols, -(cols + 3), 1,
                      (rows - 1) * (cols + 3));
  TestMatrix plain = TestMatrix::rowMajor(srcType, rows, cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      plain.set(i, j, wideRandom(rng, srcType));
  reversed.fillBuffer(kSentinel);
  fns.cpu2d(ctx, plain.ref(), reversed.ref());
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      EXPECT_TRUE(
          sameValue(reversed.get(i, j), roundTo(dstType, plain.get(i, j))));
  EXPECT_EQ(reversed.changedOutsideView(kSentinel), 0);
  EXPECT_EQ(slinrt_context_counters(ctx).copies, 2);
}

TEST_P(CopyPairTest, Copy1dConvertsStridedViews) {
  auto [srcType, dstType] = GetParam();
  CopyFns fns = copyFns(srcType, dstType);
  std::mt19937_64 rng(22);
  TestVector src(srcType, 11, 2, 3);
  TestVector dst(dstType, 11, -3, 1);
  for (int i = 0; i < 11; ++i)
    src.set(i, wideRandom(rng, srcType));
  dst.fillBuffer(kSentinel);
  fns.cpu1d(ctx, src.ref(), dst.ref());
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
  for (int i = 0; i < 11; ++i)
    EXPECT_TRUE(sameValue(dst.get(i), roundTo(dstType, src.get(i))))
        << "[" << i << "]";
  EXPECT_EQ(dst.changedOutsideView(kSentinel), 0);

  // Empty copies succeed and touch nothing.
  TestVector empty(srcType, 0), emptyDst(dstType, 0);
  fns.cpu1d(ctx, empty.ref(), emptyDst.ref());
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK);
}

TEST_P(CopyPairTest, SizeMismatchIsInvalid) {
  auto [srcType, dstType] = GetParam();
  CopyFns fns = copyFns(srcType, dstType);
  TestMatrix src = TestMatrix::rowMajor(srcType, 3, 4);
  TestMatrix dst = TestMatrix::rowMajor(dstType, 4, 3);
  fns.cpu2d(ctx, src.ref(), dst.ref());
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(
      std::string(slinrt_context_error(ctx))
          .find("source sizes [3, 4] differ from destination sizes [4, 3]"),
      std::string::npos)
      << slinrt_context_error(ctx);
}

INSTANTIATE_TEST_SUITE_P(
    AllPairs, CopyPairTest,
    ::testing::Combine(
        ::testing::Values(SLINRT_F32, SLINRT_F16, SLINRT_BF16, SLINRT_F64),
        ::testing::Values(SLINRT_F32, SLINRT_F16, SLINRT_BF16, SLINRT_F64)),
    [](const auto &info) {
      return std::string(dtypeName(std::get<0>(info.param))) + "_to_" +
             dtypeName(std::get<1>(info.param));
    });

//===----------------------------------------------------------------------===//
// Element conversions
//===----------------------------------------------------------------------===//

/// Copies raw 16-bit patterns through copy1d S -> T on a CPU context.
class Conversion : public ::testing::Test {
protected:
  void SetUp() override { ctx = slinrt_context_create_cpu(); }
  void TearDown() override { slinrt_context_destroy(ctx); }

  /// Converts `values` (given in `srcType`) to `dstType` with copy1d.
  TestVector convert(slinrt_dtype srcType, slinrt_dtype dstType,
                     const std::vector<double> &values) {
    TestVector src(srcType, int64_t(values.size()));
    for (size_t i = 0; i < values.size(); ++i)
      src.set(int64_t(i), values[i]);
    return convertVector(src, dstType);
  }
  TestVector convertVector(TestVector &src, slinrt_dtype dstType) {
    TestVector dst(dstType, src.size());
    copyFns(src.matrix.dtype, dstType).cpu1d(ctx, src.ref(), dst.ref());
    EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK)
        << slinrt_context_error(ctx);
    return dst;
  }
  /// A vector of every 16-bit pattern, as `dtype`.
  TestVector allPatterns(slinrt_dtype dtype) {
    TestVector v(dtype, 65536);
    auto *bits = static_cast<uint16_t *>(v.desc.aligned) + v.desc.offset;
    for (int i = 0; i < 65536; ++i)
      bits[i] = static_cast<uint16_t>(i);
    return v;
  }
  slinrt_context *ctx = nullptr;
};

TEST_F(Conversion, EveryHalfWidensExactlyAndRoundTrips) {
  TestVector halves = allPatterns(SLINRT_F16);
  TestVector floats = convertVector(halves, SLINRT_F32);
  TestVector doubles = convertVector(halves, SLINRT_F64);
  for (int i = 0; i < 65536; ++i) {
    double want = decodeHalf(static_cast<uint16_t>(i));
    ASSERT_TRUE(sameValue(floats.get(i), want)) << "bits " << i;
    ASSERT_TRUE(sameValue(doubles.get(i), want)) << "bits " << i;
  }
  TestVector back = convertVector(floats, SLINRT_F16);
  TestVector backFromDouble = convertVector(doubles, SLINRT_F16);
  auto *bits = static_cast<uint16_t *>(back.desc.aligned) + back.desc.offset;
  auto *bits2 = static_cast<uint16_t *>(backFromDouble.desc.aligned) +
                backFromDouble.desc.offset;
  for (int i = 0; i < 65536; ++i) {
    bool nan = (i & 0x7C00) == 0x7C00 && (i & 0x3FF);
    if (nan) {
      // NaN stays NaN, made quiet, sign kept.
      ASSERT_EQ(bits[i] & 0xFE00, (i & 0x8000) | 0x7E00) << "bits " << i;
    } else {
      ASSERT_EQ(bits[i], i) << "bits " << i;
      ASSERT_EQ(bits2[i], i) << "bits " << i;
    }
  }
}

TEST_F(Conversion, EveryBFloat16WidensExactlyAndRoundTrips) {
  TestVector b = allPatterns(SLINRT_BF16);
  TestVector floats = convertVector(b, SLINRT_F32);
  for (int i = 0; i < 65536; ++i)
    ASSERT_TRUE(sameValue(floats.get(i), decodeBFloat16(uint16_t(i))));
  TestVector back = convertVector(floats, SLINRT_BF16);
  auto *bits = static_cast<uint16_t *>(back.desc.aligned) + back.desc.offset;
  for (int i = 0; i < 65536; ++i) {
    bool nan = (i & 0x7F80) == 0x7F80 && (i & 0x7F);
    if (nan)
      ASSERT_EQ(bits[i] | 0x40, i | 0x40) << "bits " << i;
    else
      ASSERT_EQ(bits[i], i) << "bits " << i;
  }
}

TEST_F(Conversion, EveryHalfToBFloat16AndBack) {
  TestVector halves = allPatterns(SLINRT_F16);
  TestVector b = convertVector(halves, SLINRT_BF16);
  for (int i = 0; i < 65536; ++i)
    ASSERT_TRUE(
        sameValue(b.get(i), roundTo(SLINRT_BF16, decodeHalf(uint16_t(i)))))
        << "bits " << i;
  TestVector bf = allPatterns(SLINRT_BF16);
  TestVector h = convertVector(bf, SLINRT_F16);
  for (int i = 0; i < 65536; ++i)
    ASSERT_TRUE(
        sameValue(h.get(i), roundTo(SLINRT_F16, decodeBFloat16(uint16_t(i)))))
        << "bits " << i;
}

TEST_F(Conversion, RandomFloatBitsRoundToNearestEven) {
  std::mt19937_64 rng(23);
  const int count = 1 << 18;
  TestVector floats(SLINRT_F32, count);
  auto *bits = static_cast<uint32_t *>(floats.desc.aligned);
  for (int i = 0; i < count; ++i) {
    uint32_t r = static_cast<uint32_t>(rng());
    // Half of them near the f16 range so that subnormals and ties show up.
    if (i % 2)
      r = (r & 0x80000000u) | ((0x30000000u + (r & 0x1FFFFFFFu)) & 0x7FFFFFFFu);
    bits[i] = r;
  }
  TestVector halves = convertVector(floats, SLINRT_F16);
  TestVector b = convertVector(floats, SLINRT_BF16);
  for (int i = 0; i < count; ++i) {
    ASSERT_TRUE(sameValue(halves.get(i), roundTo(SLINRT_F16, floats.get(i))))
        << "float bits 0x" << std::hex << bits[i];
    ASSERT_TRUE(sameValue(b.get(i), roundTo(SLINRT_BF16, floats.get(i))))
        << "float bits 0x" << std::hex << bits[i];
  }
}

TEST_F(Conversion, RandomDoublesRoundOnce) {
  std::mt19937_64 rng(24);
  const int count = 1 << 16;
  std::vector<double> values(count);
  std::uniform_int_distribution<int> exponent(-30, 17);
  for (int i = 0; i < count; ++i) {
    uint64_t bits = rng();
    double mantissa;
    uint64_t m = (bits & 0xFFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
    std::memcpy(&mantissa, &m, 8);
    values[i] = std::ldexp(mantissa, exponent(rng)) * (bits >> 63 ? -1 : 1);
  }
  TestVector halves = convert(SLINRT_F64, SLINRT_F16, values);
  TestVector b = convert(SLINRT_F64, SLINRT_BF16, values);
  TestVector f = convert(SLINRT_F64, SLINRT_F32, values);
  for (int i = 0; i < count; ++i) {
    ASSERT_TRUE(sameValue(halves.get(i), roundTo(SLINRT_F16, values[i])))
        << std::hexfloat << values[i];
    ASSERT_TRUE(sameValue(b.get(i), roundTo(SLINRT_BF16, values[i])))
        << std::hexfloat << values[i];
    ASSERT_TRUE(sameValue(f.get(i), roundTo(SLINRT_F32, values[i])));
  }
}

TEST_F(Conversion, EdgeCases) {
  const double inf = INFINITY;
  struct Case {
    slinrt_dtype src, dst;
    double in, out;
  } cases[] = {
      // f16 overflow: 65519.99 rounds down, the tie 65520 goes to inf (even).
      {SLINRT_F32, SLINRT_F16, 65504, 65504},
      {SLINRT_F32, SLINRT_F16, 65519.99, 65504},
      {SLINRT_F32, SLINRT_F16, 65520, inf},
      {SLINRT_F32, SLINRT_F16, -1e10, -inf},
      // f16 subnormals: 2^-25 is a tie to 0, just above it rounds up.
      {SLINRT_F32, SLINRT_F16, std::ldexp(1.0, -24), std::ldexp(1.0, -24)},
      {SLINRT_F32, SLINRT_F16, std::ldexp(1.0, -25), 0},
      {SLINRT_F32, SLINRT_F16,
       std::ldexp(1.0, -25) * (1 + std::ldexp(1.0, -20)), std::ldexp(1.0, -24)},
      {SLINRT_F32, SLINRT_F16, 3 * std::ldexp(1.0, -25),
       2 * std::ldexp(1.0, -24)},
      {SLINRT_F32, SLINRT_F16, -std::ldexp(1.0, -30), -0.0},
      // Largest subnormal rounding up to the smallest normal.
      {SLINRT_F32, SLINRT_F16, std::ldexp(1023.75, -24), std::ldexp(1.0, -14)},
      // Ties to even in the normal range: 1 + 2^-11 -> 1, 1 + 3*2^-11 -> 1 +
      // 2^-9.
      {SLINRT_F32, SLINRT_F16, 1 + std::ldexp(1.0, -11), 1},
      {SLINRT_F32, SLINRT_F16, 1 + 3 * std::ldexp(1.0, -11),
       1 + std::ldexp(1.0, -9)},
      {SLINRT_F32, SLINRT_BF16, 1 + std::ldexp(1.0, -8), 1},
      {SLINRT_F32, SLINRT_BF16, 1 + 3 * std::ldexp(1.0, -8),
       1 + std::ldexp(1.0, -6)},
      {SLINRT_F32, SLINRT_BF16, FLT_MAX, inf},
      {SLINRT_F32, SLINRT_BF16, -0.0, -0.0},
      // Double rounding: through RNE float these would land on the tie and
      // then round to even; the right answer rounds up.
      {SLINRT_F64, SLINRT_F16, 1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40),
       1 + std::ldexp(1.0, -10)},
      {SLINRT_F64, SLINRT_BF16, 1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40),
       1 + std::ldexp(1.0, -7)},
      {SLINRT_F64, SLINRT_F16, 1e300, inf},
      {SLINRT_F64, SLINRT_BF16, -1e300, -inf},
      {SLINRT_F64, SLINRT_F16, 1e-300, 0},
      {SLINRT_F64, SLINRT_F32, 1e-300, 0},
      {SLINRT_F64, SLINRT_F32, 1e300, inf},
      {SLINRT_F64, SLINRT_F16, NAN, NAN},
      {SLINRT_F64, SLINRT_BF16, -inf, -inf},
      {SLINRT_F16, SLINRT_F64, inf, inf},
      {SLINRT_BF16, SLINRT_F16, NAN, NAN},
  };
  for (const Case &c : cases) {
    TestVector src(c.src, 1);
    // Store the input's bits exactly (f64/f32 inputs are representable).
    src.set(0, c.in);
    TestVector dst = convertVector(src, c.dst);
    EXPECT_TRUE(sameValue(dst.get(0), c.out))
        << dtypeName(c.src) << " -> " << dtypeName(c.dst) << " of "
        << std::hexfloat << c.in;
  }
}

} // namespace

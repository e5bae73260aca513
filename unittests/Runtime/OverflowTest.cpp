//===- OverflowTest.cpp - Index arithmetic that overflows int64 -*- C++ -*-===//
//
// Descriptors whose address arithmetic (offset · element size, the extent
// offset + (rows - 1)·ld + cols, rows · cols) does not fit in int64 must fail
// with SLINRT_ERROR_INVALID_ARGUMENT instead of wrapping around: a wrapped
// offset silently reads the start of the buffer, a wrapped element count
// silently skips a copy.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

using namespace slinrt_test;

namespace {

class OverflowTest : public ::testing::Test {
protected:
  void SetUp() override { ctx = slinrt_context_create_cpu(); }
  void TearDown() override { slinrt_context_destroy(ctx); }

  void expectOverflow(const char *operand) {
    EXPECT_EQ(slinrt_context_status(ctx), SLINRT_ERROR_INVALID_ARGUMENT);
    std::string error = slinrt_context_error(ctx);
    EXPECT_NE(error.find(operand), std::string::npos) << error;
    EXPECT_NE(error.find("spans more bytes than int64 can address"),
              std::string::npos)
        << error;
  }

  slinrt_context *ctx = nullptr;
};

/// 2^62 f32 elements are 2^64 bytes: the byte offset wraps to exactly 0.
constexpr int64_t kWrappingOffset = int64_t(1) << 62;

// Regression: rows · cols = 2^32 · 2^32 wrapped to 0 and the copy was skipped
// without an error.
TEST_F(OverflowTest, CopyElementCountOverflows) {
  float src[4] = {1, 2, 3, 4}, dst[4] = {0, 0, 0, 0};
  int64_t big = int64_t(1) << 32;
  slinrt_memref2d s{src, src, 0, {big, big}, {big, 1}};
  slinrt_memref2d d{dst, dst, 0, {big, big}, {big, 1}};
  _mlir_ciface_slinrt_cpu_copy2d_f32_f32(ctx, &s, &d);
  expectOverflow("source");
}

// Regression: an offset whose byte offset wraps to 0 copied the start of the
// buffer.
TEST_F(OverflowTest, CopyOffsetBytesOverflow) {
  float src[4] = {1, 2, 3, 4}, dst[4] = {0, 0, 0, 0};
  slinrt_memref1d s{src, src, kWrappingOffset, {4}, {1}};
  slinrt_memref1d d{dst, dst, 0, {4}, {1}};
  _mlir_ciface_slinrt_cpu_copy1d_f32_f32(ctx, &s, &d);
  expectOverflow("source");
  EXPECT_EQ(dst[0], 0.0f);
}

// Regression: the same for a GEMM operand, which then read the start of the
// buffer as A.
TEST_F(OverflowTest, GemmOffsetBytesOverflow) {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, out[4] = {0, 0, 0, 0};
  slinrt_memref2d A{a, a, kWrappingOffset, {2, 2}, {2, 1}};
  slinrt_memref2d B{b, b, 0, {2, 2}, {2, 1}};
  slinrt_memref2d D{out, out, 0, {2, 2}, {2, 1}};
  _mlir_ciface_slinrt_cpu_gemm_f32(ctx, &A, &B, &D, nullptr, 0, 0,
                                   SLINRT_EPILOGUE_NONE);
  expectOverflow("operand A");
  EXPECT_EQ(out[0], 0.0f);
}

// The last row's element offset, offset + (rows - 1)·ld, overflows int64.
TEST_F(OverflowTest, GemmExtentOverflows) {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, out[4] = {0, 0, 0, 0};
  slinrt_memref2d A{a, a, 0, {2, 2}, {2, 1}};
  slinrt_memref2d B{b, b, 0, {2, 2}, {2, 1}};
  slinrt_memref2d D{out, out, 0, {2, 2}, {INT64_MAX, 1}};
  _mlir_ciface_slinrt_cpu_gemm_f32(ctx, &A, &B, &D, nullptr, 0, 0,
                                   SLINRT_EPILOGUE_NONE);
  expectOverflow("operand D");
}

TEST_F(OverflowTest, BiasOffsetBytesOverflow) {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, out[4] = {0, 0, 0, 0};
  float bias[2] = {5, 6};
  slinrt_memref2d A{a, a, 0, {2, 2}, {2, 1}};
  slinrt_memref2d B{b, b, 0, {2, 2}, {2, 1}};
  slinrt_memref2d D{out, out, 0, {2, 2}, {2, 1}};
  slinrt_memref1d bv{bias, bias, kWrappingOffset, {2}, {1}};
  _mlir_ciface_slinrt_cpu_gemm_f32(ctx, &A, &B, &D, &bv, 0, 0,
                                   SLINRT_EPILOGUE_BIAS);
  expectOverflow("bias");
}

// Sizes at the limit that still fit are accepted: an empty view far out.
TEST_F(OverflowTest, LargeButRepresentableOffsetIsAccepted) {
  float src[1] = {1}, dst[1] = {0};
  slinrt_memref1d s{src, src, (int64_t(1) << 60) - 1, {0}, {1}};
  slinrt_memref1d d{dst, dst, 0, {0}, {1}};
  _mlir_ciface_slinrt_cpu_copy1d_f32_f32(ctx, &s, &d);
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
}

} // namespace

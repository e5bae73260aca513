//===- ContextTest.cpp - Errors, allocation, counters -----------*- C++ -*-===//
//
// The context API on the CPU: every error status with its message, the
// sticky first-error rule and clear_error, allocation through default and
// custom allocators, counters, and what the CUDA entry points do when CUDA
// is not available (not compiled in, or no GPU / a CPU context).
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include <gtest/gtest.h>

using namespace slinrt_test;

namespace {

/// Succeeds when `text` contains `part` (gtest alone has no matcher for it).
::testing::AssertionResult contains(const std::string &text,
                                    const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << text << "\" does not contain \"" << part << "\"";
}

class ContextTest : public ::testing::Test {
protected:
  void SetUp() override { ctx = slinrt_context_create_cpu(); }
  void TearDown() override { slinrt_context_destroy(ctx); }

  std::string error() const { return slinrt_context_error(ctx); }

  /// Runs an f32 GEMM on the given descriptors and returns the status.
  slinrt_status gemm(TestMatrix &A, TestMatrix &B, TestMatrix &D,
                     TestVector *bias, int transA, int transB, int epilogue) {
    _mlir_ciface_slinrt_cpu_gemm_f32(ctx, A.ref(), B.ref(), D.ref(),
                                     bias ? bias->ref() : nullptr, transA,
                                     transB, epilogue);
    return slinrt_context_status(ctx);
  }

  slinrt_context *ctx = nullptr;
};

/// Expects `status` and a message holding `text`, then clears the error.
#define EXPECT_ERROR(ctx, call, status, text)                                  \
  do {                                                                         \
    EXPECT_EQ((call), (status));                                               \
    EXPECT_TRUE(contains(std::string(slinrt_context_error(ctx)), text));       \
    slinrt_context_clear_error(ctx);                                           \
  } while (0)

TEST_F(ContextTest, FreshContextIsOk) {
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK);
  EXPECT_STREQ(slinrt_context_error(ctx), "");
  slinrt_counters c = slinrt_context_counters(ctx);
  EXPECT_EQ(c.gemms + c.copies + c.allocs + c.epilogue_fallbacks +
                c.algo_cache_hits + c.algo_cache_misses,
            0);
  EXPECT_STREQ(slinrt_last_create_error(), "");
}

TEST_F(ContextTest, BadOperandLayouts) {
  TestMatrix A = TestMatrix::rowMajor(SLINRT_F32, 4, 5);
  TestMatrix D = TestMatrix::rowMajor(SLINRT_F32, 4, 6);
  TestMatrix B(SLINRT_F32, 5, 6, 3, 2, 0);
  EXPECT_ERROR(ctx, gemm(A, B, D, nullptr, 0, 0, 0),
               SLINRT_ERROR_INVALID_ARGUMENT,
               "slinrt_cpu_gemm_f32: operand B has strides [3, 2]: expected "
               "row-major [ld, 1] or column-major [1, ld]");

  // Row-major with a leading dimension below the column count.
  TestMatrix narrow(SLINRT_F32, 4, 5, 4, 1, 0);
  TestMatrix B2 = TestMatrix::rowMajor(SLINRT_F32, 5, 6);
  EXPECT_ERROR(ctx, gemm(narrow, B2, D, nullptr, 0, 0, 0),
               SLINRT_ERROR_INVALID_ARGUMENT,
               "operand A with sizes [4, 5] has strides [4, 1]: row-major "
               "leading dimension 4 is smaller than its 5 columns");

  // Column-major with a leading dimension below the row count.
  TestMatrix shortCols(SLINRT_F32, 5, 6, 1, 3, 0);
  EXPECT_ERROR(ctx, gemm(A, shortCols, D, nullptr, 0, 0, 0),
               SLINRT_ERROR_INVALID_ARGUMENT,
               "column-major leading dimension 3 is smaller than its 5 rows");

  // D must be row-major.
  TestMatrix colD = TestMatrix::colMajor(SLINRT_F32, 4, 6);
  EXPECT_ERROR(ctx, gemm(A, B2, colD, nullptr, 0, 0, 0),
               SLINRT_ERROR_INVALID_ARGUMENT,
               "operand D has strides [1, 4]: expected row-major [ld, 1]");

  TestMatrix negative(SLINRT_F32, 4, 5, 5, 1, 0);
  negative.desc.sizes[0] = -1;
  EXPECT_ERROR(ctx, gemm(negative, B2, D, nullptr, 0, 0, 0),
               SLINRT_ERROR_INVALID_ARGUMENT, "negative sizes [-1, 5]");
}

TEST_F(ContextTest, ShapeMismatches) {
  TestMatrix A = TestMatrix::rowMajor(SLINRT_F32, 4, 8);
  TestMatrix B = TestMatrix::rowMajor(SLINRT_F32, 7, 5);
  TestMatrix D = TestMatrix::rowMajor(SLINRT_F32, 4, 5);
  EXPECT_ERROR(ctx, gemm(A, B, D, nullptr, 0, 0, 0),
               SLINRT_ERROR_INVALID_ARGUMENT,
               "inner dimensions differ: op(A) is 4x8 (A [4, 8], transA = 0), "
               "op(B) is 7x5 (B [7, 5], transB = 0), D is [4, 5]");

  TestMatrix B8 = TestMatrix::rowMajor(SLINRT_F32, 8, 5);
  TestMatrix D3 = TestMatrix::rowMajor(SLINRT_F32, 3, 5);
  EXPECT_ERROR(ctx, gemm(A, B8, D3, nullptr, 0, 0, 0),
               SLINRT_ERROR_INVALID_ARGUMENT,
               "op(A) and D have different rows");

  TestMatrix D6 = TestMatrix::rowMajor(SLINRT_F32, 4, 6);
  EXPECT_ERROR(ctx, gemm(A, B8, D6, nullptr, 0, 0, 0),
               SLINRT_ERROR_INVALID_ARGUMENT,
               "op(B) and D have different columns");

  // The transpose flags change which sizes must agree.
  TestMatrix Bt = TestMatrix::rowMajor(SLINRT_F32, 5, 8);
  EXPECT_EQ(gemm(A, Bt, D, nullptr, 0, 1, 0), SLINRT_OK) << error();
  EXPECT_ERROR(ctx, gemm(A, Bt, D, nullptr, 1, 1, 0),
               SLINRT_ERROR_INVALID_ARGUMENT, "op(A) is 8x4");
}

TEST_F(ContextTest, BiasChecks) {
  TestMatrix A = TestMatrix::rowMajor(SLINRT_F32, 4, 3);
  TestMatrix B = TestMatrix::rowMajor(SLINRT_F32, 3, 5);
  TestMatrix D = TestMatrix::rowMajor(SLINRT_F32, 4, 5);
  TestVector wrong(SLINRT_F32, 4);
  EXPECT_ERROR(ctx, gemm(A, B, D, &wrong, 0, 0, SLINRT_EPILOGUE_BIAS),
               SLINRT_ERROR_INVALID_ARGUMENT,
               "bias has 4 elements, expected 5 (N, the number of columns of "
               "D) for epilogue BIAS");
  TestVector wrongGrad(SLINRT_F32, 5);
  EXPECT_ERROR(ctx, gemm(A, B, D, &wrongGrad, 0, 0, SLINRT_EPILOGUE_BIAS_GRAD),
               SLINRT_ERROR_INVALID_ARGUMENT,
               "bias has 5 elements, expected 4 (M, the number of rows of D) "
               "for epilogue BIAS_GRAD");
  TestVector strided(SLINRT_F32, 5, 2);
  EXPECT_ERROR(ctx, gemm(A, B, D, &strided, 0, 0, SLINRT_EPILOGUE_BIAS),
               SLINRT_ERROR_INVALID_ARGUMENT, "bias has stride 2, expected 1");
  EXPECT_ERROR(ctx, gemm(A, B, D, nullptr, 0, 0, SLINRT_EPILOGUE_BIAS),
               SLINRT_ERROR_INVALID_ARGUMENT,
               "epilogue BIAS needs a bias, got a NULL descriptor");
  EXPECT_ERROR(ctx, gemm(A, B, D, nullptr, 0, 0, 7),
               SLINRT_ERROR_INVALID_ARGUMENT, "unknown epilogue 7");
  // A bias is ignored for NONE, even one of the wrong length.
  EXPECT_EQ(gemm(A, B, D, &wrong, 0, 0, SLINRT_EPILOGUE_NONE), SLINRT_OK);
}

TEST_F(ContextTest, NullDescriptorsAndPointers) {
  TestMatrix A = TestMatrix::rowMajor(SLINRT_F32, 2, 2);
  TestMatrix B = TestMatrix::rowMajor(SLINRT_F32, 2, 2);
  TestMatrix D = TestMatrix::rowMajor(SLINRT_F32, 2, 2);
  _mlir_ciface_slinrt_cpu_gemm_f32(ctx, A.ref(), nullptr, D.ref(), nullptr, 0,
                                   0, 0);
  EXPECT_ERROR(ctx, slinrt_context_status(ctx), SLINRT_ERROR_INVALID_ARGUMENT,
               "operand B is a NULL descriptor");
  A.desc.aligned = nullptr;
  EXPECT_ERROR(ctx, gemm(A, B, D, nullptr, 0, 0, 0),
               SLINRT_ERROR_INVALID_ARGUMENT,
               "operand A has a NULL data pointer");
  _mlir_ciface_slinrt_cpu_copy2d_f32_f16(ctx, nullptr, D.ref());
  EXPECT_ERROR(ctx, slinrt_context_status(ctx), SLINRT_ERROR_INVALID_ARGUMENT,
               "slinrt_cpu_copy2d_f32_f16: source is a NULL descriptor");
}

TEST_F(ContextTest, ErrorsAreStickyUntilCleared) {
  std::mt19937_64 rng(31);
  TestMatrix A = TestMatrix::rowMajor(SLINRT_F32, 3, 4);
  TestMatrix B = TestMatrix::rowMajor(SLINRT_F32, 4, 2);
  TestMatrix badB = TestMatrix::rowMajor(SLINRT_F32, 5, 2);
  TestMatrix D = TestMatrix::rowMajor(SLINRT_F32, 3, 2);
  A.fillRandom(rng);
  B.fillRandom(rng);
  D.fillBuffer(42);

  ASSERT_EQ(gemm(A, badB, D, nullptr, 0, 0, 0), SLINRT_ERROR_INVALID_ARGUMENT);
  std::string first = error();
  EXPECT_TRUE(contains(first, "inner dimensions differ"));

  // Later calls, valid or not, do nothing and keep the first error.
  EXPECT_EQ(gemm(A, B, D, nullptr, 0, 0, 0), SLINRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gemm(A, B, D, nullptr, 0, 0, 9), SLINRT_ERROR_INVALID_ARGUMENT);
  TestMatrix copyDst = TestMatrix::rowMajor(SLINRT_F32, 3, 2);
  copyDst.fillBuffer(42);
  _mlir_ciface_slinrt_cpu_copy2d_f32_f32(ctx, A.ref(), copyDst.ref());
  slinrt_memref1d buffer;
  _mlir_ciface_slinrt_cpu_alloc(&buffer, ctx, 64);
  EXPECT_EQ(buffer.aligned, nullptr);
  EXPECT_EQ(buffer.sizes[0], 0);
  EXPECT_EQ(error(), first);
  EXPECT_EQ(D.changedOutsideView(42) + copyDst.changedOutsideView(42), 0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(D.get(i, j), 42);
      EXPECT_EQ(copyDst.get(i, j), 42);
    }
  slinrt_counters c = slinrt_context_counters(ctx);
  EXPECT_EQ(c.gemms, 0);
  EXPECT_EQ(c.copies, 0);
  EXPECT_EQ(c.allocs, 0);

  slinrt_context_clear_error(ctx);
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK);
  EXPECT_STREQ(slinrt_context_error(ctx), "");
  EXPECT_EQ(gemm(A, B, D, nullptr, 0, 0, 0), SLINRT_OK) << error();
  EXPECT_NE(D.get(0, 0), 42);
  EXPECT_EQ(slinrt_context_counters(ctx).gemms, 1);
}

TEST_F(ContextTest, ErrorsStayInTheirContext) {
  ContextHolder other(slinrt_context_create_cpu());
  TestMatrix A = TestMatrix::rowMajor(SLINRT_F32, 3, 4);
  TestMatrix B = TestMatrix::rowMajor(SLINRT_F32, 5, 2);
  TestMatrix D = TestMatrix::rowMajor(SLINRT_F32, 3, 2);
  ASSERT_NE(gemm(A, B, D, nullptr, 0, 0, 0), SLINRT_OK);
  EXPECT_EQ(slinrt_context_status(other), SLINRT_OK);
}

TEST_F(ContextTest, DefaultAllocator) {
  slinrt_memref1d buffer;
  _mlir_ciface_slinrt_cpu_alloc(&buffer, ctx, 1000);
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << error();
  ASSERT_NE(buffer.aligned, nullptr);
  EXPECT_EQ(buffer.allocated, buffer.aligned);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.aligned) % 256, 0u);
  EXPECT_EQ(buffer.offset, 0);
  EXPECT_EQ(buffer.sizes[0], 1000);
  EXPECT_EQ(buffer.strides[0], 1);
  std::memset(buffer.aligned, 0xAB, 1000);
  _mlir_ciface_slinrt_cpu_free(
      ctx, static_cast<int64_t>(reinterpret_cast<intptr_t>(buffer.aligned)));
  _mlir_ciface_slinrt_cpu_free(ctx, 0);
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK) << error();
  EXPECT_EQ(slinrt_context_counters(ctx).allocs, 1);

  // Zero bytes: an empty buffer, no allocation, no error.
  _mlir_ciface_slinrt_cpu_alloc(&buffer, ctx, 0);
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK);
  EXPECT_EQ(buffer.aligned, nullptr);
  EXPECT_EQ(slinrt_context_counters(ctx).allocs, 1);

  _mlir_ciface_slinrt_cpu_alloc(&buffer, ctx, -5);
  EXPECT_ERROR(ctx, slinrt_context_status(ctx), SLINRT_ERROR_INVALID_ARGUMENT,
               "cannot allocate a negative size (-5 bytes)");

  _mlir_ciface_slinrt_cpu_alloc(&buffer, ctx, int64_t(1) << 62);
  EXPECT_EQ(buffer.aligned, nullptr);
  EXPECT_EQ(buffer.sizes[0], 0);
  EXPECT_ERROR(ctx, slinrt_context_status(ctx), SLINRT_ERROR_OUT_OF_MEMORY,
               "slinrt_cpu_alloc: could not allocate 4611686018427387904 bytes "
               "on the host");
}

/// A custom allocator that records its calls.
struct RecordingAllocator {
  int allocs = 0, frees = 0;
  int lastDevice = 99;
  void *lastStream = nullptr;
  size_t lastBytes = 0;
  bool misalign = false;
  std::vector<void *> blocks;

  static void *alloc(void *user, size_t bytes, int device, void *stream) {
    auto *self = static_cast<RecordingAllocator *>(user);
    ++self->allocs;
    self->lastDevice = device;
    self->lastStream = stream;
    self->lastBytes = bytes;
    void *block = std::aligned_alloc(256, (bytes + 256 + 255) / 256 * 256);
    self->blocks.push_back(block);
    return static_cast<char *>(block) + (self->misalign ? 8 : 0);
  }
  static void free(void *user, void *ptr, int, void *) {
    auto *self = static_cast<RecordingAllocator *>(user);
    ++self->frees;
    (void)ptr;
  }
  ~RecordingAllocator() {
    for (void *block : blocks)
      std::free(block);
  }
};

TEST_F(ContextTest, CustomAllocator) {
  RecordingAllocator recorder;
  int streamTag = 0;
  slinrt_context_set_stream(ctx, &streamTag);
  slinrt_context_set_allocator(ctx, RecordingAllocator::alloc,
                               RecordingAllocator::free, &recorder);
  slinrt_memref1d buffer;
  _mlir_ciface_slinrt_cpu_alloc(&buffer, ctx, 300);
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << error();
  EXPECT_EQ(recorder.allocs, 1);
  EXPECT_EQ(recorder.lastBytes, 300u);
  EXPECT_EQ(recorder.lastDevice, -1);
  EXPECT_EQ(recorder.lastStream, &streamTag);

  // An error does not stop frees: cleanup after a failure must not leak.
  TestMatrix A = TestMatrix::rowMajor(SLINRT_F32, 3, 4);
  TestMatrix B = TestMatrix::rowMajor(SLINRT_F32, 5, 2);
  TestMatrix D = TestMatrix::rowMajor(SLINRT_F32, 3, 2);
  ASSERT_NE(gemm(A, B, D, nullptr, 0, 0, 0), SLINRT_OK);
  _mlir_ciface_slinrt_cpu_free(
      ctx, static_cast<int64_t>(reinterpret_cast<intptr_t>(buffer.aligned)));
  EXPECT_EQ(recorder.frees, 1);
  slinrt_context_clear_error(ctx);

  // A misaligned block is rejected and handed back.
  recorder.misalign = true;
  _mlir_ciface_slinrt_cpu_alloc(&buffer, ctx, 64);
  EXPECT_EQ(recorder.frees, 2);
  EXPECT_ERROR(ctx, slinrt_context_status(ctx), SLINRT_ERROR_INVALID_ARGUMENT,
               "which is not aligned to 256 bytes");

  // NULL callbacks restore the default allocator.
  slinrt_context_set_allocator(ctx, nullptr, nullptr, nullptr);
  _mlir_ciface_slinrt_cpu_alloc(&buffer, ctx, 64);
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << error();
  EXPECT_EQ(recorder.allocs, 2);
  _mlir_ciface_slinrt_cpu_free(
      ctx, static_cast<int64_t>(reinterpret_cast<intptr_t>(buffer.aligned)));
  EXPECT_EQ(slinrt_context_counters(ctx).allocs, 2);
}

TEST_F(ContextTest, CountersCountCompletedCalls) {
  TestMatrix A = TestMatrix::rowMajor(SLINRT_F64, 2, 3);
  TestMatrix B = TestMatrix::rowMajor(SLINRT_F64, 3, 2);
  TestMatrix D = TestMatrix::rowMajor(SLINRT_F64, 2, 2);
  TestMatrix Dh = TestMatrix::rowMajor(SLINRT_F16, 2, 2);
  for (int i = 0; i < 3; ++i)
    _mlir_ciface_slinrt_cpu_gemm_f64(ctx, A.ref(), B.ref(), D.ref(), nullptr, 0,
                                     0, 0);
  _mlir_ciface_slinrt_cpu_copy2d_f64_f16(ctx, D.ref(), Dh.ref());
  TestVector v(SLINRT_F16, 4), w(SLINRT_BF16, 4);
  _mlir_ciface_slinrt_cpu_copy1d_f16_bf16(ctx, v.ref(), w.ref());
  slinrt_counters c = slinrt_context_counters(ctx);
  EXPECT_EQ(c.gemms, 3);
  EXPECT_EQ(c.copies, 2);
  EXPECT_EQ(c.allocs, 0);
  // The cuBLASLt counters never move on the CPU.
  EXPECT_EQ(c.epilogue_fallbacks, 0);
  EXPECT_EQ(c.algo_cache_hits + c.algo_cache_misses, 0);
  slinrt_context_set_allow_tf32(ctx, 1);
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK);
}

TEST(DefaultContext, IsSharedAndCannotBeDestroyed) {
  slinrt_context *def = slinrt_default_context();
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def, slinrt_default_context());
  slinrt_context_destroy(def);
  slinrt_context_destroy(nullptr);
  EXPECT_EQ(slinrt_context_status(def), slinrt_context_status(nullptr));
  TestMatrix A = TestMatrix::rowMajor(SLINRT_F32, 1, 1);
  TestMatrix D = TestMatrix::rowMajor(SLINRT_F32, 1, 1);
  _mlir_ciface_slinrt_cpu_copy2d_f32_f32(def, A.ref(), D.ref());
  EXPECT_EQ(slinrt_context_status(def), SLINRT_OK);
}

//===----------------------------------------------------------------------===//
// CUDA entry points where CUDA is not available
//===----------------------------------------------------------------------===//

TEST(CUDAUnavailable, CreateReturnsNullWithReason) {
  slinrt_context *cuda = slinrt_context_create_cuda(0, nullptr);
  if (cuda) {
    slinrt_context_destroy(cuda);
    GTEST_SKIP() << "a CUDA device is present";
  }
  std::string why = slinrt_last_create_error();
  EXPECT_TRUE(contains(why, "slinrt_context_create_cuda: "));
  if (!slinrt_has_cuda()) {
    EXPECT_TRUE(contains(why, "built without CUDA"));
  }
  // A later successful creation clears the reason.
  ContextHolder cpu(slinrt_context_create_cpu());
  EXPECT_STREQ(slinrt_last_create_error(), "");
}

TEST(CUDAUnavailable, EntryPointsReportNotAvailable) {
  // Without a CUDA context (no GPU here, or no CUDA in the build) a CPU
  // context is all there is: CUDA entry points must refuse it, not crash.
  std::string reason = slinrt_has_cuda()
                           ? "needs a CUDA context"
                           : "this runtime was built without CUDA";
  TestMatrix A = TestMatrix::rowMajor(SLINRT_F32, 2, 2);
  TestMatrix B = TestMatrix::rowMajor(SLINRT_F32, 2, 2);
  TestMatrix D = TestMatrix::rowMajor(SLINRT_F32, 2, 2);
  TestVector v(SLINRT_F32, 2), w(SLINRT_F32, 2);
  for (slinrt_dtype dtype : {SLINRT_F32, SLINRT_F16, SLINRT_BF16, SLINRT_F64}) {
    ContextHolder ctx(slinrt_context_create_cpu());
    cudaGemm(dtype)(ctx, A.ref(), B.ref(), D.ref(), nullptr, 0, 0, 0);
    EXPECT_EQ(slinrt_context_status(ctx), SLINRT_ERROR_NOT_AVAILABLE);
    EXPECT_TRUE(contains(std::string(slinrt_context_error(ctx)),
                         std::string("slinrt_cuda_gemm_") + dtypeName(dtype) +
                             ": " + reason));
  }
  for (const CopyFns &fns : allCopyFns()) {
    ContextHolder ctx(slinrt_context_create_cpu());
    fns.cuda2d(ctx, A.ref(), D.ref());
    EXPECT_EQ(slinrt_context_status(ctx), SLINRT_ERROR_NOT_AVAILABLE);
    slinrt_context_clear_error(ctx);
    fns.cuda1d(ctx, v.ref(), w.ref());
    EXPECT_EQ(slinrt_context_status(ctx), SLINRT_ERROR_NOT_AVAILABLE);
  }
  ContextHolder ctx(slinrt_context_create_cpu());
  slinrt_memref1d buffer;
  _mlir_ciface_slinrt_cuda_alloc(&buffer, ctx, 128);
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_ERROR_NOT_AVAILABLE);
  EXPECT_EQ(buffer.aligned, nullptr);
  EXPECT_TRUE(contains(std::string(slinrt_context_error(ctx)),
                       "slinrt_cuda_alloc: " + reason));
  slinrt_context_clear_error(ctx);
  int64_t bogus = 256;
  _mlir_ciface_slinrt_cuda_free(ctx, bogus);
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_ERROR_NOT_AVAILABLE);
}

/// A workspace is lent to CUDA contexts only; a CPU context says so.
TEST(ContextWorkspaceTest, CPUContextRefusesALentWorkspace) {
  ContextHolder ctx(slinrt_context_create_cpu());
  int dummy = 0;
  slinrt_context_set_workspace(ctx, &dummy, sizeof(dummy));
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(std::string(slinrt_context_error(ctx)),
                       "not a CUDA context"));
}

} // namespace

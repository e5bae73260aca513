//===- CPUGemmTest.cpp - CPU GEMM against a reference -----------*- C++ -*-===//
//
// Runs `_mlir_ciface_slinrt_cpu_gemm_<T>` on random data for every dtype,
// transpose, epilogue (ACCUMULATE onto random D) and operand layout (row- and column-major, padded,
// offset views) and compares with a double-precision reference, with a
// tolerance derived from the dtype's rounding and fp32/fp64 accumulation.
// Also covers empty dimensions and size-1 dimensions with arbitrary strides.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include <gtest/gtest.h>

#include <thread>
#include <tuple>

using namespace slinrt_test;

namespace {

constexpr double kSentinel = 7.0;

/// Bound on the accumulation error per unit of sum |a_k b_k|.
double accumulationEps(slinrt_dtype dtype, int K) {
  double unit =
      dtype == SLINRT_F64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  return 2.0 * unit * (K + 2);
}

/// |got - want| within one output rounding plus the accumulation bound.
::testing::AssertionResult closeEnough(double got, double want,
                                       double magnitude, slinrt_dtype dtype,
                                       int K) {
  double tol = outputRounding(dtype) * 1.001 * std::fabs(want) +
               accumulationEps(dtype, K) * magnitude + 1e-300;
  if (std::fabs(got - want) <= tol)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << got << ", want " << want << " (tolerance " << tol << ")";
}

struct GemmSetup {
  slinrt_dtype dtype;
  int M, N, K;
  bool transA, transB;
  int epilogue;
  bool colMajorA, colMajorB;
};

/// Builds operands for `s` as padded, offset views, runs the CPU GEMM and
/// checks D, the bias gradient and that nothing outside the views changed.
void runAndCheck(slinrt_context *ctx, const GemmSetup &s, uint64_t seed) {
  SCOPED_TRACE(testing::Message()
               << dtypeName(s.dtype) << " M=" << s.M << " N=" << s.N
               << " K=" << s.K << " transA=" << s.transA
               << " transB=" << s.transB << " epilogue=" << s.epilogue
               << " colA=" << s.colMajorA << " colB=" << s.colMajorB);
  std::mt19937_64 rng(seed);
  int aRows = s.transA ? s.K : s.M, aCols = s.transA ? s.M : s.K;
  int bRows = s.transB ? s.N : s.K, bCols = s.transB ? s.K : s.N;
  TestMatrix A = s.colMajorA
                     ? TestMatrix::colMajor(s.dtype, aRows, aCols, 2, 1)
                     : TestMatrix::rowMajor(s.dtype, aRows, aCols, 3, 2);
  TestMatrix B = s.colMajorB
                     ? TestMatrix::colMajor(s.dtype, bRows, bCols, 1, 3)
                     : TestMatrix::rowMajor(s.dtype, bRows, bCols, 2, 1);
  A.fillBuffer(kSentinel);
  B.fillBuffer(kSentinel);
  A.fillRandom(rng);
  B.fillRandom(rng);
  TestMatrix D = TestMatrix::rowMajor(s.dtype, s.M, s.N, 2, 3);
  D.fillBuffer(kSentinel);
  // NaN in D proves beta = 0 never reads it; ACCUMULATE adds to random D.
  bool accumulate = s.epilogue == SLINRT_EPILOGUE_ACCUMULATE;
  if (accumulate)
    D.fillRandom(rng);
  else
    for (int m = 0; m < s.M; ++m)
      for (int n = 0; n < s.N; ++n)
        D.set(m, n, s.epilogue == SLINRT_EPILOGUE_BIAS ? 0 : NAN);
  int biasLength = s.epilogue == SLINRT_EPILOGUE_BIAS ? s.N : s.M;
  TestVector bias(s.dtype, biasLength, 1, 1);
  bias.fillBuffer(kSentinel);
  if (s.epilogue == SLINRT_EPILOGUE_BIAS)
    bias.fillRandom(rng);
  else
    for (int i = 0; i < biasLength; ++i)
      bias.set(i, NAN);

  Reference ref =
      referenceGemm(A, B, s.transA, s.transB, s.M, s.N, s.K, s.epilogue, &bias);
  if (accumulate)
    for (int m = 0; m < s.M; ++m)
      for (int n = 0; n < s.N; ++n) {
        ref.d[size_t(m) * s.N + n] += D.get(m, n);
        ref.dMagnitude[size_t(m) * s.N + n] += std::fabs(D.get(m, n));
      }
  bool withBias = s.epilogue == SLINRT_EPILOGUE_BIAS ||
                  s.epilogue == SLINRT_EPILOGUE_BIAS_GRAD;
  cpuGemm(s.dtype)(ctx, A.ref(), B.ref(), D.ref(),
                   withBias ? bias.ref() : nullptr, s.transA, s.transB,
                   s.epilogue);
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);

  for (int m = 0; m < s.M; ++m)
    for (int n = 0; n < s.N; ++n)
      ASSERT_TRUE(closeEnough(D.get(m, n), ref.d[size_t(m) * s.N + n],
                              ref.dMagnitude[size_t(m) * s.N + n], s.dtype,
                              s.K))
          << "D[" << m << ", " << n << "]";
  if (s.epilogue == SLINRT_EPILOGUE_BIAS_GRAD) {
    for (int m = 0; m < s.M; ++m)
      ASSERT_TRUE(closeEnough(bias.get(m), ref.biasGrad[m],
                              ref.biasGradMagnitude[m], s.dtype, s.K))
          << "bias[" << m << "]";
  }
  EXPECT_EQ(D.changedOutsideView(kSentinel), 0);
  EXPECT_EQ(bias.changedOutsideView(kSentinel), 0);
  EXPECT_EQ(A.changedOutsideView(kSentinel), 0);
  EXPECT_EQ(B.changedOutsideView(kSentinel), 0);
}

using GemmParam = std::tuple<slinrt_dtype, bool, bool, int, bool, bool>;

class CPUGemmTest : public ::testing::TestWithParam<GemmParam> {
protected:
  void SetUp() override { ctx = slinrt_context_create_cpu(); }
  void TearDown() override { slinrt_context_destroy(ctx); }
  slinrt_context *ctx = nullptr;
};

TEST_P(CPUGemmTest, MatchesDoubleReference) {
  auto [dtype, transA, transB, epilogue, colA, colB] = GetParam();
  const int sizes[][3] = {{7, 5, 9}, {33, 17, 65}, {1, 3, 2}, {4, 1, 1}};
  uint64_t seed = 1234;
  for (const auto &mnk : sizes)
    runAndCheck(ctx,
                GemmSetup{dtype, mnk[0], mnk[1], mnk[2], transA, transB,
                          epilogue, colA, colB},
                seed++);
  EXPECT_EQ(slinrt_context_counters(ctx).gemms, 4);
}

std::string paramName(const ::testing::TestParamInfo<GemmParam> &info) {
  auto [dtype, transA, transB, epilogue, colA, colB] = info.param;
  const char *epilogues[] = {"None", "Bias", "BiasGrad", "Accumulate"};
  return std::string(dtypeName(dtype)) + "_" + (transA ? "T" : "N") +
         (transB ? "T" : "N") + "_" + epilogues[epilogue] + "_A" +
         (colA ? "col" : "row") + "_B" + (colB ? "col" : "row");
}

INSTANTIATE_TEST_SUITE_P(
    AllCombinations, CPUGemmTest,
    ::testing::Combine(
        ::testing::Values(SLINRT_F32, SLINRT_F64, SLINRT_BF16, SLINRT_F16),
        ::testing::Bool(), ::testing::Bool(),
        ::testing::Values(int(SLINRT_EPILOGUE_NONE), int(SLINRT_EPILOGUE_BIAS),
                          int(SLINRT_EPILOGUE_BIAS_GRAD),
                          int(SLINRT_EPILOGUE_ACCUMULATE)),
        ::testing::Bool(), ::testing::Bool()),
    paramName);

class CPUGemmEdgeTest : public ::testing::TestWithParam<slinrt_dtype> {
protected:
  void SetUp() override { ctx = slinrt_context_create_cpu(); }
  void TearDown() override { slinrt_context_destroy(ctx); }
  slinrt_context *ctx = nullptr;
};

TEST_P(CPUGemmEdgeTest, EmptyMWritesNothing) {
  slinrt_dtype dtype = GetParam();
  TestMatrix A = TestMatrix::rowMajor(dtype, 0, 4);
  TestMatrix B = TestMatrix::rowMajor(dtype, 4, 3);
  TestMatrix D = TestMatrix::rowMajor(dtype, 0, 3);
  TestVector bias(dtype, 0);
  D.fillBuffer(kSentinel);
  cpuGemm(dtype)(ctx, A.ref(), B.ref(), D.ref(), bias.ref(), 0, 0,
                 SLINRT_EPILOGUE_BIAS_GRAD);
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
  EXPECT_EQ(D.changedOutsideView(kSentinel), 0);
}

TEST_P(CPUGemmEdgeTest, EmptyNStillWritesBiasGradient) {
  slinrt_dtype dtype = GetParam();
  std::mt19937_64 rng(7);
  // op(A) = A^T with A [K=6, M=4]: the wgrad layout.
  TestMatrix A = TestMatrix::rowMajor(dtype, 6, 4, 1, 2);
  A.fillRandom(rng);
  TestMatrix B = TestMatrix::rowMajor(dtype, 6, 0);
  TestMatrix D = TestMatrix::rowMajor(dtype, 4, 0);
  TestVector bias(dtype, 4, 1, 1);
  bias.fillBuffer(kSentinel);
  cpuGemm(dtype)(ctx, A.ref(), B.ref(), D.ref(), bias.ref(), 1, 0,
                 SLINRT_EPILOGUE_BIAS_GRAD);
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
  for (int m = 0; m < 4; ++m) {
    double sum = 0, magnitude = 0;
    for (int k = 0; k < 6; ++k) {
      sum += A.get(k, m);
      magnitude += std::fabs(A.get(k, m));
    }
    EXPECT_TRUE(closeEnough(bias.get(m), sum, magnitude, dtype, 6));
  }
  EXPECT_EQ(bias.changedOutsideView(kSentinel), 0);
}

TEST_P(CPUGemmEdgeTest, EmptyKWritesZerosPlusBias) {
  slinrt_dtype dtype = GetParam();
  std::mt19937_64 rng(8);
  TestMatrix A = TestMatrix::rowMajor(dtype, 3, 0);
  TestMatrix B = TestMatrix::rowMajor(dtype, 0, 5);
  TestMatrix D = TestMatrix::rowMajor(dtype, 3, 5, 1, 1);
  TestVector bias(dtype, 5);
  bias.fillRandom(rng);

  D.fillBuffer(NAN);
  cpuGemm(dtype)(ctx, A.ref(), B.ref(), D.ref(), nullptr, 0, 0,
                 SLINRT_EPILOGUE_NONE);
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 5; ++n)
      EXPECT_EQ(D.get(m, n), 0.0);

  D.fillBuffer(NAN);
  cpuGemm(dtype)(ctx, A.ref(), B.ref(), D.ref(), bias.ref(), 0, 0,
                 SLINRT_EPILOGUE_BIAS);
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 5; ++n)
      EXPECT_EQ(D.get(m, n), bias.get(n));

  TestVector grad(dtype, 3);
  grad.fillBuffer(NAN);
  cpuGemm(dtype)(ctx, A.ref(), B.ref(), D.ref(), grad.ref(), 0, 0,
                 SLINRT_EPILOGUE_BIAS_GRAD);
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
  for (int m = 0; m < 3; ++m)
    EXPECT_EQ(grad.get(m), 0.0);

  // An empty reduction adds nothing: ACCUMULATE leaves D as it is.
  D.fillRandom(rng);
  std::vector<double> before;
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 5; ++n)
      before.push_back(D.get(m, n));
  cpuGemm(dtype)(ctx, A.ref(), B.ref(), D.ref(), nullptr, 0, 0,
                 SLINRT_EPILOGUE_ACCUMULATE);
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 5; ++n)
      EXPECT_EQ(D.get(m, n), before[size_t(m) * 5 + n]);
}

TEST_P(CPUGemmEdgeTest, SizeOneDimensionsTakeAnyStride) {
  slinrt_dtype dtype = GetParam();
  std::mt19937_64 rng(9);
  const int K = 5, N = 3;
  // A [1, K] with inner stride 3: only readable as column-major with ld 3.
  TestMatrix A(dtype, 1, K, 999, 3, 2);
  // B [K, N] row-major; D [1, N] with a meaningless row stride.
  TestMatrix B = TestMatrix::rowMajor(dtype, K, N, 1);
  TestMatrix D(dtype, 1, N, -42, 1, 0);
  A.fillRandom(rng);
  B.fillRandom(rng);
  cpuGemm(dtype)(ctx, A.ref(), B.ref(), D.ref(), nullptr, 0, 0,
                 SLINRT_EPILOGUE_NONE);
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
  Reference ref =
      referenceGemm(A, B, false, false, 1, N, K, SLINRT_EPILOGUE_NONE, nullptr);
  for (int n = 0; n < N; ++n)
    EXPECT_TRUE(
        closeEnough(D.get(0, n), ref.d[n], ref.dMagnitude[n], dtype, K));

  // A column vector [K, 1] with strides [1, 0] and a [1, 1] result.
  TestMatrix column(dtype, K, 1, 1, 0, 0);
  TestMatrix row(dtype, 1, K, 0, 1, 0);
  TestMatrix scalar(dtype, 1, 1, 0, 0, 0);
  column.fillRandom(rng);
  row.fillRandom(rng);
  cpuGemm(dtype)(ctx, row.ref(), column.ref(), scalar.ref(), nullptr, 0, 0,
                 SLINRT_EPILOGUE_NONE);
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
  Reference dot = referenceGemm(row, column, false, false, 1, 1, K,
                                SLINRT_EPILOGUE_NONE, nullptr);
  EXPECT_TRUE(
      closeEnough(scalar.get(0, 0), dot.d[0], dot.dMagnitude[0], dtype, K));
}

TEST_P(CPUGemmEdgeTest, ColumnSliceOfLargerBuffer) {
  // The concat-part case: W_i is rows [8, 8 + 6) of a [20, 16] weight, and
  // x is columns [4, 4 + 16) of a [5, 32] activation.
  slinrt_dtype dtype = GetParam();
  std::mt19937_64 rng(10);
  TestMatrix W(dtype, 6, 16, 16, 1, 8 * 16);
  TestMatrix x(dtype, 5, 16, 32, 1, 4);
  W.fillRandom(rng);
  x.fillRandom(rng);
  TestMatrix y = TestMatrix::rowMajor(dtype, 5, 6, 10, 6);
  TestVector b(dtype, 6, 1, 5);
  b.fillRandom(rng);
  cpuGemm(dtype)(ctx, x.ref(), W.ref(), y.ref(), b.ref(), 0, 1,
                 SLINRT_EPILOGUE_BIAS);
  ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
  Reference ref =
      referenceGemm(x, W, false, true, 5, 6, 16, SLINRT_EPILOGUE_BIAS, &b);
  for (int m = 0; m < 5; ++m)
    for (int n = 0; n < 6; ++n)
      EXPECT_TRUE(closeEnough(y.get(m, n), ref.d[m * 6 + n],
                              ref.dMagnitude[m * 6 + n], dtype, 16));
}

INSTANTIATE_TEST_SUITE_P(
    AllDtypes, CPUGemmEdgeTest,
    ::testing::Values(SLINRT_F32, SLINRT_F64, SLINRT_BF16, SLINRT_F16),
    [](const ::testing::TestParamInfo<slinrt_dtype> &info) {
      return std::string(dtypeName(info.param));
    });

TEST(CPUGemm, NullContextUsesDefaultContext) {
  slinrt_context *def = slinrt_default_context();
  slinrt_context_clear_error(def);
  int64_t before = slinrt_context_counters(def).gemms;
  std::mt19937_64 rng(11);
  TestMatrix A = TestMatrix::rowMajor(SLINRT_F32, 2, 3);
  TestMatrix B = TestMatrix::rowMajor(SLINRT_F32, 3, 2);
  TestMatrix D = TestMatrix::rowMajor(SLINRT_F32, 2, 2);
  A.fillRandom(rng);
  B.fillRandom(rng);
  _mlir_ciface_slinrt_cpu_gemm_f32(nullptr, A.ref(), B.ref(), D.ref(), nullptr,
                                   0, 0, SLINRT_EPILOGUE_NONE);
  ASSERT_EQ(slinrt_context_status(nullptr), SLINRT_OK)
      << slinrt_context_error(nullptr);
  EXPECT_EQ(slinrt_context_counters(def).gemms, before + 1);
  Reference ref =
      referenceGemm(A, B, false, false, 2, 2, 3, SLINRT_EPILOGUE_NONE, nullptr);
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(closeEnough(D.get(i / 2, i % 2), ref.d[i], ref.dMagnitude[i],
                            SLINRT_F32, 3));
}

/// A CPU GEMM hook computing in double, counting its calls (and failing when
/// told to), for the hook tests below.
struct HookState {
  int calls = 0;
  bool fail = false;
};
int countingGemm(void *user, slinrt_dtype dtype, int transA, int transB,
                 int64_t M, int64_t N, int64_t K, const void *A, int64_t lda,
                 const void *B, int64_t ldb, double beta, void *D,
                 int64_t ldd) {
  auto *state = static_cast<HookState *>(user);
  ++state->calls;
  if (state->fail || dtype != SLINRT_F32)
    return 1;
  auto *a = static_cast<const float *>(A);
  auto *b = static_cast<const float *>(B);
  auto *d = static_cast<float *>(D);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double sum = beta * d[m * ldd + n];
      for (int64_t k = 0; k < K; ++k)
        sum += double(transA ? a[k * lda + m] : a[m * lda + k]) *
               double(transB ? b[n * ldb + k] : b[k * ldb + n]);
      d[m * ldd + n] = float(sum);
    }
  return 0;
}

TEST(CPUGemm, HookRunsTheGemmsWithTheirEpilogues) {
  ContextHolder ctx(slinrt_context_create_cpu());
  HookState state;
  slinrt_context_set_cpu_gemm(ctx, countingGemm, &state);
  std::mt19937_64 rng(12);
  // bf16 goes through float32 temporaries: the hook sees float32 too.
  for (slinrt_dtype dtype : {SLINRT_F32, SLINRT_BF16}) {
    TestMatrix x = TestMatrix::rowMajor(dtype, 5, 7);
    TestMatrix W = TestMatrix::rowMajor(dtype, 6, 7);
    TestMatrix y = TestMatrix::rowMajor(dtype, 5, 6);
    TestVector b(dtype, 6, 1, 0);
    x.fillRandom(rng);
    W.fillRandom(rng);
    b.fillRandom(rng);
    int before = state.calls;
    cpuGemm(dtype)(ctx, x.ref(), W.ref(), y.ref(), b.ref(), 0, 1,
                   SLINRT_EPILOGUE_BIAS);
    ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK)
        << slinrt_context_error(ctx);
    EXPECT_EQ(state.calls, before + 1);
    Reference ref =
        referenceGemm(x, W, false, true, 5, 6, 7, SLINRT_EPILOGUE_BIAS, &b);
    for (int m = 0; m < 5; ++m)
      for (int n = 0; n < 6; ++n)
        EXPECT_TRUE(closeEnough(y.get(m, n), ref.d[m * 6 + n],
                                ref.dMagnitude[m * 6 + n], dtype, 7));
  }
  // A failing hook is an error of the context, not a crash or a silent result.
  state.fail = true;
  TestMatrix A = TestMatrix::rowMajor(SLINRT_F32, 2, 3);
  TestMatrix B = TestMatrix::rowMajor(SLINRT_F32, 3, 2);
  TestMatrix D = TestMatrix::rowMajor(SLINRT_F32, 2, 2);
  _mlir_ciface_slinrt_cpu_gemm_f32(ctx, A.ref(), B.ref(), D.ref(), nullptr, 0,
                                   0, SLINRT_EPILOGUE_NONE);
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(slinrt_context_error(ctx)).find("CPU GEMM hook"),
            std::string::npos);
  // NULL restores the runtime's own BLAS.
  slinrt_context_clear_error(ctx);
  slinrt_context_set_cpu_gemm(ctx, nullptr, nullptr);
  int calls = state.calls;
  _mlir_ciface_slinrt_cpu_gemm_f32(ctx, A.ref(), B.ref(), D.ref(), nullptr, 0,
                                   0, SLINRT_EPILOGUE_NONE);
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK);
  EXPECT_EQ(state.calls, calls);
}

TEST(CPUGemm, ContextsWorkFromSeveralThreads) {
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &failures] {
      ContextHolder ctx(slinrt_context_create_cpu());
      std::mt19937_64 rng(100 + t);
      for (int iteration = 0; iteration < 10; ++iteration) {
        TestMatrix A = TestMatrix::rowMajor(SLINRT_F32, 9, 13);
        TestMatrix B = TestMatrix::colMajor(SLINRT_F32, 13, 6);
        TestMatrix D = TestMatrix::rowMajor(SLINRT_F32, 9, 6);
        A.fillRandom(rng);
        B.fillRandom(rng);
        _mlir_ciface_slinrt_cpu_gemm_f32(ctx, A.ref(), B.ref(), D.ref(),
                                         nullptr, 0, 0, SLINRT_EPILOGUE_NONE);
        Reference ref = referenceGemm(A, B, false, false, 9, 6, 13,
                                      SLINRT_EPILOGUE_NONE, nullptr);
        for (int i = 0; i < 9 * 6; ++i)
          if (!closeEnough(D.get(i / 6, i % 6), ref.d[i], ref.dMagnitude[i],
                           SLINRT_F32, 13))
            ++failures[t];
      }
      if (slinrt_context_status(ctx) != SLINRT_OK ||
          slinrt_context_counters(ctx).gemms != 10)
        ++failures[t];
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ(failures[t], 0) << "thread " << t;
}

} // namespace

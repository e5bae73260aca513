//===- KernelCompilerTest.cpp - the C++ kernel compiler ---------*- C++ -*-===//
//
// Tests splitlinear/JIT/KernelCompiler.h directly, without the C API:
// compileKernel turns a spec into a kernel whose result on the CPU target
// equals a reference GEMM on random data (small integers, so that every sum
// is exact in f32) for all three paths, and every failing step returns its
// reason as text.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Dialect/Slin/IR/SlinOps.h"
#include "splitlinear/JIT/KernelCompiler.h"
#include "splitlinear/Runtime/Runtime.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using namespace mlir;
using namespace splitlinear;

namespace {

/// An FPROP spec over f32 with `parts` weight parts and their bias parts.
KernelSpec fpropSpec(int64_t parts) {
  KernelSpec spec;
  spec.kind = KernelKind::Fprop;
  spec.dtype = SLINRT_F32;
  spec.weightPartDtypes.assign(parts, SLINRT_F32);
  spec.hasBias = true;
  spec.biasPartDtypes.assign(parts, SLINRT_F32);
  spec.target = slin::RuntimeTarget::cpu;
  return spec;
}

/// Random operands of `y[M, N] = x[M, K] · concat(w_0, w_1, w_2)ᵀ +
/// concat(b_0, b_1, b_2)` with the parts in one buffer, in order (adjacent)
/// or in reverse order (not adjacent), and the reference result.
struct FpropCase {
  static constexpr int64_t M = 7, K = 13;
  static constexpr int64_t rows[3] = {5, 3, 8};
  static constexpr int64_t N = 5 + 3 + 8;
  std::vector<float> x, w, b, y, expected;
  int64_t wOffset[3], bOffset[3];

  FpropCase(unsigned seed, bool reversed)
      : x(M * K), w(N * K), b(N), y(M * N, -1.0f), expected(M * N) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> value(-4, 4);
    for (float &v : x)
      v = float(value(gen));
    for (float &v : w)
      v = float(value(gen));
    for (float &v : b)
      v = float(value(gen));
    int64_t row = 0;
    for (int p = 0; p < 3; ++p) {
      int q = reversed ? 2 - p : p;
      wOffset[q] = row * K;
      bOffset[q] = row;
      row += rows[q];
    }
    // The reference: y[m, n] over the parts in their logical order.
    for (int64_t m = 0; m < M; ++m) {
      int64_t n = 0;
      for (int p = 0; p < 3; ++p)
        for (int64_t r = 0; r < rows[p]; ++r, ++n) {
          double sum = b[bOffset[p] + r];
          for (int64_t k = 0; k < K; ++k)
            sum += double(x[m * K + k]) * w[wOffset[p] + r * K + k];
          expected[m * N + n] = float(sum);
        }
    }
  }

  /// Calls `entry` with `ctx`; returns the slin::Path it took.
  int32_t run(void (*entry)(void **), slinrt_context *ctx) {
    slinrt_memref2d dx = {x.data(), x.data(), 0, {M, K}, {K, 1}};
    slinrt_memref2d dy = {y.data(), y.data(), 0, {M, N}, {N, 1}};
    slinrt_memref2d dw[3];
    slinrt_memref1d db[3];
    for (int p = 0; p < 3; ++p) {
      dw[p] = {w.data(), w.data(), wOffset[p], {rows[p], K}, {K, 1}};
      db[p] = {b.data(), b.data(), bOffset[p], {rows[p]}, {1}};
    }
    void *ptrs[] = {&dx, &dw[0], &dw[1], &dw[2], &db[0], &db[1], &db[2], &dy};
    int32_t path = -1;
    void *args[2 + std::size(ptrs)] = {&ctx};
    for (size_t i = 0; i < std::size(ptrs); ++i)
      args[i + 1] = &ptrs[i];
    args[1 + std::size(ptrs)] = &path;
    entry(args);
    return path;
  }
};

/// A kernel compiled through compileKernel computes the reference GEMM on
/// every path: a view of adjacent parts, a copy, and one GEMM per part.
TEST(KernelCompilerTest, CompiledKernelMatchesReferenceGemm) {
  std::string error;
  FailureOr<CompiledKernel> kernel = compileKernel(fpropSpec(3), error);
  ASSERT_TRUE(succeeded(kernel)) << error;
  ASSERT_NE(kernel->engine, nullptr);
  ASSERT_NE(kernel->entry, nullptr);
  struct {
    bool reversed;
    int64_t perPartMaxRows;
    int32_t path;
  } cases[] = {{false, -1, static_cast<int32_t>(slin::Path::view)},
               {true, 0, static_cast<int32_t>(slin::Path::copy)},
               {true, 1 << 20, static_cast<int32_t>(slin::Path::per_part)}};
  unsigned seed = 1;
  for (const auto &c : cases) {
    slinrt_context *ctx = slinrt_context_create_cpu();
    ASSERT_NE(ctx, nullptr);
    slinrt_context_set_per_part_max_rows(ctx, c.perPartMaxRows);
    FpropCase data(seed++, c.reversed);
    EXPECT_EQ(data.run(kernel->entry, ctx), c.path);
    EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK)
        << slinrt_context_error(ctx);
    EXPECT_EQ(data.y, data.expected) << "path " << c.path;
    slinrt_context_destroy(ctx);
  }
}

/// An invalid spec fails before any IR is built, naming the problem.
TEST(KernelCompilerTest, InvalidSpecFailsWithItsReason) {
  std::string error;
  EXPECT_TRUE(failed(compileKernel(fpropSpec(0), error)));
  EXPECT_NE(error.find("a kernel needs at least one weight part, got 0"),
            std::string::npos)
      << error;
  // Each case breaks one rule of the spec; buildKernel names it.
  struct {
    void (*breakSpec)(KernelSpec &);
    const char *reason;
  } cases[] = {
      {[](KernelSpec &s) { s.viewAlignmentBytes = 12; },
       "alignment must be a positive power of two, got 12"},
      {[](KernelSpec &s) { s.biasPartDtypes.pop_back(); },
       "1 bias part dtypes given, expected 2"},
      {[](KernelSpec &s) {
         s.kind = KernelKind::Wgrad;
         s.biasPartDtypes.clear();
       },
       "a wgrad kernel takes no weight parts, got 2"},
      {[](KernelSpec &s) {
         s.kind = KernelKind::Dgrad;
         s.biasPartDtypes.clear();
       },
       "a dgrad kernel has no bias"},
  };
  for (const auto &c : cases) {
    KernelSpec spec = fpropSpec(2);
    c.breakSpec(spec);
    error.clear();
    EXPECT_TRUE(failed(buildKernel(spec, error))) << c.reason;
    EXPECT_NE(error.find(c.reason), std::string::npos) << error;
  }
}

/// With a dump directory, compileKernel writes the kernel IR (after the
/// pipeline that repeats the compile) and the IR after every pass.
TEST(KernelCompilerTest, DumpDirectoryReceivesKernelAndPassIR) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("slin-jit-dump", dir));
  KernelSpec spec = fpropSpec(2);
  spec.dumpDir = dir.str().str();
  std::string error;
  ASSERT_TRUE(succeeded(compileKernel(spec, error))) << error;
  std::string input, passes;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    auto buffer = llvm::MemoryBuffer::getFile(it->path());
    ASSERT_TRUE(bool(buffer)) << it->path();
    (llvm::StringRef(it->path()).ends_with(".passes.mlir") ? passes : input) =
        (*buffer)->getBuffer().str();
    llvm::sys::fs::remove(it->path());
  }
  llvm::sys::fs::remove(dir);
  EXPECT_TRUE(llvm::StringRef(input).starts_with(
      "// builtin.module(splitlinear-pipeline{"))
      << input;
  EXPECT_NE(input.find("slin.linear"), std::string::npos) << input;
  EXPECT_NE(passes.find("IR Dump After"), std::string::npos) << passes;
  EXPECT_NE(passes.find("llvm.func @_mlir_ciface_slin_kernel"),
            std::string::npos);
}

/// parseModule and runPipeline report what went wrong as text.
TEST(KernelCompilerTest, ParseAndPipelineFailuresCarryDiagnostics) {
  std::string diagnostics;
  EXPECT_TRUE(failed(parseModule("func.func @f() { slin.bogus }", diagnostics)));
  EXPECT_NE(diagnostics.find("slin.bogus"), std::string::npos) << diagnostics;
  FailureOr<OwnedModule> ok =
      parseModule("func.func @f() { return }", diagnostics);
  ASSERT_TRUE(succeeded(ok)) << diagnostics;
  diagnostics.clear();
  EXPECT_TRUE(failed(runPipeline(*ok->module, "no-such-pass", diagnostics)));
  EXPECT_NE(diagnostics.find("invalid pass pipeline "
                             "'builtin.module(no-such-pass)'"),
            std::string::npos)
      << diagnostics;
  EXPECT_TRUE(succeeded(runPipeline(
      *ok->module, "builtin.module(convert-to-llvm)", diagnostics)))
      << diagnostics;
}

} // namespace

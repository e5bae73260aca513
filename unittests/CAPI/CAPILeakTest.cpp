//===- CAPILeakTest.cpp - compile/JIT cycles do not leak --------*- C++ -*-===//
//
// Runs many complete kernel life cycles through the C API and checks that
// the process does not grow: every cycle builds the kernel IR, runs
// splitlinear-pipeline, JIT-compiles it (slinKernelCompile), calls the
// kernel once and destroys the engine (slinEngineDestroy). The second test
// does the same through the lower-level entry points (slinModuleParse →
// slinModuleRunPipeline → slinEngineCreate → slinEngineInvokePacked →
// destroy). A leak of a context, a module, a JIT dylib or a runtime buffer
// per cycle costs tens of KB to MBs and shows up as RSS growth between the
// end of the warm-up (allocator pools, LLVM's one-time initialization) and
// the last cycle. Smaller leaks are the job of LeakSanitizer, which
// scripts/sanitize.sh runs over this test. Under AddressSanitizer RSS says
// little (freed memory waits in ASan's quarantine, 256 MB by default), so an
// ASan build measures the bytes of live heap allocations instead
// (__sanitizer_get_current_allocated_bytes), which is stricter for heap
// leaks; JIT code pages are mmap'ed, not heap, and are covered by the RSS
// check of the normal build.
//
// Environment: SLIN_LEAK_CYCLES (default 1000; scripts/sanitize.sh
// --leak-cycles 10000 raises it), SLIN_LEAK_WARMUP (default 200),
// SLIN_LEAK_RSS_BOUND_MB (default 8).
//
//===----------------------------------------------------------------------===//

#include "splitlinear-c/SplitLinear.h"
#include "splitlinear/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <malloc.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define SLIN_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLIN_TEST_ASAN 1
#endif
#endif

#ifdef SLIN_TEST_ASAN
// From <sanitizer/allocator_interface.h>, which GCC does not install.
extern "C" size_t __sanitizer_get_current_allocated_bytes(void);
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

/// An integer from the environment, or `fallback`.
long envLong(const char *name, long fallback) {
  const char *value = std::getenv(name);
  return value && *value ? std::strtol(value, nullptr, 10) : fallback;
}

#ifdef SLIN_TEST_ASAN
constexpr const char *kMeasure = "live heap (ASan)";
/// Bytes in live heap allocations.
long usedBytes() { return long(__sanitizer_get_current_allocated_bytes()); }
#else
constexpr const char *kMeasure = "RSS";
/// Resident set size of this process in bytes (after returning free heap
/// pages to the system, so that only memory still in use counts).
long usedBytes() {
  malloc_trim(0);
  long pages = 0, resident = 0;
  FILE *statm = std::fopen("/proc/self/statm", "r");
  if (!statm)
    return -1;
  if (std::fscanf(statm, "%ld %ld", &pages, &resident) != 2)
    resident = -1;
  std::fclose(statm);
  return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}
#endif

/// Number of cycles, warm-up cycles and the allowed RSS growth.
struct CycleConfig {
  long cycles = envLong("SLIN_LEAK_CYCLES", 1000);
  long warmup = envLong("SLIN_LEAK_WARMUP", 200);
  long boundBytes = envLong("SLIN_LEAK_RSS_BOUND_MB", 8) << 20;
};

/// Samples the memory in use (usedBytes) at the end of the warm-up and at
/// the end, and reports both.
class MemoryTracker {
public:
  explicit MemoryTracker(const CycleConfig &config) : config(config) {}

  /// Call after each cycle `i` (0-based).
  void afterCycle(long i) {
    if (i + 1 == config.warmup)
      warm = usedBytes();
    if (i + 1 == config.cycles)
      last = usedBytes();
  }

  void check(const char *what) const {
    if (config.cycles <= config.warmup) {
      std::printf("%s: %ld cycles, not more than the %ld warm-up cycles: %s "
                  "not checked\n",
                  what, config.cycles, config.warmup, kMeasure);
      return;
    }
    ASSERT_GT(warm, 0) << "cannot measure " << kMeasure;
    long growth = last - warm;
    std::printf("%s: %s %.1f MB after %ld warm-up cycles, %.1f MB after %ld "
                "cycles (growth %.2f MB, %.0f bytes/cycle, bound %ld MB)\n",
                what, kMeasure, warm / 1048576.0, config.warmup,
                last / 1048576.0, config.cycles, growth / 1048576.0,
                double(growth) / double(config.cycles - config.warmup),
                config.boundBytes >> 20);
    EXPECT_LT(growth, config.boundBytes)
        << what << ": " << kMeasure << " grew by " << growth << " bytes over "
        << config.cycles - config.warmup << " cycles";
  }

private:
  CycleConfig config;
  long warm = 0, last = 0;
};

/// Operands of `y[M, N] = x[M, K] · concat(w0, w1)ᵀ + concat(b0, b1)` with
/// small integers (exact in f32), the parts in one buffer, either back to
/// back (the zero-copy view) or reversed (the copy fallback).
struct FpropData {
  static constexpr int64_t M = 3, K = 4, N0 = 4, N1 = 2, N = N0 + N1;
  float x[M * K], w[N * K], b[N], y[M * N];
  slinrt_memref2d dx, dw0, dw1, dy;
  slinrt_memref1d db0, db1;

  explicit FpropData(bool reversed) {
    for (int i = 0; i < M * K; ++i)
      x[i] = float((i * 7) % 5 - 2);
    for (int i = 0; i < N * K; ++i)
      w[i] = float((i * 3) % 7 - 3);
    for (int i = 0; i < N; ++i)
      b[i] = float(i % 4);
    // w0 rows then w1 rows, or w1 first (not adjacent in the parts' order).
    int64_t w0 = reversed ? N1 * K : 0, w1 = reversed ? 0 : N0 * K;
    int64_t b0 = reversed ? N1 : 0, b1 = reversed ? 0 : N0;
    dx = {x, x, 0, {M, K}, {K, 1}};
    dw0 = {w, w, w0, {N0, K}, {K, 1}};
    dw1 = {w, w, w1, {N1, K}, {K, 1}};
    db0 = {b, b, b0, {N0}, {1}};
    db1 = {b, b, b1, {N1}, {1}};
    dy = {y, y, 0, {M, N}, {N, 1}};
  }

  /// Calls the packed kernel with `ctx` and returns the max abs error
  /// against a plain loop.
  double run(void (*entry)(void **), slinrt_context *ctx) {
    std::memset(y, 0, sizeof(y));
    void *ptrs[] = {&dx, &dw0, &dw1, &db0, &db1, &dy};
    int32_t path = -1; // the kernel's SlinKernelPath
    void *args[2 + std::size(ptrs)] = {&ctx};
    for (size_t i = 0; i < std::size(ptrs); ++i)
      args[i + 1] = &ptrs[i];
    args[1 + std::size(ptrs)] = &path;
    entry(args);
    double maxError = 0;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        bool first = n < N0;
        const float *row =
            w + (first ? dw0.offset + n * K : dw1.offset + (n - N0) * K);
        double ref = first ? b[db0.offset + n] : b[db1.offset + n - N0];
        for (int64_t k = 0; k < K; ++k)
          ref += double(x[m * K + k]) * row[k];
        maxError = std::max(maxError, std::abs(ref - y[m * N + n]));
      }
    return maxError;
  }
};

SlinKernelSpec fpropSpec() {
  SlinKernelSpec spec{};
  spec.kind = SLIN_KERNEL_FPROP;
  spec.dtype = SLINRT_F32;
  spec.num_parts = 2;
  spec.has_bias = 1;
  spec.target = SLIN_TARGET_CPU;
  spec.alignment = 16;
  return spec;
}

/// slinKernelCompile → call → slinEngineDestroy, many times. Odd cycles use
/// reversed parts, so the run-time check fails and the copy path allocates
/// and frees a runtime buffer.
TEST(CAPILeakTest, KernelCompileCyclesKeepMemoryFlat) {
  CycleConfig config;
  MemoryTracker rss(config);
  SlinKernelSpec spec = fpropSpec();
  slinrt_context *ctx = slinrt_context_create_cpu();
  ASSERT_NE(ctx, nullptr);
  // Parts that are not adjacent are copied (no per-part GEMMs), so that the
  // runtime buffer is allocated and freed.
  slinrt_context_set_per_part_max_rows(ctx, 0);
  for (long i = 0; i < config.cycles; ++i) {
    void (*entry)(void **) = nullptr;
    char *error = nullptr;
    SlinEngine engine = slinKernelCompile(&spec, &entry, &error);
    ASSERT_NE(engine, nullptr) << "cycle " << i << ": " << error;
    FpropData data(/*reversed=*/i % 2 == 1);
    double maxError = data.run(entry, ctx);
    ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK)
        << slinrt_context_error(ctx);
    ASSERT_EQ(maxError, 0.0) << "cycle " << i;
    slinEngineDestroy(engine);
    rss.afterCycle(i);
  }
  slinrt_counters counters = slinrt_context_counters(ctx);
  // Reversed cycles copy both the weight and the bias parts (2 + 2 copies).
  EXPECT_EQ(counters.copies, 4 * (config.cycles / 2));
  slinrt_context_destroy(ctx);
  rss.check("slinKernelCompile cycles");
}

/// slinModuleParse → slinModuleRunPipeline → slinEngineCreate →
/// slinEngineInvokePacked → destroy, on the text of the same kernel.
TEST(CAPILeakTest, ParsePipelineJITCyclesKeepMemoryFlat) {
  CycleConfig config;
  // Half the cycles: this path repeats most of the first test's work.
  config.cycles =
      std::max(config.cycles / 2, std::min(config.cycles, config.warmup + 1));
  MemoryTracker rss(config);
  SlinKernelSpec spec = fpropSpec();
  char *error = nullptr;
  char *ir = slinKernelBuildIR(&spec, &error);
  ASSERT_NE(ir, nullptr) << error;
  std::string text(ir);
  slinStringFree(ir);
  slinrt_context *ctx = slinrt_context_create_cpu();
  ASSERT_NE(ctx, nullptr);
  for (long i = 0; i < config.cycles; ++i) {
    SlinModule module = slinModuleParse(text.data(), text.size(), &error);
    ASSERT_NE(module, nullptr) << error;
    ASSERT_EQ(slinModuleRunPipeline(module, "splitlinear-pipeline{target=cpu}",
                                    &error),
              0)
        << error;
    SlinEngine engine = slinEngineCreate(module, /*optLevel=*/0, &error);
    ASSERT_NE(engine, nullptr) << error;
    slinModuleDestroy(module);
    FpropData data(/*reversed=*/i % 2 == 0);
    void (*entry)(void **) =
        slinEngineLookupPacked(engine, "_mlir_ciface_slin_kernel");
    ASSERT_NE(entry, nullptr);
    ASSERT_EQ(data.run(entry, ctx), 0.0) << "cycle " << i;
    ASSERT_EQ(slinrt_context_status(ctx), SLINRT_OK)
        << slinrt_context_error(ctx);
    slinEngineDestroy(engine);
    rss.afterCycle(i);
  }
  slinrt_context_destroy(ctx);
  rss.check("parse/pipeline/JIT cycles");
}

/// Failing calls return their diagnostics as a heap string and must not
/// leak the context or module they built before failing.
TEST(CAPILeakTest, FailuresKeepMemoryFlat) {
  CycleConfig config;
  MemoryTracker rss(config);
  const std::string badIR = "func.func @f() { slin.bogus }";
  const std::string okIR = "func.func @f() { return }";
  for (long i = 0; i < config.cycles; ++i) {
    char *error = nullptr;
    EXPECT_EQ(slinModuleParse(badIR.data(), badIR.size(), &error), nullptr);
    ASSERT_NE(error, nullptr);
    slinStringFree(error);
    error = nullptr;
    SlinModule module = slinModuleParse(okIR.data(), okIR.size(), &error);
    ASSERT_NE(module, nullptr) << error;
    EXPECT_NE(slinModuleRunPipeline(module, "no-such-pass", &error), 0);
    slinStringFree(error);
    slinModuleDestroy(module);
    SlinKernelSpec bad = fpropSpec();
    bad.num_parts = 0;
    void (*entry)(void **) = nullptr;
    error = nullptr;
    EXPECT_EQ(slinKernelCompile(&bad, &entry, &error), nullptr);
    slinStringFree(error);
    rss.afterCycle(i);
  }
  rss.check("failing calls");
}

} // namespace

/// The C spec's enum fields are plain integers, checked before they become
/// C++ enums: an out-of-range SCALED_FPROP scaling or input dtype is an
/// error naming it (the C++ KernelSpec cannot hold such a value).
TEST(CAPILeakTest, ScaledSpecRejectsOutOfRangeEnums) {
  int32_t parts[2] = {SLINRT_F8E4M3FN, SLINRT_F8E4M3FN};
  SlinKernelSpec spec{};
  spec.kind = SLIN_KERNEL_SCALED_FPROP;
  spec.dtype = SLINRT_BF16;
  spec.num_parts = 2;
  spec.part_dtypes = parts;
  spec.target = SLIN_TARGET_CPU;
  spec.alignment = 16;
  spec.input_dtype = SLINRT_F8E4M3FN;
  spec.scaling = SLINRT_SCALING_OUTER_VECTOR;
  char *error = nullptr;
  char *ir = slinKernelBuildIR(&spec, &error);
  ASSERT_NE(ir, nullptr) << error;
  slinStringFree(ir);
  spec.scaling = 7;
  EXPECT_EQ(slinKernelBuildIR(&spec, &error), nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("invalid scaling 7"), std::string::npos)
      << error;
  slinStringFree(error);
  spec.scaling = SLINRT_SCALING_OUTER_VECTOR;
  spec.input_dtype = 42;
  error = nullptr;
  EXPECT_EQ(slinKernelBuildIR(&spec, &error), nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("invalid input dtype 42"),
            std::string::npos)
      << error;
  slinStringFree(error);
}

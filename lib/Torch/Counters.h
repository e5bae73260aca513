//===- Counters.h - counters of the op library ------------------*- C++ -*-===//
//
// The op library's monotonic counters (paths taken, compiles, cache hits and
// evictions) and the `runtime_counters` / `reset_runtime_counters` ops that
// report and zero them.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_TORCH_COUNTERS_H
#define SPLITLINEAR_LIB_TORCH_COUNTERS_H

#include <ATen/core/Dict.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace splitlinear {

/// How the calls of one op combined the weight parts: in place (a view),
/// copied (a cat), or one GEMM per part.
struct PathCounters {
  std::atomic<int64_t> views{0}, cats{0}, perPartGemms{0};
};

/// Counters of the op library (monotonic until reset).
struct OpCounters {
  /// `scaled`: the FP8 GEMMs of scaled_linear (fp8_linear's forward, dgrad
  /// and wgrad among them).
  PathCounters fprop, dgrad, scaled;
  std::atomic<int64_t> compiles{0}, cacheHits{0}, evictions{0};
};

/// The process's counters. Thread-safe (atomics).
OpCounters &counters();

/// The op library's counters by name, plus the kernel cache's size (the
/// `runtime_counters` op).
c10::Dict<std::string, int64_t> runtimeCounters();

/// Zeroes the counters of runtimeCounters; the cache is kept (the
/// `reset_runtime_counters` op).
void resetRuntimeCounters();

} // namespace splitlinear

#endif // SPLITLINEAR_LIB_TORCH_COUNTERS_H

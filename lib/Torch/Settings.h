//===- Settings.h - settings of the op library ------------------*- C++ -*-===//
//
// Process-wide settings of the op library read from the environment or set
// through ops: the per-part threshold of set_per_part_max_rows, the kernel
// cache's capacity and the directory kernels are dumped to.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_TORCH_SETTINGS_H
#define SPLITLINEAR_LIB_TORCH_SETTINGS_H

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace splitlinear {

/// The "automatic choice" value of perPartMaxRows.
constexpr int64_t kAutoPerPartMaxRows = -1;

/// The per-part threshold the op sets on the runtime context before each
/// fprop/dgrad call (see Settings.cpp).
std::atomic<int64_t> &perPartMaxRows();

/// Sets perPartMaxRows (>= 0, or -1: automatic) for calls that start after
/// this one, in every thread; returns the previous value. Raises c10::Error
/// for anything below -1. (The `set_per_part_max_rows` op.)
int64_t setPerPartMaxRows(int64_t rows);

/// The kernel cache's capacity: 256 kernels, or SPLITLINEAR_KERNEL_CACHE_SIZE
/// (read once; raises c10::Error unless it is a positive integer).
size_t kernelCacheCapacity();

/// SPLITLINEAR_DUMP_DIR, the directory every compiled kernel's IR is dumped
/// to (read at each compile), or null when it is unset or empty.
const char *kernelDumpDirFromEnv();

/// The integer in environment variable `name`, or `fallback` when it is
/// unset or empty. Raises c10::Error ("<name> must be <expected>, got '...'")
/// unless the value is all digits and at least `min`.
int64_t integerFromEnv(const char *name, int64_t fallback, int64_t min,
                       const char *expected);

} // namespace splitlinear

#endif // SPLITLINEAR_LIB_TORCH_SETTINGS_H

//===- Settings.cpp - settings of the op library ----------------*- C++ -*-===//
//
// Implements the op library's settings (Settings.h).
//
//===----------------------------------------------------------------------===//

#include "Settings.h"

#include <c10/util/Exception.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string>

using namespace splitlinear;

/// When the weight parts are not adjacent, the kernel either runs one GEMM
/// per part into column blocks of the output, or copies the parts into one
/// buffer and runs one GEMM; it asks the runtime context which, on every call
/// (slinrt_prefer_per_part, lib/Runtime/Strategy.cpp, holds the cost model).
/// This is what the op sets on the context before each call:
/// SPLITLINEAR_PER_PART_MAX_ROWS (read once, at the first call) or
/// set_per_part_max_rows (>= 0: one GEMM per part for inputs of at most that
/// many rows; 0 turns the per-part path off), or -1, the default, for the
/// runtime's automatic choice. It applies to fprop (rows of the input) and
/// dgrad (rows of dy), and changes no kernel.
std::atomic<int64_t> &splitlinear::perPartMaxRows() {
  static std::atomic<int64_t> value{[] {
    const char *name = "SPLITLINEAR_PER_PART_MAX_ROWS";
    const char *env = std::getenv(name);
    if (env && std::string(env) == "auto")
      return kAutoPerPartMaxRows;
    return integerFromEnv(name, kAutoPerPartMaxRows, 0,
                                       "'auto' or an integer >= 0");
  }()};
  return value;
}


int64_t splitlinear::setPerPartMaxRows(int64_t rows) {
  TORCH_CHECK(rows >= kAutoPerPartMaxRows,
              "splitlinear.set_per_part_max_rows: rows must be >= 0, or -1 "
              "for the automatic choice, got ", rows);
  return perPartMaxRows().exchange(rows);
}


/// A kernel is one JIT-compiled module (about 0.2 s to compile) per
/// KernelKey: kind, dtypes, number of parts, bias and target, so real models
/// need a few dozen.
size_t splitlinear::kernelCacheCapacity() {
  static const size_t value = static_cast<size_t>(integerFromEnv(
      "SPLITLINEAR_KERNEL_CACHE_SIZE", 256, 1, "a positive integer"));
  return value;
}

const char *splitlinear::kernelDumpDirFromEnv() {
  const char *dir = std::getenv("SPLITLINEAR_DUMP_DIR");
  return dir && *dir ? dir : nullptr;
}

int64_t splitlinear::integerFromEnv(const char *name, int64_t fallback, int64_t min,
                       const char *expected) {
  const char *env = std::getenv(name);
  if (!env || !*env)
    return fallback;
  char *end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(env, &end, 10);
  // Digits only: strtoll would also take leading blanks and a sign.
  TORCH_CHECK(std::isdigit(static_cast<unsigned char>(env[0])) && errno == 0 &&
                  *end == '\0' && parsed >= min,
              "splitlinear: ", name, " must be ", expected, ", got '", env,
              "'");
  return static_cast<int64_t>(parsed);
}

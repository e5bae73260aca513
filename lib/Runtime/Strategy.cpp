//===- Strategy.cpp - one GEMM per part or a copy of the parts --*- C++ -*-===//
//
// The one place that decides how a kernel combines weight parts that are not
// adjacent: one GEMM per part into column blocks of the output (dgrad:
// accumulating into dx), or a copy of the parts into one buffer and one GEMM.
// Lowered IR asks through `slinrt_prefer_per_part` (`slin.prefer_per_part`,
// the `auto` strategy of `slin.linear` / `slin.linear_dgrad`) on every call,
// where the part count, their bytes and the rows are known.
//
//===----------------------------------------------------------------------===//

#include "RuntimeImpl.h"

using namespace slinrt;

namespace {

/// The CPU's fixed threshold: one GEMM per part for at most this many rows
/// (not measured; the copy is cheap next to a CPU GEMM at larger M).
constexpr int64_t kCPUPerPartMaxRows = 64;

/// The CUDA cost model, fitted on an H200 (bf16, M = 1..8192;
/// bench/tools/per_part_threshold.py): one GEMM per part beat the copy at
/// every M for 2-3 parts of 3.6-400 MB (1.04x at M = 8192 up to 5.4x at
/// decode) and lost at every M for 8-16 parts of 0.25-1 MB (0.67-0.93x).
/// Per part pays a cuBLASLt launch (~9.5 us of host time) per extra part;
/// the copy pays a copy kernel (~4.6 us) per part plus moving the weights
/// twice (read + write) at ~1.6 TB/s. It does not depend on M
/// (docs/Design.md, Measured decisions: per-part GEMMs or one copy).
bool cudaPrefersPerPart(int64_t parts, int64_t bytes) {
  constexpr double kGemmLaunchUs = 9.5, kCopyLaunchUs = 4.6,
                   kCopyBytesPerUs = 1.6e6;
  double n = static_cast<double>(parts);
  double perPartUs = (n - 1) * kGemmLaunchUs;
  double copyUs =
      n * kCopyLaunchUs + 2 * static_cast<double>(bytes) / kCopyBytesPerUs;
  return perPartUs <= copyUs;
}

} // namespace

void slinrt_context_set_per_part_max_rows(slinrt_context *ctx, int64_t rows) {
  guardedCall(
      ctx, "slinrt_context_set_per_part_max_rows",
      [&](slinrt_context &c) {
        if (rows < -1)
          raise(SLINRT_ERROR_INVALID_ARGUMENT,
                "rows must be >= 0, or -1 for the cost model, got ", rows);
        c.perPartMaxRows = rows;
      },
      /*evenAfterError=*/true);
}

int32_t slinrt_prefer_per_part(slinrt_context *ctx, int64_t rows,
                               int64_t parts, int64_t bytes) {
  int32_t answer = 0;
  guardedCall(ctx, "slinrt_prefer_per_part", [&](slinrt_context &c) {
    if (parts < 2)
      return;
    if (c.perPartMaxRows >= 0) {
      answer = c.perPartMaxRows > 0 && rows <= c.perPartMaxRows;
      return;
    }
    answer = c.target == Target::CUDA ? cudaPrefersPerPart(parts, bytes)
                                      : rows <= kCPUPerPartMaxRows;
  });
  return answer;
}

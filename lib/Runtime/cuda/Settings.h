//===- Settings.h - Environment settings of the CUDA backend ----*- C++ -*-===//
//
// Every SPLITLINEAR_* environment variable the runtime reads, in one place,
// each with its type, its value when unset, and its range. Each one is read
// once, at its first use, through readSetting (Settings.cpp), and then kept
// for the life of the process:
//
//   SPLITLINEAR_FP8_AUTOTUNE_MAX_M  integer, unset: 0 (off); a positive M
//       bound: FP8 GEMMs with at most that many rows time candidate
//       algorithms (Autotune.cpp); anything else: off.
//   SPLITLINEAR_FP8_DECODE_MAX_M    integer, unset or empty: 16; 1 to 32 (a
//       larger value counts as 32): the M bound of the decode GEMM; 0 or
//       anything else: off.
//   SPLITLINEAR_FP8_DECODE_TILE_N   "16" or "32": forces the decode GEMM's
//       rows of W per CTA (a measuring aid); anything else: its own choice.
//   SPLITLINEAR_FP8_DECODE_PDL      "0": no programmatic launch of the
//       decode GEMM; "bulk": its bulk-copy form only; anything else (unset
//       included): both forms, where the device allows.
//   SPLITLINEAR_FP8_DECODE_BULK     "0": the decode GEMM's bulk-copy form is
//       off (a measuring aid, and how tests reach the register form at
//       M <= 16); anything else: on where the device runs it.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_CUDA_SETTINGS_H
#define SPLITLINEAR_LIB_RUNTIME_CUDA_SETTINGS_H

#include "cuda/kernels/decode_gemm/DecodeGemm.h"

#include <cstddef>
#include <cstdint>
#include <limits>

namespace slinrt::cuda {

/// An integer setting: `unset` when the variable is unset or empty; `off`
/// when its text is not a whole number (std::strtoll in base 10 must take
/// all of it) or the number is below `min`; else the number, at most `max`.
struct IntegerSetting {
  const char *name;
  int64_t unset, off, min, max;
};

/// One keyword of a keyword setting and the value it selects.
template <typename T> struct Keyword {
  const char *text;
  T value;
};

/// A keyword setting: the value of the first keyword equal to the
/// variable's text, else `otherwise` (for an unset variable too).
template <typename T, size_t N> struct KeywordSetting {
  const char *name;
  Keyword<T> keywords[N];
  T otherwise;
};

/// The value of an integer setting (see IntegerSetting).
int64_t readSetting(const IntegerSetting &setting);

/// The index of the first of `texts[0, count)` equal to the value of the
/// variable `name`, or -1 (also when it is unset).
int matchKeyword(const char *name, const char *const *texts, size_t count);

/// The value of a keyword setting (see KeywordSetting).
template <typename T, size_t N>
T readSetting(const KeywordSetting<T, N> &setting) {
  const char *texts[N];
  for (size_t i = 0; i < N; ++i)
    texts[i] = setting.keywords[i].text;
  int match = matchKeyword(setting.name, texts, N);
  return match < 0 ? setting.otherwise : setting.keywords[match].value;
}

/// The M bound of FP8 autotuning (SPLITLINEAR_FP8_AUTOTUNE_MAX_M), read
/// once; 0: off. Off by default: heuristic #0 was the fastest of about 100
/// candidates at M = 2048 and tuning chose slower algorithms at M = 1024
/// (docs/Design.md, Measured decisions: FP8 autotuning is opt-in).
inline int64_t fp8AutotuneMaxM() {
  static const int64_t maxM = readSetting(IntegerSetting{
      "SPLITLINEAR_FP8_AUTOTUNE_MAX_M", /*unset=*/0, /*off=*/0, /*min=*/1,
      /*max=*/std::numeric_limits<int64_t>::max()});
  return maxM;
}

/// The M bound of the decode GEMM (SPLITLINEAR_FP8_DECODE_MAX_M), read
/// once; 0: off.
inline int64_t fp8DecodeMaxM() {
  static const int64_t maxM = readSetting(
      IntegerSetting{"SPLITLINEAR_FP8_DECODE_MAX_M", /*unset=*/16, /*off=*/0,
                     /*min=*/1, /*max=*/kDecodeGemmMaxRows});
  return maxM;
}

/// The decode GEMM's rows of W per CTA forced by
/// SPLITLINEAR_FP8_DECODE_TILE_N (16 or 32), read once; 0: not forced.
inline int fp8DecodeTileN() {
  static const int forced = readSetting(KeywordSetting<int, 2>{
      "SPLITLINEAR_FP8_DECODE_TILE_N", {{"16", 16}, {"32", 32}}, 0});
  return forced;
}

/// Which forms of the decode GEMM SPLITLINEAR_FP8_DECODE_PDL lets launch as
/// programmatic dependents, read once (the device may allow fewer).
inline DecodeDependence fp8DecodeDependence() {
  static const DecodeDependence wanted =
      readSetting(KeywordSetting<DecodeDependence, 2>{
          "SPLITLINEAR_FP8_DECODE_PDL",
          {{"0", DecodeDependence::None}, {"bulk", DecodeDependence::BulkForm}},
          DecodeDependence::AllForms});
  return wanted;
}

/// Whether SPLITLINEAR_FP8_DECODE_BULK lets the decode GEMM's bulk-copy
/// form run, read once.
inline bool fp8DecodeBulkEnabled() {
  static const bool enabled = readSetting(KeywordSetting<bool, 1>{
      "SPLITLINEAR_FP8_DECODE_BULK", {{"0", false}}, true});
  return enabled;
}

} // namespace slinrt::cuda

#endif // SPLITLINEAR_LIB_RUNTIME_CUDA_SETTINGS_H

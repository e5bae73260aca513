//===- Autotune.cpp - FP8 algorithm autotuning (opt-in) ---------*- C++ -*-===//
//
// With SPLITLINEAR_FP8_AUTOTUNE_MAX_M set to a positive M bound, a scaled
// GEMM with at most that many rows times a few candidate algorithms on its
// own operands (tuneScaledAlgorithm) instead of taking heuristic #0, once per
// bucket of sizes (tuneBucketOf: M and K rounded up to powers of two); see
// bench/tools/cublaslt_fp8_probe.cu for why. Graph capture skips tuning.
//
//===----------------------------------------------------------------------===//

#include "cuda/GemmPlan.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <vector>

using namespace slinrt;
using namespace slinrt::cuda;

namespace {

/// Why tuning exists: at decode shapes cuBLASLt's heuristic #0 for FP8 is not
/// the fastest. The probe (H200, cuBLASLt 13.1, M = 16) found that
/// outer-vector scaling gets one answer only (tile 128x128, 48 CTAs for
/// N = 6144 on 132 SMs, no split-K: AlgoCheck refuses every SPLITK_NUM), and
/// that tensorwise answers differ by up to 15 %; heuristic #0 forced to a
/// narrow tile (CUBLASLT_MATMUL_TILE_128x16, 64x16, ...) runs outer-vector
/// at 0.55-0.65x the bf16 time (0.0116 vs 0.0164 ms for q/k/v, 0.0202 vs
/// 0.039 ms for down). Through this runtime
/// (bench/tools/fp8_autotune_check.cu, M = 16, outer-vector, fast
/// accumulation): q/k/v 0.0162 -> 0.0131 ms, gate/up 0.0383 -> 0.0332, down
/// 0.0389 -> 0.0287, for about 0.3 s of tuning per new problem. Graph
/// capture skips tuning (heuristic #0).
/// Candidates: up to kTuneHeuristics heuristic answers, split-K copies of
/// them, and heuristic #0 forced to each tile it lists
/// (CUBLASLT_ALGO_CAP_TILE_IDS) that cublasLtMatmulAlgoCheck accepts.
constexpr int kTuneHeuristics = 8;
constexpr int kTuneWarmup = 3, kTuneIters = 10;
constexpr size_t kTuneMaxCandidates = 192;

/// Adds the configurations worth timing of `base` to `out`: split-K copies
/// (fp32 partials only, as the heuristic preference allows) and, for
/// `withTiles`, the same algorithm with each other listed tile. `base` is a
/// copy: it may be an element of `out`, which grows.
void addTuneVariants(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                     cublasLtMatrixLayout_t aLayout,
                     cublasLtMatrixLayout_t bLayout,
                     cublasLtMatrixLayout_t dLayout, uint64_t workspaceLimit,
                     int64_t k, cublasLtMatmulAlgo_t base, bool withTiles,
                     std::vector<cublasLtMatmulAlgo_t> &out) {
  auto accept = [&](const cublasLtMatmulAlgo_t &algo) {
    cublasLtMatmulHeuristicResult_t check{};
    if (out.size() < kTuneMaxCandidates &&
        cublasLtMatmulAlgoCheck(handle, desc, aLayout, bLayout, dLayout,
                                dLayout, &algo,
                                &check) == CUBLAS_STATUS_SUCCESS &&
        check.state == CUBLAS_STATUS_SUCCESS &&
        check.workspaceSize <= workspaceLimit)
      out.push_back(algo);
  };
  size_t written = 0;
  int32_t splitSupport = 0;
  uint32_t schemes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT,
                                        &splitSupport, sizeof(splitSupport),
                                        &written) == CUBLAS_STATUS_SUCCESS &&
      splitSupport &&
      cublasLtMatmulAlgoCapGetAttribute(
          &base, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes,
          sizeof(schemes), &written) == CUBLAS_STATUS_SUCCESS &&
      (schemes & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE)) {
    uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    for (int32_t split : {2, 4, 8}) {
      if (k / split < 256)
        break;
      cublasLtMatmulAlgo_t algo = base;
      if (cublasLtMatmulAlgoConfigSetAttribute(
              &algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof(split)) ==
              CUBLAS_STATUS_SUCCESS &&
          cublasLtMatmulAlgoConfigSetAttribute(
              &algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
              sizeof(scheme)) == CUBLAS_STATUS_SUCCESS)
        accept(algo);
    }
  }
  if (!withTiles)
    return;
  uint32_t current = 0;
  (void)cublasLtMatmulAlgoConfigGetAttribute(
      &base, CUBLASLT_ALGO_CONFIG_TILE_ID, &current, sizeof(current), &written);
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_TILE_IDS,
                                        nullptr, 0,
                                        &bytes) != CUBLAS_STATUS_SUCCESS)
    return;
  std::vector<uint32_t> tiles(bytes / sizeof(uint32_t));
  if (tiles.empty() || cublasLtMatmulAlgoCapGetAttribute(
                           &base, CUBLASLT_ALGO_CAP_TILE_IDS, tiles.data(),
                           bytes, &written) != CUBLAS_STATUS_SUCCESS)
    return;
  for (uint32_t tile : tiles) {
    if (tile == current || tile == CUBLASLT_MATMUL_TILE_UNDEFINED)
      continue;
    cublasLtMatmulAlgo_t algo = base;
    if (cublasLtMatmulAlgoConfigSetAttribute(
            &algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile)) ==
        CUBLAS_STATUS_SUCCESS)
      accept(algo);
  }
}

/// The median time in ms of `algo` on `ops` (`iters` <= kTuneIters calls
/// after `warmup`), or a negative value when it fails; failures are cleared.
float timeAlgorithm(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                    cublasLtMatrixLayout_t aLayout,
                    cublasLtMatrixLayout_t bLayout,
                    cublasLtMatrixLayout_t dLayout,
                    const cublasLtMatmulAlgo_t &algo, const TuneOperands &ops,
                    cudaEvent_t *events, int warmup, int iters) {
  float alpha = 1.0f, beta = 0.0f;
  auto run = [&] {
    return cublasLtMatmul(handle, desc, &alpha, ops.a, aLayout, ops.b, bLayout,
                          &beta, ops.d, dLayout, ops.d, dLayout, &algo,
                          ops.workspace, ops.workspaceBytes,
                          ops.stream) == CUBLAS_STATUS_SUCCESS;
  };
  for (int i = 0; i < warmup; ++i)
    if (!run())
      return -1;
  for (int i = 0; i < iters; ++i) {
    if (ops.flush && cudaMemsetAsync(ops.flush, i, ops.flushBytes,
                                     ops.stream) != cudaSuccess)
      return -1;
    if (cudaEventRecord(events[2 * i], ops.stream) != cudaSuccess || !run() ||
        cudaEventRecord(events[2 * i + 1], ops.stream) != cudaSuccess)
      return -1;
  }
  if (cudaStreamSynchronize(ops.stream) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  float ms[kTuneIters];
  for (int i = 0; i < iters; ++i)
    if (cudaEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]) !=
        cudaSuccess)
      return -1;
  std::nth_element(ms, ms + iters / 2, ms + iters);
  return ms[iters / 2];
}

/// What tuneScaledAlgorithm chose, and whether it timed anything.
struct TuneResult {
  cublasLtMatmulAlgo_t algo;
  bool timed;
};

/// The fastest of the candidates for an FP8 problem whose heuristic #0 is
/// `first`, timed on `ops`; `first` itself when nothing else runs faster or
/// timing is impossible (the stream is being captured, events fail: then
/// `timed` is false).
TuneResult tuneScaledAlgorithm(
    DeviceState &dev, const AlgoKey &key, cublasLtMatmulDesc_t desc,
    cublasLtMatrixLayout_t aLayout, cublasLtMatrixLayout_t bLayout,
    cublasLtMatrixLayout_t dLayout, cublasLtMatmulPreference_t pref,
    const cublasLtMatmulAlgo_t &first, const TuneOperands &given) {
  TuneOperands ops = given;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(ops.stream, &capture) != cudaSuccess ||
      capture != cudaStreamCaptureStatusNone) {
    (void)cudaGetLastError();
    return {first, false};
  }
  std::vector<cublasLtMatmulAlgo_t> candidates{first};
  cublasLtMatmulHeuristicResult_t results[kTuneHeuristics];
  int returned = 0;
  if (cublasLtMatmulAlgoGetHeuristic(
          dev.handle, desc, aLayout, bLayout, dLayout, dLayout, pref,
          kTuneHeuristics, results, &returned) != CUBLAS_STATUS_SUCCESS)
    returned = 0;
  for (int i = 1; i < returned; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS)
      candidates.push_back(results[i].algo);
  size_t heuristics = candidates.size();
  for (size_t i = 0; i < heuristics; ++i)
    addTuneVariants(dev.handle, desc, aLayout, bLayout, dLayout,
                    key.workspaceLimit, key.k, candidates[i],
                    /*withTiles=*/i == 0, candidates);

  cudaEvent_t events[2 * kTuneIters] = {};
  for (cudaEvent_t &e : events)
    if (cudaEventCreate(&e) != cudaSuccess) {
      (void)cudaGetLastError();
      for (cudaEvent_t made : events)
        if (made)
          (void)cudaEventDestroy(made);
      return {first, false};
    }
  // Twice the L2, once per tuned problem; timing without it (hot L2) when
  // it cannot be had.
  int device = 0, l2Bytes = 0;
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&l2Bytes, cudaDevAttrL2CacheSize, device) ==
          cudaSuccess &&
      l2Bytes > 0 && cudaMalloc(&ops.flush, 2 * size_t(l2Bytes)) == cudaSuccess)
    ops.flushBytes = 2 * size_t(l2Bytes);
  else
    ops.flush = nullptr;
  (void)cudaGetLastError();
  // One call each first (after one that loads the kernel): forced tiles can
  // be many times slower, and only those within 1.5x are timed in full.
  std::vector<float> quick(candidates.size(), -1);
  float bestQuick = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    quick[i] = timeAlgorithm(dev.handle, desc, aLayout, bLayout, dLayout,
                             candidates[i], ops, events, 1, 1);
    if (quick[i] >= 0 && (bestQuick < 0 || quick[i] < bestQuick))
      bestQuick = quick[i];
  }
  cublasLtMatmulAlgo_t best = first;
  float bestMs = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (quick[i] < 0 || quick[i] > 1.5f * bestQuick)
      continue;
    float ms =
        timeAlgorithm(dev.handle, desc, aLayout, bLayout, dLayout,
                      candidates[i], ops, events, kTuneWarmup, kTuneIters);
    if (ms >= 0 && (bestMs < 0 || ms < bestMs)) {
      bestMs = ms;
      best = candidates[i];
    }
  }
  for (cudaEvent_t e : events)
    (void)cudaEventDestroy(e);
  if (ops.flush) {
    (void)cudaStreamSynchronize(ops.stream);
    (void)cudaFree(ops.flush);
  }
  return {best, true};
}

/// The smallest power of two >= `v` (v >= 1).
int64_t powerOfTwoCeil(int64_t v) {
  int64_t p = 1;
  while (p < v)
    p <<= 1;
  return p;
}

/// The key autotuning's choice for `key` is kept under: M and K rounded up to
/// powers of two, leading dimensions left out (cublasLtMatmulAlgoCheck
/// judges the real ones). A process that sees many M or K (dynamic batches,
/// sequence lengths: K of a wgrad is the token count) thus times at most one
/// problem per bucket, a few per layer shape, instead of ~0.3 s per new size.
AlgoKey tuneBucketOf(AlgoKey key) {
  key.m = powerOfTwoCeil(key.m);
  key.k = powerOfTwoCeil(key.k);
  key.lda = key.ldb = key.ldd = 0;
  return key;
}

} // namespace

cublasLtMatmulAlgo_t cuda::tunedAlgorithm(
    slinrt_context &ctx, DeviceState &dev, const AlgoKey &key,
    cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t aLayout,
    cublasLtMatrixLayout_t bLayout, cublasLtMatrixLayout_t dLayout,
    cublasLtMatmulPreference_t pref, const cublasLtMatmulAlgo_t &first,
    const TuneOperands &ops) {
  AlgoKey bucket = tuneBucketOf(key);
  if (std::shared_ptr<const AlgoEntry> known = dev.tunedBuckets.find(bucket)) {
    cublasLtMatmulHeuristicResult_t check{};
    if (cublasLtMatmulAlgoCheck(dev.handle, desc, aLayout, bLayout, dLayout,
                                dLayout, &known->algo,
                                &check) == CUBLAS_STATUS_SUCCESS &&
        check.state == CUBLAS_STATUS_SUCCESS &&
        check.workspaceSize <= key.workspaceLimit)
      return known->algo;
    (void)cudaGetLastError();
    return first;
  }
  TuneResult tuned = tuneScaledAlgorithm(dev, key, desc, aLayout, bLayout,
                                         dLayout, pref, first, ops);
  if (tuned.timed) {
    ctx.counters.tunedGemms.fetch_add(1, std::memory_order_relaxed);
    auto choice = std::make_shared<AlgoEntry>();
    choice->found = true;
    choice->algo = tuned.algo;
    dev.tunedBuckets.insert(bucket, std::move(choice), HeuristicOutcome::Found);
  }
  return tuned.algo;
}

//===- Heuristic.cpp - cuBLASLt's heuristic behind a cache ------*- C++ -*-===//
//
// findAlgorithm: the algorithm of a GEMM plan, from the device's algorithm
// cache or one cublasLtMatmulAlgoGetHeuristic query whose preferences say
// what the real pointers allow (alignments, workspace, fp32 split-K partial
// sums). Definite answers are cached, found or not; a failed query is not.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaCheck.h"
#include "cuda/GemmPlan.h"

#include <utility>

using namespace slinrt;
using namespace slinrt::cuda;

namespace {

/// Classifies the answer of cublasLtMatmulAlgoGetHeuristic. NOT_SUPPORTED
/// ("no heuristic for this configuration") and a successful query without a
/// usable result are definite; any other status (ALLOC_FAILED,
/// INTERNAL_ERROR, ...) is a failure of the query, not an answer.
HeuristicOutcome classifyHeuristic(cublasStatus_t status, int returned,
                                   const cublasLtMatmulHeuristicResult_t &r) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return returned > 0 && r.state == CUBLAS_STATUS_SUCCESS
               ? HeuristicOutcome::Found
               : HeuristicOutcome::NoAlgorithm;
  if (status == CUBLAS_STATUS_NOT_SUPPORTED)
    return HeuristicOutcome::NoAlgorithm;
  return HeuristicOutcome::Failed;
}

} // namespace

std::shared_ptr<const AlgoEntry>
cuda::findAlgorithm(slinrt_context &ctx, DeviceState &dev, const AlgoKey &key,
                    cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t aLayout,
                    cublasLtMatrixLayout_t bLayout,
                    cublasLtMatrixLayout_t dLayout, const TuneOperands *tune) {
  if (std::shared_ptr<const AlgoEntry> cached = dev.algos.find(key)) {
    ctx.counters.algoCacheHits.fetch_add(1, std::memory_order_relaxed);
    return cached;
  }
  ctx.counters.algoCacheMisses.fetch_add(1, std::memory_order_relaxed);

  MatmulPreference pref;
  checkCublas(cublasLtMatmulPreferenceCreate(pref.out()),
              "cublasLtMatmulPreferenceCreate");
  uint64_t workspace = key.workspaceLimit;
  checkCublas(cublasLtMatmulPreferenceSetAttribute(
                  pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                  sizeof(workspace)),
              "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
  // Split-K partial sums only in the compute type: the default also allows
  // reducing in the output type, and for fp16 BGRADB (transb = T) the
  // heuristic picks split-K 8 with fp16 partials, ~10 ulps off at K = 80.
  uint32_t reductionMask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  checkCublas(cublasLtMatmulPreferenceSetAttribute(
                  pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                  &reductionMask, sizeof(reductionMask)),
              "cublasLtMatmulPreferenceSetAttribute(REDUCTION_SCHEME_MASK)");
  // Sliced views need not be 16-byte aligned: tell the heuristic what the
  // real pointers allow so that it never picks a kernel that would fault.
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.alignA},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.alignB},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.alignC},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.alignD}};
  for (const auto &[attr, value] : aligns)
    checkCublas(
        cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)),
        "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");

  auto entry = std::make_shared<AlgoEntry>();
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      dev.handle, desc, aLayout, bLayout, dLayout, dLayout, pref, 1, &result,
      &returned);
  HeuristicOutcome outcome = classifyHeuristic(status, returned, result);
  switch (outcome) {
  case HeuristicOutcome::Failed:
    raise(status == CUBLAS_STATUS_ALLOC_FAILED ? SLINRT_ERROR_OUT_OF_MEMORY
                                               : SLINRT_ERROR_CUBLAS,
          "cublasLtMatmulAlgoGetHeuristic failed: ",
          cublasLtGetStatusName(status), ": ", cublasLtGetStatusString(status));
  case HeuristicOutcome::NoAlgorithm:
    entry->failure =
        status == CUBLAS_STATUS_SUCCESS
            ? std::string("cublasLtMatmulAlgoGetHeuristic found no algorithm")
            : concat("cublasLtMatmulAlgoGetHeuristic returned ",
                     cublasLtGetStatusName(status));
    break;
  case HeuristicOutcome::Found:
    entry->found = true;
    entry->algo = tune ? tunedAlgorithm(ctx, dev, key, desc, aLayout, bLayout,
                                        dLayout, pref, result.algo, *tune)
                       : result.algo;
    break;
  }
  return dev.algos.insert(key, std::move(entry), outcome);
}

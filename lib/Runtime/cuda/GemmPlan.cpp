//===- GemmPlan.cpp - GEMM plans: per-thread cuBLASLt setup -----*- C++ -*-===//
//
// Each thread keeps GEMM plans (matmul descriptor, layouts, algorithm) per
// device and problem, so that a repeated GEMM costs a hash lookup, at most
// one descriptor attribute (the bias pointer, the FP8 scale pointers) and
// cublasLtMatmul. runLt runs a problem through its plan, with the fused
// epilogue when an algorithm takes it and the unfused fallback otherwise.
//
//===----------------------------------------------------------------------===//

#include "cuda/GemmPlan.h"
#include "cuda/CudaCheck.h"
#include "cuda/Settings.h"
#include "cuda/kernels/CopyKernels.h"

#include <unordered_map>

using namespace slinrt;
using namespace slinrt::cuda;

std::string cuda::describe(const LtProblem &lt) {
  return concat(
      "M=", lt.n, " N=", lt.m, " K=", lt.k, " dtype=", dtypeName(lt.dtype),
      " transa=", lt.transa == CUBLAS_OP_T ? "T" : "N",
      " transb=", lt.transb == CUBLAS_OP_T ? "T" : "N", " lda=", lt.lda,
      " ldb=", lt.ldb, " ldd=", lt.ldd, " alignments A/B/D=", alignmentOf(lt.a),
      "/", alignmentOf(lt.b), "/", alignmentOf(lt.d));
}

namespace {

/// The algorithm-cache key of `p` run with `epilogue` (and `bias`), using at
/// most `workspaceLimit` bytes of workspace.
AlgoKey algoKeyOf(const LtProblem &lt, cublasLtEpilogue_t epilogue,
                  const void *bias, uint64_t workspaceLimit) {
  return AlgoKey{lt.n,
                 lt.m,
                 lt.k,
                 lt.lda,
                 lt.ldb,
                 lt.ldd,
                 int32_t(lt.dtype),
                 int32_t(lt.transa),
                 int32_t(lt.transb),
                 int32_t(lt.computeType),
                 uint32_t(epilogue),
                 alignmentOf(lt.a),
                 alignmentOf(lt.b),
                 alignmentOf(lt.d),
                 alignmentOf(lt.d),
                 epilogue == CUBLASLT_EPILOGUE_DEFAULT ? 0u : alignmentOf(bias),
                 int32_t(lt.aType),
                 int32_t(lt.bType),
                 lt.scaleMode,
                 lt.fastAccum ? 1 : 0,
                 workspaceLimit};
}

/// Sets the epilogue attributes of `desc` (and the bias pointer and type).
void configureEpilogue(cublasLtMatmulDesc_t desc, cublasLtEpilogue_t epilogue,
                       void *bias, cudaDataType_t biasType) {
  uint32_t value = epilogue;
  checkCublas(cublasLtMatmulDescSetAttribute(
                  desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &value, sizeof(value)),
              "cublasLtMatmulDescSetAttribute(EPILOGUE)");
  // Cleared for DEFAULT too: heuristics read the pointer's alignment.
  if (epilogue == CUBLASLT_EPILOGUE_DEFAULT)
    bias = nullptr;
  checkCublas(cublasLtMatmulDescSetAttribute(
                  desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
              "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  if (epilogue == CUBLASLT_EPILOGUE_DEFAULT)
    return;
  int32_t type = biasType;
  checkCublas(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                     &type, sizeof(type)),
      "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
}

/// Everything cublasLtMatmul needs for one problem except the operand, bias,
/// workspace and stream pointers: the matmul descriptor with all its constant
/// attributes (compute/scale type, transposes, epilogue, bias type), the A/B/D
/// layouts (C is D), and the algorithm. Only the bias pointer is set per call,
/// and only when it differs from the one the descriptor holds.
///
/// cuBLASLt descriptors are host objects bound to no device, stream or handle,
/// and cublasLtMatmul takes what it needs into the launch when it enqueues the
/// kernel(s) (the previous code destroyed them right after every call). So a
/// plan's bias pointer may change, and a plan may be destroyed, while kernels
/// that used it are still queued or captured in a graph.
struct GemmPlan {
  bool found = false;
  /// The heuristic answer (its message when !found); shared with the
  /// device's cache, which may evict it.
  std::shared_ptr<const AlgoEntry> entry;
  cublasLtMatmulAlgo_t algo{};
  void *bias = nullptr; ///< BIAS_POINTER as currently set in `desc`
  /// A/B_SCALE_POINTER as currently set in `desc` (scaled GEMMs).
  const void *aScale = nullptr, *bScale = nullptr;
  MatmulDesc desc;
  MatrixLayout aLayout, bLayout, dLayout;
};

/// A plan's identity: the device (algorithms are chosen for its handle) and
/// the algorithm-cache key.
struct PlanKey {
  AlgoKey key;
  int device;
  bool operator==(const PlanKey &o) const {
    return device == o.device && key == o.key;
  }
};

struct PlanKeyHash {
  size_t operator()(const PlanKey &k) const {
    return AlgoKeyHash()(k.key) ^
           (static_cast<size_t>(k.device) * 0x9E3779B97F4A7C15ull);
  }
};

/// Thread safety: plans are per thread (thread_local), not shared per device
/// with a mutex of their own. A shared plan would need its lock held from
/// setting the bias pointer until cublasLtMatmul returns (microseconds of host
/// time) and the device-wide lock to find it: two uncontended lock/unlock
/// pairs (atomic read-modify-writes) per call, and contended, e.g. autograd's
/// device thread and the main thread launching the same shape, it would
/// serialize whole launches. A thread-local map costs a TLS access and a hash
/// lookup, with no atomic operation and no lock. Its price is that each
/// thread builds its own descriptors (a few small host objects) once per
/// problem; the heuristic query still runs once per device and problem,
/// through the shared algorithm cache above. Plans die with their thread.
///
/// Bounded: when full it is cleared (no bookkeeping on a hit, unlike an LRU
/// list). A model uses a few dozen shapes; past the bound, rebuilding a plan
/// costs descriptor creation and an algorithm-cache hit, not a heuristic.
constexpr size_t kMaxPlansPerThread = 1024;
using PlanCache = std::unordered_map<PlanKey, GemmPlan, PlanKeyHash>;
thread_local PlanCache threadPlans;

/// Sets a descriptor attribute of `value`'s type.
template <typename T>
void setAttribute(cublasLtMatmulDesc_t desc,
                  cublasLtMatmulDescAttributes_t attr, const T &value,
                  const char *what) {
  checkCublas(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)),
              what);
}

/// Points the plan's descriptor at the scales of `lt` (the per-call
/// attributes of a scaled GEMM), setting only what changed.
void updateScales(GemmPlan &plan, const LtProblem &lt) {
  if (lt.scaleMode < 0)
    return;
  if (plan.aScale != lt.aScale) {
    setAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, lt.aScale,
                 "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)");
    plan.aScale = lt.aScale;
  }
  if (plan.bScale != lt.bScale) {
    setAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, lt.bScale,
                 "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)");
    plan.bScale = lt.bScale;
  }
}

/// Fills `plan` (default-constructed) for `key`.
void buildPlan(GemmPlan &plan, slinrt_context &ctx, DeviceState &dev,
               const AlgoKey &key, const LtProblem &lt,
               cublasLtEpilogue_t epilogue, void *bias) {
  // cuBLASLt's A is our B: stored row-major [rows, cols] = column-major
  // [cols, rows]; that already is op(B)^T unless op transposes it.
  checkCublas(cublasLtMatrixLayoutCreate(plan.aLayout.out(), lt.aType, lt.aRows,
                                         lt.aCols, lt.lda),
              "cublasLtMatrixLayoutCreate(A)");
  checkCublas(cublasLtMatrixLayoutCreate(plan.bLayout.out(), lt.bType, lt.bRows,
                                         lt.bCols, lt.ldb),
              "cublasLtMatrixLayoutCreate(B)");
  checkCublas(cublasLtMatrixLayoutCreate(plan.dLayout.out(), lt.type, lt.m,
                                         lt.n, lt.ldd),
              "cublasLtMatrixLayoutCreate(D)");

  checkCublas(
      cublasLtMatmulDescCreate(plan.desc.out(), lt.computeType, lt.scaleType),
      "cublasLtMatmulDescCreate");
  int32_t transa = lt.transa, transb = lt.transb;
  checkCublas(cublasLtMatmulDescSetAttribute(plan.desc,
                                             CUBLASLT_MATMUL_DESC_TRANSA,
                                             &transa, sizeof(transa)),
              "cublasLtMatmulDescSetAttribute(TRANSA)");
  checkCublas(cublasLtMatmulDescSetAttribute(plan.desc,
                                             CUBLASLT_MATMUL_DESC_TRANSB,
                                             &transb, sizeof(transb)),
              "cublasLtMatmulDescSetAttribute(TRANSB)");
  if (lt.scaleMode >= 0) {
    int32_t mode = lt.scaleMode;
    setAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode,
                 "cublasLtMatmulDescSetAttribute(A_SCALE_MODE)");
    setAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode,
                 "cublasLtMatmulDescSetAttribute(B_SCALE_MODE)");
    int8_t fast = lt.fastAccum ? 1 : 0;
    setAttribute(plan.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast,
                 "cublasLtMatmulDescSetAttribute(FAST_ACCUM)");
    updateScales(plan, lt);
  }
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    // The real bias pointer: the heuristic reads its alignment.
    configureEpilogue(plan.desc, epilogue, bias, lt.type);
    plan.bias = bias;
  }

  // Scaled GEMMs never accumulate into D, so tuning may overwrite it.
  TuneOperands ops{lt.a,
                   lt.b,
                   lt.d,
                   ctx.cuda->workspace,
                   ctx.cuda->workspaceBytes,
                   static_cast<cudaStream_t>(ctx.stream)};
  bool tune = lt.scaleMode >= 0 && lt.n <= fp8AutotuneMaxM();
  plan.entry = findAlgorithm(ctx, dev, key, plan.desc, plan.aLayout,
                             plan.bLayout, plan.dLayout, tune ? &ops : nullptr);
  plan.found = plan.entry->found;
  plan.algo = plan.entry->algo;
  if (!plan.found) { // never run: keep only the answer
    plan.desc.reset();
    plan.aLayout.reset();
    plan.bLayout.reset();
    plan.dLayout.reset();
  }
}

/// The calling thread's plan for `p` run with `epilogue` on `ctx`'s device,
/// built on first use. The reference is valid until the next planFor call on
/// this thread (which may clear the cache).
GemmPlan &planFor(slinrt_context &ctx, DeviceState &dev, const LtProblem &lt,
                  cublasLtEpilogue_t epilogue, void *bias) {
  PlanKey key{algoKeyOf(lt, epilogue, bias, ctx.cuda->workspaceBytes),
              ctx.device};
  PlanCache &plans = threadPlans;
  auto it = plans.find(key);
  if (it != plans.end()) {
    ctx.counters.algoCacheHits.fetch_add(1, std::memory_order_relaxed);
    return it->second;
  }
  if (plans.size() >= kMaxPlansPerThread)
    plans.clear();
  it = plans.try_emplace(key).first;
  try {
    buildPlan(it->second, ctx, dev, key.key, lt, epilogue, bias);
  } catch (...) {
    plans.erase(it);
    throw;
  }
  return it->second;
}

} // namespace

void cuda::setSwappedOperands(LtProblem &lt, const RowMajorOperand &a,
                              const RowMajorOperand &b, void *d, int64_t ldd) {
  lt.a = b.data;
  lt.transa = b.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  lt.lda = b.ld;
  lt.aRows = b.cols;
  lt.aCols = b.rows;
  lt.b = a.data;
  lt.transb = a.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  lt.ldb = a.ld;
  lt.bRows = a.cols;
  lt.bCols = a.rows;
  lt.d = d;
  lt.ldd = ldd;
  lt.m = b.trans ? b.rows : b.cols;
  lt.n = a.trans ? a.cols : a.rows;
  lt.k = a.trans ? a.rows : a.cols;
}

bool cuda::runLt(slinrt_context &ctx, const LtProblem &lt,
                 cublasLtEpilogue_t fused, void *bias, bool accumulate) {
  CudaState &state = *ctx.cuda;
  DeviceState &dev = *state.device;
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  GemmPlan *plan = nullptr;
  bool useFused = fused != CUBLASLT_EPILOGUE_DEFAULT;
  // The alignment preferences do not cover the bias pointer, and a bias
  // sliced from a larger buffer faults in the fused kernels: unfuse instead.
  if (useFused && alignmentOf(bias) < 16)
    useFused = false;
  if (useFused) {
    GemmPlan &fusedPlan = planFor(ctx, dev, lt, fused, bias);
    if (fusedPlan.found) {
      // The one per-call attribute (this thread's descriptor: threadPlans).
      if (fusedPlan.bias != bias) {
        setAttribute(fusedPlan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias,
                     "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
        fusedPlan.bias = bias;
      }
      plan = &fusedPlan;
    } else {
      useFused = false; // fusedPlan is not used past the next planFor
    }
  }
  if (fused != CUBLASLT_EPILOGUE_DEFAULT && !useFused)
    ctx.counters.epilogueFallbacks.fetch_add(1, std::memory_order_relaxed);
  if (!useFused) {
    GemmPlan &plainPlan =
        planFor(ctx, dev, lt, CUBLASLT_EPILOGUE_DEFAULT, nullptr);
    if (!plainPlan.found)
      raise(SLINRT_ERROR_CUBLAS, "no cuBLASLt algorithm for ", describe(lt),
            ": ", plainPlan.entry->failure);
    plan = &plainPlan;
  }
  updateScales(*plan, lt);

  bool withBias = fused == CUBLASLT_EPILOGUE_BIAS;
  bool betaOne = (withBias && !useFused) || accumulate;
  if (withBias && !useFused)
    checkCuda(cuda::launchBroadcastRows(lt.dtype, lt.d, lt.ldd, lt.n, lt.m,
                                        bias, stream),
              "broadcast kernel launch");
  float alpha32 = 1.0f, beta32 = betaOne ? 1.0f : 0.0f;
  double alpha64 = 1.0, beta64 = betaOne ? 1.0 : 0.0;
  bool f64 = lt.dtype == SLINRT_F64;
  checkCublas(cublasLtMatmul(dev.handle, plan->desc,
                             f64 ? static_cast<const void *>(&alpha64)
                                 : static_cast<const void *>(&alpha32),
                             lt.a, plan->aLayout, lt.b, plan->bLayout,
                             f64 ? static_cast<const void *>(&beta64)
                                 : static_cast<const void *>(&beta32),
                             lt.d, plan->dLayout, lt.d, plan->dLayout,
                             &plan->algo, state.workspace, state.workspaceBytes,
                             stream),
              "cublasLtMatmul");
  return useFused;
}

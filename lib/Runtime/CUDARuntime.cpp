//===- CUDARuntime.cpp - CUDA backend (cuBLASLt) ----------------*- C++ -*-===//
//
// GEMMs through cuBLASLt, copies through cudaMemcpy2DAsync or a conversion
// kernel, and the default stream-ordered device allocator. The FP8 scaled GEMM
// (sm89+) runs through the same plans, with the FP8 operand types, the scale
// mode and fast accumulation in the key and the scale pointers set per call;
// the FP8 quantization functions launch the kernels of QuantizeKernels.cu.
//
// State: one cuBLASLt handle per device, created lazily and cached for the
// process together with an algorithm cache (heuristic queries cost host time
// and NVIDIA recommends one query per problem; the cache keeps algorithms and
// definite "no algorithm" answers, never transient failures, and is bounded:
// HeuristicCache.h). Each thread keeps GEMM plans
// (matmul descriptor, layouts, algorithm) per device and problem, so that a
// repeated GEMM costs a hash lookup, at most one descriptor attribute (the
// bias pointer) and cublasLtMatmul. A context either owns a workspace per
// stream it has used, allocated at creation / set_stream and never during a
// GEMM, or borrows one from its host for each call (PyTorch's, from the
// caching allocator, which is CUDA-graph aware); either way GEMMs can be
// captured into CUDA graphs.
//
// FP8 autotuning (off by default): with SPLITLINEAR_FP8_AUTOTUNE_MAX_M set
// to a positive M bound, a scaled GEMM with at most that many rows times a
// few candidates on its own operands (tuneScaledAlgorithm) instead of taking
// heuristic #0, once per bucket of sizes (tuneBucketOf: M and K rounded up
// to powers of two); see bench/cublaslt_fp8_probe.cu for why.
//
// FP8 decode GEMM (on by default for M <= 16): SPLITLINEAR_FP8_DECODE_MAX_M
// sets the M bound of the hand-written small-M kernel of
// DecodeGemmKernels.cu (0 turns it off, at most 32); e4m3 x e4m3 only, sm89+
// devices only (others, and other shapes, take cuBLASLt). It runs before
// autotuning is considered.
//
// Row-major to column-major: a row-major X[r, c] with leading dimension ld is
// the column-major X^T[c, r] with the same ld. So the row-major problem
// D = op(A) op(B) is run as the column-major D^T = op(B)^T op(A)^T: cuBLASLt's
// "A" is our B, its "B" is our A, m' = N, n' = M, k' = K.
//
//===----------------------------------------------------------------------===//

#include "CUDAKernels.h"
#include "GemmProblem.h"
#include "HeuristicCache.h"
#include "Quantize.h"
#include "RuntimeImpl.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <memory>
#include <unordered_map>
#include <vector>

using namespace slinrt;

//===----------------------------------------------------------------------===//
// Status checks and RAII helpers
//===----------------------------------------------------------------------===//

namespace {

/// Throws for a failed CUDA call, naming the call and the CUDA error. The
/// message is built only on failure: `what` is a literal.
void checkCuda(cudaError_t err, const char *what) {
  if (err == cudaSuccess)
    return;
  // Clear the (non-sticky) error so later calls do not report it again.
  (void)cudaGetLastError();
  raise(err == cudaErrorMemoryAllocation ? SLINRT_ERROR_OUT_OF_MEMORY
                                         : SLINRT_ERROR_CUDA,
        what, " failed: ", cudaGetErrorName(err), ": ",
        cudaGetErrorString(err));
}

/// Throws for a failed cuBLASLt call, naming the call and the status.
void checkCublas(cublasStatus_t status, const char *what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  raise(SLINRT_ERROR_CUBLAS, what, " failed: ", cublasLtGetStatusName(status),
        ": ", cublasLtGetStatusString(status));
}

/// True once a context was created in a process that sees exactly one CUDA
/// device. The current device of every thread is then always that device
/// (cudaSetDevice cannot select another), so the device switches below can
/// skip cudaGetDevice. The device count is fixed for the life of the process.
std::atomic<bool> onlyOneDevice{false};

/// Whether this thread made a device current through cudaSetDevice. A fresh
/// thread has no current CUDA context (cudaGetDevice answers 0 without making
/// one), and cuBLASLt launches need one; cudaSetDevice binds the device's
/// primary context, and is allowed while a stream captures.
thread_local bool threadHasContext = false;

/// Makes `device` current for the scope and restores the previous one.
/// Queries nothing when only one device is visible (after the thread's first
/// guard), and switches only when `device` is not already current.
class DeviceGuard {
public:
  explicit DeviceGuard(int device) {
    if (!threadHasContext) {
      int current = 0;
      checkCuda(cudaGetDevice(&current), "cudaGetDevice");
      checkCuda(cudaSetDevice(device), "cudaSetDevice");
      threadHasContext = true;
      if (current != device)
        previous = current;
      return;
    }
    if (onlyOneDevice.load(std::memory_order_relaxed))
      return;
    int current = 0;
    checkCuda(cudaGetDevice(&current), "cudaGetDevice");
    if (current != device) {
      checkCuda(cudaSetDevice(device), "cudaSetDevice");
      previous = current;
    }
  }
  ~DeviceGuard() {
    if (previous >= 0)
      (void)cudaSetDevice(previous);
  }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

private:
  int previous = -1;
};

/// Owns a cuBLASLt descriptor and destroys it with the owner.
template <typename Handle, cublasStatus_t (*Destroy)(Handle)> class LtObject {
public:
  LtObject() = default;
  ~LtObject() { reset(); }
  LtObject(const LtObject &) = delete;
  LtObject &operator=(const LtObject &) = delete;
  /// The address to pass to the cuBLASLt `...Create` function.
  Handle *out() { return &handle; }
  operator Handle() const { return handle; }
  /// Destroys the descriptor now.
  void reset() {
    if (handle)
      (void)Destroy(handle);
    handle = nullptr;
  }

private:
  Handle handle = nullptr;
};
using MatmulDesc = LtObject<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using MatrixLayout =
    LtObject<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using MatmulPreference =
    LtObject<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

/// The largest power of two <= 256 that divides the address.
uint32_t alignmentOf(const void *ptr) {
  uintptr_t address = reinterpret_cast<uintptr_t>(ptr);
  if (address == 0)
    return 256;
  uintptr_t lowest = address & (~address + 1);
  return static_cast<uint32_t>(lowest < 256 ? lowest : 256);
}

cudaDataType_t cudaTypeOf(slinrt_dtype dtype) {
  switch (dtype) {
  case SLINRT_F32:
    return CUDA_R_32F;
  case SLINRT_F16:
    return CUDA_R_16F;
  case SLINRT_BF16:
    return CUDA_R_16BF;
  case SLINRT_F64:
    return CUDA_R_64F;
  case SLINRT_F8E4M3FN:
    return CUDA_R_8F_E4M3;
  case SLINRT_F8E5M2:
    return CUDA_R_8F_E5M2;
  }
  raise(SLINRT_ERROR_INVALID_ARGUMENT, "unknown dtype ", int(dtype));
}

//===----------------------------------------------------------------------===//
// Per-device state: handle and algorithm cache
//===----------------------------------------------------------------------===//

/// What identifies a heuristic query: everything that can change the answer,
/// alignments included (an algorithm chosen for aligned pointers may fault on
/// a misaligned view). It also determines everything in a GemmPlan except the
/// bias pointer (the layouts follow from m, n, k, the transposes and the lds).
struct AlgoKey {
  int64_t m, n, k, lda, ldb, ldd;
  int32_t dtype, transa, transb, computeType;
  uint32_t epilogue, alignA, alignB, alignC, alignD, alignBias;
  /// cuBLASLt's operand types (the D type but for FP8), its scale mode
  /// (-1: unscaled) and fast FP8 accumulation.
  int32_t aType, bType, scaleMode, fastAccum;
  /// The workspace the algorithm may use (borrowed workspaces vary).
  uint64_t workspaceLimit;

  bool operator==(const AlgoKey &o) const {
    return workspaceLimit == o.workspaceLimit && m == o.m && n == o.n &&
           k == o.k && lda == o.lda && ldb == o.ldb && ldd == o.ldd &&
           dtype == o.dtype && transa == o.transa && transb == o.transb &&
           computeType == o.computeType && epilogue == o.epilogue &&
           alignA == o.alignA && alignB == o.alignB && alignC == o.alignC &&
           alignD == o.alignD && alignBias == o.alignBias && aType == o.aType &&
           bType == o.bType && scaleMode == o.scaleMode &&
           fastAccum == o.fastAccum;
  }
};

struct AlgoKeyHash {
  size_t operator()(const AlgoKey &key) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) {
      h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    };
    mix(key.m), mix(key.n), mix(key.k), mix(key.lda), mix(key.ldb);
    mix(key.ldd), mix(key.dtype), mix(key.transa), mix(key.transb);
    mix(key.computeType), mix(key.epilogue), mix(key.alignA), mix(key.alignB);
    mix(key.alignC), mix(key.alignD), mix(key.alignBias);
    mix(key.workspaceLimit), mix(uint32_t(key.aType)), mix(uint32_t(key.bType));
    mix(uint32_t(key.scaleMode)), mix(uint32_t(key.fastAccum));
    return static_cast<size_t>(h);
  }
};

/// A heuristic answer; `found == false` (no algorithm) is cached too, so a
/// problem that needs the fallback does not query again. Immutable once made.
struct AlgoEntry {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
  std::string failure;
};

/// Entries of a device's algorithm cache. A model needs a few dozen (shape,
/// epilogue, alignment) combinations; the bound only stops a process that
/// sees unbounded shapes (e.g. every sequence length) from growing forever.
/// An entry (key, answer, list and map nodes) is a few hundred bytes, so a
/// full cache takes one or two MiB.
constexpr size_t kMaxAlgoEntriesPerDevice = 4096;

struct DeviceState {
  cublasLtHandle_t handle = nullptr;
  int computeMajor = 0, computeMinor = 0, multiProcessors = 0;
  /// Whether the device runs the decode GEMM's sm89+ image: -1 not asked
  /// yet, then 0 or 1 (decodeGemmUsable).
  std::atomic<int> decodeGemm{-1};
  /// The opt-in shared memory per block where the device runs the decode
  /// GEMM's bulk-copy form, else 0; -1 not asked yet (decodeBulkShared).
  std::atomic<int64_t> decodeBulkShared{-1};
  /// Whether the device can launch the decode GEMM as a programmatic
  /// dependent: -1 not asked yet, then 0 or 1 (decodeDependence).
  std::atomic<int> decodeProgrammatic{-1};
  size_t workspaceBytes = 0;
  HeuristicCache<AlgoKey, AlgoEntry, AlgoKeyHash> algos{
      kMaxAlgoEntriesPerDevice};
  /// FP8 autotuning's choices, by tuneBucketOf key: one timed problem
  /// stands for every problem of its bucket.
  HeuristicCache<AlgoKey, AlgoEntry, AlgoKeyHash> tunedBuckets{
      kMaxAlgoEntriesPerDevice};
};

/// The process-wide state of `device`, created on first use.
DeviceState &deviceState(int device) {
  static std::mutex mutex;
  // Leaked on purpose: destroying handles from static destructors races with
  // the CUDA runtime's own teardown.
  static auto *states = new std::unordered_map<int, DeviceState *>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = states->find(device);
  if (it != states->end())
    return *it->second;
  auto state = std::make_unique<DeviceState>();
  checkCuda(cudaDeviceGetAttribute(&state->computeMajor,
                                   cudaDevAttrComputeCapabilityMajor, device),
            "cudaDeviceGetAttribute(ComputeCapabilityMajor)");
  checkCuda(cudaDeviceGetAttribute(&state->computeMinor,
                                   cudaDevAttrComputeCapabilityMinor, device),
            "cudaDeviceGetAttribute(ComputeCapabilityMinor)");
  checkCuda(cudaDeviceGetAttribute(&state->multiProcessors,
                                   cudaDevAttrMultiProcessorCount, device),
            "cudaDeviceGetAttribute(MultiProcessorCount)");
  // TransformerEngine's sizes: Hopper kernels want a larger workspace.
  state->workspaceBytes =
      state->computeMajor >= 9 ? size_t(32) << 20 : size_t(4) << 20;
  checkCublas(cublasLtCreate(&state->handle), "cublasLtCreate");
  DeviceState *raw = state.release();
  (*states)[device] = raw;
  return *raw;
}

} // namespace

/// Per-context CUDA state: the device state and the workspace of the
/// context's stream: owned (one per stream used, in `workspaces`) or lent by
/// the host for the next calls (`borrowed`).
struct slinrt::CudaState {
  DeviceState *device = nullptr;
  bool borrowed = false;
  std::unordered_map<void *, void *> workspaces; ///< owned ones, by stream
  void *workspace = nullptr; ///< the workspace of the context's stream
  size_t workspaceBytes = 0; ///< its size
};

namespace {

/// Returns the workspace of `stream`, allocating it on first use. cudaMalloc,
/// not the stream-ordered allocator: the workspace outlives any one stream's
/// work and must exist before a graph capture starts.
void *workspaceFor(CudaState &state, void *stream) {
  auto it = state.workspaces.find(stream);
  if (it != state.workspaces.end())
    return it->second;
  void *ws = nullptr;
  checkCuda(cudaMalloc(&ws, state.device->workspaceBytes),
            "cudaMalloc(cuBLASLt workspace)");
  try {
    state.workspaces.emplace(stream, ws);
  } catch (...) {
    (void)cudaFree(ws);
    throw;
  }
  return ws;
}

//===----------------------------------------------------------------------===//
// GEMM plans
//===----------------------------------------------------------------------===//

/// The cuBLASLt view of a GemmProblem or a ScaledGemmProblem (see the file
/// comment for the swap): D' [m, n] = op(A') op(B') column-major, with m = N
/// and n = M of our row-major D.
struct LtProblem {
  slinrt_dtype dtype;  ///< of D (and C, and a fused bias)
  cudaDataType_t type; ///< cudaTypeOf(dtype)
  cudaDataType_t aType, bType;
  cublasComputeType_t computeType;
  cudaDataType_t scaleType;
  cublasOperation_t transa, transb;
  const void *a, *b; ///< cuBLASLt's A (our B) and B (our A)
  void *d;
  int64_t lda, ldb, ldd;
  /// Stored (column-major) sizes of A' and B', and m, n, k.
  int64_t aRows, aCols, bRows, bCols, m, n, k;
  /// Scaled GEMMs: CUBLASLT_MATMUL_MATRIX_SCALE_* of both sides (-1: none),
  /// cuBLASLt's A and B scale pointers (our scaleB and scaleA), fast accum.
  int32_t scaleMode = -1;
  bool fastAccum = false;
  const void *aScale = nullptr, *bScale = nullptr;
};

std::string describe(const LtProblem &lt) {
  return concat(
      "M=", lt.n, " N=", lt.m, " K=", lt.k, " dtype=", dtypeName(lt.dtype),
      " transa=", lt.transa == CUBLAS_OP_T ? "T" : "N",
      " transb=", lt.transb == CUBLAS_OP_T ? "T" : "N", " lda=", lt.lda,
      " ldb=", lt.ldb, " ldd=", lt.ldd, " alignments A/B/D=", alignmentOf(lt.a),
      "/", alignmentOf(lt.b), "/", alignmentOf(lt.d));
}

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

//===----------------------------------------------------------------------===//
// FP8 decode autotuning
//===----------------------------------------------------------------------===//

/// The M bound of FP8 autotuning: SPLITLINEAR_FP8_AUTOTUNE_MAX_M, read once;
/// 0 (unset, empty, not a positive number) turns it off. Off by default: on
/// the H200 (docs/Performance.md, 2026-12-04) heuristic #0 was the fastest
/// of ~100 candidates at M = 2048, and tuning chose slower algorithms at
/// M = 1024 (timed with cold weights, run with hot ones).
int64_t fp8AutotuneMaxM() {
  static const int64_t maxM = [] {
    const char *env = std::getenv("SPLITLINEAR_FP8_AUTOTUNE_MAX_M");
    if (!env || !*env)
      return int64_t(0);
    char *end = nullptr;
    long long v = std::strtoll(env, &end, 10);
    return *end == '\0' && v > 0 ? int64_t(v) : int64_t(0);
  }();
  return maxM;
}

/// The M bound of the decode GEMM (DecodeGemmKernels.cu):
/// SPLITLINEAR_FP8_DECODE_MAX_M, read once; unset or empty: 16; 0 or
/// anything but a non-negative number turns it off; at most
/// kDecodeGemmMaxRows.
int64_t fp8DecodeMaxM() {
  static const int64_t maxM = [] {
    const char *env = std::getenv("SPLITLINEAR_FP8_DECODE_MAX_M");
    if (!env || !*env)
      return int64_t(16);
    char *end = nullptr;
    long long v = std::strtoll(env, &end, 10);
    if (*end != '\0' || v <= 0)
      return int64_t(0);
    return std::min<int64_t>(v, cuda::kDecodeGemmMaxRows);
  }();
  return maxM;
}

/// The decode GEMM's rows of W per CTA: SPLITLINEAR_FP8_DECODE_TILE_N (16 or
/// 32; a measuring aid), else decodeGemmTileN's choice for N.
int decodeTileN(int64_t N, int multiProcessors) {
  static const int forced = [] {
    const char *env = std::getenv("SPLITLINEAR_FP8_DECODE_TILE_N");
    if (!env)
      return 0;
    std::string v(env);
    return v == "16" ? 16 : v == "32" ? 32 : 0;
  }();
  return forced ? forced : cuda::decodeGemmTileN(N, multiProcessors);
}

/// Whether `dev` (the current device) runs the decode GEMM, asked once.
bool decodeGemmUsable(DeviceState &dev) {
  int known = dev.decodeGemm.load(std::memory_order_acquire);
  if (known < 0) {
    known = cuda::decodeGemmAvailable() ? 1 : 0;
    dev.decodeGemm.store(known, std::memory_order_release);
  }
  return known == 1;
}

/// Which forms of the decode GEMM on `dev` (the current device) launch as
/// programmatic dependents of the kernel before them (DecodeDependence),
/// asked once: both forms where the device runs the kernels' sm90 image,
/// whose griddepcontrol instructions the launch needs (an older image would
/// read x before its producer finished). SPLITLINEAR_FP8_DECODE_PDL: 0
/// none, "bulk" the bulk form only, anything else both forms
/// (docs/UserGuide.md gives the trade-off measured).
cuda::DecodeDependence decodeDependence(DeviceState &dev) {
  using cuda::DecodeDependence;
  static const DecodeDependence wanted = [] {
    const char *env = std::getenv("SPLITLINEAR_FP8_DECODE_PDL");
    std::string v = env ? env : "";
    return v == "0"      ? DecodeDependence::None
           : v == "bulk" ? DecodeDependence::BulkForm
                         : DecodeDependence::AllForms;
  }();
  if (wanted == DecodeDependence::None)
    return wanted;
  int known = dev.decodeProgrammatic.load(std::memory_order_acquire);
  if (known < 0) {
    known = dev.computeMajor >= 9 && cuda::decodeGemmBulkAvailable() ? 1 : 0;
    dev.decodeProgrammatic.store(known, std::memory_order_release);
  }
  return known == 1 ? wanted : DecodeDependence::None;
}

/// The device's opt-in shared memory per block if `dev` (the current
/// device) runs the decode GEMM's bulk-copy form, else 0; asked once.
/// SPLITLINEAR_FP8_DECODE_BULK=0 turns the form off (a measuring aid, and
/// how tests reach the register form at M <= 16).
int64_t decodeBulkShared(DeviceState &dev, int device) {
  static const bool off = [] {
    const char *env = std::getenv("SPLITLINEAR_FP8_DECODE_BULK");
    return env && std::string(env) == "0";
  }();
  if (off)
    return 0;
  int64_t known = dev.decodeBulkShared.load(std::memory_order_acquire);
  if (known < 0) {
    int optin = 0;
    known = 0;
    if (cuda::decodeGemmBulkAvailable()) {
      if (cudaDeviceGetAttribute(&optin,
                                 cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                 device) == cudaSuccess)
        known = optin;
      else
        (void)cudaGetLastError(); // This query's own error only.
    }
    dev.decodeBulkShared.store(known, std::memory_order_release);
  }
  return known;
}

/// Why tuning exists: at decode shapes cuBLASLt's heuristic #0 for FP8 is not
/// the fastest. The probe (H200, cuBLASLt 13.1, M = 16) found that
/// outer-vector scaling gets one answer only (tile 128x128, 48 CTAs for
/// N = 6144 on 132 SMs, no split-K: AlgoCheck refuses every SPLITK_NUM), and
/// that tensorwise answers differ by up to 15 %; heuristic #0 forced to a
/// narrow tile (CUBLASLT_MATMUL_TILE_128x16, 64x16, ...) runs outer-vector
/// at 0.55-0.65x the bf16 time (0.0116 vs 0.0164 ms for q/k/v, 0.0202 vs
/// 0.039 ms for down). Through this runtime (bench/fp8_autotune_check.cu,
/// M = 16, outer-vector, fast accumulation): q/k/v 0.0162 -> 0.0131 ms,
/// gate/up 0.0383 -> 0.0332, down 0.0389 -> 0.0287, for about 0.3 s of
/// tuning per new problem. Graph capture skips tuning (heuristic #0).
/// Candidates: up to kTuneHeuristics heuristic answers, split-K copies of
/// them, and heuristic #0 forced to each tile it lists
/// (CUBLASLT_ALGO_CAP_TILE_IDS) that cublasLtMatmulAlgoCheck accepts.
constexpr int kTuneHeuristics = 8;
constexpr int kTuneWarmup = 3, kTuneIters = 10;
constexpr size_t kTuneMaxCandidates = 192;

/// Everything tuning runs a candidate on: the operands of the call that
/// built the plan (beta = 0, so D is only overwritten; the call itself then
/// writes the real result) and the context's stream and workspace; `flush`
/// (tuneScaledAlgorithm's, may be null) is overwritten before every timed
/// call so that the weights come from HBM as in a decode step, not from L2.
struct TuneOperands {
  const void *a, *b;
  void *d;
  void *workspace;
  size_t workspaceBytes;
  cudaStream_t stream;
  void *flush = nullptr;
  size_t flushBytes = 0;
};

/// Adds the configurations worth timing of `base` to `out`: split-K copies
/// (fp32 partials only, as the heuristic preference allows) and, for
/// `withTiles`, the same algorithm with each other listed tile. `base` is a
/// copy: it may be an element of `out`, which grows.
void addTuneVariants(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                     cublasLtMatrixLayout_t aLayout,
                     cublasLtMatrixLayout_t bLayout,
                     cublasLtMatrixLayout_t dLayout, uint64_t workspaceLimit,
                     int64_t k, cublasLtMatmulAlgo_t base,
                     bool withTiles, std::vector<cublasLtMatmulAlgo_t> &out) {
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
              &algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split,
              sizeof(split)) == CUBLAS_STATUS_SUCCESS &&
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
  if (tiles.empty() ||
      cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_TILE_IDS,
                                        tiles.data(), bytes,
                                        &written) != CUBLAS_STATUS_SUCCESS)
    return;
  for (uint32_t tile : tiles) {
    if (tile == current || tile == CUBLASLT_MATMUL_TILE_UNDEFINED)
      continue;
    cublasLtMatmulAlgo_t algo = base;
    if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID,
                                             &tile, sizeof(tile)) ==
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
                          ops.workspace, ops.workspaceBytes, ops.stream) ==
           CUBLAS_STATUS_SUCCESS;
  };
  for (int i = 0; i < warmup; ++i)
    if (!run())
      return -1;
  for (int i = 0; i < iters; ++i) {
    if (ops.flush &&
        cudaMemsetAsync(ops.flush, i, ops.flushBytes, ops.stream) != cudaSuccess)
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
  if (cublasLtMatmulAlgoGetHeuristic(dev.handle, desc, aLayout, bLayout,
                                     dLayout, dLayout, pref, kTuneHeuristics,
                                     results,
                                     &returned) != CUBLAS_STATUS_SUCCESS)
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
      l2Bytes > 0 &&
      cudaMalloc(&ops.flush, 2 * size_t(l2Bytes)) == cudaSuccess)
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
    float ms = timeAlgorithm(dev.handle, desc, aLayout, bLayout, dLayout,
                             candidates[i], ops, events, kTuneWarmup,
                             kTuneIters);
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

/// Autotuning for `key` (tuneScaledAlgorithm), once per tuneBucketOf bucket:
/// a later problem of a tuned bucket takes the bucket's algorithm when
/// cublasLtMatmulAlgoCheck accepts it for its own layouts, else `first`,
/// and times nothing.
cublasLtMatmulAlgo_t
tunedAlgorithm(slinrt_context &ctx, DeviceState &dev, const AlgoKey &key,
               cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t aLayout,
               cublasLtMatrixLayout_t bLayout, cublasLtMatrixLayout_t dLayout,
               cublasLtMatmulPreference_t pref,
               const cublasLtMatmulAlgo_t &first, const TuneOperands &ops) {
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

/// Finds (in the device's cache or by a heuristic query) an algorithm for
/// `desc` and the layouts, as configured for `key`. Returns the entry, found
/// or not (shared: an evicted entry lives on in the plans holding it). A
/// failed query throws (ERROR_OUT_OF_MEMORY for ALLOC_FAILED, else
/// ERROR_CUBLAS) and caches nothing, so the next call asks again. `tune`
/// (FP8 GEMMs within fp8AutotuneMaxM only) replaces heuristic #0 by
/// tunedAlgorithm's choice before it is cached.
std::shared_ptr<const AlgoEntry>
findAlgorithm(slinrt_context &ctx, DeviceState &dev, const AlgoKey &key,
              cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t aLayout,
              cublasLtMatrixLayout_t bLayout, cublasLtMatrixLayout_t dLayout,
              const TuneOperands *tune = nullptr) {
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
          cublasLtGetStatusName(status), ": ",
          cublasLtGetStatusString(status));
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

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

namespace {

/// One row-major GEMM operand `rows x cols` (leading dimension `ld`), used
/// transposed when `trans`.
struct RowMajorOperand {
  RowMajorOperand(const void *data, int64_t rows, int64_t cols, int64_t ld,
                  bool trans)
      : data(data), rows(rows), cols(cols), ld(ld), trans(trans) {}
  /// Implicit: a GemmProblem operand is one.
  RowMajorOperand(const StoredMatrix &m)
      : RowMajorOperand(m.data, m.rows, m.cols, m.ld, m.trans) {}

  const void *data;
  int64_t rows, cols, ld;
  bool trans;
};

/// Poses row-major D[M, N] = op(A)[M, K] op(B)[K, N] (leading dimension
/// `ldd`) to cuBLASLt, which is column-major, as D^T = op(B)^T op(A)^T: a
/// row-major matrix is its column-major transpose, so cuBLASLt's A is our B
/// (stored `cols x rows`), its B our A, and m = N, n = M.
void setSwappedOperands(LtProblem &lt, const RowMajorOperand &a,
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

/// Runs `lt` on the context's stream with the fused epilogue `fused`
/// (BIAS or BGRADB, on `bias`) when an algorithm takes it, else unfused: a
/// BIAS is then pre-broadcast into D and accumulated with beta = 1, so the
/// result is rounded once as in the fused epilogue; the caller does the rest
/// of an unfused BGRADB. `accumulate`: beta = 1 (D += product). Returns
/// whether the epilogue was fused (counts epilogue_fallbacks otherwise).
bool runLt(slinrt_context &ctx, const LtProblem &lt, cublasLtEpilogue_t fused,
           void *bias, bool accumulate) {
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

} // namespace

void cuda::gemm(slinrt_context &ctx, const GemmProblem &p) {
  slinrt_dtype dtype = p.dtype;
  if (p.M == 0)
    return;
  DeviceGuard guard(ctx.device);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  bool biasGrad = p.epilogue == SLINRT_EPILOGUE_BIAS_GRAD;
  bool withBias = p.epilogue == SLINRT_EPILOGUE_BIAS;
  bool accumulate = p.epilogue == SLINRT_EPILOGUE_ACCUMULATE;

  // Row sums of op(A) by a kernel: element (m, k) of op(A) in storage.
  auto rowSums = [&] {
    checkCuda(launchRowSums(dtype, p.A.data, p.A.opRowStride(),
                            p.A.opColStride(), p.M, p.K, p.bias, stream),
              "row-sum kernel launch");
  };
  // Empty GEMMs: cuBLASLt does not take them; D gets zeros (plus bias), or
  // stays as it is for ACCUMULATE.
  if (p.N == 0 || p.K == 0) {
    if (accumulate)
      return;
    if (biasGrad)
      rowSums();
    checkCuda(launchBroadcastRows(dtype, p.D, p.ldd, p.M, p.N,
                                  withBias ? p.bias : nullptr, stream),
              "broadcast kernel launch");
    return;
  }

  LtProblem lt;
  lt.dtype = dtype;
  lt.type = lt.aType = lt.bType = cudaTypeOf(dtype);
  lt.scaleType = dtype == SLINRT_F64 ? CUDA_R_64F : CUDA_R_32F;
  lt.computeType = dtype == SLINRT_F64 ? CUBLAS_COMPUTE_64F
                   : (dtype == SLINRT_F32 && ctx.allowTF32)
                       ? CUBLAS_COMPUTE_32F_FAST_TF32
                       : CUBLAS_COMPUTE_32F;
  setSwappedOperands(lt, p.A, p.B, p.D, p.ldd);

  // Fused epilogues in the swapped (column-major, D^T) problem:
  //  * BIAS: cuBLASLt adds a vector of length m' (rows of its D) to every
  //    column; m' = N and its columns are our rows, so this is bias[N]
  //    broadcast over the rows of our D.
  //  * BIAS_GRAD wants bias[m] = sum_k op(A)[m, k]. Our op(A)^T is cuBLASLt's
  //    op(B) (k' x n' = K x M), and BGRADB reduces op(B) over k into a vector
  //    of length n' (columns of its D) = M. BGRADA would reduce our op(B)
  //    instead and give a length-N vector: wrong operand.
  cublasLtEpilogue_t fused = withBias   ? CUBLASLT_EPILOGUE_BIAS
                             : biasGrad ? CUBLASLT_EPILOGUE_BGRADB
                                        : CUBLASLT_EPILOGUE_DEFAULT;
  bool usedFused = runLt(ctx, lt, fused, p.bias, accumulate);
  if (biasGrad && !usedFused)
    rowSums();
}

//===----------------------------------------------------------------------===//
// Scaled (FP8) GEMM
//===----------------------------------------------------------------------===//

void cuda::scaledGemm(slinrt_context &ctx, const ScaledGemmProblem &p) {
  DeviceState &dev = *ctx.cuda->device;
  if (dev.computeMajor * 10 + dev.computeMinor < 89)
    raise(SLINRT_ERROR_UNSUPPORTED,
          "FP8 needs compute capability 8.9 or newer, device has ",
          dev.computeMajor, ".", dev.computeMinor);
  if (p.M == 0 || p.N == 0)
    return;
  DeviceGuard guard(ctx.device);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  void *bias = const_cast<char *>(p.bias);
  if (p.K == 0) { // cuBLASLt does not take k = 0
    checkCuda(
        launchBroadcastRows(p.outType, p.D, p.ldd, p.M, p.N, bias, stream),
        "broadcast kernel launch");
    return;
  }
  // Decode shapes: the hand-written kernel, which keeps every SM streaming W
  // (cuBLASLt has one 128x128 tile and no split-K for outer-vector FP8
  // there). Fast accumulation changes nothing in it: it always adds each
  // MMA's result in fp32.
  if (p.M <= fp8DecodeMaxM() && p.aType == SLINRT_F8E4M3FN &&
      p.bType == SLINRT_F8E4M3FN && decodeGemmUsable(dev)) {
    cuda::DecodeGemmArgs args;
    args.outType = p.outType;
    args.M = p.M, args.N = p.N, args.K = p.K;
    args.x = p.A, args.ldx = p.lda;
    args.w = p.B, args.ldw = p.ldb;
    args.y = p.D, args.ldy = p.ldd;
    args.sx = p.scaleA, args.sw = p.scaleB;
    args.outerVector = p.scaling == SLINRT_SCALING_OUTER_VECTOR;
    args.bias = bias;
    args.tileN = decodeTileN(p.N, dev.multiProcessors);
    args.multiProcessors = dev.multiProcessors;
    args.maxSharedBytes = decodeBulkShared(dev, ctx.device);
    args.device = ctx.device;
    args.dependence = decodeDependence(dev);
    checkCuda(cuda::launchDecodeGemm(args, stream), "decode GEMM launch");
    ctx.counters.decodeGemms.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // D = A B^T: op(B) is B [N, K] transposed (cuBLASLt's A, used T: TN), and
  // the scales swap with the operands (its A scale has m' = N entries, ours
  // is scaleB).
  LtProblem lt;
  lt.dtype = p.outType;
  lt.type = cudaTypeOf(p.outType);
  lt.aType = cudaTypeOf(p.bType);
  lt.bType = cudaTypeOf(p.aType);
  lt.computeType = CUBLAS_COMPUTE_32F;
  lt.scaleType = CUDA_R_32F;
  setSwappedOperands(lt, {p.A, p.M, p.K, p.lda, /*trans=*/false},
                     {p.B, p.N, p.K, p.ldb, /*trans=*/true}, p.D, p.ldd);
  lt.scaleMode = p.scaling == SLINRT_SCALING_OUTER_VECTOR
                     ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F
                     : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  lt.fastAccum = p.fastAccum;
  lt.aScale = p.scaleB;
  lt.bScale = p.scaleA;
  // The fused bias of an FP8 GEMM has D's type for bf16 / fp16 output; an
  // fp32 D takes a bf16 bias only, so an fp32 bias is added by a kernel after
  // the GEMM: round(round(sA sB acc) + bias) in fp32, as the CPU target does.
  if (bias && p.outType == SLINRT_F32) {
    ctx.counters.epilogueFallbacks.fetch_add(1, std::memory_order_relaxed);
    runLt(ctx, lt, CUBLASLT_EPILOGUE_DEFAULT, nullptr, /*accumulate=*/false);
    checkCuda(launchAddRowsF32(reinterpret_cast<float *>(p.D), p.ldd, p.M, p.N,
                               reinterpret_cast<const float *>(bias), stream),
              "bias kernel launch");
    return;
  }
  runLt(ctx, lt, bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT,
        bias, /*accumulate=*/false);
}

//===----------------------------------------------------------------------===//
// FP8 quantization
//===----------------------------------------------------------------------===//

namespace {

cuda::Fp8Part partOf(const QuantMatrix &m, slinrt_dtype src,
                     int64_t rowOffset) {
  return cuda::Fp8Part{m.data,
                       m.rows,
                       m.cols,
                       m.ld,
                       rowOffset,
                       cuda::vectorLoadsOk(m.data, m.cols, m.ld) &&
                           (m.ld * dtypeSize(src)) % 16 == 0};
}

std::vector<cuda::Fp8Part> partsOf(const PartsProblem &p) {
  std::vector<cuda::Fp8Part> parts;
  parts.reserve(p.parts.size());
  for (size_t i = 0; i < p.parts.size(); ++i)
    parts.push_back(partOf(p.parts[i], p.src, p.rowOffset[i]));
  return parts;
}

int partCount(const PartsProblem &p) {
  if (p.parts.size() > size_t(INT_MAX))
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "too many parts: ", p.parts.size());
  return int(p.parts.size());
}

} // namespace

void cuda::amaxParts(slinrt_context &ctx, const PartsProblem &p) {
  if (p.parts.empty())
    return;
  DeviceGuard guard(ctx.device);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  checkCuda(cudaMemsetAsync(p.amax, 0, p.parts.size() * sizeof(float), stream),
            "cudaMemsetAsync(amax)");
  std::vector<cuda::Fp8Part> parts = partsOf(p);
  checkCuda(launchAmaxParts(p.src, parts.data(), partCount(p), nullptr, p.amax,
                            stream),
            "amax kernel launch");
}

void cuda::castParts(slinrt_context &ctx, const PartsProblem &p) {
  if (p.parts.empty())
    return;
  DeviceGuard guard(ctx.device);
  std::vector<cuda::Fp8Part> parts = partsOf(p);
  checkCuda(launchCastParts(
                p.src, p.dst, parts.data(), partCount(p), p.cols, p.totalRows,
                nullptr, p.amaxIn, static_cast<uint8_t *>(p.out),
                static_cast<uint8_t *>(p.outT), p.scaleInv, p.rowScaleInv,
                static_cast<cudaStream_t>(ctx.stream)),
            "FP8 cast kernel launch");
}

void cuda::quantize(slinrt_context &ctx, const QuantizeProblem &p) {
  DeviceGuard guard(ctx.device);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  Fp8Part x = partOf(p.x, p.src, 0);
  uint8_t *out = static_cast<uint8_t *>(p.out);
  uint8_t *outT = static_cast<uint8_t *>(p.outT);
  if (p.dual && p.axis == SLINRT_QUANT_ROWS) {
    checkCuda(launchQuantizeDualRows(p.src, p.dst, x, p.colScale, p.amax,
                                     p.scaleInv, out, p.scaleInvT, outT,
                                     stream),
              "FP8 rows/cols dual quantization launch");
    return;
  }
  if (p.dual) {
    checkCuda(cudaMemsetAsync(p.amax, 0, 2 * sizeof(float), stream),
              "cudaMemsetAsync(amax)");
    checkCuda(launchAmaxParts(p.src, &x, 1, p.colScale, p.amax, stream,
                              p.amax + 1),
              "amax kernel launch");
    checkCuda(launchCastDual(p.src, p.dst, x, p.colScale, p.amax, out,
                             p.scaleInv, outT, p.scaleInvT, stream),
              "FP8 dual cast kernel launch");
    return;
  }
  switch (p.axis) {
  case SLINRT_QUANT_TENSOR:
    checkCuda(cudaMemsetAsync(p.amax, 0, sizeof(float), stream),
              "cudaMemsetAsync(amax)");
    checkCuda(launchAmaxParts(p.src, &x, 1, p.colScale, p.amax, stream),
              "amax kernel launch");
    checkCuda(launchCastParts(p.src, p.dst, &x, 1, x.cols, x.rows, p.colScale,
                              p.amax, out, outT, p.scaleInv, nullptr, stream),
              "FP8 cast kernel launch");
    return;
  case SLINRT_QUANT_ROWS:
    checkCuda(launchQuantizeRows(p.src, p.dst, x, p.colScale, p.amax,
                                 p.scaleInv, out, outT, stream),
              "FP8 row quantization kernel launch");
    return;
  case SLINRT_QUANT_COLS:
    checkCuda(launchQuantizeCols(p.src, p.dst, x, p.colScale, p.amax,
                                 p.scaleInv, out, outT, stream),
              "FP8 column quantization kernel launch");
    return;
  }
}

//===----------------------------------------------------------------------===//
// Copies
//===----------------------------------------------------------------------===//

void cuda::copy(slinrt_context &ctx, slinrt_dtype srcType, slinrt_dtype dstType,
                const View2D &src, const View2D &dst) {
  DeviceGuard guard(ctx.device);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  int64_t elementSize = dtypeSize(srcType);
  // cudaMemcpy2DAsync takes same-type copies with contiguous rows and
  // non-negative pitches no smaller than a row (pitch is free for one row).
  auto pitchOf = [&](const View2D &v) -> int64_t {
    bool contiguous = v.cols <= 1 || v.colStride == 1;
    if (!contiguous)
      return -1;
    if (v.rows <= 1)
      return v.cols * elementSize;
    return v.rowStride >= v.cols ? v.rowStride * elementSize : -1;
  };
  int64_t srcPitch = pitchOf(src), dstPitch = pitchOf(dst);
  if (srcType == dstType && srcPitch >= 0 && dstPitch >= 0 &&
      srcPitch <= INT_MAX && dstPitch <= INT_MAX) {
    checkCuda(cudaMemcpy2DAsync(dst.data, size_t(dstPitch), src.data,
                                size_t(srcPitch),
                                size_t(src.cols * elementSize),
                                size_t(src.rows), cudaMemcpyDefault, stream),
              "cudaMemcpy2DAsync");
    return;
  }
  checkCuda(launchConvertCopy(srcType, dstType, src.data, src.rowStride,
                              src.colStride, dst.data, dst.rowStride,
                              dst.colStride, src.rows, src.cols, stream),
            "conversion copy kernel launch");
}

//===----------------------------------------------------------------------===//
// Context lifecycle and allocation
//===----------------------------------------------------------------------===//

void cuda::initContext(slinrt_context &ctx, int device, void *stream,
                       bool borrowed) {
  int count = 0;
  checkCuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (device < 0 || device >= count)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "CUDA device ", device,
          " does not exist (", count, " visible)");
  onlyOneDevice.store(count == 1, std::memory_order_relaxed);
  DeviceGuard guard(device);
  auto state = std::make_unique<CudaState>();
  state->device = &deviceState(device);
  // Asked here rather than at the first decode GEMM, which may be inside a
  // graph capture.
  (void)decodeGemmUsable(*state->device);
  if (int64_t bytes = decodeBulkShared(*state->device, device))
    (void)cuda::prepareDecodeGemmBulk(device, bytes);
  state->borrowed = borrowed;
  if (!borrowed) {
    state->workspace = workspaceFor(*state, stream);
    state->workspaceBytes = state->device->workspaceBytes;
  }
  ctx.target = Target::CUDA;
  ctx.device = device;
  ctx.stream = stream;
  ctx.cuda = state.release();
}

void cuda::destroyState(slinrt_context &ctx) noexcept {
  if (!ctx.cuda)
    return;
  try {
    DeviceGuard guard(ctx.device);
    for (auto &entry : ctx.cuda->workspaces)
      (void)cudaFree(entry.second); // synchronizes with pending GEMMs
  } catch (...) {
  }
  delete ctx.cuda;
  ctx.cuda = nullptr;
}

void cuda::setStream(slinrt_context &ctx, void *stream) {
  CudaState &state = *ctx.cuda;
  if (state.borrowed) {
    // A lent workspace is ordered on the stream it was lent for.
    if (stream != ctx.stream) {
      state.workspace = nullptr;
      state.workspaceBytes = 0;
    }
  } else {
    DeviceGuard guard(ctx.device);
    state.workspace = workspaceFor(state, stream);
  }
  ctx.stream = stream;
}

void cuda::setWorkspace(slinrt_context &ctx, void *workspace, size_t bytes) {
  CudaState &state = *ctx.cuda;
  if (!state.borrowed)
    raise(SLINRT_ERROR_INVALID_ARGUMENT,
          "slinrt_context_set_workspace: the context owns its workspaces "
          "(create it with slinrt_context_create_cuda_borrowed)");
  state.workspace = bytes ? workspace : nullptr;
  state.workspaceBytes = workspace ? bytes : 0;
}

void *cuda::defaultAlloc(void *, size_t bytes, int device, void *stream) {
  int current = device; // see onlyOneDevice
  if (!onlyOneDevice.load(std::memory_order_relaxed) &&
      cudaGetDevice(&current) != cudaSuccess)
    return nullptr;
  if (current != device && cudaSetDevice(device) != cudaSuccess)
    return nullptr;
  void *ptr = nullptr;
  if (cudaMallocAsync(&ptr, bytes, static_cast<cudaStream_t>(stream)) !=
      cudaSuccess) {
    (void)cudaGetLastError(); // an OOM must not poison later launch checks
    ptr = nullptr;
  }
  if (current != device)
    (void)cudaSetDevice(current);
  return ptr;
}

void cuda::defaultFree(void *, void *ptr, int device, void *stream) {
  int current = device; // see onlyOneDevice
  if (!onlyOneDevice.load(std::memory_order_relaxed) &&
      cudaGetDevice(&current) != cudaSuccess)
    return;
  if (current != device)
    (void)cudaSetDevice(device);
  (void)cudaFreeAsync(ptr, static_cast<cudaStream_t>(stream));
  if (current != device)
    (void)cudaSetDevice(current);
}

//===- Device.h - Per-device and per-context CUDA state ---------*- C++ -*-===//
//
// The state the CUDA backend keeps: per device (created lazily and kept for
// the process), one cuBLASLt handle, the device's attributes, and an
// algorithm cache (heuristic queries cost host time and NVIDIA recommends one
// query per problem; the cache keeps algorithms and definite "no algorithm"
// answers, never transient failures, and is bounded: HeuristicCache.h); per
// context, the workspace of its stream. A context either owns a workspace per
// stream it has used, allocated at creation / set_stream and never during a
// GEMM, or borrows one from its host for each call (PyTorch's, from the
// caching allocator, which is CUDA-graph aware); either way GEMMs can be
// captured into CUDA graphs. Device.cpp implements the context lifecycle and
// the default allocator.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_CUDA_DEVICE_H
#define SPLITLINEAR_LIB_RUNTIME_CUDA_DEVICE_H

#include "HeuristicCache.h"
#include "RuntimeImpl.h"

#include <cublasLt.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace slinrt {
namespace cuda {

//===----------------------------------------------------------------------===//
// The algorithm cache
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

/// Hashes every field of an AlgoKey.
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

//===----------------------------------------------------------------------===//
// Per-device state
//===----------------------------------------------------------------------===//

/// What the backend keeps per device for the life of the process.
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
DeviceState &deviceState(int device);

//===----------------------------------------------------------------------===//
// Decode GEMM capability (ScaledGemm.cpp)
//===----------------------------------------------------------------------===//

/// Whether `dev` (the current device) runs the decode GEMM, asked once.
bool decodeGemmUsable(DeviceState &dev);

/// The device's opt-in shared memory per block if `dev` (the current
/// device) runs the decode GEMM's bulk-copy form, else 0; asked once.
/// SPLITLINEAR_FP8_DECODE_BULK=0 turns the form off.
int64_t decodeBulkShared(DeviceState &dev, int device);

} // namespace cuda

/// Per-context CUDA state: the device state and the workspace of the
/// context's stream: owned (one per stream used, in `workspaces`) or lent by
/// the host for the next calls (`borrowed`).
struct CudaState {
  cuda::DeviceState *device = nullptr;
  bool borrowed = false;
  std::unordered_map<void *, void *> workspaces; ///< owned ones, by stream
  void *workspace = nullptr; ///< the workspace of the context's stream
  size_t workspaceBytes = 0; ///< its size
};

namespace cuda {

/// Returns the workspace of `stream`, allocating it on first use. cudaMalloc,
/// not the stream-ordered allocator: the workspace outlives any one stream's
/// work and must exist before a graph capture starts.
void *workspaceFor(CudaState &state, void *stream);

} // namespace cuda
} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_CUDA_DEVICE_H

//===- BulkForm.cuh - Decode GEMM, bulk-copy form ---------------*- C++ -*-===//
//
// The bulk-copy (TMA) form of the decode GEMM, sm90. The register form
// streams W through the load/store units: every lane keeps its own 16-byte
// loads in flight. On the H200 it reaches about 3.3 TB/s of the HBM's 4.8
// (bf16 cuBLAS streams 4.2), because an SM can keep only so many such loads
// outstanding. This form hands the stream to the SM's bulk copy engine
// (cp.async.bulk, "TMA" without a tensor map): one producer thread per CTA
// fills a ring of shared-memory stages, each 16 (or 32) rows of W by kChunk
// bytes of k, and mbarriers with transaction counts say when a stage has
// landed and when the consumer warps are done with it. x (M <= 16 rows) is
// copied once per CTA. The CTAs are persistent (at most one per SM and
// configuration), so the ring keeps filling across a CTA's tiles while its
// consumers reduce and store the previous tile. The MMAs, their k
// permutation and the fp32 accumulation are those of the register form.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_DECODE_GEMM_BULKFORM_CUH
#define SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_DECODE_GEMM_BULKFORM_CUH

#include "cuda/kernels/decode_gemm/Common.cuh"

#include <atomic>

namespace slinrt {
namespace cuda {

/// One instance of the bulk form: kRows (16 or 32) rows of W per tile,
/// kChunk bytes of k per stage (a multiple of 64 kWarps), kStages stages,
/// kWarps consumer warps (plus one producer warp), kCtasPerSM persistent CTAs
/// per SM, whether the copies of W carry an L2 evict-first hint, whether x
/// is copied to shared memory once per CTA (else the consumers read it from
/// global memory, through L1, so that no copy of x delays the first stage),
/// and how many producer lanes issue the per-row copies of a stage.
// The sm80 image, whose kernel is empty, references none of its members.
#pragma nv_diag_suppress 177
template <int Rows, int Chunk, int Stages, int Warps, int CtasPerSM,
          bool EvictFirst, bool XShared = true, int IssueLanes = 1>
struct BulkConfig {
  static constexpr int kRows = Rows, kChunk = Chunk, kStages = Stages,
                       kWarps = Warps, kCtasPerSM = CtasPerSM,
                       kThreads = 32 * (Warps + 1), kIssueLanes = IssueLanes;
  static constexpr bool kEvictFirst = EvictFirst, kXShared = XShared;
  static_assert(Rows == 16 || Rows == 32, "tiles of 16 or 32 rows");
  static_assert(IssueLanes >= 1 && IssueLanes <= 32, "lanes of one warp");
  static_assert(Chunk % (kStepK * Warps) == 0, "whole k-steps per warp");
  /// Shared-memory pitch of a W row in a stage: 64 bytes past a multiple of
  /// 128, so the two rows that one quarter-warp's 16-byte loads touch fall
  /// in disjoint banks.
  static constexpr int kWPitch = Chunk + 64;
  static constexpr int64_t kBarrierBytes = 256;
  static constexpr int64_t kPartialBytes =
      int64_t(2) * Warps * 16 * Rows * sizeof(float);
  static constexpr int64_t kRingBytes = int64_t(Stages) * Rows * kWPitch;
  /// The pitch of an x row in shared memory (same bank argument).
  __host__ __device__ static int64_t xPitch(int64_t K) {
    return (K + 127) / 128 * 128 + 64;
  }
  /// Bytes of shared memory that x takes: M rows of K bytes, or none.
  __host__ __device__ static int64_t xBytes(int64_t M, int64_t K) {
    return XShared ? (M * xPitch(K) + 127) / 128 * 128 : 0;
  }
  /// Dynamic shared memory for M rows of x of K bytes.
  static int64_t sharedBytes(int64_t M, int64_t K) {
    return kBarrierBytes + kPartialBytes + xBytes(M, K) + kRingBytes;
  }
};
#pragma nv_diag_default 177

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ uint32_t sharedAddr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbarrierInit(uint64_t *bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sharedAddr(bar)),
               "r"(count)
               : "memory");
}
/// Arrives once and adds `bytes` to the phase's expected transactions.
__device__ __forceinline__ void mbarrierExpect(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                   sharedAddr(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbarrierArrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(sharedAddr(bar))
               : "memory");
}
/// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbarrierWait(uint64_t *bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done)
                 : "r"(sharedAddr(bar)), "r"(parity)
                 : "memory");
  } while (!done);
}
/// Copies `bytes` (a multiple of 16; both ends 16-byte aligned) from global
/// to this CTA's shared memory; completes `bytes` transactions on `bar`.
template <bool EvictFirst>
__device__ __forceinline__ void bulkCopy(void *dst, const void *src,
                                         uint32_t bytes, uint64_t *bar,
                                         uint64_t policy) {
  if constexpr (EvictFirst)
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
        "bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(sharedAddr(dst)),
        "l"(src), "r"(bytes), "r"(sharedAddr(bar)), "l"(policy)
        : "memory");
  else
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
                 "bytes [%0], [%1], %2, [%3];" ::"r"(sharedAddr(dst)),
                 "l"(src), "r"(bytes), "r"(sharedAddr(bar))
                 : "memory");
}
#endif

/// Launch: C::kThreads threads, min(tiles, C::kCtasPerSM * SMs) CTAs,
/// C::sharedBytes(M, K) bytes of dynamic shared memory; M <= 16.
/// `dependent` as for decodeGemmKernel; the grid is one wave, so every CTA
/// lets the next grid start.
template <typename C, typename T>
__global__ void __launch_bounds__(C::kThreads, C::kCtasPerSM)
    bulkDecodeKernel(SLINRT_DECODE_GEMM_PARAMS(T)) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int R = C::kRows, NT = R / 8, CK = C::kChunk, S = C::kStages,
                CW = C::kWarps, WP = C::kWPitch;
  constexpr int kStepsPerWarp = CK / kStepK / CW;
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t *full = reinterpret_cast<uint64_t *>(smem);
  uint64_t *empty = full + S;
  uint64_t *xReady = empty + S;
  float(*partial)[CW][16][R] =
      reinterpret_cast<float(*)[CW][16][R]>(smem + C::kBarrierBytes);
  const int64_t xPitch = C::xPitch(K);
  uint8_t *xs = smem + C::kBarrierBytes + C::kPartialBytes;
  uint8_t *ring = xs + C::xBytes(M, K);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t tiles = (N + R - 1) / R, chunks = (K + CK - 1) / CK;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      mbarrierInit(&full[s], 1);
      mbarrierInit(&empty[s], CW);
    }
    mbarrierInit(xReady, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  allowDependents();
  if (dependent) {
    // The first stages' rows of this CTA's first tile.
    const int64_t n0 = int64_t(blockIdx.x) * R;
    const int64_t ahead = int64_t(S) * CK < K ? int64_t(S) * CK : K;
    if (threadIdx.x < R && n0 + threadIdx.x < N)
      prefetchL2(w + (n0 + threadIdx.x) * ldw, static_cast<uint32_t>(ahead));
    waitPrerequisites();
  }
  __syncthreads();

  if (warp == CW) { // The producer.
    constexpr int L = C::kIssueLanes;
    constexpr unsigned kLanes = L == 32 ? 0xffffffffu : (1u << L) - 1;
    if (lane >= L)
      return;
    uint64_t policy = 0;
    if constexpr (C::kEvictFirst)
      asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;"
                   : "=l"(policy));
    if constexpr (C::kXShared) {
      if (lane == 0)
        mbarrierExpect(xReady, static_cast<uint32_t>(M * K));
      __syncwarp(kLanes);
      for (int m = lane; m < M; m += L)
        bulkCopy<false>(xs + m * xPitch, x + m * ldx, static_cast<uint32_t>(K),
                        xReady, 0);
    }
    int stage = 0;
    uint32_t phase = 0;
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const int64_t n0 = tile * R;
      const int rows = static_cast<int>(N - n0 < R ? N - n0 : R);
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t k0 = c * CK;
        const uint32_t bytes = static_cast<uint32_t>(K - k0 < CK ? K - k0 : CK);
        // A fresh barrier counts as having completed the phase before its
        // first, so the first pass over the ring does not wait.
        mbarrierWait(&empty[stage], phase ^ 1);
        // The stage's bytes are expected before any of its copies is issued.
        if (lane == 0)
          mbarrierExpect(&full[stage], rows * bytes);
        __syncwarp(kLanes);
        uint8_t *dst = ring + int64_t(stage) * R * WP;
        for (int r = lane; r < rows; r += L)
          bulkCopy<C::kEvictFirst>(dst + r * WP, w + (n0 + r) * ldw + k0, bytes,
                                   &full[stage], policy);
        if (++stage == S) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
    return;
  }

  // The consumers. Rows of the stage past N hold stale bytes: their columns
  // are never stored.
  const int g = lane / 4, t = lane % 4;
  const bool xLo = g < M, xHi = g + 8 < M;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  if constexpr (C::kXShared)
    mbarrierWait(xReady, 0);
  int stage = 0, buf = 0;
  uint32_t phase = 0;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    float acc[NT][4] = {};
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t k0 = c * CK;
      const int64_t bytes = K - k0 < CK ? K - k0 : CK;
      mbarrierWait(&full[stage], phase);
      const uint8_t *ws = ring + int64_t(stage) * R * WP;
#pragma unroll
      for (int u = 0; u < kStepsPerWarp; ++u) {
        const int off = (u * CW + warp) * kStepK + 16 * t;
        const bool kOk = off < bytes;
        uint4 lo = zero, hi = zero;
        if constexpr (C::kXShared) {
          const uint8_t *xp = xs + k0 + off;
          if (kOk && xLo)
            lo = *reinterpret_cast<const uint4 *>(xp + g * xPitch);
          if (kOk && xHi)
            hi = *reinterpret_cast<const uint4 *>(xp + (g + 8) * xPitch);
        } else {
          const uint8_t *xp = x + k0 + off;
          if (kOk && xLo)
            lo = loadShared(xp + g * ldx);
          if (kOk && xHi)
            hi = loadShared(xp + (g + 8) * ldx);
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const uint4 b = kOk ? *reinterpret_cast<const uint4 *>(
                                    ws + (8 * j + g) * WP + off)
                              : zero;
          mmaAccumulate(acc[j], lo, hi, b);
        }
      }
      __syncwarp();
      if (lane == 0)
        mbarrierArrive(&empty[stage]);
      if (++stage == S) {
        stage = 0;
        phase ^= 1;
      }
    }
    // Partial sums meet in shared memory. Two buffers, so one barrier per
    // tile suffices: tile i + 2 writes buffer `buf` only after every
    // consumer has passed tile i + 1's barrier, hence finished reading it.
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        partial[buf][warp][g + 8 * (r / 2)][8 * j + 2 * t + r % 2] = acc[j][r];
    asm volatile("bar.sync 1, %0;" ::"r"(CW * 32) : "memory");
    const int64_t n0 = tile * R;
    for (int e = threadIdx.x; e < M * R; e += CW * 32) {
      const int m = e / R, col = e % R;
      const int64_t n = n0 + col;
      if (n >= N)
        continue;
      float sum = 0.0f;
#pragma unroll
      for (int v = 0; v < CW; ++v)
        sum += partial[buf][v][m][col];
      storeOutput(y, ldy, sx, sw, bias, outerVector, m, n, sum);
    }
    buf ^= 1;
  }
#endif
}

/// Whether configuration C can run these arguments: M <= 16 and its shared
/// memory within `maxSharedBytes` (the device's opt-in limit per block).
template <typename C>
bool bulkFits(const DecodeGemmArgs &a, int64_t maxSharedBytes) {
  return a.M <= 16 && C::sharedBytes(a.M, a.K) <= maxSharedBytes;
}

/// Opts kernel <C, T> in to `bytes` of dynamic shared memory on `device`
/// (the current device), once per device: above 48 KiB a kernel must.
/// Host-side only, so it is safe during graph capture too.
template <typename C, typename T>
cudaError_t optInShared(int device, int64_t bytes) {
  static std::atomic<uint64_t> optedIn{0};
  const uint64_t bit =
      device >= 0 && device < 64 ? uint64_t(1) << device : uint64_t(0);
  if (bit && (optedIn.load(std::memory_order_acquire) & bit))
    return cudaSuccess;
  cudaError_t err = cudaFuncSetAttribute(
      bulkDecodeKernel<C, T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
      static_cast<int>(bytes));
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return err;
  }
  optedIn.fetch_or(bit, std::memory_order_acq_rel);
  return cudaSuccess;
}

/// Launches configuration C of the bulk form (the caller checked bulkFits).
template <typename C, typename T>
cudaError_t launchBulk(const DecodeGemmArgs &a, cudaStream_t stream) {
  const int64_t smemBytes = C::sharedBytes(a.M, a.K);
  // To the device's limit, so one opt-in serves every K.
  if (cudaError_t err = optInShared<C, T>(a.device, a.maxSharedBytes > smemBytes
                                                        ? a.maxSharedBytes
                                                        : smemBytes))
    return err;
  const int64_t tiles = (a.N + C::kRows - 1) / C::kRows;
  const int64_t slots =
      int64_t(a.multiProcessors > 0 ? a.multiProcessors : 1) * C::kCtasPerSM;
  dim3 grid(static_cast<unsigned>(tiles < slots ? tiles : slots));
  const bool programmatic = a.dependence != DecodeDependence::None;
  return launchDecodeKernel<T>(bulkDecodeKernel<C, T>, grid, dim3(C::kThreads),
                               static_cast<size_t>(smemBytes), stream,
                               programmatic, a);
}

//===----------------------------------------------------------------------===//
// The configuration the runtime runs
//===----------------------------------------------------------------------===//

/// The bulk form the runtime runs: 16-row tiles, one 4 KiB copy per row
/// and stage, 2 stages, 8 consumer warps, evict-first copies of W. Copies of
/// 512, 1024 and 2048 bytes streamed about 1.3, 2.3 and 3.3 TB/s at gate/up
/// on the H200 (bench/tools/decode_gemm_sweep.cu; docs/Design.md, Measured
/// decisions: decode GEMM bulk-copy form).
using BulkDefault = BulkConfig<16, 4096, 2, 8, 1, /*EvictFirst=*/true>;

} // namespace cuda
} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_DECODE_GEMM_BULKFORM_CUH

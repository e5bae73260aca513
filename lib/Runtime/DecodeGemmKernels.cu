//===- DecodeGemmKernels.cu - Small-M FP8 GEMM on tensor cores --*- C++ -*-===//
//
// The decode GEMM of the FP8 scaled GEMM (see CUDAKernels.h):
// y[M, N] = sx sw (x8[M, K] w8[N, K]^T) (+ bias[N]) for M <= 32, e4m3 x e4m3.
// At such M the GEMM only streams W, and cuBLASLt's outer-vector FP8 offers a
// 128x128 tile without split-K (48 CTAs for the Llama-3-8B q/k/v on 132 SMs),
// so it does not run faster than bf16 although it reads half the bytes.
//
// Design: one CTA per kTileN(= 8 NT) rows of W; its warps split K, each warp
// multiplies with mma.sync.m16n8k32 (sm89+): x rows as the A operand (16
// rows, those past M zero and never loaded), W rows as B (W[N, K] row-major
// is the "col" B layout). A dot product sums over k, so any permutation of k
// applied to both operands gives the same result: lane (g, t) loads 16
// contiguous bytes at k = 64 s + 16 t of W row g and of x rows g and g + 8,
// and their four words feed two MMAs as if they were the fragment's k columns
// {4t..4t+3, 16+4t..16+4t+3} of each. Every MMA starts from zero and its
// result is added in fp32 (Hopper keeps only about 14 bits of the partial sums
// inside an FP8 MMA; this bounds that loss to 32 products). The warps' sums
// meet in shared memory; then every output gets its scales and bias in fp32
// and one rounding. No atomics, workspace, allocation or host sync: graph
// capturable. Compiled for every CUDA arch of the runtime; below sm89 the
// kernel is empty, and the host launches it only where the device runs an
// sm89+ binary of it (decodeGemmAvailable).
//
//===----------------------------------------------------------------------===//

#include "CUDAKernels.h"
#include "Float16.h"

#include <atomic>
#include <cstring>

namespace slinrt {
namespace cuda {
namespace {

/// Bytes of k one warp covers per step: 4 lanes x 16 bytes.
constexpr int kStepK = 64;

/// How a lane reads its 16 bytes of W, which no other lane reads.
enum class WLoad {
  /// ld.global.cs: evict first, do not keep in L1.
  Streaming,
  /// ld.global.nc, no L1 allocation, and a 256-byte L2 prefetch hint.
  Prefetch256,
};

template <WLoad L>
__device__ __forceinline__ uint4 loadW(const uint8_t *p) {
  if constexpr (L == WLoad::Prefetch256) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
  } else {
    return __ldcs(reinterpret_cast<const uint4 *>(p));
  }
}
/// 16 bytes of x, read by every CTA: through the read-only cache.
__device__ __forceinline__ uint4 loadShared(const uint8_t *p) {
  return __ldg(reinterpret_cast<const uint4 *>(p));
}

/// Prefetches `bytes` (a multiple of 16, 16-byte aligned) into L2: a hint
/// that reads no data into this thread, so it may precede waitPrerequisites.
__device__ __forceinline__ void prefetchL2(const void *p, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes)
               : "memory");
#endif
}

/// d = A B for one m16n8k32 e4m3 MMA with a zero accumulator (a0..a3: rows
/// g, g+8, g, g+8 of k quarters 0, 0, 1, 1 of this lane; b0, b1: quarters 0
/// and 1 of column g).
__device__ __forceinline__ void mmaE4M3(float (&d)[4], uint32_t a0, uint32_t a1,
                                        uint32_t a2, uint32_t a3, uint32_t b0,
                                        uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %10, %10, %10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(0.0f));
#else
  d[0] = d[1] = d[2] = d[3] = 0.0f;
#endif
}

/// Output conversion: fp32 is stored as is, 16-bit types round to nearest
/// even (Float16.h, as the CPU target).
template <typename T> __device__ __forceinline__ T fromFloat(float v) {
  return convertElement<T>(v);
}

/// DecodeConfig's Ahead for the whole row of W.
constexpr int kWholeRow = 1 << 30;
/// The runtime's Ahead: H200 sweep run 5 (bench/decode_gemm_sweep.cu,
/// 2026-12-03), every configuration launched as a dependent, M = 16: with
/// the whole row prefetched, q/k/v took 0.0115 ms chained after itself and
/// 0.0133 after a 16-CTA producer of x, against 0.0102 and 0.0113 launched
/// plainly; with 512 bytes, 0.0095 and 0.0108 (and 0 bytes 0.0097, 0.0108).
constexpr int kDependentAhead = 512;

/// One instance of the kernel: MT m-tiles of 16 rows (M <= 16 MT), NT
/// n-tiles of 8 rows of W per CTA, U k-steps per warp in flight, Warps warps
/// per CTA, registers bounded so that MinBlocks CTAs fit on an SM. Contig:
/// warp w takes a contiguous run of k-steps (else steps w, w + Warps, ...).
/// Ahead: bytes of each of its rows of W (a multiple of 16; 0 for none) a
/// CTA launched as a programmatic dependent prefetches into L2 before it
/// waits for the grid before it.
template <int MT, int NT, int U, int Warps, int MinBlocks, bool Contig, WLoad L,
          int Ahead = kDependentAhead>
struct DecodeConfig {
  static constexpr int kMT = MT, kNT = NT, kU = U, kWarps = Warps,
                       kThreads = 32 * Warps, kMinBlocks = MinBlocks,
                       kAhead = Ahead;
  static constexpr bool kContig = Contig;
  static constexpr WLoad kLoad = L;
  static_assert(Ahead >= 0 && Ahead % 16 == 0, "prefetch whole 16 bytes");
};

/// Launch: C::kThreads threads, ceil(N / (8 C::kNT)) CTAs. `dependent`:
/// launched as a programmatic dependent (DecodeGemmArgs::dependence);
/// CTAs from `triggerFrom` on (the last wave) let the next grid start.
template <typename C, typename T>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks)
    decodeGemmKernel(const uint8_t *__restrict__ x, int64_t ldx,
                     const uint8_t *__restrict__ w, int64_t ldw,
                     T *__restrict__ y, int64_t ldy,
                     const float *__restrict__ sx, const float *__restrict__ sw,
                     const T *__restrict__ bias, int M, int64_t N, int64_t K,
                     int outerVector, int dependent, int64_t triggerFrom) {
  constexpr int MT = C::kMT, NT = C::kNT, U = C::kU, kWarps = C::kWarps,
                kThreads = C::kThreads;
  constexpr int kRows = 16 * MT, kTileN = 8 * NT;
  __shared__ float partial[kWarps][kRows][kTileN];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int64_t n0 = int64_t(blockIdx.x) * kTileN;

  // Earlier waves must leave the SMs to this grid's later CTAs, so only
  // the last wave lets the next grid start early.
  if (blockIdx.x >= triggerFrom)
    allowDependents();
  if (dependent) {
    const int64_t ahead = C::kAhead < K ? C::kAhead : K;
    if (ahead > 0 && threadIdx.x < kTileN && n0 + threadIdx.x < N)
      prefetchL2(w + (n0 + threadIdx.x) * ldw, static_cast<uint32_t>(ahead));
    waitPrerequisites();
  }

  // Row pointers at this lane's 16 bytes of step 0; rows past M or N are
  // never read.
  const uint8_t *wRow[NT];
  bool wOk[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    int64_t n = n0 + 8 * j + g;
    wOk[j] = n < N;
    wRow[j] = w + (wOk[j] ? n : 0) * ldw + 16 * t;
  }
  const uint8_t *xRow[MT][2];
  bool xOk[MT][2];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      int m = 16 * i + 8 * h + g;
      xOk[i][h] = m < M;
      xRow[i][h] = x + (xOk[i][h] ? m : 0) * ldx + 16 * t;
    }

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        acc[i][j][r] = 0.0f;

  // Interleaved: warp `warp` takes steps warp, warp + kWarps, ..., so at
  // any time the CTA reads kWarps * 64 contiguous bytes of each W row.
  // Contiguous: the warp takes steps [first, last) in runs of U. K is a
  // multiple of 16, so a lane's 16 bytes are all in range or all out.
  const int64_t steps = (K + kStepK - 1) / kStepK;
  const int64_t perWarp = (steps + kWarps - 1) / kWarps;
  const int64_t first = C::kContig ? warp * perWarp : warp;
  const int64_t last = C::kContig ? (first + perWarp < steps ? first + perWarp
                                                             : steps)
                                  : steps;
  const int64_t stride = C::kContig ? U : int64_t(kWarps) * U;
  const int64_t uStride = C::kContig ? 1 : kWarps;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int64_t s0 = first; s0 < last; s0 += stride) {
    uint4 wv[U][NT], xv[U][MT][2];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int64_t step = s0 + int64_t(u) * uStride;
      int64_t off = step * kStepK;
      bool kOk = step < last && off + 16 * t < K;
#pragma unroll
      for (int j = 0; j < NT; ++j)
        wv[u][j] = kOk && wOk[j] ? loadW<C::kLoad>(wRow[j] + off) : zero;
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          xv[u][i][h] = kOk && xOk[i][h] ? loadShared(xRow[i][h] + off) : zero;
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const uint4 &lo = xv[u][i][0], &hi = xv[u][i][1], &b = wv[u][j];
          float d0[4], d1[4];
          // Words 0, 1 of the 16 bytes are the first MMA's k quarters 0, 1;
          // words 2, 3 the second's.
          mmaE4M3(d0, lo.x, hi.x, lo.y, hi.y, b.x, b.y);
          mmaE4M3(d1, lo.z, hi.z, lo.w, hi.w, b.z, b.w);
#pragma unroll
          for (int r = 0; r < 4; ++r)
            acc[i][j][r] += d0[r] + d1[r];
        }
  }

  // C fragment: element r of lane (g, t) is row g + 8 (r / 2), column
  // 2 t + r % 2 of its 16 x 8 tile.
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        partial[warp][16 * i + g + 8 * (r / 2)][8 * j + 2 * t + r % 2] =
            acc[i][j][r];
  __syncthreads();

  for (int e = threadIdx.x; e < kRows * kTileN; e += kThreads) {
    int m = e / kTileN, c = e % kTileN;
    int64_t n = n0 + c;
    if (m >= M || n >= N)
      continue;
    float sum = 0.0f;
#pragma unroll
    for (int v = 0; v < kWarps; ++v)
      sum += partial[v][m][c];
    float scale = outerVector ? sx[m] * sw[n] : sx[0] * sw[0];
    float value = scale * sum;
    if (bias)
      value += toFloat(bias[n]);
    y[m * ldy + n] = fromFloat<T>(value);
  }
}

//===----------------------------------------------------------------------===//
// The bulk-copy (TMA) form, sm90
//===----------------------------------------------------------------------===//
//
// The kernel above streams W through the load/store units: every lane keeps
// its own 16-byte loads in flight. On the H200 it reaches about 3.3 TB/s of
// the HBM's 4.8 (bf16 cuBLAS streams 4.2), because an SM can keep only so
// many such loads outstanding. This form hands the stream to the SM's bulk
// copy engine (cp.async.bulk, "TMA" without a tensor map): one producer
// thread per CTA fills a ring of shared-memory stages, each 16 (or 32) rows
// of W by kChunk bytes of k, and mbarriers with transaction counts say when
// a stage has landed and when the consumer warps are done with it. x (M <= 16
// rows) is copied once per CTA. The CTAs are persistent (at most one per SM
// and configuration), so the ring keeps filling across a CTA's tiles while
// its consumers reduce and store the previous tile. The MMAs, their k
// permutation and the fp32 accumulation are those of decodeGemmKernel.

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
    bulkDecodeKernel(const uint8_t *__restrict__ x, int64_t ldx,
                     const uint8_t *__restrict__ w, int64_t ldw,
                     T *__restrict__ y, int64_t ldy,
                     const float *__restrict__ sx, const float *__restrict__ sw,
                     const T *__restrict__ bias, int M, int64_t N, int64_t K,
                     int outerVector, int dependent) {
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
    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        acc[j][r] = 0.0f;
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
          float d0[4], d1[4];
          mmaE4M3(d0, lo.x, hi.x, lo.y, hi.y, b.x, b.y);
          mmaE4M3(d1, lo.z, hi.z, lo.w, hi.w, b.z, b.w);
#pragma unroll
          for (int r = 0; r < 4; ++r)
            acc[j][r] += d0[r] + d1[r];
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
      float value = (outerVector ? sx[m] * sw[n] : sx[0] * sw[0]) * sum;
      if (bias)
        value += toFloat(bias[n]);
      y[m * ldy + n] = fromFloat<T>(value);
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
  return launchKernelDependent(
      bulkDecodeKernel<C, T>, grid, dim3(C::kThreads),
      static_cast<size_t>(smemBytes), stream, programmatic,
      static_cast<const uint8_t *>(a.x), a.ldx,
      static_cast<const uint8_t *>(a.w), a.ldw, static_cast<T *>(a.y), a.ldy,
      a.sx, a.sw, static_cast<const T *>(a.bias), static_cast<int>(a.M), a.N,
      a.K, a.outerVector ? 1 : 0, programmatic ? 1 : 0);
}

/// Launches configuration C for the arguments a (checked by the caller).
template <typename C, typename T>
cudaError_t launchConfig(const DecodeGemmArgs &a, cudaStream_t stream) {
  constexpr int kTileN = 8 * C::kNT;
  const int64_t ctas = (a.N + kTileN - 1) / kTileN;
  // The first CTA of the last wave (none where the SMs are unknown).
  const int64_t slots = int64_t(a.multiProcessors) * C::kMinBlocks;
  const int64_t triggerFrom = slots <= 0     ? ctas
                              : ctas > slots ? ctas - slots
                                             : 0;
  dim3 grid(static_cast<unsigned>(ctas));
  const bool programmatic = a.dependence == DecodeDependence::AllForms;
  return launchKernelDependent(
      decodeGemmKernel<C, T>, grid, dim3(C::kThreads), 0, stream, programmatic,
      static_cast<const uint8_t *>(a.x), a.ldx,
      static_cast<const uint8_t *>(a.w), a.ldw, static_cast<T *>(a.y), a.ldy,
      a.sx, a.sw, static_cast<const T *>(a.bias), static_cast<int>(a.M), a.N,
      a.K, a.outerVector ? 1 : 0, programmatic ? 1 : 0, triggerFrom);
}

/// The earlier configurations: 8 warps, each with 4 KiB of W in flight
/// (U = 8 / NT k-steps), 3 CTAs per SM for one m-tile, 2 for two. Two
/// m-tiles and 32-row tiles still run them.
template <int MT, int NT>
using BaseConfig = DecodeConfig<MT, NT, 8 / NT, 8, MT == 1 ? 3 : 2,
                                /*Contig=*/false, WLoad::Streaming>;

/// M <= 16, 16-row tiles, chosen by the H200 sweep of 2026-12-01
/// (bench/decode_gemm_sweep.cu, CUDA graphs, W from HBM): 8 KiB of W in
/// flight per warp over a contiguous run of k-steps, 2 CTAs per SM, and a
/// 256-byte L2 prefetch hint. Against BaseConfig<1, 2> at M = 16 (run 1):
/// gate/up 0.0362 against 0.0379 ms, o 0.0070 against 0.0086, down
/// (K 14336) 0.0202 against 0.0239.
using DeepConfig = DecodeConfig<1, 2, 8, 8, 2, /*Contig=*/true,
                                WLoad::Prefetch256>;
/// As BaseConfig<1, 2> (3 CTAs per SM) with the prefetch hint: for N whose
/// tiles fit on the SMs at once with 3 CTAs each but not with 2 (q/k/v of
/// Llama-3-8B: 384 tiles on 132 SMs; 0.0103 ms against DeepConfig's
/// 0.0109 and BaseConfig's 0.0106).
using OneWaveConfig = DecodeConfig<1, 2, 4, 8, 3, /*Contig=*/false,
                                   WLoad::Prefetch256>;
/// OneWaveConfig's tiles as a programmatic dependent: 2 k-steps per warp
/// in flight. H200 sweep run 6 (2026-12-03), q/k/v as dependents, M = 16:
/// 0.0093 ms chained after itself and 0.0103 after a producer of x,
/// against 0.0095 and 0.0108 with 4 steps; M = 1: 0.0088 and 0.0098
/// against 0.0090 and 0.0101.
using OneWaveDependentConfig =
    DecodeConfig<1, 2, 2, 8, 3, /*Contig=*/false, WLoad::Prefetch256>;

template <int MT, typename T>
cudaError_t launchTiles(const DecodeGemmArgs &a, cudaStream_t stream) {
  if (a.tileN == 32)
    return launchConfig<BaseConfig<MT, 4>, T>(a, stream);
  if constexpr (MT == 1) {
    const int64_t tiles = (a.N + 15) / 16, sms = a.multiProcessors;
    if (tiles > 2 * sms && tiles <= 3 * sms)
      return a.dependence == DecodeDependence::AllForms
                 ? launchConfig<OneWaveDependentConfig, T>(a, stream)
                 : launchConfig<OneWaveConfig, T>(a, stream);
    return launchConfig<DeepConfig, T>(a, stream);
  }
  return launchConfig<BaseConfig<MT, 2>, T>(a, stream);
}

/// The bulk form the runtime runs: 16-row tiles, one 4 KiB copy per row
/// and stage, 2 stages, 8 consumer warps, evict-first copies of W. H200
/// sweep of 2026-12-03 (bench/decode_gemm_sweep.cu): copies of 512, 1024
/// and 2048 bytes streamed about 1.3, 2.3 and 3.3 TB/s at gate/up.
using BulkDefault = BulkConfig<16, 4096, 2, 8, 1, /*EvictFirst=*/true>;

/// Whether the bulk form runs: M <= 16, 16-row tiles, x fits, and more than
/// three 16-row tiles per SM. With fewer, each persistent CTA streams too
/// little W to amortize its start (x's copy, the first stage's latency):
/// on the H200, gate/up (1792 tiles, 132 SMs) at M = 16 took 0.0336 ms
/// against the register form's 0.0364, q/k/v (384 tiles) 0.0123 against
/// 0.0103 (bench/fp8_linear.py --graphs, 2026-12-03).
bool useBulk(const DecodeGemmArgs &a) {
  const int64_t tiles = (a.N + 15) / 16;
  return a.M <= 16 && a.tileN == 16 && a.multiProcessors > 0 &&
         tiles > 3 * int64_t(a.multiProcessors) &&
         bulkFits<BulkDefault>(a, a.maxSharedBytes);
}

template <typename T>
cudaError_t launchRows(const DecodeGemmArgs &a, cudaStream_t stream) {
  if (useBulk(a))
    return launchBulk<BulkDefault, T>(a, stream);
  return a.M <= 16 ? launchTiles<1, T>(a, stream)
                   : launchTiles<2, T>(a, stream);
}

} // namespace

bool decodeGemmAvailable() {
  // The binary the device runs: sm80 code (an sm89 device without its own
  // image) has the empty kernel.
  cudaFuncAttributes attr{};
  cudaError_t err = cudaFuncGetAttributes(
      &attr, decodeGemmKernel<BaseConfig<1, 4>, BFloat16>);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.binaryVersion >= 89;
}

bool decodeGemmBulkAvailable() {
  cudaFuncAttributes attr{};
  cudaError_t err =
      cudaFuncGetAttributes(&attr, bulkDecodeKernel<BulkDefault, BFloat16>);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.binaryVersion >= 90;
}

cudaError_t prepareDecodeGemmBulk(int device, int64_t maxSharedBytes) {
  if (cudaError_t err = optInShared<BulkDefault, float>(device, maxSharedBytes))
    return err;
  if (cudaError_t err = optInShared<BulkDefault, Half>(device, maxSharedBytes))
    return err;
  return optInShared<BulkDefault, BFloat16>(device, maxSharedBytes);
}

int decodeGemmTileN(int64_t N, int numSMs) {
  // 16 rows of W per CTA: on the H200 (2026-12-01, CUDA graphs, weights from
  // HBM) it beat 32-row tiles at M = 1 and 16 for both q/k/v (N 6144: 9.7 vs
  // 15.9 us) and gate/up (N 28672: 35.3 vs 46.3 us), although the wider tile
  // reads x fewer times. SPLITLINEAR_FP8_DECODE_TILE_N=32 still forces it.
  (void)N;
  (void)numSMs;
  return 16;
}

cudaError_t launchDecodeGemm(const DecodeGemmArgs &a, cudaStream_t stream) {
  if (a.M < 1 || a.M > kDecodeGemmMaxRows || a.N < 1 || a.K < 1 ||
      (a.tileN != 16 && a.tileN != 32))
    return cudaErrorInvalidValue;
  switch (a.outType) {
  case SLINRT_F32:
    return launchRows<float>(a, stream);
  case SLINRT_F16:
    return launchRows<Half>(a, stream);
  case SLINRT_BF16:
    return launchRows<BFloat16>(a, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace cuda
} // namespace slinrt

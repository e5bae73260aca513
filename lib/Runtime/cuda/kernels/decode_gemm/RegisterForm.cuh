//===- RegisterForm.cuh - Decode GEMM, register form ------------*- C++ -*-===//
//
// The register form of the decode GEMM: one CTA per kTileN (= 8 NT) rows of
// W; its warps split K, each lane keeps its own 16-byte loads of W in flight
// and multiplies with mma.sync.m16n8k32 (sm89+): x rows as the A operand (16
// rows, those past M zero and never loaded), W rows as B (W[N, K] row-major
// is the "col" B layout). The warps' sums meet in shared memory; then every
// output gets its scales and bias in fp32 and one rounding. No atomics,
// workspace, allocation or host sync: graph capturable. Below sm89 the
// kernel is empty.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_DECODE_GEMM_REGISTERFORM_CUH
#define SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_DECODE_GEMM_REGISTERFORM_CUH

#include "cuda/kernels/decode_gemm/Common.cuh"

namespace slinrt {
namespace cuda {

/// DecodeConfig's Ahead for the whole row of W.
constexpr int kWholeRow = 1 << 30;
/// The runtime's Ahead, 512 bytes: launched as a dependent at M = 16, q/k/v
/// took 0.0095 ms chained after itself with 512 bytes prefetched, 0.0097
/// with none and 0.0115 with the whole row, against 0.0102 launched plainly
/// (bench/tools/decode_gemm_sweep.cu, H200; docs/Design.md, Measured
/// decisions: decode GEMM prefetch before the wait).
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
    decodeGemmKernel(SLINRT_DECODE_GEMM_PARAMS(T), int64_t triggerFrom) {
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

  float acc[MT][NT][4] = {};

  // Interleaved: warp `warp` takes steps warp, warp + kWarps, ..., so at
  // any time the CTA reads kWarps * 64 contiguous bytes of each W row.
  // Contiguous: the warp takes steps [first, last) in runs of U. K is a
  // multiple of 16, so a lane's 16 bytes are all in range or all out.
  const int64_t steps = (K + kStepK - 1) / kStepK;
  const int64_t perWarp = (steps + kWarps - 1) / kWarps;
  const int64_t first = C::kContig ? warp * perWarp : warp;
  const int64_t last =
      C::kContig ? (first + perWarp < steps ? first + perWarp : steps) : steps;
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
          mmaAccumulate(acc[i][j], xv[u][i][0], xv[u][i][1], wv[u][j]);
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
    storeOutput(y, ldy, sx, sw, bias, outerVector, m, n, sum);
  }
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
  return launchDecodeKernel<T>(decodeGemmKernel<C, T>, grid, dim3(C::kThreads),
                               0, stream, programmatic, a, triggerFrom);
}

//===----------------------------------------------------------------------===//
// The configurations the runtime runs
//===----------------------------------------------------------------------===//

/// The earlier configurations: 8 warps, each with 4 KiB of W in flight
/// (U = 8 / NT k-steps), 3 CTAs per SM for one m-tile, 2 for two. Two
/// m-tiles and 32-row tiles still run them.
template <int MT, int NT>
using BaseConfig = DecodeConfig<MT, NT, 8 / NT, 8, MT == 1 ? 3 : 2,
                                /*Contig=*/false, WLoad::Streaming>;

/// M <= 16, 16-row tiles: 8 KiB of W in flight per warp over a contiguous
/// run of k-steps, 2 CTAs per SM, and a 256-byte L2 prefetch hint. Against
/// BaseConfig<1, 2> at M = 16 on the H200 (bench/tools/decode_gemm_sweep.cu,
/// CUDA graphs, W from HBM): gate/up 0.0362 against 0.0379 ms, o 0.0070
/// against 0.0086, down (K 14336) 0.0202 against 0.0239 (docs/Design.md,
/// Measured decisions: decode GEMM register-form configurations).
using DeepConfig =
    DecodeConfig<1, 2, 8, 8, 2, /*Contig=*/true, WLoad::Prefetch256>;
/// As BaseConfig<1, 2> (3 CTAs per SM) with the prefetch hint: for N whose
/// tiles fit on the SMs at once with 3 CTAs each but not with 2 (q/k/v of
/// Llama-3-8B: 384 tiles on 132 SMs; 0.0103 ms against DeepConfig's
/// 0.0109 and BaseConfig's 0.0106).
using OneWaveConfig =
    DecodeConfig<1, 2, 4, 8, 3, /*Contig=*/false, WLoad::Prefetch256>;
/// OneWaveConfig's tiles as a programmatic dependent: 2 k-steps per warp
/// in flight. q/k/v as dependents on the H200
/// (bench/tools/decode_gemm_sweep.cu), M = 16: 0.0093 ms chained after
/// itself and 0.0103 after a producer of x, against 0.0095 and 0.0108 with
/// 4 steps; M = 1: 0.0088 and 0.0098 against 0.0090 and 0.0101.
using OneWaveDependentConfig =
    DecodeConfig<1, 2, 2, 8, 3, /*Contig=*/false, WLoad::Prefetch256>;

} // namespace cuda
} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_DECODE_GEMM_REGISTERFORM_CUH

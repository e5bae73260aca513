//===- RowQuantize.cu - FP8 per-row quantization kernels --------*- C++ -*-===//
//
// Quantization with one scale per row: a block per row keeps its row in
// registers (rows up to kThreads·kVec·kMaxRowVectors elements, twice that for
// 16-bit types) and prefetches the next one; longer or unaligned rows take a
// two-pass kernel that rereads the row from cache. The block-scaled
// recipe's quantizations live here too: 1×128 blocks along the rows (16
// lanes a block), 128×128 blocks (a thread block each), and the dual that
// writes 1×128 blocks along both the rows and the columns of x.
//
//===----------------------------------------------------------------------===//
#include "cuda/kernels/quantize/Common.cuh"

namespace slinrt {
namespace cuda {
namespace quant {

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Quantizes each row of x with its own amax, a block of `Threads` per row
/// with the row in registers (kVec·V elements a thread, read 16 bytes at a
/// time; rows with vectorOk and cols <= Threads·kVec·V). The next row's
/// loads are in flight while a row is reduced and written. Its grid is
/// resident at once, so it lets a dependent decode GEMM start on the idle
/// SMs right away.
template <typename S, typename F8, int V, int Threads = kThreads>
__global__ void __launch_bounds__(Threads)
    quantizeRowsInRegistersKernel(Fp8Part x, const float *colScale, float *amax,
                                  float *scaleInv, uint8_t *out,
                                  bool outVectorOk, uint8_t *outT, bool pow2) {
  allowDependents();
  constexpr int kLoads = kVec * sizeof(S) / 16;
  int64_t K = x.cols, M = x.rows;
  const S *data = static_cast<const S *>(x.data);
  uint4 raw[V][kLoads];
  auto loadRow = [&](int64_t r) {
#pragma unroll
    for (int u = 0; u < V; ++u) {
      int64_t c = (int64_t(u) * Threads + threadIdx.x) * kVec;
      if (r < M && c < K)
#pragma unroll
        for (int l = 0; l < kLoads; ++l)
          raw[u][l] =
              __ldg(reinterpret_cast<const uint4 *>(data + r * x.ld + c) + l);
    }
  };
  // Only the raw row stays in registers (decoded twice, colScale loaded
  // twice) so that the prefetch of the next one costs few registers.
  auto valuesOf = [&](const uint4(&row)[kLoads], int64_t c, float(&v)[kVec]) {
    S elems[kVec];
    memcpy(elems, row, sizeof(elems));
    float cs[kVec];
    if (colScale)
      loadColScale(colScale, c, K, cs);
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      v[j] = colScale ? toFloat(elems[j]) * cs[j] : toFloat(elems[j]);
  };
  int64_t r = blockIdx.x;
  loadRow(r);
  for (; r < M; r += gridDim.x) {
    uint4 cur[V][kLoads];
    uint32_t best = 0;
#pragma unroll
    for (int u = 0; u < V; ++u) {
      int64_t c = (int64_t(u) * Threads + threadIdx.x) * kVec;
#pragma unroll
      for (int l = 0; l < kLoads; ++l)
        cur[u][l] = raw[u][l];
      if (c < K) {
        float v[kVec];
        valuesOf(cur[u], c, v);
#pragma unroll
        for (int j = 0; j < kVec; ++j)
          best = max(best, absBits(v[j]));
      }
    }
    loadRow(r + gridDim.x);
    float rowAmax = bitCast<float>(blockMax<Threads>(best));
    float scale = fp8Scale(rowAmax, Fp8Format<F8>::kMax, pow2);
    if (threadIdx.x == 0) {
      if (amax)
        amax[r] = rowAmax;
      scaleInv[r] = 1.0f / scale;
    }
#pragma unroll
    for (int u = 0; u < V; ++u) {
      int64_t c = (int64_t(u) * Threads + threadIdx.x) * kVec;
      if (c >= K)
        continue;
      float v[kVec];
      valuesOf(cur[u], c, v);
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        v[j] = v[j] * scale;
      uint2 q = encodeVector<F8>(v);
      if (out)
        storeRun(out + r * K + c, q, kVec, outVectorOk);
      if (outT)
#pragma unroll
        for (int j = 0; j < kVec; ++j)
          outT[(c + j) * M + r] = uint8_t((j < 4 ? q.x : q.y) >> (8 * (j % 4)));
    }
  }
}

/// Quantizes each row of x with its own amax: a block per row reads the
/// row twice (the second time from cache); any layout and length.
template <typename S, typename F8>
__global__ void __launch_bounds__(kThreads)
    quantizeRowsKernel(Fp8Part x, const float *colScale, float *amax,
                       float *scaleInv, uint8_t *out, bool outVectorOk,
                       uint8_t *outT, bool pow2) {
  int64_t K = x.cols, M = x.rows;
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) {
    uint32_t best = 0;
    for (int64_t c = int64_t(threadIdx.x) * kVec; c < K;
         c += int64_t(blockDim.x) * kVec) {
      float v[kVec];
      loadRun<S>(x, K, r, c, colScale, x.vectorOk, v);
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        best = max(best, absBits(v[j]));
    }
    float rowAmax = bitCast<float>(blockMax(best));
    float scale = fp8Scale(rowAmax, Fp8Format<F8>::kMax, pow2);
    if (threadIdx.x == 0) {
      if (amax)
        amax[r] = rowAmax;
      scaleInv[r] = 1.0f / scale;
    }
    for (int64_t c = int64_t(threadIdx.x) * kVec; c < K;
         c += int64_t(blockDim.x) * kVec) {
      float v[kVec];
      loadRun<S>(x, K, r, c, colScale, x.vectorOk, v);
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        v[j] = v[j] * scale;
      uint2 q = encodeVector<F8>(v);
      if (out)
        storeRun(out + r * K + c, q, K - c, outVectorOk);
      if (outT)
        for (int j = 0; j < kVec && c + j < K; ++j)
          outT[(c + j) * M + r] = uint8_t((j < 4 ? q.x : q.y) >> (8 * (j % 4)));
    }
  }
}

/// Quantizes x [M, K] in 1×128 blocks along its rows (K a multiple of
/// SLINRT_QUANT_BLOCK): 16 lanes a block, kVec elements a lane (one 16-byte
/// load of a 16-bit type), the block's amax by shuffles among the 16; block
/// (r, b) writes scaleInv[r·K/128 + b]. The loop runs per warp so that both
/// half-warps reach every shuffle; one past the last block idles through it.
template <typename S, typename F8>
__global__ void __launch_bounds__(kThreads)
    quantizeBlocksKernel(Fp8Part x, const float *colScale, float *amax,
                         float *scaleInv, uint8_t *out, bool outVectorOk,
                         bool pow2) {
  constexpr int kLanes = SLINRT_QUANT_BLOCK / kVec;
  constexpr int kPerWarp = 32 / kLanes;
  int64_t perRow = x.cols / SLINRT_QUANT_BLOCK;
  int64_t total = x.rows * perRow;
  int lane = threadIdx.x % kLanes;
  int64_t warp = (int64_t(blockIdx.x) * kThreads + threadIdx.x) / 32;
  int64_t stride = int64_t(gridDim.x) * kThreads / 32 * kPerWarp;
  for (int64_t base = warp * kPerWarp; base < total; base += stride) {
    int64_t b = base + (threadIdx.x % 32) / kLanes;
    bool live = b < total;
    int64_t r = live ? b / perRow : 0;
    int64_t c = live ? (b % perRow) * SLINRT_QUANT_BLOCK + lane * kVec : 0;
    float v[kVec];
    if (live)
      loadRun<S>(x, x.cols, r, c, colScale, x.vectorOk, v);
    else
      zeroRun(v);
    uint32_t best = 0;
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      best = max(best, absBits(v[j]));
#pragma unroll
    for (int o = kLanes / 2; o > 0; o /= 2)
      best = max(best, __shfl_xor_sync(0xFFFFFFFFu, best, o));
    if (!live)
      continue;
    float blockAmax = bitCast<float>(best);
    float scale = fp8Scale(blockAmax, Fp8Format<F8>::kMax, pow2);
    if (lane == 0) {
      if (amax)
        amax[b] = blockAmax;
      scaleInv[b] = 1.0f / scale;
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      v[j] = v[j] * scale;
    storeRun(out + r * x.cols + c, encodeVector<F8>(v), kVec, outVectorOk);
  }
}

/// 128×128 blocks: a thread block per block b = (br, bc) of x (numbered
/// row-major). Thread t holds the runs of kVec elements at columns
/// (t mod 16)·kVec of rows t/16 + 16·i, i < 8, in registers: a warp reads two
/// whole 256-byte rows of 16-bit data a load. The bytes of `outT` go through
/// shared memory, where thread t then gathers the 64 bytes of block column
/// t mod 128, rows 64·(t/128) on, into four 16-byte stores. Rows of the
/// shared tile are 136 bytes apart: 8-byte aligned for the writes, and the 32
/// columns a warp gathers at once lie in 8 words (no bank conflicts).
template <typename S, typename F8>
__global__ void __launch_bounds__(kThreads)
    quantizeBlocks128x128Kernel(Fp8Part x, float *amax, float *scaleInv,
                                uint8_t *out, bool outVectorOk, uint8_t *outT,
                                int64_t ldT, bool outTVectorOk, bool pow2) {
  constexpr int kBlock = SLINRT_QUANT_BLOCK;
  constexpr int kRuns = kBlock / kVec;         // runs in a block row: 16
  constexpr int kRowsAPass = kThreads / kRuns; // 16
  constexpr int kPasses = kBlock / kRowsAPass; // 8
  constexpr int kPitch = kBlock + 8;
  static_assert(kThreads == 2 * kBlock, "outT: two threads a block column");
  __shared__ __align__(16) uint8_t tile[kBlock * kPitch];
  int64_t perRow = x.cols / kBlock, total = x.rows / kBlock * perRow;
  // One block each; a grid smaller than the blocks (more than 2^31) loops.
  // blockMax's first barrier orders a pass's tile writes after the
  // previous pass's reads.
  for (int64_t blk = blockIdx.x; blk < total; blk += gridDim.x) {
    int64_t br = blk / perRow, bc = blk % perRow;
    int run = threadIdx.x % kRuns, row0 = threadIdx.x / kRuns;
    int64_t c = bc * kBlock + run * kVec;
    float v[kPasses][kVec];
    if (x.vectorOk)
      loadRunsInFlight<S>(x, br * kBlock + row0, kRowsAPass, c, v);
    else
#pragma unroll
      for (int i = 0; i < kPasses; ++i)
        loadRun<S>(x, x.cols, br * kBlock + row0 + i * kRowsAPass, c, nullptr,
                   false, v[i]);
    uint32_t best = 0;
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        best = max(best, absBits(v[i][j]));
    }
    float blockAmax = bitCast<float>(blockMax(best));
    float scale = fp8Scale(blockAmax, Fp8Format<F8>::kMax, pow2);
    if (threadIdx.x == 0) {
      if (amax)
        amax[blk] = blockAmax;
      scaleInv[blk] = 1.0f / scale;
    }
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        v[i][j] *= scale;
      uint2 q = encodeVector<F8>(v[i]);
      int r = row0 + i * kRowsAPass;
      if (out)
        storeRun(out + (br * kBlock + r) * x.cols + c, q, kVec, outVectorOk);
      if (outT)
        *reinterpret_cast<uint2 *>(tile + r * kPitch + run * kVec) = q;
    }
    if (!outT)
      continue;
    __syncthreads();
    int col = threadIdx.x % kBlock, half = threadIdx.x / kBlock;
    uint8_t *dst = outT + (bc * kBlock + col) * ldT + br * kBlock + half * 64;
    uint32_t words[16];
#pragma unroll
    for (int w = 0; w < 16; ++w) {
      uint32_t word = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b)
        word |= uint32_t(tile[(half * 64 + 4 * w + b) * kPitch + col])
                << (8 * b);
      words[w] = word;
    }
    if (outTVectorOk) {
#pragma unroll
      for (int w = 0; w < 16; w += 4)
        reinterpret_cast<uint4 *>(dst)[w / 4] =
            make_uint4(words[w], words[w + 1], words[w + 2], words[w + 3]);
    } else {
#pragma unroll
      for (int w = 0; w < 16; ++w)
#pragma unroll
        for (int b = 0; b < 4; ++b)
          dst[4 * w + b] = uint8_t(words[w] >> (8 * b));
    }
  }
}

/// The 1x128 block dual (slinrt_quantize_fp8_dual_blocks): a thread block
/// per 128×128 tile of x (tiles of the rows past M, up to M' = ldT, read as
/// zeros), its values in registers as in quantizeBlocks128x128Kernel. Row
/// blocks: the 16 threads of a row (a half-warp) reduce by shuffles, as
/// quantizeBlocksKernel does. Column blocks: each thread's maxima over its 8
/// rows, merged across the half-warps by one shuffle and across the warps
/// through shared memory; the bytes of `outT` then go out through the tile
/// as in quantizeBlocks128x128Kernel.
template <typename S, typename F8>
__global__ void __launch_bounds__(kThreads)
    quantizeBlocksDualKernel(Fp8Part x, float *amax, float *scaleInv,
                             uint8_t *out, bool outVectorOk, float *amaxT,
                             float *scaleInvT, uint8_t *outT, int64_t ldT,
                             bool outTVectorOk, bool pow2) {
  constexpr int kBlock = SLINRT_QUANT_BLOCK;
  constexpr int kRuns = kBlock / kVec;         // runs in a block row: 16
  constexpr int kRowsAPass = kThreads / kRuns; // 16
  constexpr int kPasses = kBlock / kRowsAPass; // 8
  constexpr int kPitch = kBlock + 8;
  static_assert(kThreads == 2 * kBlock, "outT: two threads a block column");
  __shared__ __align__(16) uint8_t tile[kBlock * kPitch];
  __shared__ uint32_t colMax[kWarps][kBlock];
  __shared__ float colScale[kBlock];
  int64_t perRow = x.cols / kBlock, tileRows = ldT / kBlock;
  int64_t total = tileRows * perRow;
  int run = threadIdx.x % kRuns, row0 = threadIdx.x / kRuns;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t blk = blockIdx.x; blk < total; blk += gridDim.x) {
    int64_t br = blk / perRow, bc = blk % perRow;
    int64_t c = bc * kBlock + run * kVec;
    // All eight loads in flight at once where the tile is whole (see
    // loadRunsInFlight).
    float v[kPasses][kVec];
    if (x.vectorOk && br * kBlock + kBlock <= x.rows) {
      loadRunsInFlight<S>(x, br * kBlock + row0, kRowsAPass, c, v);
    } else {
#pragma unroll
      for (int i = 0; i < kPasses; ++i) {
        int64_t r = br * kBlock + row0 + i * kRowsAPass;
        if (r < x.rows)
          loadRun<S>(x, x.cols, r, c, nullptr, x.vectorOk, v[i]);
        else
          zeroRun(v[i]);
      }
    }
    uint32_t colBest[kVec] = {};
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      int64_t r = br * kBlock + row0 + i * kRowsAPass;
      uint32_t best = 0;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        uint32_t bits = absBits(v[i][j]);
        best = max(best, bits);
        colBest[j] = max(colBest[j], bits);
      }
#pragma unroll
      for (int o = kRuns / 2; o > 0; o /= 2)
        best = max(best, __shfl_xor_sync(0xFFFFFFFFu, best, o));
      if (r >= x.rows)
        continue;
      float rowAmax = bitCast<float>(best);
      float scale = fp8Scale(rowAmax, Fp8Format<F8>::kMax, pow2);
      if (run == 0) {
        if (amax)
          amax[r * perRow + bc] = rowAmax;
        scaleInv[r * perRow + bc] = 1.0f / scale;
      }
      float q[kVec];
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        q[j] = v[i][j] * scale;
      storeRun(out + r * x.cols + c, encodeVector<F8>(q), kVec, outVectorOk);
    }
    // Lanes l and l + 16 hold the same columns.
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      colBest[j] =
          max(colBest[j], __shfl_xor_sync(0xFFFFFFFFu, colBest[j], 16));
      if (lane < kRuns)
        colMax[warp][run * kVec + j] = colBest[j];
    }
    __syncthreads();
    if (threadIdx.x < kBlock) {
      uint32_t best = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w)
        best = max(best, colMax[w][threadIdx.x]);
      float colAmax = bitCast<float>(best);
      float scale = fp8Scale(colAmax, Fp8Format<F8>::kMax, pow2);
      colScale[threadIdx.x] = scale;
      int64_t at = (bc * kBlock + threadIdx.x) * tileRows + br;
      if (amaxT)
        amaxT[at] = colAmax;
      scaleInvT[at] = 1.0f / scale;
    }
    __syncthreads();
    float cs[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      cs[j] = colScale[run * kVec + j];
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        v[i][j] *= cs[j];
      *reinterpret_cast<uint2 *>(tile + (row0 + i * kRowsAPass) * kPitch +
                                 run * kVec) = encodeVector<F8>(v[i]);
    }
    __syncthreads();
    int col = threadIdx.x % kBlock, half = threadIdx.x / kBlock;
    uint8_t *dst = outT + (bc * kBlock + col) * ldT + br * kBlock + half * 64;
    uint32_t words[16];
#pragma unroll
    for (int w = 0; w < 16; ++w) {
      uint32_t word = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b)
        word |= uint32_t(tile[(half * 64 + 4 * w + b) * kPitch + col])
                << (8 * b);
      words[w] = word;
    }
    if (outTVectorOk) {
#pragma unroll
      for (int w = 0; w < 16; w += 4)
        reinterpret_cast<uint4 *>(dst)[w / 4] =
            make_uint4(words[w], words[w + 1], words[w + 2], words[w + 3]);
    } else {
#pragma unroll
      for (int w = 0; w < 16; ++w)
#pragma unroll
        for (int b = 0; b < 4; ++b)
          dst[4 * w + b] = uint8_t(words[w] >> (8 * b));
    }
    // The next tile's writes to colMax, colScale and tile wait for these
    // reads.
    __syncthreads();
  }
}

} // namespace quant

using namespace quant;

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

cudaError_t launchQuantizeRows(slinrt_dtype src, slinrt_dtype dst,
                               const Fp8Part &x, const float *colScale,
                               float *amax, float *scaleInv, uint8_t *out,
                               uint8_t *outT, bool pow2Scales,
                               cudaStream_t stream) {
  if (x.rows <= 0)
    return cudaSuccess;
  bool outVectorOk = aligned(out, 8) && x.cols % kVec == 0;
  unsigned blocks = unsigned(std::min<int64_t>(x.rows, 1 << 16));
  int vectors = int(ceilDiv(x.cols, kThreads * kVec));
  return dispatchQuant(src, dst, [&](auto s, auto f) {
    using S = decltype(s);
    using F8 = decltype(f);
    auto inRegisters = [&](auto kernel, int threads = kThreads) {
      // Resident blocks only: each loops over rows, prefetching the next.
      unsigned grid =
          unsigned(std::min<int64_t>(blocks, residentBlocks(kernel, threads)));
      return launchKernel(kernel, dim3(grid), dim3(threads), stream, x,
                          colScale, amax, scaleInv, out, outVectorOk, outT,
                          pow2Scales);
    };
    if constexpr (sizeof(S) == 2) {
      if (x.vectorOk && vectors > kMaxRowVectors &&
          x.cols <= int64_t(kLongRowThreads) * kVec * kMaxRowVectors)
        return inRegisters(&quantizeRowsInRegistersKernel<S, F8, kMaxRowVectors,
                                                          kLongRowThreads>,
                           kLongRowThreads);
    }
    if (x.vectorOk && vectors <= kMaxRowVectors) {
      if (vectors <= 1)
        return inRegisters(&quantizeRowsInRegistersKernel<S, F8, 1>);
      if (vectors <= 2)
        return inRegisters(&quantizeRowsInRegistersKernel<S, F8, 2>);
      if (vectors <= 4)
        return inRegisters(&quantizeRowsInRegistersKernel<S, F8, 4>);
      return inRegisters(&quantizeRowsInRegistersKernel<S, F8, 8>);
    }
    return launchKernel(&quantizeRowsKernel<S, F8>, dim3(blocks),
                        dim3(kThreads), stream, x, colScale, amax, scaleInv,
                        out, outVectorOk, outT, pow2Scales);
  });
}

cudaError_t launchQuantizeBlocks(slinrt_dtype src, slinrt_dtype dst,
                                 const Fp8Part &x, const float *colScale,
                                 float *amax, float *scaleInv, uint8_t *out,
                                 bool pow2Scales, cudaStream_t stream) {
  int64_t total = x.rows * (x.cols / SLINRT_QUANT_BLOCK);
  if (total <= 0 || !out)
    return cudaSuccess;
  bool outVectorOk = aligned(out, 8);
  return dispatchQuant(src, dst, [&](auto s, auto f) {
    auto kernel = &quantizeBlocksKernel<decltype(s), decltype(f)>;
    // Two blocks of 128 a warp; at most one resident wave, then the loop.
    int64_t warps = ceilDiv(total, 32 / (SLINRT_QUANT_BLOCK / kVec));
    unsigned grid = unsigned(std::max<int64_t>(
        1, std::min(ceilDiv(warps, kWarps), residentBlocks(kernel))));
    return launchKernel(kernel, dim3(grid), dim3(kThreads), stream, x, colScale,
                        amax, scaleInv, out, outVectorOk, pow2Scales);
  });
}

cudaError_t launchQuantizeBlocks128x128(slinrt_dtype src, slinrt_dtype dst,
                                        const Fp8Part &x, float *amax,
                                        float *scaleInv, uint8_t *out,
                                        uint8_t *outT, int64_t ldT,
                                        bool pow2Scales, cudaStream_t stream) {
  int64_t blocks =
      (x.rows / SLINRT_QUANT_BLOCK) * (x.cols / SLINRT_QUANT_BLOCK);
  if (blocks <= 0 || (!out && !outT))
    return cudaSuccess;
  bool outVectorOk = aligned(out, 8);
  // 16-byte stores of outT rows need an aligned base and row stride.
  bool outTVectorOk = aligned(outT, 16) && ldT % 16 == 0;
  return dispatchQuant(src, dst, [&](auto s, auto f) {
    return launchKernel(&quantizeBlocks128x128Kernel<decltype(s), decltype(f)>,
                        dim3(unsigned(std::min<int64_t>(blocks, INT32_MAX))),
                        dim3(kThreads), stream, x, amax, scaleInv, out,
                        outVectorOk, outT, ldT, outTVectorOk, pow2Scales);
  });
}

cudaError_t launchQuantizeBlocksDual(slinrt_dtype src, slinrt_dtype dst,
                                     const Fp8Part &x, float *amax,
                                     float *scaleInv, uint8_t *out,
                                     float *scaleInvT, uint8_t *outT,
                                     bool pow2Scales, cudaStream_t stream) {
  int64_t ldT = ceilDiv(x.rows, SLINRT_QUANT_BLOCK) * SLINRT_QUANT_BLOCK;
  int64_t tiles = ldT / SLINRT_QUANT_BLOCK * (x.cols / SLINRT_QUANT_BLOCK);
  if (tiles <= 0)
    return cudaSuccess;
  bool outVectorOk = aligned(out, 8);
  bool outTVectorOk = aligned(outT, 16); // ldT is a multiple of 128
  float *amaxT = amax ? amax + x.rows * (x.cols / SLINRT_QUANT_BLOCK) : nullptr;
  return dispatchQuant(src, dst, [&](auto s, auto f) {
    return launchKernel(&quantizeBlocksDualKernel<decltype(s), decltype(f)>,
                        dim3(unsigned(std::min<int64_t>(tiles, INT32_MAX))),
                        dim3(kThreads), stream, x, amax, scaleInv, out,
                        outVectorOk, amaxT, scaleInvT, outT, ldT, outTVectorOk,
                        pow2Scales);
  });
}

} // namespace cuda
} // namespace slinrt

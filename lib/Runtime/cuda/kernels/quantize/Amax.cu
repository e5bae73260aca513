//===- Amax.cu - FP8 amax kernels -------------------------------*- C++ -*-===//
//
// The absolute maxima the FP8 scales come from: over weight parts in one
// launch (a tensor each, optionally of x · colScale and of x from the same
// loads), per column, and per row and column in one pass.
//
//===----------------------------------------------------------------------===//
#include "cuda/kernels/quantize/Common.cuh"

namespace slinrt {
namespace cuda {
namespace quant {

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// amax[i] = max |parts[i]| (times colScale): grid x chunks x parts, each
/// block reduces its chunk and merges with one atomicMax on the float bits.
/// `colStride` (elements, a multiple of cols; 0 for none) lets a dense part
/// with colScale take the dense path: each thread then stays on one run of
/// kVec columns, keeps their maxima apart and scales them once at the end,
/// since max_r |x[r,c] · s_c| = |max_r |x[r,c]| · s_c| exactly (rounding is
/// monotonic and sign-symmetric; a NaN stays a NaN).
template <typename S>
__global__ void __launch_bounds__(kThreads, kAmaxBlocksPerSM)
    amaxPartsKernel(PartsArg args, const float *colScale, uint32_t *amax,
                    uint32_t *amaxPlain, int64_t colStride) {
  const Fp8Part &part = args.parts[blockIdx.y];
  uint32_t best = 0, bestPlain = 0;
  int64_t threads = int64_t(gridDim.x) * blockDim.x;
  int64_t tid = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (part.ld == part.cols && part.vectorOk && (!colScale || colStride > 0)) {
    // Dense: one run of rows·cols elements, 128 bytes in flight a thread
    // (eight 16-byte loads; fp32 takes half the vectors, which would spill).
    // The last round is predicated rather than run one load at a time: a
    // quarter of an 8192 x 4096 tensor falls past the last full round.
    constexpr int kUnroll = sizeof(S) == 4 ? 4 : 8;
    const S *data = static_cast<const S *>(part.data);
    int64_t n = part.rows * part.cols;
    int64_t vectorEnd = n / kVec * kVec;
    int64_t stride = colScale ? colStride : threads * kVec;
    uint32_t colBest[kVec] = {};
    for (int64_t i = tid * kVec; i < vectorEnd && tid * kVec < stride;
         i += kUnroll * stride) {
      float v[kUnroll][kVec];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        int64_t at = i + u * stride;
        if (at < vectorEnd) {
          loadVector(data + at, v[u]);
        } else {
          zeroRun(v[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int j = 0; j < kVec; ++j)
          colBest[j] = max(colBest[j], absBits(v[u][j]));
    }
    if (colScale && tid * kVec < stride) {
      int64_t c = tid * kVec % part.cols;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        bestPlain = max(bestPlain, colBest[j]);
        best = max(best, absBits(bitCast<float>(colBest[j]) * colScale[c + j]));
      }
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        best = max(best, colBest[j]);
    }
    for (int64_t e = vectorEnd + tid; e < n && !colScale; e += threads)
      best = max(best, absBits(toFloat(data[e])));
  } else {
    // Warp per row, lanes along the row, kRowUnroll runs of a lane in
    // flight. With amaxPlain both maxima come from one load: of x, and of
    // x · colScale (the same fp32 product loadRun takes).
    constexpr int kRowUnroll = 4;
    constexpr int64_t kStride = 32 * kVec;
    int lane = threadIdx.x % 32;
    int64_t warp = tid / 32, warps = threads / 32;
    const float *loadScale = amaxPlain ? nullptr : colScale;
    auto visit = [&](int64_t c, const float(&v)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        if (!amaxPlain) {
          best = max(best, absBits(v[j]));
          continue;
        }
        bestPlain = max(bestPlain, absBits(v[j]));
        if (c + j < part.cols)
          best = max(best, absBits(v[j] * colScale[c + j]));
      }
    };
    for (int64_t r = warp; r < part.rows; r += warps) {
      int64_t c = int64_t(lane) * kVec;
      for (; c + (kRowUnroll - 1) * kStride < part.cols;
           c += kRowUnroll * kStride) {
        float v[kRowUnroll][kVec];
#pragma unroll
        for (int u = 0; u < kRowUnroll; ++u)
          loadRun<S>(part, part.cols, r, c + u * kStride, loadScale,
                     part.vectorOk, v[u]);
#pragma unroll
        for (int u = 0; u < kRowUnroll; ++u)
          visit(c + u * kStride, v[u]);
      }
      for (; c < part.cols; c += kStride) {
        float v[kVec];
        loadRun<S>(part, part.cols, r, c, loadScale, part.vectorOk, v);
        visit(c, v);
      }
    }
  }
  best = blockMax(best);
  if (threadIdx.x == 0 && best != 0)
    atomicMax(&amax[blockIdx.y], best);
  if (amaxPlain) {
    bestPlain = blockMax(bestPlain);
    if (threadIdx.x == 0 && bestPlain != 0)
      atomicMax(amaxPlain, bestPlain);
  }
}

/// colAmax[c] = max(colAmax[c], max_r |x[r, c] (· colScale[c])|) as float
/// bits: a warp reduces 64 columns over kAmaxChunkRows rows, then one
/// atomicMax per column.
template <typename S>
__global__ void __launch_bounds__(kThreads)
    colAmaxKernel(Fp8Part x, int64_t colTiles, const float *colScale,
                  uint32_t *colAmax) {
  int lane = threadIdx.x % 32;
  int rg = lane / 8, cg = lane % 8;
  int64_t chunks = (x.rows + kAmaxChunkRows - 1) / kAmaxChunkRows;
  int64_t jobs = chunks * colTiles;
  int64_t warps = int64_t(gridDim.x) * kWarps;
  for (int64_t job = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32;
       job < jobs; job += warps) {
    int64_t c = job % colTiles * kTileCols + cg * kVec;
    int64_t rEnd = min(x.rows, (job / colTiles + 1) * kAmaxChunkRows);
    uint32_t best[kVec] = {};
    int64_t nCols = min(int64_t(kVec), x.cols - c);
    for (int64_t r0 = job / colTiles * kAmaxChunkRows + rg * kLaneRows;
         r0 < rEnd && nCols > 0; r0 += kTileRows) {
      if (x.vectorOk && nCols == kVec && r0 + kLaneRows <= rEnd && !colScale) {
        float v[kLaneRows][kVec];
        const S *src = static_cast<const S *>(x.data) + r0 * x.ld + c;
#pragma unroll
        for (int i = 0; i < kLaneRows; ++i)
          loadVector(src + i * x.ld, v[i]);
#pragma unroll
        for (int i = 0; i < kLaneRows; ++i)
#pragma unroll
          for (int j = 0; j < kVec; ++j)
            best[j] = max(best[j], absBits(v[i][j]));
      } else {
        for (int64_t r = r0; r < r0 + kLaneRows && r < rEnd; ++r) {
          float v[kVec];
          loadRun<S>(x, x.cols, r, c, colScale, x.vectorOk, v);
#pragma unroll
          for (int j = 0; j < kVec; ++j)
            best[j] = max(best[j], absBits(v[j]));
        }
      }
    }
    mergeColumnMax(best, rg, c, nCols, colAmax);
  }
}

/// rowAmax[r] = max(rowAmax[r], max_c |x[r, c] (· colScale[c])|) and
/// colAmax[c] = max(colAmax[c], max_r |x[r, c]|) as float bits, from one
/// read. A warp job is 64 rows x `tilesPerJob` tiles of 64 columns: one
/// atomicMax per column and job (after the 8 lanes of a column meet by
/// shuffles, as in colAmaxKernel), and one per row and job (after the 8
/// lanes of a row meet). One tile per job, the rows' atomics made the pass
/// slower than the separate row and column ones on the H200.
template <typename S>
__global__ void __launch_bounds__(kThreads, 2)
    rowColAmaxKernel(Fp8Part x, int64_t colTiles, int64_t tilesPerJob,
                     const float *colScale, uint32_t *rowAmax,
                     uint32_t *colAmax) {
  constexpr int kSteps = kAmaxChunkRows / kTileRows;
  int lane = threadIdx.x % 32;
  int rg = lane / 8, cg = lane % 8;
  int64_t chunks = (x.rows + kAmaxChunkRows - 1) / kAmaxChunkRows;
  int64_t groups = (colTiles + tilesPerJob - 1) / tilesPerJob;
  int64_t jobs = chunks * groups;
  int64_t warps = int64_t(gridDim.x) * kWarps;
  for (int64_t job = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32;
       job < jobs; job += warps) {
    int64_t rBegin = job / groups * kAmaxChunkRows;
    int64_t rEnd = min(x.rows, rBegin + kAmaxChunkRows);
    int64_t tileBegin = job % groups * tilesPerJob;
    int64_t tileEnd = min(colTiles, tileBegin + tilesPerJob);
    uint32_t rowBest[kSteps][kLaneRows] = {};
    // Warp-uniform trip counts: maxima meet by shuffles.
    for (int64_t tile = tileBegin; tile < tileEnd; ++tile) {
      int64_t c = tile * kTileCols + cg * kVec;
      int64_t nCols = min(int64_t(kVec), x.cols - c);
      // Zeros where nothing is loaded: the values there are zeros too, and
      // 0 · (uninitialized) could be a NaN.
      float cs[kVec] = {};
      if (colScale && nCols > 0)
        loadColScale(colScale, c, x.cols, cs);
      uint32_t best[kVec] = {};
#pragma unroll
      for (int step = 0; step < kSteps; ++step) {
        int64_t r0 = rBegin + step * kTileRows + rg * kLaneRows;
        float v[kLaneRows][kVec];
        if (x.vectorOk && nCols == kVec && r0 + kLaneRows <= rEnd) {
          const S *src = static_cast<const S *>(x.data) + r0 * x.ld + c;
#pragma unroll
          for (int i = 0; i < kLaneRows; ++i)
            loadVector(src + i * x.ld, v[i]);
        } else {
#pragma unroll
          for (int i = 0; i < kLaneRows; ++i) {
            if (nCols > 0 && r0 + i < rEnd) {
              loadRun<S>(x, x.cols, r0 + i, c, nullptr, x.vectorOk, v[i]);
            } else {
              zeroRun(v[i]);
            }
          }
        }
#pragma unroll
        for (int i = 0; i < kLaneRows; ++i)
#pragma unroll
          for (int j = 0; j < kVec; ++j) {
            best[j] = max(best[j], absBits(v[i][j]));
            rowBest[step][i] =
                max(rowBest[step][i],
                    absBits(colScale ? v[i][j] * cs[j] : v[i][j]));
          }
      }
      mergeColumnMax(best, rg, c, nCols, colAmax);
    }
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      int64_t r0 = rBegin + step * kTileRows + rg * kLaneRows;
#pragma unroll
      for (int i = 0; i < kLaneRows; ++i) {
#pragma unroll
        for (int m = 1; m < 8; m *= 2)
          rowBest[step][i] =
              max(rowBest[step][i],
                  __shfl_xor_sync(0xFFFFFFFFu, rowBest[step][i], m));
        if (cg == 0 && r0 + i < rEnd && rowBest[step][i] != 0)
          atomicMax(&rowAmax[r0 + i], rowBest[step][i]);
      }
    }
  }
}

} // namespace quant

using namespace quant;

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

bool vectorLoadsOk(const void *data, int64_t cols, int64_t ld) {
  return aligned(data, 16) && cols % kVec == 0 && ld % kVec == 0;
}

cudaError_t launchAmaxParts(slinrt_dtype src, const Fp8Part *parts,
                            int numParts, const float *colScale, float *amax,
                            cudaStream_t stream, float *amaxPlain) {
  for (int first = 0; first < numParts; first += kMaxPartsPerLaunch) {
    int count = std::min(numParts - first, kMaxPartsPerLaunch);
    PartsArg args = partsArg(parts, first, count, 1);
    int64_t largest = 0;
    for (int i = 0; i < count; ++i)
      largest = std::max(largest, args.parts[i].rows * args.parts[i].cols);
    // One wave over all parts, fewer blocks for small parts.
    int64_t blocks = std::max<int64_t>(
        1, std::min<int64_t>(
               ceilDiv(largest, kThreads * kVec * 8),
               std::max<int64_t>(kAmaxBlocksPerSM * smCount() / count, 8)));
    // With colScale (one part), the dense path needs a whole number of rows
    // of vectors per grid-wide round: the threads past it idle.
    int64_t colStride = 0;
    const Fp8Part &lead = args.parts[0];
    if (colScale && count == 1 && lead.ld == lead.cols && lead.vectorOk &&
        lead.cols > 0) {
      int64_t rowsPerRound = blocks * kThreads / (lead.cols / kVec);
      colStride = rowsPerRound * lead.cols;
    }
    cudaError_t err = dispatchQuant(src, SLINRT_F8E4M3FN, [&](auto s, auto) {
      using S = decltype(s);
      return launchKernel(&amaxPartsKernel<S>,
                          dim3(unsigned(blocks), unsigned(count)),
                          dim3(kThreads), stream, args, colScale,
                          reinterpret_cast<uint32_t *>(amax + first),
                          reinterpret_cast<uint32_t *>(amaxPlain), colStride);
    });
    if (err != cudaSuccess)
      return err;
  }
  return cudaSuccess;
}

cudaError_t quant::launchColAmax(slinrt_dtype src, slinrt_dtype dst,
                                 const Fp8Part &x, int64_t colTiles,
                                 int64_t jobs, const float *colScale,
                                 uint32_t *colAmax, cudaStream_t stream) {
  return dispatchQuant(src, dst, [&](auto s, auto) {
    using S = decltype(s);
    return launchKernel(&colAmaxKernel<S>, dim3(warpJobBlocks(jobs)),
                        dim3(kThreads), stream, x, colTiles, colScale, colAmax);
  });
}

cudaError_t quant::launchRowColAmax(slinrt_dtype src, slinrt_dtype dst,
                                    const Fp8Part &x, int64_t colTiles,
                                    int64_t tilesPerJob, int64_t jobs,
                                    const float *colScale, uint32_t *rowAmax,
                                    uint32_t *colAmax, cudaStream_t stream) {
  return dispatchQuant(src, dst, [&](auto s, auto) {
    using S = decltype(s);
    return launchKernel(&rowColAmaxKernel<S>, dim3(warpJobBlocks(jobs)),
                        dim3(kThreads), stream, x, colTiles, tilesPerJob,
                        colScale, rowAmax, colAmax);
  });
}

} // namespace cuda
} // namespace slinrt

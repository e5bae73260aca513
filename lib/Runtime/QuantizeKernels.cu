//===- QuantizeKernels.cu - FP8 amax and cast kernels -----------*- C++ -*-===//
//
// The CUDA kernels of the FP8 quantization (see CUDAKernels.h): amax over
// weight parts in one launch, the cast of the parts (and of a tensorwise
// activation) tile by tile through shared memory so that both the row-major
// and the transposed output are written in runs, a block-per-row quantizer
// and a column-strip quantizer. Values, scales and bytes come from Float8.h,
// shared with the CPU backend, in the same fp32 operations, so the targets
// agree bit for bit. Inputs are read 16 bytes at a time where the layout
// allows it. Nothing here allocates or synchronizes.
//
//===----------------------------------------------------------------------===//

#include "CUDAKernels.h"
#include "Float8.h"

#include <algorithm>

namespace slinrt {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
/// Elements per thread and load: 16 bytes of 16-bit types, two loads of fp32.
constexpr int kVec = 8;
/// Cast tiles: 32 rows x 64 columns, 8 elements per thread.
constexpr int kTileRows = 32, kTileCols = 64;
constexpr int64_t kMaxGridY = 65535;

/// The parts of one launch, passed by value (kernel parameter space).
struct PartsArg {
  Fp8Part parts[kMaxPartsPerLaunch];
  /// Cast: first row tile of each part (prefix sums; one more entry).
  int64_t tileStart[kMaxPartsPerLaunch + 1];
  int count;
};

/// Loads kVec consecutive elements at `p` as floats, 16 bytes at a time
/// (`p` 16-byte aligned).
template <typename S>
__device__ __forceinline__ void loadVector(const S *p, float (&v)[kVec]) {
  constexpr int perLoad = 16 / sizeof(S);
#pragma unroll
  for (int l = 0; l < kVec / perLoad; ++l) {
    uint4 raw = reinterpret_cast<const uint4 *>(p)[l];
    S elems[perLoad];
    memcpy(elems, &raw, 16);
#pragma unroll
    for (int j = 0; j < perLoad; ++j)
      v[l * perLoad + j] = toFloat(elems[j]);
  }
}

/// Loads up to kVec elements of row `r` of `part` from column `c` (those
/// past `cols` are 0), times colScale when given. Vector loads when
/// `vectorOk` (16-byte aligned rows, cols a multiple of kVec).
template <typename S>
__device__ __forceinline__ void loadRun(const Fp8Part &part, int64_t cols,
                                        int64_t r, int64_t c,
                                        const float *colScale, bool vectorOk,
                                        float (&v)[kVec]) {
  const S *row = static_cast<const S *>(part.data) + r * part.ld;
  if (vectorOk && c + kVec <= cols) {
    loadVector(row + c, v);
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      v[j] = c + j < cols ? toFloat(row[c + j]) : 0.0f;
  }
  if (colScale) {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      v[j] = c + j < cols ? v[j] * colScale[c + j] : 0.0f;
  }
}

/// The block-wide maximum of `bits` (every thread gets it).
__device__ __forceinline__ uint32_t blockMax(uint32_t bits) {
  __shared__ uint32_t perWarp[kWarps];
  bits = __reduce_max_sync(0xFFFFFFFFu, bits);
  int warp = threadIdx.x / 32;
  __syncthreads(); // perWarp may still be read by a previous call
  if (threadIdx.x % 32 == 0)
    perWarp[warp] = bits;
  __syncthreads();
  uint32_t best = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w)
    best = max(best, perWarp[w]);
  return best;
}

/// amax[i] = max |parts[i]| (times colScale): grid x chunks x parts, each
/// block reduces its chunk and merges with atomicMax on the float bits.
template <typename S>
__global__ void amaxPartsKernel(PartsArg args, const float *colScale,
                                uint32_t *amax) {
  const Fp8Part &part = args.parts[blockIdx.y];
  uint32_t best = 0;
  int64_t threads = int64_t(gridDim.x) * blockDim.x;
  int64_t tid = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (part.ld == part.cols && !colScale && part.vectorOk) {
    // Dense: one run of rows·cols elements, no index division.
    const S *data = static_cast<const S *>(part.data);
    int64_t n = part.rows * part.cols;
    for (int64_t i = tid * kVec; i + kVec <= n; i += threads * kVec) {
      float v[kVec];
      loadVector(data + i, v);
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        best = max(best, absBits(v[j]));
    }
    for (int64_t i = n / kVec * kVec + tid; i < n; i += threads)
      best = max(best, absBits(toFloat(data[i])));
  } else {
    // Warp per row, lanes along the row.
    int lane = threadIdx.x % 32;
    int64_t warp = tid / 32, warps = threads / 32;
    for (int64_t r = warp; r < part.rows; r += warps)
      for (int64_t c = int64_t(lane) * kVec; c < part.cols; c += 32 * kVec) {
        float v[kVec];
        loadRun<S>(part, part.cols, r, c, colScale, part.vectorOk, v);
#pragma unroll
        for (int j = 0; j < kVec; ++j)
          best = max(best, absBits(v[j]));
      }
  }
  best = blockMax(best);
  if (threadIdx.x == 0 && best != 0)
    atomicMax(&amax[blockIdx.y], best);
}

/// Casts the parts tile by tile, each with the scale of its amax; writes
/// out [totalRows, cols], outT [cols, totalRows] (through shared memory),
/// scaleInv per part and rowScaleInv per row (blocks of column tile 0).
template <typename S, typename F8>
__global__ void castPartsKernel(PartsArg args, int64_t cols, int64_t totalRows,
                                const float *colScale, const float *amax,
                                uint8_t *out, bool outVectorOk, uint8_t *outT,
                                bool outTVectorOk, float *scaleInv,
                                float *rowScaleInv) {
  __shared__ __align__(8) uint8_t tileT[kTileCols][kTileRows + 8];
  int64_t totalTiles = args.tileStart[args.count];
  int tr = threadIdx.x / (kTileCols / kVec);
  int tc = (threadIdx.x % (kTileCols / kVec)) * kVec;
  int64_t c0 = int64_t(blockIdx.x) * kTileCols;
  for (int64_t tile = blockIdx.y; tile < totalTiles; tile += gridDim.y) {
    int p = 0;
    while (args.tileStart[p + 1] <= tile)
      ++p;
    const Fp8Part &part = args.parts[p];
    int64_t r0 = (tile - args.tileStart[p]) * kTileRows;
    float scale = fp8Scale(amax[p], Fp8Format<F8>::kMax);
    if (blockIdx.x == 0) {
      if (scaleInv && r0 == 0 && threadIdx.x == 0)
        scaleInv[p] = 1.0f / scale;
      if (rowScaleInv && threadIdx.x < kTileRows &&
          r0 + threadIdx.x < part.rows)
        rowScaleInv[part.rowOffset + r0 + threadIdx.x] = 1.0f / scale;
    }
    int64_t r = r0 + tr, c = c0 + tc;
    uint8_t q[kVec] = {};
    if (r < part.rows && c < cols) {
      float v[kVec];
      loadRun<S>(part, cols, r, c, colScale, part.vectorOk, v);
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        q[j] = encodeFp8<F8>(v[j] * scale);
      if (out) {
        uint8_t *dst = out + (part.rowOffset + r) * cols + c;
        if (outVectorOk && c + kVec <= cols) {
          uint2 packed;
          memcpy(&packed, q, 8);
          *reinterpret_cast<uint2 *>(dst) = packed;
        } else {
          for (int j = 0; j < kVec && c + j < cols; ++j)
            dst[j] = q[j];
        }
      }
    }
    if (!outT)
      continue;
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      tileT[tc + j][tr] = q[j];
    __syncthreads();
    // Thread: column tile column (threadIdx.x / 4), 8 rows from 8·(x % 4).
    int col = threadIdx.x / (kTileRows / kVec);
    int rowInTile = (threadIdx.x % (kTileRows / kVec)) * kVec;
    int64_t k = c0 + col, rr = r0 + rowInTile;
    if (k < cols && rr < part.rows) {
      uint8_t *dst = outT + k * totalRows + part.rowOffset + rr;
      if (outTVectorOk && rr + kVec <= part.rows) {
        *reinterpret_cast<uint2 *>(dst) =
            *reinterpret_cast<const uint2 *>(&tileT[col][rowInTile]);
      } else {
        for (int j = 0; j < kVec && rr + j < part.rows; ++j)
          dst[j] = tileT[col][rowInTile + j];
      }
    }
    __syncthreads(); // tileT is rewritten by the next tile
  }
}

/// Quantizes each row of x with its own amax: a block per row reads the
/// row twice (the second time from cache).
template <typename S, typename F8>
__global__ void quantizeRowsKernel(Fp8Part x, const float *colScale,
                                   float *amax, float *scaleInv, uint8_t *out,
                                   bool outVectorOk, uint8_t *outT) {
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
    float scale = fp8Scale(rowAmax, Fp8Format<F8>::kMax);
    if (threadIdx.x == 0) {
      if (amax)
        amax[r] = rowAmax;
      scaleInv[r] = 1.0f / scale;
    }
    for (int64_t c = int64_t(threadIdx.x) * kVec; c < K;
         c += int64_t(blockDim.x) * kVec) {
      float v[kVec];
      loadRun<S>(x, K, r, c, colScale, x.vectorOk, v);
      uint8_t q[kVec];
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        q[j] = encodeFp8<F8>(v[j] * scale);
      if (out) {
        uint8_t *dst = out + r * K + c;
        if (outVectorOk && c + kVec <= K) {
          uint2 packed;
          memcpy(&packed, q, 8);
          *reinterpret_cast<uint2 *>(dst) = packed;
        } else {
          for (int j = 0; j < kVec && c + j < K; ++j)
            dst[j] = q[j];
        }
      }
      if (outT)
        for (int j = 0; j < kVec && c + j < K; ++j)
          outT[(c + j) * M + r] = q[j];
    }
  }
}

/// Quantizes each column of x with its own amax: a block of 32 x 8 threads
/// per strip of 32 columns; the cast goes through a 32 x 32 shared tile so
/// that out and outT are both written in 32-byte runs.
template <typename S, typename F8>
__global__ void quantizeColsKernel(Fp8Part x, const float *colScale,
                                   float *amax, float *scaleInv, uint8_t *out,
                                   uint8_t *outT) {
  __shared__ uint32_t partial[8][32];
  __shared__ float scales[32];
  __shared__ uint8_t tile[32][33];
  int64_t K = x.cols, M = x.rows;
  int tx = threadIdx.x, ty = threadIdx.y;
  const S *data = static_cast<const S *>(x.data);
  auto valueAt = [&](int64_t m, int64_t k) {
    float v = toFloat(data[m * x.ld + k]);
    return colScale ? v * colScale[k] : v;
  };
  for (int64_t k0 = int64_t(blockIdx.x) * 32; k0 < K;
       k0 += int64_t(gridDim.x) * 32) {
    int64_t k = k0 + tx;
    uint32_t best = 0;
    if (k < K)
      for (int64_t m = ty; m < M; m += 8)
        best = max(best, absBits(valueAt(m, k)));
    partial[ty][tx] = best;
    __syncthreads();
    if (ty == 0) {
      for (int i = 1; i < 8; ++i)
        best = max(best, partial[i][tx]);
      float colAmax = bitCast<float>(best);
      float scale = fp8Scale(colAmax, Fp8Format<F8>::kMax);
      scales[tx] = scale;
      if (k < K) {
        if (amax)
          amax[k] = colAmax;
        scaleInv[k] = 1.0f / scale;
      }
    }
    __syncthreads();
    for (int64_t m0 = 0; m0 < M && (out || outT); m0 += 32) {
      for (int i = ty; i < 32; i += 8) {
        int64_t m = m0 + i;
        uint8_t q = 0;
        if (m < M && k < K) {
          q = encodeFp8<F8>(valueAt(m, k) * scales[tx]);
          if (out)
            out[m * K + k] = q;
        }
        tile[i][tx] = q;
      }
      __syncthreads();
      if (outT)
        for (int i = ty; i < 32; i += 8) {
          int64_t kk = k0 + i, m = m0 + tx;
          if (kk < K && m < M)
            outT[kk * M + m] = tile[tx][i];
        }
      __syncthreads();
    }
  }
}

/// Calls `fn(S{}, F8{})` for the source and FP8 types.
template <typename Fn>
cudaError_t dispatchQuant(slinrt_dtype src, slinrt_dtype dst, Fn &&fn) {
  auto withSource = [&](auto s) {
    if (dst == SLINRT_F8E4M3FN)
      return fn(s, Float8E4M3FN{});
    if (dst == SLINRT_F8E5M2)
      return fn(s, Float8E5M2{});
    return cudaErrorInvalidValue;
  };
  switch (src) {
  case SLINRT_F32:
    return withSource(float{});
  case SLINRT_F16:
    return withSource(Half{});
  case SLINRT_BF16:
    return withSource(BFloat16{});
  case SLINRT_F64:
  case SLINRT_F8E4M3FN:
  case SLINRT_F8E5M2:
    break;
  }
  return cudaErrorInvalidValue;
}

bool aligned(const void *p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

/// Copies parts[first, first + count) into a launch argument (tile counts of
/// at least 1, so that empty parts still get their scales written).
PartsArg partsArg(const Fp8Part *parts, int first, int count) {
  PartsArg args{};
  args.count = count;
  for (int i = 0; i < count; ++i) {
    args.parts[i] = parts[first + i];
    int64_t tiles = (parts[first + i].rows + kTileRows - 1) / kTileRows;
    args.tileStart[i + 1] = args.tileStart[i] + std::max<int64_t>(tiles, 1);
  }
  return args;
}

} // namespace

bool vectorLoadsOk(const void *data, int64_t cols, int64_t ld) {
  return aligned(data, 16) && cols % kVec == 0 && ld % kVec == 0;
}

cudaError_t launchAmaxParts(slinrt_dtype src, const Fp8Part *parts,
                            int numParts, const float *colScale, float *amax,
                            cudaStream_t stream) {
  for (int first = 0; first < numParts; first += kMaxPartsPerLaunch) {
    int count = std::min(numParts - first, kMaxPartsPerLaunch);
    PartsArg args = partsArg(parts, first, count);
    int64_t largest = 0;
    for (int i = 0; i < count; ++i)
      largest = std::max(largest, args.parts[i].rows * args.parts[i].cols);
    // About 8 blocks per SM over all parts, fewer for small parts.
    int64_t blocks = std::max<int64_t>(
        1, std::min<int64_t>((largest + kThreads * kVec - 1) /
                                 (kThreads * kVec),
                             std::max<int64_t>(1024 / count, 8)));
    cudaError_t err = dispatchQuant(src, SLINRT_F8E4M3FN, [&](auto s, auto) {
      using S = decltype(s);
      return launchKernel(&amaxPartsKernel<S>,
                          dim3(unsigned(blocks), unsigned(count)),
                          dim3(kThreads), stream, args, colScale,
                          reinterpret_cast<uint32_t *>(amax + first));
    });
    if (err != cudaSuccess)
      return err;
  }
  return cudaSuccess;
}

cudaError_t launchCastParts(slinrt_dtype src, slinrt_dtype dst,
                            const Fp8Part *parts, int numParts, int64_t cols,
                            int64_t totalRows, const float *colScale,
                            const float *amax, uint8_t *out, uint8_t *outT,
                            float *scaleInv, float *rowScaleInv,
                            cudaStream_t stream) {
  bool outVectorOk = aligned(out, 8) && cols % kVec == 0;
  bool outTVectorOk = aligned(outT, 8) && totalRows % kVec == 0;
  for (int first = 0; first < numParts; first += kMaxPartsPerLaunch) {
    int count = std::min(numParts - first, kMaxPartsPerLaunch);
    PartsArg args = partsArg(parts, first, count);
    for (int i = 0; i < count; ++i)
      outTVectorOk = outTVectorOk && args.parts[i].rowOffset % kVec == 0;
    int64_t colTiles =
        std::max<int64_t>(1, (cols + kTileCols - 1) / kTileCols);
    int64_t rowTiles = std::min(args.tileStart[count], kMaxGridY);
    cudaError_t err = dispatchQuant(src, dst, [&](auto s, auto f) {
      using S = decltype(s);
      using F8 = decltype(f);
      return launchKernel(&castPartsKernel<S, F8>,
                          dim3(unsigned(colTiles), unsigned(rowTiles)),
                          dim3(kThreads), stream, args, cols, totalRows,
                          colScale, amax + first, out, outVectorOk, outT,
                          outTVectorOk, scaleInv ? scaleInv + first : nullptr,
                          rowScaleInv);
    });
    if (err != cudaSuccess)
      return err;
  }
  return cudaSuccess;
}

cudaError_t launchQuantizeRows(slinrt_dtype src, slinrt_dtype dst,
                               const Fp8Part &x, const float *colScale,
                               float *amax, float *scaleInv, uint8_t *out,
                               uint8_t *outT, cudaStream_t stream) {
  if (x.rows <= 0)
    return cudaSuccess;
  bool outVectorOk = aligned(out, 8) && x.cols % kVec == 0;
  int64_t blocks = std::min<int64_t>(x.rows, 1 << 16);
  return dispatchQuant(src, dst, [&](auto s, auto f) {
    using S = decltype(s);
    using F8 = decltype(f);
    return launchKernel(&quantizeRowsKernel<S, F8>, dim3(unsigned(blocks)),
                        dim3(kThreads), stream, x, colScale, amax, scaleInv,
                        out, outVectorOk, outT);
  });
}

cudaError_t launchQuantizeCols(slinrt_dtype src, slinrt_dtype dst,
                               const Fp8Part &x, const float *colScale,
                               float *amax, float *scaleInv, uint8_t *out,
                               uint8_t *outT, cudaStream_t stream) {
  if (x.cols <= 0)
    return cudaSuccess;
  int64_t blocks = std::min<int64_t>((x.cols + 31) / 32, 1 << 16);
  return dispatchQuant(src, dst, [&](auto s, auto f) {
    using S = decltype(s);
    using F8 = decltype(f);
    return launchKernel(&quantizeColsKernel<S, F8>, dim3(unsigned(blocks)),
                        dim3(32, 8), stream, x, colScale, amax, scaleInv, out,
                        outT);
  });
}

} // namespace cuda
} // namespace slinrt

//===- QuantizeKernels.cu - FP8 amax and cast kernels -----------*- C++ -*-===//
//
// The CUDA kernels of the FP8 quantization (see CUDAKernels.h): amax over
// weight parts in one launch, a tiled cast (parts, tensorwise activations and
// column-wise scales) that writes the row-major and the transposed output,
// an elementwise cast for one dense input without outT, a block-per-row
// quantizer that keeps its row in registers, a column amax, and a row and
// column amax in one pass (with the cast's RowsCols form: the rowwise dual).
// Values, scales and bytes follow Float8.h, shared with the CPU backend, in
// the same fp32 operations, so the targets agree bit for bit. On sm89+ the
// cast uses the hardware FP8 conversion (round to nearest even, saturating to
// the finite range, as satcast does), with NaN rewritten to the Float8.h
// encoding; older devices run Float8.h's encoder. Nothing here allocates or
// synchronizes.
//
//===----------------------------------------------------------------------===//

#include "CUDAKernels.h"
#include "Float8.h"

#include <cuda_fp8.h>

#include <algorithm>
#include <atomic>
#include <type_traits>

namespace slinrt {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
/// Elements per thread and load: 16 bytes of 16-bit types, two loads of fp32.
constexpr int kVec = 8;
/// Warp tiles of the cast and column amax: 4 x 8 lanes, each 8 rows x 8
/// columns, so that a lane writes 8 bytes of a column of outT. With 16 rows
/// a lane (16-byte outT stores) the cast needs 128 registers, 2 blocks per
/// SM; on the H200 it was slower in 7 of the 9 casts of a Llama-3-8B
/// training step, faster only in the widest dual one (dY of gate/up), and
/// 1.06x slower on the whole (docs/Performance.md, 2026-12-02).
constexpr int kLaneRows = 8;
constexpr int kTileRows = 4 * kLaneRows, kTileCols = 8 * kVec;
/// Rows one warp of the column amax reduces before its atomics.
constexpr int64_t kAmaxChunkRows = 2 * kTileRows;
/// Largest row held in registers by the row quantizer: kThreads·kVec·8
/// elements in blocks of kThreads; 16-bit rows up to twice that (dY of
/// Llama-3-8B's gate/up, 28672) in blocks of 2·kThreads (120 registers a
/// thread, so one block per SM). Longer rows take the two-pass kernel, which
/// streamed dY of gate/up at about 1.2 TB/s on the H200 (docs/Performance.md,
/// 2026-12-04).
constexpr int kMaxRowVectors = 8;
constexpr int kLongRowThreads = 2 * kThreads;
/// Resident blocks of the cast per SM (its register bound: 85 a thread for
/// 16-bit sources; fp32 ones, twice the loads, would spill there and get 128).
template <typename S> constexpr int castBlocksPerSM() {
  return sizeof(S) == 4 ? 2 : 3;
}
/// Resident blocks of the amax per SM (its register bound): the grid is one
/// wave of them.
constexpr int kAmaxBlocksPerSM = 4;

/// The parts of one launch, passed by value (kernel parameter space).
struct PartsArg {
  Fp8Part parts[kMaxPartsPerLaunch];
  /// Cast: first warp tile of each part (prefix sums; one more entry).
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
    uint4 raw = __ldg(reinterpret_cast<const uint4 *>(p) + l);
    S elems[perLoad];
    memcpy(elems, &raw, 16);
#pragma unroll
    for (int j = 0; j < perLoad; ++j)
      v[l * perLoad + j] = toFloat(elems[j]);
  }
}

/// colScale[c, c + kVec) (0 past `cols`): two 16-byte loads when the run
/// is whole and 16-byte aligned. Scalar loads of a lane's 8 scales, 32
/// bytes apart across the warp, touch a 32-byte sector per lane each: 8
/// times the sectors of the data they scale.
__device__ __forceinline__ void loadColScale(const float *colScale, int64_t c,
                                             int64_t cols, float (&s)[kVec]) {
  const float *p = colScale + c;
  if (c + kVec <= cols && reinterpret_cast<uintptr_t>(p) % 16 == 0) {
    float4 lo = __ldg(reinterpret_cast<const float4 *>(p));
    float4 hi = __ldg(reinterpret_cast<const float4 *>(p) + 1);
    float all[kVec] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      s[j] = all[j];
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      s[j] = c + j < cols ? __ldg(p + j) : 0.0f;
  }
}

/// Loads up to kVec elements of row `r` of `part` from column `c` (those
/// past `cols` are 0), times colScale when given. Vector loads when
/// `vectorOk` (16-byte aligned rows, cols a multiple of kVec).
template <typename S>
__device__ __forceinline__ void
loadRun(const Fp8Part &part, int64_t cols, int64_t r, int64_t c,
        const float *colScale, bool vectorOk, float (&v)[kVec]) {
  const S *row = static_cast<const S *>(part.data) + r * part.ld;
  if (vectorOk && c + kVec <= cols) {
    loadVector(row + c, v);
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      v[j] = c + j < cols ? toFloat(row[c + j]) : 0.0f;
  }
  if (colScale) {
    float cs[kVec];
    loadColScale(colScale, c, cols, cs);
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      v[j] = c + j < cols ? v[j] * cs[j] : 0.0f;
  }
}

/// satcast (Float8.h) of kVec floats into two words, element j in byte j.
template <typename F8>
__device__ __forceinline__ uint2 encodeVector(const float (&v)[kVec]) {
  uint32_t w[2] = {0, 0};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  constexpr __nv_fp8_interpretation_t kind =
      std::is_same<F8, Float8E4M3FN>::value ? __NV_E4M3 : __NV_E5M2;
#pragma unroll
  for (int j = 0; j < kVec; j += 2) {
    uint32_t pair = __nv_cvt_float2_to_fp8x2(make_float2(v[j], v[j + 1]),
                                             __NV_SATFINITE, kind);
    w[j / 4] |= pair << (8 * (j % 4));
  }
  // The hardware's NaN is 0x7F whatever the sign; satcast keeps the sign.
  // Everything else (rounding, saturation of large values and infinities,
  // signed zeros) is satcast already. Only a NaN gives the byte 0x7F (the
  // largest finite byte is 0x7E or 0x7B), so one byte compare per word
  // skips the fix-up for the vectors without any.
  static_assert(Fp8Format<F8>::kNaNBits == 0x7F &&
                    Fp8Format<F8>::kMaxBits < 0x7F,
                "the hardware NaN byte must be the only 0x7F");
  if ((__vcmpeq4(w[0], 0x7F7F7F7Fu) | __vcmpeq4(w[1], 0x7F7F7F7Fu)) == 0)
    return make_uint2(w[0], w[1]);
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    uint32_t bits = bitCast<uint32_t>(v[j]);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
      uint32_t nan = ((bits >> 24) & 0x80u) | Fp8Format<F8>::kNaNBits;
      w[j / 4] =
          (w[j / 4] & ~(0xFFu << (8 * (j % 4)))) | (nan << (8 * (j % 4)));
    }
  }
#else
#pragma unroll
  for (int j = 0; j < kVec; ++j)
    w[j / 4] |= uint32_t(encodeFp8<F8>(v[j])) << (8 * (j % 4));
#endif
  return make_uint2(w[0], w[1]);
}

/// Stores the first `n` (<= kVec) bytes of `q` at `dst`, 8 at a time when
/// `vectorOk` and n == kVec.
__device__ __forceinline__ void storeRun(uint8_t *dst, uint2 q, int64_t n,
                                         bool vectorOk) {
  if (vectorOk && n >= kVec) {
    *reinterpret_cast<uint2 *>(dst) = q;
    return;
  }
#pragma unroll
  for (int j = 0; j < kVec; ++j)
    if (j < n)
      dst[j] = uint8_t((j < 4 ? q.x : q.y) >> (8 * (j % 4)));
}

/// The block-wide maximum of `bits` (every thread gets it), for blocks of
/// `Threads` threads.
template <int Threads = kThreads>
__device__ __forceinline__ uint32_t blockMax(uint32_t bits) {
  constexpr int kBlockWarps = Threads / 32;
  __shared__ uint32_t perWarp[kBlockWarps];
  bits = __reduce_max_sync(0xFFFFFFFFu, bits);
  int warp = threadIdx.x / 32;
  __syncthreads(); // perWarp may still be read by a previous call
  if (threadIdx.x % 32 == 0)
    perWarp[warp] = bits;
  __syncthreads();
  uint32_t best = 0;
#pragma unroll
  for (int w = 0; w < kBlockWarps; ++w)
    best = max(best, perWarp[w]);
  return best;
}

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
#pragma unroll
          for (int j = 0; j < kVec; ++j)
            v[u][j] = 0.0f;
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

/// The cast of one dense part (rows·cols elements in one run, vectorOk)
/// without outT, colScale or row scales: the tensorwise activation. A
/// thread converts kDenseLoads vectors a step, a block's vectors
/// contiguous, so that loads and 8-byte stores are both warp-contiguous.
constexpr int kDenseLoads = 4;
template <typename S, typename F8>
__global__ void __launch_bounds__(kThreads)
    castDenseKernel(const S *x, int64_t vectors, const float *amax,
                    uint8_t *out, bool outVectorOk, float *scaleInv) {
  float scale = fp8Scale(*amax, Fp8Format<F8>::kMax);
  if (scaleInv && blockIdx.x == 0 && threadIdx.x == 0)
    *scaleInv = 1.0f / scale;
  for (int64_t first =
           int64_t(blockIdx.x) * kThreads * kDenseLoads + threadIdx.x;
       first < vectors; first += int64_t(gridDim.x) * kThreads * kDenseLoads) {
    float v[kDenseLoads][kVec];
#pragma unroll
    for (int u = 0; u < kDenseLoads; ++u)
      if (first + u * kThreads < vectors)
        loadVector(x + (first + u * kThreads) * kVec, v[u]);
#pragma unroll
    for (int u = 0; u < kDenseLoads; ++u) {
      int64_t vi = first + u * kThreads;
      if (vi >= vectors)
        continue;
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        v[u][j] = v[u][j] * scale;
      storeRun(out + vi * kVec, encodeVector<F8>(v[u]), kVec, outVectorOk);
    }
  }
}

/// Where a warp tile lies: its part, first row and first column.
struct WarpTile {
  int part;
  int64_t r0, c0;
};

__device__ __forceinline__ WarpTile locateTile(const PartsArg &args,
                                               int64_t tile, int64_t colTiles) {
  int p = 0;
  while (args.tileStart[p + 1] <= tile)
    ++p;
  int64_t local = tile - args.tileStart[p];
  return {p, local / colTiles * kTileRows, local % colTiles * kTileCols};
}

/// Casts the parts warp tile by warp tile (32 x 64 elements; a lane owns
/// kLaneRows rows x 8 columns, read 16 bytes a row). The scale is the part's
/// (from amax[p]) or, when PerColumn, column c's (from the amax bits in
/// colAmax[c]). Writes out [totalRows, cols] in 8-byte runs, outT [cols,
/// totalRows] in 8-byte column runs (a byte transpose in registers), and,
/// unless PerColumn, scaleInv per part and rowScaleInv per row. Dual (one
/// part, colScale, not PerColumn): out holds x · colScale with the scale of
/// amax[0], and outT holds x itself with the scale of amaxT[0] (its
/// scale_inv in scaleInvT[0]): the dgrad and wgrad casts of dy from one read.
/// Dual with RowsCols: out holds x · colScale with the scale of its row (from
/// the amax bits in rowAmax[r]) and outT holds x with the scale of its column
/// (colAmax[c]); no scale_inv is written (the caller's last kernel does).
template <typename S, typename F8, bool PerColumn, bool Dual,
          bool RowsCols = false>
__global__ void __launch_bounds__(kThreads, castBlocksPerSM<S>())
    castTilesKernel(PartsArg args, int64_t cols, int64_t totalRows,
                    int64_t colTiles, const float *colScale, const float *amax,
                    const uint32_t *colAmax, uint8_t *out, bool outVectorOk,
                    uint8_t *outT, bool outTVectorOk, float *scaleInv,
                    float *rowScaleInv, const float *amaxT, float *scaleInvT,
                    const uint32_t *rowAmax) {
  static_assert(!(Dual && PerColumn), "Dual casts take one scale each");
  static_assert(Dual || !RowsCols, "RowsCols is a dual cast");
  constexpr bool kTensorDual = Dual && !RowsCols;
  constexpr float kMax = Fp8Format<F8>::kMax;
  float scaleT = kTensorDual ? fp8Scale(amaxT[0], kMax) : 1.0f;
  if (kTensorDual && blockIdx.x == 0 && threadIdx.x == 0)
    scaleInvT[0] = 1.0f / scaleT;
  int lane = threadIdx.x % 32;
  int rg = lane / 8, cg = lane % 8;
  int64_t totalTiles = args.tileStart[args.count];
  int64_t warps = int64_t(gridDim.x) * kWarps;
  for (int64_t tile = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32;
       tile < totalTiles; tile += warps) {
    WarpTile t = locateTile(args, tile, colTiles);
    const Fp8Part &part = args.parts[t.part];
    float partScale = 1.0f;
    if (!PerColumn && !RowsCols) {
      partScale = fp8Scale(amax[t.part], kMax);
      if (t.c0 == 0) {
        if (scaleInv && t.r0 == 0 && lane == 0)
          scaleInv[t.part] = 1.0f / partScale;
        if (rowScaleInv)
          for (int64_t r = t.r0 + lane; r < t.r0 + kTileRows && r < part.rows;
               r += 32)
            rowScaleInv[part.rowOffset + r] = 1.0f / partScale;
      }
    }
    int64_t r0 = t.r0 + rg * kLaneRows, c = t.c0 + cg * kVec;
    if (c >= cols || r0 >= part.rows)
      continue;
    int64_t nCols = min(int64_t(kVec), cols - c);
    int nRows = int(min(int64_t(kLaneRows), part.rows - r0));
    float mul[kVec]; // colScale · scale, applied in that order
    float cs[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      cs[j] = colScale && j < nCols ? colScale[c + j] : 1.0f;
      mul[j] = PerColumn || RowsCols
                   ? (j < nCols ? fp8Scale(bitCast<float>(colAmax[c + j]), kMax)
                                : 1.0f)
                   : partScale;
    }
    // RowsCols: out's scale per row, outT's (mul) per column.
    float rowMul[kLaneRows];
#pragma unroll
    for (int i = 0; i < kLaneRows; ++i)
      rowMul[i] =
          RowsCols && i < nRows
              ? fp8Scale(bitCast<float>(rowAmax[part.rowOffset + r0 + i]), kMax)
              : 1.0f;
    // q: the bytes outT takes, row by row. Dual writes out as it goes (x ·
    // colScale with the part's scale) and keeps x with scaleT in q; the
    // others keep out's bytes, which are also outT's.
    uint2 q[kLaneRows];
    uint8_t *outRows = out ? out + (part.rowOffset + r0) * cols + c : nullptr;
    // Fast (a whole aligned block): all loads in flight first (loads, then
    // the stores that might alias them). Else row by row, and Dual rereads
    // its rows, from cache. One instance each, so that neither carries the
    // other's registers.
    auto castBlock = [&](auto fastTag) {
      constexpr bool kFast = decltype(fastTag)::value;
      constexpr int kLoads = kVec * sizeof(S) / 16;
      uint4 raw[kFast ? kLaneRows : 1][kLoads];
      if (kFast) {
        const S *src = static_cast<const S *>(part.data) + r0 * part.ld + c;
#pragma unroll
        for (int i = 0; i < kLaneRows; ++i)
#pragma unroll
          for (int l = 0; l < kLoads; ++l)
            raw[i][l] =
                __ldg(reinterpret_cast<const uint4 *>(src + i * part.ld) + l);
      }
      // Row i of the lane's block as floats, times colScale when `scaled`
      // (0 past the part).
      auto rowValues = [&](int i, bool scaled, float(&v)[kVec]) {
        if (kFast) {
          S elems[kVec];
          memcpy(elems, raw[i], sizeof(elems));
#pragma unroll
          for (int j = 0; j < kVec; ++j) {
            v[j] = toFloat(elems[j]);
            if (scaled && colScale)
              v[j] = v[j] * cs[j];
          }
        } else if (i < nRows) {
          loadRun<S>(part, cols, r0 + i, c, scaled ? colScale : nullptr,
                     part.vectorOk, v);
        } else {
#pragma unroll
          for (int j = 0; j < kVec; ++j)
            v[j] = 0.0f;
        }
      };
#pragma unroll
      for (int i = 0; i < kLaneRows; ++i) {
        float v[kVec];
        rowValues(i, /*scaled=*/true, v);
#pragma unroll
        for (int j = 0; j < kVec; ++j)
          v[j] = v[j] * (RowsCols ? rowMul[i] : mul[j]);
        q[i] = encodeVector<F8>(v);
        if (Dual) {
          if (i < nRows)
            storeRun(outRows + i * cols, q[i], nCols, outVectorOk);
          rowValues(i, /*scaled=*/false, v);
#pragma unroll
          for (int j = 0; j < kVec; ++j)
            v[j] = v[j] * (RowsCols ? mul[j] : scaleT);
          q[i] = encodeVector<F8>(v);
        }
      }
    };
    if (part.vectorOk && nCols == kVec && nRows == kLaneRows)
      castBlock(std::true_type{});
    else
      castBlock(std::false_type{});
    if (out && !Dual)
#pragma unroll
      for (int i = 0; i < kLaneRows; ++i)
        if (i < nRows)
          storeRun(outRows + i * cols, q[i], nCols, outVectorOk);
    if (!outT)
      continue;
    // Byte transpose: column j of the lane's 8 x 8 block, rows in order.
    uint32_t colWords[kVec][kLaneRows / 4];
#pragma unroll
    for (int g = 0; g < kLaneRows / 4; ++g)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint32_t a = h ? q[4 * g].y : q[4 * g].x;
        uint32_t b = h ? q[4 * g + 1].y : q[4 * g + 1].x;
        uint32_t cc = h ? q[4 * g + 2].y : q[4 * g + 2].x;
        uint32_t d = h ? q[4 * g + 3].y : q[4 * g + 3].x;
        uint32_t t0 = __byte_perm(a, b, 0x5140),
                 t1 = __byte_perm(cc, d, 0x5140);
        uint32_t t2 = __byte_perm(a, b, 0x7362),
                 t3 = __byte_perm(cc, d, 0x7362);
        colWords[4 * h + 0][g] = __byte_perm(t0, t1, 0x5410);
        colWords[4 * h + 1][g] = __byte_perm(t0, t1, 0x7632);
        colWords[4 * h + 2][g] = __byte_perm(t2, t3, 0x5410);
        colWords[4 * h + 3][g] = __byte_perm(t2, t3, 0x7632);
      }
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      if (j >= nCols)
        continue;
      uint8_t *dst = outT + (c + j) * totalRows + part.rowOffset + r0;
      if (outTVectorOk && nRows == kLaneRows) {
        *reinterpret_cast<uint2 *>(dst) =
            make_uint2(colWords[j][0], colWords[j][1]);
      } else {
#pragma unroll
        for (int i = 0; i < kLaneRows; ++i) // constant indices: registers
          if (i < nRows)
            dst[i] = uint8_t(colWords[j][i / 4] >> (8 * (i % 4)));
      }
    }
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
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      best[j] = max(best[j], __shfl_xor_sync(0xFFFFFFFFu, best[j], 8));
      best[j] = max(best[j], __shfl_xor_sync(0xFFFFFFFFu, best[j], 16));
    }
    if (rg == 0)
      for (int j = 0; j < kVec && j < nCols; ++j)
        if (best[j] != 0)
          atomicMax(&colAmax[c + j], best[j]);
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
#pragma unroll
              for (int j = 0; j < kVec; ++j)
                v[i][j] = 0.0f;
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
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        best[j] = max(best[j], __shfl_xor_sync(0xFFFFFFFFu, best[j], 8));
        best[j] = max(best[j], __shfl_xor_sync(0xFFFFFFFFu, best[j], 16));
      }
      if (rg == 0)
        for (int j = 0; j < kVec && j < nCols; ++j)
          if (best[j] != 0)
            atomicMax(&colAmax[c + j], best[j]);
    }
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      int64_t r0 = rBegin + step * kTileRows + rg * kLaneRows;
#pragma unroll
      for (int i = 0; i < kLaneRows; ++i) {
#pragma unroll
        for (int m = 1; m < 8; m *= 2)
          rowBest[step][i] = max(
              rowBest[step][i],
              __shfl_xor_sync(0xFFFFFFFFu, rowBest[step][i], m));
        if (cg == 0 && r0 + i < rEnd && rowBest[step][i] != 0)
          atomicMax(&rowAmax[r0 + i], rowBest[step][i]);
      }
    }
  }
}

/// From the column amax bits in `bits` (the scaleInv buffer): amax[k] (when
/// given) and scaleInv[k] = 1 / scale, in place.
template <typename F8>
__global__ void finishColsKernel(int64_t K, float *amax, float *scaleInv) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < K;
       k += int64_t(gridDim.x) * blockDim.x) {
    float colAmax = scaleInv[k]; // the bits of the amax
    if (amax)
      amax[k] = colAmax;
    scaleInv[k] = 1.0f / fp8Scale(colAmax, Fp8Format<F8>::kMax);
  }
}

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
                                  bool outVectorOk, uint8_t *outT) {
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
    float scale = fp8Scale(rowAmax, Fp8Format<F8>::kMax);
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
                       uint8_t *outT) {
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

/// The current device's SM count (cached per device; 132 if unknown).
int64_t smCount() {
  constexpr int kDevices = 64;
  static std::atomic<int> counts[kDevices];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 ||
      device >= kDevices) {
    (void)cudaGetLastError();
    return 132;
  }
  int n = counts[device].load(std::memory_order_relaxed);
  if (n == 0) {
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) !=
            cudaSuccess ||
        n <= 0) {
      (void)cudaGetLastError();
      n = 132;
    }
    counts[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Blocks of `threads` of `kernel` resident on the whole device (at least
/// one per SM).
template <typename Kernel>
int64_t residentBlocks(Kernel kernel, int threads = kThreads) {
  int perSM = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, kernel, threads,
                                                    0) != cudaSuccess ||
      perSM <= 0) {
    (void)cudaGetLastError();
    perSM = 1;
  }
  return int64_t(perSM) * smCount();
}

/// Blocks for `warpJobs` jobs of one warp each: all of them up to 16 blocks
/// per SM, then grid-stride.
unsigned warpJobBlocks(int64_t warpJobs) {
  return unsigned(std::max<int64_t>(
      1, std::min(ceilDiv(warpJobs, kWarps), 16 * smCount())));
}

/// Copies parts[first, first + count) into a launch argument; tileStart in
/// warp tiles of `colTiles` columns (at least one row of tiles, so that
/// empty parts still get their scales written).
PartsArg partsArg(const Fp8Part *parts, int first, int count,
                  int64_t colTiles) {
  PartsArg args{};
  args.count = count;
  for (int i = 0; i < count; ++i) {
    args.parts[i] = parts[first + i];
    int64_t rowTiles = ceilDiv(parts[first + i].rows, kTileRows);
    args.tileStart[i + 1] =
        args.tileStart[i] + std::max<int64_t>(rowTiles, 1) * colTiles;
  }
  return args;
}

/// Launches castTilesKernel over parts[0, numParts) in groups of
/// kMaxPartsPerLaunch.
template <bool PerColumn, bool Dual = false, bool RowsCols = false>
cudaError_t launchCastTiles(
    slinrt_dtype src, slinrt_dtype dst, const Fp8Part *parts, int numParts,
    int64_t cols, int64_t totalRows, const float *colScale, const float *amax,
    const uint32_t *colAmax, uint8_t *out, uint8_t *outT, float *scaleInv,
    float *rowScaleInv, cudaStream_t stream, const float *amaxT = nullptr,
    float *scaleInvT = nullptr, const uint32_t *rowAmax = nullptr) {
  bool outVectorOk = aligned(out, 8) && cols % kVec == 0;
  bool outTVectorOk = aligned(outT, 8) && totalRows % kLaneRows == 0;
  int64_t colTiles = std::max<int64_t>(1, ceilDiv(cols, kTileCols));
  for (int first = 0; first < numParts; first += kMaxPartsPerLaunch) {
    int count = std::min(numParts - first, kMaxPartsPerLaunch);
    PartsArg args = partsArg(parts, first, count, colTiles);
    bool groupOutTOk = outTVectorOk;
    for (int i = 0; i < count; ++i)
      groupOutTOk = groupOutTOk && args.parts[i].rowOffset % kLaneRows == 0;
    unsigned blocks = warpJobBlocks(args.tileStart[count]);
    cudaError_t err = dispatchQuant(src, dst, [&](auto s, auto f) {
      using S = decltype(s);
      using F8 = decltype(f);
      return launchKernel(
          &castTilesKernel<S, F8, PerColumn, Dual, RowsCols>, dim3(blocks),
          dim3(kThreads), stream, args, cols, totalRows, colTiles, colScale,
          amax ? amax + first : nullptr, colAmax, out, outVectorOk, outT,
          groupOutTOk, scaleInv ? scaleInv + first : nullptr, rowScaleInv,
          amaxT, scaleInvT, rowAmax);
    });
    if (err != cudaSuccess)
      return err;
  }
  return cudaSuccess;
}

} // namespace

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

cudaError_t launchCastParts(slinrt_dtype src, slinrt_dtype dst,
                            const Fp8Part *parts, int numParts, int64_t cols,
                            int64_t totalRows, const float *colScale,
                            const float *amax, uint8_t *out, uint8_t *outT,
                            float *scaleInv, float *rowScaleInv,
                            cudaStream_t stream) {
  if (numParts == 1 && !outT && !colScale && !rowScaleInv && out &&
      parts[0].vectorOk && parts[0].ld == cols && parts[0].rows > 0) {
    const Fp8Part &x = parts[0];
    int64_t vectors = x.rows * cols / kVec;
    return dispatchQuant(src, dst, [&](auto s, auto f) {
      using S = decltype(s);
      using F8 = decltype(f);
      auto kernel = &castDenseKernel<S, F8>;
      unsigned blocks = unsigned(std::min(
          ceilDiv(vectors, kThreads * kDenseLoads), residentBlocks(kernel)));
      return launchKernel(kernel, dim3(blocks), dim3(kThreads), stream,
                          static_cast<const S *>(x.data), vectors, amax, out,
                          aligned(out, 8), scaleInv);
    });
  }
  return launchCastTiles<false>(src, dst, parts, numParts, cols, totalRows,
                                colScale, amax, nullptr, out, outT, scaleInv,
                                rowScaleInv, stream);
}

cudaError_t launchCastDual(slinrt_dtype src, slinrt_dtype dst,
                           const Fp8Part &x, const float *colScale,
                           const float *amax, uint8_t *out, float *scaleInv,
                           uint8_t *outT, float *scaleInvT,
                           cudaStream_t stream) {
  Fp8Part part = x;
  part.rowOffset = 0;
  return launchCastTiles<false, true>(src, dst, &part, 1, x.cols, x.rows,
                                      colScale, amax, nullptr, out, outT,
                                      scaleInv, nullptr, stream, amax + 1,
                                      scaleInvT);
}

cudaError_t launchQuantizeRows(slinrt_dtype src, slinrt_dtype dst,
                               const Fp8Part &x, const float *colScale,
                               float *amax, float *scaleInv, uint8_t *out,
                               uint8_t *outT, cudaStream_t stream) {
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
                          colScale, amax, scaleInv, out, outVectorOk, outT);
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
                        out, outVectorOk, outT);
  });
}

cudaError_t launchQuantizeCols(slinrt_dtype src, slinrt_dtype dst,
                               const Fp8Part &x, const float *colScale,
                               float *amax, float *scaleInv, uint8_t *out,
                               uint8_t *outT, cudaStream_t stream) {
  if (x.cols <= 0)
    return cudaSuccess;
  // The column amax bits accumulate in scaleInv, which the cast reads and a
  // last kernel turns into 1 / scale.
  uint32_t *colAmax = reinterpret_cast<uint32_t *>(scaleInv);
  cudaError_t err =
      cudaMemsetAsync(colAmax, 0, size_t(x.cols) * sizeof(float), stream);
  if (err != cudaSuccess)
    return err;
  int64_t colTiles = ceilDiv(x.cols, kTileCols);
  int64_t jobs = colTiles * ceilDiv(x.rows, kAmaxChunkRows);
  if (x.rows > 0) {
    err = dispatchQuant(src, dst, [&](auto s, auto) {
      using S = decltype(s);
      return launchKernel(&colAmaxKernel<S>, dim3(warpJobBlocks(jobs)),
                          dim3(kThreads), stream, x, colTiles, colScale,
                          colAmax);
    });
    if (err != cudaSuccess)
      return err;
  }
  if (x.rows > 0 && (out || outT)) {
    Fp8Part part = x;
    part.rowOffset = 0;
    err = launchCastTiles<true>(src, dst, &part, 1, x.cols, x.rows, colScale,
                                nullptr, colAmax, out, outT, nullptr, nullptr,
                                stream);
    if (err != cudaSuccess)
      return err;
  }
  return dispatchQuant(src, dst, [&](auto, auto f) {
    using F8 = decltype(f);
    return launchKernel(&finishColsKernel<F8>,
                        dim3(unsigned(std::min<int64_t>(
                            ceilDiv(x.cols, kThreads), 4 * smCount()))),
                        dim3(kThreads), stream, x.cols, amax, scaleInv);
  });
}

cudaError_t launchQuantizeDualRows(slinrt_dtype src, slinrt_dtype dst,
                                   const Fp8Part &x, const float *colScale,
                                   float *amax, float *scaleInv, uint8_t *out,
                                   float *scaleInvT, uint8_t *outT,
                                   cudaStream_t stream) {
  // Up to the register row kernel's width (256-thread blocks), the separate
  // passes are faster: that kernel reads each row once. On the H200
  // (bench/fp8_row_quant.py, [8192, K] bf16) the fused ones took 0.69-0.86x
  // their speed at K = 4096..14336 and 1.09x / 1.29x at 28672 / 37888.
  if (x.cols <= int64_t(kThreads) * kVec * kMaxRowVectors) {
    cudaError_t err = launchQuantizeRows(src, dst, x, colScale, amax, scaleInv,
                                         out, nullptr, stream);
    if (err != cudaSuccess)
      return err;
    return launchQuantizeCols(src, dst, x, nullptr,
                              amax ? amax + x.rows : nullptr, scaleInvT,
                              nullptr, outT, stream);
  }
  // The row and column amax bits accumulate in scaleInv and scaleInvT, which
  // the cast reads and the last kernels turn into 1 / scale.
  uint32_t *rowAmax = reinterpret_cast<uint32_t *>(scaleInv);
  uint32_t *colAmax = reinterpret_cast<uint32_t *>(scaleInvT);
  cudaError_t err =
      cudaMemsetAsync(rowAmax, 0, size_t(x.rows) * sizeof(float), stream);
  if (err == cudaSuccess)
    err = cudaMemsetAsync(colAmax, 0, size_t(x.cols) * sizeof(float), stream);
  if (err != cudaSuccess)
    return err;
  if (x.rows > 0 && x.cols > 0) {
    // As many column tiles a job as keep 16 warps per SM busy, at most 8.
    int64_t colTiles = ceilDiv(x.cols, kTileCols);
    int64_t chunks = ceilDiv(x.rows, kAmaxChunkRows);
    int64_t tilesPerJob = std::clamp<int64_t>(
        chunks * colTiles / (16 * kWarps * smCount()), 1, 8);
    int64_t jobs = chunks * ceilDiv(colTiles, tilesPerJob);
    err = dispatchQuant(src, dst, [&](auto s, auto) {
      using S = decltype(s);
      return launchKernel(&rowColAmaxKernel<S>, dim3(warpJobBlocks(jobs)),
                          dim3(kThreads), stream, x, colTiles, tilesPerJob,
                          colScale, rowAmax, colAmax);
    });
    if (err != cudaSuccess)
      return err;
    Fp8Part part = x;
    part.rowOffset = 0;
    err = launchCastTiles<false, true, true>(
        src, dst, &part, 1, x.cols, x.rows, colScale, nullptr, colAmax, out,
        outT, nullptr, nullptr, stream, nullptr, nullptr, rowAmax);
    if (err != cudaSuccess)
      return err;
  }
  return dispatchQuant(src, dst, [&](auto, auto f) {
    using F8 = decltype(f);
    auto finish = [&](int64_t n, float *a, float *s) {
      if (n == 0)
        return cudaSuccess;
      return launchKernel(&finishColsKernel<F8>,
                          dim3(unsigned(std::min<int64_t>(ceilDiv(n, kThreads),
                                                          4 * smCount()))),
                          dim3(kThreads), stream, n, a, s);
    };
    cudaError_t e = finish(x.rows, amax, scaleInv);
    return e == cudaSuccess
               ? finish(x.cols, amax ? amax + x.rows : nullptr, scaleInvT)
               : e;
  });
}

} // namespace cuda
} // namespace slinrt

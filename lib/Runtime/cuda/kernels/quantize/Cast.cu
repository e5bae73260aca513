//===- Cast.cu - FP8 cast and cast+transpose kernels ------------*- C++ -*-===//
//
// The FP8 casts: an elementwise cast for one dense input without outT (the
// tensorwise activation), and a tiled cast that writes the row-major and the
// transposed output from one read, for parts with a scale each (with row
// scale_inv), for column-wise scales, and the dual casts of one input (x ·
// colScale and x, with tensor scales or with row and column scales).
//
//===----------------------------------------------------------------------===//
#include "cuda/kernels/quantize/Common.cuh"

namespace slinrt {
namespace cuda {
namespace quant {

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// The cast of one dense part (rows·cols elements in one run, vectorOk)
/// without outT, colScale or row scales: the tensorwise activation. A
/// thread converts kDenseLoads vectors a step, a block's vectors
/// contiguous, so that loads and 8-byte stores are both warp-contiguous.
constexpr int kDenseLoads = 4;
template <typename S, typename F8>
__global__ void __launch_bounds__(kThreads)
    castDenseKernel(const S *x, int64_t vectors, const float *amax,
                    uint8_t *out, bool outVectorOk, float *scaleInv,
                    bool pow2) {
  float scale = fp8Scale(*amax, Fp8Format<F8>::kMax, pow2);
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
                    const uint32_t *rowAmax, bool pow2) {
  static_assert(!(Dual && PerColumn), "Dual casts take one scale each");
  static_assert(Dual || !RowsCols, "RowsCols is a dual cast");
  constexpr bool kTensorDual = Dual && !RowsCols;
  constexpr float kMax = Fp8Format<F8>::kMax;
  float scaleT = kTensorDual ? fp8Scale(amaxT[0], kMax, pow2) : 1.0f;
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
      partScale = fp8Scale(amax[t.part], kMax, pow2);
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
                   ? (j < nCols
                          ? fp8Scale(bitCast<float>(colAmax[c + j]), kMax, pow2)
                          : 1.0f)
                   : partScale;
    }
    // RowsCols: out's scale per row, outT's (mul) per column.
    float rowMul[kLaneRows];
#pragma unroll
    for (int i = 0; i < kLaneRows; ++i)
      rowMul[i] =
          RowsCols && i < nRows
              ? fp8Scale(bitCast<float>(rowAmax[part.rowOffset + r0 + i]), kMax,
                         pow2)
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
          zeroRun(v);
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

/// Launches castTilesKernel over parts[0, numParts) in groups of
/// kMaxPartsPerLaunch.
template <bool PerColumn, bool Dual = false, bool RowsCols = false>
cudaError_t
launchCastTiles(slinrt_dtype src, slinrt_dtype dst, const Fp8Part *parts,
                int numParts, int64_t cols, int64_t totalRows,
                const float *colScale, const float *amax,
                const uint32_t *colAmax, uint8_t *out, uint8_t *outT,
                float *scaleInv, float *rowScaleInv, bool pow2,
                cudaStream_t stream, const float *amaxT = nullptr,
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
          amaxT, scaleInvT, rowAmax, pow2);
    });
    if (err != cudaSuccess)
      return err;
  }
  return cudaSuccess;
}

} // namespace quant

using namespace quant;

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

cudaError_t launchCastParts(slinrt_dtype src, slinrt_dtype dst,
                            const Fp8Part *parts, int numParts, int64_t cols,
                            int64_t totalRows, const float *colScale,
                            const float *amax, uint8_t *out, uint8_t *outT,
                            float *scaleInv, float *rowScaleInv,
                            bool pow2Scales, cudaStream_t stream) {
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
                          aligned(out, 8), scaleInv, pow2Scales);
    });
  }
  return launchCastTiles<false>(src, dst, parts, numParts, cols, totalRows,
                                colScale, amax, nullptr, out, outT, scaleInv,
                                rowScaleInv, pow2Scales, stream);
}

cudaError_t launchCastDual(slinrt_dtype src, slinrt_dtype dst, const Fp8Part &x,
                           const float *colScale, const float *amax,
                           uint8_t *out, float *scaleInv, uint8_t *outT,
                           float *scaleInvT, bool pow2Scales,
                           cudaStream_t stream) {
  Fp8Part part = x;
  part.rowOffset = 0;
  return launchCastTiles<false, true>(
      src, dst, &part, 1, x.cols, x.rows, colScale, amax, nullptr, out, outT,
      scaleInv, nullptr, pow2Scales, stream, amax + 1, scaleInvT);
}

cudaError_t quant::launchCastPerColumn(slinrt_dtype src, slinrt_dtype dst,
                                       const Fp8Part &part,
                                       const float *colScale,
                                       const uint32_t *colAmax, uint8_t *out,
                                       uint8_t *outT, bool pow2Scales,
                                       cudaStream_t stream) {
  return launchCastTiles<true>(src, dst, &part, 1, part.cols, part.rows,
                               colScale, nullptr, colAmax, out, outT, nullptr,
                               nullptr, pow2Scales, stream);
}

cudaError_t quant::launchCastRowsCols(
    slinrt_dtype src, slinrt_dtype dst, const Fp8Part &part,
    const float *colScale, const uint32_t *rowAmax, const uint32_t *colAmax,
    uint8_t *out, uint8_t *outT, bool pow2Scales, cudaStream_t stream) {
  return launchCastTiles<false, true, true>(
      src, dst, &part, 1, part.cols, part.rows, colScale, nullptr, colAmax, out,
      outT, nullptr, nullptr, pow2Scales, stream, nullptr, nullptr, rowAmax);
}

} // namespace cuda
} // namespace slinrt

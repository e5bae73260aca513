//===- ColumnQuantize.cu - FP8 per-column quantization ----------*- C++ -*-===//
//
// The quantizations that need a whole column's amax before they cast:
// per-column (a column amax, the per-column cast, the scales' last kernel)
// and the rows/cols dual of slinrt_quantize_fp8_dual_rows (the row and column
// maxima in one pass, one cast writing both copies, the scales' last
// kernels), which keep the amax bits in the scale_inv buffers meanwhile.
//
//===----------------------------------------------------------------------===//
#include "cuda/kernels/quantize/Common.cuh"

namespace slinrt {
namespace cuda {
namespace quant {

/// From the column amax bits in `bits` (the scaleInv buffer): amax[k] (when
/// given) and scaleInv[k] = 1 / scale, in place.
template <typename F8>
__global__ void finishColsKernel(int64_t K, float *amax, float *scaleInv,
                                 bool pow2) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < K;
       k += int64_t(gridDim.x) * blockDim.x) {
    float colAmax = scaleInv[k]; // the bits of the amax
    if (amax)
      amax[k] = colAmax;
    scaleInv[k] = 1.0f / fp8Scale(colAmax, Fp8Format<F8>::kMax, pow2);
  }
}

/// Launches finishColsKernel over `n` scales (nothing when n = 0).
template <typename F8>
cudaError_t launchFinishCols(int64_t n, float *amax, float *scaleInv, bool pow2,
                             cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  return launchKernel(
      &finishColsKernel<F8>,
      dim3(unsigned(std::min<int64_t>(ceilDiv(n, kThreads), 4 * smCount()))),
      dim3(kThreads), stream, n, amax, scaleInv, pow2);
}

} // namespace quant

cudaError_t launchQuantizeCols(slinrt_dtype src, slinrt_dtype dst,
                               const Fp8Part &x, const float *colScale,
                               float *amax, float *scaleInv, uint8_t *out,
                               uint8_t *outT, bool pow2Scales,
                               cudaStream_t stream) {
  using namespace quant;
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
    err = launchColAmax(src, dst, x, colTiles, jobs, colScale, colAmax, stream);
    if (err != cudaSuccess)
      return err;
  }
  if (x.rows > 0 && (out || outT)) {
    Fp8Part part = x;
    part.rowOffset = 0;
    err = launchCastPerColumn(src, dst, part, colScale, colAmax, out, outT,
                              pow2Scales, stream);
    if (err != cudaSuccess)
      return err;
  }
  return dispatchQuant(src, dst, [&](auto, auto f) {
    return launchFinishCols<decltype(f)>(x.cols, amax, scaleInv, pow2Scales,
                                         stream);
  });
}

cudaError_t launchQuantizeDualRows(slinrt_dtype src, slinrt_dtype dst,
                                   const Fp8Part &x, const float *colScale,
                                   float *amax, float *scaleInv, uint8_t *out,
                                   float *scaleInvT, uint8_t *outT,
                                   bool pow2Scales, cudaStream_t stream) {
  using namespace quant;
  // Up to the register row kernel's width (256-thread blocks), the separate
  // passes are faster: that kernel reads each row once. On the H200
  // (bench/fp8_row_quant.py, [8192, K] bf16) the fused ones took 0.69-0.86x
  // their speed at K = 4096..14336 and 1.09x / 1.29x at 28672 / 37888.
  if (x.cols <= int64_t(kThreads) * kVec * kMaxRowVectors) {
    cudaError_t err = launchQuantizeRows(src, dst, x, colScale, amax, scaleInv,
                                         out, nullptr, pow2Scales, stream);
    if (err != cudaSuccess)
      return err;
    return launchQuantizeCols(src, dst, x, nullptr,
                              amax ? amax + x.rows : nullptr, scaleInvT,
                              nullptr, outT, pow2Scales, stream);
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
    err = launchRowColAmax(src, dst, x, colTiles, tilesPerJob, jobs, colScale,
                           rowAmax, colAmax, stream);
    if (err != cudaSuccess)
      return err;
    Fp8Part part = x;
    part.rowOffset = 0;
    err = launchCastRowsCols(src, dst, part, colScale, rowAmax, colAmax, out,
                             outT, pow2Scales, stream);
    if (err != cudaSuccess)
      return err;
  }
  return dispatchQuant(src, dst, [&](auto, auto f) {
    using F8 = decltype(f);
    cudaError_t e =
        launchFinishCols<F8>(x.rows, amax, scaleInv, pow2Scales, stream);
    return e == cudaSuccess
               ? launchFinishCols<F8>(x.cols, amax ? amax + x.rows : nullptr,
                                      scaleInvT, pow2Scales, stream)
               : e;
  });
}

} // namespace cuda
} // namespace slinrt

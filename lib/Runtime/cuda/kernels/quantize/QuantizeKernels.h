//===- QuantizeKernels.h - FP8 quantization launchers -----------*- C++ -*-===//
//
// Host-side launchers of the FP8 quantization kernels: amax over parts
// (Amax.cu), the tiled cast and cast+transpose (Cast.cu), the per-row
// quantizer (RowQuantize.cu) and the per-column and rows/cols quantizations
// that compose them (ColumnQuantize.cu). Values, scales and bytes follow
// Float8.h, shared with the CPU backend, in the same fp32 operations, so the
// targets agree bit for bit; `pow2Scales` rounds every scale down to a power
// of 2 (SLINRT_SCALE_POW2). Each launches on `stream` and returns the first
// failed launch's status; none allocates or synchronizes.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_QUANTIZE_QUANTIZEKERNELS_H
#define SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_QUANTIZE_QUANTIZEKERNELS_H

#include "splitlinear/Runtime/Runtime.h"

#include <cstdint>
#include <cuda_runtime_api.h>

namespace slinrt {
namespace cuda {

/// One input of the quantization kernels: row-major rows x cols (unit column
/// stride, row stride ld) at element address `data`; `rowOffset` is where its
/// rows start in a cast's output; `vectorOk` from vectorLoadsOk.
struct Fp8Part {
  const void *data;
  int64_t rows, cols, ld, rowOffset;
  bool vectorOk;
};

/// Parts per launch (kernel parameter space); more take several launches.
constexpr int kMaxPartsPerLaunch = 32;

/// Whether rows of `data` (cols, ld in elements) can be read 16 bytes at a
/// time.
bool vectorLoadsOk(const void *data, int64_t cols, int64_t ld);

/// amax[i] = max(amax[i], max |parts[i] (· colScale)|) as float bits: the
/// caller zeroes amax first (cudaMemsetAsync). colScale (NULL or cols
/// floats) only with one part; with it, `amaxPlain` (may be NULL) gets max
/// |parts[0]| without colScale from the same loads.
cudaError_t launchAmaxParts(slinrt_dtype src, const Fp8Part *parts,
                            int numParts, const float *colScale, float *amax,
                            cudaStream_t stream, float *amaxPlain = nullptr);

/// Casts parts [rows_i, cols] (· colScale) with the scale of amax[i] into
/// out [totalRows, cols] and outT [cols, totalRows] (either may be NULL),
/// writing scaleInv[i] and rowScaleInv[row] when not NULL.
cudaError_t launchCastParts(slinrt_dtype src, slinrt_dtype dst,
                            const Fp8Part *parts, int numParts, int64_t cols,
                            int64_t totalRows, const float *colScale,
                            const float *amax, uint8_t *out, uint8_t *outT,
                            float *scaleInv, float *rowScaleInv,
                            bool pow2Scales, cudaStream_t stream);

/// The dual cast of x [rows, cols] (slinrt_quantize_fp8_dual), one launch:
/// out = x · colScale with the scale of amax[0] (scaleInv[0] written), outT
/// = xᵀ with the scale of amax[1] (scaleInvT[0] written).
cudaError_t launchCastDual(slinrt_dtype src, slinrt_dtype dst, const Fp8Part &x,
                           const float *colScale, const float *amax,
                           uint8_t *out, float *scaleInv, uint8_t *outT,
                           float *scaleInvT, bool pow2Scales,
                           cudaStream_t stream);

/// The rows/cols dual quantization of x [rows, cols]
/// (slinrt_quantize_fp8_dual_rows): out = x · colScale (colScale may be
/// NULL) with one scale per row (scaleInv [rows]), outT = xᵀ with one scale
/// per column of x (scaleInvT [cols]); amax (may be NULL) gets the rows'
/// then the columns' maxima. Rows wider than the register row kernel's
/// 256-thread limit: a memset each, one amax pass taking both maxima, one
/// cast writing both copies, and the scales' last kernels (the amax bits
/// wait in scaleInv and scaleInvT meanwhile); narrower rows:
/// launchQuantizeRows and launchQuantizeCols.
cudaError_t launchQuantizeDualRows(slinrt_dtype src, slinrt_dtype dst,
                                   const Fp8Part &x, const float *colScale,
                                   float *amax, float *scaleInv, uint8_t *out,
                                   float *scaleInvT, uint8_t *outT,
                                   bool pow2Scales, cudaStream_t stream);

/// Per-row (one launch) and per-column quantization of x: amax (may be
/// NULL) and scaleInv get one entry per row / column. The per-column one is
/// a memset, a column amax, the cast and a last kernel for the scales; it
/// keeps the column amax in scaleInv meanwhile (no scratch of its own).
cudaError_t launchQuantizeRows(slinrt_dtype src, slinrt_dtype dst,
                               const Fp8Part &x, const float *colScale,
                               float *amax, float *scaleInv, uint8_t *out,
                               uint8_t *outT, bool pow2Scales,
                               cudaStream_t stream);
/// x [M, K] (K a multiple of SLINRT_QUANT_BLOCK) in 1×128 blocks along its
/// rows: out [M, K] (contiguous), scaleInv and amax (may be NULL) [M, K/128]
/// row-major. One launch.
cudaError_t launchQuantizeBlocks(slinrt_dtype src, slinrt_dtype dst,
                                 const Fp8Part &x, const float *colScale,
                                 float *amax, float *scaleInv, uint8_t *out,
                                 bool pow2Scales, cudaStream_t stream);
cudaError_t launchQuantizeCols(slinrt_dtype src, slinrt_dtype dst,
                               const Fp8Part &x, const float *colScale,
                               float *amax, float *scaleInv, uint8_t *out,
                               uint8_t *outT, bool pow2Scales,
                               cudaStream_t stream);
/// The 1x128 block dual of x [M, K] (K a multiple of 128;
/// slinrt_quantize_fp8_dual_blocks): out [M, K] (row stride K) and
/// scaleInv [M, K/128] along the rows, outT [K, M'] (M' = M rounded up to
/// 128, zeros past M) and scaleInvT [K, M'/128] along M; amax (may be NULL)
/// gets the row-block maxima, then the column-block maxima. One launch.
cudaError_t launchQuantizeBlocksDual(slinrt_dtype src, slinrt_dtype dst,
                                     const Fp8Part &x, float *amax,
                                     float *scaleInv, uint8_t *out,
                                     float *scaleInvT, uint8_t *outT,
                                     bool pow2Scales, cudaStream_t stream);
/// Quantization of x [M, K] in 128x128 blocks (M, K multiples of 128): a
/// thread block per block; amax (may be NULL) and scaleInv [M/128, K/128]
/// row-major; `out` [M, K] (row stride K) and `outT` [K, M] (row stride
/// `ldT` >= M, so that a part's transpose is a column block of the whole's)
/// each written when not NULL. One launch.
cudaError_t launchQuantizeBlocks128x128(slinrt_dtype src, slinrt_dtype dst,
                                        const Fp8Part &x, float *amax,
                                        float *scaleInv, uint8_t *out,
                                        uint8_t *outT, int64_t ldT,
                                        bool pow2Scales, cudaStream_t stream);

} // namespace cuda
} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_QUANTIZE_QUANTIZEKERNELS_H

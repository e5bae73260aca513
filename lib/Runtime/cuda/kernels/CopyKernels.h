//===- CopyKernels.h - Copy, broadcast and row-sum kernels ------*- C++ -*-===//
//
// Host-side launchers for the few kernels the CUDA backend needs besides
// cuBLASLt and FP8: a dtype-converting strided 2-D copy, a row broadcast (bias
// or zeros into D, used before a beta = 1 GEMM when the fused bias epilogue is
// not available), an fp32 bias add and a row-sum reduction (the BIAS_GRAD
// fallback). Each launches on `stream` and returns the launch status; none
// allocates or synchronizes, so all are safe inside CUDA-graph capture.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_COPYKERNELS_H
#define SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_COPYKERNELS_H

#include "splitlinear/Runtime/Runtime.h"

#include <cstdint>
#include <cuda_runtime_api.h>

namespace slinrt {
namespace cuda {

/// dst[r, c] = convert(src[r, c]) for element strides of any sign.
cudaError_t launchConvertCopy(slinrt_dtype srcType, slinrt_dtype dstType,
                              const void *src, int64_t srcRowStride,
                              int64_t srcColStride, void *dst,
                              int64_t dstRowStride, int64_t dstColStride,
                              int64_t rows, int64_t cols, cudaStream_t stream);

/// d[m, n] = bias ? bias[n] : 0 for a row-major M x N matrix with `ldd`.
cudaError_t launchBroadcastRows(slinrt_dtype dtype, void *d, int64_t ldd,
                                int64_t M, int64_t N, const void *bias,
                                cudaStream_t stream);

/// d[m, n] += bias[n] for a row-major fp32 M x N matrix with `ldd` (the
/// bias of an FP8 GEMM with fp32 output, after the GEMM).
cudaError_t launchAddRowsF32(float *d, int64_t ldd, int64_t M, int64_t N,
                             const float *bias, cudaStream_t stream);

/// out[m] = sum_k a[m * rowStride + k * colStride] for m < M, k < K,
/// accumulated in fp32 (fp64 for f64); zeros when K = 0.
cudaError_t launchRowSums(slinrt_dtype dtype, const void *a, int64_t rowStride,
                          int64_t colStride, int64_t M, int64_t K, void *out,
                          cudaStream_t stream);

} // namespace cuda
} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_COPYKERNELS_H

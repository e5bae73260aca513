//===- CopyKernels.cu - Copy, broadcast, row-sum kernels --------*- C++ -*-===//
//
// The copy, broadcast and row-sum kernels (see CopyKernels.h). Element
// conversions come from Float16.h, shared with the CPU backend, so both targets
// round identically. The kernels use grid-stride loops, so grids are capped and
// any size works. Launches go through Launch.h, which reports each launch's own
// status.
//
//===----------------------------------------------------------------------===//

#include "Float16.h"
#include "cuda/kernels/CopyKernels.h"
#include "cuda/kernels/Launch.h"

#include <algorithm>
#include <type_traits>

namespace slinrt {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxGridX = 4096;
constexpr int64_t kMaxGridY = 65535;

template <typename S, typename T>
__global__ void convertCopyKernel(const S *src, int64_t srcRowStride,
                                  int64_t srcColStride, T *dst,
                                  int64_t dstRowStride, int64_t dstColStride,
                                  int64_t rows, int64_t cols) {
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
    for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < cols;
         c += int64_t(gridDim.x) * blockDim.x)
      if constexpr (std::is_same<S, T>::value)
        dst[r * dstRowStride + c * dstColStride] =
            src[r * srcRowStride + c * srcColStride];
      else
        dst[r * dstRowStride + c * dstColStride] =
            convertElement<T>(src[r * srcRowStride + c * srcColStride]);
}

template <typename T>
__global__ void broadcastRowsKernel(T *d, int64_t ldd, int64_t M, int64_t N,
                                    const T *bias) {
  for (int64_t m = blockIdx.y; m < M; m += gridDim.y)
    for (int64_t n = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; n < N;
         n += int64_t(gridDim.x) * blockDim.x)
      d[m * ldd + n] = bias ? bias[n] : T{};
}

__global__ void addRowsKernel(float *d, int64_t ldd, int64_t M, int64_t N,
                              const float *bias) {
  for (int64_t m = blockIdx.y; m < M; m += gridDim.y)
    for (int64_t n = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; n < N;
         n += int64_t(gridDim.x) * blockDim.x)
      d[m * ldd + n] += bias[n];
}

/// Row sums when a row is contiguous (colStride == 1): one warp per row.
template <typename T>
__global__ void rowSumsContiguousKernel(const T *a, int64_t rowStride,
                                        int64_t M, int64_t K, T *out) {
  using Acc = typename Accumulator<T>::type;
  int lane = threadIdx.x % 32;
  int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  for (int64_t m = warp; m < M; m += warps) {
    Acc sum = 0;
    for (int64_t k = lane; k < K; k += 32)
      sum += Convert<Acc>::from(a[m * rowStride + k]);
    for (int offset = 16; offset > 0; offset /= 2)
      sum += __shfl_down_sync(0xFFFFFFFFu, sum, offset);
    if (lane == 0)
      out[m] = convertElement<T>(sum);
  }
}

/// Row sums for any other layout: threads along m (coalesced when
/// rowStride == 1, the wgrad case op(A) = dy^T), 8 partial sums along k
/// reduced through shared memory.
template <typename T>
__global__ void rowSumsStridedKernel(const T *a, int64_t rowStride,
                                     int64_t colStride, int64_t M, int64_t K,
                                     T *out) {
  using Acc = typename Accumulator<T>::type;
  __shared__ Acc partial[8][32];
  for (int64_t m0 = blockIdx.x * int64_t(32); m0 < M;
       m0 += int64_t(gridDim.x) * 32) {
    int64_t m = m0 + threadIdx.x;
    Acc sum = 0;
    if (m < M)
      for (int64_t k = threadIdx.y; k < K; k += 8)
        sum += Convert<Acc>::from(a[m * rowStride + k * colStride]);
    partial[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && m < M) {
      Acc total = 0;
      for (int i = 0; i < 8; ++i)
        total += partial[i][threadIdx.x];
      out[m] = convertElement<T>(total);
    }
    __syncthreads();
  }
}

/// Calls `fn(T{})` with T the storage type of `dtype` (a value, for lambdas).
template <typename Fn> cudaError_t dispatch(slinrt_dtype dtype, Fn &&fn) {
  switch (dtype) {
  case SLINRT_F32:
    return fn(float{});
  case SLINRT_F16:
    return fn(Half{});
  case SLINRT_BF16:
    return fn(BFloat16{});
  case SLINRT_F64:
    return fn(double{});
  case SLINRT_F8E4M3FN:
  case SLINRT_F8E5M2:
    break; // only copied, to the same type: see launchConvertCopy
  }
  return cudaErrorInvalidValue;
}

dim3 rowGrid(int64_t rows, int64_t cols) {
  int64_t x = std::min<int64_t>((cols + kThreads - 1) / kThreads, kMaxGridX);
  int64_t y = std::min<int64_t>(rows, kMaxGridY);
  return dim3(static_cast<unsigned>(std::max<int64_t>(x, 1)),
              static_cast<unsigned>(std::max<int64_t>(y, 1)));
}

} // namespace

cudaError_t launchConvertCopy(slinrt_dtype srcType, slinrt_dtype dstType,
                              const void *src, int64_t srcRowStride,
                              int64_t srcColStride, void *dst,
                              int64_t dstRowStride, int64_t dstColStride,
                              int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return cudaSuccess;
  if (srcType == SLINRT_F8E4M3FN || srcType == SLINRT_F8E5M2) {
    if (dstType != srcType)
      return cudaErrorInvalidValue;
    return launchKernel(&convertCopyKernel<uint8_t, uint8_t>,
                        rowGrid(rows, cols), dim3(kThreads), stream,
                        static_cast<const uint8_t *>(src), srcRowStride,
                        srcColStride, static_cast<uint8_t *>(dst), dstRowStride,
                        dstColStride, rows, cols);
  }
  return dispatch(srcType, [&](auto s) {
    return dispatch(dstType, [&](auto t) {
      using S = decltype(s);
      using T = decltype(t);
      return launchKernel(&convertCopyKernel<S, T>, rowGrid(rows, cols),
                          dim3(kThreads), stream, static_cast<const S *>(src),
                          srcRowStride, srcColStride, static_cast<T *>(dst),
                          dstRowStride, dstColStride, rows, cols);
    });
  });
}

cudaError_t launchBroadcastRows(slinrt_dtype dtype, void *d, int64_t ldd,
                                int64_t M, int64_t N, const void *bias,
                                cudaStream_t stream) {
  if (M <= 0 || N <= 0)
    return cudaSuccess;
  return dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    return launchKernel(&broadcastRowsKernel<T>, rowGrid(M, N), dim3(kThreads),
                        stream, static_cast<T *>(d), ldd, M, N,
                        static_cast<const T *>(bias));
  });
}

cudaError_t launchAddRowsF32(float *d, int64_t ldd, int64_t M, int64_t N,
                             const float *bias, cudaStream_t stream) {
  if (M <= 0 || N <= 0)
    return cudaSuccess;
  return launchKernel(&addRowsKernel, rowGrid(M, N), dim3(kThreads), stream, d,
                      ldd, M, N, bias);
}

cudaError_t launchRowSums(slinrt_dtype dtype, const void *a, int64_t rowStride,
                          int64_t colStride, int64_t M, int64_t K, void *out,
                          cudaStream_t stream) {
  if (M <= 0)
    return cudaSuccess;
  return dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *typed = static_cast<const T *>(a);
    if (colStride == 1 && K >= 32) {
      int64_t blocks = std::min<int64_t>((M + 7) / 8, kMaxGridX * 16);
      return launchKernel(&rowSumsContiguousKernel<T>,
                          dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                          stream, typed, rowStride, M, K,
                          static_cast<T *>(out));
    }
    int64_t blocks = std::min<int64_t>((M + 31) / 32, kMaxGridX * 16);
    return launchKernel(&rowSumsStridedKernel<T>,
                        dim3(static_cast<unsigned>(blocks)), dim3(32, 8),
                        stream, typed, rowStride, colStride, M, K,
                        static_cast<T *>(out));
  });
}

} // namespace cuda
} // namespace slinrt

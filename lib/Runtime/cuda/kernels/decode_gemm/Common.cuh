//===- Common.cuh - Shared parts of the decode GEMM -------------*- C++ -*-===//
//
// What both forms of the decode GEMM share, written once: the operands as
// their kernels take them (SLINRT_DECODE_GEMM_PARAMS, one parameter list), the
// loads of W and x, the L2 prefetch, the e4m3 MMA and the accumulation of one
// lane's 16 bytes of k, and the epilogue (scales, bias, one rounding, the
// store).
//
// A dot product sums over k, so any permutation of k applied to both operands
// gives the same result: lane (g, t) loads 16 contiguous bytes at
// k = 64 s + 16 t of W row g and of x rows g and g + 8, and their four words
// feed two m16n8k32 MMAs as if they were the fragment's k columns
// {4t..4t+3, 16+4t..16+4t+3} of each. Every MMA starts from zero and its
// result is added in fp32 (Hopper keeps only about 14 bits of the partial
// sums inside an FP8 MMA; this bounds that loss to 32 products).
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_DECODE_GEMM_COMMON_CUH
#define SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_DECODE_GEMM_COMMON_CUH

#include "Float16.h"
#include "cuda/kernels/Launch.h"
#include "cuda/kernels/decode_gemm/DecodeGemm.h"

#include <cstdint>
#include <cstring>

namespace slinrt {
namespace cuda {

/// The parameter list of both forms' kernels, written once:
/// y[M, N] = sx sw (x[M, K] w[N, K]^T) (+ bias[N]) (DecodeGemmArgs with typed
/// pointers); `outerVector` and `dependent` (launched as a programmatic
/// dependent) are 0 or 1. Scalar `__restrict__` parameters, not a struct:
/// they let the compiler read sx, sw and bias through the read-only path
/// and specialize the epilogue on the bias, which a struct parameter does
/// not (the epilogue's rounding would change: no fused multiply-add).
#define SLINRT_DECODE_GEMM_PARAMS(T)                                           \
  const uint8_t *__restrict__ x, int64_t ldx, const uint8_t *__restrict__ w,   \
      int64_t ldw, T *__restrict__ y, int64_t ldy,                             \
      const float *__restrict__ sx, const float *__restrict__ sw,              \
      const T *__restrict__ bias, int M, int64_t N, int64_t K,                 \
      int outerVector, int dependent

/// Launches `kernel` (a form of the decode GEMM, whose parameters after the
/// common ones are `extra`) on the operands of `a`, as a programmatic
/// dependent when `programmatic` (launchKernelDependent).
template <typename T, typename... Extra, typename... ExtraArgs>
cudaError_t launchDecodeKernel(void (*kernel)(SLINRT_DECODE_GEMM_PARAMS(T),
                                              Extra...),
                               dim3 grid, dim3 block, size_t sharedBytes,
                               cudaStream_t stream, bool programmatic,
                               const DecodeGemmArgs &a, ExtraArgs... extra) {
  return launchKernelDependent(
      kernel, grid, block, sharedBytes, stream, programmatic,
      static_cast<const uint8_t *>(a.x), a.ldx,
      static_cast<const uint8_t *>(a.w), a.ldw, static_cast<T *>(a.y), a.ldy,
      a.sx, a.sw, static_cast<const T *>(a.bias), static_cast<int>(a.M), a.N,
      a.K, a.outerVector ? 1 : 0, programmatic ? 1 : 0, extra...);
}

/// Bytes of k one warp covers per step: 4 lanes x 16 bytes.
constexpr int kStepK = 64;

/// How a lane reads its 16 bytes of W, which no other lane reads.
enum class WLoad {
  /// ld.global.cs: evict first, do not keep in L1.
  Streaming,
  /// ld.global.nc, no L1 allocation, and a 256-byte L2 prefetch hint.
  Prefetch256,
};

template <WLoad L> __device__ __forceinline__ uint4 loadW(const uint8_t *p) {
  if constexpr (L == WLoad::Prefetch256) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
  } else {
    return __ldcs(reinterpret_cast<const uint4 *>(p));
  }
}
/// 16 bytes of x, read by every CTA: through the read-only cache.
__device__ __forceinline__ uint4 loadShared(const uint8_t *p) {
  return __ldg(reinterpret_cast<const uint4 *>(p));
}

/// Prefetches `bytes` (a multiple of 16, 16-byte aligned) into L2: a hint
/// that reads no data into this thread, so it may precede waitPrerequisites.
__device__ __forceinline__ void prefetchL2(const void *p, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes)
               : "memory");
#endif
}

/// d = A B for one m16n8k32 e4m3 MMA with a zero accumulator (a0..a3: rows
/// g, g+8, g, g+8 of k quarters 0, 0, 1, 1 of this lane; b0, b1: quarters 0
/// and 1 of column g).
__device__ __forceinline__ void mmaE4M3(float (&d)[4], uint32_t a0, uint32_t a1,
                                        uint32_t a2, uint32_t a3, uint32_t b0,
                                        uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %10, %10, %10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(0.0f));
#else
  d[0] = d[1] = d[2] = d[3] = 0.0f;
#endif
}

/// Output conversion: fp32 is stored as is, 16-bit types round to nearest
/// even (Float16.h, as the CPU target).
template <typename T> __device__ __forceinline__ T fromFloat(float v) {
  return convertElement<T>(v);
}

/// acc += the products of one lane's 16 bytes of k: x rows g (`lo`) and
/// g + 8 (`hi`) against W row g (`b`), two MMAs from zero added in fp32.
__device__ __forceinline__ void mmaAccumulate(float (&acc)[4], const uint4 &lo,
                                              const uint4 &hi, const uint4 &b) {
  float d0[4], d1[4];
  // Words 0, 1 of the 16 bytes are the first MMA's k quarters 0, 1;
  // words 2, 3 the second's.
  mmaE4M3(d0, lo.x, hi.x, lo.y, hi.y, b.x, b.y);
  mmaE4M3(d1, lo.z, hi.z, lo.w, hi.w, b.z, b.w);
#pragma unroll
  for (int r = 0; r < 4; ++r)
    acc[r] += d0[r] + d1[r];
}

/// The epilogue of output (m, n) whose fp32 sum over k is `sum`: the scales
/// and the bias applied in fp32, one rounding to T, the store.
template <typename T>
__device__ __forceinline__ void
storeOutput(T *y, int64_t ldy, const float *sx, const float *sw, const T *bias,
            int outerVector, int m, int64_t n, float sum) {
  float scale = outerVector ? sx[m] * sw[n] : sx[0] * sw[0];
  float value = scale * sum;
  if (bias)
    value += toFloat(bias[n]);
  y[m * ldy + n] = fromFloat<T>(value);
}

} // namespace cuda
} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_DECODE_GEMM_COMMON_CUH

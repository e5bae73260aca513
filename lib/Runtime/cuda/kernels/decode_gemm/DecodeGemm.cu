//===- DecodeGemm.cu - Decode GEMM dispatch ---------------------*- C++ -*-===//
//
// The decode GEMM of the FP8 scaled GEMM (DecodeGemm.h):
// y[M, N] = sx sw (x8[M, K] w8[N, K]^T) (+ bias[N]) for M <= 32, e4m3 x e4m3.
// At such M the GEMM only streams W, and cuBLASLt's outer-vector FP8 offers a
// 128x128 tile without split-K (48 CTAs for the Llama-3-8B q/k/v on 132 SMs),
// so it does not run faster than bf16 although it reads half the bytes. This
// file picks the form (RegisterForm.cuh, BulkForm.cuh) and configuration for
// a problem and answers the capability queries. Compiled for every CUDA arch
// of the runtime; below sm89 the kernels are empty, and the host launches
// them only where the device runs an sm89+ binary (decodeGemmAvailable).
//
//===----------------------------------------------------------------------===//

#include "cuda/kernels/decode_gemm/BulkForm.cuh"
#include "cuda/kernels/decode_gemm/DecodeGemm.h"
#include "cuda/kernels/decode_gemm/RegisterForm.cuh"

namespace slinrt {
namespace cuda {
namespace {

template <int MT, typename T>
cudaError_t launchTiles(const DecodeGemmArgs &a, cudaStream_t stream) {
  if (a.tileN == 32)
    return launchConfig<BaseConfig<MT, 4>, T>(a, stream);
  if constexpr (MT == 1) {
    const int64_t tiles = (a.N + 15) / 16, sms = a.multiProcessors;
    if (tiles > 2 * sms && tiles <= 3 * sms)
      return a.dependence == DecodeDependence::AllForms
                 ? launchConfig<OneWaveDependentConfig, T>(a, stream)
                 : launchConfig<OneWaveConfig, T>(a, stream);
    return launchConfig<DeepConfig, T>(a, stream);
  }
  return launchConfig<BaseConfig<MT, 2>, T>(a, stream);
}

/// Whether the bulk form runs: M <= 16, 16-row tiles, x fits, and more than
/// three 16-row tiles per SM. With fewer, each persistent CTA streams too
/// little W to amortize its start (x's copy, the first stage's latency):
/// on the H200, gate/up (1792 tiles, 132 SMs) at M = 16 took 0.0336 ms
/// against the register form's 0.0364, q/k/v (384 tiles) 0.0123 against
/// 0.0103 (bench/tools/fp8_graphs.py; docs/Design.md, Measured decisions:
/// decode GEMM bulk-copy form).
bool useBulk(const DecodeGemmArgs &a) {
  const int64_t tiles = (a.N + 15) / 16;
  return a.M <= 16 && a.tileN == 16 && a.multiProcessors > 0 &&
         tiles > 3 * int64_t(a.multiProcessors) &&
         bulkFits<BulkDefault>(a, a.maxSharedBytes);
}

template <typename T>
cudaError_t launchRows(const DecodeGemmArgs &a, cudaStream_t stream) {
  if (useBulk(a))
    return launchBulk<BulkDefault, T>(a, stream);
  return a.M <= 16 ? launchTiles<1, T>(a, stream)
                   : launchTiles<2, T>(a, stream);
}

} // namespace

bool decodeGemmAvailable() {
  // The binary the device runs: sm80 code (an sm89 device without its own
  // image) has the empty kernel.
  cudaFuncAttributes attr{};
  cudaError_t err = cudaFuncGetAttributes(
      &attr, decodeGemmKernel<BaseConfig<1, 4>, BFloat16>);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.binaryVersion >= 89;
}

bool decodeGemmBulkAvailable() {
  cudaFuncAttributes attr{};
  cudaError_t err =
      cudaFuncGetAttributes(&attr, bulkDecodeKernel<BulkDefault, BFloat16>);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.binaryVersion >= 90;
}

cudaError_t prepareDecodeGemmBulk(int device, int64_t maxSharedBytes) {
  if (cudaError_t err = optInShared<BulkDefault, float>(device, maxSharedBytes))
    return err;
  if (cudaError_t err = optInShared<BulkDefault, Half>(device, maxSharedBytes))
    return err;
  return optInShared<BulkDefault, BFloat16>(device, maxSharedBytes);
}

int decodeGemmTileN(int64_t N, int numSMs) {
  // 16 rows of W per CTA: on the H200 (CUDA graphs, weights from HBM) it
  // beat 32-row tiles at M = 1 and 16 for both q/k/v (N 6144: 9.7 vs 15.9 us)
  // and gate/up (N 28672: 35.3 vs 46.3 us), although the wider tile reads x
  // fewer times (docs/Design.md, Measured decisions: decode GEMM tiles of 16
  // rows). SPLITLINEAR_FP8_DECODE_TILE_N=32 still forces it.
  (void)N;
  (void)numSMs;
  return 16;
}

cudaError_t launchDecodeGemm(const DecodeGemmArgs &a, cudaStream_t stream) {
  if (a.M < 1 || a.M > kDecodeGemmMaxRows || a.N < 1 || a.K < 1 ||
      (a.tileN != 16 && a.tileN != 32))
    return cudaErrorInvalidValue;
  switch (a.outType) {
  case SLINRT_F32:
    return launchRows<float>(a, stream);
  case SLINRT_F16:
    return launchRows<Half>(a, stream);
  case SLINRT_BF16:
    return launchRows<BFloat16>(a, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace cuda
} // namespace slinrt

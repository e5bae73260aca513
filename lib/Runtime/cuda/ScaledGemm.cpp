//===- ScaledGemm.cpp - FP8 scaled GEMM on the CUDA backend -----*- C++ -*-===//
//
// The backend's scaledGemm (sm89+): decode shapes (M <= 16 by default,
// e4m3 x e4m3) run the runtime's own small-M kernel (kernels/decode_gemm),
// everything else cuBLASLt through the same plans as other GEMMs, with the FP8
// operand types, the scale mode and fast accumulation in the key and the
// scale pointers set per call. Also what the decode GEMM can do on a device:
// whether it runs there, its bulk-copy form, and its programmatic launch.
//
//===----------------------------------------------------------------------===//

#include "Quantize.h"
#include "cuda/CudaCheck.h"
#include "cuda/GemmPlan.h"
#include "cuda/Settings.h"
#include "cuda/kernels/CopyKernels.h"
#include "cuda/kernels/decode_gemm/DecodeGemm.h"

using namespace slinrt;
using namespace slinrt::cuda;

//===----------------------------------------------------------------------===//
// Decode GEMM capability
//===----------------------------------------------------------------------===//

namespace {

/// The decode GEMM's rows of W per CTA: SPLITLINEAR_FP8_DECODE_TILE_N (16 or
/// 32; a measuring aid), else decodeGemmTileN's choice for N.
int decodeTileN(int64_t N, int multiProcessors) {
  int forced = fp8DecodeTileN();
  return forced ? forced : cuda::decodeGemmTileN(N, multiProcessors);
}

/// Which forms of the decode GEMM on `dev` (the current device) launch as
/// programmatic dependents of the kernel before them (DecodeDependence),
/// asked once: both forms where the device runs the kernels' sm90 image,
/// whose griddepcontrol instructions the launch needs (an older image would
/// read x before its producer finished). SPLITLINEAR_FP8_DECODE_PDL: 0
/// none, "bulk" the bulk form only, anything else both forms
/// (docs/UserGuide.md gives the trade-off measured).
DecodeDependence decodeDependence(DeviceState &dev) {
  DecodeDependence wanted = fp8DecodeDependence();
  if (wanted == DecodeDependence::None)
    return wanted;
  int known = dev.decodeProgrammatic.load(std::memory_order_acquire);
  if (known < 0) {
    known = dev.computeMajor >= 9 && cuda::decodeGemmBulkAvailable() ? 1 : 0;
    dev.decodeProgrammatic.store(known, std::memory_order_release);
  }
  return known == 1 ? wanted : DecodeDependence::None;
}

} // namespace

bool cuda::decodeGemmUsable(DeviceState &dev) {
  int known = dev.decodeGemm.load(std::memory_order_acquire);
  if (known < 0) {
    known = cuda::decodeGemmAvailable() ? 1 : 0;
    dev.decodeGemm.store(known, std::memory_order_release);
  }
  return known == 1;
}

int64_t cuda::decodeBulkShared(DeviceState &dev, int device) {
  if (!fp8DecodeBulkEnabled())
    return 0;
  int64_t known = dev.decodeBulkShared.load(std::memory_order_acquire);
  if (known < 0) {
    int optin = 0;
    known = 0;
    if (cuda::decodeGemmBulkAvailable()) {
      if (cudaDeviceGetAttribute(&optin,
                                 cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                 device) == cudaSuccess)
        known = optin;
      else
        (void)cudaGetLastError(); // This query's own error only.
    }
    dev.decodeBulkShared.store(known, std::memory_order_release);
  }
  return known;
}

//===----------------------------------------------------------------------===//
// Scaled (FP8) GEMM
//===----------------------------------------------------------------------===//

void cuda::scaledGemm(slinrt_context &ctx, const ScaledGemmProblem &p) {
  DeviceState &dev = *ctx.cuda->device;
  if (dev.computeMajor * 10 + dev.computeMinor < 89)
    raise(SLINRT_ERROR_UNSUPPORTED,
          "FP8 needs compute capability 8.9 or newer (FP8 tensor cores); "
          "device cuda:",
          ctx.device, " has ", dev.computeMajor, ".", dev.computeMinor);
  if (p.M == 0 || p.N == 0)
    return;
  DeviceGuard guard(ctx.device);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  void *bias = const_cast<char *>(p.bias);
  if (p.K == 0) { // cuBLASLt does not take k = 0
    checkCuda(
        launchBroadcastRows(p.outType, p.D, p.ldd, p.M, p.N, bias, stream),
        "broadcast kernel launch");
    return;
  }
  // Decode shapes: the hand-written kernel, which keeps every SM streaming W
  // (cuBLASLt has one 128x128 tile and no split-K for outer-vector FP8
  // there). Fast accumulation changes nothing in it: it always adds each
  // MMA's result in fp32.
  if (p.M <= fp8DecodeMaxM() && p.aType == SLINRT_F8E4M3FN &&
      p.bType == SLINRT_F8E4M3FN && decodeGemmUsable(dev)) {
    cuda::DecodeGemmArgs args;
    args.outType = p.outType;
    args.M = p.M, args.N = p.N, args.K = p.K;
    args.x = p.A, args.ldx = p.lda;
    args.w = p.B, args.ldw = p.ldb;
    args.y = p.D, args.ldy = p.ldd;
    args.sx = p.scaleA, args.sw = p.scaleB;
    args.outerVector = p.scaling == SLINRT_SCALING_OUTER_VECTOR;
    args.bias = bias;
    args.tileN = decodeTileN(p.N, dev.multiProcessors);
    args.multiProcessors = dev.multiProcessors;
    args.maxSharedBytes = decodeBulkShared(dev, ctx.device);
    args.device = ctx.device;
    args.dependence = decodeDependence(dev);
    checkCuda(cuda::launchDecodeGemm(args, stream), "decode GEMM launch");
    ctx.counters.decodeGemms.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // D = A B^T: op(B) is B [N, K] transposed (cuBLASLt's A, used T: TN), and
  // the scales swap with the operands (its A scale has m' = N entries, ours
  // is scaleB).
  LtProblem lt;
  lt.dtype = p.outType;
  lt.type = cudaTypeOf(p.outType);
  lt.aType = cudaTypeOf(p.bType);
  lt.bType = cudaTypeOf(p.aType);
  lt.computeType = CUBLAS_COMPUTE_32F;
  lt.scaleType = CUDA_R_32F;
  setSwappedOperands(lt, {p.A, p.M, p.K, p.lda, /*trans=*/false},
                     {p.B, p.N, p.K, p.ldb, /*trans=*/true}, p.D, p.ldd);
  lt.scaleMode = p.scaling == SLINRT_SCALING_OUTER_VECTOR
                     ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F
                     : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  lt.fastAccum = p.fastAccum;
  lt.aScale = p.scaleB;
  lt.bScale = p.scaleA;
  // The fused bias of an FP8 GEMM has D's type for bf16 / fp16 output; an
  // fp32 D takes a bf16 bias only, so an fp32 bias is added by a kernel after
  // the GEMM: round(round(sA sB acc) + bias) in fp32, as the CPU target does.
  if (bias && p.outType == SLINRT_F32) {
    ctx.counters.epilogueFallbacks.fetch_add(1, std::memory_order_relaxed);
    runLt(ctx, lt, CUBLASLT_EPILOGUE_DEFAULT, nullptr, /*accumulate=*/false);
    checkCuda(launchAddRowsF32(reinterpret_cast<float *>(p.D), p.ldd, p.M, p.N,
                               reinterpret_cast<const float *>(bias), stream),
              "bias kernel launch");
    return;
  }
  runLt(ctx, lt, bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT,
        bias, /*accumulate=*/false);
}

//===- DecodeGemm.h - Small-M FP8 GEMM (decode GEMM) ------------*- C++ -*-===//
//
// The host interface of the decode GEMM, the runtime's own FP8 GEMM for
// M <= 32 rows (e4m3 x e4m3): its arguments, the capability queries of the
// current device, and the launcher. The kernels are in the .cuh files of this
// folder (Common.cuh, RegisterForm.cuh, BulkForm.cuh); DecodeGemm.cu picks the
// configuration.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_DECODE_GEMM_DECODEGEMM_H
#define SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_DECODE_GEMM_DECODEGEMM_H

#include "splitlinear/Runtime/Runtime.h"

#include <cstdint>
#include <cuda_runtime_api.h>

namespace slinrt {
namespace cuda {

/// The most rows of x the decode GEMM takes (two m-tiles of 16).
constexpr int64_t kDecodeGemmMaxRows = 32;

/// Which forms of the decode GEMM launch as programmatic dependents of the
/// kernel before them: their CTAs may start while that kernel finishes,
/// prefetch their first bytes of w into L2 (a hint, which cannot read stale
/// data: L2 is the point of coherence) and wait for it to complete
/// (griddepcontrol.wait) before they read or write anything else. Both
/// forms by default: in a 4-layer decode on the H200 that took 0.549 ms
/// against 0.581 ms with the bulk form alone; the register form gains only
/// with a short prefetch (kDependentAhead) (docs/Design.md, Measured
/// decisions: decode GEMM as a programmatic dependent).
enum class DecodeDependence {
  None,
  /// The bulk-copy form only (SPLITLINEAR_FP8_DECODE_PDL=bulk).
  BulkForm,
  /// Both forms (the runtime's default on sm90).
  AllForms,
};

/// y[M, N] = sx sw (x[M, K] w[N, K]^T) (+ bias[N]) with x and w e4m3fn,
/// row-major with unit column stride (lds in bytes, multiples of 16; 16-byte
/// aligned starts), K a multiple of 16, 1 <= M <= kDecodeGemmMaxRows; y of
/// `outType` (f32, f16, bf16; ldy in elements), bias of `outType` or NULL;
/// sx / sw: M / N floats (outerVector) or one each. fp32 accumulation,
/// scales and bias applied in fp32, one rounding to `outType`.
struct DecodeGemmArgs {
  slinrt_dtype outType;
  int64_t M, N, K;
  const void *x;
  int64_t ldx;
  const void *w;
  int64_t ldw;
  void *y;
  int64_t ldy;
  const float *sx, *sw;
  bool outerVector;
  const void *bias;
  /// Rows of w per CTA: 16 or 32 (decodeGemmTileN).
  int tileN;
  /// The device's SMs: with 16-row tiles, picks the configuration whose
  /// CTAs fit on the device at once, and sizes the bulk form's persistent
  /// grid (0: unknown).
  int multiProcessors = 0;
  /// The device's opt-in shared memory per block, in bytes, where it runs
  /// the bulk-copy (sm90) form of the kernel (decodeGemmBulkAvailable), else
  /// 0. That form runs for M <= 16 with 16-row tiles when x fits and there
  /// are more than three tiles per SM (useBulk in DecodeGemmKernels.cu).
  int64_t maxSharedBytes = 0;
  /// The device ordinal (the bulk form opts in to its shared memory once
  /// per device).
  int device = 0;
  /// Which forms launch as programmatic dependents of the previous kernel
  /// in the stream (sm90+ only; the caller checks).
  DecodeDependence dependence = DecodeDependence::None;
};

/// Whether the current device runs an sm89+ image of the decode GEMM (the
/// image for an older arch is empty).
bool decodeGemmAvailable();

/// Whether the current device runs an sm90+ image of the decode GEMM: its
/// bulk-copy form (cp.async.bulk and mbarriers are sm90 PTX) and the
/// griddepcontrol instructions that a programmatic launch needs.
bool decodeGemmBulkAvailable();

/// Opts the bulk form's kernels in to `maxSharedBytes` of dynamic shared
/// memory on `device` (the current device), which its launches otherwise do
/// on first use; for context creation, outside any graph capture.
cudaError_t prepareDecodeGemmBulk(int device, int64_t maxSharedBytes);

/// The tile (rows of w per CTA) for N rows on `numSMs` SMs.
int decodeGemmTileN(int64_t N, int numSMs);

/// Launches the decode GEMM; cudaErrorInvalidValue for arguments outside
/// the contract above that it can see (M, N, K, tileN, outType).
cudaError_t launchDecodeGemm(const DecodeGemmArgs &args, cudaStream_t stream);

} // namespace cuda
} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_DECODE_GEMM_DECODEGEMM_H

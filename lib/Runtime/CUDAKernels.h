//===- CUDAKernels.h - Launchers of the CUDA kernels ------------*- C++ -*-===//
//
// Host-side launchers for the few kernels the CUDA backend needs besides
// cuBLASLt: a dtype-converting strided 2-D copy, a row broadcast (bias or
// zeros into D, used before a beta = 1 GEMM when the fused bias epilogue is
// not available) and a row-sum reduction (the BIAS_GRAD fallback). Each
// launches on `stream` and returns the launch status; none allocates or
// synchronizes, so all are safe inside CUDA-graph capture. The FP8
// quantization kernels (QuantizeKernels.cu) follow the same rules.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_CUDAKERNELS_H
#define SPLITLINEAR_LIB_RUNTIME_CUDAKERNELS_H

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

//===----------------------------------------------------------------------===//
// FP8 quantization (QuantizeKernels.cu)
//===----------------------------------------------------------------------===//

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
                            cudaStream_t stream);

/// The dual cast of x [rows, cols] (slinrt_quantize_fp8_dual), one launch:
/// out = x · colScale with the scale of amax[0] (scaleInv[0] written), outT
/// = xᵀ with the scale of amax[1] (scaleInvT[0] written).
cudaError_t launchCastDual(slinrt_dtype src, slinrt_dtype dst,
                           const Fp8Part &x, const float *colScale,
                           const float *amax, uint8_t *out, float *scaleInv,
                           uint8_t *outT, float *scaleInvT,
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
                                   cudaStream_t stream);

/// Per-row (one launch) and per-column quantization of x: amax (may be
/// NULL) and scaleInv get one entry per row / column. The per-column one is
/// a memset, a column amax, the cast and a last kernel for the scales; it
/// keeps the column amax in scaleInv meanwhile (no scratch of its own).
cudaError_t launchQuantizeRows(slinrt_dtype src, slinrt_dtype dst,
                               const Fp8Part &x, const float *colScale,
                               float *amax, float *scaleInv, uint8_t *out,
                               uint8_t *outT, cudaStream_t stream);
cudaError_t launchQuantizeCols(slinrt_dtype src, slinrt_dtype dst,
                               const Fp8Part &x, const float *colScale,
                               float *amax, float *scaleInv, uint8_t *out,
                               uint8_t *outT, cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Small-M FP8 GEMM (DecodeGemmKernels.cu)
//===----------------------------------------------------------------------===//

/// The most rows of x the decode GEMM takes (two m-tiles of 16).
constexpr int64_t kDecodeGemmMaxRows = 32;

/// y[M, N] = sx sw (x[M, K] w[N, K]^T) (+ bias[N]) with x and w e4m3fn,
/// row-major with unit column stride (lds in bytes, multiples of 16; 16-byte
/// aligned starts), K a multiple of 16, 1 <= M <= kDecodeGemmMaxRows; y of
/// `outType` (f32, f16, bf16; ldy in elements), bias of `outType` or NULL;
/// sx / sw: M / N floats (outerVector) or one each. fp32 accumulation,
/// scales and bias applied in fp32, one rounding to `outType`.
/// Which forms of the decode GEMM launch as programmatic dependents of the
/// kernel before them: their CTAs may start while that kernel finishes,
/// prefetch their first bytes of w into L2 (a hint, which cannot read stale
/// data: L2 is the point of coherence) and wait for it to complete
/// (griddepcontrol.wait) before they read or write anything else. H200,
/// 2026-12-03: in the 4-layer decode of bench/fp8_serving.py (processes
/// alternating), both forms took 0.549 and 0.555 ms, the bulk form alone
/// 0.581 and 0.575; the register form gains only with a short prefetch
/// (DecodeGemmKernels.cu, kDependentAhead).
enum class DecodeDependence {
  None,
  /// The bulk-copy form only (SPLITLINEAR_FP8_DECODE_PDL=bulk).
  BulkForm,
  /// Both forms (the runtime's default on sm90).
  AllForms,
};

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

/// Launches `kernel` with `args` (converted to its parameter types) and
/// `sharedBytes` of dynamic shared memory, and returns the status of this
/// launch only. On failure the launch's own error (the thread's last error,
/// which the failure has just set) is cleared; a sticky error stays, as it
/// must. On success the thread's last error is not touched, so another
/// library's pending error still reaches its owner.
template <typename... Params, typename... Args>
cudaError_t launchKernelShared(void (*kernel)(Params...), dim3 grid, dim3 block,
                               size_t sharedBytes, cudaStream_t stream,
                               Args... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "argument count");
  return [&](Params... params) {
    void *argv[] = {static_cast<void *>(&params)...};
    cudaError_t err = cudaLaunchKernel(reinterpret_cast<const void *>(kernel),
                                       grid, block, argv, sharedBytes, stream);
    if (err != cudaSuccess)
      (void)cudaGetLastError();
    return err;
  }(static_cast<Params>(args)...);
}

/// launchKernelShared, with the launch marked as a programmatic dependent
/// of the previous kernel in the stream when `programmatic` (sm90+; the
/// kernel must run griddepcontrol.wait before it touches that kernel's
/// results). Stream capture records the mark as a programmatic graph edge.
template <typename... Params, typename... Args>
cudaError_t launchKernelDependent(void (*kernel)(Params...), dim3 grid,
                                  dim3 block, size_t sharedBytes,
                                  cudaStream_t stream, bool programmatic,
                                  Args... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "argument count");
  if (!programmatic)
    return launchKernelShared(kernel, grid, block, sharedBytes, stream,
                              args...);
  return [&](Params... params) {
    void *argv[] = {static_cast<void *>(&params)...};
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = sharedBytes;
    config.stream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    cudaError_t err = cudaLaunchKernelExC(
        &config, reinterpret_cast<const void *>(kernel), argv);
    if (err != cudaSuccess)
      (void)cudaGetLastError();
    return err;
  }(static_cast<Params>(args)...);
}

#if defined(__CUDACC__)
/// Lets the next grid in the stream, if it was launched as a programmatic
/// dependent, start while this one runs (sm90; nothing on older archs). A
/// grid whose CTAs are not all resident at once must not call it before its
/// last wave: the dependent's waiting CTAs could take the SMs its later CTAs
/// need.
__device__ __forceinline__ void allowDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
/// Waits until the grid this one depends on (the previous kernel in the
/// stream) has completed and its writes are visible; at once in a grid not
/// launched as a programmatic dependent.
__device__ __forceinline__ void waitPrerequisites() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
#endif

/// launchKernelShared without dynamic shared memory.
template <typename... Params, typename... Args>
cudaError_t launchKernel(void (*kernel)(Params...), dim3 grid, dim3 block,
                         cudaStream_t stream, Args... args) {
  return launchKernelShared(kernel, grid, block, 0, stream, args...);
}

} // namespace cuda
} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_CUDAKERNELS_H

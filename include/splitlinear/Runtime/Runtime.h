//===- Runtime.h - splitlinear runtime C ABI ------------------------*- C -*-===//
//
// The C ABI between code lowered from the `slin` dialect and the runtime
// library. It depends on nothing from LLVM/MLIR and throws no exceptions.
//
// ABI decisions (see docs/Design.md, "Runtime ABI"):
//  * Runtime state (BLAS/cuBLASLt handle, workspace, stream, allocator) lives in
//    an opaque `slinrt_context`. Lowered IR receives it through an explicit
//    function argument of type `!slin.context`, which the lowering turns into
//    `!llvm.ptr` (a `slinrt_context *` in the C interface); functions without
//    one use `slinrt_default_context()` (CPU).
//  * Entry points called from IR use MLIR's C interface
//    (`llvm.emit_c_interface`): memrefs arrive as pointers to strided memref
//    descriptors (`slinrt_memref1d` / `slinrt_memref2d`, the layout of
//    `StridedMemRefType<T, N>`). The element address of a view is
//    `aligned + offset * sizeof(T)`, never `allocated`.
//  * Entry points return nothing: the first failure is recorded in the context
//    (status + message) and later calls on that context do nothing until
//    `slinrt_context_clear_error`. The caller checks the status after a kernel.
//  * Names: `slinrt_<target>_<op>_<dtype>` with target `cpu` or `cuda`; the two
//    targets have identical signatures, so one lowering serves both.
//  * A NULL `slinrt_context *` stands for `slinrt_default_context()` in every
//    function that takes one (except `slinrt_context_destroy`, where it is a
//    no-op).
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_RUNTIME_RUNTIME_H
#define SPLITLINEAR_RUNTIME_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define SLINRT_EXPORT __declspec(dllexport)
#else
#define SLINRT_EXPORT __attribute__((visibility("default")))
#endif

/// Element types, numbered as the lowering encodes them.
typedef enum slinrt_dtype {
  SLINRT_F32 = 0,
  SLINRT_F16 = 1,
  SLINRT_BF16 = 2,
  SLINRT_F64 = 3,
  /// FP8 storage types (one byte; OCP e4m3 "fn": finite, max 448; e5m2: max
  /// 57344). Only the scaled GEMM, the FP8 casts and same-type FP8 copies
  /// take them; the entry points of the four types above do not.
  SLINRT_F8E4M3FN = 4,
  SLINRT_F8E5M2 = 5,
} slinrt_dtype;

/// How a scaled (FP8) GEMM applies its dequantization factors (scale_inv).
typedef enum slinrt_scaling {
  /// scaleA and scaleB hold one float each (cuBLASLt SCALAR_32F).
  SLINRT_SCALING_TENSORWISE = 0,
  /// scaleA holds M floats (one per row of A, i.e. per row of D) and scaleB
  /// N floats (one per row of B, i.e. per column of D): cuBLASLt
  /// OUTER_VEC_32F on both sides. Split weights use this with each part's
  /// scale spread over that part's rows.
  SLINRT_SCALING_OUTER_VECTOR = 1,
} slinrt_scaling;

/// Which amax a quantization takes (slinrt_quantize_fp8).
typedef enum slinrt_quant_axis {
  /// One amax and one scale for the whole tensor (two launches: amax, cast).
  SLINRT_QUANT_TENSOR = 0,
  /// One per row of x [M, K]: scaleInv has M entries (one launch).
  SLINRT_QUANT_ROWS = 1,
  /// One per column of x [M, K]: scaleInv has K entries. Used with `outT`
  /// for GEMMs that contract over M (wgrad).
  SLINRT_QUANT_COLS = 2,
  /// One per 1x128 block along each row of x [M, K] (K a multiple of
  /// SLINRT_QUANT_BLOCK): scaleInv is [M, K/128] row-major, `outT` must be
  /// NULL. The activations and dY of the block-scaled recipe (DeepSeek-V3's
  /// 1x128 tiles; cuBLASLt's VEC128_32F scales).
  SLINRT_QUANT_BLOCKS = 3,
} slinrt_quant_axis;

/// The block edge of SLINRT_QUANT_BLOCKS and slinrt_quantize_fp8_blocks_parts:
/// cuBLASLt's VEC128 and BLK128x128 scale modes.
#define SLINRT_QUANT_BLOCK 128

/// How a quantization rounds its scales (the last argument of the FP8
/// quantization functions, passed as int32_t like `axis`).
typedef enum slinrt_scale_rule {
  /// `scale = fp8_max / amax` (see "FP8 quantization" below).
  SLINRT_SCALE_EXACT = 0,
  /// That scale rounded down to a power of 2, as torchao's rowwise recipe
  /// (`round_scales_to_power_of_2`) and TransformerEngine's block scaling
  /// do: scaling and unscaling are then exact, and the largest value lands
  /// in [fp8_max / 2, fp8_max].
  SLINRT_SCALE_POW2 = 1,
} slinrt_scale_rule;

/// GEMM epilogues, numbered as `#slin.epilogue` encodes them.
typedef enum slinrt_epilogue {
  /// D = op(A) op(B).
  SLINRT_EPILOGUE_NONE = 0,
  /// D = op(A) op(B) + bias, bias[N] broadcast over the rows of D (fprop).
  SLINRT_EPILOGUE_BIAS = 1,
  /// D = op(A) op(B) and bias[m] = sum_k op(A)[m, k] (wgrad with the bias
  /// gradient; op(A) = dy^T so the row sums of op(A) are the bias gradient).
  SLINRT_EPILOGUE_BIAS_GRAD = 2,
  /// D = op(A) op(B) + D (beta = 1, no bias): sums of per-part products, as
  /// in dgrad over weight parts that are not adjacent. On CUDA with a 16-bit
  /// D, cuBLASLt may round the product to D's type before the add (two
  /// roundings, as torch.addmm); the CPU target rounds once.
  SLINRT_EPILOGUE_ACCUMULATE = 3,
} slinrt_epilogue;

/// Status codes, recorded in the context by the first failing call.
typedef enum slinrt_status {
  SLINRT_OK = 0,
  SLINRT_ERROR_INVALID_ARGUMENT = 1,
  SLINRT_ERROR_UNSUPPORTED = 2,
  SLINRT_ERROR_OUT_OF_MEMORY = 3,
  SLINRT_ERROR_CUDA = 4,
  SLINRT_ERROR_CUBLAS = 5,
  SLINRT_ERROR_NOT_AVAILABLE = 6,
} slinrt_status;

/// The strided memref descriptor of rank 1 / 2 (layout of MLIR's
/// StridedMemRefType). Sizes and strides count elements, not bytes.
typedef struct slinrt_memref1d {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
} slinrt_memref1d;

typedef struct slinrt_memref2d {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
} slinrt_memref2d;

typedef struct slinrt_context slinrt_context;

/// Allocation callbacks (e.g. PyTorch's caching allocator). `device` is -1 for
/// host memory; `stream` is the context's stream. Must return NULL on failure.
typedef void *(*slinrt_alloc_fn)(void *user, size_t bytes, int device,
                                 void *stream);
typedef void (*slinrt_free_fn)(void *user, void *ptr, int device, void *stream);

/// Creates a CPU context (OpenBLAS). Never returns NULL except out of memory.
SLINRT_EXPORT slinrt_context *slinrt_context_create_cpu(void);
/// Creates a CUDA context on `device` for `stream` (a cudaStream_t, NULL for
/// the legacy default stream). Creates the cuBLASLt handle and the workspace
/// (32 MiB on sm90+, 4 MiB before) eagerly, so no allocation happens during a
/// later graph capture. Returns NULL if the runtime was built without CUDA or
/// creation failed; `slinrt_last_create_error()` then says why.
SLINRT_EXPORT slinrt_context *slinrt_context_create_cuda(int device,
                                                         void *stream);
/// Creates a CUDA context on `device` for `stream` that allocates no device
/// memory of its own: its GEMMs use the cuBLASLt workspace the caller lends
/// with `slinrt_context_set_workspace` (none until then: algorithms that need
/// no workspace). For hosts with a caching allocator and CUDA-graph support of
/// their own (PyTorch): the workspace then comes from that allocator and is
/// capture-aware, so creating and using the context is safe while a stream is
/// capturing, on any thread. The per-device cuBLASLt handle is still the
/// runtime's, created by the first context of the process on that device.
/// Returns NULL on failure (`slinrt_last_create_error()` says why).
SLINRT_EXPORT slinrt_context *slinrt_context_create_cuda_borrowed(int device,
                                                                  void *stream);
/// Lends `bytes` bytes of device memory at `workspace` to the later GEMMs of a
/// context made by `slinrt_context_create_cuda_borrowed`, until the next call
/// (or a stream change, which drops it). The memory must stay valid, and not
/// be used by other work, until those GEMMs have run on the context's stream
/// (stream-ordered reuse is fine). Records SLINRT_ERROR_INVALID_ARGUMENT on a
/// context that owns its workspaces.
SLINRT_EXPORT void slinrt_context_set_workspace(slinrt_context *ctx,
                                                void *workspace, size_t bytes);
/// Why the last `slinrt_context_create_*` on this thread returned NULL; ""
/// after a successful creation.
SLINRT_EXPORT const char *slinrt_last_create_error(void);
/// 1 if this library was built with the CUDA backend (whether or not a GPU is
/// present), else 0. Without it, `slinrt_cuda_*` entry points record
/// SLINRT_ERROR_NOT_AVAILABLE.
SLINRT_EXPORT int slinrt_has_cuda(void);
/// Replaces the stream used by later calls (workspace is per device+stream and
/// is allocated here if this stream has none yet, so call it before a CUDA
/// graph capture on that stream). A CPU context only records it and passes it
/// to its allocator.
SLINRT_EXPORT void slinrt_context_set_stream(slinrt_context *ctx, void *stream);
/// Installs allocation callbacks for buffers the lowered code allocates
/// (materializing concats). Default: aligned_alloc/free on CPU,
/// cudaMallocAsync/cudaFreeAsync on the context's stream on CUDA. A NULL
/// `alloc` or `free` restores the default. Returned pointers must be aligned to
/// 256 bytes.
SLINRT_EXPORT void slinrt_context_set_allocator(slinrt_context *ctx,
                                                slinrt_alloc_fn alloc,
                                                slinrt_free_fn free,
                                                void *user);
/// A CPU GEMM in float32 (`dtype` SLINRT_F32) or float64 (SLINRT_F64),
/// row-major: `D[M, N] = op(A) · op(B) + beta · D` with `op(A)` `[M, K]` stored
/// as `A` (`[M, K]`, or `[K, M]` when `transA`) with row stride `lda`, and
/// likewise `B`; `beta` is 0 or 1. Returns 0 on success; anything else is
/// recorded as SLINRT_ERROR_UNSUPPORTED. Lets a host library run the CPU GEMMs
/// on its own BLAS and thread pool (PyTorch's), so two thread pools never
/// compete for the cores.
typedef int (*slinrt_cpu_gemm_fn)(void *user, slinrt_dtype dtype, int transA,
                                  int transB, int64_t M, int64_t N, int64_t K,
                                  const void *A, int64_t lda, const void *B,
                                  int64_t ldb, double beta, void *D,
                                  int64_t ldd);
/// Installs the CPU GEMM of a CPU context (NULL restores the default, the
/// runtime's own CPU BLAS). Epilogues, conversions and copies stay in the
/// runtime; only the float32/float64 GEMM calls go to `gemm`.
SLINRT_EXPORT void slinrt_context_set_cpu_gemm(slinrt_context *ctx,
                                               slinrt_cpu_gemm_fn gemm,
                                               void *user);
/// Allows TF32 for fp32 GEMMs on CUDA (CUBLAS_COMPUTE_32F_FAST_TF32).
SLINRT_EXPORT void slinrt_context_set_allow_tf32(slinrt_context *ctx,
                                                 int allow);
/// Sets how `slinrt_prefer_per_part` decides for this context: `rows` >= 0
/// takes one GEMM per part for inputs of at most `rows` rows (0: never); -1,
/// the default, uses the cost model of the context's target.
SLINRT_EXPORT void slinrt_context_set_per_part_max_rows(slinrt_context *ctx,
                                                        int64_t rows);
/// Whether a kernel combining `parts` weight parts that are not adjacent
/// (`bytes` bytes in all) for an input of `rows` rows should run one GEMM per
/// part (1) rather than copy the parts into one buffer and run one GEMM (0).
/// Called from lowered IR (`slin.prefer_per_part`), so that the decision is
/// taken once, per call, where the sizes are known. A context holding an
/// error answers 0.
SLINRT_EXPORT int32_t slinrt_prefer_per_part(slinrt_context *ctx, int64_t rows,
                                             int64_t parts, int64_t bytes);
/// The status of the first failure since creation or the last clear.
SLINRT_EXPORT slinrt_status slinrt_context_status(const slinrt_context *ctx);
/// The message of the first failure, "" when the status is SLINRT_OK.
SLINRT_EXPORT const char *slinrt_context_error(const slinrt_context *ctx);
/// Resets the status to SLINRT_OK so that later calls run again.
SLINRT_EXPORT void slinrt_context_clear_error(slinrt_context *ctx);
/// Frees the context and its workspaces. No-op for NULL and for the default
/// context.
SLINRT_EXPORT void slinrt_context_destroy(slinrt_context *ctx);
/// The process-wide CPU context used by IR functions that take none.
SLINRT_EXPORT slinrt_context *slinrt_default_context(void);

/// Counters of what ran (for observability and tests).
typedef struct slinrt_counters {
  int64_t gemms;            ///< GEMM entry calls completed (empty ones too)
  int64_t epilogue_fallbacks; ///< fused epilogue replaced by a separate pass
  int64_t algo_cache_hits;  ///< cuBLASLt algorithm cache hits
  int64_t algo_cache_misses;
  int64_t copies;           ///< copy2d / copy1d calls completed
  int64_t allocs;           ///< successful non-empty allocations
  int64_t copies_2d;        ///< the copy2d calls among `copies` (weights)
  int64_t scaled_gemms;     ///< scaled (FP8) GEMM entry calls completed
  int64_t quantizations;    ///< FP8 amax / cast calls completed
  int64_t decode_gemms;     ///< scaled GEMMs run by the small-M FP8 kernel
  int64_t tuned_gemms;      ///< FP8 problems whose algorithm was timed
} slinrt_counters;
/// A snapshot of the context's counters.
SLINRT_EXPORT slinrt_counters slinrt_context_counters(const slinrt_context *ctx);

//===----------------------------------------------------------------------===//
// FP8 quantization (called by the host library, not from IR).
//===----------------------------------------------------------------------===//
//
// Conventions (the TransformerEngine / torchao terms): for an FP8 type of
// largest finite value `fp8_max` (448 for e4m3fn, 57344 for e5m2) and an
// amax `a` (fp32), `scale = a > 0 ? min(fp8_max / a, FLT_MAX) : 1` (fp32
// division, IEEE, no fast math; the clamp keeps a tiny amax from giving an
// infinite scale, which would turn zeros into NaN; an inf or NaN amax
// propagates: a non-finite value makes its whole scaling group NaN), rounded
// down to a power of 2 when `scaleRule` is SLINRT_SCALE_POW2, the FP8 value is
// `cast(x * scale)` rounded to nearest even and saturated to ±fp8_max (NaN
// stays NaN), and `scale_inv = 1 / scale` (fp32) is the dequantization
// factor a scaled GEMM takes: x ≈ scale_inv · x8. A CPU context computes
// the same values bit for bit. On CUDA every function runs asynchronously
// on the context's stream, never synchronizes with the host and allocates
// nothing, so it may be captured in a CUDA graph. Pointer arguments
// (`amax`, `scaleInv`, `out`, ...) are device memory on CUDA and host
// memory on CPU; 2-D inputs are descriptors of their `src` dtype with unit
// column stride (any row stride). FP8 outputs are dense row-major. Errors
// (a dtype outside the lists, a layout, a NULL required pointer) are
// recorded in the context as SLINRT_ERROR_INVALID_ARGUMENT.

/// amax[i] = max |parts[i]| (fp32) for each of `numParts` 2-D parts of
/// dtype `src` (f32, f16 or bf16), in one launch. An empty part gives 0.
SLINRT_EXPORT void slinrt_amax_parts(slinrt_context *ctx, slinrt_dtype src,
                                     int64_t numParts,
                                     const slinrt_memref2d *parts,
                                     float *amax);

/// Quantizes `numParts` 2-D parts [N_i, K] of dtype `src` into one FP8
/// buffer of `dst` (SLINRT_F8E4M3FN or SLINRT_F8E5M2), each part with its
/// own scale computed from `amax[i]` (as slinrt_amax_parts writes it):
/// `out` [ΣN_i, K] (row stride K) receives part i at rows off_i .. off_i+N_i;
/// `outT` (may be NULL) receives the transpose [K, ΣN_i] (row stride ΣN_i),
/// the K-major copy that Hopper's TN-only FP8 GEMM needs for dgrad.
/// `scaleInv` (may be NULL) gets numParts entries, `rowScaleInv` (may be
/// NULL) ΣN_i entries: the scale_inv of the part each row belongs to (the
/// spread vector of SLINRT_SCALING_OUTER_VECTOR).
SLINRT_EXPORT void slinrt_cast_parts_fp8(slinrt_context *ctx, slinrt_dtype src,
                                         slinrt_dtype dst, int64_t numParts,
                                         const slinrt_memref2d *parts,
                                         const float *amax, void *out,
                                         void *outT, float *scaleInv,
                                         float *rowScaleInv, int32_t scaleRule);

/// Quantizes `numParts` 2-D parts [N_i, K] of dtype `src` (N_i and K
/// multiples of SLINRT_QUANT_BLOCK) as one [ΣN_i, K] tensor in 128x128
/// blocks, each with its own scale (scale rule and rounding as for
/// slinrt_quantize_fp8), reading the parts in place: the weights of the
/// block-scaled recipe (DeepSeek-V3's 128x128 blocks; cuBLASLt's
/// BLK128x128_32F scales). No block crosses a part. `out` [ΣN_i, K] and
/// `outT` [K, ΣN_i] (dgrad's operand; a block of it is the transpose of a
/// block of `out`, same scale) may each be NULL; `scaleInv` (required) and
/// `amax` (may be NULL) get [ΣN_i/128, K/128] entries, row-major. One launch
/// per part on CUDA.
SLINRT_EXPORT void slinrt_quantize_fp8_blocks_parts(
    slinrt_context *ctx, slinrt_dtype src, slinrt_dtype dst, int64_t numParts,
    const slinrt_memref2d *parts, float *amax, float *scaleInv, void *out,
    void *outT, int32_t scaleRule);

/// Quantizes x [M, K] of dtype `src` (f32, f16, bf16) to `dst` with amax
/// taken along `axis`, a slinrt_quant_axis value (passed as int32_t, like
/// the IR entry points' enum arguments, so that an out-of-range value is
/// checked and recorded, not undefined in C++). With `colScale` (K floats, may
/// be NULL) the value quantized is x[m, k] · colScale[k] (dgrad folds the
/// weight parts' scale_inv into dy's columns this way). Writes `amax` (may be
/// NULL) and `scaleInv` (required): 1 entry (SLINRT_QUANT_TENSOR), M (ROWS), K
/// (COLS) or M·K/128 (BLOCKS); `out` [M, K] (may be NULL) and `outT` [K, M]
/// (may be NULL; its rows are x's columns). Tensorwise takes two launches and
/// uses `amax` as its scratch, so `amax` is required there.
SLINRT_EXPORT void slinrt_quantize_fp8(slinrt_context *ctx, slinrt_dtype src,
                                       slinrt_dtype dst, int32_t axis,
                                       const slinrt_memref2d *x,
                                       const float *colScale, float *amax,
                                       float *scaleInv, void *out, void *outT,
                                       int32_t scaleRule);

/// The two tensorwise quantizations of dy that the backward of split weights
/// needs, from one read of x [M, K] (`src` f32, f16 or bf16): `out` [M, K]
/// gets x[m, k] · colScale[k] quantized with the amax of those products
/// (dgrad, the weight parts' scale_inv folded into dy's columns; scale_inv
/// in scaleInv[0]), and `outT` [K, M] gets xᵀ quantized with the amax of x
/// itself (wgrad; scale_inv in scaleInvT[0]). `amax` (2 entries: folded,
/// plain) is required scratch; `colScale` (K floats), `scaleInv` and
/// `scaleInvT` are required, `out` and `outT` unless x is empty. Writes bit
/// for bit what two slinrt_quantize_fp8 calls with SLINRT_QUANT_TENSOR (one
/// with colScale and out, one without colScale and with outT) write, in
/// two launches instead of four on CUDA.
SLINRT_EXPORT void slinrt_quantize_fp8_dual(slinrt_context *ctx,
                                            slinrt_dtype src, slinrt_dtype dst,
                                            const slinrt_memref2d *x,
                                            const float *colScale, float *amax,
                                            float *scaleInv, void *out,
                                            float *scaleInvT, void *outT,
                                            int32_t scaleRule);

/// The two row-wise quantizations of the rowwise recipe from one read of x
/// [M, K] (`src` f32, f16 or bf16): `out` [M, K] gets x[m, k] · colScale[k]
/// (x itself when `colScale` is NULL) quantized with one scale per row
/// (scaleInv [M]; dgrad of dy, or the forward's x), and `outT` [K, M] gets
/// xᵀ quantized with one scale per column of x (scaleInvT [K]; wgrad).
/// `amax` (may be NULL) gets the M row maxima, then the K column maxima.
/// `scaleInv` and `scaleInvT` are required, `out` and `outT` unless x is
/// empty. Writes bit for bit what slinrt_quantize_fp8 with SLINRT_QUANT_ROWS
/// (colScale, out) and SLINRT_QUANT_COLS (no colScale, outT) write. On CUDA,
/// rows wider than 16384 elements take one amax pass for both maxima and
/// one cast writing both copies (x read twice instead of three times);
/// narrower ones take those two quantizations, which were faster there on
/// the H200.
SLINRT_EXPORT void
slinrt_quantize_fp8_dual_rows(slinrt_context *ctx, slinrt_dtype src,
                              slinrt_dtype dst, const slinrt_memref2d *x,
                              const float *colScale, float *amax,
                              float *scaleInv, void *out, float *scaleInvT,
                              void *outT, int32_t scaleRule);

/// The two 1x128 block quantizations of the block-scaled recipe from one
/// read of x [M, K] (`src` f32, f16 or bf16; K a multiple of
/// SLINRT_QUANT_BLOCK), as TransformerEngine's Float8BlockScaling quantizes
/// an activation or dY for both of its GEMMs: `out` [M, K] gets x in 1x128
/// blocks along its rows (scaleInv [M, K/128] row-major; the forward's x,
/// dgrad's dy), and `outT` [K, M'] (M' = M rounded up to a multiple of
/// SLINRT_QUANT_BLOCK) gets xᵀ in 1x128 blocks along M (scaleInvT [K, M'/128]
/// row-major; wgrad's operands), its columns M .. M' zero: x padded with zero
/// rows, which add nothing to a wgrad sum. `amax` (may be NULL) gets the
/// M·K/128 row-block maxima, then the K·M'/128 column-block maxima.
/// `scaleInv` and `scaleInvT` are required, `out` and `outT` unless x is
/// empty. Writes bit for bit what slinrt_quantize_fp8 with SLINRT_QUANT_BLOCKS
/// writes to `out`, and for `outT` the same rule per block of 128 rows of a
/// column. On CUDA one launch: a thread block per 128x128 tile of x.
SLINRT_EXPORT void slinrt_quantize_fp8_dual_blocks(
    slinrt_context *ctx, slinrt_dtype src, slinrt_dtype dst,
    const slinrt_memref2d *x, float *amax, float *scaleInv, void *out,
    float *scaleInvT, void *outT, int32_t scaleRule);

//===----------------------------------------------------------------------===//
// Entry points called from lowered IR (C interface of MLIR's LLVM lowering).
//===----------------------------------------------------------------------===//
//
// For T in {f32, f16, bf16, f64} and TGT in {cpu, cuda}:
//
//   void _mlir_ciface_slinrt_TGT_gemm_T(slinrt_context *ctx,
//       slinrt_memref2d *A, slinrt_memref2d *B, slinrt_memref2d *D,
//       slinrt_memref1d *bias, int32_t transA, int32_t transB,
//       int32_t epilogue);
//     Row-major: D[M,N] = op(A)[M,K] * op(B)[K,N] (+ epilogue). op(X) = X^T
//     when the flag is non-zero. A 2-D operand may be row-major (strides
//     [ld, 1]) or column-major (strides [1, ld]); any other layout is
//     SLINRT_ERROR_INVALID_ARGUMENT. D must be row-major. Size-1 dimensions may
//     have any stride. bias has N elements (BIAS) or M elements (BIAS_GRAD),
//     stride 1; ignored (may be NULL) for NONE. M = 0 or N = 0 writes nothing
//     to D, except that BIAS_GRAD still writes the M row sums of op(A) (zeros
//     when K = 0); K = 0 writes zeros (plus bias) to D. Shapes that do not
//     agree are SLINRT_ERROR_INVALID_ARGUMENT with the sizes in the message.
//     Accumulation is fp32 for f32/f16/bf16 (TF32 on CUDA if allowed) and
//     fp64 for f64; f16/bf16 results are rounded to nearest even.
//
//   void _mlir_ciface_slinrt_TGT_scaled_gemm_T(slinrt_context *ctx,
//       slinrt_memref2d *A, slinrt_memref2d *B, slinrt_memref2d *D,
//       slinrt_memref1d *scaleA, slinrt_memref1d *scaleB,
//       slinrt_memref1d *bias, int32_t aDtype, int32_t bDtype,
//       int32_t scaling, int32_t fastAccum);
//     The FP8 GEMM, for T (D and bias) in {f32, f16, bf16}:
//     D[m, n] = sA · sB · Σ_k A[m, k] · B[n, k] (+ bias[n]), with A [M, K]
//     and B [N, K] FP8 (`aDtype` / `bDtype`: SLINRT_F8E4M3FN or
//     SLINRT_F8E5M2; e5m2 × e5m2 is SLINRT_ERROR_UNSUPPORTED), both
//     row-major with unit column stride (K-major: the TN layout Hopper
//     requires), and sA / sB as `scaling` says: scaleA[0] / scaleB[0]
//     (TENSORWISE) or scaleA[m] / scaleB[n] (OUTER_VECTOR), fp32 device
//     vectors of stride 1. bias (N elements of T, stride 1) may be NULL or
//     have size 0: no bias. `fastAccum` non-zero allows cuBLASLt's fast FP8
//     accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM). On both targets N
//     and K must be multiples of 16, row strides multiples of 16 elements
//     and the first elements 16-byte aligned (M is free); otherwise
//     SLINRT_ERROR_INVALID_ARGUMENT naming the operand. CUDA needs sm89+
//     (SLINRT_ERROR_UNSUPPORTED below). The CPU target
//     computes exactly: A and B are decoded (exact in fp32), multiplied by
//     the context's fp32 GEMM, then D = round_T(sA · sB · acc + bias).
//     M = 0 or N = 0 writes nothing; K = 0 writes the bias (or zeros).
//     A bias whose first element is not 16-byte aligned is added unfused
//     on CUDA (broadcast into D, then beta = 1; counted in
//     epilogue_fallbacks), which rounds the product to a 16-bit D first.
//     Hopper's FP8 tensor cores keep about 14 bits of their partial sums,
//     so a CUDA fp32 output may differ from the CPU's exact one by ~2^-13
//     of Σ|a·b| (bf16 outputs: within an ulp; torch._scaled_mm rowwise on
//     the same inputs gives the same bits).
//
//   void _mlir_ciface_slinrt_TGT_copy2d_S_T(slinrt_context *ctx,
//       slinrt_memref2d *src, slinrt_memref2d *dst);
//     dst[i,j] = convert<T>(src[i,j]); sizes must match (any strides).
//     S and T range over the four dtypes (16 functions per target), plus
//     the same-type FP8 copies copy2d_f8e4m3fn_f8e4m3fn and
//     copy2d_f8e5m2_f8e5m2 (and copy1d): the materializing concat of FP8
//     weight parts (SLINRT_FP8_DTYPE).
//     Narrowing rounds to nearest even, directly from the source value (f64 ->
//     f16 is not rounded twice); NaN stays NaN, overflow gives inf.
//
//   void _mlir_ciface_slinrt_TGT_copy1d_S_T(slinrt_context *ctx,
//       slinrt_memref1d *src, slinrt_memref1d *dst);
//
//   void _mlir_ciface_slinrt_TGT_alloc(slinrt_memref1d *result,
//       slinrt_context *ctx, int64_t bytes);
//     Returns an i8 buffer of `bytes` bytes (aligned to 256 bytes), offset 0,
//     stride 1, from the context's allocator. On failure records
//     SLINRT_ERROR_OUT_OF_MEMORY and returns a descriptor with NULL pointers and
//     size 0 (later calls then do nothing).
//
//   void _mlir_ciface_slinrt_TGT_free(slinrt_context *ctx, int64_t address);
//     Frees a buffer returned by slinrt_TGT_alloc, given its (aligned ==
//     allocated) address as an integer (the lowering reads it with
//     memref.extract_aligned_pointer_as_index from whatever typed view of the
//     buffer it holds). Address 0 does nothing. Runs even when the context
//     holds an error, so that cleanup after a failure does not leak.
//     (Changed by the lead from a memref argument: the lowering holds typed
//     views of the buffer, never the i8 descriptor.)
//
// Both targets are declared and defined in every build (so IR lowered for CUDA
// always links); without CUDA the `cuda` ones record SLINRT_ERROR_NOT_AVAILABLE,
// as they do when given a context that is not a CUDA context. A `cpu` entry
// point given a CUDA context records SLINRT_ERROR_INVALID_ARGUMENT. The dtype
// lists come from RuntimeEntryPoints.def.

#define SLINRT_DECLARE_TARGET_(TGT)                                            \
  SLINRT_EXPORT void _mlir_ciface_slinrt_##TGT##_alloc(                        \
      slinrt_memref1d *result, slinrt_context *ctx, int64_t bytes);            \
  SLINRT_EXPORT void _mlir_ciface_slinrt_##TGT##_free(slinrt_context *ctx,     \
                                                     int64_t address);
SLINRT_DECLARE_TARGET_(cpu)
SLINRT_DECLARE_TARGET_(cuda)
#undef SLINRT_DECLARE_TARGET_

#define SLINRT_DTYPE(T, ENUM)                                                  \
  SLINRT_EXPORT void _mlir_ciface_slinrt_cpu_gemm_##T(                         \
      slinrt_context *ctx, slinrt_memref2d *A, slinrt_memref2d *B,             \
      slinrt_memref2d *D, slinrt_memref1d *bias, int32_t transA,               \
      int32_t transB, int32_t epilogue);                                       \
  SLINRT_EXPORT void _mlir_ciface_slinrt_cuda_gemm_##T(                        \
      slinrt_context *ctx, slinrt_memref2d *A, slinrt_memref2d *B,             \
      slinrt_memref2d *D, slinrt_memref1d *bias, int32_t transA,               \
      int32_t transB, int32_t epilogue);
#define SLINRT_DTYPE_PAIR(S, T)                                                \
  SLINRT_EXPORT void _mlir_ciface_slinrt_cpu_copy2d_##S##_##T(                 \
      slinrt_context *ctx, slinrt_memref2d *src, slinrt_memref2d *dst);        \
  SLINRT_EXPORT void _mlir_ciface_slinrt_cuda_copy2d_##S##_##T(                \
      slinrt_context *ctx, slinrt_memref2d *src, slinrt_memref2d *dst);        \
  SLINRT_EXPORT void _mlir_ciface_slinrt_cpu_copy1d_##S##_##T(                 \
      slinrt_context *ctx, slinrt_memref1d *src, slinrt_memref1d *dst);        \
  SLINRT_EXPORT void _mlir_ciface_slinrt_cuda_copy1d_##S##_##T(                \
      slinrt_context *ctx, slinrt_memref1d *src, slinrt_memref1d *dst);
#define SLINRT_SCALED_OUT_DTYPE(T, ENUM)                                       \
  SLINRT_EXPORT void _mlir_ciface_slinrt_cpu_scaled_gemm_##T(                  \
      slinrt_context *ctx, slinrt_memref2d *A, slinrt_memref2d *B,             \
      slinrt_memref2d *D, slinrt_memref1d *scaleA, slinrt_memref1d *scaleB,    \
      slinrt_memref1d *bias, int32_t aDtype, int32_t bDtype, int32_t scaling,  \
      int32_t fastAccum);                                                      \
  SLINRT_EXPORT void _mlir_ciface_slinrt_cuda_scaled_gemm_##T(                 \
      slinrt_context *ctx, slinrt_memref2d *A, slinrt_memref2d *B,             \
      slinrt_memref2d *D, slinrt_memref1d *scaleA, slinrt_memref1d *scaleB,    \
      slinrt_memref1d *bias, int32_t aDtype, int32_t bDtype, int32_t scaling,  \
      int32_t fastAccum);
#define SLINRT_FP8_DTYPE(T, ENUM)                                              \
  SLINRT_EXPORT void _mlir_ciface_slinrt_cpu_copy2d_##T##_##T(                 \
      slinrt_context *ctx, slinrt_memref2d *src, slinrt_memref2d *dst);        \
  SLINRT_EXPORT void _mlir_ciface_slinrt_cuda_copy2d_##T##_##T(                \
      slinrt_context *ctx, slinrt_memref2d *src, slinrt_memref2d *dst);        \
  SLINRT_EXPORT void _mlir_ciface_slinrt_cpu_copy1d_##T##_##T(                 \
      slinrt_context *ctx, slinrt_memref1d *src, slinrt_memref1d *dst);        \
  SLINRT_EXPORT void _mlir_ciface_slinrt_cuda_copy1d_##T##_##T(                \
      slinrt_context *ctx, slinrt_memref1d *src, slinrt_memref1d *dst);
#include "splitlinear/Runtime/RuntimeEntryPoints.def"

#ifdef __cplusplus
} // extern "C"
#endif

#endif // SPLITLINEAR_RUNTIME_RUNTIME_H

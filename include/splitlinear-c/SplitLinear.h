/*===- SplitLinear.h - splitlinear compiler C API -----------------*- C -*-===*\
|*                                                                            *|
|* The C API of the splitlinear compiler: parse `slin` IR, run pipelines,    *|
|* JIT-compile, look up and invoke entry points, and build and compile the   *|
|* kernels the torch op needs. A thin wrapper of the C++ kernel compiler     *|
|* (splitlinear/JIT/KernelCompiler.h). Exported from libsplitlinear_c.so     *|
|* with every other symbol hidden. No exceptions cross it; failures return   *|
|* NULL / non-zero and a heap string (free it with slinStringFree) holding   *|
|* the diagnostics.                                                          *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef SPLITLINEAR_C_SPLITLINEAR_H
#define SPLITLINEAR_C_SPLITLINEAR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLIN_CAPI_EXPORT __attribute__((visibility("default")))

/// An MLIR module with its own context. Not thread-safe; distinct modules are
/// independent.
typedef struct SlinModuleImpl *SlinModule;
/// A JIT-compiled module. Lookups and calls are thread-safe.
typedef struct SlinEngineImpl *SlinEngine;

/// Frees a string returned by this API (NULL is fine).
SLIN_CAPI_EXPORT void slinStringFree(char *str);

/// Parses `ir` (MLIR text, `length` bytes) into a verified module. Returns
/// NULL on failure with the diagnostics in `*error` (if `error` is non-NULL).
SLIN_CAPI_EXPORT SlinModule slinModuleParse(const char *ir, size_t length,
                                            char **error);
/// Prints the module (generic form off, locations off).
SLIN_CAPI_EXPORT char *slinModuleToString(SlinModule module);
/// Runs a textual pass pipeline (e.g. "builtin.module(splitlinear-pipeline
/// {target=cpu})"; a pipeline without the `builtin.module(...)` anchor is
/// anchored for you) with the verifier after every pass. Returns 0 on
/// success; on failure non-zero with the diagnostics in `*diagnostics`.
SLIN_CAPI_EXPORT int slinModuleRunPipeline(SlinModule module,
                                           const char *pipeline,
                                           char **diagnostics);
SLIN_CAPI_EXPORT void slinModuleDestroy(SlinModule module);

/// JIT-compiles a module lowered to the LLVM dialect, at LLVM `optLevel`
/// (0-3). The splitlinear runtime's entry points are registered explicitly,
/// so they resolve however this library was loaded (RTLD_LOCAL included).
/// Returns NULL with the real error text in `*error` on failure. The module
/// may be destroyed afterwards.
SLIN_CAPI_EXPORT SlinEngine slinEngineCreate(SlinModule module, int optLevel,
                                             char **error);
/// The packed-argument wrapper `void fn(void **args)` of function `name` (for
/// a function with `llvm.emit_c_interface`, pass "_mlir_ciface_<name>";
/// args[i] then points to the i-th argument: the context pointer or a
/// memref descriptor pointer). NULL if there is none.
SLIN_CAPI_EXPORT void (*slinEngineLookupPacked(SlinEngine engine,
                                                const char *name))(void **);
/// Calls the packed wrapper of `name`. Returns 0, or non-zero with `*error`.
SLIN_CAPI_EXPORT int slinEngineInvokePacked(SlinEngine engine, const char *name,
                                            void **args, char **error);
SLIN_CAPI_EXPORT void slinEngineDestroy(SlinEngine engine);

//===----------------------------------------------------------------------===//
// Kernels of the torch op
//===----------------------------------------------------------------------===//

typedef enum SlinKernelKind {
  /// y[M, N] = x[M, K] · concat(w_i[N_i, K])ᵀ (+ concat(b_i[N_i]))
  SLIN_KERNEL_FPROP = 0,
  /// dx[M, K] = dy[M, N] · concat(w_i[N_i, K])
  SLIN_KERNEL_DGRAD = 1,
  /// dw[N, K] = dyᵀ · x and, with has_bias, db[N] = Σ_m dy[m, :]
  SLIN_KERNEL_WGRAD = 2,
  /// FP8: y[m, j] = sx · ŝ[j] · Σ_k x8[m, k] · concat(w8_i)[j, k]
  /// (+ concat(b_i)[j]), one scaled GEMM over FP8 weight parts with their
  /// own scales (`input_dtype`, `scaling`, `fast_accum` below)
  SLIN_KERNEL_SCALED_FPROP = 3,
} SlinKernelKind;

/// The runtime a kernel is compiled for.
typedef enum SlinTarget {
  SLIN_TARGET_CPU = 0,  /* the host (BLAS) */
  SLIN_TARGET_CUDA = 1, /* CUDA (cuBLASLt) */
} SlinTarget;

/// How an FPROP or DGRAD kernel call combined its weight parts, as the
/// kernel returns it: used in place (one part, or adjacent parts), copied
/// into one buffer, or one GEMM per part. Parts that are not adjacent are
/// copied or kept per part as the runtime context decides
/// (`slinrt_prefer_per_part`, `slinrt_context_set_per_part_max_rows`).
typedef enum SlinKernelPath {
  SLIN_PATH_VIEW = 0,
  SLIN_PATH_COPY = 1,
  SLIN_PATH_PER_PART = 2,
} SlinKernelPath;

/// What a kernel is compiled for. Dims are dynamic: one kernel serves all
/// shapes of a signature. Element types use slinrt_dtype (Runtime.h).
typedef struct SlinKernelSpec {
  SlinKernelKind kind;
  int32_t dtype;               /* input/output/gradient element type
                                  (SCALED_FPROP: the output's, f32, f16 or
                                  bf16) */
  int32_t num_parts;           /* weight parts (FPROP, DGRAD, SCALED_FPROP);
                                  >= 1 */
  const int32_t *part_dtypes;  /* num_parts entries, or NULL: all `dtype`
                                  (SCALED_FPROP: required, one FP8 type) */
  int32_t has_bias;            /* FPROP, SCALED_FPROP: bias parts; WGRAD:
                                  bias gradient */
  const int32_t *bias_dtypes;  /* num_parts entries, or NULL: all `dtype` */
  SlinTarget target;           /* the runtime the kernel calls */
  int64_t alignment;           /* bytes a zero-copy view must be aligned to */
  const char *dump_dir;        /* slinKernelCompile writes the kernel IR and
                                  the IR after every pass here; NULL or "":
                                  nowhere */
  /* SCALED_FPROP only (other kinds ignore them; zero-initialize): */
  int32_t input_dtype; /* the FP8 type of x8: SLINRT_F8E4M3FN or
                          SLINRT_F8E5M2 */
  int32_t scaling;     /* a slinrt_scaling */
  int32_t fast_accum;  /* non-zero: cuBLASLt fast FP8 accumulation */
} SlinKernelSpec;

/// The `slin` IR of the kernel `spec` describes, as text: one public
/// function `slin_kernel` with `llvm.emit_c_interface`, taking the context
/// (`!slin.context`: a `slinrt_context *` once compiled) and then strided
/// memrefs:
///   FPROP: x, w_0..w_{n-1}, [b_0..b_{n-1}], y   -> i32 (a SlinKernelPath)
///   DGRAD: dy, w_0..w_{n-1}, dx                 -> i32 (a SlinKernelPath)
///   WGRAD: dy, x, dw, [db]
///   SCALED_FPROP: x8, input_scale (f32, M or 1), w8_0..w8_{n-1},
///                 weight_scale (f32, Σ N_i or 1), [b_0..b_{n-1}], y
///                                                -> i32 (a SlinKernelPath)
/// Through the packed entry point, an FPROP/DGRAD/SCALED_FPROP kernel writes
/// its path to
/// the int32_t that the last element of `args` points to.
/// Returns NULL with `*error` on an invalid spec.
SLIN_CAPI_EXPORT char *slinKernelBuildIR(const SlinKernelSpec *spec,
                                         char **error);

/// Builds the kernel IR, runs the splitlinear pipeline on it (built in C++
/// from `spec`'s target and alignment) and JIT-compiles it. On success stores the packed entry point
/// (`_mlir_ciface_slin_kernel`) in `*entry` and returns the engine that owns
/// it. On failure returns NULL; `*error` then holds the diagnostics, the IR
/// and a one-line `splitlinear-opt` command that repeats the failure.
SLIN_CAPI_EXPORT SlinEngine slinKernelCompile(const SlinKernelSpec *spec,
                                              void (**entry)(void **),
                                              char **error);

/// The `splitlinear-opt` driver (MlirOptMain with the `slin` dialect, its
/// passes and pipelines registered), for the console script of the Python
/// package, which has no executable of its own: one copy of MLIR and LLVM
/// serves both. `argv[0]` is the program name. Returns the process exit code
/// (0 on success); diagnostics go to stderr.
SLIN_CAPI_EXPORT int slinOptMain(int argc, char **argv);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // SPLITLINEAR_C_SPLITLINEAR_H

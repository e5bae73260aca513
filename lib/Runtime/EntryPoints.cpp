//===- EntryPoints.cpp - C entry points called from IR ----------*- C++ -*-===//
//
// Defines every `_mlir_ciface_slinrt_<target>_<op>_<dtype>` function listed by
// RuntimeEntryPoints.def. Each one is a thin C wrapper: it resolves the
// context, skips the call if the context holds an error, checks that the
// context's target matches the entry point, validates what is common to both
// targets, and dispatches to the CPU or CUDA backend inside `guardedCall`, so
// that no exception crosses the C ABI.
//
//===----------------------------------------------------------------------===//

#include "GemmProblem.h"
#include "Quantize.h"
#include "RuntimeImpl.h"

#include <type_traits>

using namespace slinrt;

namespace {

/// Rejects contexts that cannot run `target`'s entry points. A CUDA entry
/// point without a CUDA context reports NOT_AVAILABLE (the lowering chose a
/// target this process cannot serve); a CPU entry point on a CUDA context is a
/// caller bug, since its pointers are device memory.
void requireTarget(const slinrt_context &ctx, Target target) {
  if (target == Target::CUDA) {
#if !SPLITLINEAR_HAVE_CUDA
    raise(SLINRT_ERROR_NOT_AVAILABLE,
          "this runtime was built without CUDA (SPLITLINEAR_ENABLE_CUDA=OFF or "
          "no CUDA toolkit found)");
#else
    if (ctx.target != Target::CUDA)
      raise(SLINRT_ERROR_NOT_AVAILABLE,
            "needs a CUDA context from slinrt_context_create_cuda, got a CPU "
            "context");
#endif
    return;
  }
  if (ctx.target != Target::CPU)
    raise(SLINRT_ERROR_INVALID_ARGUMENT,
          "needs a CPU context, got a CUDA "
          "context for device ",
          ctx.device, " (use the slinrt_cuda_* entry points)");
}

void runGemm(Target target, slinrt_context *ctx, const char *name,
             slinrt_dtype dtype, slinrt_memref2d *A, slinrt_memref2d *B,
             slinrt_memref2d *D, slinrt_memref1d *bias, int32_t transA,
             int32_t transB, int32_t epilogue) {
  guardedCall(ctx, name, [&](slinrt_context &c) {
    requireTarget(c, target);
    GemmProblem p =
        makeGemmProblem(dtype, A, B, D, bias, transA, transB, epilogue);
#if SPLITLINEAR_HAVE_CUDA
    if (target == Target::CUDA)
      cuda::gemm(c, p);
    else
#endif
      cpu::gemm(c, p);
    c.counters.gemms.fetch_add(1, std::memory_order_relaxed);
  });
}

void runScaledGemm(Target target, slinrt_context *ctx, const char *name,
                   slinrt_dtype outType, slinrt_memref2d *A, slinrt_memref2d *B,
                   slinrt_memref2d *D, slinrt_memref1d *scaleA,
                   slinrt_memref1d *scaleB, slinrt_memref1d *bias,
                   int32_t aDtype, int32_t bDtype, int32_t scaling,
                   int32_t fastAccum) {
  guardedCall(ctx, name, [&](slinrt_context &c) {
    requireTarget(c, target);
    ScaledGemmProblem p =
        makeScaledGemmProblem(outType, A, B, D, scaleA, scaleB, bias, aDtype,
                              bDtype, scaling, fastAccum);
#if SPLITLINEAR_HAVE_CUDA
    if (target == Target::CUDA)
      cuda::scaledGemm(c, p);
    else
#endif
      cpu::scaledGemm(c, p);
    c.counters.scaledGemms.fetch_add(1, std::memory_order_relaxed);
  });
}

/// Checks the common preconditions of a copy and runs it on the backend.
void runCopy(Target target, slinrt_context &c, slinrt_dtype srcType,
             slinrt_dtype dstType, const View2D &src, const View2D &dst,
             const void *srcBase, const void *dstBase) {
  requireTarget(c, target);
  if (src.rows != dst.rows || src.cols != dst.cols)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "source sizes [", src.rows, ", ",
          src.cols, "] differ from destination sizes [", dst.rows, ", ",
          dst.cols, "]");
  if (src.rows < 0 || src.cols < 0)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "negative sizes [", src.rows, ", ",
          src.cols, "]");
  // Sizes compared, not multiplied: rows · cols may overflow (and wrap to 0,
  // which skipped the copy without an error).
  bool hasElements = src.rows > 0 && src.cols > 0;
  if (hasElements && (!srcBase || !dstBase))
    raise(SLINRT_ERROR_INVALID_ARGUMENT, !srcBase ? "source" : "destination",
          " has a NULL data pointer");
  if (hasElements) {
#if SPLITLINEAR_HAVE_CUDA
    if (target == Target::CUDA)
      cuda::copy(c, srcType, dstType, src, dst);
    else
#endif
      cpu::copy(c, srcType, dstType, src, dst);
  }
  c.counters.copies.fetch_add(1, std::memory_order_relaxed);
}

/// A copy between two 2-D (matrix) or two 1-D (vector) descriptors; 2-D
/// copies are counted in `copies2d` too (the concat of weight parts).
template <typename Descriptor>
void runCopyOf(Target target, slinrt_context *ctx, const char *name,
               slinrt_dtype srcType, slinrt_dtype dstType, Descriptor *src,
               Descriptor *dst) {
  guardedCall(ctx, name, [&](slinrt_context &c) {
    if (!src || !dst)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, !src ? "source" : "destination",
            " is a NULL descriptor");
    View2D from = viewOf(*src, srcType, "source");
    View2D to = viewOf(*dst, dstType, "destination");
    runCopy(target, c, srcType, dstType, from, to, src->aligned, dst->aligned);
    if constexpr (std::is_same_v<Descriptor, slinrt_memref2d>)
      c.counters.copies2d.fetch_add(1, std::memory_order_relaxed);
  });
}

void runAlloc(Target target, slinrt_memref1d *result, slinrt_context *ctx,
              const char *name, int64_t bytes) {
  // The result is defined even when the call does nothing.
  if (result)
    *result = slinrt_memref1d{nullptr, nullptr, 0, {0}, {1}};
  guardedCall(ctx, name, [&](slinrt_context &c) {
    requireTarget(c, target);
    if (!result)
      raise(SLINRT_ERROR_INVALID_ARGUMENT, "result is a NULL descriptor");
    void *ptr = allocateBuffer(c, bytes);
    *result = slinrt_memref1d{ptr, ptr, 0, {ptr ? bytes : 0}, {1}};
  });
}

void runFree(Target target, slinrt_context *ctx, const char *name,
             int64_t address) {
  // Runs after an error too: lowered code frees its buffers on the way out.
  guardedCall(
      ctx, name,
      [&](slinrt_context &c) {
        if (address == 0)
          return;
        requireTarget(c, target);
        freeBuffer(c, reinterpret_cast<void *>(static_cast<intptr_t>(address)));
      },
      /*evenAfterError=*/true);
}

// One constant per dtype name, so that the pair list can find the enums.
#define SLINRT_DTYPE(T, ENUM) constexpr slinrt_dtype kDtype_##T = ENUM;
#include "splitlinear/Runtime/RuntimeEntryPoints.def"

} // namespace

extern "C" {

#define SLINRT_DEFINE_TARGET(TGT, TARGET)                                      \
  void _mlir_ciface_slinrt_##TGT##_alloc(slinrt_memref1d *result,              \
                                         slinrt_context *ctx, int64_t bytes) { \
    runAlloc(TARGET, result, ctx, "slinrt_" #TGT "_alloc", bytes);             \
  }                                                                            \
  void _mlir_ciface_slinrt_##TGT##_free(slinrt_context *ctx,                   \
                                        int64_t address) {                     \
    runFree(TARGET, ctx, "slinrt_" #TGT "_free", address);                     \
  }
SLINRT_DEFINE_TARGET(cpu, Target::CPU)
SLINRT_DEFINE_TARGET(cuda, Target::CUDA)
#undef SLINRT_DEFINE_TARGET

#define SLINRT_DEFINE_GEMM(TGT, TARGET, T, ENUM)                               \
  void _mlir_ciface_slinrt_##TGT##_gemm_##T(                                   \
      slinrt_context *ctx, slinrt_memref2d *A, slinrt_memref2d *B,             \
      slinrt_memref2d *D, slinrt_memref1d *bias, int32_t transA,               \
      int32_t transB, int32_t epilogue) {                                      \
    runGemm(TARGET, ctx, "slinrt_" #TGT "_gemm_" #T, ENUM, A, B, D, bias,      \
            transA, transB, epilogue);                                         \
  }
#define SLINRT_DTYPE(T, ENUM)                                                  \
  SLINRT_DEFINE_GEMM(cpu, Target::CPU, T, ENUM)                                \
  SLINRT_DEFINE_GEMM(cuda, Target::CUDA, T, ENUM)

#define SLINRT_DEFINE_COPIES(TGT, TARGET, S, T)                                \
  void _mlir_ciface_slinrt_##TGT##_copy2d_##S##_##T(                           \
      slinrt_context *ctx, slinrt_memref2d *src, slinrt_memref2d *dst) {       \
    runCopyOf(TARGET, ctx, "slinrt_" #TGT "_copy2d_" #S "_" #T, kDtype_##S,    \
              kDtype_##T, src, dst);                                           \
  }                                                                            \
  void _mlir_ciface_slinrt_##TGT##_copy1d_##S##_##T(                           \
      slinrt_context *ctx, slinrt_memref1d *src, slinrt_memref1d *dst) {       \
    runCopyOf(TARGET, ctx, "slinrt_" #TGT "_copy1d_" #S "_" #T, kDtype_##S,    \
              kDtype_##T, src, dst);                                           \
  }
#define SLINRT_DTYPE_PAIR(S, T)                                                \
  SLINRT_DEFINE_COPIES(cpu, Target::CPU, S, T)                                 \
  SLINRT_DEFINE_COPIES(cuda, Target::CUDA, S, T)

#include "splitlinear/Runtime/RuntimeEntryPoints.def"

#define SLINRT_DEFINE_SCALED_GEMM(TGT, TARGET, T, ENUM)                        \
  void _mlir_ciface_slinrt_##TGT##_scaled_gemm_##T(                            \
      slinrt_context *ctx, slinrt_memref2d *A, slinrt_memref2d *B,             \
      slinrt_memref2d *D, slinrt_memref1d *scaleA, slinrt_memref1d *scaleB,    \
      slinrt_memref1d *bias, int32_t aDtype, int32_t bDtype, int32_t scaling,  \
      int32_t fastAccum) {                                                     \
    runScaledGemm(TARGET, ctx, "slinrt_" #TGT "_scaled_gemm_" #T, ENUM, A, B,  \
                  D, scaleA, scaleB, bias, aDtype, bDtype, scaling,            \
                  fastAccum);                                                  \
  }
#define SLINRT_SCALED_OUT_DTYPE(T, ENUM)                                       \
  SLINRT_DEFINE_SCALED_GEMM(cpu, Target::CPU, T, ENUM)                         \
  SLINRT_DEFINE_SCALED_GEMM(cuda, Target::CUDA, T, ENUM)

// Same-type FP8 copies: the dtype constants come from the enum directly.
#define SLINRT_FP8_DTYPE(T, ENUM)                                              \
  constexpr slinrt_dtype kDtype_##T = ENUM;                                    \
  SLINRT_DEFINE_COPIES(cpu, Target::CPU, T, T)                                 \
  SLINRT_DEFINE_COPIES(cuda, Target::CUDA, T, T)

#include "splitlinear/Runtime/RuntimeEntryPoints.def"

#undef SLINRT_DEFINE_GEMM
#undef SLINRT_DEFINE_COPIES
#undef SLINRT_DEFINE_SCALED_GEMM

} // extern "C"

//===- Context.cpp - Contexts, errors, allocation, counters -----*- C++ -*-===//
//
// The C API around `slinrt_context`: creation (CPU, CUDA), configuration
// (stream, allocator, TF32), the sticky first-error state, counters, the
// process-wide default CPU context, and buffer allocation through the
// context's allocator callbacks.
//
//===----------------------------------------------------------------------===//

#include "RuntimeImpl.h"

#include <memory>

using namespace slinrt;

//===----------------------------------------------------------------------===//
// Error state
//===----------------------------------------------------------------------===//

void slinrt_context::fail(slinrt_status code, const char *prefix,
                          const char *text) noexcept {
  std::lock_guard<std::mutex> lock(errorMutex);
  if (status.load(std::memory_order_relaxed) != SLINRT_OK)
    return;
  try {
    message = prefix ? concat(prefix, ": ", text) : std::string(text);
  } catch (...) {
    message.clear(); // keep the status even if the message does not fit
  }
  status.store(code, std::memory_order_release);
}

void slinrt_context::clearError() noexcept {
  std::lock_guard<std::mutex> lock(errorMutex);
  message.clear();
  status.store(SLINRT_OK, std::memory_order_release);
}

//===----------------------------------------------------------------------===//
// Helpers shared by the backends
//===----------------------------------------------------------------------===//

namespace {

/// The reason the last context creation on this thread failed.
thread_local std::string lastCreateError;

/// Sets the allocator callbacks that `ctx`'s target uses by default.
void installDefaultAllocator(slinrt_context &ctx) {
#if SPLITLINEAR_HAVE_CUDA
  if (ctx.target == Target::CUDA) {
    ctx.allocFn = cuda::defaultAlloc;
    ctx.freeFn = cuda::defaultFree;
    ctx.allocUser = nullptr;
    return;
  }
#endif
  ctx.allocFn = cpu::defaultAlloc;
  ctx.freeFn = cpu::defaultFree;
  ctx.allocUser = nullptr;
}

} // namespace

slinrt_context &slinrt::resolveContext(slinrt_context *ctx) {
  if (ctx)
    return *ctx;
  slinrt_context *fallback = slinrt_default_context();
  if (!fallback)
    throw std::bad_alloc();
  return *fallback;
}

View2D slinrt::viewOf(const slinrt_memref2d &ref, slinrt_dtype dtype,
                      const char *name) {
  int64_t firstByte =
      checkedByteOffset(name, ref.offset, ref.sizes[0], ref.sizes[1],
                        ref.strides[0], ref.strides[1], dtypeSize(dtype));
  return View2D{static_cast<char *>(ref.aligned) + firstByte, ref.sizes[0],
                ref.sizes[1], ref.strides[0], ref.strides[1]};
}

View2D slinrt::viewOf(const slinrt_memref1d &ref, slinrt_dtype dtype,
                      const char *name) {
  int64_t firstByte = checkedByteOffset(name, ref.offset, 1, ref.sizes[0],
                                        0, ref.strides[0], dtypeSize(dtype));
  // The row stride of the one row is never stepped over.
  return View2D{static_cast<char *>(ref.aligned) + firstByte, 1, ref.sizes[0],
                0, ref.strides[0]};
}

void *slinrt::allocateBuffer(slinrt_context &ctx, int64_t bytes) {
  if (bytes < 0)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "cannot allocate a negative size (",
          bytes, " bytes)");
  if (bytes == 0)
    return nullptr;
  void *ptr = ctx.allocFn(ctx.allocUser, static_cast<size_t>(bytes), ctx.device,
                          ctx.stream);
  if (!ptr)
    raise(SLINRT_ERROR_OUT_OF_MEMORY, "could not allocate ", bytes,
          " bytes on ",
          ctx.target == Target::CUDA ? concat("CUDA device ", ctx.device)
                                     : std::string("the host"));
  // Lowered code relies on the documented 256-byte alignment for vector and
  // cuBLASLt access, so a custom allocator that breaks it is an error.
  if (reinterpret_cast<uintptr_t>(ptr) % 256 != 0) {
    ctx.freeFn(ctx.allocUser, ptr, ctx.device, ctx.stream);
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "the allocator returned ", ptr,
          " for ", bytes, " bytes, which is not aligned to 256 bytes");
  }
  ctx.counters.allocs.fetch_add(1, std::memory_order_relaxed);
  return ptr;
}

void slinrt::freeBuffer(slinrt_context &ctx, void *ptr) {
  if (ptr)
    ctx.freeFn(ctx.allocUser, ptr, ctx.device, ctx.stream);
}

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

extern "C" {

slinrt_context *slinrt_context_create_cpu(void) {
  try {
    auto ctx = std::make_unique<slinrt_context>();
    installDefaultAllocator(*ctx);
    lastCreateError.clear();
    return ctx.release();
  } catch (...) {
    lastCreateError = "slinrt_context_create_cpu: out of host memory";
    return nullptr;
  }
}

namespace {
/// Both CUDA creation functions: `borrowed` contexts own no workspace.
slinrt_context *createCuda(int device, void *stream, bool borrowed) {
#if SPLITLINEAR_HAVE_CUDA
  try {
    auto ctx = std::make_unique<slinrt_context>();
    cuda::initContext(*ctx, device, stream, borrowed);
    installDefaultAllocator(*ctx);
    lastCreateError.clear();
    return ctx.release();
  } catch (const Error &e) {
    lastCreateError = concat("slinrt_context_create_cuda: ", e.message);
  } catch (const std::bad_alloc &) {
    lastCreateError = "slinrt_context_create_cuda: out of host memory";
  } catch (const std::exception &e) {
    lastCreateError = concat("slinrt_context_create_cuda: ", e.what());
  } catch (...) {
    lastCreateError = "slinrt_context_create_cuda: unknown exception";
  }
  return nullptr;
#else
  (void)device;
  (void)stream;
  (void)borrowed;
  lastCreateError = "slinrt_context_create_cuda: this runtime was built "
                    "without CUDA (SPLITLINEAR_ENABLE_CUDA=OFF or no CUDA "
                    "toolkit found)";
  return nullptr;
#endif
}
} // namespace

slinrt_context *slinrt_context_create_cuda(int device, void *stream) {
  return createCuda(device, stream, /*borrowed=*/false);
}

slinrt_context *slinrt_context_create_cuda_borrowed(int device, void *stream) {
  return createCuda(device, stream, /*borrowed=*/true);
}

void slinrt_context_set_workspace(slinrt_context *ctx, void *workspace,
                                  size_t bytes) {
  guardedCall(
      ctx, "slinrt_context_set_workspace",
      [&](slinrt_context &c) {
#if SPLITLINEAR_HAVE_CUDA
        if (c.target == Target::CUDA) {
          cuda::setWorkspace(c, workspace, bytes);
          return;
        }
#endif
        raise(SLINRT_ERROR_INVALID_ARGUMENT,
              "slinrt_context_set_workspace: not a CUDA context");
      },
      /*evenAfterError=*/true);
}

const char *slinrt_last_create_error(void) { return lastCreateError.c_str(); }

int slinrt_has_cuda(void) { return SPLITLINEAR_HAVE_CUDA ? 1 : 0; }

void slinrt_context_set_stream(slinrt_context *ctx, void *stream) {
  guardedCall(
      ctx, "slinrt_context_set_stream",
      [&](slinrt_context &c) {
#if SPLITLINEAR_HAVE_CUDA
        if (c.target == Target::CUDA) {
          cuda::setStream(c, stream);
          return;
        }
#endif
        c.stream = stream;
      },
      /*evenAfterError=*/true);
}

void slinrt_context_set_allocator(slinrt_context *ctx, slinrt_alloc_fn alloc,
                                  slinrt_free_fn free, void *user) {
  guardedCall(
      ctx, "slinrt_context_set_allocator",
      [&](slinrt_context &c) {
        if (!alloc || !free) {
          installDefaultAllocator(c);
          return;
        }
        c.allocFn = alloc;
        c.freeFn = free;
        c.allocUser = user;
      },
      /*evenAfterError=*/true);
}

void slinrt_context_set_cpu_gemm(slinrt_context *ctx, slinrt_cpu_gemm_fn gemm,
                                 void *user) {
  guardedCall(
      ctx, "slinrt_context_set_cpu_gemm",
      [&](slinrt_context &c) {
        c.cpuGemm = gemm;
        c.cpuGemmUser = gemm ? user : nullptr;
      },
      /*evenAfterError=*/true);
}

void slinrt_context_set_allow_tf32(slinrt_context *ctx, int allow) {
  guardedCall(
      ctx, "slinrt_context_set_allow_tf32",
      [&](slinrt_context &c) { c.allowTF32 = allow != 0; },
      /*evenAfterError=*/true);
}

slinrt_status slinrt_context_status(const slinrt_context *ctx) {
  try {
    return resolveContext(const_cast<slinrt_context *>(ctx)).currentStatus();
  } catch (...) {
    return SLINRT_ERROR_OUT_OF_MEMORY;
  }
}

const char *slinrt_context_error(const slinrt_context *ctx) {
  try {
    return resolveContext(const_cast<slinrt_context *>(ctx)).errorMessage();
  } catch (...) {
    return "out of host memory creating the default context";
  }
}

void slinrt_context_clear_error(slinrt_context *ctx) {
  try {
    resolveContext(ctx).clearError();
  } catch (...) {
  }
}

slinrt_counters slinrt_context_counters(const slinrt_context *ctx) {
  slinrt_counters out{};
  try {
    const auto &c = resolveContext(const_cast<slinrt_context *>(ctx)).counters;
    out.gemms = c.gemms.load(std::memory_order_relaxed);
    out.epilogue_fallbacks =
        c.epilogueFallbacks.load(std::memory_order_relaxed);
    out.algo_cache_hits = c.algoCacheHits.load(std::memory_order_relaxed);
    out.algo_cache_misses = c.algoCacheMisses.load(std::memory_order_relaxed);
    out.copies = c.copies.load(std::memory_order_relaxed);
    out.allocs = c.allocs.load(std::memory_order_relaxed);
    out.copies_2d = c.copies2d.load(std::memory_order_relaxed);
    out.scaled_gemms = c.scaledGemms.load(std::memory_order_relaxed);
    out.quantizations = c.quantizations.load(std::memory_order_relaxed);
    out.decode_gemms = c.decodeGemms.load(std::memory_order_relaxed);
    out.tuned_gemms = c.tunedGemms.load(std::memory_order_relaxed);
  } catch (...) {
  }
  return out;
}

void slinrt_context_destroy(slinrt_context *ctx) {
  if (!ctx || ctx->isDefault)
    return;
#if SPLITLINEAR_HAVE_CUDA
  if (ctx->target == Target::CUDA)
    cuda::destroyState(*ctx);
#endif
  delete ctx;
}

slinrt_context *slinrt_default_context(void) {
  // Never destroyed: lowered code may still run from other static
  // destructors or atexit handlers.
  static slinrt_context *context = []() -> slinrt_context * {
    auto *ctx = new (std::nothrow) slinrt_context;
    if (!ctx)
      return nullptr;
    ctx->isDefault = true;
    installDefaultAllocator(*ctx);
    return ctx;
  }();
  return context;
}

} // extern "C"

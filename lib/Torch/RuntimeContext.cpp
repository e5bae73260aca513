//===- RuntimeContext.cpp - per-thread runtime contexts ---------*- C++ -*-===//
//
// Implements contextFor and checkContext: the runtime contexts of the op
// library, their bridge to PyTorch's caching allocator and CPU BLAS, and the
// translation of runtime errors into PyTorch's exceptions.
//
//===----------------------------------------------------------------------===//

#include "RuntimeContext.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#ifdef SPLITLINEAR_TORCH_CUDA
#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <exception>
#include <memory>
#include <unordered_map>
#include <utility>

namespace {

/// Deleter of thread-local contexts.
struct ContextDeleter {
  void operator()(slinrt_context *ctx) const { slinrt_context_destroy(ctx); }
};
using ContextPtr = std::unique_ptr<slinrt_context, ContextDeleter>;

#ifdef SPLITLINEAR_TORCH_CUDA
/// Another error than out-of-memory thrown by the caching allocator during
/// the current kernel call of this thread; checkContext rethrows it.
thread_local std::exception_ptr allocatorError;

/// Runtime buffers (the concat of non-adjacent parts) come from PyTorch's
/// caching allocator, which throws. The allocator contract is NULL on
/// failure, which the runtime records as SLINRT_ERROR_OUT_OF_MEMORY (raised
/// by checkContext as torch.OutOfMemoryError); any other error (e.g. a
/// sticky CUDA error surfacing in cudaMalloc) is kept and rethrown as is, so
/// it is not mistaken for out-of-memory.
void *cachingAlloc(void *, size_t bytes, int, void *stream) noexcept {
  try {
    return c10::cuda::CUDACachingAllocator::raw_alloc_with_stream(
        bytes, static_cast<cudaStream_t>(stream));
  } catch (const c10::OutOfMemoryError &) {
    return nullptr;
  } catch (...) {
    allocatorError = std::current_exception();
    return nullptr;
  }
}
void cachingFree(void *, void *ptr, int, void *) noexcept {
  try {
    c10::cuda::CUDACachingAllocator::raw_delete(ptr);
  } catch (...) {
    // Only a pointer the allocator does not know throws; it gave us this one.
  }
}
#endif

/// The runtime's CPU GEMMs, run by ATen (`at::mm_out` / `addmm_`): PyTorch's
/// BLAS on PyTorch's intra-op thread pool, so the op follows
/// `torch.set_num_threads` and never adds a second pool (OpenBLAS's own
/// threads spinning against PyTorch's OpenMP workers made the CPU op 4-15x
/// slower than `F.linear` on a 2-core machine). See slinrt_cpu_gemm_fn for
/// the contract.
int atenCpuGemm(void *, slinrt_dtype dtype, int transA, int transB, int64_t m,
                int64_t n, int64_t k, const void *a, int64_t lda,
                const void *b, int64_t ldb, double beta, void *d,
                int64_t ldd) noexcept {
  try {
    at::TensorOptions options =
        at::TensorOptions().dtype(dtype == SLINRT_F64 ? at::kDouble : at::kFloat);
    auto operand = [&](const void *p, int64_t rows, int64_t cols, bool trans,
                       int64_t ld) {
      return at::from_blob(const_cast<void *>(p), {rows, cols},
                           trans ? at::IntArrayRef{1, ld} : at::IntArrayRef{ld, 1},
                           options);
    };
    at::Tensor out = at::from_blob(d, {m, n}, {ldd, 1}, options);
    at::Tensor lhs = operand(a, m, k, transA != 0, lda);
    at::Tensor rhs = operand(b, k, n, transB != 0, ldb);
    if (beta == 0)
      at::mm_out(out, lhs, rhs);
    else
      out.addmm_(lhs, rhs);
    return 0;
  } catch (...) {
    return 1;
  }
}

#ifdef SPLITLINEAR_TORCH_CUDA
/// Lends `ctx` a cuBLASLt workspace of PyTorch's size for the next kernel
/// call, allocated for this call from PyTorch's caching allocator and held in
/// `perCall` until the kernel has been enqueued (stream-ordered reuse makes
/// that a cached-block lookup). Per call, never kept: while a stream captures
/// it comes from the graph's private pool and is freed with it, and during
/// cudagraph trees' warm-up runs (which allocate from that pool too) a kept
/// block would be a live allocation the tree does not track. PyTorch's own
/// workspace is not used: getting it creates a cuBLAS handle on a fresh
/// thread, which fails during a capture.
void lendWorkspace(slinrt_context *ctx, at::DataPtr &perCall) {
  static const size_t bytes = at::cuda::getCUDABlasLtWorkspaceSize();
  perCall = c10::cuda::CUDACachingAllocator::get()->allocate(bytes);
  slinrt_context_set_workspace(ctx, perCall.get(), bytes);
}
#endif

/// The runtime context of this thread for `device`, bound to the current
/// stream. Contexts carry sticky error state, hence one per thread.
///
/// CUDA-graph capture safety: the cuBLASLt workspace (lendWorkspace) and the
/// temporaries come from PyTorch's caching allocator, so no call, even the
/// first one of a fresh thread on a fresh side stream, runs cudaMalloc, a
/// stream creation or a host synchronization while the stream captures. The
/// per-device cuBLASLt handle is the runtime's, created by the process's
/// first call (a warm-up, before any capture). `workspace` keeps a per-call
/// workspace alive until the kernel has run.
} // namespace

slinrt_context *splitlinear::contextFor(const at::Device &device,
                                        const char *op,
                                        at::DataPtr &workspace) {
  if (device.is_cpu()) {
    thread_local ContextPtr cpu([] {
      slinrt_context *ctx = slinrt_context_create_cpu();
      if (ctx)
        slinrt_context_set_cpu_gemm(ctx, atenCpuGemm, nullptr);
      return ctx;
    }());
    TORCH_CHECK(cpu, op, ": could not create the CPU runtime context");
    return cpu.get();
  }
#ifdef SPLITLINEAR_TORCH_CUDA
  if (device.is_cuda()) {
    thread_local std::unordered_map<int, ContextPtr> cuda;
    int index = device.index();
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream(index).stream();
    auto it = cuda.find(index);
    if (it == cuda.end()) {
      slinrt_context *ctx = slinrt_context_create_cuda_borrowed(index, stream);
      TORCH_CHECK(ctx, op, ": could not create the CUDA runtime context: ",
                  slinrt_last_create_error());
      slinrt_context_set_allocator(ctx, cachingAlloc, cachingFree, nullptr);
      it = cuda.emplace(index, ContextPtr(ctx)).first;
    } else {
      slinrt_context_set_stream(it->second.get(), stream);
    }
    lendWorkspace(it->second.get(), workspace);
    slinrt_context_set_allow_tf32(
        it->second.get(), at::globalContext().allowTF32CuBLAS() ? 1 : 0);
    return it->second.get();
  }
#endif
  TORCH_CHECK(false, op, ": tensors on ", device,
              " are not supported (this build handles cpu",
#ifdef SPLITLINEAR_TORCH_CUDA
              " and cuda",
#endif
              ")");
}

void splitlinear::checkContext(slinrt_context *ctx, const char *op) {
  if (slinrt_context_status(ctx) == SLINRT_OK)
    return;
  slinrt_status status = slinrt_context_status(ctx);
  std::string message = slinrt_context_error(ctx);
  slinrt_context_clear_error(ctx);
#ifdef SPLITLINEAR_TORCH_CUDA
  if (allocatorError)
    std::rethrow_exception(std::exchange(allocatorError, nullptr));
#endif
  // torch.OutOfMemoryError, as PyTorch's own allocations raise, so callers
  // that catch it (free memory and retry, smaller batch) handle ours too.
  TORCH_CHECK_WITH(OutOfMemoryError, status != SLINRT_ERROR_OUT_OF_MEMORY, op,
                   ": ", message);
  TORCH_CHECK(false, op, ": ", message);
}


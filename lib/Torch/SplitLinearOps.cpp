//===- SplitLinearOps.cpp - torch.ops.splitlinear.* -------------*- C++ -*-===//
//
// The LibTorch ops. Each one validates its arguments (errors name the
// offending argument), flattens leading dims, allocates outputs with
// PyTorch's allocator, passes every tensor to a JIT-compiled kernel as a
// strided memref descriptor over its storage (base pointer + storage
// offset, so parts of one storage share a base), and checks the runtime
// context afterwards. Whether weight parts are adjacent is decided inside the
// kernel, on every call (the compiled run-time check).
//
// Schemas (shapes: input [..., K], weight_i [N_i, K], bias_i [N_i]):
//   linear(Tensor input, Tensor[] weight, Tensor[]? bias) -> Tensor [..., ΣN_i]
//   linear_dgrad(Tensor grad_output, Tensor[] weight) -> Tensor [..., K]
//   linear_wgrad(Tensor grad_output, Tensor input, bool bias)
//       -> (Tensor [N, K], Tensor [N] or [0])
//   precompile(ScalarType dtype, Device device, int num_parts, bool bias,
//              bool training, str? dump_dir=None) -> ()   (compile ahead of
//              the first call; with dump_dir, recompile and dump each kernel)
//   runtime_counters() -> Dict(str, int)   (views, cats, per_part_gemms,
//                                  compiles, cache_hits, evictions,
//                                  cache_size, dgrad_views, dgrad_cats,
//                                  dgrad_per_part_gemms)
//   reset_runtime_counters() -> ()
//   set_per_part_max_rows(int rows) -> int   (previous value; -1: automatic;
//                                             see perPartMaxRows)
//
//===----------------------------------------------------------------------===//

#include "KernelCache.h"
#include "splitlinear/Runtime/Runtime.h"

#include <ATen/ATen.h>
#include <ATen/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#ifdef SPLITLINEAR_TORCH_CUDA
#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <atomic>
#include <cstdlib>
#include <exception>
#include <memory>
#include <unordered_map>
#include <utility>

using splitlinear::counters;
using splitlinear::getKernel;
using splitlinear::KernelKey;

namespace {

int32_t dtypeCode(at::ScalarType type) {
  switch (type) {
  case at::kFloat:
    return SLINRT_F32;
  case at::kHalf:
    return SLINRT_F16;
  case at::kBFloat16:
    return SLINRT_BF16;
  case at::kDouble:
    return SLINRT_F64;
  default:
    return -1;
  }
}

/// The storage base of `t` (so that views of one storage share it).
void *storageBase(const at::Tensor &t) {
  if (!t.has_storage() || !t.storage().data())
    return nullptr;
  return const_cast<void *>(t.storage().data());
}

slinrt_memref2d descriptor2d(const at::Tensor &t) {
  void *base = storageBase(t);
  return {base, base, base ? t.storage_offset() : 0, {t.size(0), t.size(1)},
          {t.stride(0), t.stride(1)}};
}

slinrt_memref1d descriptor1d(const at::Tensor &t) {
  void *base = storageBase(t);
  return {base, base, base ? t.storage_offset() : 0, {t.size(0)},
          {t.stride(0)}};
}

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
slinrt_context *contextFor(const at::Device &device, const char *op,
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

/// Raises the context's error (and clears it) if the kernel failed.
void checkContext(slinrt_context *ctx, const char *op) {
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

void checkFloat(const at::Tensor &t, const char *op, const std::string &name) {
  TORCH_CHECK(dtypeCode(t.scalar_type()) >= 0, op, ": ", name, " has dtype ",
              t.scalar_type(),
              "; supported are float32, float16, bfloat16 and float64");
}

void checkLike(const at::Tensor &t, const at::Tensor &ref, const char *op,
               const std::string &name, const char *refName) {
  TORCH_CHECK(t.device() == ref.device(), op, ": ", name, " is on ",
              t.device(), " but ", refName, " is on ", ref.device());
  TORCH_CHECK(t.scalar_type() == ref.scalar_type(), op, ": ", name,
              " has dtype ", t.scalar_type(), " but ", refName, " has ",
              ref.scalar_type());
}

/// Validates weight parts against K (their columns) and returns Σ N_i.
int64_t checkWeights(at::TensorList weight, const at::Tensor &ref, int64_t k,
                     const char *op, const char *refName) {
  TORCH_CHECK(!weight.empty(), op, ": weight must hold at least one tensor");
  int64_t n = 0;
  for (size_t i = 0; i < weight.size(); ++i) {
    std::string name = "weight[" + std::to_string(i) + "]";
    TORCH_CHECK(weight[i].defined(), op, ": ", name, " is undefined");
    TORCH_CHECK(weight[i].dim() == 2, op, ": ", name, " must be 2-D [N_i, K], got ",
                weight[i].dim(), "-D");
    checkLike(weight[i], ref, op, name, refName);
    TORCH_CHECK(weight[i].size(1) == k, op, ": ", name, " has ",
                weight[i].size(1), " columns but ", refName, " has K = ", k);
    n += weight[i].size(0);
  }
  return n;
}

/// `t` itself if a GEMM can read it (row-major [ld, 1] or column-major
/// [1, ld] with ld covering the other dim), else a contiguous copy (e.g. the
/// expanded, zero-stride gradient of a sum).
at::Tensor gemmOperand(const at::Tensor &t) {
  int64_t rows = t.size(0), cols = t.size(1);
  bool rowMajor = (t.stride(1) == 1 || cols <= 1) &&
                  (t.stride(0) >= std::max<int64_t>(1, cols) || rows <= 1);
  bool colMajor = (t.stride(0) == 1 || rows <= 1) &&
                  (t.stride(1) >= std::max<int64_t>(1, rows) || cols <= 1);
  return rowMajor || colMajor ? t : t.contiguous();
}

/// Leading dims of `t` flattened: [prod(t.shape[:-1]), t.shape[-1]], in a
/// layout a GEMM can read.
at::Tensor flatten2d(const at::Tensor &t) {
  // Rows counted explicitly: reshape(-1, 0) is ambiguous for K = 0.
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < t.dim(); ++d)
    rows *= t.size(d);
  return gemmOperand(t.reshape({rows, t.size(-1)}));
}

std::vector<int64_t> withLast(at::IntArrayRef shape, int64_t last) {
  std::vector<int64_t> out(shape.begin(), shape.end());
  out.back() = last;
  return out;
}

/// When the weight parts are not adjacent, the kernel either runs one GEMM
/// per part into column blocks of the output, or copies the parts into one
/// buffer and runs one GEMM; it asks the runtime context which, on every call
/// (slinrt_prefer_per_part, lib/Runtime/Strategy.cpp, holds the cost model).
/// This is what the op sets on the context before each call:
/// SPLITLINEAR_PER_PART_MAX_ROWS (read once, at the first call) or
/// set_per_part_max_rows (>= 0: one GEMM per part for inputs of at most that
/// many rows; 0 turns the per-part path off), or -1, the default, for the
/// runtime's automatic choice. It applies to fprop (rows of the input) and
/// dgrad (rows of dy), and changes no kernel.
constexpr int64_t kAutoPerPartMaxRows = -1;

std::atomic<int64_t> &perPartMaxRows() {
  static std::atomic<int64_t> value{[] {
    const char *name = "SPLITLINEAR_PER_PART_MAX_ROWS";
    const char *env = std::getenv(name);
    if (env && std::string(env) == "auto")
      return kAutoPerPartMaxRows;
    return splitlinear::integerFromEnv(name, kAutoPerPartMaxRows, 0,
                                       "'auto' or an integer >= 0");
  }()};
  return value;
}

/// Runs `kernel` on descriptors (2-D first, then 1-D, in argument order given
/// by `order`: 2 for a matrix, 1 for a vector) and updates the counters.
struct Call {
  std::vector<slinrt_memref2d> matrices;
  std::vector<slinrt_memref1d> vectors;
  std::vector<int> order;
  /// Keeps temporaries (contiguous copies) alive until the kernel has run.
  std::vector<at::Tensor> alive;
  /// A workspace lent for this call only (see contextFor).
  at::DataPtr workspace;
  void matrix(const at::Tensor &t) {
    alive.push_back(t);
    matrices.push_back(descriptor2d(t));
    order.push_back(2);
  }
  void vector(const at::Tensor &t) {
    // A GEMM epilogue reads the bias with unit stride.
    at::Tensor v = t.stride(0) == 1 || t.size(0) <= 1 ? t : t.contiguous();
    alive.push_back(v);
    vectors.push_back(descriptor1d(v));
    order.push_back(1);
  }
  /// `paths`: where to count the path the call took, which an FPROP/DGRAD
  /// kernel returns (null for WGRAD, which has no parts).
  void run(const KernelKey &key, slinrt_context *ctx, const char *op,
           splitlinear::PathCounters *paths) {
    std::shared_ptr<const splitlinear::Kernel> kernel = getKernel(key);
    std::vector<void *> pointers;
    pointers.reserve(order.size());
    size_t m = 0, v = 0;
    for (int kind : order)
      pointers.push_back(kind == 2 ? static_cast<void *>(&matrices[m++])
                                   : static_cast<void *>(&vectors[v++]));
    std::vector<void *> args;
    args.reserve(order.size() + 1);
    args.push_back(&ctx);
    for (void *&p : pointers)
      args.push_back(&p);
    int32_t path = SLIN_PATH_VIEW;
    if (paths) {
      args.push_back(&path);
      // The kernel asks the context how to combine parts that are not
      // adjacent (slinrt_prefer_per_part): the user's threshold or the
      // target's cost model.
      slinrt_context_set_per_part_max_rows(
          ctx, perPartMaxRows().load(std::memory_order_relaxed));
    }
    (*kernel)(args.data());
    checkContext(ctx, op);
    if (!paths)
      return;
    switch (path) {
    case SLIN_PATH_COPY:
      paths->cats.fetch_add(1, std::memory_order_relaxed);
      break;
    case SLIN_PATH_PER_PART:
      paths->perPartGemms.fetch_add(1, std::memory_order_relaxed);
      break;
    default:
      paths->views.fetch_add(1, std::memory_order_relaxed);
      break;
    }
  }
};

/// Makes `t`'s device current for the duration of an op (no-op on CPU).
#define SPLITLINEAR_DEVICE_GUARD(t)                                            \
  c10::OptionalDeviceGuard deviceGuard(at::device_of(t))

SlinTarget targetOf(const at::Tensor &t) {
  return t.is_cuda() ? SLIN_TARGET_CUDA : SLIN_TARGET_CPU;
}

//===----------------------------------------------------------------------===//
// linear (fprop)
//===----------------------------------------------------------------------===//

at::Tensor linear(const at::Tensor &input, at::TensorList weight,
                  std::optional<at::TensorList> bias) {
  constexpr const char *op = "splitlinear.linear";
  TORCH_CHECK(input.defined() && input.dim() >= 1, op,
              ": input must be a tensor of at least 1 dim [..., K]");
  checkFloat(input, op, "input");
  int64_t k = input.size(-1);
  int64_t n = checkWeights(weight, input, k, op, "input");
  bool hasBias = bias.has_value();
  if (hasBias) {
    TORCH_CHECK(bias->size() == weight.size(), op, ": bias has ", bias->size(),
                " tensors but weight has ", weight.size());
    for (size_t i = 0; i < bias->size(); ++i) {
      std::string name = "bias[" + std::to_string(i) + "]";
      const at::Tensor &b = (*bias)[i];
      TORCH_CHECK(b.defined() && b.dim() == 1, op, ": ", name,
                  " must be 1-D [N_i]");
      checkLike(b, input, op, name, "input");
      TORCH_CHECK(b.size(0) == weight[i].size(0), op, ": ", name, " has ",
                  b.size(0), " elements but weight[", i, "] has ",
                  weight[i].size(0), " rows");
    }
  }
  SPLITLINEAR_DEVICE_GUARD(input);
  at::Tensor x = flatten2d(input);
  at::Tensor y = at::empty({x.size(0), n}, input.options());
  std::vector<int64_t> shape = withLast(input.sizes(), n);
  if (x.size(0) == 0 || n == 0)
    return y.view(shape);
  if (k == 0) {
    // An empty reduction: zeros plus the bias, as F.linear gives.
    if (hasBias)
      y.copy_(at::cat(*bias).unsqueeze(0).expand({x.size(0), n}));
    else
      y.zero_();
    return y.view(shape);
  }
  KernelKey key{SLIN_KERNEL_FPROP, dtypeCode(input.scalar_type()),
                std::vector<int32_t>(weight.size(), dtypeCode(input.scalar_type())),
                {}, hasBias, targetOf(input)};
  Call call;
  call.matrix(x);
  for (const at::Tensor &w : weight)
    call.matrix(gemmOperand(w));
  if (hasBias)
    for (const at::Tensor &b : *bias)
      call.vector(b);
  call.matrix(y);
  call.run(key, contextFor(input.device(), op, call.workspace), op,
           &counters().fprop);
  return y.view(shape);
}

//===----------------------------------------------------------------------===//
// linear_dgrad / linear_wgrad (backward)
//===----------------------------------------------------------------------===//

at::Tensor linearDgrad(const at::Tensor &gradOutput, at::TensorList weight) {
  constexpr const char *op = "splitlinear.linear_dgrad";
  TORCH_CHECK(gradOutput.defined() && gradOutput.dim() >= 1, op,
              ": grad_output must be a tensor of at least 1 dim [..., N]");
  checkFloat(gradOutput, op, "grad_output");
  TORCH_CHECK(!weight.empty() && weight[0].dim() == 2, op,
              ": weight must hold 2-D tensors [N_i, K]");
  int64_t k = weight[0].size(1);
  int64_t n = checkWeights(weight, gradOutput, k, op, "weight[0]");
  TORCH_CHECK(gradOutput.size(-1) == n, op, ": grad_output has ",
              gradOutput.size(-1), " columns but the weight parts have ", n,
              " rows in all");
  SPLITLINEAR_DEVICE_GUARD(gradOutput);
  at::Tensor dy = flatten2d(gradOutput);
  std::vector<int64_t> shape = withLast(gradOutput.sizes(), k);
  if (dy.size(0) == 0 || k == 0)
    return at::empty(shape, gradOutput.options());
  if (n == 0)
    return at::zeros(shape, gradOutput.options());
  at::Tensor dx = at::empty({dy.size(0), k}, gradOutput.options());
  int32_t dtype = dtypeCode(gradOutput.scalar_type());
  KernelKey key{SLIN_KERNEL_DGRAD, dtype, std::vector<int32_t>(weight.size(), dtype),
                {}, false, targetOf(gradOutput)};
  Call call;
  call.matrix(dy);
  for (const at::Tensor &w : weight)
    call.matrix(gemmOperand(w));
  call.matrix(dx);
  call.run(key, contextFor(gradOutput.device(), op, call.workspace), op,
           &counters().dgrad);
  return dx.view(shape);
}

std::tuple<at::Tensor, at::Tensor>
linearWgrad(const at::Tensor &gradOutput, const at::Tensor &input, bool bias) {
  constexpr const char *op = "splitlinear.linear_wgrad";
  TORCH_CHECK(gradOutput.defined() && gradOutput.dim() >= 1, op,
              ": grad_output must be a tensor of at least 1 dim [..., N]");
  TORCH_CHECK(input.defined() && input.dim() >= 1, op,
              ": input must be a tensor of at least 1 dim [..., K]");
  checkFloat(gradOutput, op, "grad_output");
  checkLike(input, gradOutput, op, "input", "grad_output");
  SPLITLINEAR_DEVICE_GUARD(gradOutput);
  at::Tensor dy = flatten2d(gradOutput);
  at::Tensor x = flatten2d(input);
  TORCH_CHECK(dy.size(0) == x.size(0), op, ": grad_output has ", dy.size(0),
              " rows (leading dims flattened) but input has ", x.size(0));
  int64_t n = dy.size(1), k = x.size(1);
  at::Tensor dw = at::empty({n, k}, gradOutput.options());
  at::Tensor db = at::empty({bias ? n : 0}, gradOutput.options());
  if (dy.size(0) == 0 || n == 0 || k == 0) {
    dw.zero_();
    db.zero_();
    if (bias && dy.size(0) > 0 && k == 0)
      db.copy_(dy.sum(0));
    return {dw, db};
  }
  int32_t dtype = dtypeCode(gradOutput.scalar_type());
  KernelKey key{SLIN_KERNEL_WGRAD, dtype, {}, {}, bias, targetOf(gradOutput)};
  Call call;
  call.matrix(dy);
  call.matrix(x);
  call.matrix(dw);
  if (bias)
    call.vector(db);
  call.run(key, contextFor(gradOutput.device(), op, call.workspace), op,
           /*paths=*/nullptr);
  return {dw, db};
}

//===----------------------------------------------------------------------===//
// Ahead-of-time compilation
//===----------------------------------------------------------------------===//

/// Compiles (and caches) the kernels `linear` needs for a signature, so that
/// a backend can pay the compile at graph-compile time rather than at the
/// first call: fprop, and with `training` also dgrad and wgrad. With
/// `dumpDir`, each kernel is compiled even if cached, writing its IR and the
/// IR after every pass there (the backend passes its compile's dump_dir).
void precompile(at::ScalarType dtype, at::Device device, int64_t numParts,
                bool bias, bool training, std::optional<std::string> dumpDir) {
  std::string dump = dumpDir.value_or("");
  constexpr const char *op = "splitlinear.precompile";
  int32_t code = dtypeCode(dtype);
  TORCH_CHECK(code >= 0, op, ": dtype ", dtype,
              " is not supported (float32, float16, bfloat16, float64)");
  TORCH_CHECK(numParts >= 1, op, ": num_parts must be >= 1, got ", numParts);
  TORCH_CHECK(device.is_cpu() || device.is_cuda(), op, ": device ", device,
              " is not supported");
  SlinTarget target = device.is_cuda() ? SLIN_TARGET_CUDA : SLIN_TARGET_CPU;
  std::vector<int32_t> parts(numParts, code);
  getKernel({SLIN_KERNEL_FPROP, code, parts, {}, bias, target}, dump);
  if (!training)
    return;
  getKernel({SLIN_KERNEL_DGRAD, code, parts, {}, false, target}, dump);
  getKernel({SLIN_KERNEL_WGRAD, code, {}, {}, bias, target}, dump);
  if (bias) // a run of parts without trainable biases
    getKernel({SLIN_KERNEL_WGRAD, code, {}, {}, false, target}, dump);
}

//===----------------------------------------------------------------------===//
// Counters
//===----------------------------------------------------------------------===//

/// The op library's counters by name (see the schema at the top).
c10::Dict<std::string, int64_t> runtimeCounters() {
  auto &c = counters();
  c10::Dict<std::string, int64_t> out;
  out.insert("views", c.fprop.views.load());
  out.insert("cats", c.fprop.cats.load());
  out.insert("per_part_gemms", c.fprop.perPartGemms.load());
  out.insert("compiles", c.compiles.load());
  out.insert("cache_hits", c.cacheHits.load());
  out.insert("evictions", c.evictions.load());
  out.insert("cache_size", static_cast<int64_t>(splitlinear::cacheSize()));
  out.insert("dgrad_views", c.dgrad.views.load());
  out.insert("dgrad_cats", c.dgrad.cats.load());
  out.insert("dgrad_per_part_gemms", c.dgrad.perPartGemms.load());
  return out;
}

/// Sets the per-part row threshold (see perPartMaxRows; -1: automatic) for
/// calls that start after this one, in every thread; returns the previous
/// value.
int64_t setPerPartMaxRows(int64_t rows) {
  TORCH_CHECK(rows >= kAutoPerPartMaxRows,
              "splitlinear.set_per_part_max_rows: rows must be >= 0, or -1 "
              "for the automatic choice, got ", rows);
  return perPartMaxRows().exchange(rows);
}

void resetRuntimeCounters() {
  auto &c = counters();
  for (splitlinear::PathCounters *paths : {&c.fprop, &c.dgrad}) {
    paths->views = 0;
    paths->cats = 0;
    paths->perPartGemms = 0;
  }
  c.compiles = 0;
  c.cacheHits = 0;
  c.evictions = 0;
}

} // namespace

TORCH_LIBRARY(splitlinear, m) {
  m.def("linear(Tensor input, Tensor[] weight, Tensor[]? bias=None) -> Tensor");
  m.def("linear_dgrad(Tensor grad_output, Tensor[] weight) -> Tensor");
  m.def("linear_wgrad(Tensor grad_output, Tensor input, bool bias) -> "
        "(Tensor, Tensor)");
  m.def("precompile(ScalarType dtype, Device device, int num_parts, bool bias, "
        "bool training, str? dump_dir=None) -> ()",
        &precompile);
  m.def("runtime_counters() -> Dict(str, int)", &runtimeCounters);
  m.def("reset_runtime_counters() -> ()", &resetRuntimeCounters);
  m.def("set_per_part_max_rows(int rows) -> int", &setPerPartMaxRows);
}

TORCH_LIBRARY_IMPL(splitlinear, CPU, m) {
  m.impl("linear", &linear);
  m.impl("linear_dgrad", &linearDgrad);
  m.impl("linear_wgrad", &linearWgrad);
}

#ifdef SPLITLINEAR_TORCH_CUDA
TORCH_LIBRARY_IMPL(splitlinear, CUDA, m) {
  m.impl("linear", &linear);
  m.impl("linear_dgrad", &linearDgrad);
  m.impl("linear_wgrad", &linearWgrad);
}
#endif

//===- KernelCall.cpp - tensors to kernel arguments -------------*- C++ -*-===//
//
// Implements KernelCall.h: every tensor is passed as a strided memref
// descriptor over its storage (base pointer + storage offset, so parts of one
// storage share a base, which is what the kernel's adjacency check needs).
//
//===----------------------------------------------------------------------===//

#include "KernelCall.h"
#include "RuntimeContext.h"
#include "Settings.h"

#include <algorithm>
#include <memory>

using namespace splitlinear;

int32_t splitlinear::dtypeCode(at::ScalarType type) {
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

int32_t splitlinear::fp8DtypeCode(at::ScalarType type) {
  switch (type) {
  case at::kFloat8_e4m3fn:
    return SLINRT_F8E4M3FN;
  case at::kFloat8_e5m2:
    return SLINRT_F8E5M2;
  default:
    return -1;
  }
}

namespace {
/// The storage base of `t` (so that views of one storage share it).
void *storageBase(const at::Tensor &t) {
  if (!t.has_storage() || !t.storage().data())
    return nullptr;
  return const_cast<void *>(t.storage().data());
}
} // namespace

slinrt_memref2d splitlinear::descriptor2d(const at::Tensor &t) {
  void *base = storageBase(t);
  return {base, base, base ? t.storage_offset() : 0, {t.size(0), t.size(1)},
          {t.stride(0), t.stride(1)}};
}

slinrt_memref1d splitlinear::descriptor1d(const at::Tensor &t) {
  void *base = storageBase(t);
  return {base, base, base ? t.storage_offset() : 0, {t.size(0)},
          {t.stride(0)}};
}

at::Tensor splitlinear::gemmOperand(const at::Tensor &t) {
  int64_t rows = t.size(0), cols = t.size(1);
  bool rowMajor = (t.stride(1) == 1 || cols <= 1) &&
                  (t.stride(0) >= std::max<int64_t>(1, cols) || rows <= 1);
  bool colMajor = (t.stride(0) == 1 || rows <= 1) &&
                  (t.stride(1) >= std::max<int64_t>(1, rows) || cols <= 1);
  return rowMajor || colMajor ? t : t.contiguous();
}

at::Tensor splitlinear::flatten2d(const at::Tensor &t) {
  // Rows counted explicitly: reshape(-1, 0) is ambiguous for K = 0.
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < t.dim(); ++d)
    rows *= t.size(d);
  return gemmOperand(t.reshape({rows, t.size(-1)}));
}


void Call::matrix(const at::Tensor &t) {
  alive.push_back(t);
  matrices.push_back(descriptor2d(t));
  order.push_back(2);
}
void Call::vector(const at::Tensor &t) {
  // A GEMM epilogue reads the bias with unit stride.
  at::Tensor v = t.stride(0) == 1 || t.size(0) <= 1 ? t : t.contiguous();
  alive.push_back(v);
  vectors.push_back(descriptor1d(v));
  order.push_back(1);
}
void Call::run(const KernelKey &key, slinrt_context *ctx, const char *op,
               PathCounters *paths) {
  std::shared_ptr<const Kernel> kernel = getKernel(key);
  c10::SmallVector<void *, 16> pointers;
  size_t m = 0, v = 0;
  for (int kind : order)
    pointers.push_back(kind == 2 ? static_cast<void *>(&matrices[m++])
                                 : static_cast<void *>(&vectors[v++]));
  c10::SmallVector<void *, 18> args;
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

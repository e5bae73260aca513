//===- KernelCall.h - tensors to kernel arguments ---------------*- C++ -*-===//
//
// Turns tensors into the strided memref descriptors a kernel takes and runs
// a kernel of the cache on them, counting the path it reports.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_TORCH_KERNELCALL_H
#define SPLITLINEAR_LIB_TORCH_KERNELCALL_H

#include "Counters.h"
#include "KernelCache.h"
#include "splitlinear/Runtime/Runtime.h"

#include <ATen/ATen.h>
#include <c10/util/SmallVector.h>

#include <vector>

namespace splitlinear {

/// The runtime's dtype code of `type` (slinrt_dtype), or -1.
int32_t dtypeCode(at::ScalarType type);

/// `t` itself if a GEMM can read it (row-major [ld, 1] or column-major
/// [1, ld] with ld covering the other dim), else a contiguous copy (e.g. the
/// expanded, zero-stride gradient of a sum).
at::Tensor gemmOperand(const at::Tensor &t);

/// Leading dims of `t` flattened: [prod(t.shape[:-1]), t.shape[-1]], in a
/// layout a GEMM can read.
at::Tensor flatten2d(const at::Tensor &t);

/// The FP8 runtime dtype code of `type` (SLINRT_F8E4M3FN, SLINRT_F8E5M2),
/// or -1 (dtypeCode answers -1 for both: the float ops take no FP8).
int32_t fp8DtypeCode(at::ScalarType type);

/// The strided memref descriptors of `t` over its storage (base pointer +
/// storage offset), as kernels and runtime entry points take them.
slinrt_memref2d descriptor2d(const at::Tensor &t);
slinrt_memref1d descriptor1d(const at::Tensor &t);

/// The arguments of one kernel call: descriptors over the tensors' storages
/// (2-D and 1-D, in argument order), kept alive until the kernel has run.
/// Inline storage for a few parts: a call allocates nothing on the heap for
/// its arguments.
struct Call {
  c10::SmallVector<slinrt_memref2d, 8> matrices;
  c10::SmallVector<slinrt_memref1d, 8> vectors;
  /// 2 for a matrix, 1 for a vector, in argument order.
  c10::SmallVector<int, 16> order;
  /// Keeps temporaries (contiguous copies) alive until the kernel has run.
  c10::SmallVector<at::Tensor, 16> alive;
  /// A workspace lent for this call only (see contextFor).
  at::DataPtr workspace;

  /// Appends a matrix argument.
  void matrix(const at::Tensor &t);
  /// Appends a vector argument (unit stride; a copy if `t` has another).
  void vector(const at::Tensor &t);
  /// Runs the kernel of `key` on `ctx` and raises the context's error, naming
  /// `op`. `paths`: where to count the path the call took, which an
  /// FPROP/DGRAD kernel returns (null for WGRAD, which has no parts).
  void run(const KernelKey &key, slinrt_context *ctx, const char *op,
           PathCounters *paths);
};

} // namespace splitlinear

#endif // SPLITLINEAR_LIB_TORCH_KERNELCALL_H

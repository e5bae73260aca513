//===- RuntimeContext.h - per-thread runtime contexts -----------*- C++ -*-===//
//
// The runtime contexts the ops run their kernels on: one per thread and
// device, bound to the current stream, with PyTorch's allocators.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_TORCH_RUNTIMECONTEXT_H
#define SPLITLINEAR_LIB_TORCH_RUNTIMECONTEXT_H

#include "splitlinear/Runtime/Runtime.h"

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>

namespace splitlinear {

/// The runtime context of this thread for `device`, bound to the current
/// stream (see RuntimeContext.cpp); `workspace` keeps a per-call cuBLASLt
/// workspace alive until the kernel has run. Raises c10::Error naming `op`
/// for an unsupported device or a context that cannot be created.
slinrt_context *contextFor(const at::Device &device, const char *op,
                           at::DataPtr &workspace);

/// Raises the context's error (and clears it) if the kernel failed:
/// torch.OutOfMemoryError for an allocation failure, else c10::Error.
void checkContext(slinrt_context *ctx, const char *op);

} // namespace splitlinear

#endif // SPLITLINEAR_LIB_TORCH_RUNTIMECONTEXT_H

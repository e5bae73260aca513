//===- Launch.h - Kernel launch helpers -------------------------*- C++ -*-===//
//
// How the runtime launches its kernels: cudaLaunchKernel (or
// cudaLaunchKernelExC for a programmatic dependent), whose return value is the
// status of that launch alone. `kernel<<<...>>>` followed by cudaGetLastError
// would instead report (and clear) whatever error the thread last produced,
// e.g. a pending error that PyTorch or another library left behind for its own
// check, and blame it on this launch. A pending error of another library is
// left as it is (never read or cleared here); a failed launch clears its own
// error, as checkCuda does for other CUDA calls. Also the device side of
// programmatic dependent launch (allowDependents, waitPrerequisites).
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_LAUNCH_H
#define SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_LAUNCH_H

#include <cstddef>
#include <cuda_runtime_api.h>

namespace slinrt {
namespace cuda {

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

#endif // SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_LAUNCH_H

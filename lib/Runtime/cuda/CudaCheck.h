//===- CudaCheck.h - Status checks and RAII of the CUDA backend -*- C++ -*-===//
//
// What every file of the CUDA backend uses to call CUDA and cuBLASLt: the
// status checks that turn a failed call into an Error (Runtime status and
// message), DeviceGuard, which makes a context's device current for a scope
// at the least cost, and LtObject, which owns a cuBLASLt descriptor.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_CUDA_CUDACHECK_H
#define SPLITLINEAR_LIB_RUNTIME_CUDA_CUDACHECK_H

#include "RuntimeImpl.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <atomic>

namespace slinrt {
namespace cuda {

//===----------------------------------------------------------------------===//
// Status checks
//===----------------------------------------------------------------------===//

/// Throws for a failed CUDA call, naming the call and the CUDA error. The
/// message is built only on failure: `what` is a literal.
inline void checkCuda(cudaError_t err, const char *what) {
  if (err == cudaSuccess)
    return;
  // Clear the (non-sticky) error so later calls do not report it again.
  (void)cudaGetLastError();
  raise(err == cudaErrorMemoryAllocation ? SLINRT_ERROR_OUT_OF_MEMORY
                                         : SLINRT_ERROR_CUDA,
        what, " failed: ", cudaGetErrorName(err), ": ",
        cudaGetErrorString(err));
}

/// Throws for a failed cuBLASLt call, naming the call and the status.
inline void checkCublas(cublasStatus_t status, const char *what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  raise(SLINRT_ERROR_CUBLAS, what, " failed: ", cublasLtGetStatusName(status),
        ": ", cublasLtGetStatusString(status));
}

//===----------------------------------------------------------------------===//
// The current device
//===----------------------------------------------------------------------===//

/// True once a context was created in a process that sees exactly one CUDA
/// device. The current device of every thread is then always that device
/// (cudaSetDevice cannot select another), so the device switches below can
/// skip cudaGetDevice. The device count is fixed for the life of the process.
inline std::atomic<bool> onlyOneDevice{false};

/// Whether this thread made a device current through cudaSetDevice. A fresh
/// thread has no current CUDA context (cudaGetDevice answers 0 without making
/// one), and cuBLASLt launches need one; cudaSetDevice binds the device's
/// primary context, and is allowed while a stream captures.
inline thread_local bool threadHasContext = false;

/// Makes `device` current for the scope and restores the previous one.
/// Queries nothing when only one device is visible (after the thread's first
/// guard), and switches only when `device` is not already current.
class DeviceGuard {
public:
  explicit DeviceGuard(int device) {
    if (!threadHasContext) {
      int current = 0;
      checkCuda(cudaGetDevice(&current), "cudaGetDevice");
      checkCuda(cudaSetDevice(device), "cudaSetDevice");
      threadHasContext = true;
      if (current != device)
        previous = current;
      return;
    }
    if (onlyOneDevice.load(std::memory_order_relaxed))
      return;
    int current = 0;
    checkCuda(cudaGetDevice(&current), "cudaGetDevice");
    if (current != device) {
      checkCuda(cudaSetDevice(device), "cudaSetDevice");
      previous = current;
    }
  }
  ~DeviceGuard() {
    if (previous >= 0)
      (void)cudaSetDevice(previous);
  }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

private:
  int previous = -1;
};

//===----------------------------------------------------------------------===//
// cuBLASLt descriptors
//===----------------------------------------------------------------------===//

/// Owns a cuBLASLt descriptor and destroys it with the owner.
template <typename Handle, cublasStatus_t (*Destroy)(Handle)> class LtObject {
public:
  LtObject() = default;
  ~LtObject() { reset(); }
  LtObject(const LtObject &) = delete;
  LtObject &operator=(const LtObject &) = delete;
  /// The address to pass to the cuBLASLt `...Create` function.
  Handle *out() { return &handle; }
  operator Handle() const { return handle; }
  /// Destroys the descriptor now.
  void reset() {
    if (handle)
      (void)Destroy(handle);
    handle = nullptr;
  }

private:
  Handle handle = nullptr;
};
using MatmulDesc = LtObject<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using MatrixLayout =
    LtObject<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using MatmulPreference =
    LtObject<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

} // namespace cuda
} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_CUDA_CUDACHECK_H

//===- Device.cpp - CUDA device state and context lifecycle -----*- C++ -*-===//
//
// Creates the per-device state (handle, attributes, workspace size) and the
// per-context state (workspaces), switches a context's stream or lent
// workspace, and implements the default stream-ordered device allocator.
//
//===----------------------------------------------------------------------===//

#include "cuda/Device.h"
#include "cuda/CudaCheck.h"
#include "cuda/kernels/decode_gemm/DecodeGemm.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>

using namespace slinrt;
using namespace slinrt::cuda;

DeviceState &cuda::deviceState(int device) {
  static std::mutex mutex;
  // Leaked on purpose: destroying handles from static destructors races with
  // the CUDA runtime's own teardown.
  static auto *states = new std::unordered_map<int, DeviceState *>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = states->find(device);
  if (it != states->end())
    return *it->second;
  auto state = std::make_unique<DeviceState>();
  checkCuda(cudaDeviceGetAttribute(&state->computeMajor,
                                   cudaDevAttrComputeCapabilityMajor, device),
            "cudaDeviceGetAttribute(ComputeCapabilityMajor)");
  checkCuda(cudaDeviceGetAttribute(&state->computeMinor,
                                   cudaDevAttrComputeCapabilityMinor, device),
            "cudaDeviceGetAttribute(ComputeCapabilityMinor)");
  checkCuda(cudaDeviceGetAttribute(&state->multiProcessors,
                                   cudaDevAttrMultiProcessorCount, device),
            "cudaDeviceGetAttribute(MultiProcessorCount)");
  // TransformerEngine's sizes: Hopper kernels want a larger workspace.
  state->workspaceBytes =
      state->computeMajor >= 9 ? size_t(32) << 20 : size_t(4) << 20;
  checkCublas(cublasLtCreate(&state->handle), "cublasLtCreate");
  DeviceState *raw = state.release();
  (*states)[device] = raw;
  return *raw;
}

void *cuda::workspaceFor(CudaState &state, void *stream) {
  auto it = state.workspaces.find(stream);
  if (it != state.workspaces.end())
    return it->second;
  void *ws = nullptr;
  checkCuda(cudaMalloc(&ws, state.device->workspaceBytes),
            "cudaMalloc(cuBLASLt workspace)");
  try {
    state.workspaces.emplace(stream, ws);
  } catch (...) {
    (void)cudaFree(ws);
    throw;
  }
  return ws;
}

//===----------------------------------------------------------------------===//
// Context lifecycle and allocation
//===----------------------------------------------------------------------===//

void cuda::initContext(slinrt_context &ctx, int device, void *stream,
                       bool borrowed) {
  int count = 0;
  checkCuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (device < 0 || device >= count)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "CUDA device ", device,
          " does not exist (", count, " visible)");
  onlyOneDevice.store(count == 1, std::memory_order_relaxed);
  DeviceGuard guard(device);
  auto state = std::make_unique<CudaState>();
  state->device = &deviceState(device);
  // Asked here rather than at the first decode GEMM, which may be inside a
  // graph capture.
  (void)decodeGemmUsable(*state->device);
  if (int64_t bytes = decodeBulkShared(*state->device, device))
    (void)cuda::prepareDecodeGemmBulk(device, bytes);
  state->borrowed = borrowed;
  if (!borrowed) {
    state->workspace = workspaceFor(*state, stream);
    state->workspaceBytes = state->device->workspaceBytes;
  }
  ctx.target = Target::CUDA;
  ctx.device = device;
  ctx.stream = stream;
  ctx.cuda = state.release();
}

void cuda::destroyState(slinrt_context &ctx) noexcept {
  if (!ctx.cuda)
    return;
  try {
    DeviceGuard guard(ctx.device);
    for (auto &entry : ctx.cuda->workspaces)
      (void)cudaFree(entry.second); // synchronizes with pending GEMMs
  } catch (...) {
  }
  delete ctx.cuda;
  ctx.cuda = nullptr;
}

void cuda::setStream(slinrt_context &ctx, void *stream) {
  CudaState &state = *ctx.cuda;
  if (state.borrowed) {
    // A lent workspace is ordered on the stream it was lent for.
    if (stream != ctx.stream) {
      state.workspace = nullptr;
      state.workspaceBytes = 0;
    }
  } else {
    DeviceGuard guard(ctx.device);
    state.workspace = workspaceFor(state, stream);
  }
  ctx.stream = stream;
}

void cuda::setWorkspace(slinrt_context &ctx, void *workspace, size_t bytes) {
  CudaState &state = *ctx.cuda;
  if (!state.borrowed)
    raise(SLINRT_ERROR_INVALID_ARGUMENT,
          "slinrt_context_set_workspace: the context owns its workspaces "
          "(create it with slinrt_context_create_cuda_borrowed)");
  state.workspace = bytes ? workspace : nullptr;
  state.workspaceBytes = workspace ? bytes : 0;
}

void *cuda::defaultAlloc(void *, size_t bytes, int device, void *stream) {
  int current = device; // see onlyOneDevice
  if (!onlyOneDevice.load(std::memory_order_relaxed) &&
      cudaGetDevice(&current) != cudaSuccess)
    return nullptr;
  if (current != device && cudaSetDevice(device) != cudaSuccess)
    return nullptr;
  void *ptr = nullptr;
  if (cudaMallocAsync(&ptr, bytes, static_cast<cudaStream_t>(stream)) !=
      cudaSuccess) {
    (void)cudaGetLastError(); // an OOM must not poison later launch checks
    ptr = nullptr;
  }
  if (current != device)
    (void)cudaSetDevice(current);
  return ptr;
}

void cuda::defaultFree(void *, void *ptr, int device, void *stream) {
  int current = device; // see onlyOneDevice
  if (!onlyOneDevice.load(std::memory_order_relaxed) &&
      cudaGetDevice(&current) != cudaSuccess)
    return;
  if (current != device)
    (void)cudaSetDevice(device);
  (void)cudaFreeAsync(ptr, static_cast<cudaStream_t>(stream));
  if (current != device)
    (void)cudaSetDevice(current);
}

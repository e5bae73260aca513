//===- RuntimeImpl.h - Internals shared by the runtime ----------*- C++ -*-===//
//
// The definition of `slinrt_context`, the internal `Error` exception that
// carries a status to the C boundary, the boundary wrapper that turns every
// exception into a recorded error, element-type traits, and the interface
// between the target-independent entry points and the CPU / CUDA backends.
// Nothing here is exported from the shared library.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_RUNTIMEIMPL_H
#define SPLITLINEAR_LIB_RUNTIME_RUNTIMEIMPL_H

#include "splitlinear/Runtime/Runtime.h"

#include "Float16.h"

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <utility>

// Set to 1 by the build when the CUDA backend is compiled in.
#ifndef SPLITLINEAR_HAVE_CUDA
#define SPLITLINEAR_HAVE_CUDA 0
#endif

namespace slinrt {

/// Where a context runs its work.
enum class Target { CPU, CUDA };

/// Per-context CUDA state (workspaces per stream); defined in cuda/Device.h.
struct CudaState;

/// An internal failure: carries the status and message to the C boundary,
/// where `guardedCall` records it in the context.
class Error : public std::exception {
public:
  Error(slinrt_status code, std::string text)
      : status(code), message(std::move(text)) {}
  const char *what() const noexcept override { return message.c_str(); }
  slinrt_status status;
  std::string message;
};

/// Concatenates the arguments with operator<< (for error messages).
template <typename... Args> std::string concat(const Args &...args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// Throws an Error with a message built from `args`.
template <typename... Args>
[[noreturn]] void raise(slinrt_status status, const Args &...args) {
  throw Error(status, concat(args...));
}

/// Size in bytes of an element of `dtype`.
inline int64_t dtypeSize(slinrt_dtype dtype) {
  switch (dtype) {
  case SLINRT_F32:
    return 4;
  case SLINRT_F16:
  case SLINRT_BF16:
    return 2;
  case SLINRT_F64:
    return 8;
  case SLINRT_F8E4M3FN:
  case SLINRT_F8E5M2:
    return 1;
  }
  return 0;
}

/// True for the FP8 storage types.
inline bool isFp8(slinrt_dtype dtype) {
  return dtype == SLINRT_F8E4M3FN || dtype == SLINRT_F8E5M2;
}

/// The byte range of a strided view relative to its base pointer: element
/// `offset`, then `rows` x `cols` elements `rowStride` / `colStride` apart
/// (any sign), `elementSize` bytes each. Throws
/// Error(SLINRT_ERROR_INVALID_ARGUMENT) naming `name` when the byte offset
/// of the first element, or of any element of a non-empty view, does not fit
/// in int64: the address computations of the backends (base + offset·size,
/// row r at r·ld, the extent `offset + (rows - 1)·ld + cols`) would wrap.
/// Returns the byte offset of the first element.
/// `prefix` and `name` are joined only for the message (no string is built on
/// the hot path).
inline int64_t checkedByteOffset(const char *name, int64_t offset,
                                 int64_t rows, int64_t cols, int64_t rowStride,
                                 int64_t colStride, int64_t elementSize,
                                 const char *prefix = "") {
  int64_t firstByte = 0;
  bool overflow = __builtin_mul_overflow(offset, elementSize, &firstByte);
  if (!overflow && rows > 0 && cols > 0) {
    int64_t rowSpan = 0, colSpan = 0, last = 0, lastByte = 0, end = 0;
    overflow = __builtin_mul_overflow(rows - 1, rowStride, &rowSpan) ||
               __builtin_mul_overflow(cols - 1, colStride, &colSpan) ||
               __builtin_add_overflow(offset, rowSpan, &last) ||
               __builtin_add_overflow(last, colSpan, &last) ||
               __builtin_mul_overflow(last, elementSize, &lastByte) ||
               __builtin_add_overflow(lastByte, elementSize, &end);
  }
  if (overflow)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, prefix, name, " with offset ", offset,
          ", sizes [", rows, ", ", cols, "] and strides [", rowStride, ", ",
          colStride, "] spans more bytes than int64 can address");
  return firstByte;
}

/// Throws Error(SLINRT_ERROR_INVALID_ARGUMENT) naming the first of the
/// operand descriptors `A`, `B`, `D` of a GEMM call that is NULL.
inline void requireGemmDescriptors(const void *A, const void *B,
                                   const void *D) {
  if (!A || !B || !D)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "operand ",
          !A   ? "A"
          : !B ? "B"
               : "D",
          " is a NULL descriptor");
}

/// Throws Error(SLINRT_ERROR_INVALID_ARGUMENT) "unknown <what> <value>
/// (expected <known>)" unless `value` is one of 0 .. `last`, the values of a
/// C enum of Runtime.h.
inline void requireEnumValue(const char *what, int64_t value, int64_t last,
                             const char *known) {
  if (value < 0 || value > last)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "unknown ", what, " ", value,
          " (expected ", known, ")");
}

/// Throws Error(SLINRT_ERROR_INVALID_ARGUMENT) when the vector `name` of
/// `length` elements (its checked size) is not contiguous; one element may
/// have any stride.
inline void requireUnitStride(const slinrt_memref1d &ref, int64_t length,
                              const char *name) {
  if (length > 1 && ref.strides[0] != 1)
    raise(SLINRT_ERROR_INVALID_ARGUMENT, name, " has stride ", ref.strides[0],
          ", expected 1");
}

/// The name of `dtype` as it appears in entry-point names.
inline const char *dtypeName(slinrt_dtype dtype) {
  switch (dtype) {
  case SLINRT_F32:
    return "f32";
  case SLINRT_F16:
    return "f16";
  case SLINRT_BF16:
    return "bf16";
  case SLINRT_F64:
    return "f64";
  case SLINRT_F8E4M3FN:
    return "f8e4m3fn";
  case SLINRT_F8E5M2:
    return "f8e5m2";
  }
  return "?";
}

/// A type carried as a value, for generic lambdas.
template <typename T> struct TypeTag { using type = T; };

/// Calls `fn(TypeTag<T>{})` with T the storage type of `dtype`, one of the
/// four arithmetic types (FP8 types are only stored and are dispatched
/// where they are used).
template <typename Fn>
decltype(auto) dispatchDtype(slinrt_dtype dtype, Fn &&fn) {
  switch (dtype) {
  case SLINRT_F32:
    return fn(TypeTag<float>{});
  case SLINRT_F16:
    return fn(TypeTag<Half>{});
  case SLINRT_BF16:
    return fn(TypeTag<BFloat16>{});
  case SLINRT_F64:
    return fn(TypeTag<double>{});
  case SLINRT_F8E4M3FN:
  case SLINRT_F8E5M2:
    break;
  }
  raise(SLINRT_ERROR_INVALID_ARGUMENT, "dtype ", dtypeName(dtype), " (",
        int(dtype), ") is not one of f32, f16, bf16, f64 here");
}

/// A rank-2 strided view with its element address resolved (rank 1 is one
/// row). Strides count elements and may be anything.
struct View2D {
  char *data;
  int64_t rows, cols;
  int64_t rowStride, colStride;
};

} // namespace slinrt

/// The opaque context of the C ABI: target, stream, allocator, first error and
/// counters. Error state and counters are safe to touch from several threads;
/// the configuration (stream, allocator) is set by one thread before use.
struct slinrt_context {
  slinrt::Target target = slinrt::Target::CPU;
  int device = -1;
  void *stream = nullptr;
  bool allowTF32 = false;
  bool isDefault = false;

  /// CPU GEMM hook (slinrt_context_set_cpu_gemm); null: the runtime's BLAS.
  slinrt_cpu_gemm_fn cpuGemm = nullptr;
  void *cpuGemmUser = nullptr;

  slinrt_alloc_fn allocFn = nullptr;
  slinrt_free_fn freeFn = nullptr;
  void *allocUser = nullptr;

  slinrt::CudaState *cuda = nullptr;

  /// slinrt_context_set_per_part_max_rows; -1: the target's cost model.
  int64_t perPartMaxRows = -1;

  struct Counters {
    std::atomic<int64_t> gemms{0}, epilogueFallbacks{0}, algoCacheHits{0},
        algoCacheMisses{0}, copies{0}, allocs{0}, copies2d{0}, scaledGemms{0},
        quantizations{0}, decodeGemms{0}, tunedGemms{0};
  } counters;

  /// True once an error is recorded (until cleared).
  bool failed() const noexcept {
    return status.load(std::memory_order_acquire) != SLINRT_OK;
  }
  /// Records an error unless one is already recorded (the first one wins).
  void fail(slinrt_status code, const char *prefix, const char *text) noexcept;
  /// Resets the error state.
  void clearError() noexcept;
  slinrt_status currentStatus() const noexcept {
    return static_cast<slinrt_status>(status.load(std::memory_order_acquire));
  }
  const char *errorMessage() const noexcept { return message.c_str(); }

private:
  std::atomic<int> status{SLINRT_OK};
  std::mutex errorMutex;
  std::string message;
};

namespace slinrt {

/// The context an entry point works on: `ctx`, or the default one for NULL.
slinrt_context &resolveContext(slinrt_context *ctx);

/// Runs `fn(context)` for the entry point `name`, unless the context already
/// holds an error (or `evenAfterError`). Every exception is caught here and
/// recorded: nothing escapes through the C ABI.
template <typename Fn>
void guardedCall(slinrt_context *ctx, const char *name, Fn &&fn,
                 bool evenAfterError = false) noexcept {
  slinrt_context *context = nullptr;
  try {
    context = &resolveContext(ctx);
  } catch (...) {
    return; // no context to record into: the default one could not be made
  }
  if (context->failed() && !evenAfterError)
    return;
  try {
    fn(*context);
  } catch (const Error &e) {
    context->fail(e.status, name, e.message.c_str());
  } catch (const std::bad_alloc &) {
    context->fail(SLINRT_ERROR_OUT_OF_MEMORY, name, "out of host memory");
  } catch (const std::exception &e) {
    context->fail(SLINRT_ERROR_UNSUPPORTED, name, e.what());
  } catch (...) {
    context->fail(SLINRT_ERROR_UNSUPPORTED, name, "unknown exception");
  }
}

/// The element address of a rank-2 descriptor (`aligned + offset`). Throws
/// Error(SLINRT_ERROR_INVALID_ARGUMENT) naming `name` when the view's byte
/// range overflows int64 (checkedByteOffset).
View2D viewOf(const slinrt_memref2d &ref, slinrt_dtype dtype,
              const char *name);
/// A rank-1 descriptor as a one-row view (checked the same way).
View2D viewOf(const slinrt_memref1d &ref, slinrt_dtype dtype,
              const char *name);

/// Allocates `bytes` through the context's allocator (NULL for 0 bytes).
/// Throws Error(SLINRT_ERROR_OUT_OF_MEMORY) on failure.
void *allocateBuffer(slinrt_context &ctx, int64_t bytes);
/// Frees a buffer from `allocateBuffer` (NULL is a no-op).
void freeBuffer(slinrt_context &ctx, void *ptr);

//===----------------------------------------------------------------------===//
// Backends
//===----------------------------------------------------------------------===//

struct GemmProblem;       // GemmProblem.h
struct ScaledGemmProblem; // Quantize.h
struct PartsProblem;      // Quantize.h
struct QuantizeProblem;   // Quantize.h

/// What every backend implements; the entry points validate the operands
/// (makeGemmProblem, viewOf) and dispatch on the context's Target.
///  * gemm: row-major D = op(A) op(B) (+ epilogue), on the context's stream;
///  * copy: dst = convert(src), elementwise (FP8 only to the same type);
///  * scaledGemm, amaxParts, castParts, quantize, quantizeBlockParts: the
///    FP8 GEMM and the
///    quantization functions of Runtime.h, on validated problems;
///  * defaultAlloc / defaultFree: the default allocator callbacks (CPU:
///    256-byte aligned host memory; CUDA: cudaMallocAsync on the stream).
#define SLINRT_BACKEND_FUNCTIONS                                               \
  void gemm(slinrt_context &ctx, const GemmProblem &p);                        \
  void scaledGemm(slinrt_context &ctx, const ScaledGemmProblem &p);            \
  void amaxParts(slinrt_context &ctx, const PartsProblem &p);                  \
  void castParts(slinrt_context &ctx, const PartsProblem &p);                  \
  void quantize(slinrt_context &ctx, const QuantizeProblem &p);                \
  void quantizeBlockParts(slinrt_context &ctx, const PartsProblem &p);         \
  void copy(slinrt_context &ctx, slinrt_dtype srcType, slinrt_dtype dstType,   \
            const View2D &src, const View2D &dst);                             \
  void *defaultAlloc(void *user, size_t bytes, int device, void *stream);      \
  void defaultFree(void *user, void *ptr, int device, void *stream);

/// The CPU backend (BLAS, or the host's GEMM hook).
namespace cpu {
SLINRT_BACKEND_FUNCTIONS
} // namespace cpu

#if SPLITLINEAR_HAVE_CUDA
/// The CUDA backend (cuBLASLt).
namespace cuda {
SLINRT_BACKEND_FUNCTIONS
/// Makes `ctx` a CUDA context on `device`/`stream`: handle, workspace (none
/// when `borrowed`: see slinrt_context_create_cuda_borrowed). Throws Error on
/// failure.
void initContext(slinrt_context &ctx, int device, void *stream, bool borrowed);
/// Lends a workspace to a borrowing context (throws for an owning one).
void setWorkspace(slinrt_context &ctx, void *workspace, size_t bytes);
/// Releases the per-context CUDA state (workspaces).
void destroyState(slinrt_context &ctx) noexcept;
/// Switches the context's stream, allocating its workspace if needed.
void setStream(slinrt_context &ctx, void *stream);
} // namespace cuda
#endif

#undef SLINRT_BACKEND_FUNCTIONS

} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_RUNTIMEIMPL_H

//===- KernelCache.h - compiled kernels of the torch op ---------*- C++ -*-===//
//
// A bounded cache of JIT-compiled kernels keyed by signature (kind, dtype,
// part count, bias presence, target). Compiling
// happens on the first call of a key (or ahead of time, through
// `splitlinear::precompile`); every later call is a hash lookup.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_TORCH_KERNELCACHE_H
#define SPLITLINEAR_LIB_TORCH_KERNELCACHE_H

#include "splitlinear-c/SplitLinear.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace splitlinear {

/// The signature a kernel is compiled for. Dims are dynamic in the kernel,
/// and every weight and bias part has the input's dtype (the op checks it;
/// autocast casts first), except in SCALED_FPROP kernels, whose weight parts
/// are FP8. Built by fpropKey, dgradKey and wgradKey
/// (KernelPlan.h).
struct KernelKey {
  SlinKernelKind kind;
  /// The slinrt_dtype of the input, output, parts and gradients.
  int32_t dtype;
  /// FPROP, DGRAD: the number of weight parts (>= 1); WGRAD: 0.
  int64_t numWeightParts;
  /// FPROP: the kernel reads bias parts; WGRAD: it writes the bias gradient.
  bool hasBias;
  SlinTarget target;
  /// SCALED_FPROP only (`dtype` is then the output's, see SlinKernelSpec):
  /// the FP8 slinrt_dtype of the input and of every weight part, the
  /// slinrt_scaling and whether fast accumulation is allowed. -1 / 0
  /// otherwise.
  int32_t inputFp8Dtype = -1;
  int32_t weightFp8Dtype = -1;
  int32_t scaling = 0;
  bool fastAccum = false;
  bool operator==(const KernelKey &other) const;
};

/// A compiled kernel: owns the JIT engine, exposes the packed entry point.
class Kernel {
public:
  Kernel(SlinEngine engine, void (*entry)(void **))
      : engine(engine), entry(entry) {}
  ~Kernel() { slinEngineDestroy(engine); }
  Kernel(const Kernel &) = delete;
  Kernel &operator=(const Kernel &) = delete;
  /// Calls the kernel; `args[0]` points to the context, then one pointer to
  /// each memref descriptor pointer, then (FPROP, DGRAD) one to the int32_t
  /// the kernel writes its SlinKernelPath to.
  void operator()(void **args) const { entry(args); }

private:
  SlinEngine engine;
  void (*entry)(void **);
};

/// Returns the kernel for `key`, compiling it on first use. Throws
/// c10::Error with the compiler's diagnostics (IR and repro command
/// included) when compilation fails. Thread-safe. At most
/// `kernelCacheCapacity()` kernels (Settings.h) stay cached (least recently
/// used ones are dropped; a kernel in use stays alive through its
/// shared_ptr).
std::shared_ptr<const Kernel> getKernel(const KernelKey &key,
                                        const std::string &dumpDir = {});

/// The number of kernels in the cache. Thread-safe.
size_t cacheSize();

} // namespace splitlinear

#endif // SPLITLINEAR_LIB_TORCH_KERNELCACHE_H

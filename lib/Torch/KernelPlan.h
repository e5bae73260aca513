//===- KernelPlan.h - which kernels a call of the op needs ------*- C++ -*-===//
//
// The decisions that pick kernels, made once and shared by the ops, their
// autograd formula, their autocast kernel and `precompile`: the kernel key
// of each op, the runs of trainable weight parts that wgrad computes, and
// the dtype a call runs in under autocast. `kernelsFor` derives from them
// the kernels a call (and its backward) will ask the cache for, so that
// `precompile` compiles exactly those.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_TORCH_KERNELPLAN_H
#define SPLITLINEAR_LIB_TORCH_KERNELPLAN_H

#include "KernelCache.h"

#include <ATen/ATen.h>

#include <optional>
#include <vector>

namespace splitlinear {

/// The most weight parts one call (one kernel) takes: a kernel's compile time
/// grows faster than its parts (on a 2-core x86, 0.9 s for 256 parts and
/// 6.8 s for 1000), and a million parts exhausted 24 GiB before any error
/// (docs/Design.md, Measured decisions: at most 1024 weight parts a call).
constexpr int64_t kMaxWeightParts = 1024;
/// Raises c10::Error naming `op` and `what` (the argument) when `numParts`
/// exceeds kMaxWeightParts.
void checkPartCount(int64_t numParts, const char *op, const char *what);

/// The kernel of `linear` for inputs of `dtype` on `device` with
/// `numParts` weight parts (and as many bias parts with `hasBias`).
KernelKey fpropKey(at::ScalarType dtype, at::Device device, int64_t numParts,
                   bool hasBias);
/// The kernel of `linear_dgrad` for gradients of `dtype` on `device`.
KernelKey dgradKey(at::ScalarType dtype, at::Device device, int64_t numParts);
/// The kernel of `linear_wgrad`; `biasGradient`: it also writes db.
KernelKey wgradKey(at::ScalarType dtype, at::Device device, bool biasGradient);

/// The kernel of `scaled_linear`: output `outDtype`, FP8 input and weight
/// types, `numParts` FP8 weight parts (and bias parts with `hasBias`),
/// `scaling` (a slinrt_scaling), fast accumulation allowed or not.
KernelKey scaledKey(at::ScalarType outDtype, at::ScalarType inputDtype,
                    at::ScalarType weightDtype, at::Device device,
                    int64_t numParts, bool hasBias, int32_t scaling,
                    bool fastAccum);

/// Which tensor inputs of one `linear` call need a gradient (requires_grad
/// under grad mode).
struct GradNeeds {
  bool input = false;
  /// One entry per weight part.
  std::vector<bool> weights;
  /// One entry per bias part; empty for a call without bias.
  std::vector<bool> biases;

  bool anyWeight() const;
  /// Whether backward runs at all.
  bool any() const;
};

/// One wgrad GEMM: weight parts [begin, end), consecutive and all trainable,
/// into one gradient buffer whose row blocks are their gradients; with
/// `biasGradient` it also writes their bias gradient (some of them needs
/// one).
struct WgradRun {
  int64_t begin, end;
  bool biasGradient;
};

/// The wgrad GEMMs of a backward: one per maximal run of consecutive
/// trainable weight parts. Frozen parts get none; the bias gradient of a
/// frozen part is a column sum of dy (no kernel).
std::vector<WgradRun> wgradRuns(const GradNeeds &needs);

/// The dtype `linear` runs in under autocast to `autocastDtype` (the policy
/// of `F.linear`, ATen's `lower_precision_fp`, for an input on the autocast
/// device): `autocastDtype` for a floating-point input other than float64,
/// else the input's own dtype (at::autocast::is_eligible).
at::ScalarType autocastComputeDtype(at::ScalarType inputDtype,
                                    at::ScalarType autocastDtype);

/// What a compiled region knows about a call of `linear` before it runs.
struct LinearSignature {
  at::ScalarType inputDtype;
  at::Device device;
  /// The autocast dtype of the input's device type, if autocast is on.
  std::optional<at::ScalarType> autocastDtype;
  /// Whether grad mode is on where the call runs.
  bool gradMode;
  /// Which inputs require grad (ignored without grad mode); its sizes give
  /// the part count and whether there is a bias.
  GradNeeds requiresGrad;
};

/// The kernels a call of `signature` and its backward ask the cache for:
/// fprop; with grad mode, dgrad when the input needs a gradient and one
/// wgrad per distinct `WgradRun::biasGradient` of `wgradRuns`.
std::vector<KernelKey> kernelsFor(const LinearSignature &signature);

} // namespace splitlinear

#endif // SPLITLINEAR_LIB_TORCH_KERNELPLAN_H

//===- KernelPlan.cpp - which kernels a call of the op needs ----*- C++ -*-===//
//
// Implements the kernel keys, the wgrad runs, the autocast dtype and
// `kernelsFor` (KernelPlan.h).
//
//===----------------------------------------------------------------------===//

#include "KernelPlan.h"
#include "KernelCall.h"

#include <algorithm>

using namespace splitlinear;

namespace {
SlinTarget targetOf(at::Device device) {
  return device.is_cuda() ? SLIN_TARGET_CUDA : SLIN_TARGET_CPU;
}
} // namespace

KernelKey splitlinear::fpropKey(at::ScalarType dtype, at::Device device,
                                int64_t numParts, bool hasBias) {
  return {SLIN_KERNEL_FPROP, dtypeCode(dtype), numParts, hasBias,
          targetOf(device)};
}

void splitlinear::checkPartCount(int64_t numParts, const char *op,
                                 const char *what) {
  TORCH_CHECK(numParts <= kMaxWeightParts, op, ": ", what, " has ", numParts,
              " weight parts; one call takes at most ", kMaxWeightParts,
              " (a kernel's compile time grows faster than its parts): ",
              "concatenate parts, or split the call");
}

KernelKey splitlinear::dgradKey(at::ScalarType dtype, at::Device device,
                                int64_t numParts) {
  return {SLIN_KERNEL_DGRAD, dtypeCode(dtype), numParts, false,
          targetOf(device)};
}

KernelKey splitlinear::wgradKey(at::ScalarType dtype, at::Device device,
                                bool biasGradient) {
  return {SLIN_KERNEL_WGRAD, dtypeCode(dtype), 0, biasGradient,
          targetOf(device)};
}

KernelKey splitlinear::scaledKey(at::ScalarType outDtype,
                                 at::ScalarType inputDtype,
                                 at::ScalarType weightDtype, at::Device device,
                                 int64_t numParts, bool hasBias,
                                 int32_t scaling, bool fastAccum) {
  KernelKey key{SLIN_KERNEL_SCALED_FPROP, dtypeCode(outDtype), numParts,
                hasBias, targetOf(device)};
  key.inputFp8Dtype = fp8DtypeCode(inputDtype);
  key.weightFp8Dtype = fp8DtypeCode(weightDtype);
  key.scaling = scaling;
  key.fastAccum = fastAccum;
  return key;
}

bool GradNeeds::anyWeight() const {
  return std::find(weights.begin(), weights.end(), true) != weights.end();
}

bool GradNeeds::any() const {
  return input || anyWeight() ||
         std::find(biases.begin(), biases.end(), true) != biases.end();
}

std::vector<WgradRun> splitlinear::wgradRuns(const GradNeeds &needs) {
  std::vector<WgradRun> runs;
  int64_t n = static_cast<int64_t>(needs.weights.size());
  bool hasBias = !needs.biases.empty();
  for (int64_t i = 0; i < n;) {
    if (!needs.weights[i]) {
      ++i;
      continue;
    }
    WgradRun run{i, i, false};
    for (; run.end < n && needs.weights[run.end]; ++run.end)
      run.biasGradient |= hasBias && needs.biases[run.end];
    runs.push_back(run);
    i = run.end;
  }
  return runs;
}

at::ScalarType splitlinear::autocastComputeDtype(at::ScalarType inputDtype,
                                                 at::ScalarType autocastDtype) {
  bool eligible = at::isFloatingType(inputDtype) && inputDtype != at::kDouble;
  return eligible ? autocastDtype : inputDtype;
}

std::vector<KernelKey>
splitlinear::kernelsFor(const LinearSignature &signature) {
  const GradNeeds &needs = signature.requiresGrad;
  int64_t numParts = static_cast<int64_t>(needs.weights.size());
  bool hasBias = !needs.biases.empty();
  at::ScalarType dtype =
      signature.autocastDtype
          ? autocastComputeDtype(signature.inputDtype, *signature.autocastDtype)
          : signature.inputDtype;
  std::vector<KernelKey> keys{
      fpropKey(dtype, signature.device, numParts, hasBias)};
  if (!signature.gradMode)
    return keys;
  // Backward runs in the output's dtype, the dtype of the forward.
  if (needs.input)
    keys.push_back(dgradKey(dtype, signature.device, numParts));
  for (const WgradRun &run : wgradRuns(needs)) {
    KernelKey key = wgradKey(dtype, signature.device, run.biasGradient);
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      keys.push_back(key);
  }
  return keys;
}

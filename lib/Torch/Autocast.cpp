//===- Autocast.cpp - Autocast kernels of torch.ops.splitlinear.* -*- C++ -*-===//
//
// `splitlinear::linear` under `torch.autocast`: the policy of `F.linear`
// (ATen's `lower_precision_fp` cast policy, aten/src/ATen/autocast_mode.cpp):
// the input, every weight part and every bias part that is a floating-point
// tensor of the autocast device, other than float64, is cast to the autocast
// dtype (`torch.get_autocast_dtype(device)`, bfloat16 or float16), then the op
// runs with autocast excluded. `autocastComputeDtype` (KernelPlan.h) states
// the same rule for the input, for `precompile`. The casts go through the dispatcher, so
// autograd records them and gradients reach float32 Parameters in float32;
// `cached_cast` reuses the cast of a leaf Parameter within one autocast
// region, as `F.linear` does. The backward ops need no kernel here: backward
// does not run under autocast, and the Autocast keys fall through.
//
// Weight (and bias) parts that all need the cast are cast *into one buffer*
// (`splitlinear::cast_concat`, LinearOps.h: one `cat` with a dtype-converting
// output, reading each part once), and the op gets row blocks of it: adjacent
// parts, so it takes the zero-copy view path. Casting each part on its own
// would put the parts in separate buffers and force a copy or one GEMM per
// part. Eager `F.linear(x, cat(W))` under autocast moves the same bytes (a
// cat, then a cast); `cast_concat`'s backward (Autograd.cpp) hands each part
// its row block of the gradient, cast back to the part's dtype.
//
//===----------------------------------------------------------------------===//

#include "OpHandles.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/library.h>

#include <vector>

using namespace splitlinear;

namespace {

/// `parts` cast to `dtype` under autocast. When every part is eligible for
/// the cast (a floating-point, non-float64 tensor of the autocast device, not
/// already `dtype`) and they stack along dim 0 (same rank >= 1, same trailing
/// sizes, same dtype), they are cast into one buffer and returned as its row
/// blocks; otherwise each part goes through `cached_cast` (as `F.linear`).
template <c10::DeviceType DeviceType>
std::vector<at::Tensor> castParts(at::TensorList parts, at::ScalarType dtype) {
  bool stack = parts.size() > 1;
  for (const at::Tensor &p : parts) {
    stack = stack && at::autocast::is_eligible(p, DeviceType) &&
            p.scalar_type() != dtype && p.dim() >= 1 &&
            p.dim() == parts[0].dim() &&
            p.scalar_type() == parts[0].scalar_type() &&
            p.device() == parts[0].device() &&
            p.sizes().slice(1) == parts[0].sizes().slice(1);
  }
  if (!stack)
    return at::autocast::cached_cast(dtype, parts, DeviceType);
  at::Tensor buffer = ops().castConcat.call(parts, dtype); // through Autograd
  std::vector<at::Tensor> out;
  int64_t offset = 0;
  for (const at::Tensor &p : parts) {
    out.push_back(buffer.narrow(0, offset, p.size(0)));
    offset += p.size(0);
  }
  return out;
}

/// `linear` with the input, weights and biases cast to the autocast dtype of
/// `DeviceType` (see the file comment).
template <c10::DeviceType DeviceType>
at::Tensor linearAutocast(const at::Tensor &input, at::TensorList weight,
                          std::optional<at::TensorList> bias) {
  c10::impl::ExcludeDispatchKeyGuard noAutocast(
      at::autocast::get_autocast_dispatch_key_from_device_type(DeviceType));
  at::ScalarType dtype = at::autocast::get_autocast_dtype(DeviceType);
  at::Tensor x = at::autocast::cached_cast(dtype, input, DeviceType);
  std::vector<at::Tensor> w = castParts<DeviceType>(weight, dtype);
  if (!bias)
    return ops().linear.call(x, w, std::nullopt);
  std::vector<at::Tensor> b = castParts<DeviceType>(*bias, dtype);
  return ops().linear.call(x, w, at::TensorList(b));
}

/// `fp8_linear` under autocast: the input and the bias parts are cast to
/// the autocast dtype (the output's dtype), as for `linear`. The weight
/// parts are not: they are quantized to FP8 from their own dtype (float32
/// master weights read once, no bfloat16 copy), and their gradients come
/// back in it.
template <c10::DeviceType DeviceType>
at::Tensor fp8LinearAutocast(const at::Tensor &input, at::TensorList weight,
                             std::optional<at::TensorList> bias,
                             c10::string_view recipe, bool cacheWeights) {
  c10::impl::ExcludeDispatchKeyGuard noAutocast(
      at::autocast::get_autocast_dispatch_key_from_device_type(DeviceType));
  at::ScalarType dtype = at::autocast::get_autocast_dtype(DeviceType);
  at::Tensor x = at::autocast::cached_cast(dtype, input, DeviceType);
  if (!bias)
    return ops().fp8Linear.call(x, weight, std::nullopt, recipe,
                                cacheWeights);
  std::vector<at::Tensor> b = at::autocast::cached_cast(dtype, *bias, DeviceType);
  return ops().fp8Linear.call(x, weight, at::TensorList(b), recipe,
                              cacheWeights);
}

} // namespace

TORCH_LIBRARY_IMPL(splitlinear, AutocastCPU, m) {
  m.impl("linear", &linearAutocast<c10::DeviceType::CPU>);
  m.impl("fp8_linear", &fp8LinearAutocast<c10::DeviceType::CPU>);
}

TORCH_LIBRARY_IMPL(splitlinear, AutocastCUDA, m) {
  m.impl("linear", &linearAutocast<c10::DeviceType::CUDA>);
  m.impl("fp8_linear", &fp8LinearAutocast<c10::DeviceType::CUDA>);
}

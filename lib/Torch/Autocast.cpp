//===- Autocast.cpp - Autocast kernels of torch.ops.splitlinear.* -*- C++ -*-===//
//
// `splitlinear::linear` under `torch.autocast`: the policy of `F.linear`
// (ATen's `lower_precision_fp` cast policy, aten/src/ATen/autocast_mode.cpp):
// the input, every weight part and every bias part that is a floating-point
// tensor of the autocast device, other than float64, is cast to the autocast
// dtype (`torch.get_autocast_dtype(device)`, bfloat16 or float16), then the op
// runs with autocast excluded. The casts go through the dispatcher, so
// autograd records them and gradients reach float32 Parameters in float32;
// `cached_cast` reuses the cast of a leaf Parameter within one autocast
// region, as `F.linear` does. The backward ops need no kernel here: backward
// does not run under autocast, and the Autocast keys fall through.
//
// Cast parts live in separate buffers, so the op combines them with one GEMM
// per part or a copy (its usual choice for non-adjacent parts); eager
// `F.linear(x, cat(W).to(bf16))` copies the weights too.
//
//===----------------------------------------------------------------------===//

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <vector>

namespace {

using LinearSig = at::Tensor(const at::Tensor &, at::TensorList,
                             std::optional<at::TensorList>);

/// `linear` with the input, weights and biases cast to the autocast dtype of
/// `DeviceType` (see the file comment).
template <c10::DeviceType DeviceType>
at::Tensor linearAutocast(const at::Tensor &input, at::TensorList weight,
                          std::optional<at::TensorList> bias) {
  c10::impl::ExcludeDispatchKeyGuard noAutocast(
      at::autocast::get_autocast_dispatch_key_from_device_type(DeviceType));
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("splitlinear::linear", "")
                       .typed<LinearSig>();
  at::ScalarType dtype = at::autocast::get_autocast_dtype(DeviceType);
  at::Tensor x = at::autocast::cached_cast(dtype, input, DeviceType);
  std::vector<at::Tensor> w = at::autocast::cached_cast(dtype, weight, DeviceType);
  if (!bias)
    return op.call(x, w, std::nullopt);
  std::vector<at::Tensor> b = at::autocast::cached_cast(dtype, *bias, DeviceType);
  return op.call(x, w, at::TensorList(b));
}

} // namespace

TORCH_LIBRARY_IMPL(splitlinear, AutocastCPU, m) {
  m.impl("linear", &linearAutocast<c10::DeviceType::CPU>);
}

TORCH_LIBRARY_IMPL(splitlinear, AutocastCUDA, m) {
  m.impl("linear", &linearAutocast<c10::DeviceType::CUDA>);
}

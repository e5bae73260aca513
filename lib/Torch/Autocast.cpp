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
// Weight (and bias) parts that all need the cast are cast *into one buffer*
// (`splitlinear::cast_concat`, defined here: one `cat` with a dtype-converting
// output, reading each part once), and the op gets row blocks of it: adjacent parts, so it takes the
// zero-copy view path. Casting each part on its own would put the parts in
// separate buffers and force a copy or one GEMM per part. Eager
// `F.linear(x, cat(W))` under autocast moves the same bytes (a cat, then a
// cast); `cast_concat`'s backward hands each part its row block of the
// gradient, cast back to the part's dtype.
//
//===----------------------------------------------------------------------===//

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <vector>

namespace {

//===----------------------------------------------------------------------===//
// cast_concat
//===----------------------------------------------------------------------===//

/// `cast_concat(Tensor[] parts, ScalarType dtype) -> Tensor`: `cat(parts, 0)`
/// converted to `dtype` in one pass ([ΣN_i, ...] from parts [N_i, ...] of
/// one dtype, rank and device). An op of its own, opaque to Inductor, so that
/// its output is one realized buffer and row blocks of it stay adjacent
/// (Inductor would otherwise compute each slice of a fused cat + convert as
/// a buffer of its own).
at::Tensor castConcat(at::TensorList parts, at::ScalarType dtype) {
  constexpr const char *op = "splitlinear.cast_concat";
  TORCH_CHECK(!parts.empty(), op, ": parts must hold at least one tensor");
  const at::Tensor &first = parts[0];
  for (size_t i = 0; i < parts.size(); ++i) {
    const at::Tensor &p = parts[i];
    TORCH_CHECK(p.defined() && p.dim() >= 1, op, ": parts[", i,
                "] must be a tensor of at least 1 dim");
    TORCH_CHECK(p.dim() == first.dim() && p.sizes().slice(1) == first.sizes().slice(1),
                op, ": parts[", i, "] has shape ", p.sizes(),
                " but parts[0] has ", first.sizes(),
                " (all but dim 0 must agree)");
    TORCH_CHECK(p.device() == first.device(), op, ": parts[", i, "] is on ",
                p.device(), " but parts[0] is on ", first.device());
    TORCH_CHECK(p.scalar_type() == first.scalar_type(), op, ": parts[", i,
                "] has dtype ", p.scalar_type(), " but parts[0] has ",
                first.scalar_type());
  }
  int64_t rows = 0;
  for (const at::Tensor &p : parts)
    rows += p.size(0);
  std::vector<int64_t> shape(first.sizes().begin(), first.sizes().end());
  shape[0] = rows;
  at::Tensor out = at::empty(shape, first.options().dtype(dtype));
  return at::cat_out(out, parts, 0);
}

const c10::TypedOperatorHandle<at::Tensor(at::TensorList, at::ScalarType)> &
castConcatOp() {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("splitlinear::cast_concat", "")
                       .typed<at::Tensor(at::TensorList, at::ScalarType)>();
  return op;
}

/// The autograd formula of `cast_concat`: each part gets its row block of
/// the gradient, cast back to the part's dtype (differentiable ATen ops, so
/// higher-order gradients work). Saves no tensor.
class CastConcat : public torch::autograd::Function<CastConcat> {
public:
  static at::Tensor forward(torch::autograd::AutogradContext *ctx,
                            at::TensorList parts, at::ScalarType dtype) {
    std::vector<int64_t> rows;
    for (const at::Tensor &p : parts)
      rows.push_back(p.dim() >= 1 ? p.size(0) : 0); // the op checks
    ctx->saved_data["rows"] = rows;
    ctx->saved_data["dtype"] = parts.empty() ? dtype : parts[0].scalar_type();
    at::AutoDispatchBelowADInplaceOrView guard;
    return castConcatOp().call(parts, dtype);
  }

  static torch::autograd::variable_list
  backward(torch::autograd::AutogradContext *ctx,
           torch::autograd::variable_list gradOutputs) {
    std::vector<int64_t> rows = ctx->saved_data["rows"].toIntVector();
    at::ScalarType dtype = ctx->saved_data["dtype"].toScalarType();
    torch::autograd::variable_list grads;
    int64_t offset = 0;
    for (int64_t r : rows) {
      grads.push_back(gradOutputs[0].narrow(0, offset, r).to(dtype));
      offset += r;
    }
    grads.emplace_back(); // dtype
    return grads;
  }
};

at::Tensor castConcatAutograd(at::TensorList parts, at::ScalarType dtype) {
  return CastConcat::apply(parts, dtype);
}

//===----------------------------------------------------------------------===//
// Autocast
//===----------------------------------------------------------------------===//

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
  at::Tensor buffer = castConcatOp().call(parts, dtype); // through Autograd
  std::vector<at::Tensor> out;
  int64_t offset = 0;
  for (const at::Tensor &p : parts) {
    out.push_back(buffer.narrow(0, offset, p.size(0)));
    offset += p.size(0);
  }
  return out;
}

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
  std::vector<at::Tensor> w = castParts<DeviceType>(weight, dtype);
  if (!bias)
    return op.call(x, w, std::nullopt);
  std::vector<at::Tensor> b = castParts<DeviceType>(*bias, dtype);
  return op.call(x, w, at::TensorList(b));
}

} // namespace

TORCH_LIBRARY_FRAGMENT(splitlinear, m) {
  m.def("cast_concat(Tensor[] parts, ScalarType dtype) -> Tensor");
}

TORCH_LIBRARY_IMPL(splitlinear, CPU, m) { m.impl("cast_concat", &castConcat); }

#ifdef SPLITLINEAR_TORCH_CUDA
TORCH_LIBRARY_IMPL(splitlinear, CUDA, m) { m.impl("cast_concat", &castConcat); }
#endif

TORCH_LIBRARY_IMPL(splitlinear, Autograd, m) {
  m.impl("cast_concat", &castConcatAutograd);
}

TORCH_LIBRARY_IMPL(splitlinear, AutocastCPU, m) {
  m.impl("linear", &linearAutocast<c10::DeviceType::CPU>);
}

TORCH_LIBRARY_IMPL(splitlinear, AutocastCUDA, m) {
  m.impl("linear", &linearAutocast<c10::DeviceType::CUDA>);
}

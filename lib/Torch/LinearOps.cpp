//===- LinearOps.cpp - the ops of torch.ops.splitlinear ---------*- C++ -*-===//
//
// The LibTorch ops. Each one validates its arguments (errors name the
// offending argument), flattens leading dims, allocates outputs with
// PyTorch's allocator, runs its kernel (KernelCall.h) on the runtime context
// of its thread (RuntimeContext.h) and checks the context afterwards.
// Whether weight parts are adjacent is decided inside the kernel, on every
// call (the compiled run-time check), and so is, for parts that are not, the
// choice between a copy and one GEMM per part (the runtime's). Registered in
// Library.cpp.
//
//===----------------------------------------------------------------------===//

#include "LinearOps.h"
#include "Counters.h"
#include "KernelCall.h"
#include "KernelPlan.h"
#include "RuntimeContext.h"
#include "Settings.h"

#include <ATen/ATen.h>
#include <ATen/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <optional>
#include <ostream>
#include <vector>

using namespace splitlinear;

namespace {

/// An argument's name in a message, `weight[2]` or `input` (index < 0),
/// printed only when a check fails: the hot path builds no string.
struct ArgName {
  const char *base;
  int64_t index = -1;
};
std::ostream &operator<<(std::ostream &os, const ArgName &name) {
  os << name.base;
  if (name.index >= 0)
    os << '[' << name.index << ']';
  return os;
}

void checkFloat(const at::Tensor &t, const char *op, const ArgName &name) {
  TORCH_CHECK(dtypeCode(t.scalar_type()) >= 0, op, ": ", name, " has dtype ",
              t.scalar_type(),
              "; supported are float32, float16, bfloat16 and float64");
}

void checkLike(const at::Tensor &t, const at::Tensor &ref, const char *op,
               const ArgName &name, const char *refName) {
  TORCH_CHECK(t.device() == ref.device(), op, ": ", name, " is on ",
              t.device(), " but ", refName, " is on ", ref.device());
  TORCH_CHECK(t.scalar_type() == ref.scalar_type(), op, ": ", name,
              " has dtype ", t.scalar_type(), " but ", refName, " has ",
              ref.scalar_type());
}

/// Validates weight parts against K (their columns) and returns Σ N_i.
int64_t checkWeights(at::TensorList weight, const at::Tensor &ref, int64_t k,
                     const char *op, const char *refName) {
  TORCH_CHECK(!weight.empty(), op, ": weight must hold at least one tensor");
  checkPartCount(static_cast<int64_t>(weight.size()), op, "weight");
  int64_t n = 0;
  for (size_t i = 0; i < weight.size(); ++i) {
    ArgName name{"weight", static_cast<int64_t>(i)};
    TORCH_CHECK(weight[i].defined(), op, ": ", name, " is undefined");
    TORCH_CHECK(weight[i].dim() == 2, op, ": ", name, " must be 2-D [N_i, K], got ",
                weight[i].dim(), "-D");
    checkLike(weight[i], ref, op, name, refName);
    TORCH_CHECK(weight[i].size(1) == k, op, ": ", name, " has ",
                weight[i].size(1), " columns but ", refName, " has K = ", k);
    n += weight[i].size(0);
  }
  return n;
}

at::DimVector withLast(at::IntArrayRef shape, int64_t last) {
  at::DimVector out(shape.begin(), shape.end());
  out.back() = last;
  return out;
}


/// Makes `t`'s device current for the duration of an op (no-op on CPU).
#define SPLITLINEAR_DEVICE_GUARD(t)                                            \
  c10::OptionalDeviceGuard deviceGuard(at::device_of(t))

//===----------------------------------------------------------------------===//
// linear (fprop)
//===----------------------------------------------------------------------===//

} // namespace

at::Tensor splitlinear::linear(const at::Tensor &input, at::TensorList weight,
                  std::optional<at::TensorList> bias) {
  constexpr const char *op = "splitlinear.linear";
  TORCH_CHECK(input.defined() && input.dim() >= 1, op,
              ": input must be a tensor of at least 1 dim [..., K]");
  checkFloat(input, op, {"input"});
  int64_t k = input.size(-1);
  int64_t n = checkWeights(weight, input, k, op, "input");
  bool hasBias = bias.has_value();
  if (hasBias) {
    TORCH_CHECK(bias->size() == weight.size(), op, ": bias has ", bias->size(),
                bias->size() == 1 ? " tensor" : " tensors", " but weight has ",
                weight.size());
    for (size_t i = 0; i < bias->size(); ++i) {
      ArgName name{"bias", static_cast<int64_t>(i)};
      const at::Tensor &b = (*bias)[i];
      TORCH_CHECK(b.defined() && b.dim() == 1, op, ": ", name,
                  " must be 1-D [N_i]");
      checkLike(b, input, op, name, "input");
      TORCH_CHECK(b.size(0) == weight[i].size(0), op, ": ", name, " has ",
                  b.size(0), " elements but weight[", i, "] has ",
                  weight[i].size(0), " rows");
    }
  }
  SPLITLINEAR_DEVICE_GUARD(input);
  at::Tensor x = flatten2d(input);
  at::Tensor y = at::empty({x.size(0), n}, input.options());
  at::DimVector shape = withLast(input.sizes(), n);
  if (x.size(0) == 0 || n == 0)
    return y.view(shape);
  if (k == 0) {
    // An empty reduction: zeros plus the bias, as F.linear gives.
    if (hasBias)
      y.copy_(at::cat(*bias).unsqueeze(0).expand({x.size(0), n}));
    else
      y.zero_();
    return y.view(shape);
  }
  KernelKey key = fpropKey(input.scalar_type(), input.device(),
                           static_cast<int64_t>(weight.size()), hasBias);
  Call call;
  call.matrix(x);
  for (const at::Tensor &w : weight)
    call.matrix(gemmOperand(w));
  if (hasBias)
    for (const at::Tensor &b : *bias)
      call.vector(b);
  call.matrix(y);
  call.run(key, contextFor(input.device(), op, call.workspace), op,
           &counters().fprop);
  return y.view(shape);
}

//===----------------------------------------------------------------------===//
// linear_dgrad / linear_wgrad (backward)
//===----------------------------------------------------------------------===//

at::Tensor splitlinear::linearDgrad(const at::Tensor &gradOutput,
                                    at::TensorList weight) {
  constexpr const char *op = "splitlinear.linear_dgrad";
  TORCH_CHECK(gradOutput.defined() && gradOutput.dim() >= 1, op,
              ": grad_output must be a tensor of at least 1 dim [..., N]");
  checkFloat(gradOutput, op, {"grad_output"});
  TORCH_CHECK(!weight.empty() && weight[0].dim() == 2, op,
              ": weight must hold 2-D tensors [N_i, K]");
  int64_t k = weight[0].size(1);
  int64_t n = checkWeights(weight, gradOutput, k, op, "weight[0]");
  TORCH_CHECK(gradOutput.size(-1) == n, op, ": grad_output has ",
              gradOutput.size(-1), " columns but the weight parts have ", n,
              " rows in all");
  SPLITLINEAR_DEVICE_GUARD(gradOutput);
  at::Tensor dy = flatten2d(gradOutput);
  at::DimVector shape = withLast(gradOutput.sizes(), k);
  if (dy.size(0) == 0 || k == 0)
    return at::empty(shape, gradOutput.options());
  if (n == 0)
    return at::zeros(shape, gradOutput.options());
  at::Tensor dx = at::empty({dy.size(0), k}, gradOutput.options());
  KernelKey key = dgradKey(gradOutput.scalar_type(), gradOutput.device(),
                           static_cast<int64_t>(weight.size()));
  Call call;
  call.matrix(dy);
  for (const at::Tensor &w : weight)
    call.matrix(gemmOperand(w));
  call.matrix(dx);
  call.run(key, contextFor(gradOutput.device(), op, call.workspace), op,
           &counters().dgrad);
  return dx.view(shape);
}

std::tuple<at::Tensor, at::Tensor>
splitlinear::linearWgrad(const at::Tensor &gradOutput, const at::Tensor &input, bool bias) {
  constexpr const char *op = "splitlinear.linear_wgrad";
  TORCH_CHECK(gradOutput.defined() && gradOutput.dim() >= 1, op,
              ": grad_output must be a tensor of at least 1 dim [..., N]");
  TORCH_CHECK(input.defined() && input.dim() >= 1, op,
              ": input must be a tensor of at least 1 dim [..., K]");
  checkFloat(gradOutput, op, {"grad_output"});
  checkLike(input, gradOutput, op, {"input"}, "grad_output");
  SPLITLINEAR_DEVICE_GUARD(gradOutput);
  at::Tensor dy = flatten2d(gradOutput);
  at::Tensor x = flatten2d(input);
  TORCH_CHECK(dy.size(0) == x.size(0), op, ": grad_output has ", dy.size(0),
              " rows (leading dims flattened) but input has ", x.size(0));
  int64_t n = dy.size(1), k = x.size(1);
  at::Tensor dw = at::empty({n, k}, gradOutput.options());
  at::Tensor db = at::empty({bias ? n : 0}, gradOutput.options());
  if (dy.size(0) == 0 || n == 0 || k == 0) {
    dw.zero_();
    db.zero_();
    if (bias && dy.size(0) > 0 && k == 0)
      db.copy_(dy.sum(0));
    return {dw, db};
  }
  KernelKey key = wgradKey(gradOutput.scalar_type(), gradOutput.device(), bias);
  Call call;
  call.matrix(dy);
  call.matrix(x);
  call.matrix(dw);
  if (bias)
    call.vector(db);
  call.run(key, contextFor(gradOutput.device(), op, call.workspace), op,
           /*paths=*/nullptr);
  return {dw, db};
}

//===----------------------------------------------------------------------===//
// cast_concat (autocast)
//===----------------------------------------------------------------------===//

namespace {
/// `parts` as one tensor of `shape` ([ΣN_i, ...]) when they are consecutive
/// contiguous row blocks of one storage, in order (as `pack_parameters`
/// leaves them): then one elementwise cast reads them all, instead of `cat`'s
/// copy per part (on the H200, `cat` into an output of another dtype took
/// ~100 µs of host time per call for 2-3 parts). std::nullopt otherwise.
std::optional<at::Tensor> asOneBlock(at::TensorList parts,
                                     at::IntArrayRef shape) {
  const at::Tensor &first = parts[0];
  if (!first.has_storage())
    return std::nullopt;
  int64_t offset = first.storage_offset();
  for (const at::Tensor &p : parts) {
    // A lazy conjugate or negative bit is a property of the view, not of
    // the storage: such parts go through `cat`, which resolves them.
    if (!p.has_storage() || !p.is_contiguous() || p.is_conj() || p.is_neg() ||
        !p.storage().is_alias_of(first.storage()) ||
        p.storage_offset() != offset)
      return std::nullopt;
    offset += p.numel();
  }
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * std::max<int64_t>(shape[d + 1], 1);
  return first.as_strided(shape, strides, first.storage_offset());
}
} // namespace

at::Tensor splitlinear::castConcat(at::TensorList parts,
                                   at::ScalarType dtype) {
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
  if (std::optional<at::Tensor> block = asOneBlock(parts, shape))
    return block->to(first.options().dtype(dtype), /*non_blocking=*/false,
                     /*copy=*/true, at::MemoryFormat::Contiguous);
  at::Tensor out = at::empty(shape, first.options().dtype(dtype));
  return at::cat_out(out, parts, 0);
}

//===----------------------------------------------------------------------===//
// Ahead-of-time compilation
//===----------------------------------------------------------------------===//

/// Compiles (and caches) the kernels a call of `linear` with this signature
/// and its backward will ask for (kernelsFor, KernelPlan.h), so that a
/// backend can pay the compile at graph-compile time rather than at the
/// first call. With `dumpDir`, each kernel is compiled even if cached,
/// writing its IR and the IR after every pass there (the backend passes its
/// compile's dump_dir).
void splitlinear::precompile(at::ScalarType dtype, at::Device device,
                             int64_t numParts, bool bias, bool gradMode,
                             std::optional<std::string> dumpDir,
                             std::optional<at::ScalarType> autocastDtype,
                             std::optional<c10::List<bool>> requiresGrad) {
  constexpr const char *op = "splitlinear.precompile";
  TORCH_CHECK(dtypeCode(dtype) >= 0, op, ": dtype ", dtype,
              " is not supported (float32, float16, bfloat16, float64)");
  TORCH_CHECK(!autocastDtype || dtypeCode(*autocastDtype) >= 0, op,
              ": autocast_dtype ", *autocastDtype,
              " is not supported (float32, float16, bfloat16, float64)");
  TORCH_CHECK(numParts >= 1, op, ": num_parts must be >= 1, got ", numParts);
  checkPartCount(numParts, op, "num_parts");
  TORCH_CHECK(device.is_cpu() || device.is_cuda(), op, ": device ", device,
              " is not supported");
  // requires_grad: one flag per tensor input of `linear`, flattened as
  // [input, weight..., bias...]; without it every input requires grad.
  size_t tensors = 1 + numParts * (bias ? 2 : 1);
  TORCH_CHECK(!requiresGrad || requiresGrad->size() == tensors, op,
              ": requires_grad has ", requiresGrad ? requiresGrad->size() : 0,
              " flags but the signature has ", tensors,
              " tensor inputs (input, weight..., bias...)");
  auto needs = [&](size_t i) { return !requiresGrad || requiresGrad->get(i); };
  GradNeeds grad;
  grad.input = needs(0);
  for (int64_t i = 0; i < numParts; ++i) {
    grad.weights.push_back(needs(1 + i));
    if (bias)
      grad.biases.push_back(needs(1 + numParts + i));
  }
  std::string dump = dumpDir.value_or("");
  for (const KernelKey &key :
       kernelsFor({dtype, device, autocastDtype, gradMode, grad}))
    getKernel(key, dump);
}

//===- Autograd.cpp - Autograd kernels of torch.ops.splitlinear.* -*- C++ -*-===//
//
// The Autograd dispatch kernels of the op library:
//
//  * `linear`: `LinearBackward`, a hand-written autograd node (a training
//    step pays no Python on its hot path; no node at all when nothing needs
//    a gradient). It saves only what its backward reads:
//    the input only when some weight part needs a gradient (wgrad), the
//    weight parts only when the input needs one (dgrad), as ATen's linear
//    does, so frozen weights (LoRA-style fine-tuning) keep no activations.
//  * `linear_dgrad` / `linear_wgrad`: the backward ops. When grad mode is on
//    and an argument requires grad — a backward with `create_graph=True`,
//    i.e. higher-order gradients — they compute the same values as
//    differentiable ATen compositions (dgrad = dy · cat(W), wgrad = dyᵀ · x,
//    db = Σ_rows dy), so the gradient of the gradient is exact. Otherwise
//    (every ordinary backward, and every backward traced by AOTAutograd, which
//    runs without grad mode) they redispatch to the fast kernels.
//  * `cast_concat`: each part gets its row block of the gradient, cast back
//    to the part's dtype.
//
//===----------------------------------------------------------------------===//

#include "KernelPlan.h"
#include "OpHandles.h"
#include "SavedCall.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/library.h>

#include <mutex>
#include <vector>

using namespace splitlinear;

namespace {

/// True when the call must be recorded for autograd: grad mode is on and one
/// of `tensors` requires grad.
bool needsGraph(std::initializer_list<at::TensorList> tensors) {
  if (!at::GradMode::is_enabled())
    return false;
  for (at::TensorList list : tensors)
    for (const at::Tensor &t : list)
      if (t.defined() && t.requires_grad())
        return true;
  return false;
}

/// `t` as [rows, t.size(-1)] (rows counted explicitly: reshape(-1, 0) is
/// ambiguous when the last dim is 0). Symbolic sizes stay symbolic: under
/// tracing with dynamic shapes, reading a concrete size would specialize
/// (guard on) the batch size and cause a recompile for every new one.
at::Tensor flatten2d(const at::Tensor &t) {
  c10::SymInt rows = 1;
  for (int64_t d = 0; d + 1 < t.dim(); ++d)
    rows = rows * t.sym_size(d);
  return t.reshape_symint({rows, t.sym_size(-1)});
}

//===----------------------------------------------------------------------===//
// linear_dgrad / linear_wgrad
//===----------------------------------------------------------------------===//

/// dx [..., K] = dy [..., N] · cat(W_i) [N, K].
at::Tensor dgradAutograd(const at::Tensor &gradOutput, at::TensorList weight) {
  if (needsGraph({gradOutput, weight}) && !weight.empty())
    return at::matmul(gradOutput, at::cat(weight));
  at::AutoDispatchBelowADInplaceOrView guard;
  return ops().dgrad.call(gradOutput, weight);
}

/// dW [N, K] = dyᵀ · x over the flattened rows; db [N] = Σ_rows dy (or [0]).
std::tuple<at::Tensor, at::Tensor>
wgradAutograd(const at::Tensor &gradOutput, const at::Tensor &input, bool bias) {
  if (needsGraph({gradOutput, input}) && gradOutput.dim() >= 1 &&
      input.dim() >= 1) {
    at::Tensor dy = flatten2d(gradOutput), x = flatten2d(input);
    at::Tensor dw = dy.t().mm(x);
    at::Tensor db = bias ? dy.sum(0) : at::empty({0}, gradOutput.options());
    return {dw, db};
  }
  at::AutoDispatchBelowADInplaceOrView guard;
  return ops().wgrad.call(gradOutput, input, bias);
}

//===----------------------------------------------------------------------===//
// linear
//===----------------------------------------------------------------------===//

/// True when one of `tensors` carries a forward-mode tangent (level 0).
bool anyForwardGrad(std::initializer_list<at::TensorList> tensors) {
  for (at::TensorList list : tensors)
    for (const at::Tensor &t : list)
      if (t.defined() && t._fw_grad(/*level=*/0).defined())
        return true;
  return false;
}

/// The autograd node of `linear`: its backward. dgrad reads the weights
/// through the same checked view as the forward; wgrad runs one GEMM per run
/// of consecutive trainable parts into one full gradient buffer (bias
/// gradient fused), and each part's gradient is a row-block view of it.
/// Frozen parts get no wgrad; frozen weights with trainable biases get the
/// bias gradient from a column sum. A hand-written Node (as ATen's generated
/// ones are), not a torch::autograd::Function: what backward reads is kept in
/// members, not in the string-keyed `saved_data` map, and the no-graph case
/// never builds a node: together about 10 us less host time per call
/// (bench/tools/host_breakdown.py).
///
/// Edges: [input, weight..., bias...], one gradient each.
class LinearBackward : public torch::autograd::Node {
public:
  explicit LinearBackward(SavedCall call) : call(std::move(call)) {}

  std::string name() const override { return "splitlinear::LinearBackward"; }

  /// Compiled autograd (`torch._dynamo.compiled_autograd`) cannot trace this
  /// node: it reaches it only when the op ran outside AOTAutograd (eagerly,
  /// under `fallback="eager"`, or in a graph of op calls alone). Refused with
  /// the way out, instead of PyTorch's bare "compiled_args not implemented".
  void compiled_args(torch::dynamo::autograd::CompiledNodeArgs &) const override {
    TORCH_CHECK_NOT_IMPLEMENTED(
        false,
        "splitlinear.linear: compiled autograd cannot trace the op's backward "
        "node (splitlinear::LinearBackward), which is there because the op "
        "ran outside AOTAutograd: called eagerly, compiled with "
        "fallback=\"eager\", or in a compiled graph of op calls alone, which "
        "runs eagerly unless torch._dynamo.config.compiled_autograd is set "
        "when it is compiled. Set that flag before compiling (with "
        "fallback=\"inductor\"), or run this backward without compiled "
        "autograd.");
  }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    input.reset_data();
    for (torch::autograd::SavedVariable &w : weights)
      w.reset_data();
  }

  torch::autograd::variable_list
  apply(torch::autograd::variable_list &&gradOutputs) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const GradNeeds &needs = call.needs;
    const std::vector<int64_t> &rows = call.rows, &offsets = call.offsets;
    int64_t n = static_cast<int64_t>(rows.size());
    torch::autograd::variable_list grads(1 + n + (call.hasBias ? n : 0));
    at::Tensor grad = gradOutputs[0];
    if (!grad.defined()) // an undefined gradient stands for zeros
      return grads;
    bool anyWeightNeeds = needs.anyWeight();
    at::Tensor x = anyWeightNeeds ? input.unpack() : at::Tensor();
    if (needs.input) {
      std::vector<at::Tensor> w;
      w.reserve(weights.size());
      for (torch::autograd::SavedVariable &saved : weights)
        w.push_back(saved.unpack());
      grads[0] = ops().dgrad.call(grad, w);
    }
    for (const WgradRun &run : wgradRuns(needs)) {
      int64_t i = run.begin, j = run.end;
      at::Tensor block =
          (i == 0 && j == n)
              ? grad
              : grad.narrow(-1, offsets[i], offsets[j] - offsets[i]);
      auto [dw, db] = ops().wgrad.call(block, x, run.biasGradient);
      for (int64_t p = i; p < j; ++p) {
        grads[1 + p] = dw.narrow(0, offsets[p] - offsets[i], rows[p]);
        if (run.biasGradient && call.biasNeeds(p))
          grads[1 + n + p] = db.narrow(0, offsets[p] - offsets[i], rows[p]);
      }
    }
    // Bias gradients of frozen weight parts: column sums of dy.
    bool biasLeft = false;
    for (int64_t p = 0; p < n; ++p)
      biasLeft |= call.biasNeeds(p) && !grads[1 + n + p].defined();
    if (biasLeft) {
      std::vector<at::Tensor> db = biasGradients(grad, call);
      for (int64_t p = 0; p < n; ++p)
        if (call.biasNeeds(p) && !grads[1 + n + p].defined())
          grads[1 + n + p] = db[p];
    }
    return grads;
  }

  SavedCall call;
  /// Saved only when some weight part needs a gradient (wgrad reads it).
  torch::autograd::SavedVariable input;
  /// Saved only when the input needs a gradient (dgrad reads them).
  std::vector<torch::autograd::SavedVariable> weights;
};

at::Tensor linearAutograd(const at::Tensor &input, at::TensorList weight,
                          std::optional<at::TensorList> bias) {
  at::TensorList biases = bias ? *bias : at::TensorList();
  if (anyForwardGrad({input, weight, biases}))
    TORCH_CHECK(false, "splitlinear.linear: forward-mode AD (dual tensors, "
                       "torch.func.jvp) is not supported");
  if (!needsGraph({input, weight, biases})) {
    // Nothing to record (no_grad, or frozen everything): no node at all.
    at::AutoDispatchBelowADInplaceOrView guard;
    return ops().linear.call(input, weight, bias);
  }
  std::vector<at::Tensor> parts;
  parts.reserve(weight.size() + biases.size());
  parts.insert(parts.end(), weight.begin(), weight.end());
  parts.insert(parts.end(), biases.begin(), biases.end());
  auto node = std::shared_ptr<LinearBackward>(
      new LinearBackward(describeCall(input, parts,
                                      static_cast<int64_t>(weight.size()),
                                      bias.has_value())),
      torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(input, parts));
  // Only what backward reads: the input for wgrad, the weights for dgrad.
  // The same decision in the forward and in an activation-checkpointing
  // recompute (it depends on requires_grad only), so the saved counts match.
  if (node->call.needs.anyWeight())
    node->input = torch::autograd::SavedVariable(input, /*is_output=*/false);
  if (input.requires_grad()) {
    node->weights.reserve(weight.size());
    for (const at::Tensor &w : weight)
      node->weights.emplace_back(w, /*is_output=*/false);
  }
  at::Tensor out;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    out = ops().linear.call(input, weight, bias);
  }
  torch::autograd::set_history(out, node);
  return out;
}

//===----------------------------------------------------------------------===//
// cast_concat
//===----------------------------------------------------------------------===//

/// The autograd formula of `cast_concat`: each part gets its row block of
/// the gradient, cast back to the part's dtype (differentiable ATen ops, so
/// higher-order gradients work). The parts share one dtype (the op checks), so
/// the gradient is cast once and the parts get row blocks of it: views of
/// one full gradient, as `linear`'s weight gradients are. Saves no tensor.
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
    return ops().castConcat.call(parts, dtype);
  }

  static torch::autograd::variable_list
  backward(torch::autograd::AutogradContext *ctx,
           torch::autograd::variable_list gradOutputs) {
    std::vector<int64_t> rows = ctx->saved_data["rows"].toIntVector();
    at::ScalarType dtype = ctx->saved_data["dtype"].toScalarType();
    torch::autograd::variable_list grads;
    at::Tensor full = gradOutputs[0].to(dtype);
    int64_t offset = 0;
    for (int64_t r : rows) {
      grads.push_back(full.narrow(0, offset, r));
      offset += r;
    }
    grads.emplace_back(); // dtype
    return grads;
  }
};

at::Tensor castConcatAutograd(at::TensorList parts, at::ScalarType dtype) {
  return CastConcat::apply(parts, dtype);
}

} // namespace

TORCH_LIBRARY_IMPL(splitlinear, Autograd, m) {
  m.impl("linear", &linearAutograd);
  m.impl("linear_dgrad", &dgradAutograd);
  m.impl("linear_wgrad", &wgradAutograd);
  m.impl("cast_concat", &castConcatAutograd);
}

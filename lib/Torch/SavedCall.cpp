//===- SavedCall.cpp - what the autograd formulas record --------*- C++ -*-===//
//
// Implements SavedCall.h.
//
//===----------------------------------------------------------------------===//

#include "SavedCall.h"

using namespace splitlinear;

namespace {
std::vector<int64_t> offsetsOf(const std::vector<int64_t> &rows) {
  std::vector<int64_t> offsets;
  offsets.reserve(rows.size() + 1);
  offsets.push_back(0);
  for (int64_t r : rows)
    offsets.push_back(offsets.back() + r);
  return offsets;
}
} // namespace

SavedCall splitlinear::describeCall(const at::Tensor &input,
                                    at::TensorList parts, int64_t numWeights,
                                    bool hasBias) {
  SavedCall call;
  call.hasBias = hasBias;
  call.needs.input = input.requires_grad();
  size_t numBiases = parts.size() - static_cast<size_t>(numWeights);
  call.needs.weights.reserve(numWeights);
  call.rows.reserve(numWeights);
  call.needs.biases.reserve(numBiases);
  for (int64_t i = 0; i < static_cast<int64_t>(parts.size()); ++i) {
    bool needs = parts[i].requires_grad();
    if (i < numWeights) {
      call.needs.weights.push_back(needs);
      call.rows.push_back(parts[i].dim() >= 1 ? parts[i].size(0) : 0);
    } else {
      call.needs.biases.push_back(needs);
    }
  }
  call.offsets = offsetsOf(call.rows);
  return call;
}

SavedCall splitlinear::saveCall(torch::autograd::AutogradContext *ctx,
                                const at::Tensor &input, at::TensorList parts,
                                int64_t numWeights, bool hasBias) {
  SavedCall call = describeCall(input, parts, numWeights, hasBias);
  c10::List<bool> flags;
  flags.push_back(call.needs.input);
  for (bool needs : call.needs.weights)
    flags.push_back(needs);
  for (bool needs : call.needs.biases)
    flags.push_back(needs);
  ctx->saved_data["needs"] = flags;
  ctx->saved_data["rows"] = call.rows;
  ctx->saved_data["has_bias"] = hasBias;
  return call;
}

SavedCall splitlinear::loadCall(torch::autograd::AutogradContext *ctx) {
  SavedCall call;
  c10::List<bool> flags = ctx->saved_data["needs"].toBoolList();
  call.rows = ctx->saved_data["rows"].toIntVector();
  call.hasBias = ctx->saved_data["has_bias"].toBool();
  int64_t n = static_cast<int64_t>(call.rows.size());
  call.needs.input = flags.get(0);
  for (int64_t i = 0; i < n; ++i) {
    call.needs.weights.push_back(flags.get(1 + i));
    if (call.hasBias)
      call.needs.biases.push_back(flags.get(1 + n + i));
  }
  call.offsets = offsetsOf(call.rows);
  return call;
}

std::vector<at::Tensor> splitlinear::biasGradients(const at::Tensor &grad,
                                                   const SavedCall &call) {
  int64_t n = static_cast<int64_t>(call.rows.size());
  std::vector<at::Tensor> grads(n);
  at::Tensor sums;
  for (int64_t p = 0; p < n; ++p) {
    if (!call.biasNeeds(p))
      continue;
    if (!sums.defined()) {
      c10::SymInt m = 1;
      for (int64_t d = 0; d + 1 < grad.dim(); ++d)
        m = m * grad.sym_size(d);
      sums = grad.reshape_symint({m, grad.sym_size(-1)}).sum(0);
    }
    grads[p] = sums.narrow(0, call.offsets[p], call.rows[p]);
  }
  return grads;
}

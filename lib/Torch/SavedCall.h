//===- SavedCall.h - what the autograd formulas record ----------*- C++ -*-===//
//
// The part of a `linear` / `fp8_linear` call that their autograd formulas
// (Autograd.cpp, Fp8Autograd.cpp) record in the autograd context for
// backward: which inputs need a gradient, each weight part's rows, and
// whether there are bias parts.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_TORCH_SAVEDCALL_H
#define SPLITLINEAR_LIB_TORCH_SAVEDCALL_H

#include "KernelPlan.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <vector>

namespace splitlinear {

/// A call's shape of gradients, as backward reads it.
struct SavedCall {
  GradNeeds needs;
  /// N_i of each weight part.
  std::vector<int64_t> rows;
  /// Row offsets of the parts in the concatenated weight: rows.size() + 1
  /// entries, from 0 to Σ N_i.
  std::vector<int64_t> offsets;
  bool hasBias = false;

  /// Whether bias part `i` needs a gradient.
  bool biasNeeds(int64_t i) const { return hasBias && needs.biases[i]; }
};

/// Describes, for `parts` = the weight parts then (with `hasBias`) the bias
/// parts, which of [input, parts...] require grad, the weight parts' rows and
/// `hasBias` (what saveCall records). The parts are 2-D (the op checks).
SavedCall describeCall(const at::Tensor &input, at::TensorList parts,
                       int64_t numWeights, bool hasBias);

/// Records, for `parts` = the weight parts then (with `hasBias`) the bias
/// parts, which of [input, parts...] require grad, the weight parts' rows
/// and `hasBias` in `ctx`, and returns them. The parts are 2-D (the op
/// checks).
SavedCall saveCall(torch::autograd::AutogradContext *ctx,
                   const at::Tensor &input, at::TensorList parts,
                   int64_t numWeights, bool hasBias);

/// What saveCall recorded in `ctx`.
SavedCall loadCall(torch::autograd::AutogradContext *ctx);

/// The bias gradients of the parts that need one: column blocks of the
/// column sums of `grad` [..., ΣN_i], summed once; undefined elsewhere.
/// Sizes stay symbolic.
std::vector<at::Tensor> biasGradients(const at::Tensor &grad,
                                      const SavedCall &call);

} // namespace splitlinear

#endif // SPLITLINEAR_LIB_TORCH_SAVEDCALL_H

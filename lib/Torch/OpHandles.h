//===- OpHandles.h - dispatcher handles of the ops --------------*- C++ -*-===//
//
// Typed dispatcher handles of torch.ops.splitlinear.*, for the kernels that
// call an op through the dispatcher (autograd, autocast): under tracing (AOT,
// fake tensors) the ops' fake kernels must run, and the backward ops'
// Autograd kernels must see grad mode.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_TORCH_OPHANDLES_H
#define SPLITLINEAR_LIB_TORCH_OPHANDLES_H

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <tuple>

namespace splitlinear {

using LinearSig = at::Tensor(const at::Tensor &, at::TensorList,
                             std::optional<at::TensorList>);
using DgradSig = at::Tensor(const at::Tensor &, at::TensorList);
using WgradSig = std::tuple<at::Tensor, at::Tensor>(const at::Tensor &,
                                                    const at::Tensor &, bool);
using CastConcatSig = at::Tensor(at::TensorList, at::ScalarType);
using Fp8QuantizeSig = std::tuple<at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor &, at::ScalarType, c10::string_view,
    const std::optional<at::Tensor> &, bool, bool, bool);
using Fp8QuantizeDualSig =
    std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
        const at::Tensor &, at::ScalarType, const std::optional<at::Tensor> &,
        c10::string_view, bool);
using Fp8CastPartsSig =
    std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>(at::TensorList,
                                                               at::ScalarType,
                                                               bool, bool,
                                                               bool);
using Fp8QuantizeWeightBlocksSig =
    std::tuple<at::Tensor, at::Tensor, at::Tensor>(at::TensorList,
                                                   at::ScalarType, bool, bool,
                                                   bool);
using ScaledLinearSig = at::Tensor(const at::Tensor &, const at::Tensor &,
                                   at::TensorList, const at::Tensor &,
                                   std::optional<at::TensorList>,
                                   at::ScalarType, bool);
using BlockScaledMmSig = at::Tensor(const at::Tensor &, const at::Tensor &,
                                    const at::Tensor &, const at::Tensor &,
                                    c10::string_view,
                                    const std::optional<at::Tensor> &,
                                    at::ScalarType);
using Fp8LinearSig = at::Tensor(const at::Tensor &, at::TensorList,
                                std::optional<at::TensorList>,
                                c10::string_view, bool);

/// The handles of `splitlinear::linear`, `linear_dgrad`, `linear_wgrad`,
/// `cast_concat` and the FP8 ops (Fp8Ops.h, Fp8Blockwise.h).
struct OpHandles {
  c10::TypedOperatorHandle<LinearSig> linear;
  c10::TypedOperatorHandle<DgradSig> dgrad;
  c10::TypedOperatorHandle<WgradSig> wgrad;
  c10::TypedOperatorHandle<CastConcatSig> castConcat;
  c10::TypedOperatorHandle<Fp8QuantizeSig> fp8Quantize;
  c10::TypedOperatorHandle<Fp8QuantizeDualSig> fp8QuantizeDual;
  c10::TypedOperatorHandle<Fp8CastPartsSig> fp8CastParts;
  c10::TypedOperatorHandle<Fp8QuantizeWeightBlocksSig> fp8QuantizeWeightBlocks;
  c10::TypedOperatorHandle<ScaledLinearSig> scaledLinear;
  c10::TypedOperatorHandle<Fp8LinearSig> fp8Linear;
  c10::TypedOperatorHandle<BlockScaledMmSig> blockScaledMm;
};

/// The handles, looked up at the first call (thread-safe). Raises c10::Error
/// if the library (Library.cpp) is not registered.
const OpHandles &ops();

} // namespace splitlinear

#endif // SPLITLINEAR_LIB_TORCH_OPHANDLES_H

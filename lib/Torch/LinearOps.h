//===- LinearOps.h - the ops of torch.ops.splitlinear -----------*- C++ -*-===//
//
// Declares the kernels of torch.ops.splitlinear.* that Library.cpp registers
// (the counter ops are in Counters.h).
//
// Schemas (shapes: input [..., K], weight_i [N_i, K], bias_i [N_i]):
//   linear(Tensor input, Tensor[] weight, Tensor[]? bias) -> Tensor [..., ΣN_i]
//   linear_dgrad(Tensor grad_output, Tensor[] weight) -> Tensor [..., K]
//   linear_wgrad(Tensor grad_output, Tensor input, bool bias)
//       -> (Tensor [N, K], Tensor [N] or [0])
//   precompile(ScalarType dtype, Device device, int num_parts, bool bias,
//              bool training, str? dump_dir=None,
//              ScalarType? autocast_dtype=None, bool[]? requires_grad=None)
//       -> ()   (compile ahead of the first call what it and its backward
//                will ask for; with dump_dir, recompile and dump each kernel)
//   runtime_counters() -> Dict(str, int)   (views, cats, per_part_gemms,
//                                  compiles, cache_hits, evictions,
//                                  cache_size, dgrad_views, dgrad_cats,
//                                  dgrad_per_part_gemms)
//   reset_runtime_counters() -> ()
//   set_per_part_max_rows(int rows) -> int   (previous value; -1: automatic;
//                                             see perPartMaxRows)
//   cast_concat(Tensor[] parts, ScalarType dtype) -> Tensor   (autocast)
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_TORCH_LINEAROPS_H
#define SPLITLINEAR_LIB_TORCH_LINEAROPS_H

#include <ATen/ATen.h>
#include <ATen/core/List.h>

#include <optional>
#include <string>
#include <tuple>

namespace splitlinear {

/// y[..., ΣN_i] = input · concat(weight)ᵀ + concat(bias).
at::Tensor linear(const at::Tensor &input, at::TensorList weight,
                  std::optional<at::TensorList> bias);
/// dx[..., K] = grad_output · concat(weight).
at::Tensor linearDgrad(const at::Tensor &gradOutput, at::TensorList weight);
/// (dW [N, K], db [N] or [0]) of grad_output and input.
std::tuple<at::Tensor, at::Tensor>
linearWgrad(const at::Tensor &gradOutput, const at::Tensor &input, bool bias);
/// `cat(parts, 0)` converted to `dtype` in one pass ([ΣN_i, ...] from parts
/// [N_i, ...] of one dtype, rank and device). An op of its own, opaque to
/// Inductor, so that its output is one realized buffer and row blocks of it
/// stay adjacent (Inductor would otherwise compute each slice of a fused
/// cat + convert as a buffer of its own). Used by the autocast kernel of
/// `linear` (Autocast.cpp).
at::Tensor castConcat(at::TensorList parts, at::ScalarType dtype);
/// Compiles (and caches) the kernels a call of `linear` needs, and with
/// `gradMode` those of its backward, for an input of `dtype` on `device`,
/// `numParts` weight parts (as many bias parts with `bias`), under autocast
/// to `autocastDtype` if given, with `requiresGrad` flags per tensor input
/// [input, weight..., bias...] (default: all true). Raises c10::Error for an
/// unsupported dtype or device, `numParts < 1`, a flag list of another
/// length, or a compiler failure.
void precompile(at::ScalarType dtype, at::Device device, int64_t numParts,
                bool bias, bool gradMode, std::optional<std::string> dumpDir,
                std::optional<at::ScalarType> autocastDtype,
                std::optional<c10::List<bool>> requiresGrad);

} // namespace splitlinear

#endif // SPLITLINEAR_LIB_TORCH_LINEAROPS_H

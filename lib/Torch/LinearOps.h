//===- LinearOps.h - the ops of torch.ops.splitlinear -----------*- C++ -*-===//
//
// Declares the kernels of torch.ops.splitlinear.* that Library.cpp registers.
//
// Schemas (shapes: input [..., K], weight_i [N_i, K], bias_i [N_i]):
//   linear(Tensor input, Tensor[] weight, Tensor[]? bias) -> Tensor [..., ΣN_i]
//   linear_dgrad(Tensor grad_output, Tensor[] weight) -> Tensor [..., K]
//   linear_wgrad(Tensor grad_output, Tensor input, bool bias)
//       -> (Tensor [N, K], Tensor [N] or [0])
//   precompile(ScalarType dtype, Device device, int num_parts, bool bias,
//              bool training, str? dump_dir=None) -> ()   (compile ahead of
//              the first call; with dump_dir, recompile and dump each kernel)
//   runtime_counters() -> Dict(str, int)   (views, cats, per_part_gemms,
//                                  compiles, cache_hits, evictions,
//                                  cache_size, dgrad_views, dgrad_cats,
//                                  dgrad_per_part_gemms)
//   reset_runtime_counters() -> ()
//   set_per_part_max_rows(int rows) -> int   (previous value; -1: automatic;
//                                             see perPartMaxRows)
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_TORCH_LINEAROPS_H
#define SPLITLINEAR_LIB_TORCH_LINEAROPS_H

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>

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
/// Compiles (and caches) the kernels `linear` needs for a signature.
void precompile(at::ScalarType dtype, at::Device device, int64_t numParts,
                bool bias, bool training, std::optional<std::string> dumpDir);
/// The op library's counters by name.
c10::Dict<std::string, int64_t> runtimeCounters();
/// Zeroes the counters of runtimeCounters (the cache is kept).
void resetRuntimeCounters();

} // namespace splitlinear

#endif // SPLITLINEAR_LIB_TORCH_LINEAROPS_H

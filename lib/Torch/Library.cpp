//===- Library.cpp - registration of torch.ops.splitlinear ------*- C++ -*-===//
//
// TORCH_LIBRARY only: the schemas of torch.ops.splitlinear.* (see
// LinearOps.h, Counters.h) and their CPU / CUDA kernels. Autograd.cpp and Autocast.cpp
// register their own dispatch keys.
//
//===----------------------------------------------------------------------===//

#include "Counters.h"
#include "Fp8Blockwise.h"
#include "Fp8Ops.h"
#include "Fp8WeightCache.h"
#include "LinearOps.h"
#include "Settings.h"

#include <torch/library.h>

using namespace splitlinear;

TORCH_LIBRARY(splitlinear, m) {
  m.def("linear(Tensor input, Tensor[] weight, Tensor[]? bias=None) -> Tensor");
  m.def("linear_dgrad(Tensor grad_output, Tensor[] weight) -> Tensor");
  m.def("linear_wgrad(Tensor grad_output, Tensor input, bool bias) -> "
        "(Tensor, Tensor)");
  m.def("precompile(ScalarType dtype, Device device, int num_parts, bool bias, "
        "bool training, str? dump_dir=None, ScalarType? autocast_dtype=None, "
        "bool[]? requires_grad=None) -> ()",
        &precompile);
  m.def("runtime_counters() -> Dict(str, int)", &runtimeCounters);
  m.def("reset_runtime_counters() -> ()", &resetRuntimeCounters);
  m.def("set_per_part_max_rows(int rows) -> int", &setPerPartMaxRows);
  m.def("cast_concat(Tensor[] parts, ScalarType dtype) -> Tensor");
  m.def("fp8_quantize(Tensor input, ScalarType dtype, str axis, "
        "Tensor? col_scale=None, bool write_out=True, "
        "bool write_transposed=False, bool pow2_scales=False) -> "
        "(Tensor, Tensor, Tensor)");
  m.def("fp8_quantize_dual(Tensor input, ScalarType dtype, "
        "Tensor? col_scale=None, str axis=\"tensor\", "
        "bool pow2_scales=False) -> (Tensor, Tensor, Tensor, Tensor)");
  m.def("fp8_cast_parts(Tensor[] parts, ScalarType dtype, "
        "bool write_transposed=False, bool cache=False, "
        "bool pow2_scales=False) -> (Tensor, Tensor, Tensor, Tensor)");
  m.def("scaled_linear(Tensor input, Tensor input_scale_inv, Tensor[] weight, "
        "Tensor weight_scale_inv, Tensor[]? bias=None, "
        "ScalarType out_dtype=bfloat16, bool fast_accum=False) -> Tensor");
  m.def("fp8_serving_linear(Tensor input, Tensor[] weight, "
        "Tensor[] weight_scale_inv, Tensor[]? bias=None, str axis=\"rows\", "
        "ScalarType? out_dtype=None, bool fast_accum=False, "
        "Tensor? input_scale_inv=None) -> Tensor");
  m.def("fp8_quantize_weight_blocks(Tensor[] weight, ScalarType dtype, "
        "bool write_out=True, bool write_transposed=False, "
        "bool pow2_scales=False) -> (Tensor, Tensor, Tensor)");
  m.def("block_scaled_mm(Tensor a, Tensor a_scale_inv, Tensor b, "
        "Tensor b_scale_inv, str b_blocks=\"128x128\", Tensor? bias=None, "
        "ScalarType out_dtype=bfloat16) -> Tensor");
  m.def("fp8_linear(Tensor input, Tensor[] weight, Tensor[]? bias=None, "
        "str recipe=\"tensorwise\", bool cache_weights=False) -> Tensor");
  m.def("fp8_weight_cache_clear(bool reset_counts=True) -> ()",
        &clearFp8WeightCache);
  m.def("fp8_weight_cache_info() -> Dict(str, int)", &fp8WeightCacheInfo);
  m.def("fp8_weight_cache_watch(Tensor alias) -> ()",
        &watchFp8WeightCacheAlias);
}

namespace {
/// The kernels of the CPU and CUDA keys: the same functions (the runtime
/// context picks the target from the tensors' device).
void implKernels(torch::Library &m) {
  m.impl("linear", &splitlinear::linear);
  m.impl("linear_dgrad", &splitlinear::linearDgrad);
  m.impl("linear_wgrad", &splitlinear::linearWgrad);
  m.impl("cast_concat", &splitlinear::castConcat);
  m.impl("fp8_quantize", &splitlinear::fp8Quantize);
  m.impl("fp8_quantize_dual", &splitlinear::fp8QuantizeDual);
  m.impl("fp8_cast_parts", &splitlinear::fp8CastParts);
  m.impl("scaled_linear", &splitlinear::scaledLinear);
  m.impl("fp8_quantize_weight_blocks", &splitlinear::fp8QuantizeWeightBlocks);
  m.impl("block_scaled_mm", &splitlinear::blockScaledMm);
  m.impl("fp8_linear", &splitlinear::fp8Linear);
  m.impl("fp8_serving_linear", &splitlinear::fp8ServingLinear);
}
} // namespace

TORCH_LIBRARY_IMPL(splitlinear, CPU, m) { implKernels(m); }

#ifdef SPLITLINEAR_TORCH_CUDA
TORCH_LIBRARY_IMPL(splitlinear, CUDA, m) { implKernels(m); }
#endif

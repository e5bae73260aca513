//===- Fp8Blockwise.h - the block-scaled FP8 recipe -------------*- C++ -*-===//
//
// The `blockwise` recipe of `fp8_linear` (DeepSeek-V3's scaling, as
// TransformerEngine's Float8BlockScaling): activations and output gradients
// in 1×128 blocks along the contraction, weights in 128×128 blocks, every
// operand e4m3, scales rounded down to powers of 2 (`blockwise`) or exact
// (`blockwise_fp32_scales`). With every part's rows a multiple of 128, no
// weight block crosses a part boundary, so each part keeps its own scales in
// the forward, dgrad and wgrad (docs/Design.md, "FP8").
//
// The quantizations are the runtime's one-launch kernels (`fp8_quantize`,
// `fp8_quantize_dual` and `fp8_quantize_weight_blocks` with 1×128 and
// 128×128 blocks); the GEMM is `block_scaled_mm`. All are opaque to
// tracing. The GEMM is cuBLASLt's VEC128_32F / BLK128x128_32F scale modes
// through at::_scaled_mm on sm_90, an exact dequantize-then-GEMM emulation
// on the CPU.
//
// Schema:
//   block_scaled_mm(Tensor a, Tensor a_scale_inv, Tensor b,
//                   Tensor b_scale_inv, str b_blocks="128x128",
//                   Tensor? bias=None, ScalarType out_dtype=bfloat16)
//       -> Tensor [M, N]
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_TORCH_FP8BLOCKWISE_H
#define SPLITLINEAR_LIB_TORCH_FP8BLOCKWISE_H

#include <ATen/ATen.h>
#include <c10/util/string_view.h>

#include <optional>
#include <tuple>

namespace splitlinear {

/// The block length of the recipe: 128 elements along the contraction
/// (DeepSeek-V3, TE's Float8BlockScaling, cuBLASLt's VEC128/BLK128x128).
constexpr int64_t kFp8Block = 128;

/// y [M, N] = (a ⊙ a_scale_inv) · (b ⊙ b_scale_inv)ᵀ (+ bias) in
/// `outDtype`: `a` [M, K] FP8 with scale_inv [M, K/128] (1×128 blocks),
/// `b` [N, K] FP8 with scale_inv [N/128, K/128] (`bBlocks` "128x128") or
/// [N, K/128] ("1x128"), K a multiple of 128, bias [N] of `outDtype`. On
/// CUDA one cuBLASLt GEMM with block scales (sm_90 only; no fast
/// accumulation), written in bfloat16 and converted to `outDtype`; on the
/// CPU the dequantized operands multiplied in float32. Raises c10::Error
/// naming the argument for a bad dtype, shape or device, and naming the
/// device on a GPU other than sm_90.
at::Tensor blockScaledMm(const at::Tensor &a, const at::Tensor &aScaleInv,
                         const at::Tensor &b, const at::Tensor &bScaleInv,
                         c10::string_view bBlocks,
                         const std::optional<at::Tensor> &bias,
                         at::ScalarType outDtype);

/// Raises c10::Error naming `op`'s `cache_weights` when it is set: the FP8
/// weight cache holds per-part tensorwise casts, which the block-scaled
/// recipes do not use.
void checkBlockwiseCache(bool cacheWeights, const char *op);

/// The forward of `fp8_linear` under a block-scaled recipe, without
/// autograd (inference, and the Autograd kernel's building block): y [...,
/// ΣN_i] in the input's dtype. Arguments as fp8Linear's, checked.
at::Tensor fp8LinearBlockwise(const at::Tensor &input, at::TensorList weight,
                              std::optional<at::TensorList> bias, bool pow2);

/// `fp8_linear` under a block-scaled recipe with its backward (the Autograd
/// kernel's branch, Fp8Autograd.cpp).
at::Tensor fp8LinearBlockwiseAutograd(const at::Tensor &input,
                                      at::TensorList weight,
                                      std::optional<at::TensorList> bias,
                                      bool pow2);

/// `fp8_serving_linear` with axis "blocks": y [..., ΣN_i] = x · [W_1; ...;
/// W_P]ᵀ (+ bias) in `outDtype`, `input` [..., K] float32/float16/bfloat16
/// quantized on every call to e4m3 in 1×128 blocks with exact scales (as
/// DeepSeek-V3's act_quant), `weight`[i] [N_i, K] float8_e4m3fn with
/// `weightScaleInv`[i] [N_i/128, K/128] float32 (128×128 blocks; K and every
/// N_i multiples of 128). Parts, and their scales, adjacent in one storage
/// are used in place (no 128×128 block crosses a part, so the group's
/// scales are the parts' stacked by rows); others are copied into one.
/// One block-scaled GEMM (blockScaledMm). Raises c10::Error naming the
/// argument for a bad dtype, shape or device, and for `inputScaleInv` (the
/// graph quantizes rows only).
at::Tensor fp8ServingLinearBlockwise(
    const at::Tensor &input, at::TensorList weight,
    at::TensorList weightScaleInv, std::optional<at::TensorList> bias,
    at::ScalarType outDtype, const std::optional<at::Tensor> &inputScaleInv);

} // namespace splitlinear

#endif // SPLITLINEAR_LIB_TORCH_FP8BLOCKWISE_H

//===- Fp8Ops.h - the FP8 ops of torch.ops.splitlinear ----------*- C++ -*-===//
//
// Declares the FP8 kernels that Library.cpp registers. The quantization
// conventions (scale = fp8_max / amax, x8 = saturate(round(x · scale)),
// scale_inv = 1 / scale, all in fp32) are the runtime's (Runtime.h,
// "FP8 quantization"); the GEMM is one cuBLASLt FP8 GEMM with outer-vector
// scaling, each weight part's scale_inv spread over that part's output
// columns (../docs/Design.md, "FP8").
//
// Schemas (shapes: input [..., K], weight_i [N_i, K], N = ΣN_i, M the
// flattened leading dims):
//   fp8_quantize(Tensor input, ScalarType dtype, str axis,
//                Tensor? col_scale=None, bool write_out=True,
//                bool write_transposed=False, bool pow2_scales=False)
//       -> (Tensor out [M, K] or [0, 0], Tensor out_t [K, M] or [0, 0],
//           Tensor scale_inv [1] / [M] / [K])
//   fp8_cast_parts(Tensor[] parts, ScalarType dtype,
//                  bool write_transposed=False, bool cache=False,
//                  bool pow2_scales=False)
//       -> (Tensor w8 [N, K], Tensor w8_t [K, N] or [0, 0],
//           Tensor scale_inv [P], Tensor row_scale_inv [N])
//   scaled_linear(Tensor input, Tensor input_scale_inv, Tensor[] weight,
//                 Tensor weight_scale_inv, Tensor[]? bias=None,
//                 ScalarType out_dtype=BFloat16, bool fast_accum=False)
//       -> Tensor [..., N]
//   fp8_linear(Tensor input, Tensor[] weight, Tensor[]? bias=None,
//              str recipe="tensorwise") -> Tensor [..., N]
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_TORCH_FP8OPS_H
#define SPLITLINEAR_LIB_TORCH_FP8OPS_H

#include <ATen/ATen.h>
#include <c10/util/string_view.h>

#include <optional>
#include <string>
#include <tuple>

namespace splitlinear {

/// The FP8 training recipes, named as torchao names them.
enum class Fp8Recipe {
  /// One scale per activation and gradient tensor, one per weight part;
  /// x and W in e4m3, dy in e5m2, scales exact.
  Tensorwise,
  /// One scale per row of the activation and of the output gradient (per
  /// column of each for wgrad), one per weight part; x, W and dy in e4m3,
  /// every scale rounded down to a power of 2 (torchao's
  /// `Float8LinearConfig.from_recipe_name("rowwise")`).
  Rowwise,
  /// Rowwise, with wgrad in the input's precision.
  RowwiseWithGwHp,
  /// x and dy in 1×128 blocks along the contraction, weights in 128×128
  /// blocks, all e4m3, scales rounded down to powers of 2 (TE's
  /// Float8BlockScaling; Fp8Blockwise.h).
  Blockwise,
  /// Blockwise with exact fp32 scales.
  BlockwiseFp32Scales,
};

/// Whether `recipe` is one of the block-scaled recipes (Fp8Blockwise.h).
bool isBlockwise(Fp8Recipe recipe);

/// The FP8 type of the output gradient dy under `recipe`: e5m2 for
/// tensorwise, e4m3 for the others (as torchao's and TE's).
at::ScalarType fp8GradDtype(Fp8Recipe recipe);

/// Whether `recipe` rounds its scales down to powers of 2 (the rowwise
/// recipes, as torchao's `round_scales_to_power_of_2`, and `blockwise`, as
/// TE's Float8BlockScaling).
bool fp8Pow2Scales(Fp8Recipe recipe);

/// The recipe named `name` ("tensorwise", "rowwise", "rowwise_with_gw_hp",
/// "blockwise", "blockwise_fp32_scales").
/// Raises c10::Error naming `op`'s `recipe` argument and the valid names.
Fp8Recipe parseFp8Recipe(c10::string_view name, const char *op);

/// Quantizes `input` ([..., K], float32/float16/bfloat16, flattened to
/// [M, K]) to `dtype` (float8_e4m3fn or float8_e5m2) with amax along `axis`
/// ("tensor", "rows", "cols", or "blocks": 1×128 along each row, K a
/// multiple of 128); with `colScale` (K float32 values) the value quantized
/// is input[m, k] · colScale[k]. Returns the row-major FP8 copy
/// (`writeOut`), its transpose [K, M] (`writeTransposed`, not with "blocks";
/// empty [0, 0] tensors when not asked for) and scale_inv (float32, [1],
/// [M], [K], or [M, K/128] for "blocks").
/// `pow2Scales` rounds each scale down to a power of 2 (SLINRT_SCALE_POW2).
/// Raises c10::Error naming the argument for a bad dtype, axis or shape.
std::tuple<at::Tensor, at::Tensor, at::Tensor>
fp8Quantize(const at::Tensor &input, at::ScalarType dtype,
            c10::string_view axis, const std::optional<at::Tensor> &colScale,
            bool writeOut, bool writeTransposed, bool pow2Scales);

/// The two quantizations of one tensor [..., K] (flattened to [M, K]) that
/// an FP8 backward needs, from one read. axis "tensor"
/// (slinrt_quantize_fp8_dual; colScale required): out [M, K] = input ·
/// colScale quantized with the amax of those products and out_t [K, M] =
/// inputᵀ quantized with the amax of input, each scale_inv [1]; equal bit
/// for bit to fp8Quantize(input, dtype, "tensor", colScale, true, false) and
/// fp8Quantize(input, dtype, "tensor", nullopt, false, true). axis "rows"
/// (slinrt_quantize_fp8_dual_rows; colScale optional): out per row (scale_inv
/// [M]) and out_t per column of input (scale_inv [K]); equal to
/// fp8Quantize(input, dtype, "rows", colScale, true, false) and
/// fp8Quantize(input, dtype, "cols", nullopt, false, true). axis "blocks"
/// (slinrt_quantize_fp8_dual_blocks; no colScale, K a multiple of 128): out
/// in 1x128 blocks along the rows (scale_inv [M, K/128]; bit for bit
/// fp8Quantize(input, dtype, "blocks", ...)) and out_t [K, M'] (M' = M
/// rounded up to 128, zero past M) in 1x128 blocks along M (scale_inv_t [K,
/// M'/128]), the operands of the block-scaled recipe's forward or dgrad and
/// of its wgrad. Returns (out,
/// scale_inv, out_t, scale_inv_t). colScale: float32 [K] on input's device.
/// `pow2Scales` as for fp8Quantize. Raises naming the argument for a bad
/// dtype, axis, device or length.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>
fp8QuantizeDual(const at::Tensor &input, at::ScalarType dtype,
                const std::optional<at::Tensor> &colScale,
                c10::string_view axis, bool pow2Scales);

/// Quantizes weight parts [N_i, K] (one float dtype, one device) into one
/// FP8 buffer [N, K], each part with its own tensorwise scale, and with
/// `writeTransposed` also its transpose [K, N]. Returns (w8, w8_t or [0, 0],
/// scale_inv [P], row_scale_inv [N]: each row's part's scale_inv). Two
/// launches on CUDA (the amax of every part, the cast), no host sync. With
/// `cache`, a result kept from an earlier call on the same, unchanged parts
/// (and the same `pow2Scales`) is returned instead (Fp8WeightCache.h).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>
fp8CastParts(at::TensorList parts, at::ScalarType dtype, bool writeTransposed,
             bool cache, bool pow2Scales);

/// `fp8_quantize_weight_blocks`: weight parts [N_i, K] (one float dtype, one
/// device; N_i and K multiples of 128) as one [N, K] tensor in 128×128
/// blocks, read in place (no block crosses a part), with the scale rule of
/// the block-scaled recipe (scale = fp8_max / amax of the block, rounded
/// down to a power of 2 with `pow2Scales`). One launch per part on CUDA, no
/// host sync. Returns (out [N, K] or [0, 0] unless `writeOut`, outᵀ [K, N]
/// or [0, 0] unless `writeTransposed`, scale_inv [N/128, K/128] float32).
/// Raises c10::Error naming the part for a bad shape, dtype or device.
std::tuple<at::Tensor, at::Tensor, at::Tensor>
fp8QuantizeWeightBlocks(at::TensorList weight, at::ScalarType dtype,
                        bool writeOut, bool writeTransposed, bool pow2Scales);

/// y [..., N] = sx · ŝ · (input · concat(weight)ᵀ) (+ concat(bias)) in
/// `outDtype` (float32, float16, bfloat16): `input` [..., K] FP8,
/// `inputScaleInv` float32 [1] or [M], `weight` FP8 parts [N_i, K] of one
/// type, `weightScaleInv` float32 [1] (one part, or parts sharing a scale)
/// or [N] (each row's scale_inv), `bias` parts [N_i] of `outDtype`. K and
/// every N_i must be multiples of 16. The parts are used in place when
/// adjacent (the kernel's checked view), else copied into one FP8 buffer or
/// run one GEMM each, as for `linear`. Raises c10::Error naming the
/// argument for a bad dtype, shape or device, or FP8 on a GPU below sm89.
at::Tensor scaledLinear(const at::Tensor &input, const at::Tensor &inputScaleInv,
                        at::TensorList weight, const at::Tensor &weightScaleInv,
                        std::optional<at::TensorList> bias,
                        at::ScalarType outDtype, bool fastAccum);

/// The FP8 serving GEMM: y [..., ΣN_i] = sx · ŝ · (x8 · concat(weight)ᵀ)
/// (+ concat(bias)) in `outDtype` (default: the input's), where `input`
/// [..., K] (float32/float16/bfloat16) is quantized to e4m3 on every call
/// (`axis` "rows": one scale per row; "tensor": one), `weight` are e4m3
/// parts [N_i, K] held in FP8 and `weightScaleInv[i]` float32 [1] or [N_i]
/// their scale_invs (ŝ: used in place when the [N_i] vectors are adjacent,
/// else spread into one). One quantization and one scaled GEMM per call,
/// no autograd. With `inputScaleInv` ([1] or [M] float32) the input is
/// already FP8 (quantized by the caller's own ops) and only the GEMM runs;
/// `outDtype` is then required. Raises c10::Error naming the argument for a
/// bad dtype, axis, scale count or shape (the rest as `scaledLinear`).
at::Tensor fp8ServingLinear(const at::Tensor &input, at::TensorList weight,
                            at::TensorList weightScaleInv,
                            std::optional<at::TensorList> bias,
                            c10::string_view axis,
                            std::optional<at::ScalarType> outDtype,
                            bool fastAccum,
                            const std::optional<at::Tensor> &inputScaleInv);

/// Raises c10::Error naming `op`'s out_dtype unless `outDtype` is float32,
/// float16 or bfloat16 (what the FP8 GEMMs write).
void checkOutDtype(at::ScalarType outDtype, const char *op);

/// Validates the arguments of `fp8_linear` (and its autograd kernel), each
/// error naming the argument: input [..., K] float32/float16/bfloat16;
/// weight parts [N_i, K] of one such dtype (it may differ from the input's:
/// float32 master weights), on the input's device, K and every N_i
/// multiples of 16 (of 128 with `blockwise`: no 128x128 block may cross a
/// part); bias parts [N_i] of the input's dtype.
void checkFp8LinearArgs(const at::Tensor &input, at::TensorList weight,
                        std::optional<at::TensorList> bias, const char *op,
                        bool blockwise = false);

/// y [..., N] = input · concat(weight)ᵀ (+ concat(bias)) computed in FP8 by
/// `recipe`: the input quantized to e4m3 (per tensor or per row), every
/// weight part quantized to e4m3 with its own scale into one buffer, one
/// scaled GEMM. The output has the input's dtype. Without autograd (the
/// Autograd kernel, Fp8Autograd.cpp, adds the backward). `cacheWeights`:
/// the weight cast goes through the FP8 weight cache (Fp8WeightCache.h).
at::Tensor fp8Linear(const at::Tensor &input, at::TensorList weight,
                     std::optional<at::TensorList> bias,
                     c10::string_view recipe, bool cacheWeights);

} // namespace splitlinear

#endif // SPLITLINEAR_LIB_TORCH_FP8OPS_H

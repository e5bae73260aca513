//===- OpHandles.cpp - dispatcher handles of the ops ------------*- C++ -*-===//
//
// Implements OpHandles.h.
//
//===----------------------------------------------------------------------===//

#include "OpHandles.h"

using namespace splitlinear;

namespace {
/// The handle of op `name` (overload "") with signature `Sig`.
template <typename Sig>
c10::TypedOperatorHandle<Sig> typedOp(const char *name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}
} // namespace

const OpHandles &splitlinear::ops() {
  static const OpHandles handles{
      typedOp<LinearSig>("splitlinear::linear"),
      typedOp<DgradSig>("splitlinear::linear_dgrad"),
      typedOp<WgradSig>("splitlinear::linear_wgrad"),
      typedOp<CastConcatSig>("splitlinear::cast_concat"),
      typedOp<Fp8QuantizeSig>("splitlinear::fp8_quantize"),
      typedOp<Fp8QuantizeDualSig>("splitlinear::fp8_quantize_dual"),
      typedOp<Fp8CastPartsSig>("splitlinear::fp8_cast_parts"),
      typedOp<Fp8QuantizeWeightBlocksSig>(
          "splitlinear::fp8_quantize_weight_blocks"),
      typedOp<ScaledLinearSig>("splitlinear::scaled_linear"),
      typedOp<Fp8LinearSig>("splitlinear::fp8_linear"),
      typedOp<BlockScaledMmSig>("splitlinear::block_scaled_mm")};
  return handles;
}

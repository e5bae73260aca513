//===- ScaledGemm.cpp - slin.scaled_gemm to a runtime call ------*- C++ -*-===//
//
// Lowers the FP8 GEMM: `slin.scaled_gemm` becomes one call of
// `slinrt_<target>_scaled_gemm_<out>(ctx, A, B, D, scaleA, scaleB, bias,
// aDtype, bDtype, scaling, fastAccum)` (Runtime.h), the callee named by
// RuntimeEntryPoints.def's SLINRT_SCALED_OUT_DTYPE for the output type and
// the operand types passed as slinrt_dtype codes. The FP8 memrefs travel
// as strided descriptors of one-byte elements.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "splitlinear/Dialect/Slin/IR/SlinOps.h"
#include "splitlinear/Dialect/Slin/Utils/ArithUtils.h"
#include "splitlinear/Runtime/Runtime.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::slin;
using namespace mlir::slin::detail;

namespace {

// The scaling operand of the entry point is the dialect's Scaling value.
static_assert(static_cast<int>(Scaling::tensorwise) ==
                      SLINRT_SCALING_TENSORWISE &&
                  static_cast<int>(Scaling::outer_vector) ==
                      SLINRT_SCALING_OUTER_VECTOR,
              "slin::Scaling and slinrt_scaling must agree");

/// `slin.scaled_gemm` → `slinrt_<target>_scaled_gemm_<out>(ctx, A, B, D,
/// scaleA, scaleB, bias, aDtype, bDtype, scaling, fastAccum)`. Without a
/// bias an empty `memref<0xT>` stands in, as for `slin.gemm` (the runtime
/// reads a bias of size 0 as none).
struct ScaledGemmToRuntimeCall : RuntimeCallPattern<ScaledGemmOp> {
  using RuntimeCallPattern::RuntimeCallPattern;

  LogicalResult
  matchAndRewrite(ScaledGemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type outType = op.getD().getType().getElementType();
    StringRef name = scaledGemmCallee(target, dtypeSuffix(outType));
    if (name.empty())
      return rewriter.notifyMatchFailure(
          op, "no runtime scaled GEMM for this output type");
    std::optional<int32_t> aDtype =
        dtypeCode(op.getA().getType().getElementType());
    std::optional<int32_t> bDtype =
        dtypeCode(op.getB().getType().getElementType());
    if (!aDtype || !bDtype)
      return rewriter.notifyMatchFailure(op, "operand type without a code");
    FailureOr<SmallVector<Value>> operands =
        contextAndMemrefs(rewriter, op,
                          {adaptor.getA(), adaptor.getB(), adaptor.getD(),
                           adaptor.getScaleA(), adaptor.getScaleB(),
                           adaptor.getBias()},
                          outType);
    if (failed(operands))
      return failure();
    ExtendedArithBuilder ab(rewriter, op.getLoc());
    operands->push_back(ab.i32(*aDtype));
    operands->push_back(ab.i32(*bDtype));
    operands->push_back(ab.i32(static_cast<int32_t>(op.getScaling())));
    operands->push_back(ab.i32(op.getFastAccum() ? 1 : 0));
    if (failed(callRuntime(rewriter, op, name, *operands)))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void slin::detail::populateScaledGemmPatterns(RewritePatternSet &patterns,
                                              RuntimeTarget target) {
  patterns.add<ScaledGemmToRuntimeCall>(patterns.getContext(), target);
}

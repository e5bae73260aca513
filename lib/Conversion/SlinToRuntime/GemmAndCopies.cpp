//===- GemmAndCopies.cpp - slin compute ops to runtime calls ----*- C++ -*-===//
//
// Lowers the slin ops that do work on the runtime's target: `slin.gemm`
// becomes one call of `slinrt_<target>_gemm_<dtype>`, `slin.concat` one
// converting copy per part (`slinrt_<target>_copy{1,2}d_<src>_<dst>`) into a
// row block of the destination, and `slin.prefer_per_part` a call of
// `slinrt_prefer_per_part`, the runtime's choice for the `auto` strategy.
// Each call takes the function's runtime context (getRuntimeContext).
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "splitlinear/Dialect/Slin/IR/SlinOps.h"
#include "splitlinear/Dialect/Slin/Utils/ArithUtils.h"
#include "splitlinear/Dialect/Slin/Utils/Utils.h"
#include "splitlinear/Runtime/Runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::slin;
using namespace mlir::slin::detail;

namespace {

/// The plain C function that decides the `auto` strategy at run time.
constexpr StringLiteral kPreferPerPartFn = "slinrt_prefer_per_part";

// The epilogue operand of a GEMM entry point is the dialect's Epilogue value.
static_assert(static_cast<int>(Epilogue::none) == SLINRT_EPILOGUE_NONE &&
                  static_cast<int>(Epilogue::bias) == SLINRT_EPILOGUE_BIAS &&
                  static_cast<int>(Epilogue::bias_grad) ==
                      SLINRT_EPILOGUE_BIAS_GRAD &&
                  static_cast<int>(Epilogue::accumulate) ==
                      SLINRT_EPILOGUE_ACCUMULATE,
              "slin::Epilogue and slinrt_epilogue must agree");

//===----------------------------------------------------------------------===//
// slin.gemm
//===----------------------------------------------------------------------===//

/// `slin.gemm` → `slinrt_<target>_gemm_<dtype>(ctx, A, B, D, bias, transA,
/// transB, epilogue)`. Without a bias operand an empty `memref<0xT>` stands
/// in (the runtime ignores it for the `none` and `accumulate` epilogues).
struct GemmToRuntimeCall : RuntimeCallPattern<GemmOp> {
  using RuntimeCallPattern::RuntimeCallPattern;

  LogicalResult
  matchAndRewrite(GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type elementType = op.getA().getType().getElementType();
    StringRef dtype = dtypeSuffix(elementType);
    if (dtype.empty())
      return rewriter.notifyMatchFailure(op, "no runtime GEMM for this type");
    FailureOr<SmallVector<Value>> operands = contextAndMemrefs(
        rewriter, op,
        {adaptor.getA(), adaptor.getB(), adaptor.getD(), adaptor.getBias()},
        elementType);
    if (failed(operands))
      return failure();
    ExtendedArithBuilder ab(rewriter, loc);
    operands->push_back(ab.i32(op.getTransposeA()));
    operands->push_back(ab.i32(op.getTransposeB()));
    operands->push_back(ab.i32(static_cast<int32_t>(op.getEpilogue())));

    StringRef name = gemmCallee(target, dtype);
    if (name.empty())
      return rewriter.notifyMatchFailure(op, "no runtime GEMM for this type");
    if (failed(callRuntime(rewriter, op, name, *operands)))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// slin.concat
//===----------------------------------------------------------------------===//

/// `slin.concat` → for each part, a subview of the destination's row block
/// `[off_i, off_i + N_i)` and one converting copy
/// `slinrt_<target>_copy{1,2}d_<src>_<dst>(ctx, part, block)`.
struct ConcatToRuntimeCopies : RuntimeCallPattern<ConcatOp> {
  using RuntimeCallPattern::RuntimeCallPattern;

  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value output = adaptor.getOutput();
    auto outputType = cast<MemRefType>(output.getType());
    StringRef dstType = dtypeSuffix(outputType.getElementType());
    if (dstType.empty())
      return rewriter.notifyMatchFailure(op, "no runtime copy to this type");
    for (Value part : adaptor.getParts())
      if (dtypeSuffix(cast<MemRefType>(part.getType()).getElementType())
              .empty())
        return rewriter.notifyMatchFailure(op, "no runtime copy of this type");
    FailureOr<Value> context = getRuntimeContext(rewriter, op);
    if (failed(context))
      return rewriter.notifyMatchFailure(op, "no runtime context available");

    // An output without elements needs no copy, and a static subview offset
    // into its empty dimension would not verify.
    if (llvm::is_contained(outputType.getShape(), 0)) {
      rewriter.eraseOp(op);
      return success();
    }
    ExtendedArithBuilder ab(rewriter, loc);
    int64_t rank = outputType.getRank();
    OpFoldResult zero = rewriter.getIndexAttr(0),
                 one = rewriter.getIndexAttr(1);
    OpFoldResult offset = zero;
    ValueRange parts = adaptor.getParts();
    for (auto [i, part] : llvm::enumerate(parts)) {
      // A statically empty part copies nothing; its block would start at the
      // end of the output, out of bounds for memref.subview.
      if (cast<MemRefType>(part.getType()).getDimSize(0) == 0)
        continue;
      OpFoldResult rows = sizeOf(rewriter, loc, part, 0);
      SmallVector<OpFoldResult> offsets{offset}, sizes{rows}, strides{one};
      if (rank == 2) {
        // Prefer a static column count from either side.
        auto partType = cast<MemRefType>(part.getType());
        Value colsFrom = partType.isDynamicDim(1) ? output : part;
        offsets.push_back(zero);
        sizes.push_back(sizeOf(rewriter, loc, colsFrom, 1));
        strides.push_back(one);
      }
      Value block = memref::SubViewOp::create(rewriter, loc, output, offsets,
                                              sizes, strides);
      FailureOr<Value> src = castToDynamic(rewriter, loc, part);
      FailureOr<Value> dst = castToDynamic(rewriter, loc, block);
      if (failed(src) || failed(dst))
        return rewriter.notifyMatchFailure(
            op, "part or output has a non-strided layout or a memory space");
      StringRef srcType =
          dtypeSuffix(cast<MemRefType>(part.getType()).getElementType());
      StringRef name = copyCallee(target, rank, srcType, dstType);
      if (name.empty())
        return rewriter.notifyMatchFailure(op, "no runtime copy from " +
                                                   srcType + " to " + dstType);
      if (failed(callRuntime(rewriter, op, name, {*context, *src, *dst})))
        return failure();
      if (i + 1 < parts.size())
        offset = slin::addOfr(rewriter, loc, offset, rows);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// slin.prefer_per_part
//===----------------------------------------------------------------------===//

/// `slin.prefer_per_part` → `slinrt_prefer_per_part(ctx, rows, parts, bytes)
/// != 0`, with `bytes = Σ_i N_i · K_i · sizeof(T_i)` computed from the parts'
/// sizes: the runtime holds the cost model and the caller's threshold.
struct PreferPerPartToRuntimeCall : OpConversionPattern<PreferPerPartOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PreferPerPartOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    FailureOr<Value> context = getRuntimeContext(rewriter, op);
    if (failed(context))
      return rewriter.notifyMatchFailure(op, "no runtime context available");
    ExtendedArithBuilder ab(rewriter, loc);
    auto value = [&](OpFoldResult ofr) {
      return getValueOrCreateConstantIndexOp(rewriter, loc, ofr);
    };
    Value bytes = ab.index(0);
    for (Value part : adaptor.getWeights()) {
      auto type = cast<MemRefType>(part.getType());
      Value elements = ab.mul(value(sizeOf(rewriter, loc, part, 0)),
                              value(sizeOf(rewriter, loc, part, 1)));
      bytes =
          ab.add(bytes, ab.mul(elements,
                               ab.index(elementBytes(type.getElementType()))));
    }
    Type i64 = rewriter.getI64Type();
    auto toI64 = [&](Value index) {
      return arith::IndexCastOp::create(rewriter, loc, i64, index).getResult();
    };
    SmallVector<Value> operands{
        *context, toI64(adaptor.getRows()),
        arith::ConstantIntOp::create(rewriter, loc, i64,
                                     adaptor.getWeights().size()),
        toI64(bytes)};
    Type i32 = rewriter.getI32Type();
    FailureOr<func::FuncOp> callee = lookupOrDeclare(
        rewriter, op, kPreferPerPartFn,
        FunctionType::get(op->getContext(), ValueRange(operands).getTypes(),
                          {i32}),
        /*cInterface=*/false);
    if (failed(callee))
      return rewriter.notifyMatchFailure(
          op, "symbol 'slinrt_prefer_per_part' exists with another type");
    Value answer =
        func::CallOp::create(rewriter, loc, *callee, operands).getResult(0);
    rewriter.replaceOpWithNewOp<arith::CmpIOp>(
        op, arith::CmpIPredicate::ne, answer,
        arith::ConstantIntOp::create(rewriter, loc, i32, 0));
    return success();
  }
};

} // namespace

void slin::detail::populateGemmAndCopyPatterns(RewritePatternSet &patterns,
                                               RuntimeTarget target) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<GemmToRuntimeCall, ConcatToRuntimeCopies>(ctx, target);
  patterns.add<PreferPerPartToRuntimeCall>(ctx);
}

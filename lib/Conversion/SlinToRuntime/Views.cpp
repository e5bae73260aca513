//===- Views.cpp - slin.is_adjacent/view_concat to metadata -----*- C++ -*-===//
//
// Lowers the ops that look at where parts lie rather than at their
// elements: `slin.is_adjacent` becomes the run-time form of the adjacency
// rule (buildAdjacencyPredicate, next to the static form in
// lib/Dialect/Slin/Analysis), and `slin.view_concat` a
// `memref.reinterpret_cast` of the first non-empty part's base buffer. Both
// are memref metadata arithmetic, without runtime calls.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "splitlinear/Dialect/Slin/Analysis/Adjacency.h"
#include "splitlinear/Dialect/Slin/IR/SlinOps.h"
#include "splitlinear/Dialect/Slin/Utils/ArithUtils.h"
#include "splitlinear/Dialect/Slin/Utils/Utils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::slin;

namespace {

/// `slin.is_adjacent` → the predicate documented on the op, rules (1)-(5) of
/// Adjacency.h, as a chain of arith ops over each part's metadata (no
/// control flow).
struct IsAdjacentToMetadata : OpConversionPattern<IsAdjacentOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(IsAdjacentOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value adjacent = buildAdjacencyPredicate(
        rewriter, op.getLoc(), adaptor.getParts(), op.getAlignment());
    if (!adjacent)
      return rewriter.notifyMatchFailure(op, "element type without a size");
    rewriter.replaceOp(op, adjacent);
    return success();
  }
};

/// `slin.view_concat` → `memref.reinterpret_cast` of the first non-empty
/// part's base buffer (part 0's when all are empty) at that part's offset,
/// with `Σ N_i` rows and the common row stride.
struct ViewConcatToReinterpretCast : OpConversionPattern<ViewConcatOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ViewConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ExtendedArithBuilder ab(rewriter, loc);
    ValueRange parts = adaptor.getParts();
    MemRefType resultType = op.getType();
    bool isMatrix = resultType.getRank() == 2;

    // Running choice: the first non-empty part so far (part 0 until one is
    // found). Row stride and columns matter only for a matrix whose result
    // type leaves them dynamic.
    bool needCols = isMatrix && resultType.isDynamicDim(1);
    Value seen, base, offset, ld, cols;
    OpFoldResult total = rewriter.getIndexAttr(0);
    for (auto [i, part] : llvm::enumerate(parts)) {
      PartLayout layout = readPartLayout(rewriter, loc, part);
      auto partType = cast<MemRefType>(part.getType());
      total = slin::addOfr(rewriter, loc, total,
                           partType.isDynamicDim(0)
                               ? OpFoldResult(layout.rows)
                               : rewriter.getIndexAttr(partType.getDimSize(0)));
      Value nonEmpty = ab.ne(layout.rows, 0);
      if (i == 0) {
        base = layout.base;
        offset = layout.offset;
        ld = layout.rowStride;
        cols = layout.cols;
        seen = nonEmpty;
        continue;
      }
      Value isFirst = ab._and(nonEmpty, ab._not(seen));
      base = ab.select(isFirst, layout.base, base);
      offset = ab.select(isFirst, layout.offset, offset);
      if (isMatrix)
        ld = ab.select(isFirst, layout.rowStride, ld);
      if (needCols)
        cols = ab.select(isFirst, layout.cols, cols);
      if (i + 1 < parts.size())
        seen = ab._or(seen, nonEmpty);
    }

    SmallVector<OpFoldResult> sizes{total}, strides;
    if (isMatrix) {
      sizes.push_back(needCols
                          ? OpFoldResult(cols)
                          : rewriter.getIndexAttr(resultType.getDimSize(1)));
      strides = {ld, rewriter.getIndexAttr(1)};
    } else {
      strides = {rewriter.getIndexAttr(1)};
    }
    SmallVector<int64_t> staticSizes, staticStrides;
    for (OpFoldResult size : sizes)
      staticSizes.push_back(
          getConstantIntValue(size).value_or(ShapedType::kDynamic));
    for (OpFoldResult stride : strides)
      staticStrides.push_back(
          getConstantIntValue(stride).value_or(ShapedType::kDynamic));
    auto viewType =
        MemRefType::get(staticSizes, resultType.getElementType(),
                        StridedLayoutAttr::get(
                            getContext(), ShapedType::kDynamic, staticStrides),
                        resultType.getMemorySpace());
    Value view = memref::ReinterpretCastOp::create(
        rewriter, loc, viewType, base, offset, sizes, strides);
    if (viewType != resultType) {
      if (!memref::CastOp::areCastCompatible(TypeRange{viewType},
                                             TypeRange{resultType}))
        return rewriter.notifyMatchFailure(op, "result type is not a strided "
                                               "type the view can be cast to");
      view = memref::CastOp::create(rewriter, loc, resultType, view);
    }
    rewriter.replaceOp(op, view);
    return success();
  }
};

} // namespace

void slin::detail::populateViewPatterns(RewritePatternSet &patterns) {
  patterns.add<IsAdjacentToMetadata, ViewConcatToReinterpretCast>(
      patterns.getContext());
}

//===- Views.cpp - slin.is_adjacent/view_concat to metadata -----*- C++ -*-===//
//
// Lowers the ops that look at where parts lie rather than at their
// elements: `slin.is_adjacent` becomes the run-time form of the adjacency
// rule, and `slin.view_concat` a `memref.reinterpret_cast` of the first
// non-empty part's base buffer. Both are memref metadata arithmetic, without
// runtime calls.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "splitlinear/Dialect/Slin/IR/SlinOps.h"
#include "splitlinear/Dialect/Slin/Utils/ArithUtils.h"
#include "splitlinear/Dialect/Slin/Utils/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::slin;
using namespace mlir::slin::detail;

namespace {

/// The run-time layout of one part, from memref.extract_strided_metadata
/// (`cols` and `colStride` are null for rank 1).
struct PartLayout {
  Value base, offset, rows, cols, rowStride, colStride;
};

/// Reads the layout of `part` with one memref.extract_strided_metadata.
PartLayout readLayout(OpBuilder &b, Location loc, Value part) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, part);
  PartLayout layout;
  layout.base = meta.getBaseBuffer();
  layout.offset = meta.getOffset();
  layout.rows = meta.getSizes()[0];
  layout.rowStride = meta.getStrides()[0];
  if (meta.getSizes().size() == 2) {
    layout.cols = meta.getSizes()[1];
    layout.colStride = meta.getStrides()[1];
  }
  return layout;
}

/// `slin.is_adjacent` → the predicate documented on the op, as a chain of
/// arith.andi / arith.select over each part's metadata (no control flow).
/// Running state over the non-empty parts seen so far: their base address,
/// row stride `ld`, columns `K`, first offset and the offset where the last
/// one ends. Besides the documented conditions, non-empty matrix parts must
/// have equal column counts (the verifier can only check static ones; a view
/// of parts of different widths would be meaningless).
struct IsAdjacentToMetadata : OpConversionPattern<IsAdjacentOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(IsAdjacentOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ExtendedArithBuilder ab(rewriter, loc);
    ValueRange parts = adaptor.getParts();
    Type elementType =
        cast<MemRefType>(parts.front().getType()).getElementType();
    // (2) A view cannot convert: differing element types never qualify.
    for (Value part : parts)
      if (cast<MemRefType>(part.getType()).getElementType() != elementType) {
        rewriter.replaceOp(op, ab.boolean(false));
        return success();
      }
    int64_t bytesPerElement = elementBytes(elementType);
    if (bytesPerElement == 0)
      return rewriter.notifyMatchFailure(op, "element type without a size");
    bool isMatrix = cast<MemRefType>(parts.front().getType()).getRank() == 2;

    Value ok = ab.boolean(true), seen = ab.boolean(false);
    Value zero = ab.index(0), one = ab.index(1);
    Value baseAddress = zero, firstOffset = zero, end = zero, total = zero;
    Value ld = one, cols = one;
    // Every condition below is built in its own statement so that the IR
    // does not depend on the compiler's argument evaluation order.
    for (Value part : parts) {
      PartLayout layout = readLayout(rewriter, loc, part);
      Value address =
          memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, part);
      Value nonEmpty = ab.ne(layout.rows, 0);
      Value notSeen = ab._not(seen);
      Value isFirst = ab._and(nonEmpty, notSeen);

      // (3) Contiguous within a row, one common row stride (and width).
      Value cond;
      Value newLd = one;
      if (isMatrix) {
        newLd = ab.select(isFirst, layout.rowStride, ld);
        Value newCols = ab.select(isFirst, layout.cols, cols);
        Value commonLd = ab.eq(layout.rowStride, newLd);
        Value commonCols = ab.eq(layout.cols, newCols);
        Value unitColStride = ab.eq(layout.colStride, 1);
        Value oneCol = ab.eq(layout.cols, 1);
        Value rowContiguous = ab._or(unitColStride, oneCol);
        cond = ab._and(rowContiguous, ab._and(commonLd, commonCols));
        cols = newCols;
      } else {
        Value unitStride = ab.eq(layout.rowStride, 1);
        Value oneElement = ab.eq(layout.rows, 1);
        cond = ab._or(unitStride, oneElement);
      }
      // (1) One base allocation; (4) starts where the previous part ends.
      Value equalBase = ab.eq(address, baseAddress);
      Value sameBase = ab._or(isFirst, equalBase);
      Value startsAtEnd = ab.eq(layout.offset, end);
      Value chained = ab._or(isFirst, startsAtEnd);
      cond = ab._and(cond, ab._and(sameBase, chained));
      // Empty parts impose nothing.
      Value empty = ab._not(nonEmpty);
      ok = ab._and(ok, ab._or(empty, cond));

      baseAddress = ab.select(isFirst, address, baseAddress);
      firstOffset = ab.select(isFirst, layout.offset, firstOffset);
      ld = newLd;
      Value partEnd = ab.add(layout.offset, ab.mul(layout.rows, ld));
      end = ab.select(nonEmpty, partEnd, end);
      if (isMatrix)
        total = ab.add(total, layout.rows);
      seen = ab._or(seen, nonEmpty);
    }
    // (3) Rows of the view must not overlap: ld >= K when it has two rows.
    if (isMatrix) {
      Value oneRowAtMost = ab._not(ab.sgt(total, ab.index(1)));
      Value noOverlap = ab.sge(ld, cols);
      ok = ab._and(ok, ab._or(oneRowAtMost, noOverlap));
    }
    // (5) Alignment of the view's first element (only if there is one).
    Value byteOffset = ab.mul(firstOffset, ab.index(bytesPerElement));
    Value firstByte = ab.add(baseAddress, byteOffset);
    Value misalignment = arith::RemUIOp::create(rewriter, loc, firstByte,
                                                ab.index(op.getAlignment()));
    Value aligned = ab.eq(misalignment, 0);
    Value allEmpty = ab._not(seen);
    ok = ab._and(ok, ab._or(allEmpty, aligned));
    rewriter.replaceOp(op, ok);
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
      PartLayout layout = readLayout(rewriter, loc, part);
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

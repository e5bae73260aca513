//===- AdjacencyPredicate.cpp - run-time adjacency rule ---------*- C++ -*-===//
//
// Implements buildAdjacencyPredicate, the run-time form of the adjacency
// rules (1)-(5) of Adjacency.h: memref metadata arithmetic that
// `slin.is_adjacent` lowers to when classifyAdjacency (Adjacency.cpp) could
// not decide at compile time. It lives next to the static form so that the
// two stay one rule.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Dialect/Slin/Analysis/Adjacency.h"
#include "splitlinear/Dialect/Slin/Utils/ArithUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::slin;

/// The results of one memref.extract_strided_metadata, by name.
PartLayout mlir::slin::readPartLayout(OpBuilder &b, Location loc, Value part) {
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

/// A chain of arith.andi / arith.select over each part's metadata. Running
/// state over the non-empty parts seen so far: their base address, row
/// stride `ld`, columns `K`, first offset and the offset where the last one
/// ends. Rule (3) includes equal column counts of non-empty matrix parts (the
/// verifier of `slin.is_adjacent` can only check static ones; a view of parts
/// of different widths would be meaningless).
Value mlir::slin::buildAdjacencyPredicate(OpBuilder &b, Location loc,
                                          ValueRange parts, int64_t alignment) {
  ExtendedArithBuilder ab(b, loc);
  Type elementType = cast<MemRefType>(parts.front().getType()).getElementType();
  // (2) A view cannot convert: differing element types never qualify.
  for (Value part : parts)
    if (cast<MemRefType>(part.getType()).getElementType() != elementType)
      return ab.boolean(false);
  if (!elementType.isIntOrFloat())
    return Value();
  int64_t bytesPerElement =
      llvm::divideCeil(elementType.getIntOrFloatBitWidth(), 8);
  bool isMatrix = cast<MemRefType>(parts.front().getType()).getRank() == 2;

  Value ok = ab.boolean(true), seen = ab.boolean(false);
  Value zero = ab.index(0), one = ab.index(1);
  Value baseAddress = zero, firstOffset = zero, end = zero, total = zero;
  Value ld = one, cols = one;
  // Every condition below is built in its own statement so that the IR
  // does not depend on the compiler's argument evaluation order.
  for (Value part : parts) {
    PartLayout layout = readPartLayout(b, loc, part);
    Value address =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, part);
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
  Value misalignment =
      arith::RemUIOp::create(b, loc, firstByte, ab.index(alignment));
  Value aligned = ab.eq(misalignment, 0);
  Value allEmpty = ab._not(seen);
  return ab._and(ok, ab._or(allEmpty, aligned));
}

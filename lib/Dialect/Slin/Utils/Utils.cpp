//===- Utils.cpp - IR helpers shared by the slin passes ---------*- C++ -*-===//
//
// Implements the helpers of Utils.h.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Dialect/Slin/Utils/Utils.h"
#include "splitlinear/Dialect/Slin/IR/SlinOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

OpFoldResult slin::sizeOf(OpBuilder &b, Location loc, Value memref,
                          int64_t dim) {
  auto type = cast<MemRefType>(memref.getType());
  if (!type.isDynamicDim(dim))
    return b.getIndexAttr(type.getDimSize(dim));
  return memref::DimOp::create(b, loc, memref, dim).getResult();
}

OpFoldResult slin::addOfr(OpBuilder &b, Location loc, OpFoldResult a,
                          OpFoldResult c) {
  std::optional<int64_t> ca = getConstantIntValue(a),
                         cc = getConstantIntValue(c);
  int64_t sum;
  if (ca && cc && !llvm::AddOverflow(*ca, *cc, sum))
    return b.getIndexAttr(sum);
  return arith::AddIOp::create(b, loc,
                               getValueOrCreateConstantIndexOp(b, loc, a),
                               getValueOrCreateConstantIndexOp(b, loc, c))
      .getResult();
}

SmallVector<int64_t> slin::stackedShape(ValueRange parts) {
  int64_t rows = 0;
  for (Value p : parts) {
    int64_t n = cast<MemRefType>(p.getType()).getDimSize(0);
    if (ShapedType::isDynamic(n) || ShapedType::isDynamic(rows) ||
        llvm::AddOverflow(rows, n, rows))
      rows = ShapedType::kDynamic;
  }
  if (cast<MemRefType>(parts.front().getType()).getRank() == 1)
    return {rows};
  int64_t cols = ShapedType::kDynamic;
  for (Value p : parts) {
    int64_t k = cast<MemRefType>(p.getType()).getDimSize(1);
    if (!ShapedType::isDynamic(k))
      cols = k;
  }
  return {rows, cols};
}

Value slin::buildConcatCopy(OpBuilder &b, Location loc, ValueRange parts,
                            Type elementType) {
  auto type = MemRefType::get(stackedShape(parts), elementType);
  SmallVector<Value> dynSizes;
  if (type.isDynamicDim(0)) {
    Value sum = memref::DimOp::create(b, loc, parts.front(), 0);
    for (Value p : parts.drop_front())
      sum = arith::AddIOp::create(b, loc, sum,
                                  memref::DimOp::create(b, loc, p, 0));
    dynSizes.push_back(sum);
  }
  if (type.getRank() == 2 && type.isDynamicDim(1))
    dynSizes.push_back(memref::DimOp::create(b, loc, parts.front(), 1));
  Value buffer = AllocOp::create(b, loc, type, dynSizes);
  ConcatOp::create(b, loc, parts, buffer);
  return buffer;
}

LogicalResult
slin::applyPatternsWithoutFolding(Operation *op,
                                  const FrozenRewritePatternSet &patterns) {
  GreedyRewriteConfig config;
  config.enableFolding(false);
  return applyPatternsGreedily(op, patterns, config);
}

//===- ElideConcat.cpp - replace split parts by one buffer ------*- C++ -*-===//
//
// Implements the `slin-elide-concat` pass: every slin.linear /
// slin.linear_dgrad with several weight parts gets one combined weight (and,
// independently, one combined bias): a zero-copy view where adjacency is
// proven, a materializing concat where it is disproven, and a run-time
// checked view with a concat fallback otherwise.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Dialect/Slin/IR/SlinOps.h"
#include "splitlinear/Dialect/Slin/Transforms/Adjacency.h"
#include "splitlinear/Dialect/Slin/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/MathExtras.h"

namespace mlir {
namespace slin {
#define GEN_PASS_DEF_SLINELIDECONCAT
#include "splitlinear/Dialect/Slin/Transforms/Passes.h.inc"
} // namespace slin
} // namespace mlir

using namespace mlir;
using namespace mlir::slin;

namespace {

/// Counters the patterns update (owned by the pass).
struct ElideStats {
  llvm::Statistic *views, *copies, *checked, *droppedEmpty, *perPart;
  bool remarks;
};

/// The combined buffer replacing a group of parts. `freeUnless` tells who
/// frees it: null and !alwaysOwned for a view; alwaysOwned for a copy; an i1
/// that is false when the buffer was allocated, for a checked view.
struct Combined {
  Value buffer;
  bool alwaysOwned = false;
  Value isView;
};

/// The memref type of the combined buffer when it is a view: rows = Σ N_i
/// (static if all are and the sum fits in int64), the parts' columns, unit
/// inner stride, dynamic row stride and offset.
MemRefType viewType(ValueRange parts, Type elementType) {
  auto first = cast<MemRefType>(parts.front().getType());
  int64_t rows = 0;
  for (Value p : parts) {
    int64_t n = cast<MemRefType>(p.getType()).getDimSize(0);
    if (ShapedType::isDynamic(n) || ShapedType::isDynamic(rows) ||
        llvm::AddOverflow(rows, n, rows))
      rows = ShapedType::kDynamic;
  }
  MLIRContext *ctx = elementType.getContext();
  if (first.getRank() == 1)
    return MemRefType::get({rows}, elementType,
                           StridedLayoutAttr::get(ctx, ShapedType::kDynamic, {1}));
  int64_t cols = ShapedType::kDynamic;
  for (Value p : parts) {
    int64_t k = cast<MemRefType>(p.getType()).getDimSize(1);
    if (!ShapedType::isDynamic(k))
      cols = k;
  }
  return MemRefType::get(
      {rows, cols}, elementType,
      StridedLayoutAttr::get(ctx, ShapedType::kDynamic,
                             {ShapedType::kDynamic, 1}));
}

/// Allocates a fresh identity-layout buffer of `type`'s shape and copies the
/// parts into it with slin.concat.
Value buildCopy(OpBuilder &rewriter, Location loc, ValueRange parts,
                MemRefType type) {
  auto allocType = MemRefType::get(type.getShape(), type.getElementType());
  SmallVector<Value> dynSizes;
  if (type.isDynamicDim(0)) {
    Value sum = arith::ConstantIndexOp::create(rewriter, loc, 0);
    for (Value p : parts) {
      Value n = memref::DimOp::create(rewriter, loc, p, 0);
      sum = arith::AddIOp::create(rewriter, loc, sum, n);
    }
    dynSizes.push_back(sum);
  }
  if (type.getRank() == 2 && type.isDynamicDim(1))
    dynSizes.push_back(memref::DimOp::create(rewriter, loc, parts.front(), 1));
  auto alloc = memref::AllocOp::create(rewriter, loc, allocType, dynSizes);
  markRuntimeBuffer(alloc);
  Value buffer = alloc;
  ConcatOp::create(rewriter, loc, parts, buffer);
  return buffer;
}

/// Builds the combined buffer for `parts` according to what the static
/// analysis knows about their adjacency.
Combined combineParts(PatternRewriter &rewriter, Operation *op,
                      StringRef what, ValueRange parts, Type elementType,
                      int64_t alignment, const ElideStats &stats) {
  Location loc = op->getLoc();
  MemRefType type = viewType(parts, elementType);
  std::string reason;
  Adjacency adjacency =
      classifyAdjacency(parts, elementType, alignment, &reason);
  if (stats.remarks) {
    InFlightDiagnostic remark = op->emitRemark() << what << " parts: ";
    if (adjacency == Adjacency::Proven)
      remark << "zero-copy view (proven adjacent)";
    else
      remark << (adjacency == Adjacency::Disproven ? "copy" : "run-time check")
             << " (" << reason << ")";
  }
  switch (adjacency) {
  case Adjacency::Proven:
    ++*stats.views;
    return {ViewConcatOp::create(rewriter, loc, type, parts), false, Value()};
  case Adjacency::Disproven:
    ++*stats.copies;
    return {buildCopy(rewriter, loc, parts, type), true, Value()};
  case Adjacency::Unknown:
    break;
  }
  ++*stats.checked;
  Value ok = IsAdjacentOp::create(rewriter, loc, rewriter.getI1Type(), parts,
                                  rewriter.getI64IntegerAttr(alignment));
  auto ifOp = scf::IfOp::create(
      rewriter, loc, ok,
      [&](OpBuilder &b, Location l) {
        Value view = ViewConcatOp::create(b, l, type, parts);
        scf::YieldOp::create(b, l, view);
      },
      [&](OpBuilder &b, Location l) {
        Value copy = buildCopy(b, l, parts, type);
        Value cast = memref::CastOp::create(b, l, type, copy);
        scf::YieldOp::create(b, l, cast);
      });
  return {ifOp.getResult(0), false, ok};
}

/// Frees what combineParts allocated, after `user`.
void releaseCombined(OpBuilder &rewriter, Location loc,
                     const Combined &combined) {
  if (combined.alwaysOwned) {
    markRuntimeBuffer(memref::DeallocOp::create(rewriter, loc, combined.buffer));
    return;
  }
  if (!combined.isView)
    return;
  scf::IfOp::create(
      rewriter, loc, combined.isView,
      [&](OpBuilder &b, Location l) { scf::YieldOp::create(b, l); },
      [&](OpBuilder &b, Location l) {
        markRuntimeBuffer(memref::DeallocOp::create(b, l, combined.buffer));
        scf::YieldOp::create(b, l);
      });
}

/// Indices of the parts that are not statically empty (at least one index).
SmallVector<unsigned> nonEmptyParts(ValueRange weights) {
  SmallVector<unsigned> kept;
  for (auto [i, w] : llvm::enumerate(weights))
    if (cast<MemRefType>(w.getType()).getDimSize(0) != 0)
      kept.push_back(i);
  if (kept.empty())
    kept.push_back(0);
  return kept;
}

/// Counts (and reports) statically empty parts that were dropped.
void noteDropped(Operation *op, unsigned count, const ElideStats &stats) {
  if (!count)
    return;
  *stats.droppedEmpty += count;
  if (stats.remarks)
    op->emitRemark() << "dropped " << count << " statically empty part"
                     << (count == 1 ? "" : "s");
}

SmallVector<Value> select(ValueRange values, ArrayRef<unsigned> indices) {
  return llvm::map_to_vector(indices, [&](unsigned i) { return values[i]; });
}

/// The per-part fallback of a slin.linear / slin.linear_dgrad whose weights
/// are not proven adjacent (`slin-elide-concat{per-part-max-rows=R}`), built
/// at the rewriter's insertion point:
///
///   if (is_adjacent(weights))       fused(view of the weights)   [unknown only]
///   else if (dim(rows, 0) <= R)     perPart()                    [op kept, marked]
///   else                            fused(copy); dealloc copy
///
/// Fails, building nothing, when the weights are proven adjacent.
LogicalResult emitPerPartFallback(
    PatternRewriter &rewriter, Operation *op, ValueRange weights,
    Type elementType, Value rows, int64_t alignment, int64_t perPartMaxRows,
    const ElideStats &stats, function_ref<void(Location)> perPart,
    function_ref<void(Location, Value)> fused) {
  std::string reason;
  Adjacency adjacency =
      classifyAdjacency(weights, elementType, alignment, &reason);
  if (adjacency == Adjacency::Proven)
    return failure();
  ++*stats.perPart;
  if (stats.remarks)
    op->emitRemark() << "weight parts: "
                     << (adjacency == Adjacency::Unknown ? "run-time check, "
                                                         : "")
                     << "per-part GEMMs for inputs of at most "
                     << perPartMaxRows << " rows, else copy (" << reason << ")";
  Location loc = op->getLoc();
  auto copyOrPerPart = [&](Location l) {
    Value m = memref::DimOp::create(rewriter, l, rows, 0);
    Value limit = arith::ConstantIndexOp::create(rewriter, l, perPartMaxRows);
    Value small = arith::CmpIOp::create(rewriter, l, arith::CmpIPredicate::ule,
                                        m, limit);
    scf::IfOp::create(
        rewriter, l, small,
        [&](OpBuilder &, Location l2) {
          perPart(l2);
          scf::YieldOp::create(rewriter, l2);
        },
        [&](OpBuilder &, Location l2) {
          Value copy =
              buildCopy(rewriter, l2, weights, viewType(weights, elementType));
          fused(l2, copy);
          markRuntimeBuffer(memref::DeallocOp::create(rewriter, l2, copy));
          scf::YieldOp::create(rewriter, l2);
        });
  };
  if (adjacency == Adjacency::Disproven) {
    copyOrPerPart(loc);
    return success();
  }
  Value ok = IsAdjacentOp::create(rewriter, loc, rewriter.getI1Type(), weights,
                                  rewriter.getI64IntegerAttr(alignment));
  scf::IfOp::create(
      rewriter, loc, ok,
      [&](OpBuilder &, Location l) {
        fused(l, ViewConcatOp::create(rewriter, l,
                                      viewType(weights, elementType), weights));
        scf::YieldOp::create(rewriter, l);
      },
      [&](OpBuilder &, Location l) {
        copyOrPerPart(l);
        scf::YieldOp::create(rewriter, l);
      });
  return success();
}

/// Replaces the weight (and bias) parts of a slin.linear by one buffer each.
struct ElideLinearConcat : OpRewritePattern<LinearOp> {
  ElideLinearConcat(MLIRContext *ctx, int64_t alignment, ElideStats stats,
                    int64_t perPartMaxRows)
      : OpRewritePattern(ctx), alignment(alignment), stats(stats),
        perPartMaxRows(perPartMaxRows) {}

  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getWeights().size() < 2)
      return rewriter.notifyMatchFailure(op, "one weight part: nothing to combine");
    if (op->hasAttr(kPerPartAttrName))
      return rewriter.notifyMatchFailure(op, "parts kept for per-part GEMMs");
    Location loc = op.getLoc();
    SmallVector<unsigned> kept = nonEmptyParts(op.getWeights());
    noteDropped(op, op.getWeights().size() - kept.size(), stats);
    SmallVector<Value> weights = select(op.getWeights(), kept);
    SmallVector<Value> biases;
    if (!op.getBiases().empty())
      biases = select(op.getBiases(), kept);
    Type elementType = op.getInput().getType().getElementType();

    if (perPartMaxRows > 0 && weights.size() > 1 &&
        succeeded(rewriteWithPerPartFallback(op, weights, biases, elementType,
                                             rewriter)))
      return success();
    Combined weight{weights.front()}, bias{biases.empty() ? Value() : biases.front()};
    if (weights.size() > 1) {
      weight = combineParts(rewriter, op, "weight", weights, elementType,
                            alignment, stats);
      if (!biases.empty())
        bias = combineParts(rewriter, op, "bias", biases, elementType,
                            alignment, stats);
    }
    auto newOp = LinearOp::create(
        rewriter, loc, op.getInput(), ValueRange{weight.buffer},
        bias.buffer ? ValueRange{bias.buffer} : ValueRange{}, op.getOutput());
    newOp->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    releaseCombined(rewriter, loc, weight);
    releaseCombined(rewriter, loc, bias);
    rewriter.eraseOp(op);
    return success();
  }

  /// For weights not proven adjacent: a view when the run-time check allows
  /// it, else one GEMM per part for inputs of at most perPartMaxRows rows, else
  /// the copy. Fails (changing nothing) when the weights are proven adjacent.
  LogicalResult rewriteWithPerPartFallback(LinearOp op, ValueRange weights,
                                           ValueRange biases, Type elementType,
                                           PatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    // The fused op on a combined weight, with the bias combined separately.
    auto fusedLinear = [&](Location l, Value weight) {
      Combined bias{biases.empty() ? Value() : biases.front()};
      if (biases.size() > 1)
        bias = combineParts(rewriter, op, "bias", biases, elementType,
                            alignment, stats);
      auto newOp = LinearOp::create(
          rewriter, l, op.getInput(), ValueRange{weight},
          bias.buffer ? ValueRange{bias.buffer} : ValueRange{}, op.getOutput());
      newOp->setDiscardableAttrs(op->getDiscardableAttrDictionary());
      releaseCombined(rewriter, l, bias);
    };
    auto perPart = [&](Location l) {
      auto newOp = LinearOp::create(rewriter, l, op.getInput(), weights, biases,
                                    op.getOutput());
      newOp->setDiscardableAttrs(op->getDiscardableAttrDictionary());
      newOp->setAttr(kPerPartAttrName, rewriter.getUnitAttr());
    };
    if (failed(emitPerPartFallback(rewriter, op, weights, elementType,
                                   op.getInput(), alignment, perPartMaxRows,
                                   stats, perPart, fusedLinear)))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }

  int64_t alignment;
  ElideStats stats;
  int64_t perPartMaxRows = 0;
};

/// Replaces the weight parts of a slin.linear_dgrad by one buffer, exactly as
/// for the forward op (dgrad reads the same weights); with per-part-max-rows,
/// weights not proven adjacent get the same per-part fallback (one GEMM per
/// part, accumulating into dx, for at most that many rows of dy).
struct ElideDgradConcat : OpRewritePattern<LinearDgradOp> {
  ElideDgradConcat(MLIRContext *ctx, int64_t alignment, ElideStats stats,
                   int64_t perPartMaxRows)
      : OpRewritePattern(ctx), alignment(alignment), stats(stats),
        perPartMaxRows(perPartMaxRows) {}

  LogicalResult matchAndRewrite(LinearDgradOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getWeights().size() < 2)
      return rewriter.notifyMatchFailure(op, "one weight part: nothing to combine");
    if (op->hasAttr(kPerPartAttrName))
      return rewriter.notifyMatchFailure(op, "parts kept for per-part GEMMs");
    Location loc = op.getLoc();
    SmallVector<unsigned> kept = nonEmptyParts(op.getWeights());
    noteDropped(op, op.getWeights().size() - kept.size(), stats);
    SmallVector<Value> weights = select(op.getWeights(), kept);
    Type elementType = op.getGradOutput().getType().getElementType();
    auto fusedDgrad = [&](Location l, Value weight) {
      auto newOp = LinearDgradOp::create(rewriter, l, op.getGradOutput(),
                                         ValueRange{weight}, op.getGradInput());
      newOp->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    };
    auto perPart = [&](Location l) {
      // Statically empty parts have no columns in dy: dropping them leaves
      // the column blocks of the others where they are.
      auto newOp = LinearDgradOp::create(rewriter, l, op.getGradOutput(),
                                         weights, op.getGradInput());
      newOp->setDiscardableAttrs(op->getDiscardableAttrDictionary());
      newOp->setAttr(kPerPartAttrName, rewriter.getUnitAttr());
    };
    if (perPartMaxRows > 0 && weights.size() > 1 &&
        succeeded(emitPerPartFallback(rewriter, op, weights, elementType,
                                      op.getGradOutput(), alignment,
                                      perPartMaxRows, stats, perPart,
                                      fusedDgrad))) {
      rewriter.eraseOp(op);
      return success();
    }
    Combined weight{weights.front()};
    if (weights.size() > 1)
      weight = combineParts(rewriter, op, "weight", weights, elementType,
                            alignment, stats);
    fusedDgrad(loc, weight.buffer);
    releaseCombined(rewriter, loc, weight);
    rewriter.eraseOp(op);
    return success();
  }

  int64_t alignment;
  ElideStats stats;
  int64_t perPartMaxRows = 0;
};

struct SlinElideConcatPass
    : public slin::impl::SlinElideConcatBase<SlinElideConcatPass> {
  using Base::Base;

  void runOnOperation() override {
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      getOperation()->emitError()
          << "slin-elide-concat: alignment must be a positive power of two, got "
          << alignment.getValue();
      return signalPassFailure();
    }
    ElideStats stats{&numViews,        &numCopies,  &numChecked,
                     &numDroppedEmpty, &numPerPart, emitRemarks};
    RewritePatternSet patterns(&getContext());
    patterns.add<ElideLinearConcat>(&getContext(), alignment, stats,
                                    perPartMaxRows);
    patterns.add<ElideDgradConcat>(&getContext(), alignment, stats,
                                   perPartMaxRows);
    // Each op is rewritten once into a one-part op; nothing to fold further.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      return signalPassFailure();
  }
};
} // namespace

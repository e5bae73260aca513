//===- ElideConcat.cpp - replace split parts by one buffer ------*- C++ -*-===//
//
// Implements the `slin-elide-concat` pass: every slin.linear /
// slin.linear_dgrad / slin.scaled_linear with several weight parts gets one
// combined weight (and, independently, one combined bias; the FP8 parts of
// slin.scaled_linear become one FP8 buffer): a zero-copy view where
// adjacency is proven, a materializing concat where it is disproven, and a
// run-time checked view with a concat fallback otherwise. Ops with the `auto`
// strategy whose weights are not proven adjacent choose at run time
// (`slin.prefer_per_part`) between that copy and one GEMM per part.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Dialect/Slin/IR/SlinOps.h"
#include "splitlinear/Dialect/Slin/Analysis/Adjacency.h"
#include "splitlinear/Dialect/Slin/Transforms/Passes.h"
#include "splitlinear/Dialect/Slin/Utils/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
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

/// The memref type of the combined buffer when it is a view: the parts'
/// stacked shape, unit inner stride, dynamic row stride and offset.
MemRefType viewType(ValueRange parts, Type elementType) {
  SmallVector<int64_t> shape = stackedShape(parts);
  SmallVector<int64_t> strides(shape.size(), 1);
  if (shape.size() == 2)
    strides.front() = ShapedType::kDynamic;
  return MemRefType::get(shape, elementType,
                         StridedLayoutAttr::get(elementType.getContext(),
                                                ShapedType::kDynamic, strides));
}

/// A fresh runtime buffer holding a copy of `parts` (see buildConcatCopy).
Value buildCopy(OpBuilder &b, Location loc, ValueRange parts,
                MemRefType type) {
  return buildConcatCopy(b, loc, parts, type.getElementType());
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
    DeallocOp::create(rewriter, loc, combined.buffer);
    return;
  }
  if (!combined.isView)
    return;
  scf::IfOp::create(
      rewriter, loc, combined.isView,
      [&](OpBuilder &b, Location l) { scf::YieldOp::create(b, l); },
      [&](OpBuilder &b, Location l) {
        DeallocOp::create(b, l, combined.buffer);
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

/// `path` as an i32 constant when the op being rewritten reports its path
/// (`withPath`), else null.
Value pathConstant(OpBuilder &b, Location loc, Path path, bool withPath) {
  if (!withPath)
    return Value();
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                      static_cast<int64_t>(path));
}

/// The path of a combined weight: a view (0), a copy (1), or for a checked
/// view `select(isView, 0, 1)`; null unless `withPath`.
Value combinedPath(OpBuilder &b, Location loc, const Combined &combined,
                   bool withPath) {
  if (!withPath)
    return Value();
  if (combined.isView)
    return arith::SelectOp::create(
        b, loc, combined.isView, pathConstant(b, loc, Path::view, true),
        pathConstant(b, loc, Path::copy, true));
  return pathConstant(b, loc, combined.alwaysOwned ? Path::copy : Path::view,
                      true);
}

/// `scf.if cond` whose branches build what `thenFn` / `elseFn` build; each
/// returns its path, which the if yields when `withPath`.
Value buildIf(OpBuilder &b, Location loc, Value cond, bool withPath,
              function_ref<Value(Location)> thenFn,
              function_ref<Value(Location)> elseFn) {
  auto branch = [&](function_ref<Value(Location)> fn) {
    return [&, fn](OpBuilder &nested, Location l) {
      Value path = fn(l);
      if (withPath)
        scf::YieldOp::create(nested, l, path);
      else
        scf::YieldOp::create(nested, l);
    };
  };
  // The result types are inferred from the branches' yields.
  auto ifOp = scf::IfOp::create(b, loc, cond, branch(thenFn), branch(elseFn));
  return withPath ? ifOp.getResult(0) : Value();
}

/// The run-time choice of the `auto` strategy for a slin.linear /
/// slin.linear_dgrad / slin.scaled_linear whose weights are not proven
/// adjacent, built at the rewriter's insertion point:
///
///   if (is_adjacent(weights))            fused(view)     [unknown only]
///   else if (prefer_per_part(rows, ws))  perPart()       [parts kept]
///   else                                 fused(copy); dealloc copy
///
/// Returns the path taken (null unless `withPath`). Fails, building nothing,
/// when the weights are proven adjacent.
FailureOr<Value> emitAutoChoice(PatternRewriter &rewriter, Operation *op,
                                ValueRange weights, Type elementType,
                                Value rows, int64_t alignment,
                                const ElideStats &stats, bool withPath,
                                function_ref<void(Location)> perPart,
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
                     << "per-part GEMMs or copy, chosen at run time ("
                     << reason << ")";
  Location loc = op->getLoc();
  auto copyOrPerPart = [&](Location l) -> Value {
    Value m = memref::DimOp::create(rewriter, l, rows, 0);
    Value prefer = PreferPerPartOp::create(rewriter, l, rewriter.getI1Type(),
                                           m, weights);
    return buildIf(
        rewriter, l, prefer, withPath,
        [&](Location l2) {
          perPart(l2);
          return pathConstant(rewriter, l2, Path::per_part, withPath);
        },
        [&](Location l2) {
          Value copy =
              buildCopy(rewriter, l2, weights, viewType(weights, elementType));
          fused(l2, copy);
          DeallocOp::create(rewriter, l2, copy);
          return pathConstant(rewriter, l2, Path::copy, withPath);
        });
  };
  if (adjacency == Adjacency::Disproven)
    return copyOrPerPart(loc);
  Value ok = IsAdjacentOp::create(rewriter, loc, rewriter.getI1Type(), weights,
                                  rewriter.getI64IntegerAttr(alignment));
  return buildIf(
      rewriter, loc, ok, withPath,
      [&](Location l) {
        fused(l, ViewConcatOp::create(rewriter, l,
                                      viewType(weights, elementType), weights));
        return pathConstant(rewriter, l, Path::view, withPath);
      },
      copyOrPerPart);
}

/// Replaces `op` by `path` when it reports its path, else erases it.
void replaceWithPath(PatternRewriter &rewriter, Operation *op, Value path) {
  if (op->getNumResults())
    rewriter.replaceOp(op, path);
  else
    rewriter.eraseOp(op);
}

/// The operand whose rows are the GEMM's M: fprop's input, dgrad's output
/// gradient.
Value rowsOperand(LinearOp op) { return op.getInput(); }
Value rowsOperand(LinearDgradOp op) { return op.getGradOutput(); }
Value rowsOperand(ScaledLinearOp op) { return op.getInput(); }

/// The element type of the combined weight: the type the op computes in
/// (parts of another type are converted by the copy), or for the scaled op
/// the weight parts' FP8 type (copied as is).
Type weightElementType(LinearOp op) {
  return op.getInput().getType().getElementType();
}
Type weightElementType(LinearDgradOp op) {
  return op.getGradOutput().getType().getElementType();
}
Type weightElementType(ScaledLinearOp op) {
  return cast<MemRefType>(op.getWeights().front().getType()).getElementType();
}

/// The element type of the combined bias: the input's, or the scaled op's
/// output type (null for dgrad, which has no bias).
Type biasElementType(LinearOp op) { return weightElementType(op); }
Type biasElementType(LinearDgradOp) { return Type(); }
Type biasElementType(ScaledLinearOp op) {
  return op.getOutput().getType().getElementType();
}

/// The bias parts (dgrad has none).
ValueRange biasParts(LinearOp op) { return op.getBiases(); }
ValueRange biasParts(LinearDgradOp) { return {}; }
ValueRange biasParts(ScaledLinearOp op) { return op.getBiases(); }

/// Builds `op` again over `weights` and `biases` (none for dgrad) with
/// `strategy`, at the builder's insertion point.
void buildLike(OpBuilder &b, Location loc, LinearOp op, ValueRange weights,
               ValueRange biases, Strategy strategy) {
  LinearOp::create(b, loc, op.getInput(), weights, biases, op.getOutput(),
                   strategy);
}
void buildLike(OpBuilder &b, Location loc, LinearDgradOp op, ValueRange weights,
               ValueRange biases, Strategy strategy) {
  assert(biases.empty() && "dgrad has no bias parts");
  LinearDgradOp::create(b, loc, op.getGradOutput(), weights, op.getGradInput(),
                        strategy);
}
/// The scaled op keeps its scales: `weight_scale` spans the rows of the
/// combined weight exactly as it spanned the parts' (statically empty parts
/// that were dropped have no rows).
void buildLike(OpBuilder &b, Location loc, ScaledLinearOp op,
               ValueRange weights, ValueRange biases, Strategy strategy) {
  ScaledLinearOp::create(b, loc, Type(), op.getInput(), op.getInputScale(),
                         weights, op.getWeightScale(), biases, op.getOutput(),
                         op.getScaling(), op.getFastAccum(), strategy);
}

/// Replaces the weight parts of a slin.linear, slin.linear_dgrad or
/// slin.scaled_linear (`OpTy`) by one buffer (strategy `fused`; fprop's bias
/// parts are combined the same way, independently), or with strategy `auto`
/// chooses at run time between that and keeping the parts for one GEMM per part
/// (dgrad: accumulating into dx). Dgrad reads the same weights as fprop, so
/// both get the same combined weight.
template <typename OpTy> struct ElideSplitConcat : OpRewritePattern<OpTy> {
  ElideSplitConcat(MLIRContext *ctx, int64_t alignment, ElideStats stats)
      : OpRewritePattern<OpTy>(ctx), alignment(alignment), stats(stats) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (op.getWeights().size() < 2)
      return rewriter.notifyMatchFailure(op, "one weight part: nothing to combine");
    if (op.getStrategy() == Strategy::per_part)
      return rewriter.notifyMatchFailure(op, "parts kept for per-part GEMMs");
    Location loc = op.getLoc();
    bool withPath = static_cast<bool>(op.getPath());
    SmallVector<unsigned> kept = nonEmptyParts(op.getWeights());
    noteDropped(op, op.getWeights().size() - kept.size(), stats);
    SmallVector<Value> weights = select(op.getWeights(), kept);
    SmallVector<Value> biases;
    if (!biasParts(op).empty())
      biases = select(biasParts(op), kept);
    Value rows = rowsOperand(op);
    Type elementType = weightElementType(op);
    Type biasType = biasElementType(op);

    // The fused op on a combined weight, with the bias combined separately.
    auto fused = [&](Location l, Value weight) {
      Combined bias{biases.empty() ? Value() : biases.front()};
      if (biases.size() > 1)
        bias = combineParts(rewriter, op, "bias", biases, biasType, alignment,
                            stats);
      buildLike(rewriter, l, op, ValueRange{weight},
                bias.buffer ? ValueRange{bias.buffer} : ValueRange{},
                Strategy::fused);
      releaseCombined(rewriter, l, bias);
    };
    if (op.getStrategy() == Strategy::automatic && weights.size() > 1) {
      // Statically empty parts have no columns in y (dy): dropping them
      // leaves the column blocks of the others where they are.
      auto perPart = [&](Location l) {
        buildLike(rewriter, l, op, weights, biases, Strategy::per_part);
      };
      FailureOr<Value> path =
          emitAutoChoice(rewriter, op, weights, elementType, rows, alignment,
                         stats, withPath, perPart, fused);
      if (succeeded(path)) {
        replaceWithPath(rewriter, op, *path);
        return success();
      }
    }
    Combined weight{weights.front()};
    if (weights.size() > 1)
      weight = combineParts(rewriter, op, "weight", weights, elementType,
                            alignment, stats);
    Value path = combinedPath(rewriter, loc, weight, withPath);
    fused(loc, weight.buffer);
    releaseCombined(rewriter, loc, weight);
    replaceWithPath(rewriter, op, path);
    return success();
  }

  int64_t alignment;
  ElideStats stats;
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
    patterns.add<ElideSplitConcat<LinearOp>, ElideSplitConcat<LinearDgradOp>,
                 ElideSplitConcat<ScaledLinearOp>>(&getContext(), alignment,
                                                   stats);
    // Each op is rewritten once into a one-part op; nothing to fold further.
    if (failed(
            applyPatternsWithoutFolding(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace

//===- ExpandLinear.cpp - slin.linear into slin.gemm ------------*- C++ -*-===//
//
// Implements `slin-expand-linear`: fprop and dgrad become GEMMs (the FP8
// slin.scaled_linear becomes slin.scaled_gemm the same way). One weight
// part: one GEMM (fprop: bias fused as the epilogue). Several parts, by the
// op's strategy, with one meaning for both ops: `fused`, a copy of the parts
// into one buffer and one GEMM; `per_part`, one GEMM per part (fprop: into a
// column block of y; dgrad: reading a column block of dy, accumulating into
// dx); `auto` is a run-time choice only slin-elide-concat can build, so the
// pass rejects it. An op's `path` result becomes that path's constant.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Dialect/Slin/IR/SlinOps.h"
#include "splitlinear/Dialect/Slin/Transforms/Passes.h"
#include "splitlinear/Dialect/Slin/Utils/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/MathExtras.h"

namespace mlir {
namespace slin {
#define GEN_PASS_DEF_SLINEXPANDLINEAR
#include "splitlinear/Dialect/Slin/Transforms/Passes.h.inc"
} // namespace slin
} // namespace mlir

using namespace mlir;
using namespace mlir::slin;

namespace {

/// Counters the patterns update (owned by the pass; null when the patterns
/// run outside it).
struct ExpandStats {
  llvm::Statistic *fused = nullptr, *perPart = nullptr;
};

void bump(llvm::Statistic *stat, unsigned by = 1) {
  if (stat)
    *stat += by;
}

/// `part` in `elementType`: itself, or a converted copy (then appended to
/// `owned` to be freed after the GEMMs).
Value inElementType(OpBuilder &b, Location loc, Value part, Type elementType,
                    SmallVectorImpl<Value> &owned) {
  if (cast<MemRefType>(part.getType()).getElementType() == elementType)
    return part;
  Value copy = buildConcatCopy(b, loc, ValueRange{part}, elementType);
  owned.push_back(copy);
  return copy;
}

void freeAll(OpBuilder &b, Location loc, ArrayRef<Value> owned) {
  for (Value buffer : owned)
    DeallocOp::create(b, loc, buffer);
}

/// Calls `fn(i, part, block, off_i)` for each weight part that is not
/// statically empty, `block` being its column block [off_i, off_i + N_i) of
/// `matrix` (all rows): y for fprop, dy for dgrad. Returns the number of
/// calls. (A
/// statically empty part has no columns, and its block would start past the
/// end of `matrix`, out of bounds for memref.subview.)
unsigned forEachColumnBlock(
    OpBuilder &b, Location loc, Value matrix, ValueRange parts,
    function_ref<void(unsigned, Value, Value, OpFoldResult)> fn) {
  Value rows = memref::DimOp::create(b, loc, matrix, 0);
  OpFoldResult offset = b.getIndexAttr(0);
  OpFoldResult one = b.getIndexAttr(1);
  unsigned calls = 0;
  for (auto [i, part] : llvm::enumerate(parts)) {
    if (cast<MemRefType>(part.getType()).getDimSize(0) == 0)
      continue;
    OpFoldResult n = sizeOf(b, loc, part, 0);
    Value block = memref::SubViewOp::create(b, loc, matrix,
                                            {b.getIndexAttr(0), offset},
                                            {OpFoldResult(rows), n}, {one, one});
    fn(i, part, block, offset);
    offset = addOfr(b, loc, offset, n);
    ++calls;
  }
  return calls;
}

/// Replaces `op` by the constant `path` when it reports its path (an i32
/// result), else erases it.
void replaceWithPath(PatternRewriter &rewriter, Operation *op, Path path) {
  if (!op->getNumResults()) {
    rewriter.eraseOp(op);
    return;
  }
  rewriter.replaceOp(op, arith::ConstantIntOp::create(
                             rewriter, op->getLoc(), rewriter.getI32Type(),
                             static_cast<int64_t>(path)));
}

/// The weight parts of `op` as one buffer in `elementType`: the one part
/// (converted if needed), or a copy of all of them (strategy `fused`).
/// Temporaries go to `owned`.
Value fusedParts(OpBuilder &b, Location loc, ValueRange parts,
                 Type elementType, SmallVectorImpl<Value> &owned) {
  if (parts.size() == 1)
    return inElementType(b, loc, parts.front(), elementType, owned);
  Value buffer = buildConcatCopy(b, loc, parts, elementType);
  owned.push_back(buffer);
  return buffer;
}

/// The path of a one-GEMM expansion: a view of one part, or a copy.
Path fusedPath(ValueRange parts) {
  return parts.size() == 1 ? Path::view : Path::copy;
}

/// Whether `op` runs one GEMM per part: strategy `per_part` with several
/// parts. (A multi-part `auto` op is not expanded at all.)
template <typename OpTy> bool runsPerPart(OpTy op) {
  return op.getWeights().size() > 1 && op.getStrategy() == Strategy::per_part;
}

/// fprop: y = x · Wᵀ + b. Strategy `per_part`: one GEMM per part writing the
/// column block [off_i, off_i + N_i) of y, with its bias part; otherwise one
/// GEMM over the one part or a copy of the parts (bias parts likewise).
/// Converted copies of parts go to `owned`. Returns the path taken.
Path expand(LinearOp op, PatternRewriter &rewriter,
            SmallVectorImpl<Value> &owned, ExpandStats stats) {
  Location loc = op.getLoc();
  Type elementType = op.getInput().getType().getElementType();
  auto gemm = [&](Value weight, Value bias, Value out) {
    weight = inElementType(rewriter, loc, weight, elementType, owned);
    if (bias)
      bias = inElementType(rewriter, loc, bias, elementType, owned);
    auto g = GemmOp::create(rewriter, loc, op.getInput(), weight, bias, out);
    g.setTransposeB(true);
    if (bias)
      g.setEpilogue(Epilogue::bias);
  };
  ValueRange weights = op.getWeights(), biases = op.getBiases();
  // An output without elements (M = 0 or N = 0 statically) needs no GEMM,
  // and a static subview offset into its empty dimension would not verify.
  if (llvm::is_contained(op.getOutput().getType().getShape(), 0))
    return runsPerPart(op) ? Path::per_part : fusedPath(weights);
  if (!runsPerPart(op)) {
    Value bias = biases.empty()
                     ? Value()
                     : fusedParts(rewriter, loc, biases, elementType, owned);
    gemm(fusedParts(rewriter, loc, weights, elementType, owned), bias,
         op.getOutput());
    bump(stats.fused);
    return fusedPath(weights);
  }
  unsigned gemms = forEachColumnBlock(
      rewriter, loc, op.getOutput(), weights,
      [&](unsigned i, Value weight, Value block, OpFoldResult) {
        gemm(weight, biases.empty() ? Value() : biases[i], block);
      });
  bump(stats.perPart, gemms);
  return Path::per_part;
}

/// dgrad: dx = dy · W ("NN"). Strategy `per_part`: one GEMM per part,
/// dx = Σ_i dy[:, block_i] · W_i, the first writing dx and the others
/// accumulating into it (beta = 1); otherwise one GEMM over the one part or
/// a copy of the parts. Converted copies and that buffer go to `owned`.
/// Returns the path taken.
Path expand(LinearDgradOp op, PatternRewriter &rewriter,
            SmallVectorImpl<Value> &owned, ExpandStats stats) {
  Location loc = op.getLoc();
  Type elementType = op.getGradOutput().getType().getElementType();
  ValueRange weights = op.getWeights();
  auto nonEmpty = llvm::find_if(weights, [](Value w) {
    return cast<MemRefType>(w.getType()).getDimSize(0) != 0;
  });
  // Parts that are all statically empty have no column block to read: the
  // one GEMM over their (empty) copy writes dx = 0, on either strategy.
  if (!runsPerPart(op) || nonEmpty == weights.end()) {
    GemmOp::create(rewriter, loc, op.getGradOutput(),
                   fusedParts(rewriter, loc, weights, elementType, owned),
                   Value(), op.getGradInput());
    bump(stats.fused);
    return fusedPath(weights);
  }
  // dx without elements needs no GEMM, and a static subview offset into an
  // empty dimension of dy would not verify.
  if (llvm::is_contained(op.getGradInput().getType().getShape(), 0) ||
      op.getGradOutput().getType().getDimSize(0) == 0)
    return Path::per_part;
  unsigned firstNonEmpty = std::distance(weights.begin(), nonEmpty);
  unsigned gemms = forEachColumnBlock(
      rewriter, loc, op.getGradOutput(), weights,
      [&](unsigned i, Value weight, Value block, OpFoldResult) {
        weight = inElementType(rewriter, loc, weight, elementType, owned);
        auto g = GemmOp::create(rewriter, loc, block, weight, Value(),
                                op.getGradInput());
        // The first GEMM emitted writes dx; the others add to it.
        if (i != firstNonEmpty)
          g.setEpilogue(Epilogue::accumulate);
      });
  bump(stats.perPart, gemms);
  return Path::per_part;
}

/// Scaled fprop: y = sx · ŝ · (x8 · W8ᵀ) (+ b) as slin.scaled_gemm. Strategy
/// `per_part`: one scaled GEMM per part writing the column block
/// [off_i, off_i + N_i) of y, with the same slice of `weight_scale` (only
/// outer_vector has several parts) and its bias part; otherwise one scaled
/// GEMM over the one part or a same-type copy of the FP8 parts (bias parts
/// likewise) with the whole `weight_scale`. Copies go to `owned`. Returns
/// the path taken.
Path expand(ScaledLinearOp op, PatternRewriter &rewriter,
            SmallVectorImpl<Value> &owned, ExpandStats stats) {
  Location loc = op.getLoc();
  ValueRange weights = op.getWeights(), biases = op.getBiases();
  Type weightType =
      cast<MemRefType>(weights.front().getType()).getElementType();
  Type outType = op.getOutput().getType().getElementType();
  auto gemm = [&](Value weight, Value weightScale, Value bias, Value out) {
    ScaledGemmOp::create(rewriter, loc, op.getInput(), weight,
                         op.getInputScale(), weightScale, bias, out,
                         op.getScaling(), op.getFastAccum());
  };
  if (llvm::is_contained(op.getOutput().getType().getShape(), 0))
    return runsPerPart(op) ? Path::per_part : fusedPath(weights);
  if (!runsPerPart(op)) {
    Value bias = biases.empty()
                     ? Value()
                     : fusedParts(rewriter, loc, biases, outType, owned);
    gemm(fusedParts(rewriter, loc, weights, weightType, owned),
         op.getWeightScale(), bias, op.getOutput());
    bump(stats.fused);
    return fusedPath(weights);
  }
  OpFoldResult one = rewriter.getIndexAttr(1);
  unsigned gemms = forEachColumnBlock(
      rewriter, loc, op.getOutput(), weights,
      [&](unsigned i, Value weight, Value block, OpFoldResult offset) {
        Value scale = memref::SubViewOp::create(
            rewriter, loc, op.getWeightScale(), {offset},
            {sizeOf(rewriter, loc, weight, 0)}, {one});
        gemm(weight, scale, biases.empty() ? Value() : biases[i], block);
      });
  bump(stats.perPart, gemms);
  return Path::per_part;
}

/// Rewrites a slin.linear, slin.linear_dgrad or slin.scaled_linear (`OpTy`)
/// into slin.gemm / slin.scaled_gemm ops
/// (`expand` above), frees the copies they read, and replaces the op's path
/// result by the constant path taken.
template <typename OpTy> struct ExpandSplitLinear : OpRewritePattern<OpTy> {
  ExpandSplitLinear(MLIRContext *ctx, ExpandStats stats)
      : OpRewritePattern<OpTy>(ctx), stats(stats) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (op.getStrategy() == Strategy::automatic && op.getWeights().size() > 1)
      return rewriter.notifyMatchFailure(
          op, "strategy auto: slin-elide-concat builds the run-time choice");
    SmallVector<Value> owned;
    Path path = expand(op, rewriter, owned, stats);
    freeAll(rewriter, op.getLoc(), owned);
    replaceWithPath(rewriter, op, path);
    return success();
  }

  ExpandStats stats;
};

void addPatterns(RewritePatternSet &patterns, ExpandStats stats) {
  patterns.add<ExpandSplitLinear<LinearOp>, ExpandSplitLinear<LinearDgradOp>,
               ExpandSplitLinear<ScaledLinearOp>>(patterns.getContext(), stats);
}

/// Emits an error on every op with several weight parts and strategy
/// `auto` under `root`: only slin-elide-concat builds the run-time choice,
/// and guessing one of its branches here would give a second meaning to
/// the value.
LogicalResult rejectUnresolvedAuto(Operation *root) {
  bool ok = true;
  root->walk([&](Operation *op) {
    auto check = [&](auto linear) {
      if (linear.getStrategy() == Strategy::automatic &&
          linear.getWeights().size() > 1) {
        linear.emitOpError("has strategy auto with ")
            << linear.getWeights().size()
            << " weight parts; run slin-elide-concat first, which builds "
               "the run-time choice";
        ok = false;
      }
    };
    if (auto linear = dyn_cast<LinearOp>(op))
      check(linear);
    else if (auto dgrad = dyn_cast<LinearDgradOp>(op))
      check(dgrad);
    else if (auto scaled = dyn_cast<ScaledLinearOp>(op))
      check(scaled);
  });
  return success(ok);
}

struct SlinExpandLinearPass
    : public slin::impl::SlinExpandLinearBase<SlinExpandLinearPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(rejectUnresolvedAuto(getOperation())))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    addPatterns(patterns, ExpandStats{&numFusedGemms, &numPerPartGemms});
    if (failed(
            applyPatternsWithoutFolding(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace

void mlir::slin::populateExpandLinearPatterns(RewritePatternSet &patterns) {
  addPatterns(patterns, ExpandStats{});
}

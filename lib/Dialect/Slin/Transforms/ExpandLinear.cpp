//===- ExpandLinear.cpp - slin.linear into slin.gemm ------------*- C++ -*-===//
//
// Implements `slin-expand-linear`: fprop and dgrad become GEMMs. One weight
// part: one GEMM (bias fused as the epilogue). Several parts: one GEMM per
// part into a column block of the output (fprop); for dgrad, whose per-part
// products are summed, accumulating GEMMs when its strategy is `per_part`,
// else a concat + one GEMM. An op's `path` result becomes that path's
// constant.
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

/// Calls `fn(i, part, block)` for each weight part that is not statically
/// empty, `block` being its column block [off_i, off_i + N_i) of `matrix`
/// (all rows): y for fprop, dy for dgrad. Returns the number of calls. (A
/// statically empty part has no columns, and its block would start past the
/// end of `matrix`, out of bounds for memref.subview.)
unsigned forEachColumnBlock(OpBuilder &b, Location loc, Value matrix,
                            ValueRange parts,
                            function_ref<void(unsigned, Value, Value)> fn) {
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
    fn(i, part, block);
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

/// fprop: y = x · Wᵀ + b as one GEMM, or one GEMM per part writing the
/// column block [off_i, off_i + N_i) of y. Converted copies of parts go to
/// `owned`. Returns the path taken.
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
  if (weights.size() == 1) {
    gemm(weights.front(), biases.empty() ? Value() : biases.front(),
         op.getOutput());
    bump(stats.fused);
    return Path::view;
  }
  // An output without elements (M = 0 or N = 0 statically) needs no GEMM,
  // and a static subview offset into its empty dimension would not verify.
  if (llvm::is_contained(op.getOutput().getType().getShape(), 0))
    return Path::per_part;
  unsigned gemms = forEachColumnBlock(
      rewriter, loc, op.getOutput(), weights,
      [&](unsigned i, Value weight, Value block) {
        gemm(weight, biases.empty() ? Value() : biases[i], block);
      });
  bump(stats.perPart, gemms);
  return Path::per_part;
}

/// dgrad: dx = dy · W as one GEMM ("NN"). Several parts with strategy
/// `per_part` become one GEMM per part, dx = Σ_i dy[:, block_i] · W_i,
/// the first writing dx and the others accumulating into it (beta = 1);
/// otherwise they are first copied into one buffer. Converted copies and
/// that buffer go to `owned`. Returns the path taken.
Path expand(LinearDgradOp op, PatternRewriter &rewriter,
            SmallVectorImpl<Value> &owned, ExpandStats stats) {
  Location loc = op.getLoc();
  Type elementType = op.getGradOutput().getType().getElementType();
  auto nonEmpty = llvm::find_if(op.getWeights(), [](Value w) {
    return cast<MemRefType>(w.getType()).getDimSize(0) != 0;
  });
  if (op.getWeights().size() > 1 && op.getStrategy() == Strategy::per_part &&
      nonEmpty != op.getWeights().end()) {
    unsigned firstNonEmpty = std::distance(op.getWeights().begin(), nonEmpty);
    // dx without elements needs no GEMM, and a static subview offset into
    // an empty dimension of dy would not verify.
    if (llvm::is_contained(op.getGradInput().getType().getShape(), 0) ||
        op.getGradOutput().getType().getDimSize(0) == 0)
      return Path::per_part;
    unsigned gemms = forEachColumnBlock(
        rewriter, loc, op.getGradOutput(), op.getWeights(),
        [&](unsigned i, Value weight, Value block) {
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
  Value weight;
  if (op.getWeights().size() == 1) {
    weight = inElementType(rewriter, loc, op.getWeights().front(), elementType,
                           owned);
  } else {
    weight = buildConcatCopy(rewriter, loc, op.getWeights(), elementType);
    owned.push_back(weight);
  }
  GemmOp::create(rewriter, loc, op.getGradOutput(), weight, Value(),
                 op.getGradInput());
  bump(stats.fused);
  return op.getWeights().size() == 1 ? Path::view : Path::copy;
}

/// Rewrites a slin.linear or slin.linear_dgrad (`OpTy`) into slin.gemm ops
/// (`expand` above), frees the copies they read, and replaces the op's path
/// result by the constant path taken.
template <typename OpTy> struct ExpandSplitLinear : OpRewritePattern<OpTy> {
  ExpandSplitLinear(MLIRContext *ctx, ExpandStats stats)
      : OpRewritePattern<OpTy>(ctx), stats(stats) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> owned;
    Path path = expand(op, rewriter, owned, stats);
    freeAll(rewriter, op.getLoc(), owned);
    replaceWithPath(rewriter, op, path);
    return success();
  }

  ExpandStats stats;
};

void addPatterns(RewritePatternSet &patterns, ExpandStats stats) {
  patterns.add<ExpandSplitLinear<LinearOp>, ExpandSplitLinear<LinearDgradOp>>(
      patterns.getContext(), stats);
}

struct SlinExpandLinearPass
    : public slin::impl::SlinExpandLinearBase<SlinExpandLinearPass> {
  using Base::Base;

  void runOnOperation() override {
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

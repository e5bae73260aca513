//===- Utils.h - IR helpers shared by the slin passes -----------*- C++ -*-===//
//
// Small builders that the slin transforms and the conversion to the runtime
// both need: memref sizes that are never folded into invalid static sizes,
// index sums folded when they are constant, the materializing concat of
// weight parts into a fresh runtime buffer, and the passes' pattern driver.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_DIALECT_SLIN_UTILS_UTILS_H
#define SPLITLINEAR_DIALECT_SLIN_UTILS_UTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"

namespace mlir {
namespace slin {

/// Size `dim` of `memref`: the static size of its type, else a memref.dim
/// that is not folded. (Folded, the dim of a subview whose size operand is
/// `arith.constant -4` would become a static -4, and a static subview size
/// or offset must not be negative: the program's run-time error would turn
/// into invalid IR at compile time.)
OpFoldResult sizeOf(OpBuilder &b, Location loc, Value memref, int64_t dim);

/// `a + c`, folded when both are constants whose sum fits in int64 (a
/// wrapped sum could even land on ShapedType::kDynamic).
OpFoldResult addOfr(OpBuilder &b, Location loc, OpFoldResult a,
                    OpFoldResult c);

/// The shape of `parts` (all rank 1 or all rank 2) stacked along dim 0:
/// Σ N_i rows (static when every N_i is and the sum fits in int64) and, for
/// rank 2, the parts' columns (static when one part's is).
SmallVector<int64_t> stackedShape(ValueRange parts);

/// Applies `patterns` to `op` with the greedy driver, folding disabled: the
/// slin passes rewrite each op once into exactly the ops their patterns
/// build (a folder would, e.g., look through the casts of a buffer). Fails
/// when the driver does not converge.
LogicalResult
applyPatternsWithoutFolding(Operation *op,
                            const FrozenRewritePatternSet &patterns);

/// Allocates a runtime buffer (`slin.alloc`, identity layout, `elementType`)
/// of stackedShape(`parts`) and fills it with `slin.concat` of `parts`, which
/// converts parts of another element type. The caller frees it with
/// `slin.dealloc`.
Value buildConcatCopy(OpBuilder &b, Location loc, ValueRange parts,
                      Type elementType);

} // namespace slin
} // namespace mlir

#endif // SPLITLINEAR_DIALECT_SLIN_UTILS_UTILS_H

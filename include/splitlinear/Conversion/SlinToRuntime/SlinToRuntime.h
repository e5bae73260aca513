//===- SlinToRuntime.h - slin to calls of the runtime -----------*- C++ -*-===//
//
// The rewrite patterns of `convert-slin-to-runtime`, exported for passes and
// tools that assemble a conversion of their own (as CIRCT exports
// `populateCombToArithConversionPatterns`).
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_CONVERSION_SLINTORUNTIME_SLINTORUNTIME_H
#define SPLITLINEAR_CONVERSION_SLINTORUNTIME_SLINTORUNTIME_H

#include "splitlinear/Conversion/Passes.h"

namespace mlir {
class Operation;
class RewritePatternSet;
namespace slin {

/// Adds the patterns that lower `slin.gemm`, `slin.scaled_gemm`, `slin.concat`,
/// `slin.is_adjacent`, `slin.view_concat`, `slin.prefer_per_part`,
/// `slin.alloc` and `slin.dealloc` to calls of the runtime ABI of `target`
/// (names from RuntimeEntryPoints.def) and to memref metadata ops. Each
/// runtime call takes the function's `!slin.context` argument, cast to
/// `!llvm.ptr`, or (without one) `slinrt_default_context()`; the caller's
/// ConversionTarget makes the slin dialect illegal, then
/// convertSlinContextToLLVMPointer lowers the context.
void populateSlinToRuntimeConversionPatterns(RewritePatternSet &patterns,
                                             RuntimeTarget target);

/// Lowers `!slin.context` to `!llvm.ptr` under `root`: function signatures,
/// the operands and results of func.call and func.return, and the
/// `unrealized_conversion_cast`s to `!llvm.ptr` that the patterns above make
/// of a context argument. The second step of `convert-slin-to-runtime`,
/// after those patterns (which find the context by its type). Fails on any
/// other op with a context operand or result, and on a context argument of a
/// block other than a function's entry.
LogicalResult convertSlinContextToLLVMPointer(Operation *root);

} // namespace slin
} // namespace mlir

#endif // SPLITLINEAR_CONVERSION_SLINTORUNTIME_SLINTORUNTIME_H

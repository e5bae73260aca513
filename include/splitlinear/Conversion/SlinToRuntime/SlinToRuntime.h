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
class RewritePatternSet;
namespace slin {

/// Adds the patterns that lower `slin.gemm`, `slin.concat`,
/// `slin.is_adjacent`, `slin.view_concat`, `slin.prefer_per_part`,
/// `slin.alloc` and `slin.dealloc` to calls of the runtime ABI of `target`
/// (names from RuntimeEntryPoints.def) and to memref metadata ops. The
/// functions must already carry the runtime context argument; the caller's
/// ConversionTarget makes the slin dialect illegal.
void populateSlinToRuntimeConversionPatterns(RewritePatternSet &patterns,
                                             RuntimeTarget target);

} // namespace slin
} // namespace mlir

#endif // SPLITLINEAR_CONVERSION_SLINTORUNTIME_SLINTORUNTIME_H

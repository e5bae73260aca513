//===- Passes.h - slin transformation passes --------------------*- C++ -*-===//
//
// Declares the `slin` passes and the pattern sets behind them.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_DIALECT_SLIN_TRANSFORMS_PASSES_H
#define SPLITLINEAR_DIALECT_SLIN_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "splitlinear/Dialect/Slin/IR/SlinDialect.h"

namespace mlir {
class RewritePatternSet;
namespace slin {

#define GEN_PASS_DECL
#include "splitlinear/Dialect/Slin/Transforms/Passes.h.inc"

/// Adds the patterns that expand slin.linear / slin.linear_dgrad into
/// slin.gemm (one GEMM for one part, one GEMM per part otherwise).
void populateExpandLinearPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "splitlinear/Dialect/Slin/Transforms/Passes.h.inc"

} // namespace slin
} // namespace mlir

#endif // SPLITLINEAR_DIALECT_SLIN_TRANSFORMS_PASSES_H

//===- Passes.h - splitlinear conversion passes -----------------*- C++ -*-===//
//
// Declares the conversion out of `slin` (to calls of the runtime) and the
// runtime target it lowers for.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_CONVERSION_PASSES_H
#define SPLITLINEAR_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace slin {

/// The runtime a lowering targets: the infix of its entry points
/// (`slinrt_<target>_gemm_<dtype>`, RuntimeEntryPoints.def).
enum class RuntimeTarget { cpu, cuda };

#define GEN_PASS_DECL
#include "splitlinear/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "splitlinear/Conversion/Passes.h.inc"

/// Registers `convert-slin-to-cublaslt{target=cuda|cpu}`, the former name of
/// `convert-slin-to-runtime`, as a one-pass pipeline (users and docs know the
/// old spelling). Call after registerSplitLinearConversionPasses.
void registerConvertSlinToCuBLASLtAlias();

} // namespace slin
} // namespace mlir

#endif // SPLITLINEAR_CONVERSION_PASSES_H

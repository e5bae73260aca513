//===- SlinToRuntime.cpp - slin ops to runtime calls ------------*- C++ -*-===//
//
// Implements `convert-slin-to-runtime`: the last step out of the `slin`
// dialect. `slin.gemm`, `slin.concat` and `slin.prefer_per_part` become
// `func.call`s of the runtime's C-interface entry points
// (include/splitlinear/Runtime/Runtime.h; GemmAndCopies.cpp), and so does
// the FP8 `slin.scaled_gemm` (ScaledGemm.cpp); the temporary
// buffers the slin passes allocate (`slin.alloc` / `slin.dealloc`) come from
// the runtime's allocator (Buffers.cpp), and `slin.is_adjacent` /
// `slin.view_concat` become memref metadata arithmetic (Views.cpp). Every
// runtime call takes the function's runtime context, as `!llvm.ptr`; a
// second step lowers `!slin.context` itself to `!llvm.ptr` (Context.cpp).
// What the pattern files share is in RuntimeCalls.h.
//
// This file holds the pass and populateSlinToRuntimeConversionPatterns.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Conversion/SlinToRuntime/SlinToRuntime.h"
#include "RuntimeCalls.h"
#include "splitlinear/Dialect/Slin/IR/SlinOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace slin {
#define GEN_PASS_DEF_CONVERTSLINTORUNTIME
#include "splitlinear/Conversion/Passes.h.inc"
} // namespace slin
} // namespace mlir

using namespace mlir;
using namespace mlir::slin;

void mlir::slin::populateSlinToRuntimeConversionPatterns(
    RewritePatternSet &patterns, RuntimeTarget target) {
  slin::detail::populateGemmAndCopyPatterns(patterns, target);
  slin::detail::populateScaledGemmPatterns(patterns, target);
  slin::detail::populateBufferPatterns(patterns, target);
  slin::detail::populateViewPatterns(patterns);
}

namespace {

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// `convert-slin-to-runtime`: checks the input, applies the patterns of
/// populateSlinToRuntimeConversionPatterns, then lowers the context type.
struct ConvertSlinToRuntimePass
    : public slin::impl::ConvertSlinToRuntimeBase<ConvertSlinToRuntimePass> {
  using Base::Base;

  /// Checks what the patterns cannot report well: ops that belong to an
  /// earlier pass, and functions with more than one runtime context.
  LogicalResult checkInput(ModuleOp module) {
    bool failedCheck = false;
    module.walk([&](Operation *op) {
      if (isa<LinearOp, LinearDgradOp, ScaledLinearOp>(op)) {
        op->emitError() << "'" << op->getName()
                        << "' cannot be lowered to runtime calls: run "
                           "slin-elide-concat and slin-expand-linear first";
        failedCheck = true;
      }
      auto func = dyn_cast<func::FuncOp>(op);
      if (!func || func.isExternal())
        return;
      std::optional<unsigned> first;
      for (BlockArgument arg : func.getArguments()) {
        if (!isa<ContextType>(arg.getType()))
          continue;
        if (!first) {
          first = arg.getArgNumber();
          continue;
        }
        func.emitError() << "argument #" << arg.getArgNumber()
                         << " is a second runtime context (the first is "
                            "argument #"
                         << *first << "): a function takes at most one "
                         << arg.getType() << " argument";
        failedCheck = true;
      }
    });
    return failure(failedCheck);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkInput(module)))
      return signalPassFailure();

    ConversionTarget conversionTarget(getContext());
    conversionTarget.addIllegalDialect<SlinDialect>();
    conversionTarget.markUnknownOpDynamicallyLegal(
        [](Operation *) { return true; });

    RewritePatternSet patterns(&getContext());
    populateSlinToRuntimeConversionPatterns(patterns, target);
    // No folding: the rewrite is exactly what the patterns say (a folded
    // memref.dealloc would, e.g., look through casts of the buffer).
    ConversionConfig config;
    config.foldingMode = DialectConversionFoldingMode::Never;
    if (failed(applyPartialConversion(module, conversionTarget,
                                      std::move(patterns), config)))
      return signalPassFailure();
    // Only now: the patterns above find the context by its type.
    if (failed(convertSlinContextToLLVMPointer(module)))
      return signalPassFailure();
  }
};

} // namespace

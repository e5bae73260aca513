//===- Pipelines.cpp - the splitlinear lowering pipeline --------*- C++ -*-===//
//
// Builds and registers `splitlinear-pipeline`: from `slin` ops on memrefs to
// the LLVM dialect calling the runtime.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Pipelines/Pipelines.h"
#include "splitlinear/Conversion/Passes.h"
#include "splitlinear/Dialect/Slin/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::slin::buildSplitLinearPipeline(
    OpPassManager &pm, const SplitLinearPipelineOptions &options) {
  SlinElideConcatOptions elide;
  elide.alignment = options.alignment;
  pm.addPass(createSlinElideConcat(elide));
  pm.addPass(createSlinExpandLinear());
  ConvertSlinToRuntimeOptions convert;
  convert.target = options.target;
  pm.addPass(createConvertSlinToRuntime(convert));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  // expand-strided-metadata computes dynamic offsets and sizes of subviews
  // with affine.apply.
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::slin::registerSplitLinearPipelines() {
  PassPipelineRegistration<SplitLinearPipelineOptions>(
      "splitlinear-pipeline",
      "Lower slin IR to LLVM dialect calls of the splitlinear runtime",
      buildSplitLinearPipeline);
}

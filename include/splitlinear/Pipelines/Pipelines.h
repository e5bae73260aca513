//===- Pipelines.h - the splitlinear lowering pipeline ----------*- C++ -*-===//
//
// Declares `splitlinear-pipeline` as a C++ pipeline builder with typed
// options, for splitlinear-opt, the kernel compiler and the C API alike.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_PIPELINES_PIPELINES_H
#define SPLITLINEAR_PIPELINES_PIPELINES_H

#include "splitlinear/Conversion/Passes.h"

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace slin {

/// Options of `splitlinear-pipeline`.
struct SplitLinearPipelineOptions
    : public PassPipelineOptions<SplitLinearPipelineOptions> {
  Option<RuntimeTarget> target{
      *this, "target", llvm::cl::desc("Runtime target"),
      llvm::cl::init(RuntimeTarget::cuda),
      llvm::cl::values(
          clEnumValN(RuntimeTarget::cuda, "cuda", "CUDA (cuBLASLt)"),
          clEnumValN(RuntimeTarget::cpu, "cpu", "the host (BLAS)"))};
  Option<int64_t> alignment{
      *this, "alignment",
      llvm::cl::desc("Byte alignment required of a zero-copy view"),
      llvm::cl::init(16)};
};

/// Builds the whole lowering: slin-elide-concat, slin-expand-linear,
/// convert-slin-to-runtime, expand-strided-metadata,
/// finalize-memref-to-llvm, convert-scf-to-cf, convert-to-llvm,
/// reconcile-unrealized-casts (with canonicalize/cse in between).
void buildSplitLinearPipeline(OpPassManager &pm,
                              const SplitLinearPipelineOptions &options);

/// Registers `splitlinear-pipeline`.
void registerSplitLinearPipelines();

} // namespace slin
} // namespace mlir

#endif // SPLITLINEAR_PIPELINES_PIPELINES_H

//===- Passes.h - splitlinear conversion passes -----------------*- C++ -*-===//
//
// Declares the conversion out of `slin` and the named end-to-end pipeline.
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

/// Options of `convert-slin-to-cublaslt`, the former name of
/// `convert-slin-to-runtime` (kept as an alias: users and docs know it).
struct ConvertSlinToCuBLASLtAliasOptions
    : public PassPipelineOptions<ConvertSlinToCuBLASLtAliasOptions> {
  Option<RuntimeTarget> target{
      *this, "target", llvm::cl::desc("Runtime target"),
      llvm::cl::init(RuntimeTarget::cuda),
      llvm::cl::values(
          clEnumValN(RuntimeTarget::cuda, "cuda", "CUDA (cuBLASLt)"),
          clEnumValN(RuntimeTarget::cpu, "cpu", "the host (BLAS)"))};
};

/// Builds the whole lowering: slin-elide-concat, slin-expand-linear,
/// convert-slin-to-runtime, expand-strided-metadata,
/// finalize-memref-to-llvm, convert-scf-to-cf, convert-to-llvm,
/// reconcile-unrealized-casts (with canonicalize/cse in between).
void buildSplitLinearPipeline(OpPassManager &pm,
                              const SplitLinearPipelineOptions &options);

#define GEN_PASS_REGISTRATION
#include "splitlinear/Conversion/Passes.h.inc"

/// Registers `splitlinear-pipeline` and the `convert-slin-to-cublaslt` alias
/// of `convert-slin-to-runtime`.
void registerSplitLinearPipelines();

} // namespace slin
} // namespace mlir

#endif // SPLITLINEAR_CONVERSION_PASSES_H

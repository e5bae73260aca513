//===- Alias.cpp - the former name of convert-slin-to-runtime ---*- C++ -*-===//
//
// Registers `convert-slin-to-cublaslt`, the name the conversion had before it
// lowered to a target-neutral runtime ABI, as a pipeline of that one pass.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Conversion/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::slin;

namespace {
/// Options of `convert-slin-to-cublaslt`: those of `convert-slin-to-runtime`.
struct ConvertSlinToCuBLASLtAliasOptions
    : public PassPipelineOptions<ConvertSlinToCuBLASLtAliasOptions> {
  Option<RuntimeTarget> target{
      *this, "target", llvm::cl::desc("Runtime target"),
      llvm::cl::init(RuntimeTarget::cuda),
      llvm::cl::values(
          clEnumValN(RuntimeTarget::cuda, "cuda", "CUDA (cuBLASLt)"),
          clEnumValN(RuntimeTarget::cpu, "cpu", "the host (BLAS)"))};
};
} // namespace

void mlir::slin::registerConvertSlinToCuBLASLtAlias() {
  PassPipelineRegistration<ConvertSlinToCuBLASLtAliasOptions>(
      "convert-slin-to-cublaslt",
      "Alias of convert-slin-to-runtime (its former name)",
      [](OpPassManager &pm, const ConvertSlinToCuBLASLtAliasOptions &options) {
        ConvertSlinToRuntimeOptions convert;
        convert.target = options.target;
        pm.addPass(createConvertSlinToRuntime(convert));
      });
}

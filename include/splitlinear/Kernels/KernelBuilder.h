//===- KernelBuilder.h - slin IR of the torch op's kernels ------*- C++ -*-===//
//
// Declares buildKernelModule, the one producer of kernel IR.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_KERNELS_KERNELBUILDER_H
#define SPLITLINEAR_KERNELS_KERNELBUILDER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "splitlinear-c/SplitLinear.h"

#include <string>

namespace splitlinear {
/// Builds the verified module holding `slin_kernel` for `spec` (see
/// slinKernelBuildIR in SplitLinear.h for its signature). On an invalid spec
/// returns failure with the reason in `error`.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildKernelModule(mlir::MLIRContext *ctx, const SlinKernelSpec &spec,
                  std::string &error);
} // namespace splitlinear

#endif // SPLITLINEAR_KERNELS_KERNELBUILDER_H

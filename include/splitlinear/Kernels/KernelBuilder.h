//===- KernelBuilder.h - slin IR of the torch op's kernels ------*- C++ -*-===//
//
// Declares buildKernelModule, the one producer of kernel IR.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_KERNELS_KERNELBUILDER_H
#define SPLITLINEAR_KERNELS_KERNELBUILDER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "splitlinear/Kernels/KernelSpec.h"

#include <string>

namespace splitlinear {
/// Builds the verified module holding `slin_kernel` for `spec`: one public
/// function with `llvm.emit_c_interface` taking the context
/// (`!slin.context`) and then fully dynamic strided memrefs:
///   Fprop: x, w_0..w_{n-1}, [b_0..b_{n-1}], y   -> i32 (a slin::Path)
///   Dgrad: dy, w_0..w_{n-1}, dx                 -> i32 (a slin::Path)
///   Wgrad: dy, x, dw, [db]
///   ScaledFprop: x8, input_scale, w8_0..w8_{n-1}, weight_scale,
///                [b_0..b_{n-1}], y                 -> i32 (a slin::Path)
/// On an invalid spec (a part count or bias that the kind does not take, a
/// dtype, target, alignment or scaling out of range, FP8 where the kind
/// takes none) returns failure with the reason in `error`.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildKernelModule(mlir::MLIRContext *ctx, const KernelSpec &spec,
                  std::string &error);
} // namespace splitlinear

#endif // SPLITLINEAR_KERNELS_KERNELBUILDER_H

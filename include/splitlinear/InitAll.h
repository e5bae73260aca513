//===- InitAll.h - register everything splitlinear uses ---------*- C++ -*-===//
//
// One place that registers the `slin` dialect, its passes and pipelines and
// the upstream dialects, passes and LLVM-lowering interfaces they need. Used
// by splitlinear-opt, the C API/JIT and tests, so they all see one set.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_INITALL_H
#define SPLITLINEAR_INITALL_H

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace splitlinear {

/// Adds the `slin` dialect, the upstream dialects the pipeline produces
/// (func, memref, arith, scf, cf, llvm) and their LLVM-lowering and
/// translation interfaces to `registry`.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers the `slin` passes, the conversion passes and the named
/// pipelines, plus the upstream passes the pipeline is made of, with the
/// global pass registry (idempotent).
void registerAllPasses();

} // namespace splitlinear

#endif // SPLITLINEAR_INITALL_H

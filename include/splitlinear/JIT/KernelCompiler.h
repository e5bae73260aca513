//===- KernelCompiler.h - slin IR to JIT-compiled kernels -------*- C++ -*-===//
//
// Declares the C++ kernel compiler behind the C API: contexts with every
// dialect splitlinear uses, parsing, pass pipelines that report their
// diagnostics as text, JIT engines that resolve the runtime's entry points,
// and `compileKernel`, which turns a kernel spec into a callable kernel
// (spec -> module -> splitlinear-pipeline -> ExecutionEngine, with IR dumps
// on request).
//
// Errors are returned, never thrown or printed: each function that can fail
// returns `failure()` and puts the diagnostics, as text, in a string the
// caller passes. Threading: every function may be called from any thread;
// calls that work on distinct contexts are independent. A context and the
// modules in it are not thread-safe; an engine's lookups are.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_JIT_KERNELCOMPILER_H
#define SPLITLINEAR_JIT_KERNELCOMPILER_H

#include "splitlinear/Kernels/KernelSpec.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <memory>
#include <string>

namespace splitlinear {

/// A module together with the context that owns it (the module is destroyed
/// first).
struct OwnedModule {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// A JIT-compiled kernel: the engine that owns the code and the kernel's
/// packed entry point (`_mlir_ciface_slin_kernel`), valid while the engine
/// lives. See buildKernelModule (KernelBuilder.h) for the arguments.
struct CompiledKernel {
  std::unique_ptr<mlir::ExecutionEngine> engine;
  void (*entry)(void **) = nullptr;
};

/// Returns a new context with every dialect, interface and pass splitlinear
/// uses registered (passes in the global registry, once per process) and the
/// dialects loaded. Multithreading is disabled: kernels compile in the
/// caller's thread.
std::unique_ptr<mlir::MLIRContext> createContext();

/// Prints `module` (custom form, no locations) to a string.
std::string printModule(mlir::ModuleOp module);

/// Parses `ir` (MLIR text) into a verified module in a new context (see
/// createContext). On failure returns failure() with the parser's and
/// verifier's diagnostics in `diagnostics`.
mlir::FailureOr<OwnedModule> parseModule(llvm::StringRef ir,
                                         std::string &diagnostics);

/// Builds the kernel IR of `spec` (lib/Kernels) in a new context. On an
/// invalid spec returns failure() with the reason in `error`.
mlir::FailureOr<OwnedModule> buildKernel(const KernelSpec &spec,
                                         std::string &error);

/// Runs the textual pass `pipeline` on `module`, verifying after every
/// pass. A pipeline anchored on `builtin.module(...)` and one without the
/// anchor mean the same. On failure (a pipeline that does not parse, or a
/// pass that fails) returns failure() with the diagnostics in
/// `diagnostics`.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, llvm::StringRef pipeline,
                                std::string &diagnostics);

/// JIT-compiles `module` (lowered to the LLVM dialect) at LLVM `optLevel`
/// (clamped to 0-3), with the runtime's entry points registered explicitly
/// (see runtimeSymbols), and runs its initializers. The module may be
/// destroyed afterwards. On failure returns failure() with LLVM's error and
/// the diagnostics in `error`.
mlir::FailureOr<std::unique_ptr<mlir::ExecutionEngine>>
createEngine(mlir::ModuleOp module, int optLevel, std::string &error);

/// Compiles the kernel `spec` describes: builds its IR, runs
/// `splitlinear-pipeline` for the spec's target and alignment (a C++
/// builder, no pipeline text) and JIT-compiles the result at -O2. With a
/// non-empty `spec.dumpDir`, writes there `kernel-<pid>-<n>.mlir` (the
/// pipeline as a comment, then the kernel IR) and `kernel-<pid>-<n>.passes.mlir`
/// (the IR after every pass); a directory that cannot be written is skipped.
/// On failure returns failure() with `error` holding the reason: for an
/// invalid spec the spec's problem; for a failing pass the diagnostics, the
/// kernel IR and a `splitlinear-opt` command that repeats the failure; for
/// the JIT, "JIT compilation failed: " and LLVM's error.
mlir::FailureOr<CompiledKernel> compileKernel(const KernelSpec &spec,
                                              std::string &error);

} // namespace splitlinear

#endif // SPLITLINEAR_JIT_KERNELCOMPILER_H

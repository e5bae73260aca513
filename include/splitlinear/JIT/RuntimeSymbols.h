//===- RuntimeSymbols.h - runtime entry points for the JIT ------*- C++ -*-===//
//
// Declares the symbol map that binds the names the lowered kernels call
// (`_mlir_ciface_slinrt_*`, `slinrt_prefer_per_part`, ...) to the runtime
// library's functions in this process.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_JIT_RUNTIMESYMBOLS_H
#define SPLITLINEAR_JIT_RUNTIMESYMBOLS_H

#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"

namespace splitlinear {

/// Returns every runtime entry point of RuntimeEntryPoints.def (both targets),
/// mangled by `interner`, at its address in this process. Registered with
/// every engine so that the calls resolve even when neither the C API nor
/// the runtime library was loaded with RTLD_GLOBAL. Thread-safe.
llvm::orc::SymbolMap runtimeSymbols(llvm::orc::MangleAndInterner interner);

} // namespace splitlinear

#endif // SPLITLINEAR_JIT_RUNTIMESYMBOLS_H

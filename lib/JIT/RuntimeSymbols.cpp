//===- RuntimeSymbols.cpp - runtime entry points for the JIT ----*- C++ -*-===//
//
// Builds the symbol map of the runtime's entry points from
// RuntimeEntryPoints.def, the list the conversion takes its callee names
// from, so that every function the lowered IR may call is bound.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/JIT/RuntimeSymbols.h"

#include "splitlinear/Runtime/Runtime.h"

llvm::orc::SymbolMap
splitlinear::runtimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap map;
  auto add = [&](const char *name, void *address) {
    map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                           llvm::JITSymbolFlags::Exported};
  };
#define SLIN_ADD(NAME) add(#NAME, reinterpret_cast<void *>(&NAME));
  SLIN_ADD(slinrt_default_context)
  SLIN_ADD(slinrt_prefer_per_part)
#define SLINRT_TARGET(TGT)                                                     \
  SLIN_ADD(_mlir_ciface_slinrt_##TGT##_alloc)                                  \
  SLIN_ADD(_mlir_ciface_slinrt_##TGT##_free)
#define SLINRT_DTYPE(T, ENUM)                                                  \
  SLIN_ADD(_mlir_ciface_slinrt_cpu_gemm_##T)                                   \
  SLIN_ADD(_mlir_ciface_slinrt_cuda_gemm_##T)
#define SLINRT_DTYPE_PAIR(S, T)                                                \
  SLIN_ADD(_mlir_ciface_slinrt_cpu_copy2d_##S##_##T)                           \
  SLIN_ADD(_mlir_ciface_slinrt_cuda_copy2d_##S##_##T)                          \
  SLIN_ADD(_mlir_ciface_slinrt_cpu_copy1d_##S##_##T)                           \
  SLIN_ADD(_mlir_ciface_slinrt_cuda_copy1d_##S##_##T)
#define SLINRT_SCALED_OUT_DTYPE(T, ENUM)                                       \
  SLIN_ADD(_mlir_ciface_slinrt_cpu_scaled_gemm_##T)                            \
  SLIN_ADD(_mlir_ciface_slinrt_cuda_scaled_gemm_##T)
#define SLINRT_FP8_DTYPE(T, ENUM) SLINRT_DTYPE_PAIR(T, T)
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
#undef SLIN_ADD
  return map;
}

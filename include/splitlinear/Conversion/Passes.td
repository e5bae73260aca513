//===- Passes.td - splitlinear conversion passes -----------*- tablegen -*-===//
//
// Conversions out of the `slin` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_CONVERSION_PASSES_TD
#define SPLITLINEAR_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertSlinToRuntime : Pass<"convert-slin-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lower slin ops to runtime calls (cuBLASLt on CUDA, BLAS on CPU)";
  let description = [{
    Rewrites `slin.gemm` and `slin.concat` into `func.call`s of the runtime's
    C-interface entry points (`slinrt_<target>_gemm_<type>`, ...), declared
    `llvm.emit_c_interface` so memrefs travel as strided descriptors;
    `memref.alloc`/`memref.dealloc` into the runtime's allocator;
    `slin.is_adjacent` and `slin.view_concat` into memref metadata arithmetic.
    The runtime context is the function's `!llvm.ptr` argument marked
    `{slin.context}`, or `slinrt_default_context()` when there is none.
    See include/splitlinear/Runtime/Runtime.h for the ABI.
  }];
  let options = [
    Option<"target", "target", "::mlir::slin::RuntimeTarget",
           /*default=*/"::mlir::slin::RuntimeTarget::cuda",
           "Runtime target", [{::llvm::cl::values(
             clEnumValN(::mlir::slin::RuntimeTarget::cuda, "cuda",
                        "CUDA (cuBLASLt)"),
             clEnumValN(::mlir::slin::RuntimeTarget::cpu, "cpu",
                        "the host (BLAS)"))}]>
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect", "::mlir::LLVM::LLVMDialect"
  ];
}

#endif // SPLITLINEAR_CONVERSION_PASSES_TD

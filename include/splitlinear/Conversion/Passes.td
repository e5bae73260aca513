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
    Rewrites `slin.gemm`, the FP8 `slin.scaled_gemm` and `slin.concat` into
    `func.call`s of the runtime's C-interface entry points
    (`slinrt_<target>_gemm_<type>`, `slinrt_<target>_scaled_gemm_<out>`,
    `slinrt_<target>_copy2d_<src>_<dst>`, FP8 parts copied as is), declared
    `llvm.emit_c_interface` so memrefs travel as strided descriptors (FP8
    elements are one byte);
    `slin.alloc`/`slin.dealloc` into the runtime's allocator
    (`slinrt_<target>_alloc/free`; the program's own `memref.alloc`s are
    left alone);
    `slin.is_adjacent` and `slin.view_concat` into memref metadata arithmetic.
    The runtime context is the function's `!slin.context` argument, or
    `slinrt_default_context()` when there is none; a function with two
    `!slin.context` arguments is an error. Last, `!slin.context` is lowered
    to `!llvm.ptr` in function signatures, calls and returns, so that the
    compiled function's C interface takes a `slinrt_context *` there.
    See include/splitlinear/Runtime/Runtime.h for the ABI.

    ```mlir
    // Before:
    func.func @kernel(%ctx: !slin.context, %a: memref<4x8xf32>,
                      %b: memref<16x8xf32>, %d: memref<4x16xf32>) {
      slin.gemm ins(%a, %b : memref<4x8xf32>, memref<16x8xf32>)
          outs(%d : memref<4x16xf32>) {transpose_b}
      return
    }
    // After (target=cpu; !dyn is memref<?x?xf32, strided<[?, ?], offset: ?>>):
    func.func @kernel(%ctx: !llvm.ptr, %a: memref<4x8xf32>,
                      %b: memref<16x8xf32>, %d: memref<4x16xf32>) {
      %0 = memref.cast %a : memref<4x8xf32> to !dyn
      ...
      call @slinrt_cpu_gemm_f32(%ctx, %0, %1, %2, %3, %c0_i32, %c1_i32, %c0_i32)
          : (!llvm.ptr, !dyn, !dyn, !dyn, memref<?xf32, ...>, i32, i32, i32) -> ()
      return
    }
    ```
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

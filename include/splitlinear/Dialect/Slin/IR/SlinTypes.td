//===- SlinTypes.td - slin dialect types -------------------*- tablegen -*-===//
//
// Types of the `slin` dialect: the runtime context that a kernel's calls of
// the runtime take.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_DIALECT_SLIN_IR_SLINTYPES_TD
#define SPLITLINEAR_DIALECT_SLIN_IR_SLINTYPES_TD

include "mlir/IR/AttrTypeBase.td"

class Slin_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Slin_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Slin_ContextType : Slin_Type<"Context", "context"> {
  let summary = "the runtime context a kernel runs on";
  let description = [{
    An opaque handle on the runtime's state (`slinrt_context *` in
    include/splitlinear/Runtime/Runtime.h: the BLAS or cuBLASLt handle, the
    workspace, the stream, the allocator and the sticky error status).

    A function takes its context as an argument of this type, at most one;
    `convert-slin-to-runtime` passes it to every runtime call the function
    makes and lowers the type to `!llvm.ptr`, so the compiled function's C
    interface takes the `slinrt_context *` there. A function without a
    `!slin.context` argument uses `slinrt_default_context()` (the
    process-wide CPU context).

    ```mlir
    func.func @kernel(%ctx: !slin.context, %a: memref<4x8xf32>,
                      %b: memref<16x8xf32>, %d: memref<4x16xf32>) {
      slin.gemm ins(%a, %b : memref<4x8xf32>, memref<16x8xf32>)
          outs(%d : memref<4x16xf32>) {transpose_b}
      return
    }
    ```
  }];
}

#endif // SPLITLINEAR_DIALECT_SLIN_IR_SLINTYPES_TD

module {
  module @inner {
    func.func private @slinrt_default_context() -> !llvm.ptr
    func.func @g(%ctx: !slin.context, %a: memref<4x4xf32>, %b: memref<4xf32>, %d: memref<4x4xf32>) {
      slin.gemm ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) bias(%b : memref<4xf32>) outs(%d : memref<4x4xf32>) {transpose_a, epilogue = #slin.epilogue<bias_grad>}
      return
    }
  }
  %buf = memref.alloc() : memref<8x4xf32>
  %p = memref.alloc() : memref<4x4xf32>
  slin.concat ins(%p, %p : memref<4x4xf32>, memref<4x4xf32>) outs(%buf : memref<8x4xf32>)
}

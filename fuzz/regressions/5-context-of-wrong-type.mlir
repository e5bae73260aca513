func.func private @slinrt_default_context() -> i32
func.func @f(%a: memref<4x4xf32>, %d: memref<4x4xf32>, %p0: memref<2x4xbf16>, %p1: memref<2x4xf16>, %o: memref<4x4xf64>) {
  %c = func.call @slinrt_default_context() : () -> i32
  slin.gemm ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%d : memref<4x4xf32>)
  slin.concat ins(%p0, %p1 : memref<2x4xbf16>, memref<2x4xf16>) outs(%o : memref<4x4xf64>)
  %t = slin.alloc() : memref<4x4xf32>
  slin.dealloc %t : memref<4x4xf32>
  return
}

func.func @f(%x: memref<?x0xf32>, %w0: memref<?x0xf32>, %w1: memref<?x0xf32>, %y: memref<?x0xf32>, %o: memref<0x4xf32>, %p: memref<?x4xf32>) {
  slin.linear ins(%x : memref<?x0xf32>) weights(%w0, %w1 : memref<?x0xf32>, memref<?x0xf32>) outs(%y : memref<?x0xf32>)
  slin.concat ins(%p, %p : memref<?x4xf32>, memref<?x4xf32>) outs(%o : memref<0x4xf32>)
  return
}

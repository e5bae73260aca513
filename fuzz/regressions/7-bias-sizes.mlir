func.func @f(%x: memref<?x32xf32>, %w0: memref<?x32xf32>, %w1: memref<?x32xf32>,
             %b0: memref<32xf32>, %b1: memref<32xf32>, %y: memref<?x32xf32>) {
  slin.linear ins(%x : memref<?x32xf32>) weights(%w0, %w1 : memref<?x32xf32>, memref<?x32xf32>)
      bias(%b0, %b1 : memref<32xf32>, memref<32xf32>) outs(%y : memref<?x32xf32>)
  return
}

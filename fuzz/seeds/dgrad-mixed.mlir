func.func @f(%dy: memref<?x?xf32>, %w0: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %w1: memref<0x?xf32>, %w2: memref<3x8xf16>, %dx: memref<?x8xf32>) {
  slin.linear_dgrad ins(%dy : memref<?x?xf32>) weights(%w0, %w1, %w2 : memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<0x?xf32>, memref<3x8xf16>) outs(%dx : memref<?x8xf32>)
  return
}

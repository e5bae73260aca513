func.func @f(%x: memref<4x16xf32>, %buf: memref<8x16xf32>, %y: memref<4x8xf32>) {
  %u = memref.cast %buf : memref<8x16xf32> to memref<*xf32>
  %r = memref.cast %u : memref<*xf32> to memref<8x16xf32>
  %a = memref.subview %r[0, 0] [4, 16] [1, 1] : memref<8x16xf32> to memref<4x16xf32, strided<[16, 1]>>
  %b = memref.reinterpret_cast %u to offset: [64], sizes: [4, 16], strides: [16, 1] : memref<*xf32> to memref<4x16xf32, strided<[16, 1], offset: 64>>
  %c = memref.cast %b : memref<4x16xf32, strided<[16, 1], offset: 64>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %c : memref<4x16xf32, strided<[16, 1]>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) outs(%y : memref<4x8xf32>)
  return
}

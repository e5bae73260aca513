func.func @f(%u: memref<*xf32>, %x: memref<4x16xf32>, %y: memref<4x8xf32>) {
  %a = memref.reinterpret_cast %u to offset: [0], sizes: [4, 16], strides: [16, 1] : memref<*xf32> to memref<4x16xf32, strided<[16, 1]>>
  %b = memref.reinterpret_cast %u to offset: [64], sizes: [4, 16], strides: [16, 1] : memref<*xf32> to memref<4x16xf32, strided<[16, 1], offset: 64>>
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 64>>) outs(%y : memref<4x8xf32>)
  return
}

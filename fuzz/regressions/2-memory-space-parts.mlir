func.func @f(%x: memref<4x16xf32>, %y: memref<4x8xf32>) {
  %buf = memref.alloc() : memref<8x16xf32, 1>
  %a = memref.subview %buf[0, 0] [4, 16] [1, 1] : memref<8x16xf32, 1> to memref<4x16xf32, strided<[16, 1]>, 1>
  %b = memref.subview %buf[4, 0] [4, 16] [1, 1] : memref<8x16xf32, 1> to memref<4x16xf32, strided<[16, 1], offset: 64>, 1>
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4x16xf32, strided<[16, 1]>, 1>, memref<4x16xf32, strided<[16, 1], offset: 64>, 1>) outs(%y : memref<4x8xf32>)
  return
}

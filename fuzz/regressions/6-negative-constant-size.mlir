func.func @f(%x: memref<4x16xf32>, %buf: memref<?x16xf32>, %y: memref<4x?xf32>, %o: memref<?x16xf32>) {
  %c = arith.constant -4 : index
  %a = memref.subview %buf[0, 0] [%c, 16] [1, 1] : memref<?x16xf32> to memref<?x16xf32, strided<[16, 1]>>
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %buf : memref<?x16xf32, strided<[16, 1]>>, memref<?x16xf32>) outs(%y : memref<4x?xf32>)
  slin.concat ins(%a, %buf : memref<?x16xf32, strided<[16, 1]>>, memref<?x16xf32>) outs(%o : memref<?x16xf32>)
  return
}

func.func @f(%x: memref<4x16xf32>, %buf: memref<?x16xf32>, %n: index, %y: memref<4x?xf32>) {
  %c4 = arith.constant 4 : index
  %m = arith.muli %n, %n : index
  %m2 = arith.muli %m, %m : index
  %o = arith.addi %m2, %c4 : index
  %o2 = arith.subi %o, %n : index
  %a = memref.subview %buf[%m2, 0] [%c4, 16] [1, 1] : memref<?x16xf32> to memref<?x16xf32, strided<[16, 1], offset: ?>>
  %b = memref.subview %buf[%o, 0] [%n, 16] [1, 1] : memref<?x16xf32> to memref<?x16xf32, strided<[16, 1], offset: ?>>
  %d = memref.dim %buf, %c4 : memref<?x16xf32>
  %c = memref.subview %buf[%o2, 0] [%d, 16] [1, 1] : memref<?x16xf32> to memref<?x16xf32, strided<[16, 1], offset: ?>>
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b, %c : memref<?x16xf32, strided<[16, 1], offset: ?>>, memref<?x16xf32, strided<[16, 1], offset: ?>>, memref<?x16xf32, strided<[16, 1], offset: ?>>) outs(%y : memref<4x?xf32>)
  return
}

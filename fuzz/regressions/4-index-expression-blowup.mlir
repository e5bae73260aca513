func.func @f(%x: memref<4x16xf32>, %buf: memref<?x16xf32>, %n: index, %m: index, %y: memref<4x?xf32>) {
  %s0 = arith.addi %n, %m : index
  %s1 = arith.muli %s0, %s0 : index
  %s2 = arith.muli %s1, %s1 : index
  %s3 = arith.muli %s2, %s2 : index
  %s4 = arith.muli %s3, %s3 : index
  %s5 = arith.muli %s4, %s4 : index
  %s6 = arith.muli %s5, %s5 : index
  %s7 = arith.muli %s6, %s6 : index
  %s8 = arith.muli %s7, %s7 : index
  %s9 = arith.muli %s8, %s8 : index
  %s10 = arith.muli %s9, %s9 : index
  %s11 = arith.muli %s10, %s10 : index
  %s12 = arith.muli %s11, %s11 : index
  %s13 = arith.muli %s12, %s12 : index
  %s14 = arith.muli %s13, %s13 : index
  %s15 = arith.muli %s14, %s14 : index
  %a = memref.subview %buf[%s15, 0] [4, 16] [1, 1] : memref<?x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>
  %b = memref.subview %buf[%s14, 0] [4, 16] [1, 1] : memref<?x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4x16xf32, strided<[16, 1], offset: ?>>, memref<4x16xf32, strided<[16, 1], offset: ?>>) outs(%y : memref<4x?xf32>)
  return
}

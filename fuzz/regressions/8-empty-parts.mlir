func.func @f(%x: memref<4x16xf32>, %a: memref<12x16xf32>, %b: memref<0x16xf32>, %y: memref<4x12xf32>) {
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<12x16xf32>, memref<0x16xf32>) outs(%y : memref<4x12xf32>)
  return
}
func.func @g(%a: memref<12x16xf32>, %b: memref<0x16xf32>, %y: memref<12x16xf32>) {
  slin.concat ins(%a, %b : memref<12x16xf32>, memref<0x16xf32>) outs(%y : memref<12x16xf32>)
  return
}

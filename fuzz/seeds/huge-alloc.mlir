func.func @f(%x: memref<4x16xf32>, %a: memref<4611686018427387903x16xf32>, %b: memref<1x16xf32>, %y: memref<4x?xf32>) {
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4611686018427387903x16xf32>, memref<1x16xf32>) outs(%y : memref<4x?xf32>)
  %c = slin.alloc() : memref<4611686018427387904x16xf32>
  slin.dealloc %c : memref<4611686018427387904x16xf32>
  return
}

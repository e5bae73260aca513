func.func @f(%u: memref<*xf32>, %x: memref<4x16xf32>, %b: memref<4x16xf32>, %y: memref<4x8xf32>) {
  %a = memref.cast %u : memref<*xf32> to memref<4x16xf32>
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4x16xf32>, memref<4x16xf32>) outs(%y : memref<4x8xf32>)
  return
}

#map = affine_map<(d0, d1) -> (d1, d0)>
func.func @f(%x: memref<4x16xf32>, %a: memref<4x16xf32, #map>, %b: memref<4x16xf32>, %y: memref<4x8xf32, #map>) {
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4x16xf32, #map>, memref<4x16xf32>) outs(%y : memref<4x8xf32, #map>)
  %v = slin.view_concat %a, %b : memref<4x16xf32, #map>, memref<4x16xf32> -> memref<8x16xf32, strided<[?, 1], offset: ?>>
  %ok = slin.is_adjacent %a, %b : memref<4x16xf32, #map>, memref<4x16xf32>
  return
}

func.func @f(%a: memref<2x8xf32, strided<[8, 1]>>, %b: memref<3x8xf32, strided<[8, 1], offset: 16>>, %v1: memref<?xf64>) -> i1 {
  %v = slin.view_concat %a, %b : memref<2x8xf32, strided<[8, 1]>>, memref<3x8xf32, strided<[8, 1], offset: 16>> -> memref<5x8xf32, strided<[8, 1], offset: 3>>
  %ok = slin.is_adjacent %a, %b {alignment = 4611686018427387904 : i64} : memref<2x8xf32, strided<[8, 1]>>, memref<3x8xf32, strided<[8, 1], offset: 16>>
  %w = slin.view_concat %v1, %v1 : memref<?xf64>, memref<?xf64> -> memref<?xf64, strided<[1], offset: ?>>
  %ok1 = slin.is_adjacent %v1, %v1 : memref<?xf64>, memref<?xf64>
  return %ok : i1
}

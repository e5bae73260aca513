func.func @f(%a: memref<2x8xf32, strided<[8, 1]>, 1>, %b: memref<3x8xf32, strided<[8, 1], offset: 16>, 1>) -> memref<5x8xf32, strided<[?, 1], offset: ?>> {
  %v = slin.view_concat %a, %b : memref<2x8xf32, strided<[8, 1]>, 1>, memref<3x8xf32, strided<[8, 1], offset: 16>, 1> -> memref<5x8xf32, strided<[?, 1], offset: ?>>
  return %v : memref<5x8xf32, strided<[?, 1], offset: ?>>
}

// RUN: splitlinear-opt %s -slin-elide-concat=alignment=4 | FileCheck %s
// RUN: not splitlinear-opt %s -slin-elide-concat=alignment=12 2>&1 | FileCheck %s --check-prefix=BAD

// A weaker alignment requirement turns a misaligned start into a view.
// CHECK-LABEL: func @misaligned_start
// CHECK: slin.view_concat
// CHECK-NOT: slin.concat
// BAD: slin-elide-concat: alignment must be a positive power of two, got 12
func.func @misaligned_start(%x: memref<4x3xf32>, %y: memref<4x4xf32>) {
  %buf = memref.alloc() : memref<5x3xf32>
  %a = memref.subview %buf[1, 0] [2, 3] [1, 1] : memref<5x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 3>>
  %b = memref.subview %buf[3, 0] [2, 3] [1, 1] : memref<5x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 9>>
  slin.linear ins(%x : memref<4x3xf32>) weights(%a, %b : memref<2x3xf32, strided<[3, 1], offset: 3>>, memref<2x3xf32, strided<[3, 1], offset: 9>>) outs(%y : memref<4x4xf32>)
  return
}

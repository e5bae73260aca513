// Regression test of slin-expand-linear for a finding of the fuzzing
// campaign (see docs/Reliability.md and fuzz/regressions/).
//
// RUN: splitlinear-opt %s -slin-expand-linear | FileCheck %s

// Finding 6: the column offsets of the per-part GEMMs were folded from the
// parts' sizes; the size of a subview whose size operand is the constant -4
// folded to a static -4, and the next block's subview got the static offset
// -4, which does not verify. A negative size is the program's run-time
// error, not a reason for invalid IR: dynamic sizes stay memref.dim values.
// CHECK-LABEL: func @negative_constant_size
// CHECK-SAME: (%{{.*}}: memref<4x16xf32>, %[[BUF:.*]]: memref<?x16xf32>, %[[Y:.*]]: memref<4x?xf32>)
// CHECK: %[[A:.*]] = memref.subview %[[BUF]][0, 0] [%{{.*}}, 16] [1, 1]
// CHECK: %[[N0:.*]] = memref.dim %[[A]], %{{.*}} : memref<?x16xf32, strided<[16, 1]>>
// CHECK: memref.subview %[[Y]][0, 0] [%{{.*}}, %[[N0]]] [1, 1]
// CHECK: %[[OFF:.*]] = arith.addi %{{.*}}, %[[N0]] : index
// CHECK: memref.subview %[[Y]][0, %[[OFF]]]
// CHECK-NOT: [0, -4]
func.func @negative_constant_size(%x: memref<4x16xf32>, %buf: memref<?x16xf32>, %y: memref<4x?xf32>) {
  %c = arith.constant -4 : index
  %a = memref.subview %buf[0, 0] [%c, 16] [1, 1] : memref<?x16xf32> to memref<?x16xf32, strided<[16, 1]>>
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %buf : memref<?x16xf32, strided<[16, 1]>>, memref<?x16xf32>) outs(%y : memref<4x?xf32>)
  return
}

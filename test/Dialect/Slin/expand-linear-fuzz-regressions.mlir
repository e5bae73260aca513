// Regression tests of slin-expand-linear for findings of the fuzzing
// campaign (see docs/Reliability.md and fuzz/regressions/). The findings
// were in the per-part expansion (then the default of a multi-part
// slin.linear), so the ops ask for it with strategy `per_part`.
//
// RUN: splitlinear-opt %s -split-input-file -slin-expand-linear | FileCheck %s

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
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %buf : memref<?x16xf32, strided<[16, 1]>>, memref<?x16xf32>) outs(%y : memref<4x?xf32>) {strategy = #slin.strategy<per_part>}
  return
}

// -----

// Finding 8: a statically empty part got a column block starting at the end
// of the output (`offset 1 is out-of-bounds: 12 >= 12` from memref.subview).
// It has nothing to write: no block, no GEMM.
// CHECK-LABEL: func @empty_part
// CHECK-SAME: %[[A:[^:]*]]: memref<12x16xf32>
// CHECK: memref.subview %{{.*}}[0, 0] [%{{.*}}, 12] [1, 1]
// CHECK: slin.gemm ins(%{{.*}}, %[[A]] :
// CHECK-NOT: slin.gemm
func.func @empty_part(%x: memref<4x16xf32>, %a: memref<12x16xf32>, %b: memref<0x16xf32>, %y: memref<4x12xf32>) {
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<12x16xf32>, memref<0x16xf32>) outs(%y : memref<4x12xf32>) {strategy = #slin.strategy<per_part>}
  return
}

// -----

// Finding 8 (the fuzzer's case): an output with no columns; every block
// would start at offset 0 of an empty dimension. Nothing to compute.
// CHECK-LABEL: func @empty_output
// CHECK-NOT: slin.
// CHECK: return
func.func @empty_output(%x: memref<?x0xf32>, %w0: memref<?x0xf32>, %w1: memref<?x0xf32>, %y: memref<?x0xf32>) {
  slin.linear ins(%x : memref<?x0xf32>) weights(%w0, %w1 : memref<?x0xf32>, memref<?x0xf32>) outs(%y : memref<?x0xf32>) {strategy = #slin.strategy<per_part>}
  return
}

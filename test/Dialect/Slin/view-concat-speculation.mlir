// RUN: splitlinear-opt %s -loop-invariant-code-motion -split-input-file | FileCheck %s

// Regression: slin.view_concat was Pure, so loop-invariant code motion
// hoisted it ahead of a loop that may run zero times, building a view that
// nothing established was valid. It has no memory effects but is not
// speculatable; the Pure slin.is_adjacent still moves.
// CHECK-LABEL: func @view_not_hoisted
// CHECK: slin.is_adjacent
// CHECK: scf.for
// CHECK-NEXT: %[[V:.*]] = slin.view_concat
// CHECK-NEXT: slin.linear ins(%{{.*}}) weights(%[[V]] :
func.func @view_not_hoisted(%x: memref<4x16xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>,
                            %n: index, %y: memref<4x12xf32>) -> i1 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ok = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {
    %adj = slin.is_adjacent %a, %b : memref<8x16xf32>, memref<4x16xf32>
    %v = slin.view_concat %a, %b : memref<8x16xf32>, memref<4x16xf32> -> memref<12x16xf32, strided<[?, 1], offset: ?>>
    slin.linear ins(%x : memref<4x16xf32>) weights(%v : memref<12x16xf32, strided<[?, 1], offset: ?>>) outs(%y : memref<4x12xf32>)
    %next = arith.index_cast %adj : i1 to index
    scf.yield %next : index
  }
  %r = arith.index_cast %ok : index to i1
  return %r : i1
}

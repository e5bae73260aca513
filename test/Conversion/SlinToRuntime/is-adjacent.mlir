// slin.is_adjacent becomes arith over each part's metadata
// (memref.extract_strided_metadata and the aligned base address), computing
// the predicate documented on the op; no runtime call, no context.
// Its run-time behaviour is tested in test/Integration/is-adjacent.mlir.
//
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cpu" | FileCheck %s

!m2 = memref<?x?xf32, strided<[?, ?], offset: ?>>

// CHECK-LABEL: func.func @two_matrices(
// CHECK-SAME: %[[A:[^:]*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[B:[^:]*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>)
// CHECK-NOT: slinrt_
// Part 0 opens the running state when it is non-empty.
// CHECK: %[[BASE0:.*]], %[[OFF0:.*]], %[[SZ0:.*]]:2, %[[ST0:.*]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[PTR0:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: %[[NE0:.*]] = arith.cmpi ne, %[[SZ0]]#0, %{{.*}} : index
// CHECK: %[[LD0:.*]] = arith.select %{{.*}}, %[[ST0]]#0, %{{.*}} : index
// CHECK: %[[END0:.*]] = arith.addi %[[OFF0]], %{{.*}} : index
// Part 1: column stride 1 (or one column), row stride == ld, same base
// address, starts where part 0 ends.
// CHECK: %[[BASE1:.*]], %[[OFF1:.*]], %[[SZ1:.*]]:2, %[[ST1:.*]]:2 = memref.extract_strided_metadata %[[B]]
// CHECK: %[[PTR1:.*]] = memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: %[[NE1:.*]] = arith.cmpi ne, %[[SZ1]]#0, %{{.*}} : index
// CHECK: %[[LD1:.*]] = arith.select %{{.*}}, %[[ST1]]#0, %[[LD0]] : index
// CHECK: arith.cmpi eq, %[[ST1]]#0, %[[LD1]] : index
// CHECK: arith.cmpi eq, %[[ST1]]#1, %{{.*}} : index
// CHECK: arith.cmpi eq, %[[PTR1]], %{{.*}} : index
// CHECK: arith.cmpi eq, %[[OFF1]], %{{.*}} : index
// Rows do not overlap: ld >= K.
// CHECK: arith.cmpi sge, %[[LD1]], %{{.*}} : index
// The first element is aligned: (address + offset * 4) % 32 == 0.
// CHECK: %[[ELT:.*]] = arith.constant 4 : index
// CHECK: %[[SCALED:.*]] = arith.muli %{{.*}}, %[[ELT]] : index
// CHECK: %[[FIRST:.*]] = arith.addi %{{.*}}, %[[SCALED]] : index
// CHECK: %[[ALIGN:.*]] = arith.constant 32 : index
// CHECK: %[[REM:.*]] = arith.remui %[[FIRST]], %[[ALIGN]] : index
// CHECK: arith.cmpi eq, %[[REM]], %{{.*}} : index
// CHECK: %[[RESULT:.*]] = arith.andi
// CHECK-NEXT: return %[[RESULT]] : i1
// CHECK-NOT: slin.is_adjacent
func.func @two_matrices(%a: !m2, %b: !m2) -> i1 {
  %r = slin.is_adjacent %a, %b {alignment = 32} : !m2, !m2
  return %r : i1
}

// Rank 1: the row stride is 1, no ld >= K test; f16 elements are 2 bytes and
// the default alignment is 16.
// CHECK-LABEL: func.func @two_vectors(
// CHECK-COUNT-2: memref.extract_strided_metadata
// CHECK-NOT: arith.cmpi sge
// CHECK: arith.constant 2 : index
// CHECK: arith.constant 16 : index
// CHECK: arith.remui
func.func @two_vectors(%a: memref<?xf16, strided<[?], offset: ?>>, %b: memref<4xf16>) -> i1 {
  %r = slin.is_adjacent %a, %b : memref<?xf16, strided<[?], offset: ?>>, memref<4xf16>
  return %r : i1
}

// slin.view_concat becomes a memref.reinterpret_cast of the base buffer of the
// first non-empty part (chosen with arith.select; part 0 when all are
// empty), at that part's offset, with Σ N_i rows and its row stride, then a
// memref.cast when the op's result type is more static.
//
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cpu" | FileCheck %s

!m2 = memref<?x?xf32, strided<[?, ?], offset: ?>>
!view = memref<?x?xf32, strided<[?, 1], offset: ?>>

// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME: %[[A:[^:]*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>, %[[B:[^:]*]]: memref<?x?xf32, strided<[?, ?], offset: ?>>)
// CHECK: %[[BASE0:.*]], %[[OFF0:.*]], %[[SZ0:.*]]:2, %[[ST0:.*]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[ROWS0:.*]] = arith.addi %{{.*}}, %[[SZ0]]#0 : index
// CHECK: %[[NE0:.*]] = arith.cmpi ne, %[[SZ0]]#0, %{{.*}} : index
// CHECK: %[[BASE1:.*]], %[[OFF1:.*]], %[[SZ1:.*]]:2, %[[ST1:.*]]:2 = memref.extract_strided_metadata %[[B]]
// CHECK: %[[ROWS:.*]] = arith.addi %[[ROWS0]], %[[SZ1]]#0 : index
// CHECK: %[[NE1:.*]] = arith.cmpi ne, %[[SZ1]]#0, %{{.*}} : index
// CHECK: %[[NOTSEEN:.*]] = arith.xori %[[NE0]], %{{.*}} : i1
// CHECK: %[[FIRST1:.*]] = arith.andi %[[NE1]], %[[NOTSEEN]] : i1
// CHECK: %[[BASE:.*]] = arith.select %[[FIRST1]], %[[BASE1]], %[[BASE0]] : memref<f32>
// CHECK: %[[OFF:.*]] = arith.select %[[FIRST1]], %[[OFF1]], %[[OFF0]] : index
// CHECK: %[[LD:.*]] = arith.select %[[FIRST1]], %[[ST1]]#0, %[[ST0]]#0 : index
// CHECK: %[[K:.*]] = arith.select %[[FIRST1]], %[[SZ1]]#1, %[[SZ0]]#1 : index
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%[[ROWS]], %[[K]]], strides: [%[[LD]], 1] : memref<f32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK-NEXT: return %[[VIEW]]
func.func @dynamic(%a: !m2, %b: !m2) -> !view {
  %r = slin.view_concat %a, %b : !m2, !m2 -> !view
  return %r : !view
}

// Static rows and columns; the result type's static row stride needs a cast.
// CHECK-LABEL: func.func @static_result(
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [5, 8], strides: [%{{.*}}, 1] : memref<f32> to memref<5x8xf32, strided<[?, 1], offset: ?>>
// CHECK-NEXT: %[[CAST:.*]] = memref.cast %[[VIEW]] : memref<5x8xf32, strided<[?, 1], offset: ?>> to memref<5x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NEXT: return %[[CAST]]
func.func @static_result(%a: memref<2x8xf32>, %b: memref<3x8xf32, strided<[8, 1], offset: 16>>)
    -> memref<5x8xf32, strided<[8, 1], offset: ?>> {
  %r = slin.view_concat %a, %b : memref<2x8xf32>, memref<3x8xf32, strided<[8, 1], offset: 16>>
      -> memref<5x8xf32, strided<[8, 1], offset: ?>>
  return %r : memref<5x8xf32, strided<[8, 1], offset: ?>>
}

// Rank 1: unit stride.
// CHECK-LABEL: func.func @vectors(
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [%{{.*}}], strides: [1] : memref<bf16> to memref<?xbf16, strided<[1], offset: ?>>
func.func @vectors(%a: memref<?xbf16, strided<[?], offset: ?>>, %b: memref<?xbf16, strided<[?], offset: ?>>)
    -> memref<?xbf16, strided<[1], offset: ?>> {
  %r = slin.view_concat %a, %b : memref<?xbf16, strided<[?], offset: ?>>, memref<?xbf16, strided<[?], offset: ?>>
      -> memref<?xbf16, strided<[1], offset: ?>>
  return %r : memref<?xbf16, strided<[1], offset: ?>>
}

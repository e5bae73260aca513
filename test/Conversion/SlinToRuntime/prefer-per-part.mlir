// slin.prefer_per_part becomes one call of the runtime's decision,
// slinrt_prefer_per_part(ctx, rows, parts, bytes) != 0, with the bytes of the
// parts computed from their sizes and element types.
//
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cuda" | FileCheck %s

// A plain C function (no C interface: no memref operands).
// CHECK: func.func private @slinrt_prefer_per_part(!llvm.ptr, i64, i64, i64) -> i32{{$}}
// CHECK-LABEL: func.func @choice(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr, %[[M:[^:]*]]: index, %[[A:[^:]*]]: memref<?x16xf32>, %[[B:[^:]*]]: memref<4x16xbf16>)
// CHECK-DAG: %[[N:.*]] = memref.dim %[[A]], %{{.*}} : memref<?x16xf32>
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[ROWS:.*]] = arith.index_cast %[[M]] : index to i64
// CHECK: %[[PARTS:.*]] = arith.constant 2 : i64
// CHECK: %[[BYTES:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: %[[R:.*]] = call @slinrt_prefer_per_part(%[[CTX]], %[[ROWS]], %[[PARTS]], %[[BYTES]]) : (!llvm.ptr, i64, i64, i64) -> i32
// CHECK: %[[P:.*]] = arith.cmpi ne, %[[R]], %{{.*}} : i32
// CHECK: return %[[P]] : i1
func.func @choice(%ctx: !slin.context, %m: index, %a: memref<?x16xf32>, %b: memref<4x16xbf16>) -> i1 {
  %p = slin.prefer_per_part rows(%m) weights(%a, %b : memref<?x16xf32>, memref<4x16xbf16>)
  return %p : i1
}

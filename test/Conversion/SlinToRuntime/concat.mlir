// slin.concat becomes, per part, a subview of the destination's row block
// [off_i, off_i + N_i) and one converting copy
// slinrt_<target>_copy{2d,1d}_<src>_<dst>(ctx, part, block). Offsets stay
// static while the preceding parts' rows are static.
//
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cpu" | FileCheck %s -DTGT=cpu
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cuda" | FileCheck %s -DTGT=cuda

// CHECK-DAG: func.func private @slinrt_[[TGT]]_copy2d_f32_f32(!llvm.ptr, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @slinrt_[[TGT]]_copy2d_bf16_f32(!llvm.ptr, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @slinrt_[[TGT]]_copy2d_f64_f32(
// CHECK-DAG: func.func private @slinrt_[[TGT]]_copy1d_f16_bf16(!llvm.ptr, memref<?xf16, strided<[?], offset: ?>>, memref<?xbf16, strided<[?], offset: ?>>) attributes {llvm.emit_c_interface}

// CHECK-LABEL: func.func @concat_2d(
// CHECK-SAME: %[[P0:[^:]*]]: memref<2x8xf32>, %[[P1:[^:]*]]: memref<?x8xbf16>, %[[P2:[^:]*]]: memref<3x8xf64>, %[[OUT:[^:]*]]: memref<?x8xf32>)
// CHECK: %[[CTX:.*]] = call @slinrt_default_context()
// CHECK: %[[B0:.*]] = memref.subview %[[OUT]][0, 0] [2, 8] [1, 1]
// CHECK: %[[S0:.*]] = memref.cast %[[P0]] : memref<2x8xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[D0:.*]] = memref.cast %[[B0]] : {{.*}} to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: call @slinrt_[[TGT]]_copy2d_f32_f32(%[[CTX]], %[[S0]], %[[D0]])
// CHECK: %[[N1:.*]] = memref.dim %[[P1]], %{{.*}} : memref<?x8xbf16>
// CHECK: %[[B1:.*]] = memref.subview %[[OUT]][2, 0] [%[[N1]], 8] [1, 1]
// CHECK: %[[S1:.*]] = memref.cast %[[P1]] : memref<?x8xbf16> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
// CHECK: %[[D1:.*]] = memref.cast %[[B1]]
// CHECK: call @slinrt_[[TGT]]_copy2d_bf16_f32(%[[CTX]], %[[S1]], %[[D1]])
// CHECK: %[[OFF2:.*]] = arith.addi %{{.*}}, %[[N1]] : index
// CHECK: %[[B2:.*]] = memref.subview %[[OUT]][%[[OFF2]], 0] [3, 8] [1, 1]
// CHECK: call @slinrt_[[TGT]]_copy2d_f64_f32(%[[CTX]], %{{.*}}, %{{.*}})
// CHECK-NOT: slin.concat
func.func @concat_2d(%p0: memref<2x8xf32>, %p1: memref<?x8xbf16>, %p2: memref<3x8xf64>,
                     %out: memref<?x8xf32>) {
  slin.concat ins(%p0, %p1, %p2 : memref<2x8xf32>, memref<?x8xbf16>, memref<3x8xf64>)
      outs(%out : memref<?x8xf32>)
  return
}

// Rank 1 (bias parts), converting f16 -> bf16, on the context argument.
// CHECK-LABEL: func.func @concat_1d(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr, %[[P0:[^:]*]]: memref<4xf16>, %[[P1:[^:]*]]: memref<2xf16, strided<[2]>>, %[[OUT:[^:]*]]: memref<6xbf16>)
// CHECK-NOT: slinrt_default_context
// CHECK: %[[B0:.*]] = memref.subview %[[OUT]][0] [4] [1]
// CHECK: call @slinrt_[[TGT]]_copy1d_f16_bf16(%[[CTX]],
// CHECK: %[[B1:.*]] = memref.subview %[[OUT]][4] [2] [1]
// CHECK: %[[S1:.*]] = memref.cast %[[P1]] : memref<2xf16, strided<[2]>> to memref<?xf16, strided<[?], offset: ?>>
// CHECK: %[[D1:.*]] = memref.cast %[[B1]] : memref<2xbf16, strided<[1], offset: 4>> to memref<?xbf16, strided<[?], offset: ?>>
// CHECK: call @slinrt_[[TGT]]_copy1d_f16_bf16(%[[CTX]], %[[S1]], %[[D1]])
func.func @concat_1d(%ctx: !slin.context, %p0: memref<4xf16>,
                     %p1: memref<2xf16, strided<[2]>>, %out: memref<6xbf16>) {
  slin.concat ins(%p0, %p1 : memref<4xf16>, memref<2xf16, strided<[2]>>) outs(%out : memref<6xbf16>)
  return
}

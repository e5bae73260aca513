// The FP8 ops: slin.scaled_gemm becomes one call of
// slinrt_<target>_scaled_gemm_<out>(ctx, A, B, D, scaleA, scaleB, bias,
// aDtype, bDtype, scaling, fastAccum) with the slinrt_dtype codes of A and B
// (SLINRT_F8E4M3FN = 4, SLINRT_F8E5M2 = 5) and slinrt_scaling (tensorwise 0,
// outer_vector 1); no bias passes an empty memref<0xT>. A concat of FP8
// parts is a same-type copy, and an FP8 slin.alloc asks for one byte per
// element.
//
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cpu" | FileCheck %s -DTGT=cpu
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cuda" | FileCheck %s -DTGT=cuda

// CHECK-DAG: func.func private @slinrt_[[TGT]]_scaled_gemm_bf16(!llvm.ptr, memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>, memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?xbf16, strided<[?], offset: ?>>, i32, i32, i32, i32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @slinrt_[[TGT]]_scaled_gemm_f32(!llvm.ptr, memref<?x?xf8E5M2, strided<[?, ?], offset: ?>>, memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, {{.*}}, i32, i32, i32, i32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @slinrt_[[TGT]]_copy2d_f8e4m3fn_f8e4m3fn(!llvm.ptr, memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>, memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>) attributes {llvm.emit_c_interface}

// CHECK-LABEL: func.func @outer_vector_bias(
// CHECK-SAME: %[[A:[^:]*]]: memref<?x64xf8E4M3FN>, %[[B:[^:]*]]: memref<48x64xf8E4M3FN>, %[[SA:[^:]*]]: memref<?xf32>, %[[SB:[^:]*]]: memref<48xf32>, %[[BIAS:[^:]*]]: memref<48xbf16>, %[[D:[^:]*]]: memref<?x48xbf16>)
// CHECK: %[[CTX:.*]] = call @slinrt_default_context() : () -> !llvm.ptr
// CHECK-DAG: %[[CA:.*]] = memref.cast %[[A]] : memref<?x64xf8E4M3FN> to memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>
// CHECK-DAG: %[[CB:.*]] = memref.cast %[[B]] : memref<48x64xf8E4M3FN> to memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>
// CHECK-DAG: %[[CD:.*]] = memref.cast %[[D]]
// CHECK-DAG: %[[CSA:.*]] = memref.cast %[[SA]] : memref<?xf32> to memref<?xf32, strided<[?], offset: ?>>
// CHECK-DAG: %[[CSB:.*]] = memref.cast %[[SB]] : memref<48xf32> to memref<?xf32, strided<[?], offset: ?>>
// CHECK-DAG: %[[CBIAS:.*]] = memref.cast %[[BIAS]] : memref<48xbf16> to memref<?xbf16, strided<[?], offset: ?>>
// CHECK: %[[ADT:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %[[BDT:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %[[SCALING:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[FAST:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @slinrt_[[TGT]]_scaled_gemm_bf16(%[[CTX]], %[[CA]], %[[CB]], %[[CD]], %[[CSA]], %[[CSB]], %[[CBIAS]], %[[ADT]], %[[BDT]], %[[SCALING]], %[[FAST]])
// CHECK-NOT: slin.
func.func @outer_vector_bias(%a: memref<?x64xf8E4M3FN>, %b: memref<48x64xf8E4M3FN>, %sa: memref<?xf32>, %sb: memref<48xf32>,
                             %bias: memref<48xbf16>, %d: memref<?x48xbf16>) {
  slin.scaled_gemm ins(%a, %b : memref<?x64xf8E4M3FN>, memref<48x64xf8E4M3FN>) scales(%sa, %sb : memref<?xf32>, memref<48xf32>)
      bias(%bias : memref<48xbf16>) outs(%d : memref<?x48xbf16>) {scaling = #slin.scaling<outer_vector>, fast_accum}
  return
}

// e5m2 x e4m3fn, tensorwise, no bias (an empty memref), no fast accumulation.
// CHECK-LABEL: func.func @tensorwise_no_bias(
// CHECK: %[[EMPTY:.*]] = memref.alloca() : memref<0xf32>
// CHECK: %[[CBIAS:.*]] = memref.cast %[[EMPTY]] : memref<0xf32> to memref<?xf32, strided<[?], offset: ?>>
// CHECK: %[[ADT:.*]] = arith.constant 5 : i32
// CHECK-NEXT: %[[BDT:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %[[SCALING:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[FAST:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @slinrt_[[TGT]]_scaled_gemm_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[CBIAS]], %[[ADT]], %[[BDT]], %[[SCALING]], %[[FAST]])
func.func @tensorwise_no_bias(%a: memref<8x32xf8E5M2>, %b: memref<16x32xf8E4M3FN>, %sa: memref<1xf32>, %sb: memref<1xf32>, %d: memref<8x16xf32>) {
  slin.scaled_gemm ins(%a, %b : memref<8x32xf8E5M2>, memref<16x32xf8E4M3FN>) scales(%sa, %sb : memref<1xf32>, memref<1xf32>)
      outs(%d : memref<8x16xf32>) {scaling = #slin.scaling<tensorwise>}
  return
}

// An FP8 copy of two parts: 48 x 64 one-byte elements, then one same-type
// copy per part.
// CHECK-LABEL: func.func @fp8_copy(
// CHECK: %[[BYTES:.*]] = arith.constant 3072 : index
// CHECK: %[[BYTES64:.*]] = arith.index_cast %[[BYTES]] : index to i64
// CHECK: %[[RAW:.*]] = call @slinrt_[[TGT]]_alloc(%{{.*}}, %[[BYTES64]])
// CHECK: %[[BUF:.*]] = memref.view %[[RAW]][%{{.*}}][] : memref<?xi8> to memref<48x64xf8E4M3FN>
// CHECK: call @slinrt_[[TGT]]_copy2d_f8e4m3fn_f8e4m3fn(
// CHECK: call @slinrt_[[TGT]]_copy2d_f8e4m3fn_f8e4m3fn(
// CHECK: call @slinrt_[[TGT]]_free(
func.func @fp8_copy(%a: memref<32x64xf8E4M3FN>, %b: memref<16x64xf8E4M3FN>) {
  %buf = slin.alloc() : memref<48x64xf8E4M3FN>
  slin.concat ins(%a, %b : memref<32x64xf8E4M3FN>, memref<16x64xf8E4M3FN>) outs(%buf : memref<48x64xf8E4M3FN>)
  slin.dealloc %buf : memref<48x64xf8E4M3FN>
  return
}

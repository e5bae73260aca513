// FP8 memrefs lower through the whole pipeline to the runtime's C interface:
// descriptors of one-byte elements passed by pointer
// (_mlir_ciface_slinrt_TGT_scaled_gemm_T takes seven descriptor pointers and
// four i32), an FP8 runtime buffer of 48 x 64 elements asks for 3072 bytes,
// and no FP8 type is left in the LLVM dialect (FP8 memrefs become
// descriptors of plain pointers).
//
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" | FileCheck %s -DTGT=cpu
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cuda" | FileCheck %s -DTGT=cuda
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" \
// RUN:   | not grep -E "(slin|memref|scf|arith|func|cf)\.[a-z_]+[ (<]|f8E4M3FN|f8E5M2"

// CHECK-DAG: llvm.func @_mlir_ciface_slinrt_[[TGT]]_scaled_gemm_bf16(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, i32, i32)
// CHECK-DAG: llvm.func @_mlir_ciface_slinrt_[[TGT]]_copy2d_f8e4m3fn_f8e4m3fn(!llvm.ptr, !llvm.ptr, !llvm.ptr)

// CHECK-LABEL: llvm.func @fused_copy(
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(3072 : i64) : i64
// CHECK: llvm.call @slinrt_[[TGT]]_alloc(%{{.*}}, %[[BYTES]])
// CHECK: llvm.call @slinrt_[[TGT]]_copy2d_f8e4m3fn_f8e4m3fn(
// CHECK: llvm.call @slinrt_[[TGT]]_copy2d_f8e4m3fn_f8e4m3fn(
// CHECK: llvm.call @slinrt_[[TGT]]_scaled_gemm_bf16(
// CHECK: llvm.call @slinrt_[[TGT]]_free(
func.func @fused_copy(%ctx: !slin.context, %x: memref<?x64xf8E4M3FN>, %sx: memref<?xf32>, %a: memref<32x64xf8E4M3FN>,
                      %b: memref<16x64xf8E4M3FN>, %sw: memref<48xf32>, %y: memref<?x48xbf16>) {
  %w = slin.alloc() : memref<48x64xf8E4M3FN>
  slin.concat ins(%a, %b : memref<32x64xf8E4M3FN>, memref<16x64xf8E4M3FN>) outs(%w : memref<48x64xf8E4M3FN>)
  slin.scaled_gemm ins(%x, %w : memref<?x64xf8E4M3FN>, memref<48x64xf8E4M3FN>) scales(%sx, %sw : memref<?xf32>, memref<48xf32>)
      outs(%y : memref<?x48xbf16>) {scaling = #slin.scaling<outer_vector>}
  slin.dealloc %w : memref<48x64xf8E4M3FN>
  return
}

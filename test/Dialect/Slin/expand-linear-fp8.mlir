// RUN: splitlinear-opt %s -slin-expand-linear -split-input-file | FileCheck %s

// slin.scaled_linear becomes slin.scaled_gemm (TN: x8 · w8ᵀ), keeping its
// scales, scaling and fast_accum.

// One part, tensorwise: one scaled GEMM on the part, bias fused.
// CHECK-LABEL: func @one_part
// CHECK-SAME: (%[[X:[^:]*]]: memref<?x32xf8E4M3FN>, %[[SX:[^:]*]]: memref<1xf32>, %[[W:[^:]*]]: memref<16x32xf8E5M2>, %[[SW:[^:]*]]: memref<1xf32>, %[[B:[^:]*]]: memref<16xbf16>, %[[Y:[^:]*]]: memref<?x16xbf16>)
// CHECK: %[[PATH:.*]] = arith.constant 0 : i32
// CHECK: slin.scaled_gemm ins(%[[X]], %[[W]] : memref<?x32xf8E4M3FN>, memref<16x32xf8E5M2>) scales(%[[SX]], %[[SW]] : memref<1xf32>, memref<1xf32>) bias(%[[B]] : memref<16xbf16>) outs(%[[Y]] : memref<?x16xbf16>) {fast_accum, scaling = #slin.scaling<tensorwise>}
// CHECK: return %[[PATH]]
// CHECK-NOT: slin.scaled_linear
func.func @one_part(%x: memref<?x32xf8E4M3FN>, %sx: memref<1xf32>, %w: memref<16x32xf8E5M2>, %sw: memref<1xf32>, %b: memref<16xbf16>, %y: memref<?x16xbf16>) -> i32 {
  %p = slin.scaled_linear ins(%x : memref<?x32xf8E4M3FN>) scale(%sx : memref<1xf32>) weights(%w : memref<16x32xf8E5M2>)
      weight_scale(%sw : memref<1xf32>) bias(%b : memref<16xbf16>) outs(%y : memref<?x16xbf16>)
      {scaling = #slin.scaling<tensorwise>, fast_accum} -> i32
  return %p : i32
}

// -----

// Strategy fused with two parts: a same-type FP8 copy of the parts (and a
// copy of the bias parts), one scaled GEMM with the whole weight_scale.
// CHECK-LABEL: func @fused
// CHECK-SAME: (%[[X:[^:]*]]: memref<?x32xf8E4M3FN>, %[[SX:[^:]*]]: memref<?xf32>, %[[A:[^:]*]]: memref<16x32xf8E4M3FN>, %[[C:[^:]*]]: memref<32x32xf8E4M3FN>, %[[SW:[^:]*]]: memref<48xf32>, %[[BA:[^:]*]]: memref<16xf32>, %[[BC:[^:]*]]: memref<32xf32>, %[[Y:[^:]*]]: memref<?x48xf32>)
// CHECK: %[[BIAS:.*]] = slin.alloc() : memref<48xf32>
// CHECK: slin.concat ins(%[[BA]], %[[BC]] : memref<16xf32>, memref<32xf32>) outs(%[[BIAS]] : memref<48xf32>)
// CHECK: %[[W:.*]] = slin.alloc() : memref<48x32xf8E4M3FN>
// CHECK: slin.concat ins(%[[A]], %[[C]] : memref<16x32xf8E4M3FN>, memref<32x32xf8E4M3FN>) outs(%[[W]] : memref<48x32xf8E4M3FN>)
// CHECK: slin.scaled_gemm ins(%[[X]], %[[W]] : memref<?x32xf8E4M3FN>, memref<48x32xf8E4M3FN>) scales(%[[SX]], %[[SW]] : memref<?xf32>, memref<48xf32>) bias(%[[BIAS]] : memref<48xf32>) outs(%[[Y]] : memref<?x48xf32>) {scaling = #slin.scaling<outer_vector>}
// CHECK-DAG: slin.dealloc %[[W]]
// CHECK-DAG: slin.dealloc %[[BIAS]]
func.func @fused(%x: memref<?x32xf8E4M3FN>, %sx: memref<?xf32>, %a: memref<16x32xf8E4M3FN>, %c: memref<32x32xf8E4M3FN>, %sw: memref<48xf32>,
                 %ba: memref<16xf32>, %bc: memref<32xf32>, %y: memref<?x48xf32>) {
  slin.scaled_linear ins(%x : memref<?x32xf8E4M3FN>) scale(%sx : memref<?xf32>) weights(%a, %c : memref<16x32xf8E4M3FN>, memref<32x32xf8E4M3FN>)
      weight_scale(%sw : memref<48xf32>) bias(%ba, %bc : memref<16xf32>, memref<32xf32>) outs(%y : memref<?x48xf32>)
      {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

// Strategy per_part: one scaled GEMM per part into its column block of y,
// with its slice [off_i, off_i + N_i) of weight_scale and its bias part.
// CHECK-LABEL: func @per_part
// CHECK-SAME: (%[[X:[^:]*]]: memref<?x32xf8E4M3FN>, %[[SX:[^:]*]]: memref<?xf32>, %[[A:[^:]*]]: memref<16x32xf8E4M3FN>, %[[C:[^:]*]]: memref<?x32xf8E4M3FN>, %[[SW:[^:]*]]: memref<?xf32>, %[[BA:[^:]*]]: memref<16xf16>, %[[BC:[^:]*]]: memref<?xf16>, %[[Y:[^:]*]]: memref<?x?xf16>)
// CHECK: %[[PATH:.*]] = arith.constant 2 : i32
// CHECK: %[[Y0:.*]] = memref.subview %[[Y]][0, 0] [%{{.*}}, 16] [1, 1]
// CHECK: %[[S0:.*]] = memref.subview %[[SW]][0] [16] [1]
// CHECK: slin.scaled_gemm ins(%[[X]], %[[A]] : {{.*}}) scales(%[[SX]], %[[S0]] : {{.*}}) bias(%[[BA]] : memref<16xf16>) outs(%[[Y0]] : {{.*}}) {scaling = #slin.scaling<outer_vector>}
// CHECK: %[[N:.*]] = memref.dim %[[C]], %{{.*}}
// CHECK: %[[Y1:.*]] = memref.subview %[[Y]][0, 16] [%{{.*}}, %[[N]]] [1, 1]
// CHECK: %[[N2:.*]] = memref.dim %[[C]], %{{.*}}
// CHECK: %[[S1:.*]] = memref.subview %[[SW]][16] [%[[N2]]] [1]
// CHECK: slin.scaled_gemm ins(%[[X]], %[[C]] : {{.*}}) scales(%[[SX]], %[[S1]] : {{.*}}) bias(%[[BC]] : memref<?xf16>) outs(%[[Y1]] : {{.*}}) {scaling = #slin.scaling<outer_vector>}
// CHECK-NOT: slin.alloc
// CHECK: return %[[PATH]]
func.func @per_part(%x: memref<?x32xf8E4M3FN>, %sx: memref<?xf32>, %a: memref<16x32xf8E4M3FN>, %c: memref<?x32xf8E4M3FN>, %sw: memref<?xf32>,
                    %ba: memref<16xf16>, %bc: memref<?xf16>, %y: memref<?x?xf16>) -> i32 {
  %p = slin.scaled_linear ins(%x : memref<?x32xf8E4M3FN>) scale(%sx : memref<?xf32>) weights(%a, %c : memref<16x32xf8E4M3FN>, memref<?x32xf8E4M3FN>)
      weight_scale(%sw : memref<?xf32>) bias(%ba, %bc : memref<16xf16>, memref<?xf16>) outs(%y : memref<?x?xf16>)
      {scaling = #slin.scaling<outer_vector>, strategy = #slin.strategy<per_part>} -> i32
  return %p : i32
}

// RUN: splitlinear-opt %s | splitlinear-opt | FileCheck %s
// RUN: splitlinear-opt %s -mlir-print-op-generic | splitlinear-opt | FileCheck %s

// The FP8 forward: parts with their own scales spread over one weight_scale.
// CHECK-LABEL: func @scaled_linear
// CHECK: %{{.*}} = slin.scaled_linear ins(%{{.*}} : memref<?x64xf8E4M3FN>) scale(%{{.*}} : memref<?xf32>) weights(%{{.*}}, %{{.*}} : memref<32x64xf8E4M3FN>, memref<16x64xf8E4M3FN>) weight_scale(%{{.*}} : memref<48xf32>) bias(%{{.*}}, %{{.*}} : memref<32xbf16>, memref<16xbf16>) outs(%{{.*}} : memref<?x48xbf16>) {fast_accum, scaling = #slin.scaling<outer_vector>, strategy = #slin.strategy<auto>} -> i32
func.func @scaled_linear(%x: memref<?x64xf8E4M3FN>, %sx: memref<?xf32>, %a: memref<32x64xf8E4M3FN>, %b: memref<16x64xf8E4M3FN>,
                         %sw: memref<48xf32>, %ba: memref<32xbf16>, %bb: memref<16xbf16>, %y: memref<?x48xbf16>) -> i32 {
  %p = slin.scaled_linear ins(%x : memref<?x64xf8E4M3FN>) scale(%sx : memref<?xf32>)
      weights(%a, %b : memref<32x64xf8E4M3FN>, memref<16x64xf8E4M3FN>) weight_scale(%sw : memref<48xf32>)
      bias(%ba, %bb : memref<32xbf16>, memref<16xbf16>) outs(%y : memref<?x48xbf16>)
      {scaling = #slin.scaling<outer_vector>, fast_accum, strategy = #slin.strategy<auto>} -> i32
  return %p : i32
}

// e5m2 weights with an e4m3fn input, tensorwise, one part, no bias.
// CHECK-LABEL: func @scaled_linear_tensorwise
// CHECK: slin.scaled_linear ins(%{{.*}} : memref<8x32xf8E4M3FN>) scale(%{{.*}} : memref<1xf32>) weights(%{{.*}} : memref<16x32xf8E5M2>) weight_scale(%{{.*}} : memref<1xf32>) outs(%{{.*}} : memref<8x16xf32>) {scaling = #slin.scaling<tensorwise>}
func.func @scaled_linear_tensorwise(%x: memref<8x32xf8E4M3FN>, %sx: memref<1xf32>, %w: memref<16x32xf8E5M2>, %sw: memref<1xf32>, %y: memref<8x16xf32>) {
  slin.scaled_linear ins(%x : memref<8x32xf8E4M3FN>) scale(%sx : memref<1xf32>)
      weights(%w : memref<16x32xf8E5M2>) weight_scale(%sw : memref<1xf32>)
      outs(%y : memref<8x16xf32>) {scaling = #slin.scaling<tensorwise>}
  return
}

// CHECK-LABEL: func @scaled_gemm
// CHECK: slin.scaled_gemm ins(%{{.*}}, %{{.*}} : memref<?x64xf8E5M2>, memref<48x64xf8E4M3FN>) scales(%{{.*}}, %{{.*}} : memref<?xf32>, memref<48xf32>) bias(%{{.*}} : memref<48xf16>) outs(%{{.*}} : memref<?x48xf16>) {fast_accum, scaling = #slin.scaling<outer_vector>}
func.func @scaled_gemm(%a: memref<?x64xf8E5M2>, %b: memref<48x64xf8E4M3FN>, %sa: memref<?xf32>, %sb: memref<48xf32>, %bias: memref<48xf16>, %d: memref<?x48xf16>) {
  slin.scaled_gemm ins(%a, %b : memref<?x64xf8E5M2>, memref<48x64xf8E4M3FN>) scales(%sa, %sb : memref<?xf32>, memref<48xf32>)
      bias(%bias : memref<48xf16>) outs(%d : memref<?x48xf16>) {scaling = #slin.scaling<outer_vector>, fast_accum}
  return
}

// FP8 parts move through the ops that combine parts, unconverted.
// CHECK-LABEL: func @fp8_parts
// CHECK: slin.is_adjacent %{{.*}}, %{{.*}} : memref<16x32xf8E4M3FN>, memref<16x32xf8E4M3FN>
// CHECK: slin.view_concat %{{.*}}, %{{.*}} : memref<16x32xf8E4M3FN>, memref<16x32xf8E4M3FN> -> memref<32x32xf8E4M3FN, strided<[?, 1], offset: ?>>
// CHECK: slin.prefer_per_part rows(%{{.*}}) weights(%{{.*}}, %{{.*}} : memref<16x32xf8E4M3FN>, memref<16x32xf8E4M3FN>)
// CHECK: %[[BUF:.*]] = slin.alloc() : memref<32x32xf8E4M3FN>
// CHECK: slin.concat ins(%{{.*}}, %{{.*}} : memref<16x32xf8E4M3FN>, memref<16x32xf8E4M3FN>) outs(%[[BUF]] : memref<32x32xf8E4M3FN>)
// CHECK: slin.dealloc %[[BUF]] : memref<32x32xf8E4M3FN>
func.func @fp8_parts(%a: memref<16x32xf8E4M3FN>, %b: memref<16x32xf8E4M3FN>, %m: index) {
  %ok = slin.is_adjacent %a, %b : memref<16x32xf8E4M3FN>, memref<16x32xf8E4M3FN>
  %v = slin.view_concat %a, %b : memref<16x32xf8E4M3FN>, memref<16x32xf8E4M3FN> -> memref<32x32xf8E4M3FN, strided<[?, 1], offset: ?>>
  %p = slin.prefer_per_part rows(%m) weights(%a, %b : memref<16x32xf8E4M3FN>, memref<16x32xf8E4M3FN>)
  %buf = slin.alloc() : memref<32x32xf8E4M3FN>
  slin.concat ins(%a, %b : memref<16x32xf8E4M3FN>, memref<16x32xf8E4M3FN>) outs(%buf : memref<32x32xf8E4M3FN>)
  slin.dealloc %buf : memref<32x32xf8E4M3FN>
  return
}

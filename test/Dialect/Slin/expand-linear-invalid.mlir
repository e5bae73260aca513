// Strategy `auto` over several parts is a run-time choice that only
// slin-elide-concat builds: slin-expand-linear rejects it, on fprop and
// dgrad and the FP8 fprop alike, instead of picking one of its branches.
//
// RUN: splitlinear-opt %s -split-input-file -slin-expand-linear -verify-diagnostics

func.func @fprop_auto(%x: memref<4x16xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %y: memref<4x12xf32>) {
  // expected-error @+1 {{'slin.linear' op has strategy auto with 2 weight parts; run slin-elide-concat first, which builds the run-time choice}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<4x12xf32>) {strategy = #slin.strategy<auto>}
  return
}

// -----

func.func @dgrad_auto(%dy: memref<4x12xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %dx: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.linear_dgrad' op has strategy auto with 2 weight parts; run slin-elide-concat first, which builds the run-time choice}}
  slin.linear_dgrad ins(%dy : memref<4x12xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%dx : memref<4x16xf32>) {strategy = #slin.strategy<auto>}
  return
}

// -----

func.func @scaled_fprop_auto(%x: memref<4x32xf8E4M3FN>, %sx: memref<4xf32>, %a: memref<16x32xf8E4M3FN>, %b: memref<16x32xf8E4M3FN>, %sw: memref<32xf32>, %y: memref<4x32xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op has strategy auto with 2 weight parts; run slin-elide-concat first, which builds the run-time choice}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<4xf32>) weights(%a, %b : memref<16x32xf8E4M3FN>, memref<16x32xf8E4M3FN>) weight_scale(%sw : memref<32xf32>) outs(%y : memref<4x32xbf16>) {scaling = #slin.scaling<outer_vector>, strategy = #slin.strategy<auto>}
  return
}

// Strategy `auto` over several parts is a run-time choice that only
// slin-elide-concat builds: slin-expand-linear rejects it, on fprop and
// dgrad alike, instead of picking one of its branches.
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

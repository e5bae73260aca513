// Diagnostics of convert-slin-to-runtime.
//
// RUN: splitlinear-opt %s -split-input-file -verify-diagnostics \
// RUN:   -convert-slin-to-runtime="target=cpu"
//
// An unknown target is refused when the option is parsed (an enum option).
// RUN: not splitlinear-opt %s -split-input-file -convert-slin-to-runtime="target=rocm" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TARGET
// TARGET: for the --target option: Cannot find option named 'rocm'!

// slin.linear is lowered by the slin passes, never by this conversion.
func.func @leftover_linear(%x: memref<4x16xf32>, %w: memref<8x16xf32>, %y: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.linear' cannot be lowered to runtime calls: run slin-elide-concat and slin-expand-linear first}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%w : memref<8x16xf32>) outs(%y : memref<4x8xf32>)
  return
}

// -----

func.func @leftover_dgrad(%dy: memref<4x8xf32>, %w: memref<8x16xf32>, %dx: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.linear_dgrad' cannot be lowered to runtime calls: run slin-elide-concat and slin-expand-linear first}}
  slin.linear_dgrad ins(%dy : memref<4x8xf32>) weights(%w : memref<8x16xf32>) outs(%dx : memref<4x16xf32>)
  return
}

// -----

// A function has at most one runtime context.
// expected-error @+1 {{argument #2 is a second runtime context (the first is argument #0): a function takes at most one '!slin.context' argument}}
func.func @two_contexts(%c0: !slin.context, %a: memref<4x4xf32>, %c1: !slin.context) {
  return
}

// -----

// A context is lowered in function signatures, calls and returns only; an op
// that yields one has no lowering.
func.func @context_yielded(%ctx: !slin.context, %b: i1) -> !slin.context {
  // expected-error @+1 {{failed to legalize operation 'scf.if'}}
  %r = scf.if %b -> !slin.context {
    scf.yield %ctx : !slin.context
  } else {
    scf.yield %ctx : !slin.context
  }
  return %r : !slin.context
}

// -----

// A runtime symbol that exists with another signature is not reused.
func.func private @slinrt_cpu_gemm_f32(i32)

func.func @clashing_declaration(%a: memref<4x4xf32>, %d: memref<4x4xf32>) {
  // expected-error @+1 {{failed to legalize operation 'slin.gemm' that was explicitly marked illegal}}
  slin.gemm ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%d : memref<4x4xf32>)
  return
}

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

// The context argument must be a pointer.
// expected-error @+1 {{argument #0 is marked 'slin.context' but has type 'i64', expected !llvm.ptr}}
func.func @context_not_a_pointer(%ctx: i64 {slin.context}, %a: memref<4x4xf32>, %d: memref<4x4xf32>) {
  slin.gemm ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%d : memref<4x4xf32>)
  return
}

// -----

// expected-error @+1 {{more than one argument is marked 'slin.context'}}
func.func @two_contexts(%c0: !llvm.ptr {slin.context}, %c1: !llvm.ptr {slin.context}) {
  return
}

// -----

// A runtime symbol that exists with another signature is not reused.
func.func private @slinrt_cpu_gemm_f32(i32)

func.func @clashing_declaration(%a: memref<4x4xf32>, %d: memref<4x4xf32>) {
  // expected-error @+1 {{failed to legalize operation 'slin.gemm' that was explicitly marked illegal}}
  slin.gemm ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%d : memref<4x4xf32>)
  return
}

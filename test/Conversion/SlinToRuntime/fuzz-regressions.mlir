// Regression tests of convert-slin-to-runtime for findings of the fuzzing
// campaign (see docs/Reliability.md and fuzz/regressions/).
//
// RUN: splitlinear-opt %s -split-input-file -verify-diagnostics \
// RUN:   -convert-slin-to-runtime="target=cpu" | FileCheck %s

// Finding 5: a `slinrt_default_context` declared with another result type
// was reused as the runtime context when a call to it opened the function:
// an i32 went where the runtime reads a context pointer. Such a symbol is
// refused now, as a runtime entry point of another type is.
func.func private @slinrt_default_context() -> i32

func.func @context_of_wrong_type(%a: memref<4x4xf32>, %d: memref<4x4xf32>) {
  %c = func.call @slinrt_default_context() : () -> i32
  // expected-error @+1 {{failed to legalize operation 'slin.gemm' that was explicitly marked illegal}}
  slin.gemm ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%d : memref<4x4xf32>)
  return
}

// -----

// The same call returning the pointer is reused, not repeated.
// CHECK-LABEL: func @context_reused
// CHECK: %[[CTX:.*]] = call @slinrt_default_context() : () -> !llvm.ptr
// CHECK-NOT: call @slinrt_default_context
// CHECK: call @slinrt_cpu_gemm_f32(%[[CTX]],
func.func private @slinrt_default_context() -> !llvm.ptr

func.func @context_reused(%a: memref<4x4xf32>, %d: memref<4x4xf32>) {
  %c = func.call @slinrt_default_context() : () -> !llvm.ptr
  slin.gemm ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%d : memref<4x4xf32>)
  return
}

// -----

// Finding 3 (same class as the verifier's row sums): the byte size of a
// runtime buffer was computed with wrapping int64 arithmetic (4 · 2^62 · 16
// wrapped to 0 bytes). It is refused now.
func.func @alloc_bytes_overflow() {
  // expected-error @+1 {{failed to legalize operation 'slin.alloc' that was explicitly marked illegal}}
  %c = slin.alloc() : memref<4611686018427387904x16xf32>
  slin.dealloc %c : memref<4611686018427387904x16xf32>
  return
}

// -----

// Finding 6 (same class, in the concat lowering): the row block of each
// part is sized by a memref.dim of the part, not by a folded constant (here
// -4, which a static subview size may not be).
// CHECK-LABEL: func @negative_constant_size
// CHECK: %[[A:.*]] = memref.subview %{{.*}}[0, 0] [%{{.*}}, 16] [1, 1]
// CHECK: %[[N0:.*]] = memref.dim %[[A]], %{{.*}} : memref<?x16xf32, strided<[16, 1]>>
// CHECK: memref.subview %{{.*}}[0, 0] [%[[N0]], 16] [1, 1]
// CHECK-NOT: [-4, 16]
func.func @negative_constant_size(%buf: memref<?x16xf32>, %o: memref<?x16xf32>) {
  %c = arith.constant -4 : index
  %a = memref.subview %buf[0, 0] [%c, 16] [1, 1] : memref<?x16xf32> to memref<?x16xf32, strided<[16, 1]>>
  slin.concat ins(%a, %buf : memref<?x16xf32, strided<[16, 1]>>, memref<?x16xf32>) outs(%o : memref<?x16xf32>)
  return
}

// -----

// Finding 8 (same class, in the concat lowering): an empty part gets no row
// block (it would start at the end of the output) and an output without
// elements no copy at all.
// CHECK-LABEL: func @empty_parts
// CHECK-COUNT-1: call @slinrt_cpu_copy2d_f32_f32
// CHECK-NOT: call @slinrt_cpu_copy2d_f32_f32
// CHECK: return
func.func @empty_parts(%a: memref<12x16xf32>, %b: memref<0x16xf32>, %y: memref<12x16xf32>,
                       %p: memref<?x4xf32>, %o: memref<0x4xf32>) {
  slin.concat ins(%a, %b : memref<12x16xf32>, memref<0x16xf32>) outs(%y : memref<12x16xf32>)
  slin.concat ins(%p, %p : memref<?x4xf32>, memref<?x4xf32>) outs(%o : memref<0x4xf32>)
  return
}

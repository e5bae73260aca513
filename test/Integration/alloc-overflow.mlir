// The byte size of a runtime buffer with dynamic sizes is computed in the
// lowered IR; a product that overflows asks for -1 bytes, which the runtime
// refuses with SLINRT_ERROR_INVALID_ARGUMENT (1) instead of allocating the
// wrapped size. Prints [case, status, status after slinrt_context_clear_error].
//
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%splitlinear_libs/libsplitlinear_runtime%shlibext,%mlir_lib_dir/libmlir_c_runner_utils%shlibext,%mlir_lib_dir/libmlir_runner_utils%shlibext \
// RUN: | FileCheck %s

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
func.func private @slinrt_default_context() -> !slin.context
func.func private @slinrt_context_status(!slin.context) -> i32
func.func private @slinrt_context_clear_error(!slin.context)

/// Allocates and frees an n x 16 f32 runtime buffer (64 · n bytes).
func.func @buffer(%ctx: !slin.context, %n: index) {
  %buf = slin.alloc(%n) : memref<?x16xf32>
  slin.dealloc %buf : memref<?x16xf32>
  return
}

/// Runs @buffer and prints [id, status, status after clearing].
func.func @show(%ctx: !slin.context, %id: f32, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  func.call @buffer(%ctx, %n) : (!slin.context, index) -> ()
  %st = func.call @slinrt_context_status(%ctx) : (!slin.context) -> i32
  func.call @slinrt_context_clear_error(%ctx) : (!slin.context) -> ()
  %st2 = func.call @slinrt_context_status(%ctx) : (!slin.context) -> i32
  %out = memref.alloc() : memref<3xf32>
  %stf = arith.sitofp %st : i32 to f32
  %st2f = arith.sitofp %st2 : i32 to f32
  memref.store %id, %out[%c0] : memref<3xf32>
  memref.store %stf, %out[%c1] : memref<3xf32>
  memref.store %st2f, %out[%c2] : memref<3xf32>
  %u = memref.cast %out : memref<3xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %out : memref<3xf32>
  return
}

func.func @main() {
  %ctx = func.call @slinrt_default_context() : () -> !slin.context

  // 4 rows: 256 bytes, allocated and freed.
  // CHECK: {{^}}[1, 0, 0]
  %id1 = arith.constant 1.0 : f32
  %n1 = arith.constant 4 : index
  func.call @show(%ctx, %id1, %n1) : (!slin.context, f32, index) -> ()

  // Regression: 2^58 + 1 rows are 2^64 + 64 bytes, which wrapped to a
  // 64-byte allocation without an error.
  // CHECK: {{^}}[2, 1, 0]
  %id2 = arith.constant 2.0 : f32
  %n2 = arith.constant 288230376151711745 : index
  func.call @show(%ctx, %id2, %n2) : (!slin.context, f32, index) -> ()

  // 2^57 rows are 2^63 bytes: no wrap, but past INT64_MAX.
  // CHECK: {{^}}[3, 1, 0]
  %id3 = arith.constant 3.0 : f32
  %n3 = arith.constant 144115188075855872 : index
  func.call @show(%ctx, %id3, %n3) : (!slin.context, f32, index) -> ()
  return
}

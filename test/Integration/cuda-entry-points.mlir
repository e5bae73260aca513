// IR lowered for the cuda target links against the runtime on any machine:
// the slinrt_cuda_* entry points exist in every build. Given a context that
// is not a CUDA context (here the default CPU context), a cuda entry point
// records an error instead of touching memory: SLINRT_ERROR_NOT_AVAILABLE (6)
// per Runtime.h. No GPU is needed. Prints [status after the call, status
// after slinrt_context_clear_error].
//
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cuda" \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%splitlinear_libs/libsplitlinear_runtime%shlibext,%mlir_lib_dir/libmlir_c_runner_utils%shlibext,%mlir_lib_dir/libmlir_runner_utils%shlibext \
// RUN: | FileCheck %s

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
func.func private @slinrt_default_context() -> !slin.context
func.func private @slinrt_context_status(!slin.context) -> i32
func.func private @slinrt_context_clear_error(!slin.context)

func.func @kernel(%ctx: !slin.context, %x: memref<2x4xf32>, %w: memref<3x4xf32>,
                  %y: memref<2x3xf32>) {
  slin.gemm ins(%x, %w : memref<2x4xf32>, memref<3x4xf32>) outs(%y : memref<2x3xf32>) {transpose_b}
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ctx = func.call @slinrt_default_context() : () -> !slin.context
  %x = memref.alloc() : memref<2x4xf32>
  %w = memref.alloc() : memref<3x4xf32>
  %y = memref.alloc() : memref<2x3xf32>
  func.call @kernel(%ctx, %x, %w, %y) : (!slin.context, memref<2x4xf32>, memref<3x4xf32>, memref<2x3xf32>) -> ()
  %st = func.call @slinrt_context_status(%ctx) : (!slin.context) -> i32
  func.call @slinrt_context_clear_error(%ctx) : (!slin.context) -> ()
  %st2 = func.call @slinrt_context_status(%ctx) : (!slin.context) -> i32
  %out = memref.alloc() : memref<2xf32>
  %stf = arith.sitofp %st : i32 to f32
  %st2f = arith.sitofp %st2 : i32 to f32
  memref.store %stf, %out[%c0] : memref<2xf32>
  memref.store %st2f, %out[%c1] : memref<2xf32>
  %u = memref.cast %out : memref<2xf32> to memref<*xf32>
  // CHECK: data =
  // CHECK-NEXT: [6, 0]
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %x : memref<2x4xf32>
  memref.dealloc %w : memref<3x4xf32>
  memref.dealloc %y : memref<2x3xf32>
  memref.dealloc %out : memref<2xf32>
  return
}

// The runtime context: a function's `!slin.context` argument is passed to
// every runtime call the function makes, and the type is lowered to
// `!llvm.ptr` in signatures, calls and returns (the C interface of a compiled
// kernel takes a `slinrt_context *` there). No cast and no `!slin.context`
// is left.
//
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cpu" | FileCheck %s
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cpu" \
// RUN:   | FileCheck %s --check-prefix=GONE
// GONE-NOT: !slin.context
// GONE-NOT: unrealized_conversion_cast
// GONE-NOT: slinrt_default_context

// Every runtime call of the kernel takes its context argument.
// CHECK-LABEL: func.func @kernel(
// CHECK-SAME: %[[A:[^:]*]]: memref<4x4xf32>, %[[CTX:[^:]*]]: !llvm.ptr, %[[D:[^:]*]]: memref<4x4xf32>, %[[B:[^:]*]]: memref<4xf32>)
// CHECK: call @slinrt_cpu_copy1d_f32_f32(%[[CTX]],
// CHECK: call @slinrt_cpu_copy1d_f32_f32(%[[CTX]],
// CHECK: call @slinrt_cpu_gemm_f32(%[[CTX]],
// CHECK: return
func.func @kernel(%a: memref<4x4xf32>, %ctx: !slin.context, %d: memref<4x4xf32>,
                  %b: memref<4xf32>) {
  %b0 = memref.alloca() : memref<1xf32>
  %b1 = memref.alloca() : memref<3xf32>
  slin.concat ins(%b0, %b1 : memref<1xf32>, memref<3xf32>) outs(%b : memref<4xf32>)
  slin.gemm ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) bias(%b : memref<4xf32>)
      outs(%d : memref<4x4xf32>) {epilogue = #slin.epilogue<bias>}
  return
}

// Contexts that flow through declarations, calls and returns are lowered
// there too.
// CHECK: func.func private @slinrt_context_create_cpu() -> !llvm.ptr{{$}}
// CHECK-LABEL: func.func @caller(
// CHECK-SAME: %[[A:[^:]*]]: memref<4x4xf32>, %[[B:[^:]*]]: memref<4xf32>) -> !llvm.ptr
// CHECK: %[[CTX:.*]] = call @slinrt_context_create_cpu() : () -> !llvm.ptr
// CHECK: call @kernel(%[[A]], %[[CTX]], %[[A]], %[[B]]) : (memref<4x4xf32>, !llvm.ptr, memref<4x4xf32>, memref<4xf32>) -> ()
// CHECK: return %[[CTX]] : !llvm.ptr
func.func private @slinrt_context_create_cpu() -> !slin.context
func.func @caller(%a: memref<4x4xf32>, %b: memref<4xf32>) -> !slin.context {
  %ctx = func.call @slinrt_context_create_cpu() : () -> !slin.context
  func.call @kernel(%a, %ctx, %a, %b)
      : (memref<4x4xf32>, !slin.context, memref<4x4xf32>, memref<4xf32>) -> ()
  return %ctx : !slin.context
}

// A pointer that the program casts to a context is that pointer.
// CHECK-LABEL: func.func @from_pointer(
// CHECK-SAME: %[[P:[^:]*]]: !llvm.ptr, %[[A:[^:]*]]: memref<4x4xf32>, %[[B:[^:]*]]: memref<4xf32>)
// CHECK: call @kernel(%[[A]], %[[P]], %[[A]], %[[B]])
func.func @from_pointer(%p: !llvm.ptr, %a: memref<4x4xf32>, %b: memref<4xf32>) {
  %ctx = builtin.unrealized_conversion_cast %p : !llvm.ptr to !slin.context
  func.call @kernel(%a, %ctx, %a, %b)
      : (memref<4x4xf32>, !slin.context, memref<4x4xf32>, memref<4xf32>) -> ()
  return
}

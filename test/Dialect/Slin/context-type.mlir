// `!slin.context` parses and prints as itself, in the custom and the generic
// form, wherever a function's signature or a call carries it.
//
// RUN: splitlinear-opt %s | FileCheck %s
// RUN: splitlinear-opt %s | splitlinear-opt | FileCheck %s
// RUN: splitlinear-opt %s --mlir-print-op-generic | splitlinear-opt | FileCheck %s

// CHECK-LABEL: func.func private @slinrt_context_create_cpu() -> !slin.context
func.func private @slinrt_context_create_cpu() -> !slin.context

// CHECK-LABEL: func.func @kernel(
// CHECK-SAME: %{{[^:]*}}: !slin.context, %{{[^:]*}}: memref<4x4xf32>, %{{[^:]*}}: memref<4x4xf32>)
func.func @kernel(%ctx: !slin.context, %a: memref<4x4xf32>, %d: memref<4x4xf32>) {
  slin.gemm ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%d : memref<4x4xf32>)
  return
}

// CHECK-LABEL: func.func @caller(
// CHECK: %[[CTX:.*]] = call @slinrt_context_create_cpu() : () -> !slin.context
// CHECK: call @kernel(%[[CTX]], %{{.*}}, %{{.*}}) : (!slin.context, memref<4x4xf32>, memref<4x4xf32>) -> ()
// CHECK: return %[[CTX]] : !slin.context
func.func @caller(%a: memref<4x4xf32>, %d: memref<4x4xf32>) -> !slin.context {
  %ctx = func.call @slinrt_context_create_cpu() : () -> !slin.context
  func.call @kernel(%ctx, %a, %d) : (!slin.context, memref<4x4xf32>, memref<4x4xf32>) -> ()
  return %ctx : !slin.context
}

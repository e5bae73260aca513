// slin.gemm becomes one call of slinrt_<target>_gemm_<dtype>(ctx, A, B, D,
// bias, transA, transB, epilogue) with every memref cast to the fully dynamic
// strided type, so that one C-interface declaration serves all call sites.
// The same checks run for both targets (TGT); the default target is cuda.
//
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cpu" | FileCheck %s -DTGT=cpu
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cuda" | FileCheck %s -DTGT=cuda
// RUN: splitlinear-opt %s -convert-slin-to-runtime | FileCheck %s -DTGT=cuda
// The former name of the pass is an alias, as a flag and in a pipeline.
// RUN: splitlinear-opt %s -convert-slin-to-cublaslt="target=cpu" | FileCheck %s -DTGT=cpu
// RUN: splitlinear-opt %s --pass-pipeline="builtin.module(convert-slin-to-cublaslt{target=cuda})" | FileCheck %s -DTGT=cuda
// Each entry point is declared once per module.
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cpu" \
// RUN:   | grep -c "func.func private @slinrt_cpu_gemm_f32(" | FileCheck %s --check-prefix=ONCE
// ONCE: {{^}}1{{$}}

// CHECK-DAG: func.func private @slinrt_[[TGT]]_gemm_f32(!llvm.ptr, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, i32, i32, i32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @slinrt_[[TGT]]_gemm_f16(!llvm.ptr, memref<?x?xf16, strided<[?, ?], offset: ?>>, memref<?x?xf16, strided<[?, ?], offset: ?>>, memref<?x?xf16, strided<[?, ?], offset: ?>>, memref<?xf16, strided<[?], offset: ?>>, i32, i32, i32) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @slinrt_[[TGT]]_gemm_bf16({{.*}}memref<?x?xbf16, strided<[?, ?], offset: ?>>{{.*}}) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @slinrt_[[TGT]]_gemm_f64({{.*}}memref<?x?xf64, strided<[?, ?], offset: ?>>{{.*}}) attributes {llvm.emit_c_interface}
// The default context is a plain C function: no C interface.
// CHECK-DAG: func.func private @slinrt_default_context() -> !llvm.ptr{{$}}

// CHECK-LABEL: func.func @epilogue_none(
// CHECK-SAME: %[[A:.*]]: memref<4x16xf32>, %[[B:.*]]: memref<12x16xf32>, %[[D:.*]]: memref<4x12xf32>)
// CHECK: %[[CTX:.*]] = call @slinrt_default_context() : () -> !llvm.ptr
// CHECK: %[[EMPTY:.*]] = memref.alloca() : memref<0xf32>
// CHECK-DAG: %[[CA:.*]] = memref.cast %[[A]] : memref<4x16xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK-DAG: %[[CB:.*]] = memref.cast %[[B]] : memref<12x16xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK-DAG: %[[CD:.*]] = memref.cast %[[D]] : memref<4x12xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK-DAG: %[[CBIAS:.*]] = memref.cast %[[EMPTY]] : memref<0xf32> to memref<?xf32, strided<[?], offset: ?>>
// CHECK: %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[EPI:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @slinrt_[[TGT]]_gemm_f32(%[[CTX]], %[[CA]], %[[CB]], %[[CD]], %[[CBIAS]], %[[TA]], %[[TB]], %[[EPI]])
// CHECK-NOT: slin.
func.func @epilogue_none(%a: memref<4x16xf32>, %b: memref<12x16xf32>, %d: memref<4x12xf32>) {
  slin.gemm ins(%a, %b : memref<4x16xf32>, memref<12x16xf32>) outs(%d : memref<4x12xf32>) {transpose_b}
  return
}

// CHECK-LABEL: func.func @epilogue_bias(
// CHECK-SAME: %[[BIAS:.*]]: memref<12xf32>,
// CHECK: %[[CBIAS:.*]] = memref.cast %[[BIAS]] : memref<12xf32> to memref<?xf32, strided<[?], offset: ?>>
// CHECK: %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[EPI:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @slinrt_[[TGT]]_gemm_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[CBIAS]], %[[TA]], %[[TB]], %[[EPI]])
func.func @epilogue_bias(%bias: memref<12xf32>, %a: memref<4x16xf32>, %b: memref<12x16xf32>,
                         %d: memref<4x12xf32>) {
  slin.gemm ins(%a, %b : memref<4x16xf32>, memref<12x16xf32>) bias(%bias : memref<12xf32>)
      outs(%d : memref<4x12xf32>) {transpose_b, epilogue = #slin.epilogue<bias>}
  return
}

// wgrad: dW = dyᵀ · x with the bias gradient db[N].
// CHECK-LABEL: func.func @epilogue_bias_grad(
// CHECK-SAME: %[[DB:.*]]: memref<12xf32>,
// CHECK: %[[CDB:.*]] = memref.cast %[[DB]]
// CHECK: %[[TA:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[EPI:.*]] = arith.constant 2 : i32
// CHECK-NEXT: call @slinrt_[[TGT]]_gemm_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[CDB]], %[[TA]], %[[TB]], %[[EPI]])
func.func @epilogue_bias_grad(%db: memref<12xf32>, %dy: memref<4x12xf32>, %x: memref<4x16xf32>,
                              %dw: memref<12x16xf32>) {
  slin.gemm ins(%dy, %x : memref<4x12xf32>, memref<4x16xf32>) bias(%db : memref<12xf32>)
      outs(%dw : memref<12x16xf32>) {transpose_a, epilogue = #slin.epilogue<bias_grad>}
  return
}

// Transpose flags NN, NT, TN, TT; one default context for the function.
// CHECK-LABEL: func.func @transposes(
// CHECK: %[[CTX:.*]] = call @slinrt_default_context()
// CHECK-NOT: call @slinrt_default_context
// CHECK: %[[TA0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %{{.*}} = arith.constant 0 : i32
// CHECK-NEXT: call @slinrt_[[TGT]]_gemm_f32(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[TA0]], %[[TB0]],
// CHECK-NOT: call @slinrt_default_context
// CHECK: %[[TA1:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB1:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %{{.*}} = arith.constant 0 : i32
// CHECK-NEXT: call @slinrt_[[TGT]]_gemm_f32(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[TA1]], %[[TB1]],
// CHECK: %[[TA2:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[TB2:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %{{.*}} = arith.constant 0 : i32
// CHECK-NEXT: call @slinrt_[[TGT]]_gemm_f32(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[TA2]], %[[TB2]],
// CHECK: %[[TA3:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[TB3:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %{{.*}} = arith.constant 0 : i32
// CHECK-NEXT: call @slinrt_[[TGT]]_gemm_f32(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[TA3]], %[[TB3]],
func.func @transposes(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %d: memref<8x8xf32>) {
  slin.gemm ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%d : memref<8x8xf32>)
  slin.gemm ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%d : memref<8x8xf32>) {transpose_b}
  slin.gemm ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%d : memref<8x8xf32>) {transpose_a}
  slin.gemm ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%d : memref<8x8xf32>) {transpose_a, transpose_b}
  return
}

// Element types: one entry point per dtype; dynamic and strided operands are
// cast the same way.
// CHECK-LABEL: func.func @dtypes(
// CHECK: memref.cast %{{.*}} : memref<?x?xf16> to memref<?x?xf16, strided<[?, ?], offset: ?>>
// CHECK: call @slinrt_[[TGT]]_gemm_f16(
// CHECK: memref.cast %{{.*}} : memref<2x3xbf16, strided<[8, 1], offset: 4>> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
// CHECK: call @slinrt_[[TGT]]_gemm_bf16(
// CHECK: memref.alloca() : memref<0xf64>
// CHECK: call @slinrt_[[TGT]]_gemm_f64(
func.func @dtypes(%h: memref<?x?xf16>, %hd: memref<?x?xf16>, %bf: memref<2x3xbf16, strided<[8, 1], offset: 4>>,
                  %bfd: memref<2x2xbf16>, %f: memref<2x2xf64>, %fd: memref<2x2xf64>) {
  slin.gemm ins(%h, %h : memref<?x?xf16>, memref<?x?xf16>) outs(%hd : memref<?x?xf16>)
  slin.gemm ins(%bf, %bf : memref<2x3xbf16, strided<[8, 1], offset: 4>>, memref<2x3xbf16, strided<[8, 1], offset: 4>>)
      outs(%bfd : memref<2x2xbf16>) {transpose_b}
  slin.gemm ins(%f, %f : memref<2x2xf64>, memref<2x2xf64>) outs(%fd : memref<2x2xf64>)
  return
}

// The `!slin.context` argument (lowered to `!llvm.ptr`) is the context: no
// default context call.
// CHECK-LABEL: func.func @context_argument(
// CHECK-SAME: %[[A:[^:]*]]: memref<4x4xf32>, %[[CTX:[^:]*]]: !llvm.ptr,
// CHECK-NOT: slinrt_default_context
// CHECK: call @slinrt_[[TGT]]_gemm_f32(%[[CTX]],
// CHECK-NOT: slinrt_default_context
// CHECK: return
func.func @context_argument(%a: memref<4x4xf32>, %ctx: !slin.context, %d: memref<4x4xf32>) {
  slin.gemm ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%d : memref<4x4xf32>)
  return
}

// A function without runtime calls gets no context.
// CHECK-LABEL: func.func @no_runtime_calls(
// CHECK-NOT: slinrt_default_context
// CHECK: return
func.func @no_runtime_calls(%a: memref<4x4xf32>) {
  return
}

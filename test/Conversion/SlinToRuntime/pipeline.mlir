// The whole lowering, -splitlinear-pipeline, turns slin IR (run-time checked
// parts, a proven view, dgrad, runtime buffers) into the LLVM dialect only,
// calling the runtime's C interface: `_mlir_ciface_slinrt_<target>_*` with
// pointers to memref descriptors. A memref result (the allocator's i8
// buffer) comes back through a descriptor pointer passed FIRST, as Runtime.h
// declares: _mlir_ciface_slinrt_TGT_alloc(slinrt_memref1d *result,
// slinrt_context *, int64_t).
//
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" | FileCheck %s -DTGT=cpu
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cuda" | FileCheck %s -DTGT=cuda
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" | FileCheck %s --check-prefix=DECL -DTGT=cpu
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cuda" | FileCheck %s --check-prefix=DECL -DTGT=cuda
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" | FileCheck %s --check-prefix=ALLOC -DTGT=cpu
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cuda" | FileCheck %s --check-prefix=ALLOC -DTGT=cuda
// No op of another dialect than llvm is left.
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" \
// RUN:   | not grep -E "(slin|memref|scf|arith|func|cf|affine|index|ub|builtin)\.[a-z_]+[ (<]"
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cuda" \
// RUN:   | not grep -E "(slin|memref|scf|arith|func|cf|affine|index|ub|builtin)\.[a-z_]+[ (<]"

// DECL-DAG: llvm.func @_mlir_ciface_slinrt_[[TGT]]_gemm_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, i32)
// DECL-DAG: llvm.func @_mlir_ciface_slinrt_[[TGT]]_copy2d_f32_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr)
// DECL-DAG: llvm.func @_mlir_ciface_slinrt_[[TGT]]_copy1d_f32_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr)
// DECL-DAG: llvm.func @_mlir_ciface_slinrt_[[TGT]]_alloc(!llvm.ptr, !llvm.ptr, i64)
// DECL-DAG: llvm.func @_mlir_ciface_slinrt_[[TGT]]_free(!llvm.ptr, i64)
// DECL-DAG: llvm.func @slinrt_default_context() -> !llvm.ptr

// The alloc wrapper: the result descriptor is an alloca passed first, then
// loaded.
// ALLOC: llvm.func private @slinrt_[[TGT]]_alloc(
// ALLOC-SAME: %[[CTX:[^:]*]]: !llvm.ptr, %[[BYTES:[^:]*]]: i64) -> !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// ALLOC: %[[RES:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// ALLOC: llvm.call @_mlir_ciface_slinrt_[[TGT]]_alloc(%[[RES]], %[[CTX]], %[[BYTES]]) : (!llvm.ptr, !llvm.ptr, i64) -> ()
// ALLOC: llvm.load %[[RES]]

!m2 = memref<?x?xf32, strided<[?, ?], offset: ?>>
!v1 = memref<?xf32, strided<[?], offset: ?>>

// Parts only known at run time: a checked view with a copy fallback.
// The `!slin.context` argument is the pointer every runtime call takes.
// CHECK-LABEL: llvm.func @checked(
// CHECK-SAME: %[[CTX:[^:]*]]: !llvm.ptr,
// CHECK-NOT: slinrt_default_context
// CHECK: llvm.call @slinrt_[[TGT]]_alloc(%[[CTX]],
// CHECK: llvm.call @slinrt_[[TGT]]_copy2d_f32_f32(%[[CTX]],
// CHECK: llvm.call @slinrt_[[TGT]]_gemm_f32(%[[CTX]],
// CHECK: llvm.call @slinrt_[[TGT]]_free(%[[CTX]],
func.func @checked(%ctx: !slin.context, %x: !m2, %w0: !m2, %w1: !m2,
                   %b0: !v1, %b1: !v1, %y: !m2) {
  slin.linear ins(%x : !m2) weights(%w0, %w1 : !m2, !m2)
      bias(%b0, %b1 : !v1, !v1) outs(%y : !m2)
  return
}

// Row blocks of one allocation: a proven view, no copy.
// CHECK-LABEL: llvm.func @proven(
// CHECK: llvm.call @slinrt_default_context()
// CHECK-NOT: copy2d
// CHECK: llvm.call @slinrt_[[TGT]]_gemm_f32(
// CHECK-NOT: copy2d
// CHECK: llvm.return
func.func @proven(%x: memref<4x16xf32>, %y: memref<4x12xf32>) {
  %w = memref.alloc() : memref<12x16xf32>
  %w0 = memref.subview %w[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %w1 = memref.subview %w[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  slin.linear ins(%x : memref<4x16xf32>)
      weights(%w0, %w1 : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>)
      outs(%y : memref<4x12xf32>)
  memref.dealloc %w : memref<12x16xf32>
  return
}

// dgrad over separate allocations: a runtime buffer and copies.
// CHECK-LABEL: llvm.func @dgrad(
// CHECK: llvm.call @slinrt_[[TGT]]_alloc(
// CHECK-COUNT-2: llvm.call @slinrt_[[TGT]]_copy2d_f32_f32(
// CHECK: llvm.call @slinrt_[[TGT]]_gemm_f32(
// CHECK: llvm.call @slinrt_[[TGT]]_free(
func.func @dgrad(%dy: memref<4x12xf32>, %dx: memref<4x16xf32>) {
  %w0 = memref.alloc() : memref<8x16xf32>
  %w1 = memref.alloc() : memref<4x16xf32>
  slin.linear_dgrad ins(%dy : memref<4x12xf32>)
      weights(%w0, %w1 : memref<8x16xf32>, memref<4x16xf32>) outs(%dx : memref<4x16xf32>)
  memref.dealloc %w0 : memref<8x16xf32>
  memref.dealloc %w1 : memref<4x16xf32>
  return
}

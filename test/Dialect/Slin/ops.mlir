// RUN: splitlinear-opt %s | splitlinear-opt | FileCheck %s
// RUN: splitlinear-opt %s -mlir-print-op-generic | splitlinear-opt | FileCheck %s
// RUN: splitlinear-opt %s -mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func @linear_bias
// CHECK: slin.linear ins(%{{.*}} : memref<4x16xf32>) weights(%{{.*}}, %{{.*}}, %{{.*}} : memref<8x16xf32>, memref<2x16xf32>, memref<2x16xf32>) bias(%{{.*}}, %{{.*}}, %{{.*}} : memref<8xf32>, memref<2xf32>, memref<2xf32>) outs(%{{.*}} : memref<4x12xf32>)
// GENERIC-LABEL: sym_name = "linear_bias"
// GENERIC: "slin.linear"({{.*}}) <{operandSegmentSizes = array<i32: 1, 3, 3, 1>, strategy = #slin.strategy<fused>}>
func.func @linear_bias(%x: memref<4x16xf32>, %wq: memref<8x16xf32>, %wk: memref<2x16xf32>, %wv: memref<2x16xf32>,
                       %bq: memref<8xf32>, %bk: memref<2xf32>, %bv: memref<2xf32>, %y: memref<4x12xf32>) {
  slin.linear ins(%x : memref<4x16xf32>)
      weights(%wq, %wk, %wv : memref<8x16xf32>, memref<2x16xf32>, memref<2x16xf32>)
      bias(%bq, %bk, %bv : memref<8xf32>, memref<2xf32>, memref<2xf32>)
      outs(%y : memref<4x12xf32>)
  return
}

// CHECK-LABEL: func @linear_dynamic_strided
// CHECK: slin.linear ins(%{{.*}} : memref<?x?xbf16>) weights(%{{.*}}, %{{.*}} : memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xf32>) outs(%{{.*}} : memref<?x?xbf16, strided<[?, 1], offset: ?>>)
// CHECK-NOT: bias
func.func @linear_dynamic_strided(%x: memref<?x?xbf16>, %a: memref<?x?xbf16, strided<[?, ?], offset: ?>>,
                                  %b: memref<?x?xf32>, %y: memref<?x?xbf16, strided<[?, 1], offset: ?>>) {
  slin.linear ins(%x : memref<?x?xbf16>)
      weights(%a, %b : memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xf32>)
      outs(%y : memref<?x?xbf16, strided<[?, 1], offset: ?>>)
  return
}

// CHECK-LABEL: func @dgrad
// CHECK: slin.linear_dgrad ins(%{{.*}} : memref<4x12xf16>) weights(%{{.*}}, %{{.*}} : memref<8x16xf16>, memref<4x16xf16>) outs(%{{.*}} : memref<4x16xf16>)
func.func @dgrad(%dy: memref<4x12xf16>, %a: memref<8x16xf16>, %b: memref<4x16xf16>, %dx: memref<4x16xf16>) {
  slin.linear_dgrad ins(%dy : memref<4x12xf16>) weights(%a, %b : memref<8x16xf16>, memref<4x16xf16>)
      outs(%dx : memref<4x16xf16>)
  return
}

// CHECK-LABEL: func @gemm_epilogues
// CHECK: slin.gemm ins(%{{.*}}, %{{.*}} : memref<4x16xf32>, memref<12x16xf32>) bias(%{{.*}} : memref<12xf32>) outs(%{{.*}} : memref<4x12xf32>) {epilogue = #slin.epilogue<bias>, transpose_b}
// CHECK: slin.gemm ins(%{{.*}}, %{{.*}} : memref<4x12xf32>, memref<4x16xf32>) bias(%{{.*}} : memref<12xf32>) outs(%{{.*}} : memref<12x16xf32>) {epilogue = #slin.epilogue<bias_grad>, transpose_a}
// CHECK: slin.gemm ins(%{{.*}}, %{{.*}} : memref<4x12xf32>, memref<12x16xf32>) outs(%{{.*}} : memref<4x16xf32>) {epilogue = #slin.epilogue<accumulate>}
// CHECK: slin.gemm ins(%{{.*}}, %{{.*}} : memref<4x12xf32>, memref<12x16xf32>) outs(%{{.*}} : memref<4x16xf32>)
// CHECK-NOT: epilogue
func.func @gemm_epilogues(%x: memref<4x16xf32>, %w: memref<12x16xf32>, %b: memref<12xf32>, %y: memref<4x12xf32>,
                          %dy: memref<4x12xf32>, %dw: memref<12x16xf32>, %db: memref<12xf32>, %dx: memref<4x16xf32>) {
  slin.gemm ins(%x, %w : memref<4x16xf32>, memref<12x16xf32>) bias(%b : memref<12xf32>) outs(%y : memref<4x12xf32>)
      {transpose_b, epilogue = #slin.epilogue<bias>}
  slin.gemm ins(%dy, %x : memref<4x12xf32>, memref<4x16xf32>) bias(%db : memref<12xf32>) outs(%dw : memref<12x16xf32>)
      {transpose_a, epilogue = #slin.epilogue<bias_grad>}
  slin.gemm ins(%dy, %w : memref<4x12xf32>, memref<12x16xf32>) outs(%dx : memref<4x16xf32>)
      {epilogue = #slin.epilogue<accumulate>}
  slin.gemm ins(%dy, %w : memref<4x12xf32>, memref<12x16xf32>) outs(%dx : memref<4x16xf32>)
  return
}

// CHECK-LABEL: func @concat_and_views
// CHECK: slin.concat ins(%{{.*}}, %{{.*}} : memref<2x8xf32>, memref<3x8xbf16>) outs(%{{.*}} : memref<5x8xf32>)
// CHECK: slin.is_adjacent %{{.*}}, %{{.*}} {alignment = 32 : i64} : memref<2x8xf32>, memref<3x8xf32>
// CHECK: slin.is_adjacent %{{.*}}, %{{.*}} : memref<2xf32>, memref<3xf32>
// CHECK: slin.view_concat %{{.*}}, %{{.*}} : memref<2x8xf32>, memref<3x8xf32> -> memref<5x8xf32, strided<[?, 1], offset: ?>>
// GENERIC-LABEL: sym_name = "concat_and_views"
// GENERIC: "slin.is_adjacent"({{.*}}) <{alignment = 16 : i64}>
func.func @concat_and_views(%a: memref<2x8xf32>, %b: memref<3x8xbf16>, %c: memref<3x8xf32>, %buf: memref<5x8xf32>,
                            %u: memref<2xf32>, %v: memref<3xf32>) -> (i1, i1, memref<5x8xf32, strided<[?, 1], offset: ?>>) {
  slin.concat ins(%a, %b : memref<2x8xf32>, memref<3x8xbf16>) outs(%buf : memref<5x8xf32>)
  %ok = slin.is_adjacent %a, %c {alignment = 32} : memref<2x8xf32>, memref<3x8xf32>
  %ok1 = slin.is_adjacent %u, %v : memref<2xf32>, memref<3xf32>
  %view = slin.view_concat %a, %c : memref<2x8xf32>, memref<3x8xf32> -> memref<5x8xf32, strided<[?, 1], offset: ?>>
  return %ok, %ok1, %view : i1, i1, memref<5x8xf32, strided<[?, 1], offset: ?>>
}

// The strategy (printed unless it is the default, fused), the optional path
// result, and the run-time per-part choice.
// CHECK-LABEL: func @strategy_and_path
// CHECK: %{{.*}} = slin.linear ins(%{{.*}} : memref<?x16xf32>) weights(%{{.*}}, %{{.*}} : memref<8x16xf32>, memref<4x16xf32>) outs(%{{.*}} : memref<?x12xf32>) {strategy = #slin.strategy<auto>} -> i32
// CHECK: slin.linear_dgrad ins(%{{.*}} : memref<?x12xf32>) weights(%{{.*}}, %{{.*}} : memref<8x16xf32>, memref<4x16xf32>) outs(%{{.*}} : memref<?x16xf32>) {strategy = #slin.strategy<per_part>}{{$}}
// CHECK: %{{.*}} = slin.prefer_per_part rows(%{{.*}}) weights(%{{.*}}, %{{.*}} : memref<8x16xf32>, memref<4x16xf32>)
func.func @strategy_and_path(%x: memref<?x16xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %y: memref<?x12xf32>, %dx: memref<?x16xf32>, %m: index) -> (i32, i1) {
  %p = slin.linear ins(%x : memref<?x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<?x12xf32>) {strategy = #slin.strategy<auto>} -> i32
  slin.linear_dgrad ins(%y : memref<?x12xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%dx : memref<?x16xf32>) {strategy = #slin.strategy<per_part>}
  %q = slin.prefer_per_part rows(%m) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>)
  return %p, %q : i32, i1
}

// A runtime buffer: one size operand per dynamic dimension; the free may name
// a view of it.
// CHECK-LABEL: func @alloc_dealloc
// CHECK: %[[S:.*]] = slin.alloc() : memref<6x4xbf16>
// CHECK: %[[D:.*]] = slin.alloc(%{{.*}}, %{{.*}}) : memref<?x8x?xf32>
// CHECK: slin.dealloc %[[S]] : memref<6x4xbf16>
// CHECK: slin.dealloc %{{.*}} : memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>>
// GENERIC-LABEL: sym_name = "alloc_dealloc"
// GENERIC: "slin.alloc"() : () -> memref<6x4xbf16>
// GENERIC: "slin.alloc"(%{{.*}}, %{{.*}}) : (index, index) -> memref<?x8x?xf32>
// GENERIC: "slin.dealloc"(%{{.*}}) : (memref<6x4xbf16>) -> ()
func.func @alloc_dealloc(%m: index, %n: index) {
  %s = slin.alloc() : memref<6x4xbf16>
  %d = slin.alloc(%m, %n) : memref<?x8x?xf32>
  %v = memref.cast %d : memref<?x8x?xf32> to memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>>
  slin.dealloc %s : memref<6x4xbf16>
  slin.dealloc %v : memref<?x8x?xf32, strided<[?, ?, 1], offset: ?>>
  return
}

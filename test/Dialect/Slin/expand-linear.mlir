// RUN: splitlinear-opt %s -slin-expand-linear -split-input-file | FileCheck %s

// One part with bias: one GEMM, bias fused as the epilogue (fprop "TN").
// CHECK-LABEL: func @fprop_bias
// CHECK-SAME: (%[[X:.*]]: memref<4x16xf32>, %[[W:.*]]: memref<12x16xf32, strided<[?, 1], offset: ?>>, %[[B:.*]]: memref<12xf32>, %[[Y:.*]]: memref<4x12xf32>)
// CHECK: slin.gemm ins(%[[X]], %[[W]] : {{.*}}) bias(%[[B]] : memref<12xf32>) outs(%[[Y]] : memref<4x12xf32>) {epilogue = #slin.epilogue<bias>, transpose_b}
// CHECK-NOT: slin.linear
func.func @fprop_bias(%x: memref<4x16xf32>, %w: memref<12x16xf32, strided<[?, 1], offset: ?>>, %b: memref<12xf32>, %y: memref<4x12xf32>) {
  slin.linear ins(%x : memref<4x16xf32>) weights(%w : memref<12x16xf32, strided<[?, 1], offset: ?>>) bias(%b : memref<12xf32>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// Strategy per_part: one GEMM per part into a column block of the output.
// CHECK-LABEL: func @per_part
// CHECK-SAME: (%[[X:[^:]*]]: memref<4x16xf32>, %[[A:[^:]*]]: memref<8x16xf32>, %[[C:[^:]*]]: memref<?x16xf32>, %[[BA:[^:]*]]: memref<8xf32>, %[[BC:[^:]*]]: memref<?xf32>, %[[Y:[^:]*]]: memref<4x?xf32>)
// CHECK: %[[Y0:.*]] = memref.subview %[[Y]][0, 0] [%{{.*}}, 8] [1, 1]
// CHECK: slin.gemm ins(%[[X]], %[[A]] : {{.*}}) bias(%[[BA]] : memref<8xf32>) outs(%[[Y0]] : {{.*}}) {epilogue = #slin.epilogue<bias>, transpose_b}
// CHECK: %[[N:.*]] = memref.dim %[[C]], %{{.*}}
// CHECK: %[[Y1:.*]] = memref.subview %[[Y]][0, 8] [%{{.*}}, %[[N]]] [1, 1]
// CHECK: slin.gemm ins(%[[X]], %[[C]] : {{.*}}) bias(%[[BC]] : memref<?xf32>) outs(%[[Y1]] : {{.*}}) {epilogue = #slin.epilogue<bias>, transpose_b}
func.func @per_part(%x: memref<4x16xf32>, %a: memref<8x16xf32>, %c: memref<?x16xf32>, %ba: memref<8xf32>, %bc: memref<?xf32>, %y: memref<4x?xf32>) {
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %c : memref<8x16xf32>, memref<?x16xf32>) bias(%ba, %bc : memref<8xf32>, memref<?xf32>) outs(%y : memref<4x?xf32>) {strategy = #slin.strategy<per_part>}
  return
}

// -----

// Strategy fused (the default), the same meaning as for dgrad: the weight
// parts are copied into one buffer, the bias parts into another, and one
// GEMM runs with the bias epilogue.
// CHECK-LABEL: func @fused_parts
// CHECK-SAME: (%[[X:[^:]*]]: memref<4x16xf32>, %[[A:[^:]*]]: memref<8x16xf32>, %[[C:[^:]*]]: memref<4x16xf32>, %[[BA:[^:]*]]: memref<8xf32>, %[[BC:[^:]*]]: memref<4xf32>, %[[Y:[^:]*]]: memref<4x12xf32>)
// CHECK: %[[B:.*]] = slin.alloc() : memref<12xf32>
// CHECK: slin.concat ins(%[[BA]], %[[BC]] : memref<8xf32>, memref<4xf32>) outs(%[[B]] : memref<12xf32>)
// CHECK: %[[W:.*]] = slin.alloc() : memref<12x16xf32>
// CHECK: slin.concat ins(%[[A]], %[[C]] : memref<8x16xf32>, memref<4x16xf32>) outs(%[[W]] : memref<12x16xf32>)
// CHECK: slin.gemm ins(%[[X]], %[[W]] : memref<4x16xf32>, memref<12x16xf32>) bias(%[[B]] : memref<12xf32>) outs(%[[Y]] : memref<4x12xf32>) {epilogue = #slin.epilogue<bias>, transpose_b}
// CHECK-NOT: slin.gemm
// CHECK-DAG: slin.dealloc %[[B]]
// CHECK-DAG: slin.dealloc %[[W]]
func.func @fused_parts(%x: memref<4x16xf32>, %a: memref<8x16xf32>, %c: memref<4x16xf32>, %ba: memref<8xf32>, %bc: memref<4xf32>, %y: memref<4x12xf32>) {
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %c : memref<8x16xf32>, memref<4x16xf32>) bias(%ba, %bc : memref<8xf32>, memref<4xf32>) outs(%y : memref<4x12xf32>) {strategy = #slin.strategy<fused>}
  return
}

// -----

// Strategy fused into an output without elements: nothing to compute.
// CHECK-LABEL: func @fused_empty_output
// CHECK-NOT: slin.
// CHECK: return
func.func @fused_empty_output(%x: memref<?x0xf32>, %w0: memref<?x0xf32>, %w1: memref<?x0xf32>, %y: memref<?x0xf32>) {
  slin.linear ins(%x : memref<?x0xf32>) weights(%w0, %w1 : memref<?x0xf32>, memref<?x0xf32>) outs(%y : memref<?x0xf32>)
  return
}

// -----

// A part in another element type is converted into a temporary first.
// CHECK-LABEL: func @converted_part
// CHECK: %[[T:.*]] = slin.alloc() : memref<12x16xf32>
// CHECK: slin.concat ins(%{{.*}} : memref<12x16xbf16>) outs(%[[T]] : memref<12x16xf32>)
// CHECK: slin.gemm ins(%{{.*}}, %[[T]] : memref<4x16xf32>, memref<12x16xf32>) outs(%{{.*}} : memref<4x12xf32>) {transpose_b}
// CHECK: slin.dealloc %[[T]]
func.func @converted_part(%x: memref<4x16xf32>, %w: memref<12x16xbf16>, %y: memref<4x12xf32>) {
  slin.linear ins(%x : memref<4x16xf32>) weights(%w : memref<12x16xbf16>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// dgrad with one part: dx = dy · W ("NN").
// CHECK-LABEL: func @dgrad
// CHECK: slin.gemm ins(%{{.*}}, %{{.*}} : memref<4x12xf16>, memref<12x16xf16>) outs(%{{.*}} : memref<4x16xf16>)
// CHECK-NOT: transpose
func.func @dgrad(%dy: memref<4x12xf16>, %w: memref<12x16xf16>, %dx: memref<4x16xf16>) {
  slin.linear_dgrad ins(%dy : memref<4x12xf16>) weights(%w : memref<12x16xf16>) outs(%dx : memref<4x16xf16>)
  return
}

// -----

// dgrad with several parts: concat then one GEMM (per-part GEMMs would each
// produce a whole partial dx); the buffer's sizes are static when the parts'
// are.
// CHECK-LABEL: func @dgrad_parts
// CHECK: %[[T:.*]] = slin.alloc() : memref<12x16xf32>
// CHECK: slin.concat ins(%{{.*}}, %{{.*}} : memref<8x16xf32>, memref<4x16xf32>) outs(%[[T]] : memref<12x16xf32>)
// CHECK: slin.gemm ins(%{{.*}}, %[[T]] : memref<4x12xf32>, memref<12x16xf32>) outs
// CHECK: slin.dealloc %[[T]]
func.func @dgrad_parts(%dy: memref<4x12xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %dx: memref<4x16xf32>) {
  slin.linear_dgrad ins(%dy : memref<4x12xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%dx : memref<4x16xf32>)
  return
}

// -----

// dgrad over parts kept for per-part GEMMs: dx = dy[:, 0:8] · A, then
// dx += dy[:, 8:8+N] · C (accumulate); a statically empty part is skipped.
// CHECK-LABEL: func @dgrad_per_part
// CHECK-SAME: (%[[DY:[^:]*]]: memref<4x?xf32>, %[[A:[^:]*]]: memref<8x16xf32>, %[[E:[^:]*]]: memref<0x16xf32>, %[[C:[^:]*]]: memref<?x16xf32>, %[[DX:[^:]*]]: memref<4x16xf32>)
// CHECK: %[[B0:.*]] = memref.subview %[[DY]][0, 0] [%{{.*}}, 8] [1, 1]
// CHECK: slin.gemm ins(%[[B0]], %[[A]] : {{.*}}) outs(%[[DX]] : memref<4x16xf32>){{$}}
// CHECK: %[[N:.*]] = memref.dim %[[C]], %{{.*}}
// CHECK: %[[B1:.*]] = memref.subview %[[DY]][0, 8] [%{{.*}}, %[[N]]] [1, 1]
// CHECK: slin.gemm ins(%[[B1]], %[[C]] : {{.*}}) outs(%[[DX]] : memref<4x16xf32>) {epilogue = #slin.epilogue<accumulate>}
// CHECK-NOT: slin.gemm
func.func @dgrad_per_part(%dy: memref<4x?xf32>, %a: memref<8x16xf32>, %e: memref<0x16xf32>, %c: memref<?x16xf32>, %dx: memref<4x16xf32>) {
  slin.linear_dgrad ins(%dy : memref<4x?xf32>) weights(%a, %e, %c : memref<8x16xf32>, memref<0x16xf32>, memref<?x16xf32>) outs(%dx : memref<4x16xf32>) {strategy = #slin.strategy<per_part>}
  return
}

// -----

// dgrad per part into a dx without elements: nothing to compute.
// CHECK-LABEL: func @dgrad_per_part_empty_dx
// CHECK-NOT: slin.gemm
// CHECK-NOT: slin.linear_dgrad
func.func @dgrad_per_part_empty_dx(%dy: memref<0x12xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %dx: memref<0x16xf32>) {
  slin.linear_dgrad ins(%dy : memref<0x12xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%dx : memref<0x16xf32>) {strategy = #slin.strategy<per_part>}
  return
}

// -----

// Strategy fused (the default): several dgrad parts are copied into one
// buffer first.
// CHECK-LABEL: func @dgrad_unmarked_parts
// CHECK: slin.concat
// CHECK: slin.gemm
// CHECK-NOT: accumulate
func.func @dgrad_unmarked_parts(%dy: memref<4x12xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %dx: memref<4x16xf32>) {
  slin.linear_dgrad ins(%dy : memref<4x12xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%dx : memref<4x16xf32>)
  return
}

// -----

// A path result becomes the constant of the path taken: several parts with
// strategy per_part run per part (2), fused ones are copied (1), fprop and
// dgrad alike; one part is a view (0).
// CHECK-LABEL: func @paths
// CHECK-DAG: %[[PER:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[COPY:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[VIEW:.*]] = arith.constant 0 : i32
// CHECK: return %[[PER]], %[[COPY]], %[[VIEW]], %[[COPY]], %[[PER]] : i32, i32, i32, i32, i32
func.func @paths(%x: memref<4x16xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %y: memref<4x12xf32>, %dx: memref<4x16xf32>, %y8: memref<4x8xf32>) -> (i32, i32, i32, i32, i32) {
  %p0 = slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<4x12xf32>) {strategy = #slin.strategy<per_part>} -> i32
  %p1 = slin.linear_dgrad ins(%y : memref<4x12xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%dx : memref<4x16xf32>) -> i32
  %p2 = slin.linear_dgrad ins(%y8 : memref<4x8xf32>) weights(%a : memref<8x16xf32>) outs(%dx : memref<4x16xf32>) -> i32
  %p3 = slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<4x12xf32>) -> i32
  %p4 = slin.linear_dgrad ins(%y : memref<4x12xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%dx : memref<4x16xf32>) {strategy = #slin.strategy<per_part>} -> i32
  return %p0, %p1, %p2, %p3, %p4 : i32, i32, i32, i32, i32
}

// -----

// Strategy auto with one part has no choice to make: one GEMM.
// CHECK-LABEL: func @auto_one_part
// CHECK: slin.gemm
// CHECK-NOT: slin.linear
func.func @auto_one_part(%dy: memref<4x12xf32>, %w: memref<12x16xf32>, %dx: memref<4x16xf32>) {
  slin.linear_dgrad ins(%dy : memref<4x12xf32>) weights(%w : memref<12x16xf32>) outs(%dx : memref<4x16xf32>) {strategy = #slin.strategy<auto>}
  return
}

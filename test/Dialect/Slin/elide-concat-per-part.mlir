// RUN: splitlinear-opt %s -slin-elide-concat="remarks=true" -split-input-file -verify-diagnostics | FileCheck %s

// Strategy auto, unknown adjacency: view if the check passes; else one GEMM
// per part when the runtime prefers it (the parts are kept, strategy
// per_part); else the copy.
// CHECK-LABEL: func @checked
// CHECK-SAME: (%[[X:[^:]*]]: memref<?x16xf32>, %[[A:[^:]*]]: memref<8x16xf32>, %[[B:[^:]*]]: memref<4x16xf32>
// CHECK: %[[OK:.*]] = slin.is_adjacent %[[A]], %[[B]]
// CHECK: scf.if %[[OK]] {
// CHECK:   %[[V:.*]] = slin.view_concat %[[A]], %[[B]]
// CHECK:   slin.linear ins(%[[X]] : memref<?x16xf32>) weights(%[[V]] :
// CHECK: } else {
// CHECK:   %[[M:.*]] = memref.dim %[[X]], %{{.*}}
// CHECK:   %[[SMALL:.*]] = slin.prefer_per_part rows(%[[M]]) weights(%[[A]], %[[B]] : memref<8x16xf32>, memref<4x16xf32>)
// CHECK:   scf.if %[[SMALL]] {
// CHECK:     slin.linear ins(%[[X]] : memref<?x16xf32>) weights(%[[A]], %[[B]] : memref<8x16xf32>, memref<4x16xf32>) outs(%{{.*}}) {strategy = #slin.strategy<per_part>}
// CHECK:   } else {
// CHECK:     %[[COPY:.*]] = slin.alloc() : memref<12x16xf32>
// CHECK:     slin.concat ins(%[[A]], %[[B]] :
// CHECK:     slin.linear ins(%[[X]] : memref<?x16xf32>) weights(%[[COPY]] :
// CHECK:     slin.dealloc %[[COPY]]
func.func @checked(%x: memref<?x16xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %y: memref<?x12xf32>) {
  // expected-remark @+1 {{weight parts: run-time check, per-part GEMMs or copy, chosen at run time (part #1 may be in another allocation)}}
  slin.linear ins(%x : memref<?x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<?x12xf32>) {strategy = #slin.strategy<auto>}
  return
}

// -----

// Proven not adjacent: no check, only the run-time choice.
// CHECK-LABEL: func @disjoint
// CHECK-NOT: slin.is_adjacent
// CHECK: slin.prefer_per_part
// CHECK: slin.linear {{.*}} {strategy = #slin.strategy<per_part>}
// CHECK: slin.concat
func.func @disjoint(%x: memref<?x16xf32>, %y: memref<?x12xf32>) {
  %a = memref.alloc() : memref<8x16xf32>
  %b = memref.alloc() : memref<4x16xf32>
  // expected-remark @+1 {{weight parts: per-part GEMMs or copy, chosen at run time (part #1 is in another allocation)}}
  slin.linear ins(%x : memref<?x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<?x12xf32>) {strategy = #slin.strategy<auto>}
  return
}

// -----

// Proven adjacent: the view alone, no fallback.
// CHECK-LABEL: func @adjacent
// CHECK: slin.view_concat
// CHECK-NOT: slin.prefer_per_part
func.func @adjacent(%x: memref<?x16xf32>, %y: memref<?x12xf32>) {
  %buf = memref.alloc() : memref<12x16xf32>
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<?x16xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>) outs(%y : memref<?x12xf32>) {strategy = #slin.strategy<auto>}
  return
}

// -----

// dgrad gets the same choice, on the rows of dy.
// CHECK-LABEL: func @dgrad_checked
// CHECK-SAME: (%[[DY:[^:]*]]: memref<?x12xf32>, %[[A:[^:]*]]: memref<8x16xf32>, %[[B:[^:]*]]: memref<4x16xf32>, %[[DX:[^:]*]]: memref<?x16xf32>)
// CHECK: %[[OK:.*]] = slin.is_adjacent %[[A]], %[[B]]
// CHECK: scf.if %[[OK]] {
// CHECK:   %[[V:.*]] = slin.view_concat %[[A]], %[[B]]
// CHECK:   slin.linear_dgrad ins(%[[DY]] : memref<?x12xf32>) weights(%[[V]] :
// CHECK: } else {
// CHECK:   %[[M:.*]] = memref.dim %[[DY]], %{{.*}}
// CHECK:   %[[SMALL:.*]] = slin.prefer_per_part rows(%[[M]]) weights(%[[A]], %[[B]] : memref<8x16xf32>, memref<4x16xf32>)
// CHECK:   scf.if %[[SMALL]] {
// CHECK:     slin.linear_dgrad ins(%[[DY]] : memref<?x12xf32>) weights(%[[A]], %[[B]] : memref<8x16xf32>, memref<4x16xf32>) outs(%[[DX]] : memref<?x16xf32>) {strategy = #slin.strategy<per_part>}
// CHECK:   } else {
// CHECK:     %[[COPY:.*]] = slin.alloc() : memref<12x16xf32>
// CHECK:     slin.concat ins(%[[A]], %[[B]] :
// CHECK:     slin.linear_dgrad ins(%[[DY]] : memref<?x12xf32>) weights(%[[COPY]] :
// CHECK:     slin.dealloc %[[COPY]]
func.func @dgrad_checked(%dy: memref<?x12xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %dx: memref<?x16xf32>) {
  // expected-remark @+1 {{weight parts: run-time check, per-part GEMMs or copy, chosen at run time (part #1 may be in another allocation)}}
  slin.linear_dgrad ins(%dy : memref<?x12xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%dx : memref<?x16xf32>) {strategy = #slin.strategy<auto>}
  return
}

// -----

// dgrad, proven not adjacent, with a statically empty part: the empty part
// is dropped before the per-part op is built.
// CHECK-LABEL: func @dgrad_disjoint_with_empty_part
// CHECK-NOT: slin.is_adjacent
// CHECK: slin.prefer_per_part
// CHECK: slin.linear_dgrad ins(%{{.*}} : memref<?x12xf32>) weights(%{{.*}}, %{{.*}} : memref<8x16xf32>, memref<4x16xf32>) outs(%{{.*}} : memref<?x16xf32>) {strategy = #slin.strategy<per_part>}
// CHECK: slin.concat
func.func @dgrad_disjoint_with_empty_part(%dy: memref<?x12xf32>, %e: memref<0x16xf32>, %dx: memref<?x16xf32>) {
  %a = memref.alloc() : memref<8x16xf32>
  %b = memref.alloc() : memref<4x16xf32>
  // expected-remark @+2 {{dropped 1 statically empty part}}
  // expected-remark @+1 {{weight parts: per-part GEMMs or copy, chosen at run time (part #1 is in another allocation)}}
  slin.linear_dgrad ins(%dy : memref<?x12xf32>) weights(%a, %e, %b : memref<8x16xf32>, memref<0x16xf32>, memref<4x16xf32>) outs(%dx : memref<?x16xf32>) {strategy = #slin.strategy<auto>}
  return
}

// -----

// dgrad with proven-adjacent parts: the view alone.
// CHECK-LABEL: func @dgrad_adjacent
// CHECK: slin.view_concat
// CHECK-NOT: slin.prefer_per_part
func.func @dgrad_adjacent(%dy: memref<?x12xf32>, %dx: memref<?x16xf32>) {
  %buf = memref.alloc() : memref<12x16xf32>
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear_dgrad ins(%dy : memref<?x12xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>) outs(%dx : memref<?x16xf32>) {strategy = #slin.strategy<auto>}
  return
}

// -----

// The path result follows the branches: 0 view, 2 per part, 1 copy.
// CHECK-LABEL: func @path
// CHECK-DAG: %[[VIEW:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[PER:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[COPY:.*]] = arith.constant 1 : i32
// CHECK: %[[P:.*]] = scf.if %{{.*}} -> (i32) {
// CHECK:   scf.yield %[[VIEW]] : i32
// CHECK: } else {
// CHECK:   %[[Q:.*]] = scf.if %{{.*}} -> (i32) {
// CHECK:     scf.yield %[[PER]] : i32
// CHECK:   } else {
// CHECK:     scf.yield %[[COPY]] : i32
// CHECK:   scf.yield %[[Q]] : i32
// CHECK: return %[[P]] : i32
func.func @path(%x: memref<?x16xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %y: memref<?x12xf32>) -> i32 {
  // expected-remark @+1 {{weight parts: run-time check, per-part GEMMs or copy, chosen at run time (part #1 may be in another allocation)}}
  %p = slin.linear ins(%x : memref<?x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<?x12xf32>) {strategy = #slin.strategy<auto>} -> i32
  return %p : i32
}

// -----

// Strategy fused (the default) with a path: a checked view reports
// select(is_adjacent, 0, 1), and no run-time per-part choice is made.
// CHECK-LABEL: func @fused_path
// CHECK-NOT: slin.prefer_per_part
// CHECK: %[[OK:.*]] = slin.is_adjacent
// CHECK: %[[P:.*]] = arith.select %[[OK]], %{{.*}}, %{{.*}} : i32
// CHECK: return %[[P]] : i32
func.func @fused_path(%x: memref<?x16xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %y: memref<?x12xf32>) -> i32 {
  // expected-remark @+1 {{weight parts: run-time check (part #1 may be in another allocation)}}
  %p = slin.linear ins(%x : memref<?x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<?x12xf32>) -> i32
  return %p : i32
}

// -----

// Strategy per_part: the parts are kept as they are.
// CHECK-LABEL: func @per_part_kept
// CHECK-NOT: slin.is_adjacent
// CHECK: slin.linear {{.*}} {strategy = #slin.strategy<per_part>}
func.func @per_part_kept(%x: memref<?x16xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %y: memref<?x12xf32>) {
  slin.linear ins(%x : memref<?x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<?x12xf32>) {strategy = #slin.strategy<per_part>}
  return
}

// RUN: splitlinear-opt %s -slin-elide-concat="per-part-max-rows=64 remarks=true" -split-input-file -verify-diagnostics | FileCheck %s

// Unknown adjacency: view if the check passes; else one GEMM per part for
// small inputs (the parts are kept, marked slin.per_part); else the copy.
// CHECK-LABEL: func @checked
// CHECK-SAME: (%[[X:[^:]*]]: memref<?x16xf32>, %[[A:[^:]*]]: memref<8x16xf32>, %[[B:[^:]*]]: memref<4x16xf32>
// CHECK: %[[OK:.*]] = slin.is_adjacent %[[A]], %[[B]]
// CHECK: scf.if %[[OK]] {
// CHECK:   %[[V:.*]] = slin.view_concat %[[A]], %[[B]]
// CHECK:   slin.linear ins(%[[X]] : memref<?x16xf32>) weights(%[[V]] :
// CHECK: } else {
// CHECK:   %[[M:.*]] = memref.dim %[[X]], %{{.*}}
// CHECK:   %[[SMALL:.*]] = arith.cmpi ule, %[[M]], %{{.*}}
// CHECK:   scf.if %[[SMALL]] {
// CHECK:     slin.linear ins(%[[X]] : memref<?x16xf32>) weights(%[[A]], %[[B]] : memref<8x16xf32>, memref<4x16xf32>) outs(%{{.*}}) {slin.per_part}
// CHECK:   } else {
// CHECK:     %[[COPY:.*]] = memref.alloc() {slin.buffer} : memref<12x16xf32>
// CHECK:     slin.concat ins(%[[A]], %[[B]] :
// CHECK:     slin.linear ins(%[[X]] : memref<?x16xf32>) weights(%[[COPY]] :
// CHECK:     memref.dealloc %[[COPY]] {slin.buffer}
func.func @checked(%x: memref<?x16xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %y: memref<?x12xf32>) {
  // expected-remark @+1 {{weight parts: run-time check, per-part GEMMs for inputs of at most 64 rows, else copy (part #1 may be in another allocation)}}
  slin.linear ins(%x : memref<?x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<?x12xf32>)
  return
}

// -----

// Proven not adjacent: no check, only the size test.
// CHECK-LABEL: func @disjoint
// CHECK-NOT: slin.is_adjacent
// CHECK: arith.cmpi ule
// CHECK: slin.linear {{.*}} {slin.per_part}
// CHECK: slin.concat
func.func @disjoint(%x: memref<?x16xf32>, %y: memref<?x12xf32>) {
  %a = memref.alloc() : memref<8x16xf32>
  %b = memref.alloc() : memref<4x16xf32>
  // expected-remark @+1 {{weight parts: per-part GEMMs for inputs of at most 64 rows, else copy (part #1 is in another allocation)}}
  slin.linear ins(%x : memref<?x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<?x12xf32>)
  return
}

// -----

// Proven adjacent: the view alone, no fallback.
// CHECK-LABEL: func @adjacent
// CHECK: slin.view_concat
// CHECK-NOT: slin.per_part
func.func @adjacent(%x: memref<?x16xf32>, %y: memref<?x12xf32>) {
  %buf = memref.alloc() : memref<12x16xf32>
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<?x16xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>) outs(%y : memref<?x12xf32>)
  return
}

// -----

// dgrad gets the same fallback, on the rows of dy.
// CHECK-LABEL: func @dgrad_checked
// CHECK-SAME: (%[[DY:[^:]*]]: memref<?x12xf32>, %[[A:[^:]*]]: memref<8x16xf32>, %[[B:[^:]*]]: memref<4x16xf32>, %[[DX:[^:]*]]: memref<?x16xf32>)
// CHECK: %[[OK:.*]] = slin.is_adjacent %[[A]], %[[B]]
// CHECK: scf.if %[[OK]] {
// CHECK:   %[[V:.*]] = slin.view_concat %[[A]], %[[B]]
// CHECK:   slin.linear_dgrad ins(%[[DY]] : memref<?x12xf32>) weights(%[[V]] :
// CHECK: } else {
// CHECK:   %[[M:.*]] = memref.dim %[[DY]], %{{.*}}
// CHECK:   %[[SMALL:.*]] = arith.cmpi ule, %[[M]], %{{.*}}
// CHECK:   scf.if %[[SMALL]] {
// CHECK:     slin.linear_dgrad ins(%[[DY]] : memref<?x12xf32>) weights(%[[A]], %[[B]] : memref<8x16xf32>, memref<4x16xf32>) outs(%[[DX]] : memref<?x16xf32>) {slin.per_part}
// CHECK:   } else {
// CHECK:     %[[COPY:.*]] = memref.alloc() {slin.buffer} : memref<12x16xf32>
// CHECK:     slin.concat ins(%[[A]], %[[B]] :
// CHECK:     slin.linear_dgrad ins(%[[DY]] : memref<?x12xf32>) weights(%[[COPY]] :
// CHECK:     memref.dealloc %[[COPY]] {slin.buffer}
func.func @dgrad_checked(%dy: memref<?x12xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %dx: memref<?x16xf32>) {
  // expected-remark @+1 {{weight parts: run-time check, per-part GEMMs for inputs of at most 64 rows, else copy (part #1 may be in another allocation)}}
  slin.linear_dgrad ins(%dy : memref<?x12xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%dx : memref<?x16xf32>)
  return
}

// -----

// dgrad, proven not adjacent, with a statically empty part: the empty part
// is dropped before the per-part op is built.
// CHECK-LABEL: func @dgrad_disjoint_with_empty_part
// CHECK-NOT: slin.is_adjacent
// CHECK: arith.cmpi ule
// CHECK: slin.linear_dgrad ins(%{{.*}} : memref<?x12xf32>) weights(%{{.*}}, %{{.*}} : memref<8x16xf32>, memref<4x16xf32>) outs(%{{.*}} : memref<?x16xf32>) {slin.per_part}
// CHECK: slin.concat
func.func @dgrad_disjoint_with_empty_part(%dy: memref<?x12xf32>, %e: memref<0x16xf32>, %dx: memref<?x16xf32>) {
  %a = memref.alloc() : memref<8x16xf32>
  %b = memref.alloc() : memref<4x16xf32>
  // expected-remark @+2 {{dropped 1 statically empty part}}
  // expected-remark @+1 {{weight parts: per-part GEMMs for inputs of at most 64 rows, else copy (part #1 is in another allocation)}}
  slin.linear_dgrad ins(%dy : memref<?x12xf32>) weights(%a, %e, %b : memref<8x16xf32>, memref<0x16xf32>, memref<4x16xf32>) outs(%dx : memref<?x16xf32>)
  return
}

// -----

// dgrad with proven-adjacent parts: the view alone.
// CHECK-LABEL: func @dgrad_adjacent
// CHECK: slin.view_concat
// CHECK-NOT: slin.per_part
func.func @dgrad_adjacent(%dy: memref<?x12xf32>, %dx: memref<?x16xf32>) {
  %buf = memref.alloc() : memref<12x16xf32>
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear_dgrad ins(%dy : memref<?x12xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>) outs(%dx : memref<?x16xf32>)
  return
}

// RUN: splitlinear-opt %s -slin-elide-concat=remarks=true -split-input-file -verify-diagnostics | FileCheck %s

// slin.scaled_linear: FP8 weight parts become one FP8 buffer exactly as the
// parts of slin.linear do; the scales are kept (weight_scale already spans
// the combined rows).

// Proven adjacent: a view of the FP8 parts, no copy.
// CHECK-LABEL: func @adjacent
// CHECK-SAME: (%[[X:[^:]*]]: memref<?x32xf8E4M3FN>, %[[SX:[^:]*]]: memref<?xf32>, %[[SW:[^:]*]]: memref<48xf32>, %[[Y:[^:]*]]: memref<?x48xbf16>)
// CHECK: %[[W:.*]] = slin.view_concat %{{.*}}, %{{.*}} : {{.*}} -> memref<48x32xf8E4M3FN, strided<[?, 1], offset: ?>>
// CHECK: slin.scaled_linear ins(%[[X]] : memref<?x32xf8E4M3FN>) scale(%[[SX]] : memref<?xf32>) weights(%[[W]] : memref<48x32xf8E4M3FN, strided<[?, 1], offset: ?>>) weight_scale(%[[SW]] : memref<48xf32>) outs(%[[Y]] : memref<?x48xbf16>) {fast_accum, scaling = #slin.scaling<outer_vector>}
// CHECK-NOT: slin.concat
// CHECK-NOT: slin.is_adjacent
func.func @adjacent(%x: memref<?x32xf8E4M3FN>, %sx: memref<?xf32>, %sw: memref<48xf32>, %y: memref<?x48xbf16>) {
  %buf = memref.alloc() : memref<48x32xf8E4M3FN>
  %a = memref.subview %buf[0, 0] [32, 32] [1, 1] : memref<48x32xf8E4M3FN> to memref<32x32xf8E4M3FN, strided<[32, 1]>>
  %b = memref.subview %buf[32, 0] [16, 32] [1, 1] : memref<48x32xf8E4M3FN> to memref<16x32xf8E4M3FN, strided<[32, 1], offset: 1024>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.scaled_linear ins(%x : memref<?x32xf8E4M3FN>) scale(%sx : memref<?xf32>)
      weights(%a, %b : memref<32x32xf8E4M3FN, strided<[32, 1]>>, memref<16x32xf8E4M3FN, strided<[32, 1], offset: 1024>>)
      weight_scale(%sw : memref<48xf32>) outs(%y : memref<?x48xbf16>) {scaling = #slin.scaling<outer_vector>, fast_accum}
  return
}

// -----

// Proven disjoint (two allocations): one FP8 buffer, a same-type copy, freed
// after the op; the bias parts are combined independently.
// CHECK-LABEL: func @disjoint
// CHECK: %[[A:.*]] = memref.alloc() : memref<16x32xf8E5M2>
// CHECK: %[[B:.*]] = memref.alloc() : memref<16x32xf8E5M2>
// CHECK: %[[W:.*]] = slin.alloc() : memref<32x32xf8E5M2>
// CHECK: slin.concat ins(%[[A]], %[[B]] : memref<16x32xf8E5M2>, memref<16x32xf8E5M2>) outs(%[[W]] : memref<32x32xf8E5M2>)
// CHECK: %[[OK:.*]] = slin.is_adjacent %{{.*}}, %{{.*}} : memref<16xf32, strided<[?], offset: ?>>, memref<16xf32, strided<[?], offset: ?>>
// CHECK: %[[BIAS:.*]] = scf.if %[[OK]]
// CHECK: slin.scaled_linear ins(%{{.*}} : memref<?x32xf8E4M3FN>) scale(%{{.*}} : memref<?xf32>) weights(%[[W]] : memref<32x32xf8E5M2>) weight_scale(%{{.*}} : memref<32xf32>) bias(%[[BIAS]] : memref<32xf32, strided<[1], offset: ?>>) outs(%{{.*}} : memref<?x32xf32>) {scaling = #slin.scaling<outer_vector>}
// CHECK: slin.dealloc %[[W]] : memref<32x32xf8E5M2>
func.func @disjoint(%x: memref<?x32xf8E4M3FN>, %sx: memref<?xf32>, %sw: memref<32xf32>,
                    %ba: memref<16xf32, strided<[?], offset: ?>>, %bb: memref<16xf32, strided<[?], offset: ?>>, %y: memref<?x32xf32>) {
  %a = memref.alloc() : memref<16x32xf8E5M2>
  %b = memref.alloc() : memref<16x32xf8E5M2>
  // expected-remark @+2 {{weight parts: copy (part #1 is in another allocation)}}
  // expected-remark @+1 {{bias parts: run-time check (part #0: unit stride is not known at compile time)}}
  slin.scaled_linear ins(%x : memref<?x32xf8E4M3FN>) scale(%sx : memref<?xf32>)
      weights(%a, %b : memref<16x32xf8E5M2>, memref<16x32xf8E5M2>) weight_scale(%sw : memref<32xf32>)
      bias(%ba, %bb : memref<16xf32, strided<[?], offset: ?>>, memref<16xf32, strided<[?], offset: ?>>)
      outs(%y : memref<?x32xf32>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

// Undecidable (function arguments): the run-time checked view of FP8 parts,
// copied into an FP8 buffer when the check fails.
// CHECK-LABEL: func @checked
// CHECK-SAME: %[[A:[^:]*]]: memref<?x32xf8E4M3FN, strided<[?, ?], offset: ?>>, %[[B:[^:]*]]: memref<?x32xf8E4M3FN, strided<[?, ?], offset: ?>>
// CHECK: %[[OK:.*]] = slin.is_adjacent %[[A]], %[[B]] :
// CHECK: %[[W:.*]] = scf.if %[[OK]] -> (memref<?x32xf8E4M3FN, strided<[?, 1], offset: ?>>) {
// CHECK:   slin.view_concat %[[A]], %[[B]]
// CHECK: } else {
// CHECK:   %[[COPY:.*]] = slin.alloc(%{{.*}}) : memref<?x32xf8E4M3FN>
// CHECK:   slin.concat ins(%[[A]], %[[B]] : {{.*}}) outs(%[[COPY]] : memref<?x32xf8E4M3FN>)
// CHECK: }
// CHECK: %[[PATH:.*]] = arith.select %[[OK]], %{{.*}}, %{{.*}} : i32
// CHECK: slin.scaled_linear ins(%{{.*}}) scale(%{{.*}}) weights(%[[W]] : {{.*}}) weight_scale
// CHECK: scf.if %[[OK]] {
// CHECK: } else {
// CHECK:   slin.dealloc %[[W]]
// CHECK: return %[[PATH]]
func.func @checked(%x: memref<?x32xf8E4M3FN>, %sx: memref<?xf32>, %a: memref<?x32xf8E4M3FN, strided<[?, ?], offset: ?>>,
                   %b: memref<?x32xf8E4M3FN, strided<[?, ?], offset: ?>>, %sw: memref<?xf32>, %y: memref<?x?xf16>) -> i32 {
  // expected-remark @+1 {{weight parts: run-time check (part #0: unit column stride is not known at compile time)}}
  %p = slin.scaled_linear ins(%x : memref<?x32xf8E4M3FN>) scale(%sx : memref<?xf32>)
      weights(%a, %b : memref<?x32xf8E4M3FN, strided<[?, ?], offset: ?>>, memref<?x32xf8E4M3FN, strided<[?, ?], offset: ?>>)
      weight_scale(%sw : memref<?xf32>) outs(%y : memref<?x?xf16>) {scaling = #slin.scaling<outer_vector>} -> i32
  return %p : i32
}

// -----

// Strategy auto, undecidable: the view if the check passes; else the
// runtime's choice between one scaled GEMM per part (parts kept) and the
// FP8 copy.
// CHECK-LABEL: func @auto
// CHECK-SAME: (%[[X:[^:]*]]: memref<?x32xf8E4M3FN>, %[[SX:[^:]*]]: memref<?xf32>, %[[A:[^:]*]]: memref<16x32xf8E4M3FN, strided<[?, ?], offset: ?>>, %[[B:[^:]*]]: memref<16x32xf8E4M3FN, strided<[?, ?], offset: ?>>
// CHECK: %[[OK:.*]] = slin.is_adjacent %[[A]], %[[B]]
// CHECK: scf.if %[[OK]] -> (i32) {
// CHECK:   %[[V:.*]] = slin.view_concat %[[A]], %[[B]]
// CHECK:   slin.scaled_linear ins(%[[X]] : memref<?x32xf8E4M3FN>) scale(%[[SX]] : memref<?xf32>) weights(%[[V]] :
// CHECK: } else {
// CHECK:   %[[M:.*]] = memref.dim %[[X]], %{{.*}}
// CHECK:   %[[PREFER:.*]] = slin.prefer_per_part rows(%[[M]]) weights(%[[A]], %[[B]] :
// CHECK:   scf.if %[[PREFER]] -> (i32) {
// CHECK:     slin.scaled_linear ins(%[[X]] : memref<?x32xf8E4M3FN>) scale(%[[SX]] : memref<?xf32>) weights(%[[A]], %[[B]] : {{.*}}) weight_scale(%{{.*}} : memref<32xf32>) outs(%{{.*}}) {fast_accum, scaling = #slin.scaling<outer_vector>, strategy = #slin.strategy<per_part>}
// CHECK:   } else {
// CHECK:     %[[COPY:.*]] = slin.alloc() : memref<32x32xf8E4M3FN>
// CHECK:     slin.concat ins(%[[A]], %[[B]] : {{.*}}) outs(%[[COPY]] : memref<32x32xf8E4M3FN>)
// CHECK:     slin.scaled_linear ins(%[[X]] : memref<?x32xf8E4M3FN>) scale(%[[SX]] : memref<?xf32>) weights(%[[COPY]] : memref<32x32xf8E4M3FN>)
// CHECK:     slin.dealloc %[[COPY]]
// CHECK-NOT: strategy = #slin.strategy<auto>
func.func @auto(%x: memref<?x32xf8E4M3FN>, %sx: memref<?xf32>, %a: memref<16x32xf8E4M3FN, strided<[?, ?], offset: ?>>,
                %b: memref<16x32xf8E4M3FN, strided<[?, ?], offset: ?>>, %sw: memref<32xf32>, %y: memref<?x32xbf16>) -> i32 {
  // expected-remark @+1 {{weight parts: run-time check, per-part GEMMs or copy, chosen at run time (part #0: unit column stride is not known at compile time)}}
  %p = slin.scaled_linear ins(%x : memref<?x32xf8E4M3FN>) scale(%sx : memref<?xf32>)
      weights(%a, %b : memref<16x32xf8E4M3FN, strided<[?, ?], offset: ?>>, memref<16x32xf8E4M3FN, strided<[?, ?], offset: ?>>)
      weight_scale(%sw : memref<32xf32>) outs(%y : memref<?x32xbf16>)
      {scaling = #slin.scaling<outer_vector>, fast_accum, strategy = #slin.strategy<auto>} -> i32
  return %p : i32
}

// Regression tests of the crashes and hangs found by fuzzing the compiler
// (fuzz/slin-fuzz.cpp; reproducers in fuzz/regressions/, see
// docs/Reliability.md). Each case crashed, hung or produced invalid IR before
// its fix.
//
// RUN: splitlinear-opt %s -split-input-file -verify-diagnostics \
// RUN:   -slin-elide-concat=remarks=true | FileCheck %s
// The whole pipeline must not crash on these either (the invalid cases fail
// verification, hence `not`, which fails on a crash).
// RUN: not splitlinear-opt %s -split-input-file \
// RUN:   -splitlinear-pipeline="target=cpu" -o /dev/null 2>&1 \
// RUN: | FileCheck %s --check-prefix=PIPELINE
// PIPELINE-NOT: Stack dump
// PIPELINE: error: 'slin.linear' op operand #3 has type
// PIPELINE-NOT: Stack dump

// Finding 1: a part cast from an unranked memref crashed the adjacency
// analysis (llvm::cast<MemRefType> of memref<*xf32>). The cast's result is
// its own root now: the parts may alias, so the check happens at run time.
// CHECK-LABEL: func @unranked_cast_source
// CHECK: slin.is_adjacent
// CHECK: slin.view_concat
// CHECK: slin.concat
func.func @unranked_cast_source(%u: memref<*xf32>, %x: memref<4x16xf32>, %b: memref<4x16xf32>, %y: memref<4x8xf32>) {
  %a = memref.cast %u : memref<*xf32> to memref<4x16xf32>
  // expected-remark @+1 {{weight parts: run-time check (part #1 may be in another allocation)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4x16xf32>, memref<4x16xf32>) outs(%y : memref<4x8xf32>)
  return
}

// -----

// Finding 1 (same class): memref.reinterpret_cast of an unranked memref.
// Both parts view one buffer back to back; only the base pointer's alignment
// is unknown.
// CHECK-LABEL: func @reinterpret_cast_unranked_source
// CHECK: slin.is_adjacent
func.func @reinterpret_cast_unranked_source(%u: memref<*xf32>, %x: memref<4x16xf32>, %y: memref<4x8xf32>) {
  %a = memref.reinterpret_cast %u to offset: [0], sizes: [4, 16], strides: [16, 1] : memref<*xf32> to memref<4x16xf32, strided<[16, 1]>>
  %b = memref.reinterpret_cast %u to offset: [64], sizes: [4, 16], strides: [16, 1] : memref<*xf32> to memref<4x16xf32, strided<[16, 1], offset: 64>>
  // expected-remark @+1 {{weight parts: run-time check (alignment of the first element is not known)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 64>>) outs(%y : memref<4x8xf32>)
  return
}

// -----

// Finding 1 (same class): through a cast to unranked and back, the subview
// and the reinterpret_cast are still known to share one base buffer.
// CHECK-LABEL: func @unranked_round_trip
// CHECK: slin.view_concat
// CHECK-NOT: slin.is_adjacent
func.func @unranked_round_trip(%x: memref<4x16xf32>, %y: memref<4x8xf32>) {
  %buf = memref.alloc() : memref<8x16xf32>
  %u = memref.cast %buf : memref<8x16xf32> to memref<*xf32>
  %r = memref.cast %u : memref<*xf32> to memref<8x16xf32>
  %a = memref.subview %r[0, 0] [4, 16] [1, 1] : memref<8x16xf32> to memref<4x16xf32, strided<[16, 1]>>
  %b = memref.reinterpret_cast %u to offset: [64], sizes: [4, 16], strides: [16, 1] : memref<*xf32> to memref<4x16xf32, strided<[16, 1], offset: 64>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 64>>) outs(%y : memref<4x8xf32>)
  return
}

// -----

// Finding 2: a layout that is not strided passed the verifier and then made
// slin-expand-linear build an invalid memref.subview (and the conversion
// call memref.extract_strided_metadata on it). slin ops take strided memrefs.
func.func @non_strided_layout(%x: memref<4x16xf32>, %a: memref<4x16xf32>, %b: memref<4x16xf32>,
                              %y: memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>>) {
  // expected-error @+1 {{'slin.linear' op operand #3 has type 'memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>>', expected a strided layout}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4x16xf32>, memref<4x16xf32>) outs(%y : memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>>)
  return
}

// -----

// Finding 2 (same class): parts in another memory space became a view in
// the default one, which lowered to an invalid memref.reinterpret_cast.
func.func @memory_space(%x: memref<4x16xf32>, %a: memref<4x16xf32, strided<[16, 1]>, 1>,
                        %b: memref<4x16xf32, strided<[16, 1], offset: 64>, 1>, %y: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.linear' op operand #1 has type 'memref<4x16xf32, strided<[16, 1]>, 1>', expected the default memory space}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4x16xf32, strided<[16, 1]>, 1>, memref<4x16xf32, strided<[16, 1], offset: 64>, 1>) outs(%y : memref<4x8xf32>)
  return
}

// -----

func.func @view_concat_memory_space(%a: memref<2x8xf32>, %b: memref<3x8xf32>) {
  // expected-error @+1 {{'slin.view_concat' op result #0 has type 'memref<5x8xf32, strided<[?, 1], offset: ?>, 1>', expected the default memory space}}
  %v = slin.view_concat %a, %b : memref<2x8xf32>, memref<3x8xf32> -> memref<5x8xf32, strided<[?, 1], offset: ?>, 1>
  return
}

// -----

// Finding 3: the verifier summed the parts' rows with wrapping int64
// arithmetic (undefined behaviour; 2 · 2^62 wraps to ShapedType::kDynamic,
// so the output's columns were not checked and the view's static size
// became "dynamic" without an operand).
func.func @rows_sum_overflow(%x: memref<4x16xf32>, %a: memref<4611686018427387904x16xf32>,
                             %b: memref<4611686018427387904x16xf32>, %y: memref<4x?xf32>) {
  // expected-error @+1 {{'slin.linear' op the sum of the weight parts' rows overflows int64}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4611686018427387904x16xf32>, memref<4611686018427387904x16xf32>) outs(%y : memref<4x?xf32>)
  return
}

// -----

func.func @concat_rows_overflow(%a: memref<9223372036854775807xf32>, %b: memref<1xf32>, %o: memref<?xf32>) {
  // expected-error @+1 {{'slin.concat' op the sum of the parts' rows overflows int64}}
  slin.concat ins(%a, %b : memref<9223372036854775807xf32>, memref<1xf32>) outs(%o : memref<?xf32>)
  return
}

// -----

// Finding 3 (same class): sizes up to the limit still verify and compile.
// CHECK-LABEL: func @rows_sum_at_limit
// CHECK: slin.view_concat {{.*}} -> memref<9223372036854775807x16xf32, strided<[?, 1], offset: ?>>
func.func @rows_sum_at_limit(%x: memref<4x16xf32>, %a: memref<9223372036854775806x16xf32>,
                             %b: memref<1x16xf32>, %y: memref<4x?xf32>) {
  // expected-remark @+1 {{weight parts: run-time check (part #1 may be in another allocation)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<9223372036854775806x16xf32>, memref<1x16xf32>) outs(%y : memref<4x?xf32>)
  return
}

// -----

// Finding 4: the adjacency analysis expanded index expressions into
// polynomials without bounds; 15 squarings of (n + m) hung the pass (and
// large constants overflowed its coefficients). Past its bounds an
// expression is unknown: checked at run time.
// CHECK-LABEL: func @index_expression_blowup
// CHECK: slin.is_adjacent
func.func @index_expression_blowup(%x: memref<4x16xf32>, %buf: memref<?x16xf32>, %n: index, %m: index, %y: memref<4x?xf32>) {
  %s0 = arith.addi %n, %m : index
  %s1 = arith.muli %s0, %s0 : index
  %s2 = arith.muli %s1, %s1 : index
  %s3 = arith.muli %s2, %s2 : index
  %s4 = arith.muli %s3, %s3 : index
  %s5 = arith.muli %s4, %s4 : index
  %s6 = arith.muli %s5, %s5 : index
  %s7 = arith.muli %s6, %s6 : index
  %s8 = arith.muli %s7, %s7 : index
  %s9 = arith.muli %s8, %s8 : index
  %s10 = arith.muli %s9, %s9 : index
  %s11 = arith.muli %s10, %s10 : index
  %s12 = arith.muli %s11, %s11 : index
  %s13 = arith.muli %s12, %s12 : index
  %s14 = arith.muli %s13, %s13 : index
  %s15 = arith.muli %s14, %s14 : index
  %a = memref.subview %buf[%s15, 0] [4, 16] [1, 1] : memref<?x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>
  %b = memref.subview %buf[%s14, 0] [4, 16] [1, 1] : memref<?x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>
  // expected-remark @+1 {{weight parts: run-time check}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4x16xf32, strided<[16, 1], offset: ?>>, memref<4x16xf32, strided<[16, 1], offset: ?>>) outs(%y : memref<4x?xf32>)
  return
}

// -----

// Finding 4 (same class): offsets whose polynomial coefficients overflow
// int64 (2^62 · 4 rows of 16) are unknown, not wrapped into a wrong answer.
// CHECK-LABEL: func @coefficient_overflow
// CHECK: slin.is_adjacent
func.func @coefficient_overflow(%x: memref<4x16xf32>, %buf: memref<?x16xf32>, %n: index, %y: memref<4x?xf32>) {
  %big = arith.constant 4611686018427387904 : index
  %o = arith.muli %n, %big : index
  %o2 = arith.addi %o, %big : index
  %a = memref.subview %buf[%o, 0] [4, 16] [1, 1] : memref<?x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>
  %b = memref.subview %buf[%o2, 0] [4, 16] [1, 1] : memref<?x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>
  // expected-remark @+1 {{weight parts: run-time check}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<4x16xf32, strided<[16, 1], offset: ?>>, memref<4x16xf32, strided<[16, 1], offset: ?>>) outs(%y : memref<4x?xf32>)
  return
}

// -----

// Finding 7: with dynamic weight rows, the bias parts' sizes were not checked
// against the output's columns (32 + 32 bias elements, 32 columns). The
// passes combine weights and biases separately, so slin-expand-linear built
// a slin.gemm whose 64-element bias epilogue did not fit its 32 columns.
func.func @bias_sizes_disagree_with_output(%x: memref<?x32xf32>, %w0: memref<?x32xf32>, %w1: memref<?x32xf32>,
                                           %b0: memref<32xf32>, %b1: memref<32xf32>, %y: memref<?x32xf32>) {
  // expected-error @+1 {{'slin.linear' op output has 32 columns, expected 64 (the sum of the parts' rows, from the weight and bias sizes)}}
  slin.linear ins(%x : memref<?x32xf32>) weights(%w0, %w1 : memref<?x32xf32>, memref<?x32xf32>)
      bias(%b0, %b1 : memref<32xf32>, memref<32xf32>) outs(%y : memref<?x32xf32>)
  return
}

// -----

// Finding 7 (same class): N_0 from the weight, N_1 from the bias: 8 + 4.
// CHECK-LABEL: func @rows_from_weights_and_biases
// CHECK: slin.linear
func.func @rows_from_weights_and_biases(%x: memref<?x32xf32>, %w0: memref<8x32xf32>, %w1: memref<?x32xf32>,
                                        %b0: memref<?xf32>, %b1: memref<4xf32>, %y: memref<?x12xf32>) {
  // expected-remark @+2 {{weight parts: run-time check}}
  // expected-remark @+1 {{bias parts: run-time check}}
  slin.linear ins(%x : memref<?x32xf32>) weights(%w0, %w1 : memref<8x32xf32>, memref<?x32xf32>)
      bias(%b0, %b1 : memref<?xf32>, memref<4xf32>) outs(%y : memref<?x12xf32>)
  return
}

// -----

func.func @rows_from_weights_and_biases_mismatch(%x: memref<?x32xf32>, %w0: memref<8x32xf32>, %w1: memref<?x32xf32>,
                                                 %b0: memref<?xf32>, %b1: memref<4xf32>, %y: memref<?x13xf32>) {
  // expected-error @+1 {{'slin.linear' op output has 13 columns, expected 12 (the sum of the parts' rows, from the weight and bias sizes)}}
  slin.linear ins(%x : memref<?x32xf32>) weights(%w0, %w1 : memref<8x32xf32>, memref<?x32xf32>)
      bias(%b0, %b1 : memref<?xf32>, memref<4xf32>) outs(%y : memref<?x13xf32>)
  return
}

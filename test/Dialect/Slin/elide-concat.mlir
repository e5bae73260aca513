// RUN: splitlinear-opt %s -slin-elide-concat=remarks=true -split-input-file -verify-diagnostics | FileCheck %s

// Three subviews of one allocation, back to back: a view, no copy, no check.
// CHECK-LABEL: func @adjacent_subviews
// CHECK-DAG: %[[BUF:.*]] = memref.alloc() : memref<12x16xf32>
// CHECK-DAG: %[[A:.*]] = memref.subview %[[BUF]][0, 0] [8, 16]
// CHECK-DAG: %[[B:.*]] = memref.subview %[[BUF]][8, 0] [2, 16]
// CHECK-DAG: %[[C:.*]] = memref.subview %[[BUF]][10, 0] [2, 16]
// CHECK: %[[W:.*]] = slin.view_concat %[[A]], %[[B]], %[[C]] : {{.*}} -> memref<12x16xf32, strided<[?, 1], offset: ?>>
// CHECK: slin.linear ins(%{{.*}} : memref<4x16xf32>) weights(%[[W]] : memref<12x16xf32, strided<[?, 1], offset: ?>>) outs
// CHECK-NOT: slin.concat
// CHECK-NOT: slin.is_adjacent
// CHECK-NOT: slin.dealloc
func.func @adjacent_subviews(%x: memref<4x16xf32>, %y: memref<4x12xf32>) {
  %buf = memref.alloc() : memref<12x16xf32>
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[8, 0] [2, 16] [1, 1] : memref<12x16xf32> to memref<2x16xf32, strided<[16, 1], offset: 128>>
  %c = memref.subview %buf[10, 0] [2, 16] [1, 1] : memref<12x16xf32> to memref<2x16xf32, strided<[16, 1], offset: 160>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<4x16xf32>)
      weights(%a, %b, %c : memref<8x16xf32, strided<[16, 1]>>, memref<2x16xf32, strided<[16, 1], offset: 128>>, memref<2x16xf32, strided<[16, 1], offset: 160>>)
      outs(%y : memref<4x12xf32>)
  return
}

// -----

// Function arguments may or may not alias: checked at run time.
// CHECK-LABEL: func @function_arguments
// CHECK-SAME: %[[A:[^:]*]]: memref<?x16xf32, strided<[?, ?], offset: ?>>, %[[B:[^:]*]]: memref<?x16xf32, strided<[?, ?], offset: ?>>, %[[C:[^:]*]]: memref<?x16xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[OK:.*]] = slin.is_adjacent %[[A]], %[[B]], %[[C]] :
// CHECK: %[[W:.*]] = scf.if %[[OK]] -> (memref<?x16xf32, strided<[?, 1], offset: ?>>) {
// CHECK:   %[[V:.*]] = slin.view_concat %[[A]], %[[B]], %[[C]]
// CHECK:   scf.yield %[[V]]
// CHECK: } else {
// CHECK:   %[[COPY:.*]] = slin.alloc(%{{.*}}) : memref<?x16xf32>
// CHECK:   slin.concat ins(%[[A]], %[[B]], %[[C]] : {{.*}}) outs(%[[COPY]] : memref<?x16xf32>)
// CHECK:   %[[CAST:.*]] = memref.cast %[[COPY]]
// CHECK:   scf.yield %[[CAST]]
// CHECK: }
// CHECK: slin.linear ins(%{{.*}}) weights(%[[W]] : {{.*}}) outs
// CHECK: scf.if %[[OK]] {
// CHECK: } else {
// CHECK:   slin.dealloc %[[W]]
func.func @function_arguments(%x: memref<?x16xf32>, %a: memref<?x16xf32, strided<[?, ?], offset: ?>>,
                              %b: memref<?x16xf32, strided<[?, ?], offset: ?>>, %c: memref<?x16xf32, strided<[?, ?], offset: ?>>,
                              %y: memref<?x?xf32>) {
  // expected-remark @+1 {{weight parts: run-time check (part #0: unit column stride is not known at compile time)}}
  slin.linear ins(%x : memref<?x16xf32>)
      weights(%a, %b, %c : memref<?x16xf32, strided<[?, ?], offset: ?>>, memref<?x16xf32, strided<[?, ?], offset: ?>>, memref<?x16xf32, strided<[?, ?], offset: ?>>)
      outs(%y : memref<?x?xf32>)
  return
}

// -----

// Contiguous function arguments: only the allocation is unknown.
// CHECK-LABEL: func @contiguous_arguments
// CHECK: slin.is_adjacent
// CHECK: scf.if
func.func @contiguous_arguments(%x: memref<4x16xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %y: memref<4x12xf32>) {
  // expected-remark @+1 {{weight parts: run-time check (part #1 may be in another allocation)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// Distinct allocations are never adjacent: copy, no check.
// CHECK-LABEL: func @distinct_allocations
// CHECK-DAG: %[[A:.*]] = memref.alloc() : memref<8x16xf32>
// CHECK-DAG: %[[B:.*]] = memref.alloc() : memref<4x16xf32>
// CHECK: %[[W:.*]] = slin.alloc() : memref<12x16xf32>
// CHECK: slin.concat ins(%[[A]], %[[B]] : memref<8x16xf32>, memref<4x16xf32>) outs(%[[W]] : memref<12x16xf32>)
// CHECK: slin.linear ins(%{{.*}}) weights(%[[W]] : memref<12x16xf32>) outs
// CHECK: slin.dealloc %[[W]]
// CHECK-NOT: slin.is_adjacent
func.func @distinct_allocations(%x: memref<4x16xf32>, %y: memref<4x12xf32>) {
  %a = memref.alloc() : memref<8x16xf32>
  %b = memref.alloc() : memref<4x16xf32>
  // expected-remark @+1 {{weight parts: copy (part #1 is in another allocation)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// One part: nothing to combine, no check.
// CHECK-LABEL: func @one_part
// CHECK-NEXT: slin.linear ins(%{{.*}} : memref<?x16xf32>) weights(%{{.*}} : memref<12x16xf32, strided<[?, ?], offset: ?>>) bias(%{{.*}} : memref<12xf32, strided<[?], offset: ?>>) outs
// CHECK-NEXT: return
func.func @one_part(%x: memref<?x16xf32>, %w: memref<12x16xf32, strided<[?, ?], offset: ?>>, %b: memref<12xf32, strided<[?], offset: ?>>, %y: memref<?x12xf32>) {
  slin.linear ins(%x : memref<?x16xf32>) weights(%w : memref<12x16xf32, strided<[?, ?], offset: ?>>)
      bias(%b : memref<12xf32, strided<[?], offset: ?>>) outs(%y : memref<?x12xf32>)
  return
}

// -----

// An empty first part is dropped: its (meaningless) strides and offset do not
// describe the result; the remaining parts are adjacent.
// CHECK-LABEL: func @first_part_empty
// CHECK: %[[A:.*]] = memref.subview %{{.*}}[0, 0] [8, 16]
// CHECK: %[[B:.*]] = memref.subview %{{.*}}[8, 0] [4, 16]
// CHECK: %[[W:.*]] = slin.view_concat %[[A]], %[[B]] :
// CHECK: slin.linear ins(%{{.*}}) weights(%[[W]] :
func.func @first_part_empty(%x: memref<4x16xf32>, %e: memref<0x16xf32, strided<[1, 1], offset: 999>>, %y: memref<4x12xf32>) {
  %buf = memref.alloc() : memref<12x16xf32>
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  // expected-remark @+2 {{dropped 1 statically empty part}}
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<4x16xf32>)
      weights(%e, %a, %b : memref<0x16xf32, strided<[1, 1], offset: 999>>, memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>)
      outs(%y : memref<4x12xf32>)
  return
}

// -----

// An empty part in the middle is dropped with its bias part.
// CHECK-LABEL: func @empty_middle_part
// CHECK: %[[W:.*]] = slin.view_concat %{{.*}}, %{{.*}} : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>
// CHECK: %[[B:.*]] = slin.is_adjacent %{{.*}}, %{{.*}} : memref<8xf32>, memref<4xf32>
// CHECK: slin.linear ins(%{{.*}}) weights(%[[W]] : {{.*}}) bias(%{{.*}} : memref<12xf32, strided<[1], offset: ?>>)
func.func @empty_middle_part(%x: memref<4x16xf32>, %ba: memref<8xf32>, %be: memref<0xf32>, %bb: memref<4xf32>, %y: memref<4x12xf32>) {
  %buf = memref.alloc() : memref<12x16xf32>
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %e = memref.subview %buf[8, 0] [0, 16] [1, 1] : memref<12x16xf32> to memref<0x16xf32, strided<[16, 1], offset: 128>>
  %b = memref.subview %buf[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  // expected-remark @+3 {{dropped 1 statically empty part}}
  // expected-remark @+2 {{weight parts: zero-copy view (proven adjacent)}}
  // expected-remark @+1 {{bias parts: run-time check (part #1 may be in another allocation)}}
  slin.linear ins(%x : memref<4x16xf32>)
      weights(%a, %e, %b : memref<8x16xf32, strided<[16, 1]>>, memref<0x16xf32, strided<[16, 1], offset: 128>>, memref<4x16xf32, strided<[16, 1], offset: 128>>)
      bias(%ba, %be, %bb : memref<8xf32>, memref<0xf32>, memref<4xf32>)
      outs(%y : memref<4x12xf32>)
  return
}

// -----

// Adjacent, but in reversed order: the view would have the rows swapped.
// CHECK-LABEL: func @reversed_order
// CHECK: slin.alloc() : memref<12x16xf32>
// CHECK: slin.concat
// CHECK-NOT: slin.view_concat
func.func @reversed_order(%x: memref<4x16xf32>, %y: memref<4x12xf32>) {
  %buf = memref.alloc() : memref<12x16xf32>
  %a = memref.subview %buf[4, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1], offset: 64>>
  %b = memref.subview %buf[0, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1]>>
  // expected-remark @+1 {{weight parts: copy (part #1 starting where the previous part ends does not hold)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1], offset: 64>>, memref<4x16xf32, strided<[16, 1]>>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// Overlapping parts of one storage: a view would share rows.
// CHECK-LABEL: func @overlapping_parts
// CHECK: slin.concat
// CHECK-NOT: slin.view_concat
func.func @overlapping_parts(%x: memref<4x16xf32>, %y: memref<4x16xf32>) {
  %buf = memref.alloc() : memref<12x16xf32>
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[4, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1], offset: 64>>
  // expected-remark @+1 {{weight parts: copy (part #1 starting where the previous part ends does not hold)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>, memref<8x16xf32, strided<[16, 1], offset: 64>>) outs(%y : memref<4x16xf32>)
  return
}

// -----

// A transposed (column-major) part cannot be a row block of a view.
// CHECK-LABEL: func @transposed_part
// CHECK: slin.concat
// CHECK-NOT: slin.is_adjacent
func.func @transposed_part(%x: memref<4x16xf32>, %y: memref<4x12xf32>) {
  %buf = memref.alloc() : memref<192xf32>
  %a = memref.reinterpret_cast %buf to offset: [0], sizes: [8, 16], strides: [16, 1] : memref<192xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.reinterpret_cast %buf to offset: [128], sizes: [4, 16], strides: [1, 4] : memref<192xf32> to memref<4x16xf32, strided<[1, 4], offset: 128>>
  // expected-remark @+1 {{weight parts: copy (part #1: unit column stride does not hold)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[1, 4], offset: 128>>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// reinterpret_casts of one base with constant offsets that chain: a view.
// CHECK-LABEL: func @reinterpret_casts
// CHECK: slin.view_concat
// CHECK-NOT: slin.concat
func.func @reinterpret_casts(%x: memref<4x16xf32>, %y: memref<4x12xf32>) {
  %buf = memref.alloc() : memref<192xf32>
  %a = memref.reinterpret_cast %buf to offset: [0], sizes: [8, 16], strides: [16, 1] : memref<192xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.reinterpret_cast %buf to offset: [128], sizes: [4, 16], strides: [16, 1] : memref<192xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// Mixed element types: a view cannot convert, so the concat copies (and converts).
// CHECK-LABEL: func @mixed_element_types
// CHECK: %[[W:.*]] = slin.alloc() : memref<12x16xf32>
// CHECK: slin.concat ins(%{{.*}}, %{{.*}} : memref<8x16xf32>, memref<4x16xbf16>) outs(%[[W]] : memref<12x16xf32>)
func.func @mixed_element_types(%x: memref<4x16xf32>, %a: memref<8x16xf32>, %b: memref<4x16xbf16>, %y: memref<4x12xf32>) {
  // expected-remark @+1 {{weight parts: copy (part #1 has another element type)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xbf16>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// Bias parts are decided independently of the weight parts.
// CHECK-LABEL: func @bias_independent
// CHECK: %[[W:.*]] = slin.alloc() : memref<12x16xf32>
// CHECK: slin.concat ins(%{{.*}}, %{{.*}} : memref<8x16xf32>, memref<4x16xf32>) outs(%[[W]]
// CHECK: %[[B:.*]] = slin.view_concat %{{.*}}, %{{.*}} : memref<8xf32, strided<[1]>>, memref<4xf32, strided<[1], offset: 8>> -> memref<12xf32, strided<[1], offset: ?>>
// CHECK: slin.linear ins(%{{.*}}) weights(%[[W]] : memref<12x16xf32>) bias(%[[B]] : memref<12xf32, strided<[1], offset: ?>>)
func.func @bias_independent(%x: memref<4x16xf32>, %y: memref<4x12xf32>) {
  %wa = memref.alloc() : memref<8x16xf32>
  %wb = memref.alloc() : memref<4x16xf32>
  %bias = memref.alloc() : memref<12xf32>
  %ba = memref.subview %bias[0] [8] [1] : memref<12xf32> to memref<8xf32, strided<[1]>>
  %bb = memref.subview %bias[8] [4] [1] : memref<12xf32> to memref<4xf32, strided<[1], offset: 8>>
  // expected-remark @+2 {{weight parts: copy (part #1 is in another allocation)}}
  // expected-remark @+1 {{bias parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%wa, %wb : memref<8x16xf32>, memref<4x16xf32>)
      bias(%ba, %bb : memref<8xf32, strided<[1]>>, memref<4xf32, strided<[1], offset: 8>>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// Symbolic sizes and offsets that are provably equal (%n rows, then a part at row %n).
// CHECK-LABEL: func @symbolic_offsets
// CHECK: slin.view_concat
// CHECK-NOT: slin.is_adjacent
func.func @symbolic_offsets(%x: memref<4x16xf32>, %n: index, %y: memref<4x?xf32>) {
  %buf = memref.alloc() : memref<64x16xf32>
  %a = memref.subview %buf[0, 0] [%n, 16] [1, 1] : memref<64x16xf32> to memref<?x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[%n, 0] [4, 16] [1, 1] : memref<64x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<?x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: ?>>) outs(%y : memref<4x?xf32>)
  return
}

// -----

// Offsets computed with arith that are provably equal.
// CHECK-LABEL: func @arith_offsets
// CHECK: slin.view_concat
func.func @arith_offsets(%x: memref<4x16xf32>, %o: index, %y: memref<4x12xf32>) {
  %buf = memref.alloc() : memref<64x16xf32>
  %c8 = arith.constant 8 : index
  %c4 = arith.constant 4 : index
  %o4 = arith.muli %o, %c4 : index
  %next = arith.addi %o4, %c8 : index
  %a = memref.subview %buf[%o4, 0] [8, 16] [1, 1] : memref<64x16xf32> to memref<8x16xf32, strided<[16, 1], offset: ?>>
  %b = memref.subview %buf[%next, 0] [4, 16] [1, 1] : memref<64x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1], offset: ?>>, memref<4x16xf32, strided<[16, 1], offset: ?>>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// Padded rows (row stride 32 > 16 columns): still one view with ld = 32.
// CHECK-LABEL: func @padded_rows
// CHECK: slin.view_concat
func.func @padded_rows(%x: memref<4x16xf32>, %y: memref<4x12xf32>) {
  %buf = memref.alloc() : memref<12x32xf32>
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x32xf32> to memref<8x16xf32, strided<[32, 1]>>
  %b = memref.subview %buf[8, 0] [4, 16] [1, 1] : memref<12x32xf32> to memref<4x16xf32, strided<[32, 1], offset: 256>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32, strided<[32, 1]>>, memref<4x16xf32, strided<[32, 1], offset: 256>>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// The view would start 12 bytes into the buffer: not 16-byte aligned.
// CHECK-LABEL: func @misaligned_start
// CHECK: slin.concat
func.func @misaligned_start(%x: memref<4x3xf32>, %y: memref<4x4xf32>) {
  %buf = memref.alloc() : memref<5x3xf32>
  %a = memref.subview %buf[1, 0] [2, 3] [1, 1] : memref<5x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 3>>
  %b = memref.subview %buf[3, 0] [2, 3] [1, 1] : memref<5x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 9>>
  // expected-remark @+1 {{weight parts: copy (the first element is not 16-byte aligned)}}
  slin.linear ins(%x : memref<4x3xf32>) weights(%a, %b : memref<2x3xf32, strided<[3, 1], offset: 3>>, memref<2x3xf32, strided<[3, 1], offset: 9>>) outs(%y : memref<4x4xf32>)
  return
}

// -----

// Parts of one function argument: the layout is known up to the argument's
// own (dynamic) offset and alignment, so only the alignment is checked at run time.
// CHECK-LABEL: func @subviews_of_argument
// CHECK: slin.is_adjacent
func.func @subviews_of_argument(%x: memref<4x16xf32>, %buf: memref<12x16xf32>, %y: memref<4x12xf32>) {
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  // expected-remark @+1 {{weight parts: run-time check (alignment of the first element is not known)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// dgrad combines the weight parts exactly as fprop does.
// CHECK-LABEL: func @dgrad_checked
// CHECK: %[[OK:.*]] = slin.is_adjacent
// CHECK: %[[W:.*]] = scf.if %[[OK]]
// CHECK: slin.linear_dgrad ins(%{{.*}}) weights(%[[W]] : {{.*}}) outs
func.func @dgrad_checked(%dy: memref<4x12xf32>, %a: memref<8x16xf32>, %b: memref<4x16xf32>, %dx: memref<4x16xf32>) {
  // expected-remark @+1 {{weight parts: run-time check (part #1 may be in another allocation)}}
  slin.linear_dgrad ins(%dy : memref<4x12xf32>) weights(%a, %b : memref<8x16xf32>, memref<4x16xf32>) outs(%dx : memref<4x16xf32>)
  return
}

// -----

// Regression: a memref.alloca without an alignment attribute is only aligned
// to its element type, so a view of it needs the run-time alignment check.
// CHECK-LABEL: func @alloca_alignment_unknown
// CHECK: slin.is_adjacent
func.func @alloca_alignment_unknown(%x: memref<3x5xf32>, %y: memref<3x6xf32>) {
  %w = memref.alloca() : memref<6x5xf32>
  %w0 = memref.subview %w[0, 0] [2, 5] [1, 1] : memref<6x5xf32> to memref<2x5xf32, strided<[5, 1]>>
  %w1 = memref.subview %w[2, 0] [4, 5] [1, 1] : memref<6x5xf32> to memref<4x5xf32, strided<[5, 1], offset: 10>>
  // expected-remark @+1 {{weight parts: run-time check (alignment of the first element is not known)}}
  slin.linear ins(%x : memref<3x5xf32>) weights(%w0, %w1 : memref<2x5xf32, strided<[5, 1]>>, memref<4x5xf32, strided<[5, 1], offset: 10>>) outs(%y : memref<3x6xf32>)
  return
}

// -----

// An aligned memref.alloca may be viewed without a check.
// CHECK-LABEL: func @alloca_aligned
// CHECK: slin.view_concat
// CHECK-NOT: slin.is_adjacent
func.func @alloca_aligned(%x: memref<3x4xf32>, %y: memref<3x6xf32>) {
  %w = memref.alloca() {alignment = 64} : memref<6x4xf32>
  %w0 = memref.subview %w[0, 0] [2, 4] [1, 1] : memref<6x4xf32> to memref<2x4xf32, strided<[4, 1]>>
  %w1 = memref.subview %w[2, 0] [4, 4] [1, 1] : memref<6x4xf32> to memref<4x4xf32, strided<[4, 1], offset: 8>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<3x4xf32>) weights(%w0, %w1 : memref<2x4xf32, strided<[4, 1]>>, memref<4x4xf32, strided<[4, 1], offset: 8>>) outs(%y : memref<3x6xf32>)
  return
}

// -----

// Regression: a proven chain of parts whose widths differ (16 and a dynamic
// %k) used to become a view with part #0's width. Every part's columns must
// equal the first part's; %k is only known at run time.
// CHECK-LABEL: func @proven_chain_widths_differ
// CHECK: slin.is_adjacent
// CHECK: scf.if
func.func @proven_chain_widths_differ(%x: memref<4x16xf32>, %k: index, %y: memref<4x5xf32>) {
  %buf = memref.alloc() : memref<5x16xf32>
  %a = memref.subview %buf[0, 0] [2, 16] [1, 1] : memref<5x16xf32> to memref<2x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[2, 0] [3, %k] [1, 1] : memref<5x16xf32> to memref<3x?xf32, strided<[16, 1], offset: 32>>
  // expected-remark @+1 {{weight parts: run-time check (part #1: columns equal to part #0's is not known at compile time)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<2x16xf32, strided<[16, 1]>>, memref<3x?xf32, strided<[16, 1], offset: 32>>) outs(%y : memref<4x5xf32>)
  return
}

// -----

// Regression: a constant misaligned offset (12 bytes) from a base of unknown
// alignment (a function argument) may still be aligned at run time (base at
// 4 mod 16): unknown, not disproven. Compare @misaligned_start.
// CHECK-LABEL: func @misaligned_offset_unknown_base
// CHECK: slin.is_adjacent
func.func @misaligned_offset_unknown_base(%x: memref<4x3xf32>, %buf: memref<5x3xf32>, %y: memref<4x4xf32>) {
  %a = memref.subview %buf[1, 0] [2, 3] [1, 1] : memref<5x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 3>>
  %b = memref.subview %buf[3, 0] [2, 3] [1, 1] : memref<5x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 9>>
  // expected-remark @+1 {{weight parts: run-time check (alignment of the first element is not known)}}
  slin.linear ins(%x : memref<4x3xf32>) weights(%a, %b : memref<2x3xf32, strided<[3, 1], offset: 3>>, memref<2x3xf32, strided<[3, 1], offset: 9>>) outs(%y : memref<4x4xf32>)
  return
}

// -----

// A known base alignment below the requirement still disproves an offset it
// cannot fix: base 8-aligned, first element 4 bytes past it.
// CHECK-LABEL: func @misaligned_offset_low_base_alignment
// CHECK: slin.concat
// CHECK-NOT: slin.is_adjacent
func.func @misaligned_offset_low_base_alignment(%x: memref<4x2xf32>, %y: memref<4x4xf32>) {
  %buf = memref.alloca() {alignment = 8} : memref<5x3xf32>
  %a = memref.subview %buf[0, 1] [2, 2] [1, 1] : memref<5x3xf32> to memref<2x2xf32, strided<[3, 1], offset: 1>>
  %b = memref.subview %buf[2, 1] [2, 2] [1, 1] : memref<5x3xf32> to memref<2x2xf32, strided<[3, 1], offset: 7>>
  // expected-remark @+1 {{weight parts: copy (the first element is not 16-byte aligned)}}
  slin.linear ins(%x : memref<4x2xf32>) weights(%a, %b : memref<2x2xf32, strided<[3, 1], offset: 1>>, memref<2x2xf32, strided<[3, 1], offset: 7>>) outs(%y : memref<4x4xf32>)
  return
}

// -----

// memref.assume_alignment makes the argument's base alignment known: the
// view needs no run-time check. Compare @subviews_of_argument.
// CHECK-LABEL: func @assume_alignment
// CHECK: slin.view_concat
// CHECK-NOT: slin.is_adjacent
func.func @assume_alignment(%x: memref<4x16xf32>, %arg: memref<12x16xf32>, %y: memref<4x12xf32>) {
  %buf = memref.assume_alignment %arg, 16 : memref<12x16xf32>
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// An argument alignment attribute (llvm.align) is honoured the same way.
// CHECK-LABEL: func @argument_alignment
// CHECK: slin.view_concat
// CHECK-NOT: slin.is_adjacent
func.func @argument_alignment(%x: memref<4x16xf32>, %buf: memref<12x16xf32> {llvm.align = 64 : i64}, %y: memref<4x12xf32>) {
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// An alignment below the requirement proves nothing: still checked.
// CHECK-LABEL: func @argument_alignment_too_small
// CHECK: slin.is_adjacent
func.func @argument_alignment_too_small(%x: memref<4x16xf32>, %buf: memref<12x16xf32> {llvm.align = 8 : i64}, %y: memref<4x12xf32>) {
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  // expected-remark @+1 {{weight parts: run-time check (the base buffer's alignment is below the requirement)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>) outs(%y : memref<4x12xf32>)
  return
}

// -----

// Regression: a column stride of 2 is allowed at run time for one column,
// and the column count %k is dynamic: unknown (as slin.is_adjacent decides
// it), not disproven.
// CHECK-LABEL: func @strided_columns_dynamic_width
// CHECK: slin.is_adjacent
func.func @strided_columns_dynamic_width(%x: memref<4x?xf32>, %k: index, %y: memref<4x5xf32>) {
  %buf = memref.alloc() : memref<5x16xf32>
  %a = memref.subview %buf[0, 0] [2, %k] [1, 2] : memref<5x16xf32> to memref<2x?xf32, strided<[16, 2]>>
  %b = memref.subview %buf[2, 0] [3, %k] [1, 2] : memref<5x16xf32> to memref<3x?xf32, strided<[16, 2], offset: 32>>
  // expected-remark @+1 {{weight parts: run-time check (part #0: unit column stride does not hold unless a size is 1 at run time)}}
  slin.linear ins(%x : memref<4x?xf32>) weights(%a, %b : memref<2x?xf32, strided<[16, 2]>>, memref<3x?xf32, strided<[16, 2], offset: 32>>) outs(%y : memref<4x5xf32>)
  return
}

// -----

// Regression: rank 1, the same for one element of a dynamic-length part.
// CHECK-LABEL: func @strided_bias_dynamic_length
// CHECK: slin.is_adjacent
func.func @strided_bias_dynamic_length(%x: memref<4x16xf32>, %w: memref<5x16xf32>, %n: index, %y: memref<4x5xf32>) {
  %bias = memref.alloc() : memref<16xf32>
  %wa = memref.subview %w[0, 0] [2, 16] [1, 1] : memref<5x16xf32> to memref<2x16xf32, strided<[16, 1]>>
  %wb = memref.subview %w[2, 0] [3, 16] [1, 1] : memref<5x16xf32> to memref<3x16xf32, strided<[16, 1], offset: 32>>
  %ba = memref.subview %bias[0] [%n] [2] : memref<16xf32> to memref<?xf32, strided<[2]>>
  %bb = memref.subview %bias[1] [%n] [2] : memref<16xf32> to memref<?xf32, strided<[2], offset: 1>>
  // expected-remark @+2 {{weight parts: run-time check (alignment of the first element is not known)}}
  // expected-remark @+1 {{bias parts: run-time check (part #0: unit stride does not hold unless a size is 1 at run time)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%wa, %wb : memref<2x16xf32, strided<[16, 1]>>, memref<3x16xf32, strided<[16, 1], offset: 32>>)
      bias(%ba, %bb : memref<?xf32, strided<[2]>>, memref<?xf32, strided<[2], offset: 1>>) outs(%y : memref<4x5xf32>)
  return
}

// -----

// Regression: rows that overlap (ld 1 < K 4) are allowed at run time when
// the view has one row, which a dynamic row count %n = 0 gives: unknown, not
// disproven.
// CHECK-LABEL: func @one_row_view_possible
// CHECK: slin.is_adjacent
func.func @one_row_view_possible(%x: memref<4x4xf32>, %n: index, %y: memref<4x?xf32>) {
  %buf = memref.alloc() : memref<16xf32>
  %a = memref.reinterpret_cast %buf to offset: [0], sizes: [1, 4], strides: [1, 1] : memref<16xf32> to memref<1x4xf32, strided<[1, 1]>>
  %b = memref.reinterpret_cast %buf to offset: [1], sizes: [%n, 4], strides: [1, 1] : memref<16xf32> to memref<?x4xf32, strided<[1, 1], offset: 1>>
  // expected-remark @+1 {{weight parts: run-time check (row stride is smaller than the columns, which only a one-row view allows)}}
  slin.linear ins(%x : memref<4x4xf32>) weights(%a, %b : memref<1x4xf32, strided<[1, 1]>>, memref<?x4xf32, strided<[1, 1], offset: 1>>) outs(%y : memref<4x?xf32>)
  return
}

// -----

// A one-row part's row stride must still be the common one, at compile time
// as at run time (test/Integration/is-adjacent.mlir, case 19): PyTorch may
// give the size-1 dimension any stride, and such a part is copied.
// CHECK-LABEL: func @one_row_part_other_stride
// CHECK: slin.concat
// CHECK-NOT: slin.is_adjacent
func.func @one_row_part_other_stride(%x: memref<4x4xf32>, %y: memref<4x3xf32>) {
  %buf = memref.alloc() : memref<16xf32>
  %a = memref.reinterpret_cast %buf to offset: [0], sizes: [2, 4], strides: [4, 1] : memref<16xf32> to memref<2x4xf32, strided<[4, 1]>>
  %b = memref.reinterpret_cast %buf to offset: [8], sizes: [1, 4], strides: [1, 1] : memref<16xf32> to memref<1x4xf32, strided<[1, 1], offset: 8>>
  // expected-remark @+1 {{weight parts: copy (part #1: common row stride does not hold)}}
  slin.linear ins(%x : memref<4x4xf32>) weights(%a, %b : memref<2x4xf32, strided<[4, 1]>>, memref<1x4xf32, strided<[1, 1], offset: 8>>) outs(%y : memref<4x3xf32>)
  return
}

// -----

// A runtime buffer is an allocation of known alignment (the runtime's 256
// bytes): parts of it are proven adjacent, and a part of another allocation
// is proven not to be.
// CHECK-LABEL: func @runtime_buffer_parts
// CHECK: slin.view_concat
// CHECK-NOT: slin.is_adjacent
// CHECK: slin.concat
// CHECK-NOT: slin.is_adjacent
func.func @runtime_buffer_parts(%x: memref<4x16xf32>, %y: memref<4x12xf32>, %z: memref<4x12xf32>) {
  %buf = slin.alloc() : memref<12x16xf32>
  %a = memref.subview %buf[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %b = memref.subview %buf[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  // expected-remark @+1 {{weight parts: zero-copy view (proven adjacent)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>) outs(%y : memref<4x12xf32>)
  %other = memref.alloc() : memref<4x16xf32>
  // expected-remark @+1 {{weight parts: copy (part #1 is in another allocation)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %other : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32>) outs(%z : memref<4x12xf32>)
  slin.dealloc %buf : memref<12x16xf32>
  return
}

// Regression: the concat's temporary was a `memref.alloc {slin.buffer}`, and
// the discardable attribute alone sent it to the runtime allocator. Here the
// copy's size is a sum of memref.dims that -canonicalize folds to 12, and
// the canonicalizer's new `memref.alloc() : memref<12x16xf32>` dropped the
// attribute: on CUDA the copy went into host memory, and the still-marked
// dealloc passed that malloc'd pointer to slinrt_cuda_free. A `slin.alloc`
// is an op, not an annotation: every pass keeps it, and it is lowered to
// the runtime allocator.
//
// RUN: splitlinear-opt %s -slin-elide-concat -slin-expand-linear -canonicalize \
// RUN:   -convert-slin-to-runtime="target=cuda" | FileCheck %s

// CHECK-LABEL: func.func @copy_size_folded(
// CHECK-SAME: %[[X:[^:]*]]: memref<4x16xf32>
// CHECK: %[[RAW:.*]] = call @slinrt_cuda_alloc(
// CHECK: %[[BUF:.*]] = memref.view %[[RAW]]
// CHECK: %[[BLOCK:.*]] = memref.subview %[[BUF]][0, 0]
// CHECK: %[[DST:.*]] = memref.cast %[[BLOCK]]
// CHECK: call @slinrt_cuda_copy2d_f32_f32(%{{.*}}, %{{.*}}, %[[DST]])
// CHECK: %[[W:.*]] = memref.cast %[[BUF]]
// CHECK: call @slinrt_cuda_gemm_f32(%{{.*}}, %{{.*}}, %[[W]],
// CHECK: %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK: %[[ADDR64:.*]] = arith.index_cast %[[ADDR]]
// CHECK: call @slinrt_cuda_free(%{{.*}}, %[[ADDR64]])
// CHECK-NOT: memref.alloc() : memref<12x16xf32>
// CHECK: return
func.func @copy_size_folded(%x: memref<4x16xf32>, %y: memref<4x12xf32>) {
  %a = memref.alloc() : memref<8x16xf32>
  %b = memref.alloc() : memref<4x16xf32>
  %da = memref.cast %a : memref<8x16xf32> to memref<?x16xf32>
  %db = memref.cast %b : memref<4x16xf32> to memref<?x16xf32>
  slin.linear ins(%x : memref<4x16xf32>)
      weights(%da, %db : memref<?x16xf32>, memref<?x16xf32>)
      outs(%y : memref<4x12xf32>)
  memref.dealloc %a : memref<8x16xf32>
  memref.dealloc %b : memref<4x16xf32>
  return
}

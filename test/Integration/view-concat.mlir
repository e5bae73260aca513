// slin.view_concat evaluated at run time: the view starts at the first
// non-empty part, has Σ N_i rows and the parts' row stride, and reads the
// parts' elements in place. B[i, j] = 10·i + j (6x4), v[i] = i.
//
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%splitlinear_libs/libsplitlinear_runtime%shlibext,%mlir_lib_dir/libmlir_c_runner_utils%shlibext,%mlir_lib_dir/libmlir_runner_utils%shlibext \
// RUN: | FileCheck %s

!m2 = memref<?x?xf32, strided<[?, ?], offset: ?>>
!v1 = memref<?xf32, strided<[?], offset: ?>>
!view2 = memref<?x?xf32, strided<[?, 1], offset: ?>>
!view1 = memref<?xf32, strided<[1], offset: ?>>

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @view2(%a: !m2, %b: !m2) -> !view2 {
  %r = slin.view_concat %a, %b : !m2, !m2 -> !view2
  return %r : !view2
}

func.func @view3(%a: !m2, %b: !m2, %c: !m2) -> !view2 {
  %r = slin.view_concat %a, %b, %c : !m2, !m2, !m2 -> !view2
  return %r : !view2
}

func.func @view1d(%a: !v1, %b: !v1) -> !view1 {
  %r = slin.view_concat %a, %b : !v1, !v1 -> !view1
  return %r : !view1
}

func.func @print2(%m: !view2) {
  %u = memref.cast %m : !view2 to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %c10 = arith.constant 10 : index
  %B0 = memref.alloc() : memref<6x4xf32>
  %C0 = memref.alloc() : memref<6x4xf32>
  %v0 = memref.alloc() : memref<8xf32>
  scf.for %i = %c0 to %c6 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      %t = arith.muli %i, %c10 : index
      %s = arith.addi %t, %j : index
      %si = arith.index_cast %s : index to i64
      %sf = arith.sitofp %si : i64 to f32
      memref.store %sf, %B0[%i, %j] : memref<6x4xf32>
    }
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %ii = arith.index_cast %i : index to i64
    %if = arith.sitofp %ii : i64 to f32
    memref.store %if, %v0[%i] : memref<8xf32>
  }
  %B = memref.cast %B0 : memref<6x4xf32> to !m2
  %C = memref.cast %C0 : memref<6x4xf32> to !m2
  %v = memref.cast %v0 : memref<8xf32> to !v1

  // Rows [0, 2) and [2, 5).
  // CHECK: offset = 0 sizes = [5, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}0, 1, 2, 3],
  // CHECK-NEXT: [10, 11, 12, 13],
  // CHECK-NEXT: [20, 21, 22, 23],
  // CHECK-NEXT: [30, 31, 32, 33],
  // CHECK-NEXT: [40, 41, 42, 43]]
  %a1 = memref.subview %B[0, 0] [%c2, %c4] [1, 1] : !m2 to !m2
  %b1 = memref.subview %B[2, 0] [%c3, %c4] [1, 1] : !m2 to !m2
  %r1 = func.call @view2(%a1, %b1) : (!m2, !m2) -> !view2
  func.call @print2(%r1) : (!view2) -> ()

  // An empty part of another buffer first: the view starts at row 1 of B.
  // CHECK: offset = 4 sizes = [3, 4] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}10, 11, 12, 13],
  // CHECK-NEXT: [20, 21, 22, 23],
  // CHECK-NEXT: [30, 31, 32, 33]]
  %e2 = memref.subview %C[5, 0] [%c0, %c4] [1, 1] : !m2 to !m2
  %a2 = memref.subview %B[1, 0] [%c1, %c4] [1, 1] : !m2 to !m2
  %b2 = memref.subview %B[2, 0] [%c2, %c4] [1, 1] : !m2 to !m2
  %r2 = func.call @view3(%e2, %a2, %b2) : (!m2, !m2, !m2) -> !view2
  func.call @print2(%r2) : (!view2) -> ()

  // Columns [0, 3) of rows [0, 1) and [1, 3): row stride 4, 3 columns.
  // CHECK: offset = 0 sizes = [3, 3] strides = [4, 1] data =
  // CHECK-NEXT: {{\[\[}}0, 1, 2],
  // CHECK-NEXT: [10, 11, 12],
  // CHECK-NEXT: [20, 21, 22]]
  %a3 = memref.subview %B[0, 0] [%c1, %c3] [1, 1] : !m2 to !m2
  %b3 = memref.subview %B[1, 0] [%c2, %c3] [1, 1] : !m2 to !m2
  %r3 = func.call @view2(%a3, %b3) : (!m2, !m2) -> !view2
  func.call @print2(%r3) : (!view2) -> ()

  // Rank 1: v[2:4] and v[4:5].
  // CHECK: offset = 2 sizes = [3] strides = [1] data =
  // CHECK-NEXT: [2, 3, 4]
  %a4 = memref.subview %v[2] [%c2] [1] : !v1 to !v1
  %b4 = memref.subview %v[4] [%c1] [1] : !v1 to !v1
  %r4 = func.call @view1d(%a4, %b4) : (!v1, !v1) -> !view1
  %u4 = memref.cast %r4 : !view1 to memref<*xf32>
  func.call @printMemrefF32(%u4) : (memref<*xf32>) -> ()

  // All parts empty: part 0's position, no rows.
  // CHECK: offset = 20 sizes = [0, 4] strides = [4, 1]
  %e5 = memref.subview %B[5, 0] [%c0, %c4] [1, 1] : !m2 to !m2
  %r5 = func.call @view2(%e5, %e2) : (!m2, !m2) -> !view2
  func.call @print2(%r5) : (!view2) -> ()

  memref.dealloc %B0 : memref<6x4xf32>
  memref.dealloc %C0 : memref<6x4xf32>
  memref.dealloc %v0 : memref<8xf32>
  return
}

// Input gradient of a split linear layer, slin.linear_dgrad:
// dx = dy · concat(w0, w1), with the parts (1) in separate allocations (a
// copy), (2) row blocks of one allocation (a zero-copy view), and, through a
// kernel whose parts are arguments (run-time check), (3) adjacent and (4)
// reversed row blocks. Each case prints [case, max |dx - reference|, status].
//
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%splitlinear_libs/libsplitlinear_runtime%shlibext,%mlir_lib_dir/libmlir_c_runner_utils%shlibext,%mlir_lib_dir/libmlir_runner_utils%shlibext \
// RUN: | FileCheck %s
//
// The same cases with the kernel's strategy auto: parts that are not adjacent
// run one GEMM per part (the default CPU context's choice at 4 rows), the
// second accumulating into dx (poisoned before each case, so a first GEMM
// that did not overwrite it would show).
// RUN: sed 's/outs(%dx : !m2)$/outs(%dx : !m2) {strategy = #slin.strategy<auto>}/' %s \
// RUN: | splitlinear-opt -splitlinear-pipeline="target=cpu" \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%splitlinear_libs/libsplitlinear_runtime%shlibext,%mlir_lib_dir/libmlir_c_runner_utils%shlibext,%mlir_lib_dir/libmlir_runner_utils%shlibext \
// RUN: | FileCheck %s
// RUN: sed 's/outs(%dx : !m2)$/outs(%dx : !m2) {strategy = #slin.strategy<auto>}/' %s \
// RUN: | splitlinear-opt -slin-elide-concat -slin-expand-linear \
// RUN: | FileCheck %s --check-prefix=PERPART
// PERPART-LABEL: func.func @dgrad_kernel
// PERPART: slin.prefer_per_part
// PERPART: %[[B0:.*]] = memref.subview %arg0[0, 0]
// PERPART: slin.gemm ins(%[[B0]], %arg1 : {{.*}}) outs(%arg3 : {{[^{]*}}
// PERPART: %[[B1:.*]] = memref.subview %arg0[0, %{{.*}}]
// PERPART: slin.gemm ins(%[[B1]], %arg2 : {{.*}}) outs(%arg3 : {{.*}}) {epilogue = #slin.epilogue<accumulate>}
!m2 = memref<?x?xf32, strided<[?, ?], offset: ?>>
!v1 = memref<?xf32, strided<[?], offset: ?>>

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
func.func private @slinrt_default_context() -> !llvm.ptr
func.func private @slinrt_context_status(!llvm.ptr) -> i32

/// m[i, j] = ((a·(i + row0) + b·j + c) mod 5) - 2, an integer in [-2, 2].
func.func @fill(%m: !m2, %row0: index, %a: index, %b: index, %c: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %rows = memref.dim %m, %c0 : !m2
  %cols = memref.dim %m, %c1 : !m2
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %cols step %c1 {
      %gi = arith.addi %i, %row0 : index
      %ai = arith.muli %a, %gi : index
      %bj = arith.muli %b, %j : index
      %s0 = arith.addi %ai, %bj : index
      %s = arith.addi %s0, %c : index
      %r = arith.remui %s, %c5 : index
      %v = arith.subi %r, %c2 : index
      %vi = arith.index_cast %v : index to i64
      %vf = arith.sitofp %vi : i64 to f32
      memref.store %vf, %m[%i, %j] : !m2
    }
  }
  return
}

/// v[i] = ((a·(i + row0) + c) mod 5) - 2.
func.func @fill1d(%v: !v1, %row0: index, %a: index, %c: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %n = memref.dim %v, %c0 : !v1
  scf.for %i = %c0 to %n step %c1 {
    %gi = arith.addi %i, %row0 : index
    %ai = arith.muli %a, %gi : index
    %s = arith.addi %ai, %c : index
    %r = arith.remui %s, %c5 : index
    %e = arith.subi %r, %c2 : index
    %ei = arith.index_cast %e : index to i64
    %ef = arith.sitofp %ei : i64 to f32
    memref.store %ef, %v[%i] : !v1
  }
  return
}

/// m[i, j] = 1000, a value no correct result has here.
func.func @poison(%m: !m2) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = arith.constant 1000.0 : f32
  %rows = memref.dim %m, %c0 : !m2
  %cols = memref.dim %m, %c1 : !m2
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %cols step %c1 {
      memref.store %v, %m[%i, %j] : !m2
    }
  }
  return
}

/// max |got - want| over a matrix.
func.func @maxdiff(%got: !m2, %want: !m2) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %m = memref.dim %got, %c0 : !m2
  %n = memref.dim %got, %c1 : !m2
  %diff = scf.for %i = %c0 to %m step %c1 iter_args(%d0 = %zero) -> f32 {
    %d1 = scf.for %j = %c0 to %n step %c1 iter_args(%d = %d0) -> f32 {
      %g = memref.load %got[%i, %j] : !m2
      %w = memref.load %want[%i, %j] : !m2
      %e = arith.subf %g, %w : f32
      %ne = arith.negf %e : f32
      %a = arith.maximumf %e, %ne : f32
      %mx = arith.maximumf %d, %a : f32
      scf.yield %mx : f32
    }
    scf.yield %d1 : f32
  }
  return %diff : f32
}

/// Prints [id, diff, status of ctx] (status 0 is SLINRT_OK).
func.func @report(%id: f32, %diff: f32, %ctx: !llvm.ptr) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %st = func.call @slinrt_context_status(%ctx) : (!llvm.ptr) -> i32
  %stf = arith.sitofp %st : i32 to f32
  %out = memref.alloc() : memref<3xf32>
  memref.store %id, %out[%c0] : memref<3xf32>
  memref.store %diff, %out[%c1] : memref<3xf32>
  memref.store %stf, %out[%c2] : memref<3xf32>
  %u = memref.cast %out : memref<3xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %out : memref<3xf32>
  return
}

/// A new rows × cols matrix filled by @fill.
func.func @matrix(%rows: index, %cols: index, %row0: index, %a: index, %b: index,
                  %c: index) -> !m2 {
  %m = memref.alloc(%rows, %cols) : memref<?x?xf32>
  %s = memref.cast %m : memref<?x?xf32> to !m2
  func.call @fill(%s, %row0, %a, %b, %c) : (!m2, index, index, index, index) -> ()
  return %s : !m2
}

/// A new vector of n elements filled by @fill1d.
func.func @vector(%n: index, %row0: index, %a: index, %c: index) -> !v1 {
  %v = memref.alloc(%n) : memref<?xf32>
  %s = memref.cast %v : memref<?xf32> to !v1
  func.call @fill1d(%s, %row0, %a, %c) : (!v1, index, index, index) -> ()
  return %s : !v1
}

/// ref = op(a) · op(b) with op(x) = xᵀ when the flag is set, by a plain loop
/// nest.
func.func @ref_gemm(%a: !m2, %b: !m2, %ta: i1, %tb: i1) -> !m2 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %a0 = memref.dim %a, %c0 : !m2
  %a1 = memref.dim %a, %c1 : !m2
  %b0 = memref.dim %b, %c0 : !m2
  %b1 = memref.dim %b, %c1 : !m2
  %m = arith.select %ta, %a1, %a0 : index
  %k = arith.select %ta, %a0, %a1 : index
  %n = arith.select %tb, %b0, %b1 : index
  %alloc = memref.alloc(%m, %n) : memref<?x?xf32>
  %ref = memref.cast %alloc : memref<?x?xf32> to !m2
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %sum = scf.for %l = %c0 to %k step %c1 iter_args(%acc = %zero) -> f32 {
        %ar = arith.select %ta, %l, %i : index
        %ac = arith.select %ta, %i, %l : index
        %br = arith.select %tb, %j, %l : index
        %bc = arith.select %tb, %l, %j : index
        %av = memref.load %a[%ar, %ac] : !m2
        %bv = memref.load %b[%br, %bc] : !m2
        %p = arith.mulf %av, %bv : f32
        %s = arith.addf %acc, %p : f32
        scf.yield %s : f32
      }
      memref.store %sum, %ref[%i, %j] : !m2
    }
  }
  return %ref : !m2
}

func.func @dgrad_kernel(%dy: !m2, %w0: !m2, %w1: !m2, %dx: !m2) {
  slin.linear_dgrad ins(%dy : !m2) weights(%w0, %w1 : !m2, !m2) outs(%dx : !m2)
  return
}

/// Compares dx with dy · W and reports.
func.func @finish(%id: f32, %dx: !m2, %dy: !m2, %w: !m2, %ctx: !llvm.ptr) {
  %false = arith.constant false
  %ref = func.call @ref_gemm(%dy, %w, %false, %false) : (!m2, !m2, i1, i1) -> !m2
  %d = func.call @maxdiff(%dx, %ref) : (!m2, !m2) -> f32
  func.call @report(%id, %d, %ctx) : (f32, f32, !llvm.ptr) -> ()
  memref.dealloc %ref : !m2
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %ctx = func.call @slinrt_default_context() : () -> !llvm.ptr
  %dy = func.call @matrix(%c3, %c6, %c0, %c2, %c1, %c3) : (index, index, index, index, index, index) -> !m2
  %dy0 = memref.cast %dy : !m2 to memref<3x6xf32>
  // The whole weight W [6, 5]; parts hold rows [0, 2) and [2, 6).
  %W = func.call @matrix(%c6, %c5, %c0, %c3, %c1, %c1) : (index, index, index, index, index, index) -> !m2
  %dx = memref.alloc() : memref<3x5xf32>
  %dxs = memref.cast %dx : memref<3x5xf32> to !m2

  // CHECK: data =
  // CHECK-NEXT: [1, 0, 0]
  %id1 = arith.constant 1.0 : f32
  %w0 = memref.alloc() : memref<2x5xf32>
  %w1 = memref.alloc() : memref<4x5xf32>
  %w0s = memref.cast %w0 : memref<2x5xf32> to !m2
  %w1s = memref.cast %w1 : memref<4x5xf32> to !m2
  func.call @fill(%w0s, %c0, %c3, %c1, %c1) : (!m2, index, index, index, index) -> ()
  func.call @fill(%w1s, %c2, %c3, %c1, %c1) : (!m2, index, index, index, index) -> ()
  func.call @poison(%dxs) : (!m2) -> ()
  slin.linear_dgrad ins(%dy0 : memref<3x6xf32>)
      weights(%w0, %w1 : memref<2x5xf32>, memref<4x5xf32>) outs(%dx : memref<3x5xf32>)
  func.call @finish(%id1, %dxs, %dy, %W, %ctx) : (f32, !m2, !m2, !m2, !llvm.ptr) -> ()

  // CHECK: data =
  // CHECK-NEXT: [2, 0, 0]
  %id2 = arith.constant 2.0 : f32
  %buf = memref.alloc() : memref<6x5xf32>
  %bufs = memref.cast %buf : memref<6x5xf32> to !m2
  func.call @fill(%bufs, %c0, %c3, %c1, %c1) : (!m2, index, index, index, index) -> ()
  %v0 = memref.subview %buf[0, 0] [2, 5] [1, 1] : memref<6x5xf32> to memref<2x5xf32, strided<[5, 1]>>
  %v1 = memref.subview %buf[2, 0] [4, 5] [1, 1] : memref<6x5xf32> to memref<4x5xf32, strided<[5, 1], offset: 10>>
  func.call @poison(%dxs) : (!m2) -> ()
  slin.linear_dgrad ins(%dy0 : memref<3x6xf32>)
      weights(%v0, %v1 : memref<2x5xf32, strided<[5, 1]>>, memref<4x5xf32, strided<[5, 1], offset: 10>>)
      outs(%dx : memref<3x5xf32>)
  func.call @finish(%id2, %dxs, %dy, %W, %ctx) : (f32, !m2, !m2, !m2, !llvm.ptr) -> ()

  // CHECK: data =
  // CHECK-NEXT: [3, 0, 0]
  %id3 = arith.constant 3.0 : f32
  %a0 = memref.subview %bufs[0, 0] [%c2, %c5] [1, 1] : !m2 to !m2
  %a1 = memref.subview %bufs[2, 0] [%c4, %c5] [1, 1] : !m2 to !m2
  func.call @poison(%dxs) : (!m2) -> ()
  func.call @dgrad_kernel(%dy, %a0, %a1, %dxs) : (!m2, !m2, !m2, !m2) -> ()
  func.call @finish(%id3, %dxs, %dy, %W, %ctx) : (f32, !m2, !m2, !m2, !llvm.ptr) -> ()

  // Reversed: rows [4, 6) of rbuf hold W[0:2], rows [0, 4) hold W[2:6].
  // CHECK: data =
  // CHECK-NEXT: [4, 0, 0]
  %id4 = arith.constant 4.0 : f32
  %rbuf = func.call @matrix(%c6, %c5, %c0, %c0, %c0, %c0) : (index, index, index, index, index, index) -> !m2
  %r0 = memref.subview %rbuf[4, 0] [%c2, %c5] [1, 1] : !m2 to !m2
  %r1 = memref.subview %rbuf[0, 0] [%c4, %c5] [1, 1] : !m2 to !m2
  func.call @fill(%r0, %c0, %c3, %c1, %c1) : (!m2, index, index, index, index) -> ()
  func.call @fill(%r1, %c2, %c3, %c1, %c1) : (!m2, index, index, index, index) -> ()
  func.call @poison(%dxs) : (!m2) -> ()
  func.call @dgrad_kernel(%dy, %r0, %r1, %dxs) : (!m2, !m2, !m2, !m2) -> ()
  func.call @finish(%id4, %dxs, %dy, %W, %ctx) : (f32, !m2, !m2, !m2, !llvm.ptr) -> ()

  memref.dealloc %dy : !m2
  memref.dealloc %W : !m2
  memref.dealloc %dx : memref<3x5xf32>
  memref.dealloc %w0 : memref<2x5xf32>
  memref.dealloc %w1 : memref<4x5xf32>
  memref.dealloc %buf : memref<6x5xf32>
  memref.dealloc %rbuf : !m2
  return
}

// A kernel whose weight and bias parts are function arguments: adjacency is
// only known at run time (slin.is_adjacent, then a view or a copy). It runs on
// an explicit CPU context (the `!slin.context` argument) with parts that are
// (1) adjacent row blocks of one buffer, (2) the same blocks in reversed
// order, (3) adjacent but not 16-byte aligned, (4) adjacent with padded rows
// (ld 8 > K 5), (5) separated by a gap row. Every case must compute
// x · Wᵀ + b exactly; each prints [case, max |y - reference|, status].
//
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%splitlinear_libs/libsplitlinear_runtime%shlibext,%mlir_lib_dir/libmlir_c_runner_utils%shlibext,%mlir_lib_dir/libmlir_runner_utils%shlibext \
// RUN: | FileCheck %s

!m2 = memref<?x?xf32, strided<[?, ?], offset: ?>>
!v1 = memref<?xf32, strided<[?], offset: ?>>

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
func.func private @slinrt_default_context() -> !slin.context
func.func private @slinrt_context_status(!slin.context) -> i32

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
func.func @report(%id: f32, %diff: f32, %ctx: !slin.context) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %st = func.call @slinrt_context_status(%ctx) : (!slin.context) -> i32
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

/// ref = x · wᵀ (+ b when useBias), with a plain loop nest.
func.func @ref_linear(%x: !m2, %w: !m2, %b: !v1, %useBias: i1) -> !m2 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %m = memref.dim %x, %c0 : !m2
  %k = memref.dim %x, %c1 : !m2
  %n = memref.dim %w, %c0 : !m2
  %alloc = memref.alloc(%m, %n) : memref<?x?xf32>
  %ref = memref.cast %alloc : memref<?x?xf32> to !m2
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %init = scf.if %useBias -> f32 {
        %bj = memref.load %b[%j] : !v1
        scf.yield %bj : f32
      } else {
        scf.yield %zero : f32
      }
      %sum = scf.for %l = %c0 to %k step %c1 iter_args(%acc = %init) -> f32 {
        %xv = memref.load %x[%i, %l] : !m2
        %wv = memref.load %w[%j, %l] : !m2
        %p = arith.mulf %xv, %wv : f32
        %s = arith.addf %acc, %p : f32
        scf.yield %s : f32
      }
      memref.store %sum, %ref[%i, %j] : !m2
    }
  }
  return %ref : !m2
}

func.func private @slinrt_context_create_cpu() -> !slin.context
func.func private @slinrt_context_destroy(!slin.context)

/// y = x · concat(w0, w1)ᵀ + concat(b0, b1) on the context %ctx.
func.func @kernel(%ctx: !slin.context, %x: !m2, %w0: !m2, %w1: !m2,
                  %b0: !v1, %b1: !v1, %y: !m2) {
  slin.linear ins(%x : !m2) weights(%w0, %w1 : !m2, !m2)
      bias(%b0, %b1 : !v1, !v1) outs(%y : !m2)
  return
}

/// Runs the kernel on parts w0 = wbuf[r0 : r0 + 2, 0 : 5], w1 = wbuf[r1 : r1 + 4,
/// 0 : 5] (b0 = bbuf[r0 : r0 + 2], b1 = bbuf[r1 : r1 + 4]) after filling them
/// with rows [0, 2) and [2, 6) of W / b, and reports the difference.
func.func @run_case(%id: f32, %ctx: !slin.context, %x: !m2, %w: !m2, %b: !v1,
                    %wbuf: !m2, %bbuf: !v1, %r0: index, %r1: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %true = arith.constant true
  %w0 = memref.subview %wbuf[%r0, 0] [%c2, %c5] [1, 1] : !m2 to !m2
  %w1 = memref.subview %wbuf[%r1, 0] [%c4, %c5] [1, 1] : !m2 to !m2
  %b0 = memref.subview %bbuf[%r0] [%c2] [1] : !v1 to !v1
  %b1 = memref.subview %bbuf[%r1] [%c4] [1] : !v1 to !v1
  func.call @fill(%w0, %c0, %c3, %c1, %c1) : (!m2, index, index, index, index) -> ()
  func.call @fill(%w1, %c2, %c3, %c1, %c1) : (!m2, index, index, index, index) -> ()
  func.call @fill1d(%b0, %c0, %c2, %c1) : (!v1, index, index, index) -> ()
  func.call @fill1d(%b1, %c2, %c2, %c1) : (!v1, index, index, index) -> ()
  %y = func.call @matrix(%c3, %c6, %c0, %c0, %c0, %c0) : (index, index, index, index, index, index) -> !m2
  func.call @poison(%y) : (!m2) -> ()
  func.call @kernel(%ctx, %x, %w0, %w1, %b0, %b1, %y)
      : (!slin.context, !m2, !m2, !m2, !v1, !v1, !m2) -> ()
  %ref = func.call @ref_linear(%x, %w, %b, %true) : (!m2, !m2, !v1, i1) -> !m2
  %d = func.call @maxdiff(%y, %ref) : (!m2, !m2) -> f32
  func.call @report(%id, %d, %ctx) : (f32, f32, !slin.context) -> ()
  memref.dealloc %y : !m2
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
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %ctx = func.call @slinrt_context_create_cpu() : () -> !slin.context
  %x = func.call @matrix(%c3, %c5, %c0, %c1, %c2, %c0) : (index, index, index, index, index, index) -> !m2
  %w = func.call @matrix(%c6, %c5, %c0, %c3, %c1, %c1) : (index, index, index, index, index, index) -> !m2
  %b = func.call @vector(%c6, %c0, %c2, %c1) : (index, index, index, index) -> !v1
  %wbuf = func.call @matrix(%c7, %c5, %c0, %c0, %c0, %c0) : (index, index, index, index, index, index) -> !m2
  %bbuf = func.call @vector(%c7, %c0, %c0, %c0) : (index, index, index, index) -> !v1
  %padded = func.call @matrix(%c6, %c8, %c0, %c0, %c0, %c0) : (index, index, index, index, index, index) -> !m2

  // CHECK: data =
  // CHECK-NEXT: [1, 0, 0]
  %id1 = arith.constant 1.0 : f32
  func.call @run_case(%id1, %ctx, %x, %w, %b, %wbuf, %bbuf, %c0, %c2)
      : (f32, !slin.context, !m2, !m2, !v1, !m2, !v1, index, index) -> ()
  // CHECK: data =
  // CHECK-NEXT: [2, 0, 0]
  %id2 = arith.constant 2.0 : f32
  func.call @run_case(%id2, %ctx, %x, %w, %b, %wbuf, %bbuf, %c4, %c0)
      : (f32, !slin.context, !m2, !m2, !v1, !m2, !v1, index, index) -> ()
  // CHECK: data =
  // CHECK-NEXT: [3, 0, 0]
  %id3 = arith.constant 3.0 : f32
  func.call @run_case(%id3, %ctx, %x, %w, %b, %wbuf, %bbuf, %c1, %c3)
      : (f32, !slin.context, !m2, !m2, !v1, !m2, !v1, index, index) -> ()
  // CHECK: data =
  // CHECK-NEXT: [4, 0, 0]
  %id4 = arith.constant 4.0 : f32
  func.call @run_case(%id4, %ctx, %x, %w, %b, %padded, %bbuf, %c0, %c2)
      : (f32, !slin.context, !m2, !m2, !v1, !m2, !v1, index, index) -> ()
  // CHECK: data =
  // CHECK-NEXT: [5, 0, 0]
  %id5 = arith.constant 5.0 : f32
  func.call @run_case(%id5, %ctx, %x, %w, %b, %wbuf, %bbuf, %c0, %c3)
      : (f32, !slin.context, !m2, !m2, !v1, !m2, !v1, index, index) -> ()

  func.call @slinrt_context_destroy(%ctx) : (!slin.context) -> ()
  memref.dealloc %x : !m2
  memref.dealloc %w : !m2
  memref.dealloc %b : !v1
  memref.dealloc %wbuf : !m2
  memref.dealloc %bbuf : !v1
  memref.dealloc %padded : !m2
  return
}

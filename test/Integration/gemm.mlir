// slin.gemm on the CPU runtime for each transpose combination (NN, NT, TN,
// TT), with an operand given as a column-major view, and with the bias
// epilogue. M = 3, K = 4, N = 5; small integer operands, so every result is
// exact and must equal a plain scf.for reference
// ([case, max |d - reference|, status]).
//
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%splitlinear_libs/libsplitlinear_runtime%shlibext,%mlir_lib_dir/libmlir_c_runner_utils%shlibext,%mlir_lib_dir/libmlir_runner_utils%shlibext \
// RUN: | FileCheck %s
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

func.func @nn(%a: !m2, %b: !m2, %d: !m2) {
  slin.gemm ins(%a, %b : !m2, !m2) outs(%d : !m2)
  return
}

func.func @nt(%a: !m2, %b: !m2, %d: !m2) {
  slin.gemm ins(%a, %b : !m2, !m2) outs(%d : !m2) {transpose_b}
  return
}

func.func @tn(%a: !m2, %b: !m2, %d: !m2) {
  slin.gemm ins(%a, %b : !m2, !m2) outs(%d : !m2) {transpose_a}
  return
}

func.func @tt(%a: !m2, %b: !m2, %d: !m2) {
  slin.gemm ins(%a, %b : !m2, !m2) outs(%d : !m2) {transpose_a, transpose_b}
  return
}

func.func @nt_bias(%a: !m2, %b: !m2, %bias: !v1, %d: !m2) {
  slin.gemm ins(%a, %b : !m2, !m2) bias(%bias : !v1) outs(%d : !m2)
      {transpose_b, epilogue = #slin.epilogue<bias>}
  return
}

/// Runs `kernel` into a poisoned d and reports the difference to
/// op(a) · op(b).
func.func @check(%id: f32, %kernel: (!m2, !m2, !m2) -> (), %a: !m2, %b: !m2,
                 %ta: i1, %tb: i1, %ctx: !llvm.ptr) {
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c0 = arith.constant 0 : index
  %d = func.call @matrix(%c3, %c5, %c0, %c0, %c0, %c0) : (index, index, index, index, index, index) -> !m2
  func.call @poison(%d) : (!m2) -> ()
  func.call_indirect %kernel(%a, %b, %d) : (!m2, !m2, !m2) -> ()
  %ref = func.call @ref_gemm(%a, %b, %ta, %tb) : (!m2, !m2, i1, i1) -> !m2
  %diff = func.call @maxdiff(%d, %ref) : (!m2, !m2) -> f32
  func.call @report(%id, %diff, %ctx) : (f32, f32, !llvm.ptr) -> ()
  memref.dealloc %d : !m2
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
  %true = arith.constant true
  %false = arith.constant false
  %ctx = func.call @slinrt_default_context() : () -> !llvm.ptr
  %a = func.call @matrix(%c3, %c4, %c0, %c1, %c2, %c0) : (index, index, index, index, index, index) -> !m2
  %at = func.call @matrix(%c4, %c3, %c0, %c2, %c1, %c1) : (index, index, index, index, index, index) -> !m2
  %b = func.call @matrix(%c4, %c5, %c0, %c3, %c1, %c2) : (index, index, index, index, index, index) -> !m2
  %bt = func.call @matrix(%c5, %c4, %c0, %c1, %c3, %c4) : (index, index, index, index, index, index) -> !m2
  %nn = func.constant @nn : (!m2, !m2, !m2) -> ()
  %nt = func.constant @nt : (!m2, !m2, !m2) -> ()
  %tn = func.constant @tn : (!m2, !m2, !m2) -> ()
  %tt = func.constant @tt : (!m2, !m2, !m2) -> ()

  // CHECK: data =
  // CHECK-NEXT: [1, 0, 0]
  %id1 = arith.constant 1.0 : f32
  func.call @check(%id1, %nn, %a, %b, %false, %false, %ctx)
      : (f32, (!m2, !m2, !m2) -> (), !m2, !m2, i1, i1, !llvm.ptr) -> ()
  // CHECK: data =
  // CHECK-NEXT: [2, 0, 0]
  %id2 = arith.constant 2.0 : f32
  func.call @check(%id2, %nt, %a, %bt, %false, %true, %ctx)
      : (f32, (!m2, !m2, !m2) -> (), !m2, !m2, i1, i1, !llvm.ptr) -> ()
  // CHECK: data =
  // CHECK-NEXT: [3, 0, 0]
  %id3 = arith.constant 3.0 : f32
  func.call @check(%id3, %tn, %at, %b, %true, %false, %ctx)
      : (f32, (!m2, !m2, !m2) -> (), !m2, !m2, i1, i1, !llvm.ptr) -> ()
  // CHECK: data =
  // CHECK-NEXT: [4, 0, 0]
  %id4 = arith.constant 4.0 : f32
  func.call @check(%id4, %tt, %at, %bt, %true, %true, %ctx)
      : (f32, (!m2, !m2, !m2) -> (), !m2, !m2, i1, i1, !llvm.ptr) -> ()

  // NN with A a column-major view (strides [1, 3]) of the [4, 3] buffer.
  // CHECK: data =
  // CHECK-NEXT: [5, 0, 0]
  %id5 = arith.constant 5.0 : f32
  %acol = memref.transpose %at (i, j) -> (j, i) : !m2 to !m2
  func.call @check(%id5, %nn, %acol, %b, %false, %false, %ctx)
      : (f32, (!m2, !m2, !m2) -> (), !m2, !m2, i1, i1, !llvm.ptr) -> ()

  // NT with the bias epilogue: d = a · btᵀ + bias.
  // CHECK: data =
  // CHECK-NEXT: [6, 0, 0]
  %id6 = arith.constant 6.0 : f32
  %bias = func.call @vector(%c5, %c0, %c2, %c3) : (index, index, index, index) -> !v1
  %d6 = func.call @matrix(%c3, %c5, %c0, %c0, %c0, %c0) : (index, index, index, index, index, index) -> !m2
  func.call @poison(%d6) : (!m2) -> ()
  func.call @nt_bias(%a, %bt, %bias, %d6) : (!m2, !m2, !v1, !m2) -> ()
  %ref6 = func.call @ref_gemm(%a, %bt, %false, %true) : (!m2, !m2, i1, i1) -> !m2
  scf.for %i = %c0 to %c3 step %c1 {
    scf.for %j = %c0 to %c5 step %c1 {
      %r = memref.load %ref6[%i, %j] : !m2
      %bj = memref.load %bias[%j] : !v1
      %s = arith.addf %r, %bj : f32
      memref.store %s, %ref6[%i, %j] : !m2
    }
  }
  %diff6 = func.call @maxdiff(%d6, %ref6) : (!m2, !m2) -> f32
  func.call @report(%id6, %diff6, %ctx) : (f32, f32, !llvm.ptr) -> ()

  memref.dealloc %a : !m2
  memref.dealloc %at : !m2
  memref.dealloc %b : !m2
  memref.dealloc %bt : !m2
  memref.dealloc %bias : !v1
  memref.dealloc %d6 : !m2
  memref.dealloc %ref6 : !m2
  return
}

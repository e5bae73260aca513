// Weight and bias parts of other float types than the input's (f32 input,
// bf16 / f16 / f64 parts holding small integers, so every conversion is
// exact): (1) three parts of three types are combined by a converting concat
// (copy2d_bf16_f32, ...), (2) a single bf16 part with an f16 bias is
// converted before its GEMM. Each case prints [case, max |y - reference|,
// status].
//
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%splitlinear_libs/libsplitlinear_runtime%shlibext,%mlir_lib_dir/libmlir_c_runner_utils%shlibext,%mlir_lib_dir/libmlir_runner_utils%shlibext \
// RUN: | FileCheck %s
// RUN: splitlinear-opt %s -slin-elide-concat -slin-expand-linear \
// RUN:   -convert-slin-to-runtime="target=cpu" | FileCheck %s --check-prefix=IR
// IR-LABEL: func.func @main
// IR-DAG: call @slinrt_cpu_copy2d_f32_f32
// IR-DAG: call @slinrt_cpu_copy2d_bf16_f32
// IR-DAG: call @slinrt_cpu_copy2d_f16_f32
// IR-DAG: call @slinrt_cpu_copy1d_f32_f32
// IR-DAG: call @slinrt_cpu_copy1d_bf16_f32
// IR-DAG: call @slinrt_cpu_copy1d_f64_f32
// IR-DAG: call @slinrt_cpu_copy1d_f16_f32

!m2 = memref<?x?xf32, strided<[?, ?], offset: ?>>
!v1 = memref<?xf32, strided<[?], offset: ?>>
!m2_bf16 = memref<?x?xbf16, strided<[?, ?], offset: ?>>
!v1_bf16 = memref<?xbf16, strided<[?], offset: ?>>
!m2_f16 = memref<?x?xf16, strided<[?, ?], offset: ?>>
!v1_f16 = memref<?xf16, strided<[?], offset: ?>>
!m2_f64 = memref<?x?xf64, strided<[?, ?], offset: ?>>
!v1_f64 = memref<?xf64, strided<[?], offset: ?>>

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

/// dst = src converted to bf16 (exact: small integers).
func.func @to_bf16(%src: !m2, %dst: memref<?x?xbf16, strided<[?, ?], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %src, %c0 : !m2
  %cols = memref.dim %src, %c1 : !m2
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %cols step %c1 {
      %v = memref.load %src[%i, %j] : !m2
      %t = arith.truncf %v : f32 to bf16
      memref.store %t, %dst[%i, %j] : memref<?x?xbf16, strided<[?, ?], offset: ?>>
    }
  }
  return
}

/// dst = src converted to bf16 (exact: small integers).
func.func @to_bf16_1d(%src: !v1, %dst: memref<?xbf16, strided<[?], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %src, %c0 : !v1
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %src[%i] : !v1
    %t = arith.truncf %v : f32 to bf16
    memref.store %t, %dst[%i] : memref<?xbf16, strided<[?], offset: ?>>
  }
  return
}

/// dst = src converted to f16 (exact: small integers).
func.func @to_f16(%src: !m2, %dst: memref<?x?xf16, strided<[?, ?], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %src, %c0 : !m2
  %cols = memref.dim %src, %c1 : !m2
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %cols step %c1 {
      %v = memref.load %src[%i, %j] : !m2
      %t = arith.truncf %v : f32 to f16
      memref.store %t, %dst[%i, %j] : memref<?x?xf16, strided<[?, ?], offset: ?>>
    }
  }
  return
}

/// dst = src converted to f16 (exact: small integers).
func.func @to_f16_1d(%src: !v1, %dst: memref<?xf16, strided<[?], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %src, %c0 : !v1
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %src[%i] : !v1
    %t = arith.truncf %v : f32 to f16
    memref.store %t, %dst[%i] : memref<?xf16, strided<[?], offset: ?>>
  }
  return
}

/// dst = src converted to f64 (exact: small integers).
func.func @to_f64_1d(%src: !v1, %dst: memref<?xf64, strided<[?], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %src, %c0 : !v1
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %src[%i] : !v1
    %t = arith.extf %v : f32 to f64
    memref.store %t, %dst[%i] : memref<?xf64, strided<[?], offset: ?>>
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %true = arith.constant true
  %ctx = func.call @slinrt_default_context() : () -> !llvm.ptr
  %x = func.call @matrix(%c3, %c5, %c0, %c1, %c2, %c0) : (index, index, index, index, index, index) -> !m2
  %x0 = memref.cast %x : !m2 to memref<3x5xf32>
  %W = func.call @matrix(%c6, %c5, %c0, %c3, %c1, %c1) : (index, index, index, index, index, index) -> !m2
  %B = func.call @vector(%c6, %c0, %c2, %c1) : (index, index, index, index) -> !v1

  // Parts: rows [0, 2) in f32, [2, 5) in bf16, [5, 6) in f16 (biases f32,
  // bf16, f64).
  %w0 = memref.alloc() : memref<2x5xf32>
  %w1 = memref.alloc() : memref<3x5xbf16>
  %w2 = memref.alloc() : memref<1x5xf16>
  %b0 = memref.alloc() : memref<2xf32>
  %b1 = memref.alloc() : memref<3xbf16>
  %b2 = memref.alloc() : memref<1xf64>
  %w0s = memref.cast %w0 : memref<2x5xf32> to !m2
  %w1s = memref.cast %w1 : memref<3x5xbf16> to !m2_bf16
  %w2s = memref.cast %w2 : memref<1x5xf16> to !m2_f16
  %b0s = memref.cast %b0 : memref<2xf32> to !v1
  %b1s = memref.cast %b1 : memref<3xbf16> to !v1_bf16
  %b2s = memref.cast %b2 : memref<1xf64> to !v1_f64
  %W0 = memref.subview %W[0, 0] [%c2, %c5] [1, 1] : !m2 to !m2
  %W1 = memref.subview %W[2, 0] [%c3, %c5] [1, 1] : !m2 to !m2
  %W2 = memref.subview %W[5, 0] [%c1, %c5] [1, 1] : !m2 to !m2
  %B0 = memref.subview %B[0] [%c2] [1] : !v1 to !v1
  %B1 = memref.subview %B[2] [%c3] [1] : !v1 to !v1
  %B2 = memref.subview %B[5] [%c1] [1] : !v1 to !v1
  func.call @fill(%w0s, %c0, %c3, %c1, %c1) : (!m2, index, index, index, index) -> ()
  func.call @to_bf16(%W1, %w1s) : (!m2, !m2_bf16) -> ()
  func.call @to_f16(%W2, %w2s) : (!m2, !m2_f16) -> ()
  func.call @fill1d(%b0s, %c0, %c2, %c1) : (!v1, index, index, index) -> ()
  func.call @to_bf16_1d(%B1, %b1s) : (!v1, !v1_bf16) -> ()
  func.call @to_f64_1d(%B2, %b2s) : (!v1, !v1_f64) -> ()

  // CHECK: data =
  // CHECK-NEXT: [1, 0, 0]
  %id1 = arith.constant 1.0 : f32
  %y = memref.alloc() : memref<3x6xf32>
  %ys = memref.cast %y : memref<3x6xf32> to !m2
  func.call @poison(%ys) : (!m2) -> ()
  slin.linear ins(%x0 : memref<3x5xf32>)
      weights(%w0, %w1, %w2 : memref<2x5xf32>, memref<3x5xbf16>, memref<1x5xf16>)
      bias(%b0, %b1, %b2 : memref<2xf32>, memref<3xbf16>, memref<1xf64>)
      outs(%y : memref<3x6xf32>)
  %ref = func.call @ref_linear(%x, %W, %B, %true) : (!m2, !m2, !v1, i1) -> !m2
  %d1 = func.call @maxdiff(%ys, %ref) : (!m2, !m2) -> f32
  func.call @report(%id1, %d1, %ctx) : (f32, f32, !llvm.ptr) -> ()

  // One bf16 part (W rows [2, 5)) with an f16 bias (b[2:5]).
  // CHECK: data =
  // CHECK-NEXT: [2, 0, 0]
  %id2 = arith.constant 2.0 : f32
  %bh = memref.alloc() : memref<3xf16>
  %bhs = memref.cast %bh : memref<3xf16> to !v1_f16
  func.call @to_f16_1d(%B1, %bhs) : (!v1, !v1_f16) -> ()
  %y2 = memref.alloc() : memref<3x3xf32>
  %y2s = memref.cast %y2 : memref<3x3xf32> to !m2
  func.call @poison(%y2s) : (!m2) -> ()
  slin.linear ins(%x0 : memref<3x5xf32>) weights(%w1 : memref<3x5xbf16>)
      bias(%bh : memref<3xf16>) outs(%y2 : memref<3x3xf32>)
  %ref2 = func.call @ref_linear(%x, %W1, %B1, %true) : (!m2, !m2, !v1, i1) -> !m2
  %d2 = func.call @maxdiff(%y2s, %ref2) : (!m2, !m2) -> f32
  func.call @report(%id2, %d2, %ctx) : (f32, f32, !llvm.ptr) -> ()

  memref.dealloc %x : !m2
  memref.dealloc %W : !m2
  memref.dealloc %B : !v1
  memref.dealloc %w0 : memref<2x5xf32>
  memref.dealloc %w1 : memref<3x5xbf16>
  memref.dealloc %w2 : memref<1x5xf16>
  memref.dealloc %b0 : memref<2xf32>
  memref.dealloc %b1 : memref<3xbf16>
  memref.dealloc %b2 : memref<1xf64>
  memref.dealloc %bh : memref<3xf16>
  memref.dealloc %y : memref<3x6xf32>
  memref.dealloc %y2 : memref<3x3xf32>
  memref.dealloc %ref : !m2
  memref.dealloc %ref2 : !m2
  return
}

// slin.linear end to end in bf16, f16 and f64 (input, weight parts, bias
// parts and output all of that type) on the CPU runtime. Operands are
// integers in [-2, 2] and K = 5, so every product, sum and bias addition is
// an integer of magnitude <= 22, exact in all three types: the result,
// widened to f32, must equal the f32 reference exactly
// ([case, max |y - reference|, status]; 1 = bf16, 2 = f16, 3 = f64).
//
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%splitlinear_libs/libsplitlinear_runtime%shlibext,%mlir_lib_dir/libmlir_c_runner_utils%shlibext,%mlir_lib_dir/libmlir_runner_utils%shlibext \
// RUN: | FileCheck %s

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

/// dst = src converted to f32.
func.func @from_bf16(%src: memref<?x?xbf16, strided<[?, ?], offset: ?>>, %dst: !m2) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %src, %c0 : memref<?x?xbf16, strided<[?, ?], offset: ?>>
  %cols = memref.dim %src, %c1 : memref<?x?xbf16, strided<[?, ?], offset: ?>>
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %cols step %c1 {
      %v = memref.load %src[%i, %j] : memref<?x?xbf16, strided<[?, ?], offset: ?>>
      %t = arith.extf %v : bf16 to f32
      memref.store %t, %dst[%i, %j] : !m2
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

/// dst = src converted to f32.
func.func @from_f16(%src: memref<?x?xf16, strided<[?, ?], offset: ?>>, %dst: !m2) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %src, %c0 : memref<?x?xf16, strided<[?, ?], offset: ?>>
  %cols = memref.dim %src, %c1 : memref<?x?xf16, strided<[?, ?], offset: ?>>
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %cols step %c1 {
      %v = memref.load %src[%i, %j] : memref<?x?xf16, strided<[?, ?], offset: ?>>
      %t = arith.extf %v : f16 to f32
      memref.store %t, %dst[%i, %j] : !m2
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
func.func @to_f64(%src: !m2, %dst: memref<?x?xf64, strided<[?, ?], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %src, %c0 : !m2
  %cols = memref.dim %src, %c1 : !m2
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %cols step %c1 {
      %v = memref.load %src[%i, %j] : !m2
      %t = arith.extf %v : f32 to f64
      memref.store %t, %dst[%i, %j] : memref<?x?xf64, strided<[?, ?], offset: ?>>
    }
  }
  return
}

/// dst = src converted to f32.
func.func @from_f64(%src: memref<?x?xf64, strided<[?, ?], offset: ?>>, %dst: !m2) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %src, %c0 : memref<?x?xf64, strided<[?, ?], offset: ?>>
  %cols = memref.dim %src, %c1 : memref<?x?xf64, strided<[?, ?], offset: ?>>
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %cols step %c1 {
      %v = memref.load %src[%i, %j] : memref<?x?xf64, strided<[?, ?], offset: ?>>
      %t = arith.truncf %v : f64 to f32
      memref.store %t, %dst[%i, %j] : !m2
    }
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

/// y = x · concat(w0, w1)ᵀ + concat(b0, b1) in bf16.
func.func @linear_bf16(%x: !m2_bf16, %w0: !m2_bf16, %w1: !m2_bf16, %b0: !v1_bf16,
                     %b1: !v1_bf16, %y: !m2_bf16) {
  slin.linear ins(%x : !m2_bf16) weights(%w0, %w1 : !m2_bf16, !m2_bf16)
      bias(%b0, %b1 : !v1_bf16, !v1_bf16) outs(%y : !m2_bf16)
  return
}

/// Converts the f32 operands to bf16, runs @linear_bf16, compares with ref.
func.func @case_bf16(%id: f32, %x: !m2, %w0: !m2, %w1: !m2, %b0: !v1, %b1: !v1,
                   %ref: !m2, %ctx: !llvm.ptr) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %xa = memref.alloc(%c3, %c5) : memref<?x?xbf16>
  %w0a = memref.alloc(%c2, %c5) : memref<?x?xbf16>
  %w1a = memref.alloc(%c4, %c5) : memref<?x?xbf16>
  %b0a = memref.alloc(%c2) : memref<?xbf16>
  %b1a = memref.alloc(%c4) : memref<?xbf16>
  %ya = memref.alloc(%c3, %c6) : memref<?x?xbf16>
  %xt = memref.cast %xa : memref<?x?xbf16> to !m2_bf16
  %w0t = memref.cast %w0a : memref<?x?xbf16> to !m2_bf16
  %w1t = memref.cast %w1a : memref<?x?xbf16> to !m2_bf16
  %b0t = memref.cast %b0a : memref<?xbf16> to !v1_bf16
  %b1t = memref.cast %b1a : memref<?xbf16> to !v1_bf16
  %yt = memref.cast %ya : memref<?x?xbf16> to !m2_bf16
  func.call @to_bf16(%x, %xt) : (!m2, !m2_bf16) -> ()
  func.call @to_bf16(%w0, %w0t) : (!m2, !m2_bf16) -> ()
  func.call @to_bf16(%w1, %w1t) : (!m2, !m2_bf16) -> ()
  func.call @to_bf16_1d(%b0, %b0t) : (!v1, !v1_bf16) -> ()
  func.call @to_bf16_1d(%b1, %b1t) : (!v1, !v1_bf16) -> ()
  %y = func.call @matrix(%c3, %c6, %c0, %c0, %c0, %c0) : (index, index, index, index, index, index) -> !m2
  func.call @poison(%y) : (!m2) -> ()
  func.call @to_bf16(%y, %yt) : (!m2, !m2_bf16) -> ()
  func.call @linear_bf16(%xt, %w0t, %w1t, %b0t, %b1t, %yt)
      : (!m2_bf16, !m2_bf16, !m2_bf16, !v1_bf16, !v1_bf16, !m2_bf16) -> ()
  func.call @from_bf16(%yt, %y) : (!m2_bf16, !m2) -> ()
  %d = func.call @maxdiff(%y, %ref) : (!m2, !m2) -> f32
  func.call @report(%id, %d, %ctx) : (f32, f32, !llvm.ptr) -> ()
  memref.dealloc %xa : memref<?x?xbf16>
  memref.dealloc %w0a : memref<?x?xbf16>
  memref.dealloc %w1a : memref<?x?xbf16>
  memref.dealloc %b0a : memref<?xbf16>
  memref.dealloc %b1a : memref<?xbf16>
  memref.dealloc %ya : memref<?x?xbf16>
  memref.dealloc %y : !m2
  return
}

/// y = x · concat(w0, w1)ᵀ + concat(b0, b1) in f16.
func.func @linear_f16(%x: !m2_f16, %w0: !m2_f16, %w1: !m2_f16, %b0: !v1_f16,
                     %b1: !v1_f16, %y: !m2_f16) {
  slin.linear ins(%x : !m2_f16) weights(%w0, %w1 : !m2_f16, !m2_f16)
      bias(%b0, %b1 : !v1_f16, !v1_f16) outs(%y : !m2_f16)
  return
}

/// Converts the f32 operands to f16, runs @linear_f16, compares with ref.
func.func @case_f16(%id: f32, %x: !m2, %w0: !m2, %w1: !m2, %b0: !v1, %b1: !v1,
                   %ref: !m2, %ctx: !llvm.ptr) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %xa = memref.alloc(%c3, %c5) : memref<?x?xf16>
  %w0a = memref.alloc(%c2, %c5) : memref<?x?xf16>
  %w1a = memref.alloc(%c4, %c5) : memref<?x?xf16>
  %b0a = memref.alloc(%c2) : memref<?xf16>
  %b1a = memref.alloc(%c4) : memref<?xf16>
  %ya = memref.alloc(%c3, %c6) : memref<?x?xf16>
  %xt = memref.cast %xa : memref<?x?xf16> to !m2_f16
  %w0t = memref.cast %w0a : memref<?x?xf16> to !m2_f16
  %w1t = memref.cast %w1a : memref<?x?xf16> to !m2_f16
  %b0t = memref.cast %b0a : memref<?xf16> to !v1_f16
  %b1t = memref.cast %b1a : memref<?xf16> to !v1_f16
  %yt = memref.cast %ya : memref<?x?xf16> to !m2_f16
  func.call @to_f16(%x, %xt) : (!m2, !m2_f16) -> ()
  func.call @to_f16(%w0, %w0t) : (!m2, !m2_f16) -> ()
  func.call @to_f16(%w1, %w1t) : (!m2, !m2_f16) -> ()
  func.call @to_f16_1d(%b0, %b0t) : (!v1, !v1_f16) -> ()
  func.call @to_f16_1d(%b1, %b1t) : (!v1, !v1_f16) -> ()
  %y = func.call @matrix(%c3, %c6, %c0, %c0, %c0, %c0) : (index, index, index, index, index, index) -> !m2
  func.call @poison(%y) : (!m2) -> ()
  func.call @to_f16(%y, %yt) : (!m2, !m2_f16) -> ()
  func.call @linear_f16(%xt, %w0t, %w1t, %b0t, %b1t, %yt)
      : (!m2_f16, !m2_f16, !m2_f16, !v1_f16, !v1_f16, !m2_f16) -> ()
  func.call @from_f16(%yt, %y) : (!m2_f16, !m2) -> ()
  %d = func.call @maxdiff(%y, %ref) : (!m2, !m2) -> f32
  func.call @report(%id, %d, %ctx) : (f32, f32, !llvm.ptr) -> ()
  memref.dealloc %xa : memref<?x?xf16>
  memref.dealloc %w0a : memref<?x?xf16>
  memref.dealloc %w1a : memref<?x?xf16>
  memref.dealloc %b0a : memref<?xf16>
  memref.dealloc %b1a : memref<?xf16>
  memref.dealloc %ya : memref<?x?xf16>
  memref.dealloc %y : !m2
  return
}

/// y = x · concat(w0, w1)ᵀ + concat(b0, b1) in f64.
func.func @linear_f64(%x: !m2_f64, %w0: !m2_f64, %w1: !m2_f64, %b0: !v1_f64,
                     %b1: !v1_f64, %y: !m2_f64) {
  slin.linear ins(%x : !m2_f64) weights(%w0, %w1 : !m2_f64, !m2_f64)
      bias(%b0, %b1 : !v1_f64, !v1_f64) outs(%y : !m2_f64)
  return
}

/// Converts the f32 operands to f64, runs @linear_f64, compares with ref.
func.func @case_f64(%id: f32, %x: !m2, %w0: !m2, %w1: !m2, %b0: !v1, %b1: !v1,
                   %ref: !m2, %ctx: !llvm.ptr) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %xa = memref.alloc(%c3, %c5) : memref<?x?xf64>
  %w0a = memref.alloc(%c2, %c5) : memref<?x?xf64>
  %w1a = memref.alloc(%c4, %c5) : memref<?x?xf64>
  %b0a = memref.alloc(%c2) : memref<?xf64>
  %b1a = memref.alloc(%c4) : memref<?xf64>
  %ya = memref.alloc(%c3, %c6) : memref<?x?xf64>
  %xt = memref.cast %xa : memref<?x?xf64> to !m2_f64
  %w0t = memref.cast %w0a : memref<?x?xf64> to !m2_f64
  %w1t = memref.cast %w1a : memref<?x?xf64> to !m2_f64
  %b0t = memref.cast %b0a : memref<?xf64> to !v1_f64
  %b1t = memref.cast %b1a : memref<?xf64> to !v1_f64
  %yt = memref.cast %ya : memref<?x?xf64> to !m2_f64
  func.call @to_f64(%x, %xt) : (!m2, !m2_f64) -> ()
  func.call @to_f64(%w0, %w0t) : (!m2, !m2_f64) -> ()
  func.call @to_f64(%w1, %w1t) : (!m2, !m2_f64) -> ()
  func.call @to_f64_1d(%b0, %b0t) : (!v1, !v1_f64) -> ()
  func.call @to_f64_1d(%b1, %b1t) : (!v1, !v1_f64) -> ()
  %y = func.call @matrix(%c3, %c6, %c0, %c0, %c0, %c0) : (index, index, index, index, index, index) -> !m2
  func.call @poison(%y) : (!m2) -> ()
  func.call @to_f64(%y, %yt) : (!m2, !m2_f64) -> ()
  func.call @linear_f64(%xt, %w0t, %w1t, %b0t, %b1t, %yt)
      : (!m2_f64, !m2_f64, !m2_f64, !v1_f64, !v1_f64, !m2_f64) -> ()
  func.call @from_f64(%yt, %y) : (!m2_f64, !m2) -> ()
  %d = func.call @maxdiff(%y, %ref) : (!m2, !m2) -> f32
  func.call @report(%id, %d, %ctx) : (f32, f32, !llvm.ptr) -> ()
  memref.dealloc %xa : memref<?x?xf64>
  memref.dealloc %w0a : memref<?x?xf64>
  memref.dealloc %w1a : memref<?x?xf64>
  memref.dealloc %b0a : memref<?xf64>
  memref.dealloc %b1a : memref<?xf64>
  memref.dealloc %ya : memref<?x?xf64>
  memref.dealloc %y : !m2
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
  %true = arith.constant true
  %ctx = func.call @slinrt_default_context() : () -> !llvm.ptr
  %x = func.call @matrix(%c3, %c5, %c0, %c1, %c2, %c0) : (index, index, index, index, index, index) -> !m2
  %W = func.call @matrix(%c6, %c5, %c0, %c3, %c1, %c1) : (index, index, index, index, index, index) -> !m2
  %B = func.call @vector(%c6, %c0, %c2, %c1) : (index, index, index, index) -> !v1
  %w0 = memref.subview %W[0, 0] [%c2, %c5] [1, 1] : !m2 to !m2
  %w1 = memref.subview %W[2, 0] [%c4, %c5] [1, 1] : !m2 to !m2
  %b0 = memref.subview %B[0] [%c2] [1] : !v1 to !v1
  %b1 = memref.subview %B[2] [%c4] [1] : !v1 to !v1
  %ref = func.call @ref_linear(%x, %W, %B, %true) : (!m2, !m2, !v1, i1) -> !m2

  // CHECK: data =
  // CHECK-NEXT: [1, 0, 0]
  %id1 = arith.constant 1.0 : f32
  func.call @case_bf16(%id1, %x, %w0, %w1, %b0, %b1, %ref, %ctx)
      : (f32, !m2, !m2, !m2, !v1, !v1, !m2, !llvm.ptr) -> ()

  // CHECK: data =
  // CHECK-NEXT: [2, 0, 0]
  %id2 = arith.constant 2.0 : f32
  func.call @case_f16(%id2, %x, %w0, %w1, %b0, %b1, %ref, %ctx)
      : (f32, !m2, !m2, !m2, !v1, !v1, !m2, !llvm.ptr) -> ()

  // CHECK: data =
  // CHECK-NEXT: [3, 0, 0]
  %id3 = arith.constant 3.0 : f32
  func.call @case_f64(%id3, %x, %w0, %w1, %b0, %b1, %ref, %ctx)
      : (f32, !m2, !m2, !m2, !v1, !v1, !m2, !llvm.ptr) -> ()

  memref.dealloc %x : !m2
  memref.dealloc %W : !m2
  memref.dealloc %B : !v1
  memref.dealloc %ref : !m2
  return
}

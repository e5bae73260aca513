// The parts of a linear layer are row blocks of one allocation (as when a
// fused QKV weight is split): slin-elide-concat proves adjacency, so the GEMM
// reads one zero-copy view, with no allocation and no copy. The result must
// equal a plain scf.for reference ([case, max |y - reference|, status]).
//
// RUN: splitlinear-opt %s -splitlinear-pipeline="target=cpu" \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%splitlinear_libs/libsplitlinear_runtime%shlibext,%mlir_lib_dir/libmlir_c_runner_utils%shlibext,%mlir_lib_dir/libmlir_runner_utils%shlibext \
// RUN: | FileCheck %s
// RUN: splitlinear-opt %s -slin-elide-concat -slin-expand-linear \
// RUN:   -convert-slin-to-runtime="target=cpu" | FileCheck %s --check-prefix=IR
// IR-LABEL: func.func @main
// IR-NOT: slinrt_cpu_alloc
// IR-NOT: slinrt_cpu_copy
// IR: memref.reinterpret_cast
// IR-NOT: slinrt_cpu_copy
// IR: call @slinrt_cpu_gemm_f32({{.*}}) :
// IR-NOT: slinrt_cpu_copy
// IR-NOT: slinrt_cpu_free

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

  // One weight buffer W [6, 5] and one bias buffer b [6]; parts are their
  // row blocks [0, 2), [2, 5), [5, 6).
  %W = memref.alloc() : memref<6x5xf32>
  %B = memref.alloc() : memref<6xf32>
  %Ws = memref.cast %W : memref<6x5xf32> to !m2
  %Bs = memref.cast %B : memref<6xf32> to !v1
  func.call @fill(%Ws, %c0, %c3, %c1, %c1) : (!m2, index, index, index, index) -> ()
  func.call @fill1d(%Bs, %c0, %c2, %c1) : (!v1, index, index, index) -> ()
  %w0 = memref.subview %W[0, 0] [2, 5] [1, 1] : memref<6x5xf32> to memref<2x5xf32, strided<[5, 1]>>
  %w1 = memref.subview %W[2, 0] [3, 5] [1, 1] : memref<6x5xf32> to memref<3x5xf32, strided<[5, 1], offset: 10>>
  %w2 = memref.subview %W[5, 0] [1, 5] [1, 1] : memref<6x5xf32> to memref<1x5xf32, strided<[5, 1], offset: 25>>
  %b0 = memref.subview %B[0] [2] [1] : memref<6xf32> to memref<2xf32, strided<[1]>>
  %b1 = memref.subview %B[2] [3] [1] : memref<6xf32> to memref<3xf32, strided<[1], offset: 2>>
  %b2 = memref.subview %B[5] [1] [1] : memref<6xf32> to memref<1xf32, strided<[1], offset: 5>>

  // CHECK: data =
  // CHECK-NEXT: [1, 0, 0]
  %id = arith.constant 1.0 : f32
  %y = memref.alloc() : memref<3x6xf32>
  %ys = memref.cast %y : memref<3x6xf32> to !m2
  func.call @poison(%ys) : (!m2) -> ()
  slin.linear ins(%x0 : memref<3x5xf32>)
      weights(%w0, %w1, %w2 : memref<2x5xf32, strided<[5, 1]>>,
              memref<3x5xf32, strided<[5, 1], offset: 10>>,
              memref<1x5xf32, strided<[5, 1], offset: 25>>)
      bias(%b0, %b1, %b2 : memref<2xf32, strided<[1]>>,
           memref<3xf32, strided<[1], offset: 2>>, memref<1xf32, strided<[1], offset: 5>>)
      outs(%y : memref<3x6xf32>)
  %ref = func.call @ref_linear(%x, %Ws, %Bs, %true) : (!m2, !m2, !v1, i1) -> !m2
  %d = func.call @maxdiff(%ys, %ref) : (!m2, !m2) -> f32
  func.call @report(%id, %d, %ctx) : (f32, f32, !llvm.ptr) -> ()

  memref.dealloc %x : !m2
  memref.dealloc %W : memref<6x5xf32>
  memref.dealloc %B : memref<6xf32>
  memref.dealloc %y : memref<3x6xf32>
  memref.dealloc %ref : !m2
  return
}

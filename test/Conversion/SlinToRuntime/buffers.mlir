// Temporary buffers of the slin passes (slin.alloc / slin.dealloc) come from
// the runtime allocator: slinrt_<target>_alloc returns an i8 buffer of the
// byte size, typed with memref.view; slinrt_<target>_free takes its aligned
// address. memref.alloc / memref.dealloc are the program's own and stay as
// they are.
//
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cpu" | FileCheck %s -DTGT=cpu
// RUN: splitlinear-opt %s -convert-slin-to-runtime="target=cuda" | FileCheck %s -DTGT=cuda

// CHECK-DAG: func.func private @slinrt_[[TGT]]_alloc(!llvm.ptr, i64) -> memref<?xi8> attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @slinrt_[[TGT]]_free(!llvm.ptr, i64) attributes {llvm.emit_c_interface}

func.func private @use2d(memref<6x4xf32>)
func.func private @use(memref<?x?xbf16>)

// CHECK-LABEL: func.func @static_buffer(
// CHECK: %[[CTX:.*]] = call @slinrt_default_context() : () -> !llvm.ptr
// CHECK: %[[BYTES:.*]] = arith.constant 96 : index
// CHECK: %[[BYTES64:.*]] = arith.index_cast %[[BYTES]] : index to i64
// CHECK: %[[RAW:.*]] = call @slinrt_[[TGT]]_alloc(%[[CTX]], %[[BYTES64]]) : (!llvm.ptr, i64) -> memref<?xi8>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[BUF:.*]] = memref.view %[[RAW]][%[[C0]]][] : memref<?xi8> to memref<6x4xf32>
// CHECK: call @use2d(%[[BUF]])
// CHECK: %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]] : memref<6x4xf32> -> index
// CHECK: %[[ADDR64:.*]] = arith.index_cast %[[ADDR]] : index to i64
// CHECK: call @slinrt_[[TGT]]_free(%[[CTX]], %[[ADDR64]]) : (!llvm.ptr, i64) -> ()
// CHECK-NOT: slin.
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
func.func @static_buffer() {
  %buf = slin.alloc() : memref<6x4xf32>
  func.call @use2d(%buf) : (memref<6x4xf32>) -> ()
  slin.dealloc %buf : memref<6x4xf32>
  return
}

// Dynamic sizes multiply the static byte count (-1 bytes, refused by the
// runtime, when a product overflows); the view takes them.
// CHECK-LABEL: func.func @dynamic_buffer(
// CHECK-SAME: %[[N:[^:]*]]: index, %[[K:[^:]*]]: index)
// CHECK: %[[ELT:.*]] = arith.constant 2 : index
// CHECK: %[[NB:.*]] = arith.muli %[[ELT]], %[[N]] : index
// CHECK: arith.divui %[[NB]], %{{.*}} : index
// CHECK: %[[NKB:.*]] = arith.muli %[[NB]], %[[K]] : index
// CHECK: arith.divui %[[NKB]], %{{.*}} : index
// CHECK: %[[OVERFLOW:.*]] = arith.ori
// CHECK: %[[MINUS1:.*]] = arith.constant -1 : index
// CHECK: %[[BYTES:.*]] = arith.select %[[OVERFLOW]], %[[MINUS1]], %[[NKB]] : index
// CHECK: %[[BYTES64:.*]] = arith.index_cast %[[BYTES]] : index to i64
// CHECK: %[[RAW:.*]] = call @slinrt_[[TGT]]_alloc(%{{.*}}, %[[BYTES64]])
// CHECK: memref.view %[[RAW]][%{{.*}}][%[[N]], %[[K]]] : memref<?xi8> to memref<?x?xbf16>
func.func @dynamic_buffer(%n: index, %k: index) {
  %buf = slin.alloc(%n, %k) : memref<?x?xbf16>
  func.call @use(%buf) : (memref<?x?xbf16>) -> ()
  slin.dealloc %buf : memref<?x?xbf16>
  return
}

// The dealloc may name a cast of the buffer (as the checked-view fallback
// does): its aligned pointer is the allocation's.
// CHECK-LABEL: func.func @dealloc_of_cast(
// CHECK: %[[BUF:.*]] = memref.view
// CHECK: %[[CAST:.*]] = memref.cast %[[BUF]]
// CHECK: memref.extract_aligned_pointer_as_index %[[CAST]]
// CHECK: call @slinrt_[[TGT]]_free(
func.func @dealloc_of_cast(%n: index) {
  %buf = slin.alloc(%n) : memref<?x8xf32>
  %cast = memref.cast %buf : memref<?x8xf32> to memref<?x8xf32, strided<[?, 1], offset: ?>>
  slin.dealloc %cast : memref<?x8xf32, strided<[?, 1], offset: ?>>
  return
}

// The program's own allocations are left alone, and need no context.
// CHECK-LABEL: func.func @program_buffer(
// CHECK-NOT: slinrt_
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<6x4xf32>
// CHECK: call @use2d(%[[BUF]])
// CHECK: memref.dealloc %[[BUF]] : memref<6x4xf32>
// CHECK-NOT: slinrt_
// CHECK: return
func.func @program_buffer() {
  %buf = memref.alloc() : memref<6x4xf32>
  func.call @use2d(%buf) : (memref<6x4xf32>) -> ()
  memref.dealloc %buf : memref<6x4xf32>
  return
}

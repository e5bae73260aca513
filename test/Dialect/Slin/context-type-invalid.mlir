// The runtime context is a type, not an argument attribute, and temporaries
// are ops, not a marked memref.alloc: the slin dialect defines no argument or
// discardable attributes, so IR that still marks a pointer `{slin.context}`
// or an allocation `{slin.buffer}` is refused instead of running on the
// default context or in host memory.
//
// RUN: splitlinear-opt %s -split-input-file -verify-diagnostics

// expected-error @+2 {{'func.func' op argument #0 of region #0 has the attribute 'slin.context', but the slin dialect defines no argument attributes}}
// expected-note @+1 {{the runtime context is an argument of type '!slin.context'}}
func.func @marked_pointer(%ctx: !llvm.ptr {slin.context}, %a: memref<4x4xf32>) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1 of region #0 has the attribute 'slin.stream', but the slin dialect defines no argument attributes}}
func.func @unknown_attribute(%a: memref<4x4xf32>, %s: !llvm.ptr {slin.stream}) {
  return
}

// -----

// expected-error @+1 {{unknown  type `ctx` in dialect `slin`}}
func.func @unknown_type(%ctx: !slin.ctx) {
  return
}

// -----

// The discardable `{slin.buffer}` that marked temporaries before `slin.alloc`
// existed: refused instead of silently staying a host allocation.
func.func @marked_alloc(%n: index) {
  // expected-error @+2 {{'memref.alloc' op has the attribute 'slin.buffer', but the slin dialect defines no discardable attributes}}
  // expected-note @+1 {{a temporary from the runtime's allocator is 'slin.alloc' / 'slin.dealloc'}}
  %buf = memref.alloc(%n) {slin.buffer} : memref<?x16xf32>
  memref.dealloc %buf : memref<?x16xf32>
  return
}

// -----

func.func @unknown_op_attribute() {
  // expected-error @+1 {{'arith.constant' op has the attribute 'slin.per_part', but the slin dialect defines no discardable attributes}}
  %c0 = arith.constant {slin.per_part} 0 : index
  return
}

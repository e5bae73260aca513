// The runtime context is a type, not an argument attribute: the slin dialect
// defines no argument attributes, so IR that still marks a pointer
// `{slin.context}` is refused instead of running on the default context.
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

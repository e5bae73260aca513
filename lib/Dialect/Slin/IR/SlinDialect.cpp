//===- SlinDialect.cpp - slin dialect ---------------------------*- C++ -*-===//
//
// Registers the `slin` dialect's operations, attributes and types.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Dialect/Slin/IR/SlinDialect.h"
#include "splitlinear/Dialect/Slin/IR/SlinOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::slin;

#include "splitlinear/Dialect/Slin/IR/SlinDialect.cpp.inc"
#include "splitlinear/Dialect/Slin/IR/SlinEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "splitlinear/Dialect/Slin/IR/SlinAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "splitlinear/Dialect/Slin/IR/SlinTypes.cpp.inc"

void SlinDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "splitlinear/Dialect/Slin/IR/SlinOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "splitlinear/Dialect/Slin/IR/SlinAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "splitlinear/Dialect/Slin/IR/SlinTypes.cpp.inc"
      >();
}

/// Refuses every discardable `slin.*` attribute on an operation: the dialect
/// defines none (temporaries are `slin.alloc`/`slin.dealloc`, the strategy
/// and epilogue are inherent attributes).
LogicalResult SlinDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  InFlightDiagnostic diag = op->emitOpError()
                            << "has the attribute '"
                            << attribute.getName().getValue()
                            << "', but the slin dialect defines no "
                               "discardable attributes";
  if (attribute.getName() == "slin.buffer")
    diag.attachNote() << "a temporary from the runtime's allocator is "
                         "'slin.alloc' / 'slin.dealloc'";
  return diag;
}

/// Refuses every `slin.*` attribute on a region argument: the dialect
/// defines none, and one the verifier let pass would mean nothing.
LogicalResult SlinDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attribute) {
  InFlightDiagnostic diag = op->emitOpError()
                            << "argument #" << argIndex << " of region #"
                            << regionIndex << " has the attribute '"
                            << attribute.getName().getValue()
                            << "', but the slin dialect defines no argument "
                               "attributes";
  if (attribute.getName() == "slin.context")
    diag.attachNote() << "the runtime context is an argument of type "
                      << ContextType::get(getContext());
  return diag;
}

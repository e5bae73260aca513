//===- SlinDialect.cpp - slin dialect ---------------------------*- C++ -*-===//
//
// Registers the `slin` dialect's operations and attributes.
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

void SlinDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "splitlinear/Dialect/Slin/IR/SlinOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "splitlinear/Dialect/Slin/IR/SlinAttrs.cpp.inc"
      >();
}

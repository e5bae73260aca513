//===- SlinOps.h - slin dialect operations ----------------------*- C++ -*-===//
//
// Declares the operations of the `slin` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_DIALECT_SLIN_IR_SLINOPS_H
#define SPLITLINEAR_DIALECT_SLIN_IR_SLINOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "splitlinear/Dialect/Slin/IR/SlinDialect.h"

#define GET_OP_CLASSES
#include "splitlinear/Dialect/Slin/IR/SlinOps.h.inc"

#endif // SPLITLINEAR_DIALECT_SLIN_IR_SLINOPS_H

//===- SlinDialect.h - slin dialect -----------------------------*- C++ -*-===//
//
// Declares the `slin` dialect class, its attributes and its types.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_DIALECT_SLIN_IR_SLINDIALECT_H
#define SPLITLINEAR_DIALECT_SLIN_IR_SLINDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Dialect.h"

#include "splitlinear/Dialect/Slin/IR/SlinDialect.h.inc"
#include "splitlinear/Dialect/Slin/IR/SlinEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "splitlinear/Dialect/Slin/IR/SlinAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "splitlinear/Dialect/Slin/IR/SlinTypes.h.inc"

#endif // SPLITLINEAR_DIALECT_SLIN_IR_SLINDIALECT_H

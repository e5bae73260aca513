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

namespace mlir {
namespace slin {
/// Name of the unit attribute that marks a memref.alloc / memref.dealloc
/// created by the slin passes: a temporary buffer (a materializing concat)
/// that the conversion allocates through the runtime (device memory on
/// CUDA, the caller's allocator), unlike the program's own allocations.
inline constexpr llvm::StringLiteral kRuntimeBufferAttrName = "slin.buffer";

/// Marks `op` (a memref.alloc or memref.dealloc) as a runtime buffer.
inline void markRuntimeBuffer(Operation *op) {
  op->setAttr(kRuntimeBufferAttrName, UnitAttr::get(op->getContext()));
}
} // namespace slin
} // namespace mlir

#endif // SPLITLINEAR_DIALECT_SLIN_IR_SLINDIALECT_H

//===- ArithUtils.h - mlir::ArithBuilder with what it lacks -----*- C++ -*-===//
//
// Extends upstream `mlir::ArithBuilder` (mlir/Dialect/Arith/Utils/Utils.h)
// with the constants, integer comparisons and boolean operations that the
// conversion to the runtime needs for its index and i1 arithmetic (checks on
// memref metadata, allocation sizes) and that upstream does not provide.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_DIALECT_SLIN_UTILS_ARITHUTILS_H
#define SPLITLINEAR_DIALECT_SLIN_UTILS_ARITHUTILS_H

#include "mlir/Dialect/Arith/Utils/Utils.h"

namespace mlir {
namespace slin {

/// `mlir::ArithBuilder` (`add`, `sub`, `mul`, `select`, `sgt`, `slt`,
/// `_and`) plus `arith.constant`s, the integer comparisons `eq`, `ne` and
/// `sge`, and the boolean `_or` and `_not`. Like the upstream builder it
/// creates integer ops without overflow flags. Each call creates its ops at
/// the builder's insertion point, so one call per statement keeps the order
/// of the IR independent of C++ argument evaluation order.
class ExtendedArithBuilder : public ArithBuilder {
public:
  ExtendedArithBuilder(OpBuilder &b, Location loc)
      : ArithBuilder(b, loc), b(b), loc(loc) {}

  /// `arith.constant v : index`.
  Value index(int64_t v);
  /// `arith.constant v : i32`.
  Value i32(int64_t v);
  /// `arith.constant v : i1`.
  Value boolean(bool v);

  /// `arith.cmpi eq, x, y`.
  Value eq(Value x, Value y);
  /// `arith.cmpi eq, x, y` with `y` an index constant.
  Value eq(Value x, int64_t y);
  /// `arith.cmpi ne, x, y` with `y` an index constant.
  Value ne(Value x, int64_t y);
  /// `arith.cmpi sge, x, y`.
  Value sge(Value x, Value y);

  /// `arith.ori x, y`.
  Value _or(Value x, Value y);
  /// `arith.xori x, true`: the negation of an i1.
  Value _not(Value x);

private:
  // mlir::ArithBuilder keeps its builder and location private.
  OpBuilder &b;
  Location loc;
};

} // namespace slin
} // namespace mlir

#endif // SPLITLINEAR_DIALECT_SLIN_UTILS_ARITHUTILS_H

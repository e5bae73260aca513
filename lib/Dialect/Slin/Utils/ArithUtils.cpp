//===- ArithUtils.cpp - mlir::ArithBuilder with what it lacks ---*- C++ -*-===//
//
// Implements slin::ExtendedArithBuilder (ArithUtils.h).
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Dialect/Slin/Utils/ArithUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::slin;

Value ExtendedArithBuilder::index(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value ExtendedArithBuilder::i32(int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
}

Value ExtendedArithBuilder::boolean(bool v) {
  return arith::ConstantIntOp::create(b, loc, b.getI1Type(), v);
}

Value ExtendedArithBuilder::eq(Value x, Value y) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y);
}

Value ExtendedArithBuilder::eq(Value x, int64_t y) { return eq(x, index(y)); }

Value ExtendedArithBuilder::ne(Value x, int64_t y) {
  Value constant = index(y);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, constant);
}

Value ExtendedArithBuilder::sge(Value x, Value y) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, x, y);
}

Value ExtendedArithBuilder::_or(Value x, Value y) {
  return arith::OrIOp::create(b, loc, x, y);
}

Value ExtendedArithBuilder::_not(Value x) {
  Value allOnes = boolean(true);
  return arith::XOrIOp::create(b, loc, x, allOnes);
}

//===- splitlinear-opt.cpp - opt-style driver for slin IR -------*- C++ -*-===//
//
// The usual MlirOptMain driver with the `slin` dialect, its passes and
// pipelines and the upstream pieces they need registered.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "splitlinear/InitAll.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  splitlinear::registerAllDialects(registry);
  splitlinear::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "splitlinear optimizer driver\n", registry));
}

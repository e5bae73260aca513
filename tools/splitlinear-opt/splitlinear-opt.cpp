//===- splitlinear-opt.cpp - opt-style driver for slin IR -------*- C++ -*-===//
//
// The usual MlirOptMain driver with the `slin` dialect, its passes and
// pipelines and the upstream pieces they need registered. The driver lives in
// the C API (`slinOptMain`), so this executable and the wheel's
// `splitlinear-opt` console script run the same code.
//
//===----------------------------------------------------------------------===//

#include "splitlinear-c/SplitLinear.h"

int main(int argc, char **argv) { return slinOptMain(argc, argv); }

//===- InitAll.cpp - register everything splitlinear uses -------*- C++ -*-===//
//
// Implements splitlinear::registerAllDialects / registerAllPasses.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/InitAll.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "splitlinear/Conversion/Passes.h"
#include "splitlinear/Dialect/Slin/IR/SlinDialect.h"
#include "splitlinear/Dialect/Slin/Transforms/Passes.h"
#include "splitlinear/Pipelines/Pipelines.h"

void splitlinear::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::slin::SlinDialect, mlir::func::FuncDialect,
                  mlir::memref::MemRefDialect, mlir::arith::ArithDialect,
                  mlir::scf::SCFDialect, mlir::cf::ControlFlowDialect,
                  mlir::index::IndexDialect, mlir::ub::UBDialect,
                  mlir::LLVM::LLVMDialect>();
  mlir::registerConvertFuncToLLVMInterface(registry);
  mlir::arith::registerConvertArithToLLVMInterface(registry);
  mlir::cf::registerConvertControlFlowToLLVMInterface(registry);
  mlir::index::registerConvertIndexToLLVMInterface(registry);
  mlir::registerConvertMemRefToLLVMInterface(registry);
  mlir::ub::registerConvertUBToLLVMInterface(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
}

void splitlinear::registerAllPasses() {
  static bool registered = [] {
    mlir::slin::registerSlinPasses();
    mlir::slin::registerSplitLinearConversionPasses();
    mlir::slin::registerConvertSlinToCuBLASLtAlias();
    mlir::slin::registerSplitLinearPipelines();
    // Upstream passes the pipeline is made of, so `-pass-pipeline` strings
    // and repro commands can name each step.
    mlir::registerTransformsPasses();
    mlir::memref::registerMemRefPasses();
    mlir::registerConvertFuncToLLVMPass();
    mlir::registerFinalizeMemRefToLLVMConversionPass();
    mlir::registerSCFToControlFlowPass();
    mlir::registerConvertToLLVMPass();
    mlir::registerReconcileUnrealizedCastsPass();
    mlir::registerArithToLLVMConversionPass();
    mlir::registerConvertControlFlowToLLVMPass();
    mlir::registerConvertIndexToLLVMPass();
    return true;
  }();
  (void)registered;
}

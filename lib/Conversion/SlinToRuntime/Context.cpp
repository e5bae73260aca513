//===- Context.cpp - the runtime context and its lowering -------*- C++ -*-===//
//
// Every runtime call takes the function's runtime context: its
// `!slin.context` argument, or `slinrt_default_context()`. The calls take it
// as `!llvm.ptr`; getRuntimeContext finds or makes that pointer, and
// convertSlinContextToLLVMPointer, the second step of the conversion, lowers
// `!slin.context` itself to `!llvm.ptr` (function signatures, calls,
// returns), so a compiled kernel's C interface takes the `slinrt_context *`
// where its IR has the `!slin.context`.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "splitlinear/Conversion/SlinToRuntime/SlinToRuntime.h"
#include "splitlinear/Dialect/Slin/IR/SlinOps.h"

#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::slin;
using namespace mlir::slin::detail;

/// The plain C function that returns the process-wide CPU context.
static constexpr StringLiteral kDefaultContextFn = "slinrt_default_context";

/// The `!slin.context` argument of `func`: null when it has none, failure
/// when it has more than one.
static FailureOr<BlockArgument> getContextArgument(func::FuncOp func) {
  BlockArgument context;
  for (BlockArgument arg : func.getArguments()) {
    if (!isa<ContextType>(arg.getType()))
      continue;
    if (context)
      return failure();
    context = arg;
  }
  return context;
}

/// Looks at the first op of the entry block for a context made by an earlier
/// call (a cast of the argument, or a `slinrt_default_context()` call).
FailureOr<Value> slin::detail::getRuntimeContext(RewriterBase &rewriter,
                                                 Operation *op) {
  auto func = op->getParentOfType<func::FuncOp>();
  if (!func || func.isExternal())
    return failure();
  FailureOr<BlockArgument> argument = getContextArgument(func);
  if (failed(argument))
    return failure();
  Type ptrType = LLVM::LLVMPointerType::get(op->getContext());
  Block &entry = func.getBody().front();
  if (BlockArgument context = *argument) {
    if (!entry.empty())
      if (auto cast = dyn_cast<UnrealizedConversionCastOp>(entry.front()))
        if (cast->getNumOperands() == 1 && cast->getOperand(0) == context &&
            cast.getResultTypes() == TypeRange{ptrType})
          return cast.getResult(0);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(&entry);
    return UnrealizedConversionCastOp::create(rewriter, func.getLoc(), ptrType,
                                              ValueRange{context})
        .getResult(0);
  }
  // Reuse an earlier call, if it returns the pointer (a declaration of
  // another type is refused by lookupOrDeclare below).
  if (!entry.empty())
    if (auto call = dyn_cast<func::CallOp>(entry.front()))
      if (call.getCallee() == kDefaultContextFn && !call->getNumOperands() &&
          call->getResultTypes() == TypeRange{ptrType})
        return call.getResult(0);
  FailureOr<func::FuncOp> callee =
      lookupOrDeclare(rewriter, op, kDefaultContextFn,
                      FunctionType::get(op->getContext(), {}, {ptrType}),
                      /*cInterface=*/false);
  if (failed(callee))
    return failure();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(&entry);
  return func::CallOp::create(rewriter, func.getLoc(), *callee, ValueRange{})
      .getResult(0);
}

namespace {

/// `unrealized_conversion_cast %ctx : !slin.context to !llvm.ptr` (made by
/// getRuntimeContext) → the lowered `%ctx`, once the type converter has made
/// it a pointer; likewise a cast of a pointer to `!slin.context`.
struct FoldContextCast : OpConversionPattern<UnrealizedConversionCastOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(UnrealizedConversionCastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op->getNumOperands() != 1 || op->getNumResults() != 1)
      return rewriter.notifyMatchFailure(op, "not a cast of one value");
    Value lowered = adaptor.getInputs().front();
    if (lowered.getType() !=
        getTypeConverter()->convertType(op.getResult(0).getType()))
      return rewriter.notifyMatchFailure(
          op, "the lowered operand does not have the lowered result type");
    rewriter.replaceOp(op, lowered);
    return success();
  }
};

} // namespace

LogicalResult mlir::slin::convertSlinContextToLLVMPointer(Operation *root) {
  MLIRContext *ctx = root->getContext();
  TypeConverter converter;
  converter.addConversion([](Type type) { return type; });
  converter.addConversion([](ContextType type) -> Type {
    return LLVM::LLVMPointerType::get(type.getContext());
  });

  ConversionTarget target(*ctx);
  target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp func) {
    return converter.isSignatureLegal(func.getFunctionType()) &&
           converter.isLegal(&func.getBody());
  });
  // Any other op with a context operand or result (an scf.if yielding one,
  // a branch passing one to a block) has no lowering: the conversion fails.
  target.markUnknownOpDynamicallyLegal(
      [&](Operation *op) { return converter.isLegal(op); });

  RewritePatternSet patterns(ctx);
  populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                 converter);
  populateCallOpTypeConversionPattern(patterns, converter);
  populateReturnOpTypeConversionPattern(patterns, converter);
  patterns.add<FoldContextCast>(converter, ctx);
  ConversionConfig config;
  config.foldingMode = DialectConversionFoldingMode::Never;
  return applyPartialConversion(root, target, std::move(patterns), config);
}

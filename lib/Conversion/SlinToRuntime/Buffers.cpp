//===- Buffers.cpp - slin.alloc/dealloc to runtime buffers ------*- C++ -*-===//
//
// Lowers the temporary buffers that the slin passes allocate: `slin.alloc`
// becomes `slinrt_<target>_alloc`, an i8 buffer from the context's allocator
// (device memory on CUDA) typed with `memref.view`, and `slin.dealloc`
// becomes `slinrt_<target>_free` of the buffer's address. The size in bytes
// is checked for overflow, so that a wrapped product never allocates less
// than the memref it backs.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "splitlinear/Dialect/Slin/IR/SlinOps.h"
#include "splitlinear/Dialect/Slin/Utils/ArithUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/MathExtras.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::slin;
using namespace mlir::slin::detail;

namespace {

/// The argument of `slinrt_<target>_alloc` for `op`: the buffer's size in
/// bytes, as an i64. Fails (building nothing) when the static size in bytes
/// overflows int64.
FailureOr<Value> runtimeBufferArgument(AllocOp op, AllocOp::Adaptor adaptor,
                                       ConversionPatternRewriter &rewriter) {
  MemRefType type = op.getType();
  int64_t staticBytes = elementBytes(type.getElementType());
  for (int64_t size : type.getShape())
    if (!ShapedType::isDynamic(size) &&
        llvm::MulOverflow(staticBytes, size, staticBytes))
      return rewriter.notifyMatchFailure(op, "size in bytes overflows int64");
  Location loc = op.getLoc();
  ExtendedArithBuilder ab(rewriter, loc);
  // Each dynamic factor is checked: a wrapped product would allocate less
  // than the memref it backs. Overflow (unsigned: bytes · size / size !=
  // bytes) asks for -1 bytes, which the runtime refuses with
  // SLINRT_ERROR_INVALID_ARGUMENT; so does a product past INT64_MAX.
  Value bytes = ab.index(staticBytes);
  Value overflow = ab.boolean(false);
  for (Value size : adaptor.getDynamicSizes()) {
    Value product = ab.mul(bytes, size);
    Value isZero = ab.eq(size, 0);
    Value one = ab.index(1);
    Value divisor = ab.select(isZero, one, size);
    Value quotient = arith::DivUIOp::create(rewriter, loc, product, divisor);
    // One statement per op: the IR must not depend on the compiler's
    // argument evaluation order.
    Value same = ab.eq(quotient, bytes);
    Value changed = ab._not(same);
    Value nonZero = ab._not(isZero);
    Value wrapped = ab._and(nonZero, changed);
    overflow = ab._or(overflow, wrapped);
    bytes = product;
  }
  if (!adaptor.getDynamicSizes().empty()) {
    Value minusOne = ab.index(-1);
    bytes = ab.select(overflow, minusOne, bytes);
  }
  return arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), bytes)
      .getResult();
}

/// The argument of `slinrt_<target>_free` for `op`: the buffer's aligned
/// address (that of the allocation, which the typed view the alloc lowering
/// makes and any view of it share), as an i64.
FailureOr<Value> runtimeBufferArgument(DeallocOp op, DeallocOp::Adaptor adaptor,
                                       ConversionPatternRewriter &rewriter) {
  Location loc = op.getLoc();
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(
      rewriter, loc, adaptor.getMemref());
  return arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                    address)
      .getResult();
}

/// Replaces `op` by what its runtime call returns: the call's i8 buffer typed
/// as the result with `memref.view`.
void replaceByRuntimeCall(AllocOp op, AllocOp::Adaptor adaptor,
                          func::CallOp call,
                          ConversionPatternRewriter &rewriter) {
  ExtendedArithBuilder ab(rewriter, op.getLoc());
  rewriter.replaceOpWithNewOp<memref::ViewOp>(op, op.getType(),
                                              call.getResult(0), ab.index(0),
                                              adaptor.getDynamicSizes());
}

/// Erases `op`: `slinrt_<target>_free` returns nothing.
void replaceByRuntimeCall(DeallocOp op, DeallocOp::Adaptor, func::CallOp,
                          ConversionPatternRewriter &rewriter) {
  rewriter.eraseOp(op);
}

/// `slin.alloc` → `slinrt_<target>_alloc(ctx, bytes)`, an i8 buffer from the
/// context's allocator (device memory on CUDA, 256-byte aligned), typed with
/// `memref.view`; `slin.dealloc` → `slinrt_<target>_free(ctx, address)`. The
/// two differ only in the call's argument and result (the overloads above).
template <typename OpTy>
struct RuntimeBufferToCall : RuntimeCallPattern<OpTy> {
  using RuntimeCallPattern<OpTy>::RuntimeCallPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<Value> argument = runtimeBufferArgument(op, adaptor, rewriter);
    if (failed(argument))
      return failure();
    FailureOr<Value> context = getRuntimeContext(rewriter, op);
    if (failed(context))
      return rewriter.notifyMatchFailure(op, "no runtime context available");
    constexpr bool isFree = std::is_same_v<OpTy, DeallocOp>;
    SmallVector<Type, 1> results;
    if (!isFree)
      results.push_back(
          MemRefType::get({ShapedType::kDynamic}, rewriter.getIntegerType(8)));
    StringRef name = allocCallee(this->target, isFree);
    FailureOr<func::CallOp> call =
        callRuntime(rewriter, op, name, {*context, *argument}, results);
    if (failed(call))
      return failure();
    replaceByRuntimeCall(op, adaptor, *call, rewriter);
    return success();
  }
};

} // namespace

void slin::detail::populateBufferPatterns(RewritePatternSet &patterns,
                                          RuntimeTarget target) {
  patterns.add<RuntimeBufferToCall<AllocOp>, RuntimeBufferToCall<DeallocOp>>(
      patterns.getContext(), target);
}

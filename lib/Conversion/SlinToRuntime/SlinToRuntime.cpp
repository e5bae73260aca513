//===- SlinToRuntime.cpp - slin ops to runtime calls -----------*- C++ -*-===//
//
// Implements `convert-slin-to-runtime`: the last step out of the `slin`
// dialect. `slin.gemm` and `slin.concat` become `func.call`s of the runtime's
// C-interface entry points (include/splitlinear/Runtime/Runtime.h), the
// temporary buffers the slin passes allocate (`slin.alloc` / `slin.dealloc`)
// come from the runtime's allocator, and `slin.is_adjacent` /
// `slin.view_concat` become memref metadata arithmetic. Every runtime call
// takes the function's runtime context: its `!slin.context` argument, or
// `slinrt_default_context()`. The runtime calls take the context as
// `!llvm.ptr`; a second step lowers `!slin.context` itself to `!llvm.ptr`
// (function signatures, calls, returns), so a compiled kernel's C interface
// takes the `slinrt_context *` where its IR has the `!slin.context`.
//
// Memref operands are cast to fully dynamic strided types first, so that one
// declaration per entry point serves every call site; the declarations carry
// `llvm.emit_c_interface`, which makes the LLVM lowering call
// `_mlir_ciface_<name>` with pointers to memref descriptors.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Conversion/SlinToRuntime/SlinToRuntime.h"
#include "splitlinear/Dialect/Slin/IR/SlinOps.h"
#include "splitlinear/Dialect/Slin/Utils/ArithUtils.h"
#include "splitlinear/Dialect/Slin/Utils/Utils.h"
#include "splitlinear/Runtime/Runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/MathExtras.h"

namespace mlir {
namespace slin {
#define GEN_PASS_DEF_CONVERTSLINTORUNTIME
#include "splitlinear/Conversion/Passes.h.inc"
} // namespace slin
} // namespace mlir

using namespace mlir;
using namespace mlir::slin;

namespace {

/// The plain C function that returns the process-wide CPU context.
constexpr StringLiteral kDefaultContextFn = "slinrt_default_context";
/// The plain C function that decides the `auto` strategy at run time.
constexpr StringLiteral kPreferPerPartFn = "slinrt_prefer_per_part";

//===----------------------------------------------------------------------===//
// Helpers: types, declarations, the context
//===----------------------------------------------------------------------===//

// The epilogue operand of a GEMM entry point is the dialect's Epilogue value.
static_assert(static_cast<int>(Epilogue::none) == SLINRT_EPILOGUE_NONE &&
                  static_cast<int>(Epilogue::bias) == SLINRT_EPILOGUE_BIAS &&
                  static_cast<int>(Epilogue::bias_grad) ==
                      SLINRT_EPILOGUE_BIAS_GRAD &&
                  static_cast<int>(Epilogue::accumulate) ==
                      SLINRT_EPILOGUE_ACCUMULATE,
              "slin::Epilogue and slinrt_epilogue must agree");

/// The runtime's name of an element type (`f32`, `f16`, `bf16`, `f64`, from
/// RuntimeEntryPoints.def), or "" for a type it has no entry points for.
StringRef dtypeSuffix(Type type) {
  std::optional<slinrt_dtype> dtype;
  if (type.isF32())
    dtype = SLINRT_F32;
  else if (type.isF16())
    dtype = SLINRT_F16;
  else if (type.isBF16())
    dtype = SLINRT_BF16;
  else if (type.isF64())
    dtype = SLINRT_F64;
#define SLINRT_DTYPE(T, ENUM)                                                  \
  if (dtype == ENUM)                                                           \
    return #T;
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
  return "";
}

// The names of the runtime's entry points, spelled by RuntimeEntryPoints.def
// (the list Runtime.h declares and the runtime defines); "" for a name it
// does not have.

/// `slinrt_<target>_gemm_<dtype>`.
StringRef gemmCallee(RuntimeTarget target, StringRef dtype) {
#define SLINRT_DTYPE(T, ENUM)                                                  \
  if (dtype == #T)                                                             \
    return target == RuntimeTarget::cuda ? "slinrt_cuda_gemm_" #T              \
                                         : "slinrt_cpu_gemm_" #T;
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
  return "";
}

/// `slinrt_<target>_copy{1,2}d_<src>_<dst>`.
StringRef copyCallee(RuntimeTarget target, int64_t rank, StringRef src,
                     StringRef dst) {
  bool cuda = target == RuntimeTarget::cuda;
#define SLINRT_DTYPE_PAIR(S, T)                                                \
  if (src == #S && dst == #T) {                                                \
    if (rank == 1)                                                             \
      return cuda ? "slinrt_cuda_copy1d_" #S "_" #T                            \
                  : "slinrt_cpu_copy1d_" #S "_" #T;                            \
    return cuda ? "slinrt_cuda_copy2d_" #S "_" #T                              \
                : "slinrt_cpu_copy2d_" #S "_" #T;                              \
  }
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
  return "";
}

/// `slinrt_<target>_alloc` (`free`: `slinrt_<target>_free`).
StringRef allocCallee(RuntimeTarget target, bool free) {
#define SLINRT_TARGET(TGT)                                                     \
  if (target == RuntimeTarget::TGT)                                            \
    return free ? "slinrt_" #TGT "_free" : "slinrt_" #TGT "_alloc";
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
  return "";
}

/// `memref<?x?xT, strided<[?, ?], offset: ?>>` (or its rank-1 analogue): the
/// parameter type of the runtime declarations, to which any strided memref
/// of that rank and element type can be cast.
MemRefType dynamicStridedType(Type elementType, int64_t rank) {
  SmallVector<int64_t> dynamic(rank, ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(elementType.getContext(),
                                       ShapedType::kDynamic, dynamic);
  return MemRefType::get(dynamic, elementType, layout);
}

/// Casts `value` (a memref) to dynamicStridedType, or fails when its layout
/// is not strided or it lives in a non-default memory space.
FailureOr<Value> castToDynamic(OpBuilder &builder, Location loc, Value value) {
  auto type = cast<MemRefType>(value.getType());
  MemRefType dynamic =
      dynamicStridedType(type.getElementType(), type.getRank());
  if (type == dynamic)
    return value;
  if (!memref::CastOp::areCastCompatible(TypeRange{type}, TypeRange{dynamic}))
    return failure();
  return memref::CastOp::create(builder, loc, dynamic, value).getResult();
}

/// Size of one element in bytes (rounded up), or 0 for a type without a bit
/// width.
int64_t elementBytes(Type type) {
  if (!type.isIntOrFloat())
    return 0;
  return llvm::divideCeil(type.getIntOrFloatBitWidth(), 8);
}

/// Returns the function `name` of type `type` in the module around `from`,
/// declaring it (private, with `llvm.emit_c_interface` when `cInterface`) if
/// it does not exist yet. Fails if the symbol exists with another type or is
/// not a func.func.
FailureOr<func::FuncOp> lookupOrDeclare(RewriterBase &rewriter, Operation *from,
                                        StringRef name, FunctionType type,
                                        bool cInterface) {
  auto module = from->getParentOfType<ModuleOp>();
  if (!module)
    return failure();
  if (Operation *existing = module.lookupSymbol(name)) {
    auto func = dyn_cast<func::FuncOp>(existing);
    if (!func || func.getFunctionType() != type)
      return failure();
    StringRef cAttr = LLVM::LLVMDialect::getEmitCWrapperAttrName();
    if (cInterface && !func->hasAttr(cAttr))
      rewriter.modifyOpInPlace(
          func, [&] { func->setAttr(cAttr, rewriter.getUnitAttr()); });
    return func;
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(module.getBody());
  auto func = func::FuncOp::create(rewriter, module.getLoc(), name, type);
  func.setPrivate();
  if (cInterface)
    func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  rewriter.getUnitAttr());
  return func;
}

/// Emits `func.call @name(operands) : (types of operands) -> results` of a
/// C-interface runtime entry point, declaring it on first use.
FailureOr<func::CallOp> callRuntime(RewriterBase &rewriter, Operation *op,
                                    StringRef name, ValueRange operands,
                                    TypeRange results = {}) {
  auto type = FunctionType::get(op->getContext(), operands.getTypes(), results);
  FailureOr<func::FuncOp> callee =
      lookupOrDeclare(rewriter, op, name, type, /*cInterface=*/true);
  if (failed(callee))
    return failure();
  return func::CallOp::create(rewriter, op->getLoc(), *callee, operands);
}

/// The `!slin.context` argument of `func`: null when it has none, failure
/// when it has more than one.
FailureOr<BlockArgument> getContextArgument(func::FuncOp func) {
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

/// The runtime context for calls made from `op`, as the `!llvm.ptr` that the
/// runtime's entry points take: the enclosing function's `!slin.context`
/// argument through an `unrealized_conversion_cast` (which
/// convertSlinContextToLLVMPointer folds away once the argument is a
/// pointer), else the result of a `slinrt_default_context()` call. Either is
/// made at the start of the function's entry block on first use and shared
/// by the later ones.
FailureOr<Value> getRuntimeContext(RewriterBase &rewriter, Operation *op) {
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

//===----------------------------------------------------------------------===//
// slin.gemm
//===----------------------------------------------------------------------===//

/// `slin.gemm` → `slinrt_<target>_gemm_<dtype>(ctx, A, B, D, bias, transA,
/// transB, epilogue)`. Without a bias operand an empty `memref<0xT>` stands
/// in (the runtime ignores it for the `none` and `accumulate` epilogues).
struct GemmToRuntimeCall : OpConversionPattern<GemmOp> {
  GemmToRuntimeCall(MLIRContext *ctx, RuntimeTarget target)
      : OpConversionPattern(ctx), target(target) {}

  LogicalResult
  matchAndRewrite(GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type elementType = op.getA().getType().getElementType();
    StringRef dtype = dtypeSuffix(elementType);
    if (dtype.empty())
      return rewriter.notifyMatchFailure(op, "no runtime GEMM for this type");
    FailureOr<Value> context = getRuntimeContext(rewriter, op);
    if (failed(context))
      return rewriter.notifyMatchFailure(op, "no runtime context available");

    ExtendedArithBuilder ab(rewriter, loc);
    Value bias = adaptor.getBias();
    if (!bias)
      bias = memref::AllocaOp::create(rewriter, loc,
                                      MemRefType::get({0}, elementType));
    SmallVector<Value> operands{*context};
    for (Value memref :
         {adaptor.getA(), adaptor.getB(), adaptor.getD(), bias}) {
      FailureOr<Value> dynamic = castToDynamic(rewriter, loc, memref);
      if (failed(dynamic))
        return rewriter.notifyMatchFailure(
            op, "operand has a non-strided layout or a memory space");
      operands.push_back(*dynamic);
    }
    operands.push_back(ab.i32(op.getTransposeA()));
    operands.push_back(ab.i32(op.getTransposeB()));
    operands.push_back(ab.i32(static_cast<int32_t>(op.getEpilogue())));

    StringRef name = gemmCallee(target, dtype);
    if (failed(callRuntime(rewriter, op, name, operands)))
      return rewriter.notifyMatchFailure(op, "symbol '" + name +
                                                 "' exists with another type");
    rewriter.eraseOp(op);
    return success();
  }

  RuntimeTarget target;
};

//===----------------------------------------------------------------------===//
// slin.concat
//===----------------------------------------------------------------------===//

/// `slin.concat` → for each part, a subview of the destination's row block
/// `[off_i, off_i + N_i)` and one converting copy
/// `slinrt_<target>_copy{1,2}d_<src>_<dst>(ctx, part, block)`.
struct ConcatToRuntimeCopies : OpConversionPattern<ConcatOp> {
  ConcatToRuntimeCopies(MLIRContext *ctx, RuntimeTarget target)
      : OpConversionPattern(ctx), target(target) {}

  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value output = adaptor.getOutput();
    auto outputType = cast<MemRefType>(output.getType());
    StringRef dstType = dtypeSuffix(outputType.getElementType());
    if (dstType.empty())
      return rewriter.notifyMatchFailure(op, "no runtime copy to this type");
    for (Value part : adaptor.getParts())
      if (dtypeSuffix(cast<MemRefType>(part.getType()).getElementType())
              .empty())
        return rewriter.notifyMatchFailure(op, "no runtime copy of this type");
    FailureOr<Value> context = getRuntimeContext(rewriter, op);
    if (failed(context))
      return rewriter.notifyMatchFailure(op, "no runtime context available");

    // An output without elements needs no copy, and a static subview offset
    // into its empty dimension would not verify.
    if (llvm::is_contained(outputType.getShape(), 0)) {
      rewriter.eraseOp(op);
      return success();
    }
    ExtendedArithBuilder ab(rewriter, loc);
    int64_t rank = outputType.getRank();
    OpFoldResult zero = rewriter.getIndexAttr(0),
                 one = rewriter.getIndexAttr(1);
    OpFoldResult offset = zero;
    ValueRange parts = adaptor.getParts();
    for (auto [i, part] : llvm::enumerate(parts)) {
      // A statically empty part copies nothing; its block would start at the
      // end of the output, out of bounds for memref.subview.
      if (cast<MemRefType>(part.getType()).getDimSize(0) == 0)
        continue;
      OpFoldResult rows = sizeOf(rewriter, loc, part, 0);
      SmallVector<OpFoldResult> offsets{offset}, sizes{rows}, strides{one};
      if (rank == 2) {
        // Prefer a static column count from either side.
        auto partType = cast<MemRefType>(part.getType());
        Value colsFrom = partType.isDynamicDim(1) ? output : part;
        offsets.push_back(zero);
        sizes.push_back(sizeOf(rewriter, loc, colsFrom, 1));
        strides.push_back(one);
      }
      Value block = memref::SubViewOp::create(rewriter, loc, output, offsets,
                                              sizes, strides);
      FailureOr<Value> src = castToDynamic(rewriter, loc, part);
      FailureOr<Value> dst = castToDynamic(rewriter, loc, block);
      if (failed(src) || failed(dst))
        return rewriter.notifyMatchFailure(
            op, "part or output has a non-strided layout or a memory space");
      StringRef srcType =
          dtypeSuffix(cast<MemRefType>(part.getType()).getElementType());
      StringRef name = copyCallee(target, rank, srcType, dstType);
      if (failed(callRuntime(rewriter, op, name, {*context, *src, *dst})))
        return rewriter.notifyMatchFailure(
            op, "symbol '" + name + "' exists with another type");
      if (i + 1 < parts.size())
        offset = slin::addOfr(rewriter, loc, offset, rows);
    }
    rewriter.eraseOp(op);
    return success();
  }

  RuntimeTarget target;
};

//===----------------------------------------------------------------------===//
// slin.alloc / slin.dealloc
//===----------------------------------------------------------------------===//

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
struct RuntimeBufferToCall : OpConversionPattern<OpTy> {
  RuntimeBufferToCall(MLIRContext *ctx, RuntimeTarget target)
      : OpConversionPattern<OpTy>(ctx), target(target) {}

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
    StringRef name = allocCallee(target, isFree);
    FailureOr<func::CallOp> call =
        callRuntime(rewriter, op, name, {*context, *argument}, results);
    if (failed(call))
      return rewriter.notifyMatchFailure(op, "symbol '" + name +
                                                 "' exists with another type");
    replaceByRuntimeCall(op, adaptor, *call, rewriter);
    return success();
  }

  RuntimeTarget target;
};

//===----------------------------------------------------------------------===//
// slin.is_adjacent / slin.view_concat
//===----------------------------------------------------------------------===//

/// The run-time layout of one part, from memref.extract_strided_metadata
/// (`cols` and `colStride` are null for rank 1).
struct PartLayout {
  Value base, offset, rows, cols, rowStride, colStride;
};

/// Reads the layout of `part` with one memref.extract_strided_metadata.
PartLayout readLayout(OpBuilder &b, Location loc, Value part) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, part);
  PartLayout layout;
  layout.base = meta.getBaseBuffer();
  layout.offset = meta.getOffset();
  layout.rows = meta.getSizes()[0];
  layout.rowStride = meta.getStrides()[0];
  if (meta.getSizes().size() == 2) {
    layout.cols = meta.getSizes()[1];
    layout.colStride = meta.getStrides()[1];
  }
  return layout;
}

/// `slin.is_adjacent` → the predicate documented on the op, as a chain of
/// arith.andi / arith.select over each part's metadata (no control flow).
/// Running state over the non-empty parts seen so far: their base address,
/// row stride `ld`, columns `K`, first offset and the offset where the last
/// one ends. Besides the documented conditions, non-empty matrix parts must
/// have equal column counts (the verifier can only check static ones; a view
/// of parts of different widths would be meaningless).
struct IsAdjacentToMetadata : OpConversionPattern<IsAdjacentOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(IsAdjacentOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ExtendedArithBuilder ab(rewriter, loc);
    ValueRange parts = adaptor.getParts();
    Type elementType =
        cast<MemRefType>(parts.front().getType()).getElementType();
    // (2) A view cannot convert: differing element types never qualify.
    for (Value part : parts)
      if (cast<MemRefType>(part.getType()).getElementType() != elementType) {
        rewriter.replaceOp(op, ab.boolean(false));
        return success();
      }
    int64_t bytesPerElement = elementBytes(elementType);
    if (bytesPerElement == 0)
      return rewriter.notifyMatchFailure(op, "element type without a size");
    bool isMatrix = cast<MemRefType>(parts.front().getType()).getRank() == 2;

    Value ok = ab.boolean(true), seen = ab.boolean(false);
    Value zero = ab.index(0), one = ab.index(1);
    Value baseAddress = zero, firstOffset = zero, end = zero, total = zero;
    Value ld = one, cols = one;
    // Every condition below is built in its own statement so that the IR
    // does not depend on the compiler's argument evaluation order.
    for (Value part : parts) {
      PartLayout layout = readLayout(rewriter, loc, part);
      Value address =
          memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, part);
      Value nonEmpty = ab.ne(layout.rows, 0);
      Value notSeen = ab._not(seen);
      Value isFirst = ab._and(nonEmpty, notSeen);

      // (3) Contiguous within a row, one common row stride (and width).
      Value cond;
      Value newLd = one;
      if (isMatrix) {
        newLd = ab.select(isFirst, layout.rowStride, ld);
        Value newCols = ab.select(isFirst, layout.cols, cols);
        Value commonLd = ab.eq(layout.rowStride, newLd);
        Value commonCols = ab.eq(layout.cols, newCols);
        Value unitColStride = ab.eq(layout.colStride, 1);
        Value oneCol = ab.eq(layout.cols, 1);
        Value rowContiguous = ab._or(unitColStride, oneCol);
        cond = ab._and(rowContiguous, ab._and(commonLd, commonCols));
        cols = newCols;
      } else {
        Value unitStride = ab.eq(layout.rowStride, 1);
        Value oneElement = ab.eq(layout.rows, 1);
        cond = ab._or(unitStride, oneElement);
      }
      // (1) One base allocation; (4) starts where the previous part ends.
      Value equalBase = ab.eq(address, baseAddress);
      Value sameBase = ab._or(isFirst, equalBase);
      Value startsAtEnd = ab.eq(layout.offset, end);
      Value chained = ab._or(isFirst, startsAtEnd);
      cond = ab._and(cond, ab._and(sameBase, chained));
      // Empty parts impose nothing.
      Value empty = ab._not(nonEmpty);
      ok = ab._and(ok, ab._or(empty, cond));

      baseAddress = ab.select(isFirst, address, baseAddress);
      firstOffset = ab.select(isFirst, layout.offset, firstOffset);
      ld = newLd;
      Value partEnd = ab.add(layout.offset, ab.mul(layout.rows, ld));
      end = ab.select(nonEmpty, partEnd, end);
      if (isMatrix)
        total = ab.add(total, layout.rows);
      seen = ab._or(seen, nonEmpty);
    }
    // (3) Rows of the view must not overlap: ld >= K when it has two rows.
    if (isMatrix) {
      Value oneRowAtMost = ab._not(ab.sgt(total, ab.index(1)));
      Value noOverlap = ab.sge(ld, cols);
      ok = ab._and(ok, ab._or(oneRowAtMost, noOverlap));
    }
    // (5) Alignment of the view's first element (only if there is one).
    Value byteOffset = ab.mul(firstOffset, ab.index(bytesPerElement));
    Value firstByte = ab.add(baseAddress, byteOffset);
    Value misalignment = arith::RemUIOp::create(rewriter, loc, firstByte,
                                                ab.index(op.getAlignment()));
    Value aligned = ab.eq(misalignment, 0);
    Value allEmpty = ab._not(seen);
    ok = ab._and(ok, ab._or(allEmpty, aligned));
    rewriter.replaceOp(op, ok);
    return success();
  }
};

/// `slin.view_concat` → `memref.reinterpret_cast` of the first non-empty
/// part's base buffer (part 0's when all are empty) at that part's offset,
/// with `Σ N_i` rows and the common row stride.
struct ViewConcatToReinterpretCast : OpConversionPattern<ViewConcatOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ViewConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ExtendedArithBuilder ab(rewriter, loc);
    ValueRange parts = adaptor.getParts();
    MemRefType resultType = op.getType();
    bool isMatrix = resultType.getRank() == 2;

    // Running choice: the first non-empty part so far (part 0 until one is
    // found). Row stride and columns matter only for a matrix whose result
    // type leaves them dynamic.
    bool needCols = isMatrix && resultType.isDynamicDim(1);
    Value seen, base, offset, ld, cols;
    OpFoldResult total = rewriter.getIndexAttr(0);
    for (auto [i, part] : llvm::enumerate(parts)) {
      PartLayout layout = readLayout(rewriter, loc, part);
      auto partType = cast<MemRefType>(part.getType());
      total =
          slin::addOfr(rewriter, loc, total, partType.isDynamicDim(0)
                               ? OpFoldResult(layout.rows)
                               : rewriter.getIndexAttr(partType.getDimSize(0)));
      Value nonEmpty = ab.ne(layout.rows, 0);
      if (i == 0) {
        base = layout.base;
        offset = layout.offset;
        ld = layout.rowStride;
        cols = layout.cols;
        seen = nonEmpty;
        continue;
      }
      Value isFirst = ab._and(nonEmpty, ab._not(seen));
      base = ab.select(isFirst, layout.base, base);
      offset = ab.select(isFirst, layout.offset, offset);
      if (isMatrix)
        ld = ab.select(isFirst, layout.rowStride, ld);
      if (needCols)
        cols = ab.select(isFirst, layout.cols, cols);
      if (i + 1 < parts.size())
        seen = ab._or(seen, nonEmpty);
    }

    SmallVector<OpFoldResult> sizes{total}, strides;
    if (isMatrix) {
      sizes.push_back(needCols
                          ? OpFoldResult(cols)
                          : rewriter.getIndexAttr(resultType.getDimSize(1)));
      strides = {ld, rewriter.getIndexAttr(1)};
    } else {
      strides = {rewriter.getIndexAttr(1)};
    }
    SmallVector<int64_t> staticSizes, staticStrides;
    for (OpFoldResult size : sizes)
      staticSizes.push_back(
          getConstantIntValue(size).value_or(ShapedType::kDynamic));
    for (OpFoldResult stride : strides)
      staticStrides.push_back(
          getConstantIntValue(stride).value_or(ShapedType::kDynamic));
    auto viewType =
        MemRefType::get(staticSizes, resultType.getElementType(),
                        StridedLayoutAttr::get(
                            getContext(), ShapedType::kDynamic, staticStrides),
                        resultType.getMemorySpace());
    Value view = memref::ReinterpretCastOp::create(
        rewriter, loc, viewType, base, offset, sizes, strides);
    if (viewType != resultType) {
      if (!memref::CastOp::areCastCompatible(TypeRange{viewType},
                                             TypeRange{resultType}))
        return rewriter.notifyMatchFailure(op, "result type is not a strided "
                                               "type the view can be cast to");
      view = memref::CastOp::create(rewriter, loc, resultType, view);
    }
    rewriter.replaceOp(op, view);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// slin.prefer_per_part
//===----------------------------------------------------------------------===//

/// `slin.prefer_per_part` → `slinrt_prefer_per_part(ctx, rows, parts, bytes)
/// != 0`, with `bytes = Σ_i N_i · K_i · sizeof(T_i)` computed from the parts'
/// sizes: the runtime holds the cost model and the caller's threshold.
struct PreferPerPartToRuntimeCall : OpConversionPattern<PreferPerPartOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PreferPerPartOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    FailureOr<Value> context = getRuntimeContext(rewriter, op);
    if (failed(context))
      return rewriter.notifyMatchFailure(op, "no runtime context available");
    ExtendedArithBuilder ab(rewriter, loc);
    auto value = [&](OpFoldResult ofr) {
      return getValueOrCreateConstantIndexOp(rewriter, loc, ofr);
    };
    Value bytes = ab.index(0);
    for (Value part : adaptor.getWeights()) {
      auto type = cast<MemRefType>(part.getType());
      Value elements = ab.mul(value(sizeOf(rewriter, loc, part, 0)),
                              value(sizeOf(rewriter, loc, part, 1)));
      bytes = ab.add(bytes, ab.mul(elements,
                                   ab.index(elementBytes(type.getElementType()))));
    }
    Type i64 = rewriter.getI64Type();
    auto toI64 = [&](Value index) {
      return arith::IndexCastOp::create(rewriter, loc, i64, index).getResult();
    };
    SmallVector<Value> operands{
        *context, toI64(adaptor.getRows()),
        arith::ConstantIntOp::create(rewriter, loc, i64,
                                     adaptor.getWeights().size()),
        toI64(bytes)};
    Type i32 = rewriter.getI32Type();
    FailureOr<func::FuncOp> callee = lookupOrDeclare(
        rewriter, op, kPreferPerPartFn,
        FunctionType::get(op->getContext(), ValueRange(operands).getTypes(),
                          {i32}),
        /*cInterface=*/false);
    if (failed(callee))
      return rewriter.notifyMatchFailure(
          op, "symbol 'slinrt_prefer_per_part' exists with another type");
    Value answer =
        func::CallOp::create(rewriter, loc, *callee, operands).getResult(0);
    rewriter.replaceOpWithNewOp<arith::CmpIOp>(
        op, arith::CmpIPredicate::ne, answer,
        arith::ConstantIntOp::create(rewriter, loc, i32, 0));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// !slin.context
//===----------------------------------------------------------------------===//

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

void mlir::slin::populateSlinToRuntimeConversionPatterns(
    RewritePatternSet &patterns, RuntimeTarget target) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<GemmToRuntimeCall, ConcatToRuntimeCopies,
               RuntimeBufferToCall<AllocOp>, RuntimeBufferToCall<DeallocOp>>(
      ctx, target);
  patterns.add<IsAdjacentToMetadata, ViewConcatToReinterpretCast,
               PreferPerPartToRuntimeCall>(ctx);
}

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

namespace {

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertSlinToRuntimePass
    : public slin::impl::ConvertSlinToRuntimeBase<ConvertSlinToRuntimePass> {
  using Base::Base;

  /// Checks what the patterns cannot report well: ops that belong to an
  /// earlier pass, and functions with more than one runtime context.
  LogicalResult checkInput(ModuleOp module) {
    bool failedCheck = false;
    module.walk([&](Operation *op) {
      if (isa<LinearOp, LinearDgradOp>(op)) {
        op->emitError() << "'" << op->getName()
                        << "' cannot be lowered to runtime calls: run "
                           "slin-elide-concat and slin-expand-linear first";
        failedCheck = true;
      }
      auto func = dyn_cast<func::FuncOp>(op);
      if (!func || func.isExternal())
        return;
      std::optional<unsigned> first;
      for (BlockArgument arg : func.getArguments()) {
        if (!isa<ContextType>(arg.getType()))
          continue;
        if (!first) {
          first = arg.getArgNumber();
          continue;
        }
        func.emitError() << "argument #" << arg.getArgNumber()
                         << " is a second runtime context (the first is "
                            "argument #"
                         << *first << "): a function takes at most one "
                         << arg.getType() << " argument";
        failedCheck = true;
      }
    });
    return failure(failedCheck);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkInput(module)))
      return signalPassFailure();

    ConversionTarget conversionTarget(getContext());
    conversionTarget.addIllegalDialect<SlinDialect>();
    conversionTarget.markUnknownOpDynamicallyLegal(
        [](Operation *) { return true; });

    RewritePatternSet patterns(&getContext());
    populateSlinToRuntimeConversionPatterns(patterns, target);
    // No folding: the rewrite is exactly what the patterns say (a folded
    // memref.dealloc would, e.g., look through casts of the buffer).
    ConversionConfig config;
    config.foldingMode = DialectConversionFoldingMode::Never;
    if (failed(applyPartialConversion(module, conversionTarget,
                                      std::move(patterns), config)))
      return signalPassFailure();
    // Only now: the patterns above find the context by its type.
    if (failed(convertSlinContextToLLVMPointer(module)))
      return signalPassFailure();
  }
};

} // namespace

//===- RuntimeCalls.cpp - calling the runtime from the patterns -*- C++ -*-===//
//
// Implements the helpers of RuntimeCalls.h that every runtime call needs:
// the entry point names, spelled by RuntimeEntryPoints.def so that the
// compiler and the runtime cannot disagree on them, and the declarations of
// the C-interface entry points. Memref operands are cast to fully dynamic
// strided types first, so that one declaration per entry point serves every
// call site; the declarations carry `llvm.emit_c_interface`, which makes the
// LLVM lowering call `_mlir_ciface_<name>` with pointers to memref
// descriptors.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "splitlinear/Runtime/Runtime.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::slin;

/// The slinrt_dtype of an element type, or std::nullopt for a type the
/// runtime has no code for.
std::optional<int32_t> slin::detail::dtypeCode(Type type) {
  if (type.isF32())
    return SLINRT_F32;
  if (type.isF16())
    return SLINRT_F16;
  if (type.isBF16())
    return SLINRT_BF16;
  if (type.isF64())
    return SLINRT_F64;
  if (isa<Float8E4M3FNType>(type))
    return SLINRT_F8E4M3FN;
  if (isa<Float8E5M2Type>(type))
    return SLINRT_F8E5M2;
  return std::nullopt;
}

/// The runtime's name of an element type (`f32`, `f16`, `bf16`, `f64`,
/// `f8e4m3fn`, `f8e5m2`, from RuntimeEntryPoints.def), or "" for a type it
/// has no entry points for.
StringRef slin::detail::dtypeSuffix(Type type) {
  std::optional<int32_t> dtype = dtypeCode(type);
#define SLINRT_DTYPE(T, ENUM)                                                  \
  if (dtype == ENUM)                                                           \
    return #T;
#define SLINRT_FP8_DTYPE(T, ENUM)                                              \
  if (dtype == ENUM)                                                           \
    return #T;
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
  return "";
}

// `return "slinrt_<target>_" STEM;`, STEM a string literal: the one place
// that spells the target into an entry point name (the literals stay static,
// so the callee builders return StringRefs).
#define SLINRT_RETURN_CALLEE(STEM)                                             \
  return target == RuntimeTarget::cuda ? "slinrt_cuda_" STEM                   \
                                       : "slinrt_cpu_" STEM;

/// `slinrt_<target>_gemm_<dtype>`.
StringRef slin::detail::gemmCallee(RuntimeTarget target, StringRef dtype) {
#define SLINRT_DTYPE(T, ENUM)                                                  \
  if (dtype == #T)                                                             \
    SLINRT_RETURN_CALLEE("gemm_" #T)
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
  return "";
}

/// `slinrt_<target>_copy{1,2}d_<src>_<dst>` (FP8: only `src == dst`).
StringRef slin::detail::copyCallee(RuntimeTarget target, int64_t rank,
                                   StringRef src, StringRef dst) {
#define SLINRT_DTYPE_PAIR(S, T)                                                \
  if (src == #S && dst == #T) {                                                \
    if (rank == 1)                                                             \
      SLINRT_RETURN_CALLEE("copy1d_" #S "_" #T)                                \
    SLINRT_RETURN_CALLEE("copy2d_" #S "_" #T)                                  \
  }
#define SLINRT_FP8_DTYPE(T, ENUM) SLINRT_DTYPE_PAIR(T, T)
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
  return "";
}

/// `slinrt_<target>_scaled_gemm_<out>`.
StringRef slin::detail::scaledGemmCallee(RuntimeTarget target, StringRef out) {
#define SLINRT_SCALED_OUT_DTYPE(T, ENUM)                                       \
  if (out == #T)                                                               \
    SLINRT_RETURN_CALLEE("scaled_gemm_" #T)
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
  return "";
}

#undef SLINRT_RETURN_CALLEE

/// `slinrt_<target>_alloc` (`free`: `slinrt_<target>_free`).
StringRef slin::detail::allocCallee(RuntimeTarget target, bool free) {
#define SLINRT_TARGET(TGT)                                                     \
  if (target == RuntimeTarget::TGT)                                            \
    return free ? "slinrt_" #TGT "_free" : "slinrt_" #TGT "_alloc";
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
  return "";
}

/// `memref<?x?xT, strided<[?, ?], offset: ?>>` (or its rank-1 analogue): the
/// parameter type of the runtime declarations, to which any strided memref
/// of that rank and element type can be cast.
static MemRefType dynamicStridedType(Type elementType, int64_t rank) {
  SmallVector<int64_t> dynamic(rank, ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(elementType.getContext(),
                                       ShapedType::kDynamic, dynamic);
  return MemRefType::get(dynamic, elementType, layout);
}

/// Casts `value` (a memref) to dynamicStridedType, or fails when its layout
/// is not strided or it lives in a non-default memory space.
FailureOr<Value> slin::detail::castToDynamic(OpBuilder &builder, Location loc,
                                             Value value) {
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
int64_t slin::detail::elementBytes(Type type) {
  if (!type.isIntOrFloat())
    return 0;
  return llvm::divideCeil(type.getIntOrFloatBitWidth(), 8);
}

/// Returns the function `name` of type `type` in the module around `from`,
/// declaring it (private, with `llvm.emit_c_interface` when `cInterface`) if
/// it does not exist yet. Fails if the symbol exists with another type or is
/// not a func.func.
FailureOr<func::FuncOp> slin::detail::lookupOrDeclare(RewriterBase &rewriter,
                                                      Operation *from,
                                                      StringRef name,
                                                      FunctionType type,
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
/// C-interface runtime entry point, declaring it on first use. Fails (a
/// match failure on `op`) when the symbol exists with another type.
FailureOr<func::CallOp> slin::detail::callRuntime(RewriterBase &rewriter,
                                                  Operation *op, StringRef name,
                                                  ValueRange operands,
                                                  TypeRange results) {
  auto type = FunctionType::get(op->getContext(), operands.getTypes(), results);
  FailureOr<func::FuncOp> callee =
      lookupOrDeclare(rewriter, op, name, type, /*cInterface=*/true);
  if (failed(callee))
    return rewriter.notifyMatchFailure(op, "symbol '" + name +
                                               "' exists with another type");
  return func::CallOp::create(rewriter, op->getLoc(), *callee, operands);
}

/// The runtime context, then `memrefs` cast to dynamic strided types, an
/// empty `memref<0 x emptyType>` for each null one (made before the casts).
FailureOr<SmallVector<Value>>
slin::detail::contextAndMemrefs(RewriterBase &rewriter, Operation *op,
                                ArrayRef<Value> memrefs, Type emptyType) {
  FailureOr<Value> context = getRuntimeContext(rewriter, op);
  if (failed(context))
    return rewriter.notifyMatchFailure(op, "no runtime context available");
  Location loc = op->getLoc();
  SmallVector<Value> present(memrefs);
  for (Value &memref : present)
    if (!memref)
      memref = memref::AllocaOp::create(rewriter, loc,
                                        MemRefType::get({0}, emptyType));
  SmallVector<Value> operands{*context};
  for (Value memref : present) {
    FailureOr<Value> dynamic = castToDynamic(rewriter, loc, memref);
    if (failed(dynamic))
      return rewriter.notifyMatchFailure(
          op, "operand has a non-strided layout or a memory space");
    operands.push_back(*dynamic);
  }
  return operands;
}

//===- KernelBuilder.cpp - slin IR of the torch op's kernels ----*- C++ -*-===//
//
// The one producer of kernel IR: builds, with MLIR builders, the `slin`
// function that the torch op (and anything else asking for a kernel of a
// signature) compiles. Dims are dynamic and layouts fully strided, so one
// kernel serves every shape and storage layout of its signature; whether the
// parts are adjacent is decided inside by the checked view, and how parts
// that are not are combined by the runtime (strategy `auto`). FPROP, DGRAD
// and SCALED_FPROP (FP8) kernels return the path they took.
//
// Three steps: check the spec, derive the kernel's argument types, build
// the body (one slin op).
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Kernels/KernelBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "splitlinear/Dialect/Slin/IR/SlinOps.h"

using namespace mlir;
using splitlinear::KernelKind;
using splitlinear::KernelSpec;

namespace {

/// The MLIR element type of a runtime dtype, or failure for a value outside
/// the enum.
FailureOr<Type> elementTypeOf(MLIRContext *ctx, slinrt_dtype dtype) {
  switch (dtype) {
  case SLINRT_F32:
    return Type(Float32Type::get(ctx));
  case SLINRT_F16:
    return Type(Float16Type::get(ctx));
  case SLINRT_BF16:
    return Type(BFloat16Type::get(ctx));
  case SLINRT_F64:
    return Type(Float64Type::get(ctx));
  case SLINRT_F8E4M3FN:
    return Type(Float8E4M3FNType::get(ctx));
  case SLINRT_F8E5M2:
    return Type(Float8E5M2Type::get(ctx));
  }
  return failure();
}

bool isFP8(slinrt_dtype dtype) {
  return dtype == SLINRT_F8E4M3FN || dtype == SLINRT_F8E5M2;
}

/// Checks the fields only a ScaledFprop kernel has, and its dtypes.
LogicalResult checkScaledSpec(const KernelSpec &spec,
                              function_ref<LogicalResult(const Twine &)> fail) {
  if (!isFP8(spec.inputDtype))
    return fail("a scaled_fprop kernel needs an FP8 input dtype (4 = "
                "f8e4m3fn, 5 = f8e5m2), got " +
                Twine(static_cast<int>(spec.inputDtype)));
  slinrt_dtype weight = spec.weightPartDtypes.front();
  for (auto [i, dtype] : llvm::enumerate(spec.weightPartDtypes)) {
    if (!isFP8(dtype))
      return fail("weight part #" + Twine(i) +
                  " of a scaled_fprop kernel needs an FP8 dtype (4 = "
                  "f8e4m3fn, 5 = f8e5m2), got " +
                  Twine(static_cast<int>(dtype)));
    if (dtype != weight)
      return fail("weight part #" + Twine(i) + " has dtype " +
                  Twine(static_cast<int>(dtype)) + ", part #0 " +
                  Twine(static_cast<int>(weight)) +
                  ": the parts share one FP8 type");
  }
  if (spec.inputDtype == SLINRT_F8E5M2 && weight == SLINRT_F8E5M2)
    return fail("input and weight parts are both f8e5m2: e5m2 x e5m2 is not "
                "supported (one of them must be f8e4m3fn)");
  if (spec.dtype != SLINRT_F32 && spec.dtype != SLINRT_F16 &&
      spec.dtype != SLINRT_BF16)
    return fail("the output dtype of a scaled_fprop kernel must be f32 (0), "
                "f16 (1) or bf16 (2), got " +
                Twine(static_cast<int>(spec.dtype)));
  for (auto [i, dtype] : llvm::enumerate(spec.biasPartDtypes))
    if (dtype != spec.dtype)
      return fail("bias part #" + Twine(i) + " has dtype " +
                  Twine(static_cast<int>(dtype)) +
                  ", expected the output dtype " +
                  Twine(static_cast<int>(spec.dtype)));
  if (spec.scaling != SLINRT_SCALING_TENSORWISE &&
      spec.scaling != SLINRT_SCALING_OUTER_VECTOR)
    return fail("invalid scaling " + Twine(static_cast<int>(spec.scaling)) +
                " (0 = tensorwise, 1 = outer_vector)");
  if (spec.scaling == SLINRT_SCALING_TENSORWISE && spec.numWeightParts() > 1)
    return fail("tensorwise scaling with " + Twine(spec.numWeightParts()) +
                " weight parts: parts with their own scales need "
                "outer_vector");
  return success();
}

/// Checks that no dtype of a kernel other than ScaledFprop is FP8: only the
/// scaled GEMM computes on FP8.
LogicalResult checkNoFP8(const KernelSpec &spec,
                         function_ref<LogicalResult(const Twine &)> fail) {
  auto check = [&](slinrt_dtype dtype, const Twine &what) {
    if (isFP8(dtype))
      return fail(what + " has the FP8 dtype " +
                  Twine(static_cast<int>(dtype)) +
                  ": only a scaled_fprop kernel takes FP8 operands");
    return success();
  };
  if (failed(check(spec.dtype, "the kernel")))
    return failure();
  for (auto [i, dtype] : llvm::enumerate(spec.weightPartDtypes))
    if (failed(check(dtype, "weight part #" + Twine(i))))
      return failure();
  for (auto [i, dtype] : llvm::enumerate(spec.biasPartDtypes))
    if (failed(check(dtype, "bias part #" + Twine(i))))
      return failure();
  return success();
}

/// `memref<?x?xT, strided<[?, ?], offset: ?>>` (or rank 1).
MemRefType stridedType(Type elementType, int64_t rank) {
  SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
  SmallVector<int64_t> strides(rank, ShapedType::kDynamic);
  return MemRefType::get(
      shape, elementType,
      StridedLayoutAttr::get(elementType.getContext(), ShapedType::kDynamic,
                             strides));
}

/// Checks the fields of `spec` that do not depend on a context: part counts
/// per kind, the bias, the target, the alignment, and which kinds take FP8
/// (ScaledFprop's own fields: checkScaledSpec).
LogicalResult checkSpec(const KernelSpec &spec, std::string &error) {
  auto fail = [&](const Twine &message) {
    error = message.str();
    return failure();
  };
  int64_t parts = spec.numWeightParts();
  switch (spec.kind) {
  case KernelKind::Fprop:
  case KernelKind::Dgrad:
  case KernelKind::ScaledFprop:
    if (parts < 1)
      return fail("a kernel needs at least one weight part, got " +
                  Twine(parts));
    break;
  case KernelKind::Wgrad:
    if (parts != 0)
      return fail("a wgrad kernel takes no weight parts, got " + Twine(parts));
    break;
  default:
    return fail("invalid kernel kind " + Twine(static_cast<int>(spec.kind)));
  }
  if (spec.kind == KernelKind::Dgrad && spec.hasBias)
    return fail("a dgrad kernel has no bias");
  int64_t biasParts = static_cast<int64_t>(spec.biasPartDtypes.size());
  bool readsBias =
      spec.kind == KernelKind::Fprop || spec.kind == KernelKind::ScaledFprop;
  int64_t expectedBiasParts = readsBias && spec.hasBias ? parts : 0;
  if (biasParts != expectedBiasParts)
    return fail(Twine(biasParts) + " bias part dtypes given, expected " +
                Twine(expectedBiasParts));
  if (failed(spec.kind == KernelKind::ScaledFprop ? checkScaledSpec(spec, fail)
                                                  : checkNoFP8(spec, fail)))
    return failure();
  if (spec.target != slin::RuntimeTarget::cpu &&
      spec.target != slin::RuntimeTarget::cuda)
    return fail("invalid target " + Twine(static_cast<int>(spec.target)) +
                " (0 = cpu, 1 = cuda)");
  if (spec.viewAlignmentBytes <= 0 ||
      (spec.viewAlignmentBytes & (spec.viewAlignmentBytes - 1)))
    return fail("alignment must be a positive power of two, got " +
                Twine(spec.viewAlignmentBytes));
  return success();
}

/// Appends one strided memref of rank `rank` per entry of `dtypes` to
/// `types`; fails naming the first invalid dtype (`what` #i).
LogicalResult appendPartTypes(MLIRContext *ctx, ArrayRef<slinrt_dtype> dtypes,
                              int64_t rank, StringRef what,
                              SmallVectorImpl<Type> &types,
                              std::string &error) {
  for (auto [i, dtype] : llvm::enumerate(dtypes)) {
    FailureOr<Type> t = elementTypeOf(ctx, dtype);
    if (failed(t)) {
      error = ("invalid dtype " + Twine(static_cast<int>(dtype)) + " of " +
               what + " #" + Twine(i))
                  .str();
      return failure();
    }
    types.push_back(stridedType(*t, rank));
  }
  return success();
}

/// The argument types of `slin_kernel` for `spec` (see slinKernelBuildIR in
/// SplitLinear.h): the context, then the kind's memrefs.
FailureOr<SmallVector<Type>> kernelArgumentTypes(MLIRContext *ctx,
                                                 const KernelSpec &spec,
                                                 std::string &error) {
  FailureOr<Type> elementType = elementTypeOf(ctx, spec.dtype);
  if (failed(elementType)) {
    error = "invalid dtype " + std::to_string(static_cast<int>(spec.dtype));
    return failure();
  }
  MemRefType matrix = stridedType(*elementType, 2);
  if (spec.kind == KernelKind::ScaledFprop) {
    // x8, input_scale, w8_i..., weight_scale, [b_i...], y.
    MemRefType scale = stridedType(Float32Type::get(ctx), 1);
    SmallVector<Type> types{
        slin::ContextType::get(ctx),
        stridedType(*elementTypeOf(ctx, spec.inputDtype), 2), scale};
    if (failed(appendPartTypes(ctx, spec.weightPartDtypes, 2, "part", types,
                               error)))
      return failure();
    types.push_back(scale);
    if (failed(appendPartTypes(ctx, spec.biasPartDtypes, 1, "bias part", types,
                               error)))
      return failure();
    types.push_back(matrix);
    return types;
  }
  SmallVector<Type> types{slin::ContextType::get(ctx), matrix};
  if (failed(appendPartTypes(ctx, spec.weightPartDtypes, 2, "part", types,
                             error)) ||
      failed(appendPartTypes(ctx, spec.biasPartDtypes, 1, "bias part", types,
                             error)))
    return failure();
  if (spec.kind == KernelKind::Wgrad)
    types.push_back(matrix); // x, after dy
  types.push_back(matrix);   // the result: y, dx or dw
  if (spec.kind == KernelKind::Wgrad && spec.hasBias)
    types.push_back(stridedType(*elementType, 1)); // db
  return types;
}

/// Builds the body of `slin_kernel` over its arguments `args` (without the
/// context) and returns the path result (null for Wgrad).
Value buildKernelBody(OpBuilder &b, Location loc, const KernelSpec &spec,
                      ValueRange args) {
  int64_t n = spec.numWeightParts();
  switch (spec.kind) {
  case KernelKind::Fprop: {
    ValueRange biases = spec.hasBias ? args.slice(1 + n, n) : ValueRange{};
    return slin::LinearOp::create(b, loc, b.getI32Type(), args.front(),
                                  args.slice(1, n), biases, args.back(),
                                  slin::Strategy::automatic)
        .getPath();
  }
  case KernelKind::ScaledFprop: {
    ValueRange biases = spec.hasBias ? args.slice(3 + n, n) : ValueRange{};
    return slin::ScaledLinearOp::create(
               b, loc, b.getI32Type(), args[0], args[1], args.slice(2, n),
               args[2 + n], biases, args.back(),
               static_cast<slin::Scaling>(spec.scaling), spec.fastAccum,
               slin::Strategy::automatic)
        .getPath();
  }
  case KernelKind::Dgrad:
    return slin::LinearDgradOp::create(b, loc, b.getI32Type(), args.front(),
                                       args.slice(1, n), args.back(),
                                       slin::Strategy::automatic)
        .getPath();
  case KernelKind::Wgrad: {
    // dW = dyᵀ · x; the bias gradient is fused into the same GEMM.
    Value bias = spec.hasBias ? args[3] : Value();
    slin::GemmOp::create(b, loc, args[0], args[1], bias, args[2],
                         /*transpose_a=*/true, /*transpose_b=*/false,
                         spec.hasBias ? slin::Epilogue::bias_grad
                                      : slin::Epilogue::none);
    return Value();
  }
  }
  llvm_unreachable("checked by checkSpec");
}

} // namespace

FailureOr<OwningOpRef<ModuleOp>>
splitlinear::buildKernelModule(MLIRContext *ctx, const KernelSpec &spec,
                               std::string &error) {
  ctx->loadDialect<slin::SlinDialect, func::FuncDialect, LLVM::LLVMDialect>();
  if (failed(checkSpec(spec, error)))
    return failure();
  FailureOr<SmallVector<Type>> argTypes = kernelArgumentTypes(ctx, spec, error);
  if (failed(argTypes))
    return failure();

  OpBuilder b(ctx);
  Location loc = NameLoc::get(b.getStringAttr("slin_kernel"));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  // FPROP and DGRAD report the path they took (a slin::Path).
  SmallVector<Type> resultTypes;
  if (spec.kind != KernelKind::Wgrad)
    resultTypes.push_back(b.getI32Type());
  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(b, loc, "slin_kernel",
                                   b.getFunctionType(*argTypes, resultTypes));
  func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), b.getUnitAttr());
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);
  Value path =
      buildKernelBody(b, loc, spec, body->getArguments().drop_front());
  func::ReturnOp::create(b, loc, path ? ValueRange{path} : ValueRange{});
  if (failed(verify(*module))) {
    error = "internal error: the kernel IR does not verify";
    return failure();
  }
  return module;
}

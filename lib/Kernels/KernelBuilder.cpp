//===- KernelBuilder.cpp - slin IR of the torch op's kernels ----*- C++ -*-===//
//
// The one producer of kernel IR: builds, with MLIR builders, the `slin`
// function that the torch op (and anything else asking for a kernel of a
// signature) compiles. Dims are dynamic and layouts fully strided, so one
// kernel serves every shape and storage layout of its signature; whether the
// parts are adjacent is decided inside by the checked view, and how parts
// that are not are combined by the runtime (strategy `auto`). FPROP and DGRAD
// kernels return the path they took.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Kernels/KernelBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "mlir/IR/BuiltinOps.h"
#include "splitlinear/Dialect/Slin/IR/SlinOps.h"
#include "splitlinear/Runtime/Runtime.h"

using namespace mlir;

// The kernel returns the dialect's path; the C API names the same numbers.
static_assert(static_cast<int>(slin::Path::view) == SLIN_PATH_VIEW &&
                  static_cast<int>(slin::Path::copy) == SLIN_PATH_COPY &&
                  static_cast<int>(slin::Path::per_part) == SLIN_PATH_PER_PART,
              "slin::Path and SlinKernelPath must agree");

namespace {
FailureOr<Type> elementTypeOf(MLIRContext *ctx, int32_t dtype) {
  switch (dtype) {
  case SLINRT_F32:
    return Type(Float32Type::get(ctx));
  case SLINRT_F16:
    return Type(Float16Type::get(ctx));
  case SLINRT_BF16:
    return Type(BFloat16Type::get(ctx));
  case SLINRT_F64:
    return Type(Float64Type::get(ctx));
  default:
    return failure();
  }
}

MemRefType stridedType(Type elementType, int64_t rank) {
  SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
  SmallVector<int64_t> strides(rank, ShapedType::kDynamic);
  return MemRefType::get(
      shape, elementType,
      StridedLayoutAttr::get(elementType.getContext(), ShapedType::kDynamic,
                             strides));
}
} // namespace

FailureOr<OwningOpRef<ModuleOp>>
splitlinear::buildKernelModule(MLIRContext *ctx, const SlinKernelSpec &spec,
                               std::string &error) {
  ctx->loadDialect<slin::SlinDialect, func::FuncDialect, LLVM::LLVMDialect>();
  auto fail = [&](const Twine &message) {
    error = message.str();
    return failure();
  };
  FailureOr<Type> elementType = elementTypeOf(ctx, spec.dtype);
  if (failed(elementType))
    return fail("invalid dtype " + Twine(spec.dtype));
  bool usesParts = spec.kind == SLIN_KERNEL_FPROP || spec.kind == SLIN_KERNEL_DGRAD;
  if (usesParts && spec.num_parts < 1)
    return fail("a kernel needs at least one weight part, got " +
                Twine(spec.num_parts));
  if (spec.target != SLIN_TARGET_CPU && spec.target != SLIN_TARGET_CUDA)
    return fail("invalid target " + Twine(static_cast<int>(spec.target)) +
                " (0 = cpu, 1 = cuda)");
  if (spec.alignment <= 0 || (spec.alignment & (spec.alignment - 1)))
    return fail("alignment must be a positive power of two, got " +
                Twine(spec.alignment));
  auto partTypes = [&](const int32_t *dtypes, int64_t rank)
      -> FailureOr<SmallVector<Type>> {
    SmallVector<Type> types;
    for (int32_t i = 0; i < spec.num_parts; ++i) {
      FailureOr<Type> t =
          dtypes ? elementTypeOf(ctx, dtypes[i]) : elementType;
      if (failed(t)) {
        error = "invalid dtype " + std::to_string(dtypes[i]) + " of part #" +
                std::to_string(i);
        return failure();
      }
      types.push_back(stridedType(*t, rank));
    }
    return types;
  };

  OpBuilder b(ctx);
  Location loc = NameLoc::get(b.getStringAttr("slin_kernel"));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  MemRefType matrix = stridedType(*elementType, 2);
  MemRefType vector = stridedType(*elementType, 1);
  SmallVector<Type> argTypes{slin::ContextType::get(ctx)};
  switch (spec.kind) {
  case SLIN_KERNEL_FPROP: {
    argTypes.push_back(matrix);
    FailureOr<SmallVector<Type>> weights = partTypes(spec.part_dtypes, 2);
    if (failed(weights))
      return failure();
    llvm::append_range(argTypes, *weights);
    if (spec.has_bias) {
      FailureOr<SmallVector<Type>> biases = partTypes(spec.bias_dtypes, 1);
      if (failed(biases))
        return failure();
      llvm::append_range(argTypes, *biases);
    }
    argTypes.push_back(matrix);
    break;
  }
  case SLIN_KERNEL_DGRAD: {
    argTypes.push_back(matrix);
    FailureOr<SmallVector<Type>> weights = partTypes(spec.part_dtypes, 2);
    if (failed(weights))
      return failure();
    llvm::append_range(argTypes, *weights);
    argTypes.push_back(matrix);
    break;
  }
  case SLIN_KERNEL_WGRAD:
    argTypes.append({matrix, matrix, matrix});
    if (spec.has_bias)
      argTypes.push_back(vector);
    break;
  default:
    return fail("invalid kernel kind " + Twine(int(spec.kind)));
  }

  // FPROP and DGRAD report the path they took (a SlinKernelPath).
  SmallVector<Type> resultTypes;
  if (usesParts)
    resultTypes.push_back(b.getI32Type());
  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(b, loc, "slin_kernel",
                                   b.getFunctionType(argTypes, resultTypes));
  func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), b.getUnitAttr());
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);
  ValueRange args = body->getArguments().drop_front();
  int64_t n = spec.num_parts;
  Value path;
  switch (spec.kind) {
  case SLIN_KERNEL_FPROP: {
    ValueRange weights = args.slice(1, n);
    ValueRange biases = spec.has_bias ? args.slice(1 + n, n) : ValueRange{};
    path = slin::LinearOp::create(b, loc, b.getI32Type(), args.front(),
                                  weights, biases, args.back(),
                                  slin::Strategy::automatic)
               .getPath();
    break;
  }
  case SLIN_KERNEL_DGRAD:
    path = slin::LinearDgradOp::create(b, loc, b.getI32Type(), args.front(),
                                       args.slice(1, n), args.back(),
                                       slin::Strategy::automatic)
               .getPath();
    break;
  case SLIN_KERNEL_WGRAD: {
    // dW = dyᵀ · x; the bias gradient is fused into the same GEMM.
    Value bias = spec.has_bias ? args[3] : Value();
    slin::GemmOp::create(b, loc, args[0], args[1], bias, args[2],
                         /*transpose_a=*/true, /*transpose_b=*/false,
                         spec.has_bias ? slin::Epilogue::bias_grad
                                       : slin::Epilogue::none);
    break;
  }
  }
  func::ReturnOp::create(b, loc, path ? ValueRange{path} : ValueRange{});
  if (failed(verify(*module)))
    return fail("internal error: the kernel IR does not verify");
  return module;
}

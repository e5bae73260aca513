//===- SplitLinearCAPI.cpp - splitlinear compiler C API ---------*- C++ -*-===//
//
// Implements the C API of SplitLinear.h as a thin wrapper of the kernel
// compiler (splitlinear/JIT/KernelCompiler.h): C handles around its C++
// objects, NULL checks, error text copied into malloc'ed C strings, and the
// one conversion of a `SlinKernelSpec` into the C++ `KernelSpec`.
//
//===----------------------------------------------------------------------===//

#include "splitlinear-c/SplitLinear.h"

#include "splitlinear/Dialect/Slin/IR/SlinOps.h"
#include "splitlinear/InitAll.h"
#include "splitlinear/JIT/KernelCompiler.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include <cstdlib>
#include <cstring>

using namespace mlir;

// A kernel returns the dialect's path; the C API names the same numbers.
static_assert(static_cast<int>(slin::Path::view) == SLIN_PATH_VIEW &&
                  static_cast<int>(slin::Path::copy) == SLIN_PATH_COPY &&
                  static_cast<int>(slin::Path::per_part) == SLIN_PATH_PER_PART,
              "slin::Path and SlinKernelPath must agree");

struct SlinModuleImpl {
  splitlinear::OwnedModule owned;
};

struct SlinEngineImpl {
  std::unique_ptr<ExecutionEngine> engine;
};

namespace {
/// A malloc'ed copy of `s` for the caller to free with slinStringFree.
char *copyString(const std::string &s) {
  char *out = static_cast<char *>(std::malloc(s.size() + 1));
  if (out)
    std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

/// Stores a copy of `message` in `*error` when the caller asked for it.
void setError(char **error, const std::string &message) {
  if (error)
    *error = copyString(message);
}

/// `result` unwrapped, or (on failure) null after `diagnostics` went to
/// `*error`.
template <typename T>
T *valueOrError(FailureOr<T> &result, const std::string &diagnostics,
                char **error) {
  if (succeeded(result))
    return &*result;
  setError(error, diagnostics);
  return nullptr;
}
/// `code` as a slinrt_dtype, or failure for a number the enum does not have.
FailureOr<slinrt_dtype> dtypeOf(int32_t code) {
  // Which kinds take FP8 is buildKernelModule's check.
  if (code < SLINRT_F32 || code > SLINRT_F8E5M2)
    return failure();
  return static_cast<slinrt_dtype>(code);
}

/// `count` dtypes from `codes`, or `count` times `fallback` when `codes` is
/// NULL; fails naming the first invalid one (`what` #i).
FailureOr<SmallVector<slinrt_dtype>> dtypesOf(const int32_t *codes,
                                              int32_t count,
                                              slinrt_dtype fallback,
                                              const char *what,
                                              std::string &error) {
  SmallVector<slinrt_dtype> dtypes;
  for (int32_t i = 0; i < count; ++i) {
    FailureOr<slinrt_dtype> dtype = codes ? dtypeOf(codes[i]) : fallback;
    if (failed(dtype)) {
      error = "invalid dtype " + std::to_string(codes[i]) + " of " + what +
              " #" + std::to_string(i);
      return failure();
    }
    dtypes.push_back(*dtype);
  }
  return dtypes;
}

/// The C++ spec of the C one (the one place the C API's integer fields are
/// read): `num_parts` and `part_dtypes` for FPROP, DGRAD and SCALED_FPROP,
/// `has_bias` for FPROP and SCALED_FPROP (bias parts, `bias_dtypes`) and
/// WGRAD (the bias gradient), `input_dtype`, `scaling` and `fast_accum` for
/// SCALED_FPROP.
FailureOr<splitlinear::KernelSpec> toKernelSpec(const SlinKernelSpec &c,
                                                std::string &error) {
  using splitlinear::KernelKind;
  splitlinear::KernelSpec spec;
  switch (c.kind) {
  case SLIN_KERNEL_FPROP:
    spec.kind = KernelKind::Fprop;
    break;
  case SLIN_KERNEL_DGRAD:
    spec.kind = KernelKind::Dgrad;
    break;
  case SLIN_KERNEL_WGRAD:
    spec.kind = KernelKind::Wgrad;
    break;
  case SLIN_KERNEL_SCALED_FPROP:
    spec.kind = KernelKind::ScaledFprop;
    break;
  default:
    error = "invalid kernel kind " + std::to_string(static_cast<int>(c.kind));
    return failure();
  }
  FailureOr<slinrt_dtype> dtype = dtypeOf(c.dtype);
  if (failed(dtype)) {
    error = "invalid dtype " + std::to_string(c.dtype);
    return failure();
  }
  spec.dtype = *dtype;
  // A part count below 1 converts to no parts: buildKernelModule names it.
  if (spec.kind != KernelKind::Wgrad) {
    auto parts = dtypesOf(c.part_dtypes, c.num_parts, *dtype, "part", error);
    if (failed(parts))
      return failure();
    spec.weightPartDtypes = std::move(*parts);
  }
  spec.hasBias = c.has_bias != 0 && spec.kind != KernelKind::Dgrad;
  bool readsBias =
      spec.kind == KernelKind::Fprop || spec.kind == KernelKind::ScaledFprop;
  if (readsBias && spec.hasBias) {
    auto biases =
        dtypesOf(c.bias_dtypes, c.num_parts, *dtype, "bias part", error);
    if (failed(biases))
      return failure();
    spec.biasPartDtypes = std::move(*biases);
  }
  switch (c.target) {
  case SLIN_TARGET_CPU:
    spec.target = slin::RuntimeTarget::cpu;
    break;
  case SLIN_TARGET_CUDA:
    spec.target = slin::RuntimeTarget::cuda;
    break;
  default:
    error = "invalid target " + std::to_string(static_cast<int>(c.target)) +
            " (0 = cpu, 1 = cuda)";
    return failure();
  }
  spec.viewAlignmentBytes = c.alignment;
  if (c.dump_dir)
    spec.dumpDir = c.dump_dir;
  if (spec.kind == KernelKind::ScaledFprop) {
    FailureOr<slinrt_dtype> input = dtypeOf(c.input_dtype);
    if (failed(input)) {
      error = "invalid input dtype " + std::to_string(c.input_dtype);
      return failure();
    }
    spec.inputDtype = *input;
    // Checked here, as an integer: a C++ enum cannot hold another value.
    if (c.scaling != SLINRT_SCALING_TENSORWISE &&
        c.scaling != SLINRT_SCALING_OUTER_VECTOR) {
      error = "invalid scaling " + std::to_string(c.scaling) +
              " (0 = tensorwise, 1 = outer_vector)";
      return failure();
    }
    spec.scaling = static_cast<slinrt_scaling>(c.scaling);
    spec.fastAccum = c.fast_accum != 0;
  }
  return spec;
}
/// toKernelSpec, with the reason of a failure stored in `*error`.
FailureOr<splitlinear::KernelSpec> kernelSpecOrError(const SlinKernelSpec &c,
                                                     char **error) {
  std::string text;
  FailureOr<splitlinear::KernelSpec> spec = toKernelSpec(c, text);
  if (failed(spec))
    setError(error, text);
  return spec;
}
} // namespace

extern "C" {

void slinStringFree(char *str) { std::free(str); }

SlinModule slinModuleParse(const char *ir, size_t length, char **error) {
  if (!ir) {
    setError(error, "slinModuleParse: ir is NULL");
    return nullptr;
  }
  std::string text;
  auto parsed = splitlinear::parseModule(StringRef(ir, length), text);
  splitlinear::OwnedModule *owned = valueOrError(parsed, text, error);
  return owned ? new SlinModuleImpl{std::move(*owned)} : nullptr;
}

char *slinModuleToString(SlinModule module) {
  if (!module)
    return nullptr;
  return copyString(splitlinear::printModule(*module->owned.module));
}

int slinModuleRunPipeline(SlinModule module, const char *pipeline,
                          char **diagnostics) {
  if (!module || !pipeline) {
    setError(diagnostics, "slinModuleRunPipeline: module or pipeline is NULL");
    return 1;
  }
  std::string text;
  if (failed(splitlinear::runPipeline(*module->owned.module, pipeline, text))) {
    setError(diagnostics, text);
    return 1;
  }
  return 0;
}

void slinModuleDestroy(SlinModule module) { delete module; }

SlinEngine slinEngineCreate(SlinModule module, int optLevel, char **error) {
  if (!module) {
    setError(error, "slinEngineCreate: module is NULL");
    return nullptr;
  }
  std::string text;
  auto created =
      splitlinear::createEngine(*module->owned.module, optLevel, text);
  std::unique_ptr<ExecutionEngine> *engine = valueOrError(created, text, error);
  return engine ? new SlinEngineImpl{std::move(*engine)} : nullptr;
}

void (*slinEngineLookupPacked(SlinEngine engine, const char *name))(void **) {
  if (!engine || !name)
    return nullptr;
  auto fn = engine->engine->lookupPacked(name);
  if (!fn) {
    llvm::consumeError(fn.takeError());
    return nullptr;
  }
  return *fn;
}

int slinEngineInvokePacked(SlinEngine engine, const char *name, void **args,
                           char **error) {
  if (!engine || !name) {
    setError(error, "slinEngineInvokePacked: engine or name is NULL");
    return 1;
  }
  auto fn = engine->engine->lookupPacked(name);
  if (!fn) {
    setError(error, llvm::toString(fn.takeError()));
    return 1;
  }
  (*fn)(args);
  return 0;
}

void slinEngineDestroy(SlinEngine engine) { delete engine; }

char *slinKernelBuildIR(const SlinKernelSpec *spec, char **error) {
  if (!spec) {
    setError(error, "slinKernelBuildIR: spec is NULL");
    return nullptr;
  }
  FailureOr<splitlinear::KernelSpec> cxxSpec = kernelSpecOrError(*spec, error);
  if (failed(cxxSpec))
    return nullptr;
  std::string text;
  auto built = splitlinear::buildKernel(*cxxSpec, text);
  splitlinear::OwnedModule *kernel = valueOrError(built, text, error);
  return kernel ? copyString(splitlinear::printModule(*kernel->module))
                : nullptr;
}

SlinEngine slinKernelCompile(const SlinKernelSpec *spec,
                             void (**entry)(void **), char **error) {
  if (!spec || !entry) {
    setError(error, "slinKernelCompile: spec or entry is NULL");
    return nullptr;
  }
  FailureOr<splitlinear::KernelSpec> cxxSpec = kernelSpecOrError(*spec, error);
  if (failed(cxxSpec))
    return nullptr;
  std::string text;
  auto compiled = splitlinear::compileKernel(*cxxSpec, text);
  splitlinear::CompiledKernel *kernel = valueOrError(compiled, text, error);
  if (!kernel)
    return nullptr;
  *entry = kernel->entry;
  return new SlinEngineImpl{std::move(kernel->engine)};
}

} // extern "C"

int slinOptMain(int argc, char **argv) {
  DialectRegistry registry;
  splitlinear::registerAllDialects(registry);
  splitlinear::registerAllPasses();
  return asMainReturnCode(
      MlirOptMain(argc, argv, "splitlinear optimizer driver\n", registry));
}

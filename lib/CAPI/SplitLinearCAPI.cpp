//===- SplitLinearCAPI.cpp - splitlinear compiler C API ---------*- C++ -*-===//
//
// Implements the C API of SplitLinear.h as a thin wrapper of the kernel
// compiler (splitlinear/JIT/KernelCompiler.h): C handles around its C++
// objects, NULL checks, and error text copied into malloc'ed C strings.
//
//===----------------------------------------------------------------------===//

#include "splitlinear-c/SplitLinear.h"

#include "splitlinear/JIT/KernelCompiler.h"

#include <cstdlib>
#include <cstring>

using namespace mlir;

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
  std::string text;
  auto built = splitlinear::buildKernel(*spec, text);
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
  std::string text;
  auto compiled = splitlinear::compileKernel(*spec, text);
  splitlinear::CompiledKernel *kernel = valueOrError(compiled, text, error);
  if (!kernel)
    return nullptr;
  *entry = kernel->entry;
  return new SlinEngineImpl{std::move(kernel->engine)};
}

} // extern "C"

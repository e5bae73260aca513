//===- SplitLinearCAPI.cpp - splitlinear compiler C API ---------*- C++ -*-===//
//
// Implements the C API of SplitLinear.h: modules with their own MLIRContext,
// pipelines with captured diagnostics, and JIT engines that resolve the
// runtime's entry points through explicit registration.
//
//===----------------------------------------------------------------------===//

#include "splitlinear-c/SplitLinear.h"

#include "splitlinear/Kernels/KernelBuilder.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "splitlinear/Pipelines/Pipelines.h"
#include "splitlinear/InitAll.h"
#include "splitlinear/Runtime/Runtime.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <cstdlib>
#include <unistd.h>
#include <cstring>
#include <mutex>

using namespace mlir;

struct SlinModuleImpl {
  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
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

void setError(char **error, const std::string &message) {
  if (error)
    *error = copyString(message);
}

/// A context with every dialect, interface and pass splitlinear uses.
std::unique_ptr<MLIRContext> makeContext() {
  static std::once_flag once;
  std::call_once(once, [] { splitlinear::registerAllPasses(); });
  DialectRegistry registry;
  splitlinear::registerAllDialects(registry);
  // Kernels compile in the caller's thread; a thread pool per context would
  // cost more than it saves on these small modules.
  auto ctx = std::make_unique<MLIRContext>(registry,
                                           MLIRContext::Threading::DISABLED);
  ctx->loadAllAvailableDialects();
  return ctx;
}

/// Collects every diagnostic emitted on `ctx` while alive.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *ctx)
      : os(text), handler(ctx, [this](Diagnostic &diag) {
          os << diag.getLocation() << ": "
             << (diag.getSeverity() == DiagnosticSeverity::Error ? "error: "
                                                                 : "note: ")
             << diag << "\n";
          for (Diagnostic &note : diag.getNotes())
            os << "  note: " << note << "\n";
          return success();
        }) {}
  std::string take() { return os.str(); }

private:
  std::string text;
  llvm::raw_string_ostream os;
  ScopedDiagnosticHandler handler;
};

std::string printModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

/// Makes `pm` verify after every pass and, with `irLog`, print the module
/// after every pass there.
void instrument(PassManager &pm, llvm::raw_ostream *irLog) {
  pm.enableVerifier(true);
  if (irLog)
    pm.enableIRPrinting(
        /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
        /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
        /*printAfterOnlyOnFailure=*/false, *irLog);
}

/// `pm` as the textual pipeline that repeats it (`splitlinear-opt
/// --pass-pipeline=...`).
std::string pipelineText(PassManager &pm) {
  std::string text;
  llvm::raw_string_ostream os(text);
  pm.printAsTextualPipeline(os); // anchored: builtin.module(...)
  return text;
}

/// Runs `pm` on `module`; on failure `diagnostics` holds what was emitted.
LogicalResult runPassManager(PassManager &pm, ModuleOp module,
                             std::string &diagnostics) {
  DiagnosticCollector collector(module.getContext());
  if (succeeded(pm.run(module)))
    return success();
  diagnostics = collector.take();
  if (diagnostics.empty())
    diagnostics = "pipeline '" + pipelineText(pm) + "' failed";
  return failure();
}

/// Runs the textual `pipeline` (anchored on builtin.module if it is not yet)
/// on `module`.
LogicalResult runPipeline(ModuleOp module, StringRef pipeline,
                          std::string &diagnostics) {
  // The pass manager is anchored on builtin.module; parsePassPipeline adds
  // the pipeline *inside* that anchor, so an explicit anchor is stripped.
  StringRef body = pipeline.trim();
  if (body.consume_front("builtin.module(") && body.consume_back(")"))
    body = body.trim();
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  instrument(pm, /*irLog=*/nullptr);
  std::string parseErrors;
  llvm::raw_string_ostream errorStream(parseErrors);
  if (failed(parsePassPipeline(body, pm, errorStream))) {
    diagnostics = ("invalid pass pipeline 'builtin.module(" + body + ")': " +
                   parseErrors)
                      .str();
    return failure();
  }
  return runPassManager(pm, module, diagnostics);
}

/// The runtime's IR entry points, registered with every engine so that they
/// resolve even when neither this library nor the runtime was loaded with
/// RTLD_GLOBAL.
llvm::orc::SymbolMap runtimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap map;
  auto add = [&](const char *name, void *address) {
    map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                           llvm::JITSymbolFlags::Exported};
  };
#define SLIN_ADD(NAME) add(#NAME, reinterpret_cast<void *>(&NAME));
  SLIN_ADD(slinrt_default_context)
  SLIN_ADD(slinrt_prefer_per_part)
#define SLINRT_TARGET(TGT)                                                     \
  SLIN_ADD(_mlir_ciface_slinrt_##TGT##_alloc)                                  \
  SLIN_ADD(_mlir_ciface_slinrt_##TGT##_free)
#define SLINRT_DTYPE(T, ENUM)                                                  \
  SLIN_ADD(_mlir_ciface_slinrt_cpu_gemm_##T)                                   \
  SLIN_ADD(_mlir_ciface_slinrt_cuda_gemm_##T)
#define SLINRT_DTYPE_PAIR(S, T)                                                \
  SLIN_ADD(_mlir_ciface_slinrt_cpu_copy2d_##S##_##T)                           \
  SLIN_ADD(_mlir_ciface_slinrt_cuda_copy2d_##S##_##T)                          \
  SLIN_ADD(_mlir_ciface_slinrt_cpu_copy1d_##S##_##T)                           \
  SLIN_ADD(_mlir_ciface_slinrt_cuda_copy1d_##S##_##T)
#include "splitlinear/Runtime/RuntimeEntryPoints.def"
#undef SLIN_ADD
  return map;
}

SlinEngine createEngine(ModuleOp module, int optLevel, std::string &error) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  ExecutionEngineOptions options;
  optLevel = std::min(3, std::max(0, optLevel));
  options.jitCodeGenOptLevel = static_cast<llvm::CodeGenOptLevel>(optLevel);
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = false;
  DiagnosticCollector collector(module.getContext());
  auto engine = ExecutionEngine::create(module, options);
  if (!engine) {
    error = llvm::toString(engine.takeError());
    std::string diags = collector.take();
    if (!diags.empty())
      error += "\n" + diags;
    return nullptr;
  }
  (*engine)->registerSymbols(runtimeSymbols);
  (*engine)->initialize();
  return new SlinEngineImpl{std::move(*engine)};
}

/// Adds the splitlinear pipeline for a kernel of `spec` (already validated
/// by buildKernelModule) to `pm`. Returns the registered pipeline that
/// repeats it, as text for a `splitlinear-opt --pass-pipeline=` repro.
std::string buildPipelineFor(PassManager &pm, const SlinKernelSpec &spec) {
  slin::SplitLinearPipelineOptions options;
  options.target = spec.target == SLIN_TARGET_CUDA ? slin::RuntimeTarget::cuda
                                                   : slin::RuntimeTarget::cpu;
  options.alignment = spec.alignment;
  slin::buildSplitLinearPipeline(pm, options);
  std::string repro;
  llvm::raw_string_ostream os(repro);
  os << "builtin.module(splitlinear-pipeline";
  options.print(os);
  os << ")";
  return repro;
}
} // namespace

extern "C" {

void slinStringFree(char *str) { std::free(str); }

SlinModule slinModuleParse(const char *ir, size_t length, char **error) {
  if (!ir) {
    setError(error, "slinModuleParse: ir is NULL");
    return nullptr;
  }
  auto impl = std::make_unique<SlinModuleImpl>();
  impl->context = makeContext();
  DiagnosticCollector collector(impl->context.get());
  impl->module = parseSourceString<ModuleOp>(StringRef(ir, length),
                                             impl->context.get(), "input.mlir");
  if (!impl->module) {
    setError(error, collector.take());
    return nullptr;
  }
  return impl.release();
}

char *slinModuleToString(SlinModule module) {
  if (!module)
    return nullptr;
  return copyString(printModule(*module->module));
}

int slinModuleRunPipeline(SlinModule module, const char *pipeline,
                          char **diagnostics) {
  if (!module || !pipeline) {
    setError(diagnostics, "slinModuleRunPipeline: module or pipeline is NULL");
    return 1;
  }
  std::string text;
  if (failed(runPipeline(*module->module, pipeline, text))) {
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
  SlinEngine engine = createEngine(*module->module, optLevel, text);
  if (!engine)
    setError(error, text);
  return engine;
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
  std::unique_ptr<MLIRContext> ctx = makeContext();
  std::string text;
  auto module = splitlinear::buildKernelModule(ctx.get(), *spec, text);
  if (failed(module)) {
    setError(error, text);
    return nullptr;
  }
  return copyString(printModule(**module));
}

SlinEngine slinKernelCompile(const SlinKernelSpec *spec,
                             void (**entry)(void **), char **error) {
  if (!spec || !entry) {
    setError(error, "slinKernelCompile: spec or entry is NULL");
    return nullptr;
  }
  std::unique_ptr<MLIRContext> ctx = makeContext();
  std::string text;
  auto module = splitlinear::buildKernelModule(ctx.get(), *spec, text);
  if (failed(module)) {
    setError(error, text);
    return nullptr;
  }
  std::string ir = printModule(**module);
  // The kernel IR and the IR after every pass, where the caller says.
  std::unique_ptr<llvm::raw_fd_ostream> irLog;
  const char *dir = spec->dump_dir;
  PassManager pm(ctx.get(), ModuleOp::getOperationName());
  std::string pipeline = buildPipelineFor(pm, *spec);
  if (dir && *dir) {
    static std::atomic<int> counter{0};
    std::string stem = std::string(dir) + "/kernel-" +
                       std::to_string(static_cast<long>(::getpid())) + "-" +
                       std::to_string(counter++);
    std::error_code ec;
    llvm::raw_fd_ostream input(stem + ".mlir", ec);
    if (!ec)
      input << "// " << pipeline << "\n" << ir;
    irLog = std::make_unique<llvm::raw_fd_ostream>(stem + ".passes.mlir", ec);
    if (ec)
      irLog.reset();
  }
  instrument(pm, irLog.get());
  if (failed(runPassManager(pm, **module, text))) {
    setError(error, text + "\n// ---- input IR ----\n" + ir +
                        "// ---- repro ----\n// splitlinear-opt kernel.mlir "
                        "--pass-pipeline='" +
                        pipeline + "'\n");
    return nullptr;
  }
  SlinEngine engine = createEngine(**module, /*optLevel=*/2, text);
  if (!engine) {
    setError(error, "JIT compilation failed: " + text);
    return nullptr;
  }
  *entry = slinEngineLookupPacked(engine, "_mlir_ciface_slin_kernel");
  if (!*entry) {
    slinEngineDestroy(engine);
    setError(error, "internal error: _mlir_ciface_slin_kernel not found");
    return nullptr;
  }
  return engine;
}

} // extern "C"

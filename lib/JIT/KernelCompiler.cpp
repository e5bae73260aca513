//===- KernelCompiler.cpp - slin IR to JIT-compiled kernels -----*- C++ -*-===//
//
// Implements the kernel compiler: contexts with splitlinear's registry,
// diagnostics captured as text, pass pipelines verified after every pass
// (optionally printing the IR after each), the ExecutionEngine with the
// runtime's symbols, and compileKernel, which chains them for a kernel spec
// and writes the IR dumps a spec asks for.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/JIT/KernelCompiler.h"

#include "splitlinear/InitAll.h"
#include "splitlinear/JIT/RuntimeSymbols.h"
#include "splitlinear/Kernels/KernelBuilder.h"
#include "splitlinear/Pipelines/Pipelines.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unistd.h>

using namespace mlir;
using splitlinear::KernelSpec;

namespace {
/// Collects, as text, every diagnostic emitted on a context while alive.
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

  /// The diagnostics collected so far.
  std::string take() { return os.str(); }

private:
  std::string text;
  llvm::raw_string_ostream os;
  ScopedDiagnosticHandler handler;
};

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

/// Adds the splitlinear pipeline for a kernel of `spec` (already validated
/// by buildKernelModule) to `pm`. Returns the registered pipeline that
/// repeats it, as text for a `splitlinear-opt --pass-pipeline=` repro.
std::string buildPipelineFor(PassManager &pm, const KernelSpec &spec) {
  slin::SplitLinearPipelineOptions options;
  options.target = spec.target;
  options.alignment = spec.viewAlignmentBytes;
  slin::buildSplitLinearPipeline(pm, options);
  std::string repro;
  llvm::raw_string_ostream os(repro);
  os << "builtin.module(splitlinear-pipeline";
  options.print(os);
  os << ")";
  return repro;
}

/// Where compileKernel writes the IR of one kernel: `<dir>/kernel-<pid>-<n>`
/// (`.mlir`: the pipeline and the kernel IR; `.passes.mlir`: the IR after
/// every pass). Files that cannot be opened are skipped.
class KernelDumps {
public:
  /// Writes `pipeline` (as a comment) and `ir` to a new `.mlir` file in `dir`
  /// and opens the `.passes.mlir` file next to it; without `dir`, nothing.
  void open(const std::string &dir, const std::string &pipeline,
            const std::string &ir) {
    if (dir.empty())
      return;
    static std::atomic<int> counter{0};
    std::string stem = dir + "/kernel-" +
                       std::to_string(static_cast<long>(::getpid())) + "-" +
                       std::to_string(counter++);
    std::error_code ec;
    llvm::raw_fd_ostream input(stem + ".mlir", ec);
    if (!ec)
      input << "// " << pipeline << "\n" << ir;
    passLog = std::make_unique<llvm::raw_fd_ostream>(stem + ".passes.mlir", ec);
    if (ec)
      passLog.reset();
  }

  /// The stream for the IR after every pass, or null.
  llvm::raw_ostream *passes() { return passLog.get(); }

private:
  std::unique_ptr<llvm::raw_fd_ostream> passLog;
};
} // namespace

std::unique_ptr<MLIRContext> splitlinear::createContext() {
  registerAllPasses(); // idempotent and thread-safe
  DialectRegistry registry;
  registerAllDialects(registry);
  // Kernels compile in the caller's thread; a thread pool per context would
  // cost more than it saves on these small modules.
  auto ctx = std::make_unique<MLIRContext>(registry,
                                           MLIRContext::Threading::DISABLED);
  ctx->loadAllAvailableDialects();
  return ctx;
}

std::string splitlinear::printModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

FailureOr<splitlinear::OwnedModule>
splitlinear::parseModule(StringRef ir, std::string &diagnostics) {
  OwnedModule owned{createContext(), {}};
  DiagnosticCollector collector(owned.context.get());
  owned.module =
      parseSourceString<ModuleOp>(ir, owned.context.get(), "input.mlir");
  if (!owned.module) {
    diagnostics = collector.take();
    return failure();
  }
  return owned;
}

FailureOr<splitlinear::OwnedModule>
splitlinear::buildKernel(const KernelSpec &spec, std::string &error) {
  OwnedModule owned{createContext(), {}};
  auto module = buildKernelModule(owned.context.get(), spec, error);
  if (failed(module))
    return failure();
  owned.module = std::move(*module);
  return owned;
}

LogicalResult splitlinear::runPipeline(ModuleOp module, StringRef pipeline,
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

FailureOr<std::unique_ptr<ExecutionEngine>>
splitlinear::createEngine(ModuleOp module, int optLevel, std::string &error) {
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
  // ExecutionEngine compiles with the target machine it is given (or one of
  // its own at the default level): `jitCodeGenOptLevel` alone does not reach
  // code generation.
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) {
    error = llvm::toString(builder.takeError());
    return failure();
  }
  builder->setCodeGenOptLevel(*options.jitCodeGenOptLevel);
  auto machine = builder->createTargetMachine();
  if (!machine) {
    error = llvm::toString(machine.takeError());
    return failure();
  }
  auto engine = ExecutionEngine::create(module, options, std::move(*machine));
  if (!engine) {
    error = llvm::toString(engine.takeError());
    std::string diags = collector.take();
    if (!diags.empty())
      error += "\n" + diags;
    return failure();
  }
  (*engine)->registerSymbols(runtimeSymbols);
  (*engine)->initialize();
  return std::move(*engine);
}

/// Weight parts above which a kernel's machine code is generated at O0
/// (FastISel): SelectionDAG's scheduler at O2 grows faster than the kernel
/// (1.36 s against 0.16 s at 64 parts, 6.5 s against 0.25 s at 128), while
/// a call's host time did not measurably change.
constexpr int64_t kMaxOptimizedParts = 16;

FailureOr<splitlinear::CompiledKernel>
splitlinear::compileKernel(const KernelSpec &spec, std::string &error) {
  FailureOr<OwnedModule> kernel = buildKernel(spec, error);
  if (failed(kernel))
    return failure();
  ModuleOp module = *kernel->module;
  std::string ir = printModule(module);
  KernelDumps dumps; // outlives `pm`, which prints into it
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  std::string pipeline = buildPipelineFor(pm, spec);
  dumps.open(spec.dumpDir, pipeline, ir);
  instrument(pm, dumps.passes());
  std::string diagnostics;
  if (failed(runPassManager(pm, module, diagnostics))) {
    error = diagnostics + "\n// ---- input IR ----\n" + ir +
            "// ---- repro ----\n// splitlinear-opt kernel.mlir "
            "--pass-pipeline='" +
            pipeline + "'\n";
    return failure();
  }
  // docs/Design.md, Measured decisions: kernels over many parts unoptimized.
  int optLevel = spec.numWeightParts() > kMaxOptimizedParts ? 0 : 2;
  auto engine = createEngine(module, optLevel, diagnostics);
  if (failed(engine)) {
    error = "JIT compilation failed: " + diagnostics;
    return failure();
  }
  auto entry = (*engine)->lookupPacked("_mlir_ciface_slin_kernel");
  if (!entry) {
    llvm::consumeError(entry.takeError());
    error = "internal error: _mlir_ciface_slin_kernel not found";
    return failure();
  }
  return CompiledKernel{std::move(*engine), *entry};
}

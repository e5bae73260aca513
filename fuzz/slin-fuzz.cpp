//===- slin-fuzz.cpp - libFuzzer target for the slin compiler ---*- C++ -*-===//
//
// A libFuzzer target over the whole compiler: the input is MLIR text, parsed
// with the project's registry (splitlinear::registerAllDialects) and
// verified. IR that verifies is then compiled four times, each time on a
// fresh clone of the parsed module and with every diagnostic swallowed:
//
//   slin-elide-concat{remarks=true}
//   slin-expand-linear
//   splitlinear-pipeline{target=cpu}
//   splitlinear-pipeline{target=cuda alignment=64 per-part-max-rows=8}
//
// A pass may fail (that is a diagnostic, not a bug), but the project's
// passes must leave IR that verifies: the pass manager verifies after every
// pass, and an instrumentation aborts when one of the project's passes left
// invalid IR. A crash, an assertion, a sanitizer report or that abort is a
// finding.
//
// Each input gets its own MLIRContext, so a finding reproduces from its
// input alone: `slin-fuzz crash-<sha1>`.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace mlir;

namespace {

/// The pipelines each verified input goes through, in this order.
constexpr const char *kPipelines[] = {
    "slin-elide-concat{remarks=true}",
    "slin-expand-linear",
    "splitlinear-pipeline{target=cpu}",
    "splitlinear-pipeline{target=cuda alignment=64 per-part-max-rows=8}",
};

/// The dialects, interfaces and passes of splitlinear-opt, built once.
DialectRegistry *registry;

/// How far the inputs got, printed at exit (see docs/Reliability.md).
struct Counts {
  uint64_t inputs = 0, verified = 0, pipelineSucceeded = 0;
} counts;

/// True for the project's own passes (the slin passes and the conversion).
bool isProjectPass(Pass *pass) {
  StringRef arg = pass->getArgument();
  return arg.starts_with("slin-") || arg == "convert-slin-to-cublaslt";
}

/// Aborts when one of the project's passes leaves IR that does not verify.
/// The pass manager verifies after every pass (as splitlinear-opt and the C
/// API do) and turns invalid IR into a pass failure; this instrumentation
/// then checks, for the project's passes, whether the failure left invalid
/// IR. The project's passes fail only through the greedy driver or a
/// partial conversion, which keep the IR valid, so invalid IR after them is
/// their bug. Invalid IR after an upstream pass stays an ordinary pipeline
/// failure: that is what a user sees too, a diagnostic rather than a crash.
struct AbortOnInvalidIR : public PassInstrumentation {
  explicit AbortOnInvalidIR(StringRef pipeline) : pipeline(pipeline) {}

  void runAfterPassFailed(Pass *pass, Operation *op) override {
    if (!isProjectPass(pass))
      return;
    // verify() reports through the context's handlers, which swallow
    // everything; collect its messages for the report instead.
    std::string messages;
    llvm::raw_string_ostream os(messages);
    ScopedDiagnosticHandler collect(op->getContext(), [&](Diagnostic &diag) {
      os << diag.getLocation() << ": " << diag << "\n";
      return success();
    });
    if (succeeded(verify(op)))
      return;
    llvm::errs() << "slin-fuzz: pass '" << pass->getArgument()
                 << "' left IR that does not verify (pipeline '" << pipeline
                 << "'):\n"
                 << messages;
    op->print(llvm::errs(), OpPrintingFlags().printGenericOpForm());
    llvm::errs() << "\n";
    std::abort();
  }

  std::string pipeline;
};

/// Runs `pipeline` on a clone of `module`; failures are ignored. Returns
/// whether it succeeded.
bool runOnClone(ModuleOp module, StringRef pipeline) {
  OwningOpRef<ModuleOp> clone = module.clone();
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  pm.enableVerifier(true);
  if (failed(parsePassPipeline(pipeline, pm))) {
    // The pipelines are constants: failing to parse one is a bug here.
    llvm::errs() << "slin-fuzz: cannot parse pipeline '" << pipeline << "'\n";
    std::abort();
  }
  pm.addInstrumentation(std::make_unique<AbortOnInvalidIR>(pipeline));
  return succeeded(pm.run(*clone));
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  registry = new DialectRegistry();
  splitlinear::registerAllDialects(*registry);
  splitlinear::registerAllPasses();
  std::atexit([] {
    llvm::errs() << "slin-fuzz: " << counts.inputs << " inputs, "
                 << counts.verified << " parsed and verified, "
                 << counts.pipelineSucceeded
                 << " compiled by splitlinear-pipeline{target=cpu}\n";
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ++counts.inputs;
  MLIRContext context(*registry, MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  context.printStackTraceOnDiagnostic(false);
  // Swallow every diagnostic: parse errors, verifier errors, remarks and
  // pass failures are all expected outcomes.
  ScopedDiagnosticHandler swallow(&context,
                                  [](Diagnostic &) { return success(); });

  // The MLIR lexer relies on a NUL after the buffer (it reads one past the
  // end of an identifier); libFuzzer's buffer has none, so copy it.
  std::string text(reinterpret_cast<const char *>(data), size);
  // parseSourceString verifies each top-level op, but not the module it
  // wraps several of them in (two functions `@f` would pass): verify that.
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, &context, "fuzz-input.mlir");
  if (!module || failed(verify(*module)))
    return 0;
  ++counts.verified;
  for (const char *pipeline : kPipelines)
    if (runOnClone(*module, pipeline) && pipeline == kPipelines[2])
      ++counts.pipelineSucceeded;
  return 0;
}

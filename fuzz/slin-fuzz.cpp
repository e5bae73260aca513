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
//   splitlinear-pipeline{target=cuda alignment=64}
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
// Byte-level mutation of MLIR text rarely parses (about 1% of the mutants
// in a plain libFuzzer run verified). Three quarters of the mutations are
// therefore done on tokens (LLVMFuzzerCustomMutator): a number replaced by
// a boundary value, a `?` swapped with a number, an element type swapped,
// an SSA use replaced by another name of the input, a line deleted,
// duplicated or swapped with another. The other quarter are libFuzzer's own
// byte-level mutations (with the dictionary fuzz/slin.dict). Inputs that do
// not parse are not kept in the corpus.
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
#include <cstring>
#include <random>
#include <regex>
#include <string>
#include <vector>

using namespace mlir;

namespace {

/// The pipelines each verified input goes through, in this order.
constexpr const char *kPipelines[] = {
    "slin-elide-concat{remarks=true}",
    "slin-expand-linear",
    "splitlinear-pipeline{target=cpu}",
    "splitlinear-pipeline{target=cuda alignment=64}",
};

/// The dialects, interfaces and passes of splitlinear-opt, built once.
DialectRegistry *registry;

/// How far the inputs got, printed at exit (see docs/Reliability.md).
struct Counts {
  uint64_t inputs = 0, parsed = 0, verified = 0, pipelineSucceeded = 0;
} counts;

/// True for the project's own passes (the slin passes and the conversion).
bool isProjectPass(Pass *pass) {
  StringRef arg = pass->getArgument();
  return arg.starts_with("slin-") || arg == "convert-slin-to-runtime";
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

//===----------------------------------------------------------------------===//
// Token-level mutations
//===----------------------------------------------------------------------===//

/// The matches of `re` in `text` as (offset, length) pairs.
std::vector<std::pair<size_t, size_t>> findAll(const std::string &text,
                                               const std::regex &re) {
  std::vector<std::pair<size_t, size_t>> found;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re);
       it != std::sregex_iterator(); ++it)
    found.emplace_back(it->position(), it->length());
  return found;
}

/// Replaces one match of `re` in `text` by `pick(matched text)`. Returns
/// false when there is no match.
template <typename Pick>
bool replaceOne(std::string &text, const std::regex &re, std::minstd_rand &rng,
                Pick pick) {
  auto found = findAll(text, re);
  if (found.empty())
    return false;
  auto [pos, len] = found[rng() % found.size()];
  text.replace(pos, len, pick(text.substr(pos, len)));
  return true;
}

/// The start offsets of the lines of `text` (and its size).
std::vector<size_t> lineStarts(const std::string &text) {
  std::vector<size_t> starts{0};
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n' && i + 1 < text.size())
      starts.push_back(i + 1);
  starts.push_back(text.size());
  return starts;
}

/// One token-level mutation of `text`; false if none applied.
bool mutateTokens(std::string &text, std::minstd_rand &rng) {
  static const std::regex number("-?[0-9]+"), question("\\?"),
      floatType("\\b(f16|bf16|f32|f64)\\b"), ssa("%[A-Za-z0-9_]+");
  static const char *const boundary[] = {"0",
                                         "1",
                                         "2",
                                         "3",
                                         "4",
                                         "7",
                                         "8",
                                         "15",
                                         "16",
                                         "17",
                                         "32",
                                         "64",
                                         "-1",
                                         "-4",
                                         "?",
                                         "255",
                                         "256",
                                         "2147483648",
                                         "4611686018427387904",
                                         "9223372036854775807"};
  static const char *const types[] = {"f16", "bf16", "f32", "f64", "i32"};
  switch (rng() % 6) {
  case 0:
    return replaceOne(text, number, rng, [&](const std::string &old) {
      if (rng() % 2)
        return std::string(boundary[rng() % std::size(boundary)]);
      // Wraps around at the ends (no signed overflow in the harness).
      long long v = std::strtoll(old.c_str(), nullptr, 10);
      return std::to_string(static_cast<long long>(
          static_cast<unsigned long long>(v) + (rng() % 2 ? 1 : -1ULL)));
    });
  case 1:
    return replaceOne(text, question, rng, [&](const std::string &) {
      return std::string(boundary[rng() % 12]);
    });
  case 2:
    return replaceOne(text, floatType, rng, [&](const std::string &) {
      return std::string(types[rng() % std::size(types)]);
    });
  case 3: {
    auto names = findAll(text, ssa);
    if (names.size() < 2)
      return false;
    auto [pos, len] = names[rng() % names.size()];
    auto [otherPos, otherLen] = names[rng() % names.size()];
    text.replace(pos, len, text.substr(otherPos, otherLen));
    return true;
  }
  default: {
    std::vector<size_t> starts = lineStarts(text);
    size_t lines = starts.size() - 1;
    if (lines < 2)
      return false;
    size_t a = rng() % lines, b = rng() % lines;
    std::string lineA = text.substr(starts[a], starts[a + 1] - starts[a]);
    std::string lineB = text.substr(starts[b], starts[b + 1] - starts[b]);
    switch (rng() % 3) {
    case 0: // delete line a
      text.erase(starts[a], lineA.size());
      return true;
    case 1: // duplicate line a before line b
      text.insert(starts[b], lineA);
      return true;
    default: { // swap lines a and b
      if (a == b)
        return false;
      if (a > b) {
        std::swap(a, b);
        std::swap(lineA, lineB);
      }
      text.replace(starts[b], lineB.size(), lineA);
      text.replace(starts[a], lineA.size(), lineB);
      return true;
    }
    }
  }
  }
}

} // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned int seed) {
  std::minstd_rand rng(seed);
  // libFuzzer stacks up to 5 mutations per run: keep byte-level ones rare
  // enough that most results still parse.
  if (rng() % 4 == 0)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::string text(reinterpret_cast<const char *>(data), size);
  unsigned steps = 1 + rng() % 3;
  bool changed = false;
  for (unsigned i = 0; i < steps; ++i)
    changed |= mutateTokens(text, rng);
  if (!changed || text.empty() || text.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  registry = new DialectRegistry();
  splitlinear::registerAllDialects(*registry);
  splitlinear::registerAllPasses();
  std::atexit([] {
    llvm::errs() << "slin-fuzz: " << counts.inputs << " inputs, "
                 << counts.parsed << " parsed, " << counts.verified
                 << " verified, " << counts.pipelineSucceeded
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
  // Parse without verifying, then verify the whole module: parseSourceString
  // would verify each top-level op but not the module it wraps several of
  // them in (two functions `@f` would pass). Text that does not parse is
  // rejected (-1: not added to the corpus), so that the corpus holds IR;
  // IR that the verifiers reject is kept, the verifiers are the project's.
  ParserConfig config(&context, /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, config, "fuzz-input.mlir");
  if (!module)
    return -1;
  ++counts.parsed;
  if (failed(verify(*module)))
    return 0;
  ++counts.verified;
  for (const char *pipeline : kPipelines)
    if (runOnClone(*module, pipeline) && pipeline == kPipelines[2])
      ++counts.pipelineSucceeded;
  return 0;
}

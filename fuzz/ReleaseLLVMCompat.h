//===- ReleaseLLVMCompat.h - instrumented code, release LLVM ----*- C++ -*-===//
//
// Force-included (`-include`) into every C++ file of the fuzzing and
// sanitizer builds (scripts/fuzz.sh, scripts/sanitize.sh). Those builds
// compile the project's own code with assertions on (no NDEBUG) and with
// AddressSanitizer, against Debian's LLVM/MLIR 22 release libraries, which
// have neither. Two LLVM headers change behaviour on those two switches in
// ways that break when instrumented and uninstrumented code share objects:
//
// * llvm/ADT/Statistic.h makes `llvm::Statistic` a 40-byte TrackingStatistic
//   without NDEBUG and a 24-byte NoopStatistic with it (llvm-config.h has
//   LLVM_FORCE_ENABLE_STATS 0). `mlir::Pass::Statistic` derives from it and
//   is constructed inside libMLIRPass, so the project's passes must see the
//   library's layout. Statistic.h is included here once with NDEBUG defined
//   (its include guard keeps that version); `assert` is re-armed after it.
//
// * llvm/Support/Compiler.h turns on ASan annotations when the including
//   file is compiled with ASan: BumpPtrAllocator::AllocateSlow (a template,
//   instantiated in the project's objects) then poisons each new slab, and
//   the inline fast path compiled into the uninstrumented MLIR libraries
//   never unpoisons it: an instant use-after-poison report in MLIRContext's
//   constructor. The annotations are turned off here; ASan still checks
//   every access the project's code makes (malloc'ed memory, stack, globals).
//
// Other NDEBUG-dependent code in the LLVM/MLIR headers only adds checks or
// debug-only methods and does not change layouts (checked for LLVM 22.1).
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_FUZZ_RELEASELLVMCOMPAT_H
#define SPLITLINEAR_FUZZ_RELEASELLVMCOMPAT_H

// Files that do not see the LLVM headers (the runtime, CMake's compiler
// checks) are left alone.
#if defined(__cplusplus) && __has_include("llvm/ADT/Statistic.h")

#ifndef NDEBUG
#define NDEBUG
#include "llvm/ADT/Statistic.h"
#undef NDEBUG
// <cassert> has no include guard: including it again redefines `assert` for
// the current (undefined) NDEBUG.
#include <cassert>
#endif

// Compiler.h includes <sanitizer/asan_interface.h> under ASan, so the
// functions are declared before the macros below hide them.
#include "llvm/Support/Compiler.h"
#if LLVM_ADDRESS_SANITIZER_BUILD
#undef LLVM_ADDRESS_SANITIZER_BUILD
#define LLVM_ADDRESS_SANITIZER_BUILD 0
#define __asan_poison_memory_region(p, size) ((void)(p), (void)(size))
#define __asan_unpoison_memory_region(p, size) ((void)(p), (void)(size))
#endif

#endif

#endif // SPLITLINEAR_FUZZ_RELEASELLVMCOMPAT_H

//===- RuntimeCalls.h - calling the runtime from the patterns ---*- C++ -*-===//
//
// Private to convert-slin-to-runtime: what its pattern files share. The
// names of the runtime's entry points (from RuntimeEntryPoints.def), the
// casts of memref operands to the fully dynamic strided types that one
// declaration per entry point takes, the C-interface declarations
// themselves, the runtime context a call passes, and the populate function
// of each pattern file (SlinToRuntime.cpp adds them all).
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_SLINTORUNTIME_RUNTIMECALLS_H
#define LIB_CONVERSION_SLINTORUNTIME_RUNTIMECALLS_H

#include "splitlinear/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

#include <optional>

namespace mlir {
namespace slin {
namespace detail {

//===----------------------------------------------------------------------===//
// Entry point names (RuntimeCalls.cpp)
//===----------------------------------------------------------------------===//

// The names are spelled by RuntimeEntryPoints.def (the list Runtime.h
// declares and the runtime defines); "" for a name it does not have.

/// The slinrt_dtype code of an element type (SLINRT_F32 .. SLINRT_F8E5M2),
/// or std::nullopt for a type the runtime does not know.
std::optional<int32_t> dtypeCode(Type type);
/// The runtime's name of an element type (`f32`, `f16`, `bf16`, `f64`,
/// `f8e4m3fn`, `f8e5m2`), or "" for a type it has no entry points for.
StringRef dtypeSuffix(Type type);
/// `slinrt_<target>_gemm_<dtype>`.
StringRef gemmCallee(RuntimeTarget target, StringRef dtype);
/// `slinrt_<target>_copy{1,2}d_<src>_<dst>` ("" for a pair the runtime
/// does not copy, e.g. FP8 to another type).
StringRef copyCallee(RuntimeTarget target, int64_t rank, StringRef src,
                     StringRef dst);
/// `slinrt_<target>_scaled_gemm_<out>` (`out`: f32, f16, bf16; else "").
StringRef scaledGemmCallee(RuntimeTarget target, StringRef out);
/// `slinrt_<target>_alloc` (`free`: `slinrt_<target>_free`).
StringRef allocCallee(RuntimeTarget target, bool free);

//===----------------------------------------------------------------------===//
// Operands and declarations (RuntimeCalls.cpp)
//===----------------------------------------------------------------------===//

/// Casts `value` (a memref) to `memref<?x?xT, strided<[?, ?], offset: ?>>`
/// (or its rank-1 analogue), the parameter type of the runtime declarations,
/// or fails when its layout is not strided or it lives in a non-default
/// memory space.
FailureOr<Value> castToDynamic(OpBuilder &builder, Location loc, Value value);

/// Size of one element in bytes (rounded up), or 0 for a type without a bit
/// width.
int64_t elementBytes(Type type);

/// Returns the function `name` of type `type` in the module around `from`,
/// declaring it (private, with `llvm.emit_c_interface` when `cInterface`) if
/// it does not exist yet. Fails if the symbol exists with another type or is
/// not a func.func.
FailureOr<func::FuncOp> lookupOrDeclare(RewriterBase &rewriter, Operation *from,
                                        StringRef name, FunctionType type,
                                        bool cInterface);

/// Emits `func.call @name(operands) : (types of operands) -> results` of a
/// C-interface runtime entry point, declaring it on first use. Fails (a
/// match failure on `op`) when the symbol exists with another type.
FailureOr<func::CallOp> callRuntime(RewriterBase &rewriter, Operation *op,
                                    StringRef name, ValueRange operands,
                                    TypeRange results = {});

/// The leading operands of a runtime call from `op`: the runtime context
/// (getRuntimeContext), then `memrefs` cast by castToDynamic, where a null
/// memref (an absent bias) becomes an empty `memref<0 x emptyType>`, which
/// the runtime reads as none. Fails (a match failure on `op`) without a
/// context or for a memref with a non-strided layout or a memory space.
FailureOr<SmallVector<Value>> contextAndMemrefs(RewriterBase &rewriter,
                                                Operation *op,
                                                ArrayRef<Value> memrefs,
                                                Type emptyType);

/// A conversion pattern that lowers `OpTy` to entry points of one runtime
/// target.
template <typename OpTy>
struct RuntimeCallPattern : OpConversionPattern<OpTy> {
  RuntimeCallPattern(MLIRContext *ctx, RuntimeTarget target)
      : OpConversionPattern<OpTy>(ctx), target(target) {}

  RuntimeTarget target;
};

//===----------------------------------------------------------------------===//
// The runtime context (Context.cpp)
//===----------------------------------------------------------------------===//

/// The runtime context for calls made from `op`, as the `!llvm.ptr` that the
/// runtime's entry points take: the enclosing function's `!slin.context`
/// argument through an `unrealized_conversion_cast` (which
/// convertSlinContextToLLVMPointer folds away once the argument is a
/// pointer), else the result of a `slinrt_default_context()` call. Either is
/// made at the start of the function's entry block on first use and shared
/// by the later ones.
FailureOr<Value> getRuntimeContext(RewriterBase &rewriter, Operation *op);

//===----------------------------------------------------------------------===//
// The patterns, one populate function per file
//===----------------------------------------------------------------------===//

/// `slin.gemm`, `slin.concat` and `slin.prefer_per_part` → calls of the
/// runtime's compute entry points (GemmAndCopies.cpp).
void populateGemmAndCopyPatterns(RewritePatternSet &patterns,
                                 RuntimeTarget target);

/// `slin.scaled_gemm` → `slinrt_<target>_scaled_gemm_<out>` (ScaledGemm.cpp).
void populateScaledGemmPatterns(RewritePatternSet &patterns,
                                RuntimeTarget target);

/// `slin.alloc` / `slin.dealloc` → the runtime allocator (Buffers.cpp).
void populateBufferPatterns(RewritePatternSet &patterns, RuntimeTarget target);

/// `slin.is_adjacent` / `slin.view_concat` → memref metadata arithmetic
/// (Views.cpp).
void populateViewPatterns(RewritePatternSet &patterns);

} // namespace detail
} // namespace slin
} // namespace mlir

#endif // LIB_CONVERSION_SLINTORUNTIME_RUNTIMECALLS_H

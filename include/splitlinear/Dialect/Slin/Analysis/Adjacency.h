//===- Adjacency.h - static adjacency analysis of memref parts --*- C++ -*-===//
//
// Decides at compile time whether memref parts can be viewed as one buffer
// stacked along dim 0 (the condition `slin.is_adjacent` tests at run time).
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_DIALECT_SLIN_ANALYSIS_ADJACENCY_H
#define SPLITLINEAR_DIALECT_SLIN_ANALYSIS_ADJACENCY_H

#include "mlir/IR/Value.h"
#include "mlir/IR/ValueRange.h"

#include <string>
#include "llvm/ADT/StringRef.h"

namespace mlir {
namespace slin {

/// What is known at compile time about the adjacency of parts.
enum class Adjacency {
  /// Every condition of `slin.is_adjacent` holds for all run-time values.
  Proven,
  /// Some condition fails (for non-empty parts): a copy is needed.
  Disproven,
  /// Depends on run-time values: check at run time.
  Unknown,
};

/// Classifies `parts` (all rank 1 or all rank 2 memrefs, none statically
/// empty) for a view of element type `elementType` whose first element must
/// be aligned to `alignment` bytes. `reason` receives a short explanation of
/// a Disproven or Unknown answer (for remarks and debugging).
///
/// The analysis follows each part through memref.subview,
/// memref.reinterpret_cast and memref.cast to a root buffer and expresses
/// its offset, sizes and strides as integer polynomials over opaque atoms
/// (SSA index values, through arith.addi/subi/muli/constant and memref.dim,
/// and the root's dynamic layout entries). Equal polynomials are provably
/// equal; a non-zero constant difference is provably different. Distinct
/// memref.alloc/alloca results are distinct allocations; a memref.alloc
/// without an `alignment` attribute is taken as 16-byte aligned (what malloc
/// on 64-bit glibc and the runtime allocator guarantee), a memref.alloca
/// without one as of unknown alignment (it lowers to an alloca aligned to its
/// element type only). memref.assume_alignment and a function argument's
/// `llvm.align` attribute state the alignment of a base pointer.
///
/// The rules are those of the run-time check, part by part: where it waives
/// a rule for a size of 1 (the column stride of one column, the stride of one
/// element, `ld >= K` for a view of one row) and that size is dynamic, a
/// violation gives Unknown, not Disproven. A misaligned constant offset
/// disproves the alignment only against a known base alignment.
Adjacency classifyAdjacency(ValueRange parts, Type elementType,
                            int64_t alignment, std::string *reason = nullptr);

} // namespace slin
} // namespace mlir

#endif // SPLITLINEAR_DIALECT_SLIN_ANALYSIS_ADJACENCY_H

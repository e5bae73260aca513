//===- Adjacency.h - the adjacency rule of memref parts ---------*- C++ -*-===//
//
// The rule that says when memref parts can be viewed as one buffer stacked
// along dim 0, in its two forms: decided at compile time (classifyAdjacency,
// Adjacency.cpp) and built as the run-time predicate that `slin.is_adjacent`
// lowers to (buildAdjacencyPredicate, AdjacencyPredicate.cpp). Both apply
// the numbered rules below, so that a proven answer never contradicts the
// run-time one.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_DIALECT_SLIN_ANALYSIS_ADJACENCY_H
#define SPLITLINEAR_DIALECT_SLIN_ANALYSIS_ADJACENCY_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "mlir/IR/ValueRange.h"

#include <string>
#include "llvm/ADT/StringRef.h"

namespace mlir {
namespace slin {

// The adjacency rules, as numbered in the description of `slin.is_adjacent`.
// Parts `P_0 ... P_{n-1}` (rank 2: `[N_i, K]`; rank 1: `[N_i]`) may be viewed
// as one `[sum N_i, K]` buffer iff, ignoring empty parts:
//
//   (1) all share one base allocation (the same aligned base pointer, not
//       merely touching addresses);
//   (2) all have the view's element type;
//   (3) each is contiguous within a row (column stride 1, or one column), all
//       have the first part's K columns and one common row stride `ld`, and
//       `ld >= K` when the view has more than one row (rank 1: stride 1, or
//       one element);
//   (4) part i+1 starts where part i ends: `offset_{i+1} = offset_i + N_i*ld`
//       (which keeps the view inside the base buffer and rules out overlap
//       and reversed order);
//   (5) the view's first element is aligned to `alignment` bytes.
//
// Where the run-time form waives a rule for a size of 1 (the column stride
// of one column, the stride of one element, `ld >= K` for a one-row view),
// the static form answers Unknown, not Disproven, if that size is dynamic.

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
/// The rules are (1)-(5) above, those of buildAdjacencyPredicate, part by
/// part. A misaligned constant offset disproves (5) only against a known base
/// alignment.
Adjacency classifyAdjacency(ValueRange parts, Type elementType,
                            int64_t alignment, std::string *reason = nullptr);

/// The run-time layout of one part, from memref.extract_strided_metadata
/// (`cols` and `colStride` are null for rank 1).
struct PartLayout {
  Value base, offset, rows, cols, rowStride, colStride;
};

/// Reads the layout of `part` (a ranked memref of rank 1 or 2) with one
/// memref.extract_strided_metadata at `b`'s insertion point.
PartLayout readPartLayout(OpBuilder &b, Location loc, Value part);

/// Builds, at `b`'s insertion point, the i1 that is true iff `parts` (all
/// rank 1 or all rank 2 memrefs) satisfy rules (1)-(5) above for a view
/// whose first element must be aligned to `alignment` bytes: the run-time
/// form of the rules classifyAdjacency applies statically, and what
/// `slin.is_adjacent` lowers to. It reads each part's strided metadata and
/// combines the conditions with arith ops (no control flow). Parts of
/// different element types give a constant false; returns a null Value,
/// building nothing, when the element type has no size in bytes.
Value buildAdjacencyPredicate(OpBuilder &b, Location loc, ValueRange parts,
                              int64_t alignment);

} // namespace slin
} // namespace mlir

#endif // SPLITLINEAR_DIALECT_SLIN_ANALYSIS_ADJACENCY_H

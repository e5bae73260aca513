//===- Adjacency.cpp - static form of the adjacency rule --------*- C++ -*-===//
//
// Implements classifyAdjacency: a small symbolic model of memref layouts
// (integer polynomials over opaque atoms) that proves or disproves that parts
// sit back to back in one allocation. Anything it cannot decide is left to
// the run-time check, so Proven must be sound while Disproven only has to be
// right for non-empty parts (a copy is always a correct fallback).
//
// The model is bounded: coefficients that would overflow int64, polynomials
// that grow past a few dozen terms and index expressions with too many nodes
// become "unknown" (an opaque polynomial) instead of wrapping around or
// growing exponentially (`%s1 = arith.muli %s0, %s0` repeated squares the
// term count at each step).
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Dialect/Slin/Analysis/Adjacency.h"
#include "splitlinear/Dialect/Slin/IR/SlinOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/MathExtras.h"

#include <map>
#include <optional>
#include <vector>

using namespace mlir;
using namespace mlir::slin;

namespace {

/// An opaque integer unknown: an SSA value (kind -1) or a layout entry of a
/// root buffer (kind kOffset, kStride + j, kSize + j).
struct Atom {
  const void *ptr;
  int kind;
  bool operator<(const Atom &o) const {
    return std::tie(ptr, kind) < std::tie(o.ptr, o.kind);
  }
  bool operator==(const Atom &o) const {
    return ptr == o.ptr && kind == o.kind;
  }
};
constexpr int kValue = -1, kOffset = 0, kStride = 10, kSize = 20;

/// A polynomial with integer coefficients over atoms. Monomials are sorted
/// atom lists; the empty monomial is the constant term. A polynomial whose
/// coefficients overflowed or that grew past kMaxTerms terms or kMaxDegree
/// atoms per monomial is "unknown": it is neither constant nor a multiple of
/// anything, and everything computed from it is unknown too.
class Poly {
public:
  static constexpr size_t kMaxTerms = 32, kMaxDegree = 8;

  Poly() = default;
  explicit Poly(int64_t c) {
    if (c)
      terms[{}] = c;
  }
  static Poly atom(Atom a) {
    Poly p;
    p.terms[{a}] = 1;
    return p;
  }
  static Poly unknown() {
    Poly p;
    p.known = false;
    return p;
  }
  Poly operator+(const Poly &o) const {
    Poly r = *this;
    if (!o.known)
      r.setUnknown();
    for (auto &[m, c] : o.terms) {
      if (!r.known)
        break;
      r.addTerm(m, c);
    }
    return r;
  }
  Poly operator-(const Poly &o) const { return *this + o * Poly(-1); }
  Poly operator*(const Poly &o) const {
    Poly r;
    if (!known || !o.known)
      return unknown();
    for (auto &[m1, c1] : terms)
      for (auto &[m2, c2] : o.terms) {
        int64_t c;
        if (m1.size() + m2.size() > kMaxDegree || llvm::MulOverflow(c1, c2, c))
          return unknown();
        std::vector<Atom> m = m1;
        m.insert(m.end(), m2.begin(), m2.end());
        std::sort(m.begin(), m.end());
        r.addTerm(m, c);
        if (!r.known)
          return r;
      }
    return r;
  }
  /// True if the polynomial is a multiple of `n` for all atom values: every
  /// coefficient (the constant term too) is.
  bool isMultipleOf(int64_t n) const {
    return known && llvm::all_of(terms, [&](auto &term) {
             return term.second % n == 0;
           });
  }
  /// The value if the polynomial is a constant.
  std::optional<int64_t> constant() const {
    if (!known)
      return std::nullopt;
    if (terms.empty())
      return 0;
    if (terms.size() == 1 && terms.begin()->first.empty())
      return terms.begin()->second;
    return std::nullopt;
  }

private:
  void setUnknown() {
    known = false;
    terms.clear();
  }
  void addTerm(const std::vector<Atom> &m, int64_t c) {
    int64_t &slot = terms[m];
    if (llvm::AddOverflow(slot, c, slot))
      return setUnknown();
    if (slot == 0)
      terms.erase(m);
    if (terms.size() > kMaxTerms)
      setUnknown();
  }
  std::map<std::vector<Atom>, int64_t> terms;
  bool known = true;
};

/// Expresses an index value as a polynomial, looking through the integer
/// arithmetic that frontends emit for offsets and sizes. `budget` bounds the
/// number of operations visited (a DAG of shared operands would otherwise be
/// walked once per path); past it, values become opaque atoms.
Poly polyOf(OpFoldResult ofr, int &budget, int depth = 0) {
  if (std::optional<int64_t> c = getConstantIntValue(ofr))
    return Poly(*c);
  Value v = cast<Value>(ofr);
  if (depth < 16 && budget > 0) {
    --budget;
    if (auto add = v.getDefiningOp<arith::AddIOp>())
      return polyOf(add.getLhs(), budget, depth + 1) +
             polyOf(add.getRhs(), budget, depth + 1);
    if (auto sub = v.getDefiningOp<arith::SubIOp>())
      return polyOf(sub.getLhs(), budget, depth + 1) -
             polyOf(sub.getRhs(), budget, depth + 1);
    if (auto mul = v.getDefiningOp<arith::MulIOp>())
      return polyOf(mul.getLhs(), budget, depth + 1) *
             polyOf(mul.getRhs(), budget, depth + 1);
    // A constant index outside the source's rank is invalid at run time;
    // leave it opaque.
    if (auto dim = v.getDefiningOp<memref::DimOp>())
      if (std::optional<int64_t> d = dim.getConstantIndex())
        if (auto type = dyn_cast<MemRefType>(dim.getSource().getType());
            type && *d >= 0 && *d < type.getRank())
          return Poly::atom(
              {dim.getSource().getAsOpaquePointer(), kSize + int(*d)});
  }
  return Poly::atom({v.getAsOpaquePointer(), kValue});
}

/// polyOf with a fresh budget.
Poly polyOf(OpFoldResult ofr) {
  int budget = 64;
  return polyOf(ofr, budget);
}

/// The layout of a part relative to the base pointer of its root buffer.
struct Layout {
  Value root;
  Poly offset;
  SmallVector<Poly, 2> sizes, strides;
  /// Known byte alignment of the root's base pointer (0: unknown).
  int64_t rootAlignment = 0;
  /// The root is a buffer this function allocates (distinct from others).
  bool rootIsAllocation = false;
};

/// The layout of `v` as its own root, from its type. An unranked memref
/// (the source of a memref.cast or memref.reinterpret_cast) is a root of
/// unknown offset and no sizes or strides.
std::optional<Layout> rootLayout(Value v) {
  const void *ptr = v.getAsOpaquePointer();
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type) {
    if (!isa<UnrankedMemRefType>(v.getType()))
      return std::nullopt;
    Layout layout;
    layout.root = v;
    layout.offset = Poly::atom({ptr, kOffset});
    return layout;
  }
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return std::nullopt;
  auto entry = [&](int64_t value, int kind) {
    return ShapedType::isDynamic(value) ? Poly::atom({ptr, kind}) : Poly(value);
  };
  Layout layout;
  layout.root = v;
  layout.offset = entry(offset, kOffset);
  for (int64_t j = 0, e = type.getRank(); j < e; ++j) {
    layout.sizes.push_back(entry(type.getDimSize(j), kSize + int(j)));
    layout.strides.push_back(entry(strides[j], kStride + int(j)));
  }
  // An identity layout ties the strides to the sizes, which lets dynamic
  // shapes still prove `row stride >= columns`.
  if (type.getLayout().isIdentity()) {
    Poly stride(1);
    for (int64_t j = type.getRank() - 1; j >= 0; --j) {
      layout.strides[j] = stride;
      stride = stride * layout.sizes[j];
    }
  }
  // A function argument `{llvm.align = A}` promises an A-aligned (aligned)
  // base pointer.
  if (auto arg = dyn_cast<BlockArgument>(v))
    if (auto func =
            dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp()))
      if (arg.getOwner()->isEntryBlock())
        if (auto align = func.getArgAttrOfType<IntegerAttr>(
                arg.getArgNumber(), LLVM::LLVMDialect::getAlignAttrName()))
          if (align.getInt() > 0 && llvm::isPowerOf2_64(align.getInt()))
            layout.rootAlignment = align.getInt();
  Operation *def = v.getDefiningOp();
  if (auto alloc = dyn_cast_or_null<memref::AllocOp>(def)) {
    layout.rootIsAllocation = true;
    layout.rootAlignment = alloc.getAlignment().value_or(16);
  } else if (isa_and_nonnull<slin::AllocOp>(def)) {
    // A runtime buffer: slinrt_<target>_alloc returns 256-byte aligned
    // memory (Runtime.h).
    layout.rootIsAllocation = true;
    layout.rootAlignment = 256;
  } else if (auto alloca = dyn_cast_or_null<memref::AllocaOp>(def)) {
    // A stack slot is only aligned to its element type unless it says more
    // (llvm.alloca ... align <element size>).
    layout.rootIsAllocation = true;
    layout.rootAlignment = alloca.getAlignment().value_or(0);
  }
  return layout;
}

/// Follows `v` through view-like ops to its root buffer.
std::optional<Layout> analyze(Value v, int depth = 0) {
  if (depth > 32)
    return rootLayout(v);
  if (auto subview = v.getDefiningOp<memref::SubViewOp>()) {
    std::optional<Layout> src = analyze(subview.getSource(), depth + 1);
    int64_t rank = subview.getType().getRank();
    if (!src || rank != subview.getSourceType().getRank() ||
        src->strides.size() != size_t(rank))
      return rootLayout(v);
    Layout layout = *src;
    for (auto [j, off] : llvm::enumerate(subview.getMixedOffsets()))
      layout.offset = layout.offset + polyOf(off) * src->strides[j];
    for (auto [j, stride] : llvm::enumerate(subview.getMixedStrides()))
      layout.strides[j] = src->strides[j] * polyOf(stride);
    for (auto [j, size] : llvm::enumerate(subview.getMixedSizes()))
      layout.sizes[j] = polyOf(size);
    return layout;
  }
  if (auto cast = v.getDefiningOp<memref::ReinterpretCastOp>()) {
    // The offset of a reinterpret_cast is absolute from the source's base
    // pointer, so only the root's identity carries over.
    std::optional<Layout> src = analyze(cast.getSource(), depth + 1);
    if (!src)
      return rootLayout(v);
    Layout layout = *src;
    SmallVector<OpFoldResult> offsets = cast.getMixedOffsets();
    layout.offset = polyOf(offsets.front());
    layout.sizes.clear();
    layout.strides.clear();
    for (OpFoldResult size : cast.getMixedSizes())
      layout.sizes.push_back(polyOf(size));
    for (OpFoldResult stride : cast.getMixedStrides())
      layout.strides.push_back(polyOf(stride));
    return layout;
  }
  if (auto assume = v.getDefiningOp<memref::AssumeAlignmentOp>()) {
    // Same buffer and layout, with a base pointer aligned to (at least) the
    // assumed alignment: both are powers of two, so the larger one holds.
    std::optional<Layout> src = analyze(assume.getMemref(), depth + 1);
    if (!src)
      return rootLayout(v);
    src->rootAlignment =
        std::max<int64_t>(src->rootAlignment, assume.getAlignment());
    return src;
  }
  if (auto cast = v.getDefiningOp<memref::CastOp>()) {
    std::optional<Layout> src = analyze(cast.getSource(), depth + 1);
    if (!src)
      return rootLayout(v);
    // A cast keeps the descriptor; to an unranked type, the source's layout
    // still describes it.
    auto type = dyn_cast<MemRefType>(cast.getType());
    if (!type)
      return src;
    // A cast from an unranked memref says nothing the result type does not.
    if (src->sizes.size() != size_t(type.getRank()))
      return rootLayout(v);
    // Static information in the result type refines the source's.
    std::optional<Layout> own = rootLayout(v);
    if (own)
      for (int64_t j = 0, e = type.getRank(); j < e; ++j)
        if (!type.isDynamicDim(j))
          src->sizes[j] = own->sizes[j];
    return src;
  }
  return rootLayout(v);
}

/// Combines per-condition answers: any Disproven wins, then any Unknown.
struct Verdict {
  Adjacency value = Adjacency::Proven;
  std::string *reason;
  void disprove(const Twine &why) {
    if (value != Adjacency::Disproven && reason)
      *reason = why.str();
    value = Adjacency::Disproven;
  }
  void unknown(const Twine &why) {
    if (value == Adjacency::Proven) {
      value = Adjacency::Unknown;
      if (reason)
        *reason = why.str();
    }
  }
  /// Requires `p == 0`: a zero polynomial proves it, a non-zero constant
  /// disproves it, anything else is unknown.
  ///
  /// With `onlyIfApplies`, the condition does not bind for every run-time
  /// size (the run-time check waives it for one-row or one-column parts and
  /// one-row views), so a violation makes the answer unknown, not disproven.
  void requireZero(const Poly &p, const Twine &what,
                   bool onlyIfApplies = false) {
    std::optional<int64_t> c = p.constant();
    if (!c)
      unknown(what + " is not known at compile time");
    else if (*c != 0 && onlyIfApplies)
      unknown(what + " does not hold unless a size is 1 at run time");
    else if (*c != 0)
      disprove(what + " does not hold");
  }
};
} // namespace

Adjacency mlir::slin::classifyAdjacency(ValueRange parts, Type elementType,
                                        int64_t alignment,
                                        std::string *reason) {
  Verdict verdict{Adjacency::Proven, reason};
  SmallVector<Layout, 4> layouts;
  for (auto [i, part] : llvm::enumerate(parts)) {
    auto type = cast<MemRefType>(part.getType());
    // (2) One element type, the view's.
    if (type.getElementType() != elementType) {
      verdict.disprove("part #" + Twine(i) + " has another element type");
      continue;
    }
    std::optional<Layout> layout = analyze(part);
    if (!layout) {
      verdict.unknown("part #" + Twine(i) + " has a non-strided layout");
      continue;
    }
    layouts.push_back(std::move(*layout));
  }
  if (verdict.value == Adjacency::Disproven ||
      layouts.size() != parts.size())
    return verdict.value;

  int64_t rank = cast<MemRefType>(parts.front().getType()).getRank();
  // Rank 1: each element is a "row" of one element and the row stride is 1.
  Poly ld = rank == 2 ? layouts.front().strides[0] : Poly(1);
  Poly cols = rank == 2 ? layouts.front().sizes[1] : Poly(1);
  // The rules of Adjacency.h, part by part (non-empty parts; the pass drops
  // statically empty ones). (3): a column stride (rank 1: stride) other than
  // 1 is allowed for one column (one element); every part's row stride is
  // the common `ld`, one-row parts included; every part has the columns of
  // the first one.
  for (auto [i, layout] : llvm::enumerate(layouts)) {
    std::string part = ("part #" + Twine(i)).str();
    if (rank == 2) {
      std::optional<int64_t> k = layout.sizes[1].constant();
      if (!k || *k != 1)
        verdict.requireZero(layout.strides[1] - Poly(1),
                            part + ": unit column stride",
                            /*onlyIfApplies=*/!k);
      verdict.requireZero(layout.strides[0] - ld, part + ": common row stride");
      verdict.requireZero(layout.sizes[1] - cols,
                          part + ": columns equal to part #0's");
    } else {
      std::optional<int64_t> n = layout.sizes[0].constant();
      if (!n || *n > 1)
        verdict.requireZero(layout.strides[0] - Poly(1), part + ": unit stride",
                            /*onlyIfApplies=*/!n);
    }
    if (i == 0)
      continue;
    const Layout &prev = layouts[i - 1];
    // (1) One base allocation.
    if (prev.root != layout.root) {
      if (prev.rootIsAllocation && layout.rootIsAllocation)
        verdict.disprove(part + " is in another allocation");
      else
        verdict.unknown(part + " may be in another allocation");
      continue;
    }
    // (4) Each part starts where the previous one ends.
    verdict.requireZero(layout.offset - (prev.offset + prev.sizes[0] * ld),
                        part + " starting where the previous part ends");
  }
  if (rank == 2 && layouts.size() > 1) {
    // (3) Rows of the view must not overlap: ld >= K, when the view has more
    // than one row (as at run time). Statically, it has unless dynamic
    // sizes may leave a single row.
    int64_t minRows = 0;
    for (const Layout &layout : layouts)
      minRows += std::min<int64_t>(2, layout.sizes[0].constant().value_or(0));
    std::optional<int64_t> slack = (ld - cols).constant();
    if (!slack)
      verdict.unknown("row stride >= columns is not known at compile time");
    else if (*slack < 0 && minRows >= 2)
      verdict.disprove("row stride is smaller than the columns");
    else if (*slack < 0)
      verdict.unknown("row stride is smaller than the columns, which only "
                      "a one-row view allows");
  }
  // (5) Alignment of the view's first element: base + offset bytes. Only the
  // base's known alignment (capped at the requirement) can disprove it: a
  // base of unknown alignment may make any offset aligned.
  const Layout &first = layouts.front();
  int64_t bytes = std::max<int64_t>(1, elementType.getIntOrFloatBitWidth() / 8);
  Poly offsetBytes = first.offset * Poly(bytes);
  std::optional<int64_t> constantBytes = offsetBytes.constant();
  int64_t knownBase =
      first.rootAlignment > 0 ? std::min(first.rootAlignment, alignment) : 1;
  if (constantBytes && *constantBytes % knownBase != 0)
    verdict.disprove("the first element is not " + Twine(alignment) +
                     "-byte aligned");
  else if (first.rootAlignment == 0 || !offsetBytes.isMultipleOf(alignment))
    verdict.unknown("alignment of the first element is not known");
  else if (first.rootAlignment % alignment != 0)
    verdict.unknown("the base buffer's alignment is below the requirement");
  return verdict.value;
}

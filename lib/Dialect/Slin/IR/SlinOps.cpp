//===- SlinOps.cpp - slin dialect operations --------------------*- C++ -*-===//
//
// Verifiers of the `slin` operations, and the interfaces of
// `slin.view_concat`. ODS checks ranks and element types; the verifiers here
// check what ODS cannot say: sizes that must agree across operands (K, Σ N_i,
// bias lengths), element types that must match, the epilogue/bias pairing,
// and that no written operand is the same value as a read one. Dynamic sizes
// are accepted; the runtime checks them. Every memref operand (and
// view_concat's result) must have a strided layout in the default memory space:
// the lowering reads layouts with memref.extract_strided_metadata, builds
// subviews and passes strided descriptors of plain pointers to the runtime.
// Static sums of sizes must fit in int64. The scaled (FP8) ops also check
// what the FP8 GEMMs require: no e5m2 x e5m2, static K and N multiples of
// 16, scale vectors sized for the scaling. `slin.alloc` results have the
// identity layout, which the lowering's `memref.view` of the runtime's bytes
// produces.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Dialect/Slin/IR/SlinOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::slin;

namespace {
/// True when both sizes are static and differ.
bool sizesDiffer(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

MemRefType memrefOf(Value v) { return cast<MemRefType>(v.getType()); }

/// Checks that `what` has `expected` `unit` ("rows", "columns", "elements")
/// where both sizes are static; `origin` says where `expected` comes from.
LogicalResult verifySize(Operation *op, const Twine &what, int64_t size,
                         StringRef unit, int64_t expected,
                         const Twine &origin) {
  if (!sizesDiffer(size, expected))
    return success();
  return op->emitOpError() << what << " has " << size << " " << unit
                           << ", expected " << expected << " (" << origin
                           << ")";
}

/// Checks that `actual`, the element type of `what`, is `expected`, the one
/// of `whose` ("the input's"); a non-empty `why` follows the message.
LogicalResult verifyElementType(Operation *op, const Twine &what, Type actual,
                                const Twine &whose, Type expected,
                                StringRef why = "") {
  if (actual == expected)
    return success();
  InFlightDiagnostic diag = op->emitOpError()
                            << what << " element type " << actual
                            << " differs from " << whose << " " << expected;
  if (!why.empty())
    diag << ": " << why;
  return diag;
}

/// Sum of dim 0 over `parts`, or kDynamic if any is dynamic. Fails (with an
/// error naming `what`) when the sum does not fit in int64: it would wrap
/// around, possibly onto kDynamic, and no buffer has that many rows.
FailureOr<int64_t> sumOfRows(Operation *op, ValueRange parts, StringRef what) {
  int64_t sum = 0;
  for (Value p : parts) {
    int64_t n = memrefOf(p).getDimSize(0);
    if (ShapedType::isDynamic(n))
      return ShapedType::kDynamic;
    if (llvm::AddOverflow(sum, n, sum))
      return op->emitOpError()
             << "the sum of the " << what << "' rows overflows int64";
  }
  return sum;
}

/// Checks that the memref `type` of operand or result #`index` (`kind`) has a
/// strided layout in the default memory space.
LogicalResult verifyStridedDefaultSpace(Operation *op, Type type,
                                        StringRef kind, unsigned index) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref)
    return success();
  if (!memref.isStrided())
    return op->emitOpError() << kind << " #" << index << " has type " << type
                             << ", expected a strided layout";
  if (memref.getMemorySpace())
    return op->emitOpError() << kind << " #" << index << " has type " << type
                             << ", expected the default memory space";
  return success();
}

/// verifyStridedDefaultSpace over all operands and results of `op`.
LogicalResult verifyStridedOperands(Operation *op) {
  for (OpOperand &operand : op->getOpOperands())
    if (failed(verifyStridedDefaultSpace(op, operand.get().getType(), "operand",
                                         operand.getOperandNumber())))
      return failure();
  for (OpResult result : op->getResults())
    if (failed(verifyStridedDefaultSpace(op, result.getType(), "result",
                                         result.getResultNumber())))
      return failure();
  return success();
}

/// Checks that the written operand `output` (named `outputName`) is not the
/// same SSA value as one of the read operands `inputs` (`inputName` #i, or
/// just `inputName` when there is only one). The runtime would detect the
/// overlap only at run time; the same value is a certain overlap.
LogicalResult verifyNotAnInput(Operation *op, Value output,
                               StringRef outputName, ValueRange inputs,
                               StringRef inputName, bool numbered = true) {
  for (auto [i, input] : llvm::enumerate(inputs)) {
    if (input != output)
      continue;
    InFlightDiagnostic diag = op->emitOpError()
                              << outputName << " is the same value as "
                              << inputName;
    if (numbered)
      diag << " #" << i;
    return diag << ": an output must not overlap an input";
  }
  return success();
}

/// Checks that every weight part has `k` columns (or, when `k` is dynamic,
/// the columns of the first part with a static count).
LogicalResult verifyWeightColumns(Operation *op, ValueRange weights, int64_t k,
                                  StringRef kOrigin) {
  if (weights.empty())
    return op->emitOpError("expects at least one weight part");
  std::string origin = kOrigin.str();
  for (auto [i, w] : llvm::enumerate(weights)) {
    int64_t cols = memrefOf(w).getDimSize(1);
    if (failed(verifySize(op, "weight part #" + Twine(i), cols, "columns", k,
                          origin)))
      return failure();
    if (ShapedType::isDynamic(k) && !ShapedType::isDynamic(cols)) {
      k = cols;
      origin = "weight part #" + std::to_string(i) + "'s";
    }
  }
  return success();
}

/// Checks the biases of a split linear op: none or one per weight part, bias
/// part #i with the rows of weight part #i as elements and, when
/// `elementType` is given, of that element type (the one of `elementOf`).
LogicalResult verifyBiasParts(Operation *op, ValueRange weights,
                              ValueRange biases, Type elementType = {},
                              StringRef elementOf = "") {
  if (!biases.empty() && biases.size() != weights.size())
    return op->emitOpError()
           << "expects " << weights.size()
           << " bias parts (one per weight part) or none, got "
           << biases.size();
  for (auto [i, parts] : llvm::enumerate(llvm::zip(weights, biases))) {
    auto [w, b] = parts;
    MemRefType biasType = memrefOf(b);
    if (elementType &&
        failed(verifyElementType(op, "bias part #" + Twine(i),
                                 biasType.getElementType(), elementOf,
                                 elementType)))
      return failure();
    if (failed(verifySize(op, "bias part #" + Twine(i), biasType.getDimSize(0),
                          "elements", memrefOf(w).getDimSize(0),
                          "the rows of weight part #" + Twine(i))))
      return failure();
  }
  return success();
}

/// Checks the output of a split linear op: the input's rows, and as columns
/// the sum of the rows of `rowSources` (`sumOrigin` says how it is known).
/// Returns that sum (kDynamic when a part's rows are dynamic).
FailureOr<int64_t> verifyLinearOutput(Operation *op, MemRefType outputType,
                                      MemRefType inputType,
                                      ValueRange rowSources,
                                      StringRef sumOrigin) {
  if (failed(verifySize(op, "output", outputType.getDimSize(0), "rows",
                        inputType.getDimSize(0), "the input's rows")))
    return failure();
  FailureOr<int64_t> n = sumOfRows(op, rowSources, "weight parts");
  if (failed(n))
    return failure();
  if (failed(verifySize(op, "output", outputType.getDimSize(1), "columns", *n,
                        sumOrigin)))
    return failure();
  return n;
}
} // namespace

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  if (failed(verifyStridedOperands(*this)))
    return failure();
  MemRefType inputType = memrefOf(getInput());
  MemRefType outputType = memrefOf(getOutput());
  if (failed(verifyElementType(*this, "output", outputType.getElementType(),
                               "the input's", inputType.getElementType())))
    return failure();
  if (failed(verifyWeightColumns(*this, getWeights(), inputType.getDimSize(1),
                                 "the input's K")))
    return failure();
  if (failed(verifyNotAnInput(*this, getOutput(), "output", getInput(),
                              "the input", /*numbered=*/false)) ||
      failed(verifyNotAnInput(*this, getOutput(), "output", getWeights(),
                              "weight part")))
    return failure();
  if (failed(verifyBiasParts(*this, getWeights(), getBiases())))
    return failure();
  // N_i is known from weight part #i's rows or, when those are dynamic, from
  // bias part #i's elements (the passes combine weights and biases
  // separately, so both sums must agree with the output).
  SmallVector<Value> rowSources(getWeights());
  bool fromBias = false;
  for (auto [i, b] : llvm::enumerate(getBiases()))
    if (memrefOf(rowSources[i]).isDynamicDim(0) &&
        !memrefOf(b).isDynamicDim(0)) {
      rowSources[i] = b;
      fromBias = true;
    }
  return verifyLinearOutput(*this, outputType, inputType, rowSources,
                            fromBias ? "the sum of the parts' rows, from the "
                                       "weight and bias sizes"
                                     : "the sum of the weight parts' rows");
}

//===----------------------------------------------------------------------===//
// LinearDgradOp
//===----------------------------------------------------------------------===//

LogicalResult LinearDgradOp::verify() {
  if (failed(verifyStridedOperands(*this)))
    return failure();
  MemRefType dyType = memrefOf(getGradOutput());
  MemRefType dxType = memrefOf(getGradInput());
  if (failed(verifyElementType(*this, "grad_input", dxType.getElementType(),
                               "grad_output's", dyType.getElementType())))
    return failure();
  if (failed(verifyWeightColumns(*this, getWeights(), dxType.getDimSize(1),
                                 "grad_input's K")))
    return failure();
  if (failed(verifyNotAnInput(*this, getGradInput(), "grad_input",
                              getGradOutput(), "grad_output",
                              /*numbered=*/false)) ||
      failed(verifyNotAnInput(*this, getGradInput(), "grad_input",
                              getWeights(), "weight part")))
    return failure();
  if (failed(verifySize(*this, "grad_input", dxType.getDimSize(0), "rows",
                        dyType.getDimSize(0), "grad_output's rows")))
    return failure();
  FailureOr<int64_t> n = sumOfRows(*this, getWeights(), "weight parts");
  if (failed(n))
    return failure();
  return verifySize(*this, "grad_output", dyType.getDimSize(1), "columns", *n,
                    "the sum of the weight parts' rows");
}

//===----------------------------------------------------------------------===//
// GemmOp
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::verify() {
  if (failed(verifyStridedOperands(*this)))
    return failure();
  MemRefType aType = memrefOf(getA()), bType = memrefOf(getB()),
             dType = memrefOf(getD());
  Type elementType = aType.getElementType();
  if (failed(verifyElementType(*this, "operand B", bType.getElementType(),
                               "operand A's", elementType)) ||
      failed(verifyElementType(*this, "D", dType.getElementType(),
                               "operand A's", elementType)))
    return failure();
  if (failed(verifyNotAnInput(*this, getD(), "D", getA(), "operand A",
                              /*numbered=*/false)) ||
      failed(verifyNotAnInput(*this, getD(), "D", getB(), "operand B",
                              /*numbered=*/false)))
    return failure();
  int64_t m = aType.getDimSize(getTransposeA() ? 1 : 0);
  int64_t k = aType.getDimSize(getTransposeA() ? 0 : 1);
  int64_t kb = bType.getDimSize(getTransposeB() ? 1 : 0);
  int64_t n = bType.getDimSize(getTransposeB() ? 0 : 1);
  if (failed(verifySize(*this, "op(B)", kb, "rows", k,
                        "the columns of op(A)")) ||
      failed(verifySize(*this, "D", dType.getDimSize(0), "rows", m,
                        "the rows of op(A)")) ||
      failed(verifySize(*this, "D", dType.getDimSize(1), "columns", n,
                        "the columns of op(B)")))
    return failure();
  Epilogue epilogue = getEpilogue();
  if (epilogue == Epilogue::none || epilogue == Epilogue::accumulate) {
    if (getBias())
      return emitOpError() << "a bias operand needs the 'bias' or 'bias_grad' "
                              "epilogue, got '"
                           << stringifyEpilogue(epilogue) << "'";
    return success();
  }
  if (!getBias())
    return emitOpError() << "epilogue '" << stringifyEpilogue(epilogue)
                         << "' needs a bias operand";
  MemRefType biasType = memrefOf(getBias());
  if (failed(verifyElementType(*this, "bias", biasType.getElementType(),
                               "operand A's", elementType)))
    return failure();
  bool isGrad = epilogue == Epilogue::bias_grad;
  return verifySize(*this, "bias", biasType.getDimSize(0), "elements",
                    isGrad ? dType.getDimSize(0) : dType.getDimSize(1),
                    isGrad ? "the rows of D" : "the columns of D");
}

//===----------------------------------------------------------------------===//
// ScaledLinearOp / ScaledGemmOp
//===----------------------------------------------------------------------===//

namespace {
/// Checks the FP8 operand pair of a scaled GEMM: cuBLASLt has no
/// e5m2 × e5m2 GEMM.
LogicalResult verifyFP8Pair(Operation *op, Type a, Type b, StringRef aName,
                            StringRef bName) {
  if (isa<Float8E5M2Type>(a) && isa<Float8E5M2Type>(b))
    return op->emitOpError()
           << aName << " and " << bName
           << " are both f8E5M2: e5m2 x e5m2 is not supported (one of them "
              "must be f8E4M3FN)";
  return success();
}

/// Checks that the static `size` of `what` is a multiple of 16, as the FP8
/// GEMMs require of K and N.
LogicalResult verifyMultipleOf16(Operation *op, int64_t size,
                                 const Twine &what) {
  if (!ShapedType::isDynamic(size) && size % 16 != 0)
    return op->emitOpError() << what << " is " << size
                             << ", expected a multiple of 16 (FP8 GEMM)";
  return success();
}

/// Checks the static size of the scale vector `scale` (named `name`) of a
/// scaled GEMM: 1 for tensorwise, `rows` (the rows of `rowsOf`) for
/// outer_vector.
LogicalResult verifyScaleSize(Operation *op, Value scale, StringRef name,
                              Scaling scaling, int64_t rows, StringRef rowsOf) {
  int64_t size = memrefOf(scale).getDimSize(0);
  if (scaling == Scaling::tensorwise)
    return verifySize(op, name, size, "elements", 1, "tensorwise");
  return verifySize(op, name, size, "elements", rows, rowsOf + ", outer_vector");
}
} // namespace

LogicalResult ScaledLinearOp::verify() {
  if (failed(verifyStridedOperands(*this)))
    return failure();
  MemRefType inputType = memrefOf(getInput());
  MemRefType outputType = memrefOf(getOutput());
  if (failed(verifyWeightColumns(*this, getWeights(), inputType.getDimSize(1),
                                 "the input's K")))
    return failure();
  Type weightElement = memrefOf(getWeights().front()).getElementType();
  for (auto [i, w] : llvm::enumerate(getWeights()))
    if (failed(verifyElementType(*this, "weight part #" + Twine(i),
                                 memrefOf(w).getElementType(), "part #0's",
                                 weightElement,
                                 "the parts share one FP8 type")))
      return failure();
  if (failed(verifyFP8Pair(*this, inputType.getElementType(), weightElement,
                           "the input", "the weight parts")))
    return failure();
  if (getScaling() == Scaling::tensorwise && getWeights().size() > 1)
    return emitOpError() << "tensorwise scaling with " << getWeights().size()
                         << " weight parts: parts with their own scales "
                            "need outer_vector";
  // The output (float, rank 2) cannot be the same value as an FP8 operand
  // or a bias, so no verifyNotAnInput here.
  if (failed(verifyMultipleOf16(*this, inputType.getDimSize(1),
                                "K (the input's columns)")))
    return failure();
  for (auto [i, w] : llvm::enumerate(getWeights()))
    if (failed(verifyMultipleOf16(*this, memrefOf(w).getDimSize(0),
                                  "N_" + Twine(i) + " (the rows of part #" +
                                      Twine(i) + ")")))
      return failure();
  if (failed(verifyBiasParts(*this, getWeights(), getBiases(),
                             outputType.getElementType(), "the output's")))
    return failure();
  FailureOr<int64_t> n =
      verifyLinearOutput(*this, outputType, inputType, getWeights(),
                         "the sum of the weight parts' rows");
  if (failed(n))
    return failure();
  // The weight scale spans the concatenated weight's rows: Σ N_i, known
  // from the parts or else from the output.
  int64_t scaleRows = ShapedType::isDynamic(*n) ? outputType.getDimSize(1) : *n;
  if (failed(verifyScaleSize(*this, getInputScale(), "input_scale",
                             getScaling(), inputType.getDimSize(0),
                             "the input's rows")) ||
      failed(verifyScaleSize(*this, getWeightScale(), "weight_scale",
                             getScaling(), scaleRows,
                             "the sum of the weight parts' rows")))
    return failure();
  return success();
}

LogicalResult ScaledGemmOp::verify() {
  if (failed(verifyStridedOperands(*this)))
    return failure();
  MemRefType aType = memrefOf(getA()), bType = memrefOf(getB()),
             dType = memrefOf(getD());
  if (failed(verifyFP8Pair(*this, aType.getElementType(),
                           bType.getElementType(), "operand A", "operand B")))
    return failure();
  // D (float) cannot be the same value as an FP8 operand.
  int64_t m = aType.getDimSize(0), k = aType.getDimSize(1),
          n = bType.getDimSize(0);
  if (failed(verifySize(*this, "operand B", bType.getDimSize(1), "columns", k,
                        "the columns of operand A: both are K-major")))
    return failure();
  if (failed(verifyMultipleOf16(*this, k, "K (the columns of operand A)")) ||
      failed(verifyMultipleOf16(*this, n, "N (the rows of operand B)")))
    return failure();
  if (failed(verifySize(*this, "D", dType.getDimSize(0), "rows", m,
                        "the rows of operand A")) ||
      failed(verifySize(*this, "D", dType.getDimSize(1), "columns", n,
                        "the rows of operand B")))
    return failure();
  if (Value bias = getBias()) {
    MemRefType biasType = memrefOf(bias);
    if (failed(verifyElementType(*this, "bias", biasType.getElementType(),
                                 "D's", dType.getElementType())) ||
        failed(verifySize(*this, "bias", biasType.getDimSize(0), "elements",
                          dType.getDimSize(1), "the columns of D")))
      return failure();
  }
  if (failed(verifyScaleSize(*this, getScaleA(), "scale_a", getScaling(), m,
                             "the rows of operand A")) ||
      failed(verifyScaleSize(*this, getScaleB(), "scale_b", getScaling(), n,
                             "the rows of operand B")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// ConcatOp / ViewConcatOp / IsAdjacentOp
//===----------------------------------------------------------------------===//

namespace {
/// Common checks of an op that stacks `parts` along dim 0 into `whole`:
/// equal rank, equal trailing size, Σ rows.
LogicalResult verifyStacking(Operation *op, ValueRange parts, MemRefType whole,
                             StringRef wholeName) {
  if (parts.empty())
    return op->emitOpError("expects at least one part");
  int64_t rank = whole.getRank();
  for (auto [i, p] : llvm::enumerate(parts)) {
    MemRefType partType = memrefOf(p);
    if (partType.getRank() != rank)
      return op->emitOpError()
             << "part #" << i << " has rank " << partType.getRank()
             << ", expected " << rank << " (the " << wholeName << "'s rank)";
    if (rank == 2 &&
        failed(verifySize(op, "part #" + Twine(i), partType.getDimSize(1),
                          "columns", whole.getDimSize(1),
                          "the " + wholeName + "'s")))
      return failure();
  }
  FailureOr<int64_t> rows = sumOfRows(op, parts, "parts");
  if (failed(rows))
    return failure();
  return verifySize(op, wholeName, whole.getDimSize(0),
                    rank == 2 ? "rows" : "elements", *rows,
                    "the sum over the parts");
}
} // namespace

LogicalResult ConcatOp::verify() {
  if (failed(verifyStridedOperands(*this)))
    return failure();
  if (failed(verifyNotAnInput(*this, getOutput(), "output", getParts(),
                              "part")))
    return failure();
  // FP8 values mean nothing without their scales: copied, never converted.
  Type outputElement = memrefOf(getOutput()).getElementType();
  for (auto [i, p] : llvm::enumerate(getParts())) {
    Type partElement = memrefOf(p).getElementType();
    if ((isa<Float8E4M3FNType, Float8E5M2Type>(partElement) ||
         isa<Float8E4M3FNType, Float8E5M2Type>(outputElement)) &&
        failed(verifyElementType(*this, "part #" + Twine(i), partElement,
                                 "the output's", outputElement,
                                 "FP8 parts are copied, never converted")))
      return failure();
  }
  return verifyStacking(*this, getParts(), memrefOf(getOutput()), "output");
}

LogicalResult ViewConcatOp::verify() {
  if (failed(verifyStridedOperands(*this)))
    return failure();
  MemRefType resultType = memrefOf(getResult());
  if (failed(verifyStacking(*this, getParts(), resultType, "result")))
    return failure();
  for (auto [i, p] : llvm::enumerate(getParts()))
    if (failed(verifyElementType(*this, "part #" + Twine(i),
                                 memrefOf(p).getElementType(), "the result's",
                                 resultType.getElementType(),
                                 "a view cannot convert")))
      return failure();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(resultType.getStridesAndOffset(strides, offset)) ||
      strides.back() != 1)
    return emitOpError("result must have a strided layout with unit "
                       "innermost stride");
  return success();
}

/// A view is never speculated: it is only valid where adjacency holds, which
/// the `scf.if` around it (or the static proof that created it) establishes.
Speculation::Speculatability ViewConcatOp::getSpeculatability() {
  return Speculation::NotSpeculatable;
}

/// The view aliases its parts; part #0 stands for all of them (adjacent
/// non-empty parts share one allocation).
Value ViewConcatOp::getViewSource() { return getParts().front(); }

LogicalResult IsAdjacentOp::verify() {
  if (failed(verifyStridedOperands(*this)))
    return failure();
  if (getParts().empty())
    return emitOpError("expects at least one part");
  MemRefType first = memrefOf(getParts().front());
  int64_t rank = first.getRank();
  for (auto [i, p] : llvm::enumerate(getParts())) {
    MemRefType partType = memrefOf(p);
    if (partType.getRank() != rank)
      return emitOpError() << "part #" << i << " has rank "
                           << partType.getRank() << ", expected " << rank
                           << " (part #0's rank)";
    if (failed(verifyElementType(*this, "part #" + Twine(i),
                                 partType.getElementType(), "part #0's",
                                 first.getElementType())))
      return failure();
  }
  // Widths: every static column count equals the first static one.
  if (rank == 2) {
    int64_t cols = ShapedType::kDynamic;
    unsigned origin = 0;
    for (auto [i, p] : llvm::enumerate(getParts())) {
      int64_t k = memrefOf(p).getDimSize(1);
      if (failed(verifySize(*this, "part #" + Twine(i), k, "columns", cols,
                            "part #" + Twine(origin) + "'s")))
        return failure();
      if (ShapedType::isDynamic(cols) && !ShapedType::isDynamic(k)) {
        cols = k;
        origin = i;
      }
    }
  }
  int64_t alignment = getAlignment();
  if (alignment <= 0 || !llvm::isPowerOf2_64(alignment))
    return emitOpError() << "alignment must be a positive power of two, got "
                         << alignment;
  return success();
}

//===----------------------------------------------------------------------===//
// PreferPerPartOp
//===----------------------------------------------------------------------===//

LogicalResult PreferPerPartOp::verify() {
  if (getWeights().size() < 2)
    return emitOpError() << "expects at least two weight parts, got "
                         << getWeights().size();
  return success();
}

//===----------------------------------------------------------------------===//
// AllocOp / DeallocOp
//===----------------------------------------------------------------------===//

LogicalResult AllocOp::verify() {
  MemRefType type = getType();
  if (type.getRank() == 0)
    return emitOpError() << "result has type " << type
                         << ", expected a rank of at least 1";
  if (!type.getLayout().isIdentity())
    return emitOpError() << "result has type " << type
                         << ", expected the identity layout";
  if (type.getMemorySpace())
    return emitOpError() << "result has type " << type
                         << ", expected the default memory space";
  if (getDynamicSizes().size() != static_cast<size_t>(type.getNumDynamicDims()))
    return emitOpError() << "expects " << type.getNumDynamicDims()
                         << " dynamic size operands (one per dynamic "
                            "dimension of the result), got "
                         << getDynamicSizes().size();
  return success();
}

LogicalResult DeallocOp::verify() { return verifyStridedOperands(*this); }

#define GET_OP_CLASSES
#include "splitlinear/Dialect/Slin/IR/SlinOps.cpp.inc"

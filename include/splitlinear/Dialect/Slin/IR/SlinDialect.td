//===- SlinDialect.td - slin dialect definition ------------*- tablegen -*-===//
//
// The `slin` dialect: linear layers whose weight (and bias) is split into
// several buffers, at the memref level, where adjacency of the parts is a
// property of the buffers.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_DIALECT_SLIN_IR_SLINDIALECT_TD
#define SPLITLINEAR_DIALECT_SLIN_IR_SLINDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Slin_Dialect : Dialect {
  let name = "slin";
  let summary = "Split-parameter linear layers at the memref level";
  let description = [{
    The `slin` dialect models `y = x · concat(W_0..W_{n-1})ᵀ + concat(b_0..b_{n-1})`
    where the parts `W_i` / `b_i` are separate buffers (separate
    `nn.Parameter`s in PyTorch). Whether the concatenation must be copied is a
    property of the buffers (do the parts sit back to back in one allocation
    with one layout?), so the dialect works on memrefs, in destination-passing
    style: every op writes into buffers its caller owns.

    `slin.linear` / `slin.linear_dgrad` take the parts; the
    `slin-elide-concat` pass replaces the parts by one buffer: a zero-copy
    `slin.view_concat` when adjacency is proven, a materializing `slin.concat`
    when it is disproven, and an `scf.if` on `slin.is_adjacent` otherwise.
    `slin-expand-linear` then rewrites them into `slin.gemm`, which the
    conversion to the runtime turns into cuBLASLt (or CPU BLAS) calls.

    FP8: `slin.scaled_linear` is the same layer over an FP8 input and FP8
    weight parts that keep their own scales (spread over one outer-vector
    weight scale, cuBLASLt `OUTER_VEC_32F`); its parts are combined by the
    same passes (FP8 parts are copied, never converted) and it becomes
    `slin.scaled_gemm`, the runtime's FP8 GEMM. The FP8 types `f8E4M3FN`
    and `f8E5M2` reach only these two ops and the ops that move parts
    (`slin.concat`, `slin.view_concat`, `slin.is_adjacent`,
    `slin.prefer_per_part`, `slin.alloc`, `slin.dealloc`).
  }];
  let cppNamespace = "::mlir::slin";
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  // The dialect defines no argument or discardable attributes: a `slin.*`
  // one is an error (IR that still marks its context `{slin.context}` would
  // otherwise run on the default context, and a `memref.alloc {slin.buffer}`
  // would silently stay a host allocation).
  let hasRegionArgAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let dependentDialects = [
    "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def Slin_Epilogue : I32EnumAttr<"Epilogue", "GEMM epilogue", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"bias", 1>,
    I32EnumAttrCase<"bias_grad", 2>,
    I32EnumAttrCase<"accumulate", 3>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::slin";
}

def Slin_EpilogueAttr : EnumAttr<Slin_Dialect, Slin_Epilogue, "epilogue"> {
  let summary = "what a slin.gemm does besides the product";
  let description = [{
    `none`: `D = op(A)·op(B)`. `bias`: `D = op(A)·op(B) + bias` with `bias[N]`
    broadcast over the rows of D (fprop, cuBLASLt `EPILOGUE_BIAS`).
    `bias_grad`: `D = op(A)·op(B)` and `bias[m] = Σ_k op(A)[m, k]` (wgrad with
    the fused bias gradient, cuBLASLt `EPILOGUE_BGRAD*`). `accumulate`:
    `D = op(A)·op(B) + D`, no bias (a GEMM with beta = 1: dgrad summing the
    products of weight parts that are not adjacent).
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Slin_Strategy : I32EnumAttr<"Strategy",
    "how weight parts that are not adjacent are combined", [
    I32EnumAttrCase<"fused", 0>,
    I32EnumAttrCase<"per_part", 1>,
    I32EnumAttrCase<"automatic", 2, "auto">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::slin";
}

def Slin_StrategyAttr : EnumAttr<Slin_Dialect, Slin_Strategy, "strategy"> {
  let summary = "how a slin.linear / slin.linear_dgrad combines its weight parts";
  let description = [{
    Each value has one meaning, the same for `slin.linear`,
    `slin.linear_dgrad` and `slin.scaled_linear`:

    * `fused` (the default): the parts become one buffer and the op runs one
      GEMM. `slin-elide-concat` makes that buffer a zero-copy view when the
      parts are adjacent (proven, or checked at run time) and a copy
      otherwise; `slin-expand-linear`, which sees no layouts, copies.
    * `per_part`: the parts stay parts and the op runs one GEMM per part,
      never copying the weights: fprop writes each part's column block of
      the output, dgrad reads each part's column block of the output
      gradient and accumulates into the input gradient.
    * `auto`: a view when the parts are adjacent; otherwise
      `slin.prefer_per_part` asks the runtime, on every call, whether one
      GEMM per part beats the copy for this many rows, parts and bytes. Only
      `slin-elide-concat` builds that choice; `slin-expand-linear` rejects a
      multi-part op that still has `auto`.

    With one weight part every value means one GEMM on that part.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Slin_Path : I32EnumAttr<"Path",
    "the way a kernel call combined its weight parts", [
    I32EnumAttrCase<"view", 0>,
    I32EnumAttrCase<"copy", 1>,
    I32EnumAttrCase<"per_part", 2>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::slin";
}

def Slin_Scaling : I32EnumAttr<"Scaling",
    "how a scaled (FP8) GEMM applies its dequantization factors", [
    I32EnumAttrCase<"tensorwise", 0>,
    I32EnumAttrCase<"outer_vector", 1>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::slin";
}

def Slin_ScalingAttr : EnumAttr<Slin_Dialect, Slin_Scaling, "scaling"> {
  let summary = "how slin.scaled_linear / slin.scaled_gemm apply their scales";
  let description = [{
    The scales are dequantization factors (`scale_inv`, fp32): an FP8 value
    `v8` stands for `s · v8`. The values are those of `slinrt_scaling`
    (include/splitlinear/Runtime/Runtime.h).

    * `tensorwise` (0): one factor per operand, `memref<1xf32>` each
      (cuBLASLt `SCALAR_32F`). One scale for the whole weight, so a split
      weight whose parts have their own scales cannot use it.
    * `outer_vector` (1): one factor per row of each operand: `[M]` for
      the input (per row of the output) and `[N]` for the weight (per column
      of the output), cuBLASLt `OUTER_VEC_32F` on both sides (sm90). A split
      weight spreads each part's scale over that part's rows, so one GEMM
      serves parts with their own scales.
  }];
  let assemblyFormat = "`<` $value `>`";
}

include "splitlinear/Dialect/Slin/IR/SlinTypes.td"

#endif // SPLITLINEAR_DIALECT_SLIN_IR_SLINDIALECT_TD

//===- Passes.td - slin transformation passes --------------*- tablegen -*-===//
//
// Passes that rewrite `slin` ops: concat elision and expansion into GEMMs.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_DIALECT_SLIN_TRANSFORMS_PASSES_TD
#define SPLITLINEAR_DIALECT_SLIN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def SlinElideConcat : Pass<"slin-elide-concat"> {
  let summary = "Replace split weight/bias parts by a view, a copy or a checked view";
  let description = [{
    For every `slin.linear` / `slin.linear_dgrad` / `slin.scaled_linear`
    with more than one weight part, decides how the parts become one buffer,
    for the weights and (independently) for the biases (FP8 weight parts of
    `slin.scaled_linear` become one FP8 buffer, copied without conversion;
    its `weight_scale` already spans the combined rows):

    * proven adjacent (views of one allocation whose offsets, strides and
      alignment are known or provably equal): `slin.view_concat`, no copy and
      no run-time check;
    * proven not adjacent (distinct allocations, another element type, a
      transposed part, offsets that provably do not chain): a buffer from
      `slin.alloc`, filled by `slin.concat`, freed by `slin.dealloc` after
      the use;
    * otherwise (e.g. function arguments): `slin.is_adjacent` selects at run
      time, through `scf.if`, between the view and the copy.

    Statically empty parts are dropped first (their layout need not describe
    anything); an op left with one part is used as is.

    An op with `strategy = #slin.strategy<auto>` whose weight parts are not
    proven adjacent gets a second fallback: when `slin.prefer_per_part` (the
    runtime's choice from the rows of the input, dgrad: `dy`, and the parts'
    count and bytes) says so, the op keeps its parts (strategy `per_part`)
    and `slin-expand-linear` runs one GEMM per part, avoiding the copy of the
    weights. An op with strategy `per_part` is left as it is. An op with a
    `path` result has it replaced by the path taken (an `i32`: 0 view, 1 copy,
    2 per part), computed along the same branches.

    Before:
    ```mlir
    slin.linear ins(%x : memref<4x16xf32>)
        weights(%a, %b : memref<8x16xf32, strided<[16, 1]>>,
                         memref<4x16xf32, strided<[16, 1], offset: 128>>)
        outs(%y : memref<4x12xf32>)
    ```
    After (the parts are subviews of one buffer):
    ```mlir
    %w = slin.view_concat %a, %b : ... -> memref<12x16xf32, strided<[?, 1], offset: ?>>
    slin.linear ins(%x : memref<4x16xf32>) weights(%w : ...) outs(%y : memref<4x12xf32>)
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"16",
           "Byte alignment the view's first element must have">,
    Option<"emitRemarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark per decision with its reason (statistics are "
           "compiled out of LLVM builds without LLVM_ENABLE_STATS, such as "
           "Debian's)">
  ];
  let statistics = [
    Statistic<"numViews", "num-views", "Part groups proven adjacent (zero-copy view)">,
    Statistic<"numCopies", "num-copies", "Part groups proven not adjacent (materializing concat)">,
    Statistic<"numChecked", "num-checked", "Part groups checked at run time">,
    Statistic<"numDroppedEmpty", "num-dropped-empty", "Statically empty parts dropped">,
    Statistic<"numPerPart", "num-per-part", "Ops given the run-time choice of per-part GEMMs (strategy auto)">
  ];
  let dependentDialects = [
    "::mlir::slin::SlinDialect", "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"
  ];
}

def SlinExpandLinear : Pass<"slin-expand-linear"> {
  let summary = "Expand slin.linear / slin.linear_dgrad into slin.gemm, slin.scaled_linear into slin.scaled_gemm";
  let description = [{
    Rewrites a one-part `slin.linear` into `slin.gemm {transpose_b}` with the
    `bias` epilogue when it has a bias (fprop), and a one-part
    `slin.linear_dgrad` into `slin.gemm` (dgrad, `dx = dy · W`). An op that
    still has several parts (run `slin-elide-concat` first, or keep the parts
    on purpose) is expanded by its strategy, with one meaning for both ops:
    `fused` (the default) copies the weight parts (and fprop's bias parts)
    into one buffer and runs one GEMM; `per_part` runs one GEMM per part, no
    copy: fprop writes a column block of the output, dgrad reads a column
    block of `dy`, the first GEMM writing `dx` and the others adding to it
    (`accumulate` epilogue, beta = 1). A multi-part op with strategy `auto`
    is an error: its run-time choice is built by `slin-elide-concat`. An
    op's `path` result becomes the constant path taken (0 view, 1 copy, 2
    per part).

    `slin.scaled_linear` becomes `slin.scaled_gemm` the same way: `fused`,
    one scaled GEMM over the one (viewed or copied) FP8 weight with the
    whole `weight_scale`; `per_part`, one scaled GEMM per part writing its
    column block of the output, with its slice `[off_i, off_i + N_i)` of
    `weight_scale` (outer_vector) and its bias part.

    ```mlir
    slin.gemm ins(%x, %w : memref<4x16xf32>, memref<12x16xf32>)
        bias(%b : memref<12xf32>) outs(%y : memref<4x12xf32>)
        {transpose_b, epilogue = #slin.epilogue<bias>}
    ```
  }];
  let statistics = [
    Statistic<"numFusedGemms", "num-fused-gemms", "Ops expanded into one GEMM">,
    Statistic<"numPerPartGemms", "num-per-part-gemms", "GEMMs emitted by the per_part strategy">
  ];
  let dependentDialects = [
    "::mlir::slin::SlinDialect", "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect"
  ];
}

#endif // SPLITLINEAR_DIALECT_SLIN_TRANSFORMS_PASSES_TD

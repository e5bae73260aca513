//===- SlinOps.td - slin dialect operations ----------------*- tablegen -*-===//
//
// Operations of the `slin` dialect. Shapes use M (rows of the input), K (the
// reduction dimension) and N_i (rows of weight part i); N = Σ N_i.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_DIALECT_SLIN_IR_SLINOPS_TD
#define SPLITLINEAR_DIALECT_SLIN_IR_SLINOPS_TD

include "splitlinear/Dialect/Slin/IR/SlinDialect.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ViewLikeInterface.td"

class Slin_Op<string mnemonic, list<Trait> traits = []>
    : Op<Slin_Dialect, mnemonic, traits>;

def Slin_Matrix : MemRefRankOf<[F16, BF16, F32, F64], [2]>;
def Slin_Vector : MemRefRankOf<[F16, BF16, F32, F64], [1]>;
// FP8 storage types (one byte): only the scaled ops compute on them; the
// ops that move parts (concat, views, buffers) carry them unchanged.
def Slin_FP8Matrix : MemRefRankOf<[F8E4M3FN, F8E5M2], [2]>;
// What the scaled ops write (cuBLASLt has no FP8 output with outer-vector
// scaling): f32, f16, bf16.
def Slin_ScaledOutMatrix : MemRefRankOf<[F16, BF16, F32], [2]>;
def Slin_ScaledOutVector : MemRefRankOf<[F16, BF16, F32], [1]>;
// Dequantization factors (scale_inv): fp32 vectors.
def Slin_ScaleVector : MemRefRankOf<[F32], [1]>;
def Slin_Part : MemRefRankOf<[F16, BF16, F32, F64, F8E4M3FN, F8E5M2], [1, 2]>;
// Weight parts of any op that combines them (slin.prefer_per_part).
def Slin_AnyWeight : MemRefRankOf<[F16, BF16, F32, F64, F8E4M3FN, F8E5M2], [2]>;

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

def Slin_LinearOp : Slin_Op<"linear", [AttrSizedOperandSegments]> {
  let summary = "linear layer over a weight (and bias) split into parts (fprop)";
  let description = [{
    Computes `output = input · concat(weights)ᵀ + concat(biases)`, i.e.
    `output[m, off_i + n] = Σ_k input[m, k] · weights_i[n, k] + biases_i[n]`
    with `off_i = N_0 + … + N_{i-1}`.

    Shapes: `input` is `[M, K]`, `weights_i` is `[N_i, K]`, `biases_i` is
    `[N_i]` (all parts or none), `output` is `[M, Σ N_i]`. Any strided layout
    is accepted. The computation happens in the input's element type (equal to
    the output's); weight and bias parts of another float type are converted,
    as the materializing concat does (mixed types are never adjacent).

    Destination-passing style: `output` is written, never allocated, so the
    caller (PyTorch's caching allocator) owns every result buffer.

    `strategy` (`#slin.strategy<fused|per_part|auto>`, default `fused`) says
    how the parts are combined, with the same meaning as for
    `slin.linear_dgrad` (see `#slin.strategy`): one buffer (a view, or a copy
    when they are not adjacent) for one GEMM, one GEMM per part, or chosen
    per call by the runtime.
    With the optional `path` result (`-> i32`) the op reports the way it took,
    as a `slin::Path` value: 0 (`view`: the parts were used in place, or there
    is one), 1 (`copy`: the weight parts were copied), 2 (`per_part`).

    ```mlir
    slin.linear ins(%x : memref<4x16xf32>)
        weights(%wq, %wk, %wv : memref<8x16xf32>, memref<2x16xf32>, memref<2x16xf32>)
        bias(%bq, %bk, %bv : memref<8xf32>, memref<2xf32>, memref<2xf32>)
        outs(%y : memref<4x12xf32>)
    %path = slin.linear ins(%x : memref<4x16xf32>)
        weights(%wq, %wk : memref<8x16xf32>, memref<4x16xf32>)
        outs(%z : memref<4x12xf32>) {strategy = #slin.strategy<auto>} -> i32
    ```
  }];
  let arguments = (ins
    Arg<Slin_Matrix, "the input [M, K]", [MemRead]>:$input,
    Arg<Variadic<Slin_Matrix>, "weight parts [N_i, K]", [MemRead]>:$weights,
    Arg<Variadic<Slin_Vector>, "bias parts [N_i]", [MemRead]>:$biases,
    Arg<Slin_Matrix, "the output [M, Σ N_i]", [MemWrite]>:$output,
    DefaultValuedAttr<Slin_StrategyAttr, "::mlir::slin::Strategy::fused">:$strategy
  );
  let results = (outs Optional<I32>:$path);
  let assemblyFormat = [{
    `ins` `(` $input `:` type($input) `)`
    `weights` `(` $weights `:` type($weights) `)`
    (`bias` `(` $biases^ `:` type($biases) `)`)?
    `outs` `(` $output `:` type($output) `)` attr-dict (`->` type($path)^)?
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::ValueRange":$weights,
                   "::mlir::ValueRange":$biases, "::mlir::Value":$output,
                   CArg<"::mlir::slin::Strategy", "::mlir::slin::Strategy::fused">:$strategy), [{
      build($_builder, $_state, ::mlir::Type(), input, weights, biases, output,
            strategy);
    }]>
  ];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// LinearDgradOp
//===----------------------------------------------------------------------===//

def Slin_LinearDgradOp : Slin_Op<"linear_dgrad"> {
  let summary = "input gradient of a split linear (dgrad)";
  let description = [{
    Computes `grad_input = grad_output · concat(weights)`, the data gradient of
    `slin.linear`. Shapes: `grad_output` `[M, Σ N_i]`, `weights_i` `[N_i, K]`,
    `grad_input` `[M, K]`. The weight parts are combined exactly as for the
    forward op (same checked view), so a split weight costs no copy here either.
    The weight gradient needs no split op: it is one `slin.gemm` into a full
    gradient buffer whose row blocks are the parts' gradients.
    `strategy` and the optional `path` result are those of `slin.linear`.

    ```mlir
    slin.linear_dgrad ins(%dy : memref<4x12xf32>)
        weights(%wq, %wk : memref<8x16xf32>, memref<4x16xf32>)
        outs(%dx : memref<4x16xf32>)
    ```
  }];
  let arguments = (ins
    Arg<Slin_Matrix, "the output gradient [M, Σ N_i]", [MemRead]>:$grad_output,
    Arg<Variadic<Slin_Matrix>, "weight parts [N_i, K]", [MemRead]>:$weights,
    Arg<Slin_Matrix, "the input gradient [M, K]", [MemWrite]>:$grad_input,
    DefaultValuedAttr<Slin_StrategyAttr, "::mlir::slin::Strategy::fused">:$strategy
  );
  let results = (outs Optional<I32>:$path);
  let assemblyFormat = [{
    `ins` `(` $grad_output `:` type($grad_output) `)`
    `weights` `(` $weights `:` type($weights) `)`
    `outs` `(` $grad_input `:` type($grad_input) `)` attr-dict
    (`->` type($path)^)?
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$grad_output, "::mlir::ValueRange":$weights,
                   "::mlir::Value":$grad_input,
                   CArg<"::mlir::slin::Strategy", "::mlir::slin::Strategy::fused">:$strategy), [{
      build($_builder, $_state, ::mlir::Type(), grad_output, weights,
            grad_input, strategy);
    }]>
  ];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// GemmOp
//===----------------------------------------------------------------------===//

def Slin_GemmOp : Slin_Op<"gemm"> {
  let summary = "row-major GEMM with transpose flags and an epilogue";
  let description = [{
    `d = op(a) · op(b)` with `op(x) = xᵀ` when `transpose_a` / `transpose_b`
    is set; `op(a)` is `[M, K]`, `op(b)` is `[K, N]`, `d` is `[M, N]`. All
    three share one element type; accumulation is in fp32 (fp64 for f64).
    The `epilogue` (default `none`) adds `bias[N]` to every row (`bias`, fprop)
    or writes the row sums of `op(a)` into `bias[M]` (`bias_grad`: in wgrad
    `op(a) = dyᵀ`, so these are the bias gradient), or adds the product to
    `d` (`accumulate`, beta = 1: dgrad over weight parts that are not
    adjacent, one GEMM per part). The op lowers to one library call (cuBLASLt
    `cublasLtMatmul` or CPU BLAS).

    Linear layers map as: fprop `y = x · Wᵀ` (`transpose_b`), dgrad
    `dx = dy · W` (or `dx = Σ_i dy[:, block_i] · W_i`), wgrad `dW = dyᵀ · x`
    (`transpose_a`).

    ```mlir
    slin.gemm ins(%x, %w : memref<4x16xf32>, memref<12x16xf32>)
        bias(%b : memref<12xf32>) outs(%y : memref<4x12xf32>)
        {transpose_b, epilogue = #slin.epilogue<bias>}
    ```
  }];
  let arguments = (ins
    Arg<Slin_Matrix, "operand A", [MemRead]>:$a,
    Arg<Slin_Matrix, "operand B", [MemRead]>:$b,
    Arg<Optional<Slin_Vector>, "bias (read) or bias gradient (written)",
        [MemRead, MemWrite]>:$bias,
    Arg<Slin_Matrix, "the result D (also read by `accumulate`)",
        [MemRead, MemWrite]>:$d,
    UnitAttr:$transpose_a,
    UnitAttr:$transpose_b,
    DefaultValuedAttr<Slin_EpilogueAttr, "::mlir::slin::Epilogue::none">:$epilogue
  );
  let assemblyFormat = [{
    `ins` `(` $a `,` $b `:` type($a) `,` type($b) `)`
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    `outs` `(` $d `:` type($d) `)` attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ScaledLinearOp
//===----------------------------------------------------------------------===//

def Slin_ScaledLinearOp : Slin_Op<"scaled_linear", [AttrSizedOperandSegments]> {
  let summary = "FP8 linear layer over weight parts with their own scales (fprop)";
  let description = [{
    Computes, for `off_i = N_0 + … + N_{i-1}` and `j = off_i + n`,

    `output[m, j] = sx[m] · ŝ[j] · Σ_k input[m, k] · weights_i[n, k] (+ biases_i[n])`

    i.e. `y = sx · ŝ · (x8 · concat(w8_i)ᵀ) (+ concat(b_i))`, one FP8 GEMM
    over weight parts that keep their own scales. The dequantization factors
    (`scale_inv`, fp32) are applied to the fp32 accumulator; the result is
    rounded once to the output type.

    Shapes and types:
    * `input` `[M, K]`: `f8E4M3FN` or `f8E5M2`.
    * `weights_i` `[N_i, K]`: FP8, one type for all parts (`f8E5M2` weights
      need an `f8E4M3FN` input: cuBLASLt has no e5m2 × e5m2 GEMM).
    * `input_scale`: `memref<?xf32>`, `[M]` (outer_vector: `sx[m]`, one per
      row of the input) or `[1]` (tensorwise: `sx[m] = input_scale[0]`).
    * `weight_scale`: one `memref<?xf32>`. outer_vector: `[Σ N_i]`, `ŝ[j]`
      being the scale_inv of the part that row `j` of the concatenated weight
      belongs to (each part's scale spread over its rows; the caller builds
      it, e.g. `slinrt_cast_parts_fp8`'s `rowScaleInv`). tensorwise: `[1]`,
      and then only one weight part (parts with their own scales need
      outer_vector).
    * `biases_i` `[N_i]` (all parts or none): the output's element type.
    * `output` `[M, Σ N_i]`: `f32`, `f16` or `bf16`.

    Static K and N_i must be multiples of 16 (the FP8 GEMMs of cuBLASLt on
    Hopper require it; the runtime checks dynamic ones). `fast_accum` allows
    cuBLASLt's fast FP8 accumulation (`CUBLASLT_MATMUL_DESC_FAST_ACCUM`).

    The algorithm is cuBLASLt's outer-vector scaling
    (`CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F` on A and B, sm90): one GEMM
    with spread scales is within 1 bf16 ulp of one GEMM per part, and unlike
    a scale shared by all parts (TransformerEngine) it keeps a small part out
    of the e4m3 subnormals.

    `strategy` and the optional `path` result (`-> i32`, a `slin::Path`) mean
    what they mean for `slin.linear`: the FP8 parts become one FP8 buffer (a
    view when adjacent, else a same-type copy) for one scaled GEMM, or stay
    parts for one scaled GEMM per part (each reading its slice of
    `weight_scale` and writing its column block of the output).

    ```mlir
    %path = slin.scaled_linear ins(%x8 : memref<?x64xf8E4M3FN>)
        scale(%sx : memref<?xf32>)
        weights(%wq, %wk : memref<32x64xf8E4M3FN>, memref<16x64xf8E4M3FN>)
        weight_scale(%sw : memref<48xf32>)
        bias(%bq, %bk : memref<32xbf16>, memref<16xbf16>)
        outs(%y : memref<?x48xbf16>)
        {scaling = #slin.scaling<outer_vector>, fast_accum,
         strategy = #slin.strategy<auto>} -> i32
    ```
  }];
  let arguments = (ins
    Arg<Slin_FP8Matrix, "the FP8 input [M, K]", [MemRead]>:$input,
    Arg<Slin_ScaleVector, "the input's scale_inv: [M] or [1]",
        [MemRead]>:$input_scale,
    Arg<Variadic<Slin_FP8Matrix>, "FP8 weight parts [N_i, K]",
        [MemRead]>:$weights,
    Arg<Slin_ScaleVector, "the weights' scale_inv: [Σ N_i] or [1]",
        [MemRead]>:$weight_scale,
    Arg<Variadic<Slin_ScaledOutVector>, "bias parts [N_i]", [MemRead]>:$biases,
    Arg<Slin_ScaledOutMatrix, "the output [M, Σ N_i]", [MemWrite]>:$output,
    Slin_ScalingAttr:$scaling,
    UnitAttr:$fast_accum,
    DefaultValuedAttr<Slin_StrategyAttr, "::mlir::slin::Strategy::fused">:$strategy
  );
  let results = (outs Optional<I32>:$path);
  let assemblyFormat = [{
    `ins` `(` $input `:` type($input) `)`
    `scale` `(` $input_scale `:` type($input_scale) `)`
    `weights` `(` $weights `:` type($weights) `)`
    `weight_scale` `(` $weight_scale `:` type($weight_scale) `)`
    (`bias` `(` $biases^ `:` type($biases) `)`)?
    `outs` `(` $output `:` type($output) `)` attr-dict (`->` type($path)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ScaledGemmOp
//===----------------------------------------------------------------------===//

def Slin_ScaledGemmOp : Slin_Op<"scaled_gemm"> {
  let summary = "FP8 GEMM in the TN layout with dequantization scales";
  let description = [{
    `d[m, n] = sa[m] · sb[n] · Σ_k a[m, k] · b[n, k] (+ bias[n])`: the
    lowered form of `slin.scaled_linear`, one call of the runtime's
    `slinrt_<target>_scaled_gemm_<T>` (cuBLASLt `cublasLtMatmul` with FP8
    operands on CUDA).

    * `a` `[M, K]` and `b` `[N, K]`: FP8 (`f8E4M3FN` or `f8E5M2`; not both
      `f8E5M2`). The TN layout is the op's meaning (there are no transpose
      flags): both operands are K-major, the only layout Hopper's FP8 GEMMs
      take.
    * `scale_a`, `scale_b`: fp32 dequantization factors (`scale_inv`).
      `outer_vector`: `[M]` and `[N]` (`sa[m]`, `sb[n]`, cuBLASLt
      `OUTER_VEC_32F`); `tensorwise`: `[1]` each (`SCALAR_32F`).
    * `bias` `[N]` (optional) and `d` `[M, N]`: one type, `f32`, `f16` or
      `bf16`. The accumulator is fp32; `d` is rounded once.

    Static K and N must be multiples of 16. `fast_accum` allows cuBLASLt's
    fast FP8 accumulation.

    ```mlir
    slin.scaled_gemm ins(%a, %b : memref<?x64xf8E4M3FN>, memref<48x64xf8E4M3FN>)
        scales(%sa, %sb : memref<?xf32>, memref<48xf32>)
        bias(%bias : memref<48xbf16>) outs(%d : memref<?x48xbf16>)
        {scaling = #slin.scaling<outer_vector>}
    ```
  }];
  let arguments = (ins
    Arg<Slin_FP8Matrix, "operand A [M, K]", [MemRead]>:$a,
    Arg<Slin_FP8Matrix, "operand B [N, K]", [MemRead]>:$b,
    Arg<Slin_ScaleVector, "A's scale_inv: [M] or [1]", [MemRead]>:$scale_a,
    Arg<Slin_ScaleVector, "B's scale_inv: [N] or [1]", [MemRead]>:$scale_b,
    Arg<Optional<Slin_ScaledOutVector>, "bias [N]", [MemRead]>:$bias,
    Arg<Slin_ScaledOutMatrix, "the result D [M, N]", [MemWrite]>:$d,
    Slin_ScalingAttr:$scaling,
    UnitAttr:$fast_accum
  );
  let assemblyFormat = [{
    `ins` `(` $a `,` $b `:` type($a) `,` type($b) `)`
    `scales` `(` $scale_a `,` $scale_b `:` type($scale_a) `,` type($scale_b) `)`
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    `outs` `(` $d `:` type($d) `)` attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

def Slin_ConcatOp : Slin_Op<"concat"> {
  let summary = "copy parts back to back along dim 0 (the materializing concat)";
  let description = [{
    Copies `parts` (all rank 1 or all rank 2, equal trailing size) into
    consecutive row blocks of `output`, whose dim 0 is `Σ` of the parts'. A
    part of another float type is converted to the output's element type, as
    `torch.cat` promotes. FP8 parts (`f8E4M3FN`, `f8E5M2`) are copied, never
    converted: parts and output then have one FP8 type (a conversion would
    need the parts' scales). This is the copy that `slin-elide-concat`
    avoids when it can; only the slin passes create it.

    ```mlir
    slin.concat ins(%a, %b : memref<2x8xf32>, memref<3x8xbf16>)
        outs(%buf : memref<5x8xf32>)
    ```
  }];
  let arguments = (ins
    Arg<Variadic<Slin_Part>, "the parts", [MemRead]>:$parts,
    Arg<Slin_Part, "the destination", [MemWrite]>:$output
  );
  let assemblyFormat = [{
    `ins` `(` $parts `:` type($parts) `)`
    `outs` `(` $output `:` type($output) `)` attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ViewConcatOp
//===----------------------------------------------------------------------===//

def Slin_ViewConcatOp : Slin_Op<"view_concat", [
    NoMemoryEffect, DeclareOpInterfaceMethods<ConditionallySpeculatable>,
    DeclareOpInterfaceMethods<ViewLikeOpInterface>]> {
  let summary = "zero-copy view of adjacent parts as one buffer";
  let description = [{
    Reinterprets `parts`, which must be adjacent (see `slin.is_adjacent`), as
    one buffer: the result starts at the first non-empty part's first element,
    has `Σ N_i` rows and the parts' common row stride. No data moves. The op
    is only valid when adjacency holds, so only `slin-elide-concat` creates it:
    where adjacency is proven, or under an `scf.if` on `slin.is_adjacent`.

    The op reads and writes no memory, but it is not speculatable: moving it
    out of the `scf.if` that guards it (or ahead of a loop that may not run)
    would build a view of parts that are not adjacent. The result aliases
    the parts (`ViewLikeOpInterface`, whose single view source is part #0:
    all non-empty parts share its allocation when part #0 is non-empty).

    ```mlir
    %v = slin.view_concat %a, %b : memref<2x8xf32, strided<[8, 1]>>,
        memref<3x8xf32, strided<[8, 1], offset: 16>>
        -> memref<5x8xf32, strided<[?, 1], offset: ?>>
    ```
  }];
  let arguments = (ins Variadic<Slin_Part>:$parts);
  let results = (outs Slin_Part:$result);
  let assemblyFormat = [{
    $parts attr-dict `:` type($parts) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// IsAdjacentOp
//===----------------------------------------------------------------------===//

def Slin_IsAdjacentOp : Slin_Op<"is_adjacent", [Pure]> {
  let summary = "run-time test: may the parts be viewed as one buffer?";
  let description = [{
    True iff `slin.view_concat` of `parts` is valid: ignoring empty parts,
    all parts (1) share one base allocation (same aligned base pointer, not
    merely touching addresses), (2) have one element type (the verifier
    requires it, with equal static widths: mixed types are never adjacent,
    so `slin-elide-concat` copies them without asking), (3) are
    row-major contiguous within a row (stride 1, or one column) with one
    common row stride `ld ≥ K` (rank 1: stride 1), (4) chain: part i+1
    starts exactly where part i ends (`offset_{i+1} = offset_i + N_i · ld`),
    which also keeps the view inside the base buffer and excludes overlap
    and reversed order, and (5) the view's first element is aligned to
    `alignment` bytes (16 by default, what the GEMM targets require).

    ```mlir
    %ok = slin.is_adjacent %a, %b : memref<?x8xf32, strided<[?, ?], offset: ?>>,
        memref<?x8xf32, strided<[?, ?], offset: ?>>
    ```
  }];
  let arguments = (ins Variadic<Slin_Part>:$parts,
                       DefaultValuedAttr<I64Attr, "16">:$alignment);
  let results = (outs I1:$result);
  let assemblyFormat = [{
    $parts attr-dict `:` type($parts)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// PreferPerPartOp
//===----------------------------------------------------------------------===//

def Slin_PreferPerPartOp : Slin_Op<"prefer_per_part"> {
  let summary = "run-time choice: one GEMM per part rather than a copy?";
  let description = [{
    True when an op combining `weights`, parts that are not adjacent, for an
    input of `rows` rows should run one GEMM per part instead of copying the
    parts into one buffer. The runtime decides (`slinrt_prefer_per_part`), from
    `rows`, the number of parts and their bytes, by the cost model of the
    context's target or the threshold the caller set on the context, so that
    the decision of the `auto` strategy is taken in one place. Created by
    `slin-elide-concat` for `auto` ops.

    ```mlir
    %p = slin.prefer_per_part rows(%m) weights(%a, %b : memref<?x8xf32>, memref<?x8xf32>)
    ```
  }];
  let arguments = (ins Index:$rows, Variadic<Slin_AnyWeight>:$weights);
  let results = (outs I1:$result);
  let assemblyFormat = [{
    `rows` `(` $rows `)` `weights` `(` $weights `:` type($weights) `)` attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// AllocOp / DeallocOp
//===----------------------------------------------------------------------===//

def Slin_Buffer : MemRefOf<[F16, BF16, F32, F64, F8E4M3FN, F8E5M2]>;

def Slin_AllocOp : Slin_Op<"alloc"> {
  let summary = "a temporary buffer from the runtime's allocator";
  let description = [{
    Allocates a buffer of the result type (identity layout, default memory
    space, rank ≥ 1) from the runtime context's allocator: device memory on
    CUDA, PyTorch's caching allocator when the kernel is called from the torch
    op. `dynamic_sizes` holds one `index` per dynamic dimension of the
    result, in order. The slin passes create it for the temporaries of a
    materializing concat; `slin.dealloc` frees it. The program's own
    `memref.alloc`s stay host allocations.

    That the buffer comes from the runtime is the op's meaning, not an
    annotation a pass could drop: the conversion lowers it to
    `slinrt_<target>_alloc(ctx, bytes)` (256-byte aligned memory) and a
    `memref.view`.

    ```mlir
    %buf = slin.alloc(%n) : memref<?x16xf32>
    slin.concat ins(%a, %b : memref<?x16xf32>, memref<4x16xbf16>)
        outs(%buf : memref<?x16xf32>)
    slin.dealloc %buf : memref<?x16xf32>
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_sizes);
  let results = (outs Res<Slin_Buffer, "the new buffer",
                          [MemAlloc<DefaultResource, 0, FullEffect>]>:$memref);
  let assemblyFormat = [{
    `(` $dynamic_sizes `)` attr-dict `:` type($memref)
  }];
  let hasVerifier = 1;
}

def Slin_DeallocOp : Slin_Op<"dealloc"> {
  let summary = "frees a buffer of slin.alloc";
  let description = [{
    Returns a buffer that `slin.alloc` allocated to the runtime context's
    allocator. `memref` is that buffer or a view of it with the same aligned
    base pointer (a cast or subview: the checked-view fallback frees a cast
    of its copy), with a strided layout in the default memory space; the
    conversion passes that aligned address to
    `slinrt_<target>_free(ctx, address)`.

    ```mlir
    slin.dealloc %buf : memref<?x16xf32>
    ```
  }];
  let arguments = (ins Arg<Slin_Buffer, "the buffer to free",
                           [MemFree<DefaultResource, 0, FullEffect>]>:$memref);
  let assemblyFormat = [{
    $memref attr-dict `:` type($memref)
  }];
  let hasVerifier = 1;
}

#endif // SPLITLINEAR_DIALECT_SLIN_IR_SLINOPS_TD

// RUN: splitlinear-opt %s -split-input-file -verify-diagnostics

func.func @linear_output_type(%x: memref<4x16xf32>, %w: memref<8x16xf32>, %y: memref<4x8xf16>) {
  // expected-error @+1 {{'slin.linear' op output element type 'f16' differs from the input's 'f32'}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%w : memref<8x16xf32>) outs(%y : memref<4x8xf16>)
  return
}

// -----

func.func @linear_no_parts(%x: memref<4x16xf32>, %y: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.linear' op expects at least one weight part}}
  "slin.linear"(%x, %y) <{operandSegmentSizes = array<i32: 1, 0, 0, 1>}> : (memref<4x16xf32>, memref<4x8xf32>) -> ()
  return
}

// -----

func.func @linear_k_mismatch(%x: memref<4x16xf32>, %a: memref<8x16xf32>, %b: memref<2x32xf32>, %y: memref<4x10xf32>) {
  // expected-error @+1 {{'slin.linear' op weight part #1 has 32 columns, expected 16 (the input's K)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<2x32xf32>) outs(%y : memref<4x10xf32>)
  return
}

// -----

func.func @linear_k_mismatch_between_parts(%x: memref<4x?xf32>, %a: memref<8x16xf32>, %b: memref<2x8xf32>, %y: memref<4x10xf32>) {
  // expected-error @+1 {{'slin.linear' op weight part #1 has 8 columns, expected 16 (weight part #0's)}}
  slin.linear ins(%x : memref<4x?xf32>) weights(%a, %b : memref<8x16xf32>, memref<2x8xf32>) outs(%y : memref<4x10xf32>)
  return
}

// -----

func.func @linear_bias_count(%x: memref<4x16xf32>, %a: memref<8x16xf32>, %b: memref<2x16xf32>, %ba: memref<8xf32>, %y: memref<4x10xf32>) {
  // expected-error @+1 {{'slin.linear' op expects 2 bias parts (one per weight part) or none, got 1}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<2x16xf32>) bias(%ba : memref<8xf32>) outs(%y : memref<4x10xf32>)
  return
}

// -----

func.func @linear_bias_size(%x: memref<4x16xf32>, %a: memref<8x16xf32>, %b: memref<2x16xf32>, %ba: memref<8xf32>, %bb: memref<3xf32>, %y: memref<4x10xf32>) {
  // expected-error @+1 {{'slin.linear' op bias part #1 has 3 elements, expected 2 (the rows of weight part #1)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<2x16xf32>) bias(%ba, %bb : memref<8xf32>, memref<3xf32>) outs(%y : memref<4x10xf32>)
  return
}

// -----

func.func @linear_output_rows(%x: memref<4x16xf32>, %a: memref<8x16xf32>, %y: memref<3x8xf32>) {
  // expected-error @+1 {{'slin.linear' op output has 3 rows, expected 4 (the input's rows)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a : memref<8x16xf32>) outs(%y : memref<3x8xf32>)
  return
}

// -----

func.func @linear_output_columns(%x: memref<4x16xf32>, %a: memref<8x16xf32>, %b: memref<2x16xf32>, %y: memref<4x9xf32>) {
  // expected-error @+1 {{'slin.linear' op output has 9 columns, expected 10 (the sum of the weight parts' rows)}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%a, %b : memref<8x16xf32>, memref<2x16xf32>) outs(%y : memref<4x9xf32>)
  return
}

// -----

func.func @linear_rank(%x: memref<2x4x16xf32>, %a: memref<8x16xf32>, %y: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.linear' op operand #0 must be 2D memref of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  "slin.linear"(%x, %a, %y) <{operandSegmentSizes = array<i32: 1, 1, 0, 1>}> : (memref<2x4x16xf32>, memref<8x16xf32>, memref<4x8xf32>) -> ()
  return
}

// -----

func.func @linear_integer(%x: memref<4x16xi32>, %a: memref<8x16xi32>, %y: memref<4x8xi32>) {
  // expected-error @+1 {{'slin.linear' op operand #0 must be 2D memref of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  "slin.linear"(%x, %a, %y) <{operandSegmentSizes = array<i32: 1, 1, 0, 1>}> : (memref<4x16xi32>, memref<8x16xi32>, memref<4x8xi32>) -> ()
  return
}

// -----

func.func @dgrad_type(%dy: memref<4x8xf32>, %a: memref<8x16xf32>, %dx: memref<4x16xbf16>) {
  // expected-error @+1 {{'slin.linear_dgrad' op grad_input element type 'bf16' differs from grad_output's 'f32'}}
  slin.linear_dgrad ins(%dy : memref<4x8xf32>) weights(%a : memref<8x16xf32>) outs(%dx : memref<4x16xbf16>)
  return
}

// -----

func.func @dgrad_no_parts(%dy: memref<4x8xf32>, %dx: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.linear_dgrad' op expects at least one weight part}}
  "slin.linear_dgrad"(%dy, %dx) : (memref<4x8xf32>, memref<4x16xf32>) -> ()
  return
}

// -----

func.func @dgrad_k(%dy: memref<4x8xf32>, %a: memref<8x12xf32>, %dx: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.linear_dgrad' op weight part #0 has 12 columns, expected 16 (grad_input's K)}}
  slin.linear_dgrad ins(%dy : memref<4x8xf32>) weights(%a : memref<8x12xf32>) outs(%dx : memref<4x16xf32>)
  return
}

// -----

func.func @dgrad_rows(%dy: memref<4x8xf32>, %a: memref<8x16xf32>, %dx: memref<5x16xf32>) {
  // expected-error @+1 {{'slin.linear_dgrad' op grad_input has 5 rows, expected 4 (grad_output's rows)}}
  slin.linear_dgrad ins(%dy : memref<4x8xf32>) weights(%a : memref<8x16xf32>) outs(%dx : memref<5x16xf32>)
  return
}

// -----

func.func @dgrad_columns(%dy: memref<4x9xf32>, %a: memref<8x16xf32>, %dx: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.linear_dgrad' op grad_output has 9 columns, expected 8 (the sum of the weight parts' rows)}}
  slin.linear_dgrad ins(%dy : memref<4x9xf32>) weights(%a : memref<8x16xf32>) outs(%dx : memref<4x16xf32>)
  return
}

// -----

func.func @gemm_b_type(%a: memref<4x16xf32>, %b: memref<16x8xf16>, %d: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.gemm' op operand B element type 'f16' differs from operand A's 'f32'}}
  slin.gemm ins(%a, %b : memref<4x16xf32>, memref<16x8xf16>) outs(%d : memref<4x8xf32>)
  return
}

// -----

func.func @gemm_d_type(%a: memref<4x16xf32>, %b: memref<16x8xf32>, %d: memref<4x8xf64>) {
  // expected-error @+1 {{'slin.gemm' op D element type 'f64' differs from operand A's 'f32'}}
  slin.gemm ins(%a, %b : memref<4x16xf32>, memref<16x8xf32>) outs(%d : memref<4x8xf64>)
  return
}

// -----

func.func @gemm_k(%a: memref<4x16xf32>, %b: memref<8x16xf32>, %d: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.gemm' op op(B) has 8 rows, expected 16 (the columns of op(A))}}
  slin.gemm ins(%a, %b : memref<4x16xf32>, memref<8x16xf32>) outs(%d : memref<4x16xf32>)
  return
}

// -----

func.func @gemm_d_rows(%a: memref<16x4xf32>, %b: memref<16x8xf32>, %d: memref<16x8xf32>) {
  // expected-error @+1 {{'slin.gemm' op D has 16 rows, expected 4 (the rows of op(A))}}
  slin.gemm ins(%a, %b : memref<16x4xf32>, memref<16x8xf32>) outs(%d : memref<16x8xf32>) {transpose_a}
  return
}

// -----

func.func @gemm_d_columns(%a: memref<4x16xf32>, %b: memref<8x16xf32>, %d: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.gemm' op D has 16 columns, expected 8 (the columns of op(B))}}
  slin.gemm ins(%a, %b : memref<4x16xf32>, memref<8x16xf32>) outs(%d : memref<4x16xf32>) {transpose_b}
  return
}

// -----

func.func @gemm_bias_without_epilogue(%a: memref<4x16xf32>, %b: memref<8x16xf32>, %bias: memref<8xf32>, %d: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.gemm' op a bias operand needs the 'bias' or 'bias_grad' epilogue}}
  slin.gemm ins(%a, %b : memref<4x16xf32>, memref<8x16xf32>) bias(%bias : memref<8xf32>) outs(%d : memref<4x8xf32>) {transpose_b}
  return
}

// -----

func.func @gemm_bias_with_accumulate(%a: memref<4x16xf32>, %b: memref<16x8xf32>, %bias: memref<8xf32>, %d: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.gemm' op a bias operand needs the 'bias' or 'bias_grad' epilogue, got 'accumulate'}}
  slin.gemm ins(%a, %b : memref<4x16xf32>, memref<16x8xf32>) bias(%bias : memref<8xf32>) outs(%d : memref<4x8xf32>) {epilogue = #slin.epilogue<accumulate>}
  return
}

// -----

func.func @gemm_epilogue_without_bias(%a: memref<4x16xf32>, %b: memref<8x16xf32>, %d: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.gemm' op epilogue 'bias' needs a bias operand}}
  slin.gemm ins(%a, %b : memref<4x16xf32>, memref<8x16xf32>) outs(%d : memref<4x8xf32>) {transpose_b, epilogue = #slin.epilogue<bias>}
  return
}

// -----

func.func @gemm_bias_type(%a: memref<4x16xf32>, %b: memref<8x16xf32>, %bias: memref<8xbf16>, %d: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.gemm' op bias element type 'bf16' differs from operand A's 'f32'}}
  slin.gemm ins(%a, %b : memref<4x16xf32>, memref<8x16xf32>) bias(%bias : memref<8xbf16>) outs(%d : memref<4x8xf32>) {transpose_b, epilogue = #slin.epilogue<bias>}
  return
}

// -----

func.func @gemm_bias_length(%a: memref<4x16xf32>, %b: memref<8x16xf32>, %bias: memref<4xf32>, %d: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.gemm' op bias has 4 elements, expected 8 (the columns of D)}}
  slin.gemm ins(%a, %b : memref<4x16xf32>, memref<8x16xf32>) bias(%bias : memref<4xf32>) outs(%d : memref<4x8xf32>) {transpose_b, epilogue = #slin.epilogue<bias>}
  return
}

// -----

func.func @gemm_bias_grad_length(%dy: memref<4x12xf32>, %x: memref<4x16xf32>, %db: memref<16xf32>, %dw: memref<12x16xf32>) {
  // expected-error @+1 {{'slin.gemm' op bias has 16 elements, expected 12 (the rows of D)}}
  slin.gemm ins(%dy, %x : memref<4x12xf32>, memref<4x16xf32>) bias(%db : memref<16xf32>) outs(%dw : memref<12x16xf32>) {transpose_a, epilogue = #slin.epilogue<bias_grad>}
  return
}

// -----

func.func @gemm_unknown_epilogue(%a: memref<4x16xf32>, %b: memref<8x16xf32>, %d: memref<4x8xf32>) {
  // expected-error @+2 {{expected ::mlir::slin::Epilogue to be one of: none, bias, bias_grad}}
  // expected-error @+1 {{failed to parse Slin_EpilogueAttr parameter 'value'}}
  slin.gemm ins(%a, %b : memref<4x16xf32>, memref<8x16xf32>) outs(%d : memref<4x8xf32>) {epilogue = #slin.epilogue<gelu>}
  return
}

// -----

func.func @concat_no_parts(%d: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.concat' op expects at least one part}}
  "slin.concat"(%d) : (memref<4x8xf32>) -> ()
  return
}

// -----

func.func @concat_rank(%a: memref<2x8xf32>, %b: memref<8xf32>, %d: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.concat' op part #1 has rank 1, expected 2 (the output's rank)}}
  slin.concat ins(%a, %b : memref<2x8xf32>, memref<8xf32>) outs(%d : memref<4x8xf32>)
  return
}

// -----

func.func @concat_columns(%a: memref<2x8xf32>, %b: memref<2x16xf32>, %d: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.concat' op part #1 has 16 columns, expected 8 (the output's)}}
  slin.concat ins(%a, %b : memref<2x8xf32>, memref<2x16xf32>) outs(%d : memref<4x8xf32>)
  return
}

// -----

func.func @concat_rows(%a: memref<2x8xf32>, %b: memref<3x8xf32>, %d: memref<4x8xf32>) {
  // expected-error @+1 {{'slin.concat' op output has 4 rows, expected 5 (the sum over the parts)}}
  slin.concat ins(%a, %b : memref<2x8xf32>, memref<3x8xf32>) outs(%d : memref<4x8xf32>)
  return
}

// -----

func.func @concat_elements(%a: memref<2xf32>, %b: memref<3xf32>, %d: memref<4xf32>) {
  // expected-error @+1 {{'slin.concat' op output has 4 elements, expected 5 (the sum over the parts)}}
  slin.concat ins(%a, %b : memref<2xf32>, memref<3xf32>) outs(%d : memref<4xf32>)
  return
}

// -----

func.func @view_concat_type(%a: memref<2x8xf32>, %b: memref<3x8xbf16>) {
  // expected-error @+1 {{'slin.view_concat' op part #1 element type 'bf16' differs from the result's 'f32': a view cannot convert}}
  %v = slin.view_concat %a, %b : memref<2x8xf32>, memref<3x8xbf16> -> memref<5x8xf32, strided<[?, 1], offset: ?>>
  return
}

// -----

func.func @view_concat_layout(%a: memref<2x8xf32>, %b: memref<3x8xf32>) {
  // expected-error @+1 {{'slin.view_concat' op result must have a strided layout with unit innermost stride}}
  %v = slin.view_concat %a, %b : memref<2x8xf32>, memref<3x8xf32> -> memref<5x8xf32, strided<[1, 5]>>
  return
}

// -----

func.func @view_concat_rows(%a: memref<2x8xf32>, %b: memref<3x8xf32>) {
  // expected-error @+1 {{'slin.view_concat' op result has 6 rows, expected 5 (the sum over the parts)}}
  %v = slin.view_concat %a, %b : memref<2x8xf32>, memref<3x8xf32> -> memref<6x8xf32, strided<[?, 1], offset: ?>>
  return
}

// -----

func.func @view_concat_rank(%a: memref<2x8xf32>, %b: memref<3xf32>) {
  // expected-error @+1 {{'slin.view_concat' op part #1 has rank 1, expected 2 (the result's rank)}}
  %v = slin.view_concat %a, %b : memref<2x8xf32>, memref<3xf32> -> memref<5x8xf32, strided<[?, 1], offset: ?>>
  return
}

// -----

func.func @is_adjacent_no_parts() {
  // expected-error @+1 {{'slin.is_adjacent' op expects at least one part}}
  %ok = "slin.is_adjacent"() <{alignment = 16 : i64}> : () -> i1
  return
}

// -----

func.func @is_adjacent_rank(%a: memref<2x8xf32>, %b: memref<3xf32>) {
  // expected-error @+1 {{'slin.is_adjacent' op part #1 has rank 1, expected 2 (part #0's rank)}}
  %ok = slin.is_adjacent %a, %b : memref<2x8xf32>, memref<3xf32>
  return
}

// -----

func.func @is_adjacent_alignment(%a: memref<2x8xf32>, %b: memref<3x8xf32>) {
  // expected-error @+1 {{'slin.is_adjacent' op alignment must be a positive power of two, got 12}}
  %ok = slin.is_adjacent %a, %b {alignment = 12} : memref<2x8xf32>, memref<3x8xf32>
  return
}

// -----

func.func @is_adjacent_element_types(%a: memref<2x8xf32>, %b: memref<3x8xbf16>) {
  // expected-error @+1 {{'slin.is_adjacent' op part #1 element type 'bf16' differs from part #0's 'f32'}}
  %ok = slin.is_adjacent %a, %b : memref<2x8xf32>, memref<3x8xbf16>
  return
}

// -----

func.func @is_adjacent_widths(%a: memref<2x?xf32>, %b: memref<3x8xf32>, %c: memref<1x4xf32>) {
  // expected-error @+1 {{'slin.is_adjacent' op part #2 has 4 columns, expected 8 (part #1's)}}
  %ok = slin.is_adjacent %a, %b, %c : memref<2x?xf32>, memref<3x8xf32>, memref<1x4xf32>
  return
}

// -----

// An output that is an input is a certain overlap: rejected statically
// (before, only a run-time check in the lowering caught it).
func.func @linear_output_is_input(%x: memref<4x4xf32>, %w: memref<4x4xf32>) {
  // expected-error @+1 {{'slin.linear' op output is the same value as the input: an output must not overlap an input}}
  slin.linear ins(%x : memref<4x4xf32>) weights(%w : memref<4x4xf32>) outs(%x : memref<4x4xf32>)
  return
}

// -----

func.func @linear_output_is_weight(%x: memref<4x4xf32>, %a: memref<2x4xf32>, %w: memref<4x4xf32>) {
  // expected-error @+1 {{'slin.linear' op output is the same value as weight part #1: an output must not overlap an input}}
  "slin.linear"(%x, %a, %w, %w) <{operandSegmentSizes = array<i32: 1, 2, 0, 1>}> : (memref<4x4xf32>, memref<2x4xf32>, memref<4x4xf32>, memref<4x4xf32>) -> ()
  return
}

// -----

func.func @dgrad_grad_input_is_grad_output(%dy: memref<4x4xf32>, %w: memref<4x4xf32>) {
  // expected-error @+1 {{'slin.linear_dgrad' op grad_input is the same value as grad_output: an output must not overlap an input}}
  slin.linear_dgrad ins(%dy : memref<4x4xf32>) weights(%w : memref<4x4xf32>) outs(%dy : memref<4x4xf32>)
  return
}

// -----

func.func @dgrad_grad_input_is_weight(%dy: memref<4x4xf32>, %w: memref<4x4xf32>) {
  // expected-error @+1 {{'slin.linear_dgrad' op grad_input is the same value as weight part #0: an output must not overlap an input}}
  slin.linear_dgrad ins(%dy : memref<4x4xf32>) weights(%w : memref<4x4xf32>) outs(%w : memref<4x4xf32>)
  return
}

// -----

func.func @gemm_d_is_a(%a: memref<4x4xf32>, %b: memref<4x4xf32>) {
  // expected-error @+1 {{'slin.gemm' op D is the same value as operand A: an output must not overlap an input}}
  slin.gemm ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%a : memref<4x4xf32>)
  return
}

// -----

func.func @gemm_d_is_b(%a: memref<4x4xf32>, %b: memref<4x4xf32>) {
  // expected-error @+1 {{'slin.gemm' op D is the same value as operand B: an output must not overlap an input}}
  slin.gemm ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%b : memref<4x4xf32>) {epilogue = #slin.epilogue<accumulate>}
  return
}

// -----

func.func @concat_output_is_part(%a: memref<4xf32>, %e: memref<0xf32>) {
  // expected-error @+1 {{'slin.concat' op output is the same value as part #1: an output must not overlap an input}}
  slin.concat ins(%e, %a : memref<0xf32>, memref<4xf32>) outs(%a : memref<4xf32>)
  return
}

// -----

func.func @prefer_per_part_one_part(%m: index, %a: memref<2x8xf32>) -> i1 {
  // expected-error @+1 {{'slin.prefer_per_part' op expects at least two weight parts, got 1}}
  %p = slin.prefer_per_part rows(%m) weights(%a : memref<2x8xf32>)
  return %p : i1
}

// -----

func.func @linear_strategy(%x: memref<4x16xf32>, %w: memref<8x16xf32>, %y: memref<4x8xf32>) {
  // expected-error @+2 {{expected ::mlir::slin::Strategy to be one of: fused, per_part, auto}}
  // expected-error @+1 {{failed to parse Slin_StrategyAttr parameter 'value'}}
  slin.linear ins(%x : memref<4x16xf32>) weights(%w : memref<8x16xf32>) outs(%y : memref<4x8xf32>) {strategy = #slin.strategy<always>}
  return
}

// -----

func.func @alloc_rank0() {
  // expected-error @+1 {{'slin.alloc' op result has type 'memref<f32>', expected a rank of at least 1}}
  %b = slin.alloc() : memref<f32>
  return
}

// -----

func.func @alloc_layout() {
  // expected-error @+1 {{'slin.alloc' op result has type 'memref<4x8xf32, strided<[16, 1]>>', expected the identity layout}}
  %b = slin.alloc() : memref<4x8xf32, strided<[16, 1]>>
  return
}

// -----

func.func @alloc_memory_space() {
  // expected-error @+1 {{'slin.alloc' op result has type 'memref<4x8xf32, 1>', expected the default memory space}}
  %b = slin.alloc() : memref<4x8xf32, 1>
  return
}

// -----

func.func @alloc_dynamic_sizes(%n: index) {
  // expected-error @+1 {{'slin.alloc' op expects 2 dynamic size operands (one per dynamic dimension of the result), got 1}}
  %b = slin.alloc(%n) : memref<?x?xf32>
  return
}

// -----

func.func @alloc_element_type() {
  // expected-error @+1 {{'slin.alloc' op result #0 must be memref of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or f8E4M3FN type or f8E5M2 type values, but got 'memref<4xi32>'}}
  %b = slin.alloc() : memref<4xi32>
  return
}

// -----

func.func @dealloc_layout(%b: memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>>) {
  // expected-error @+1 {{'slin.dealloc' op operand #0 has type 'memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>>', expected a strided layout}}
  slin.dealloc %b : memref<4x8xf32, affine_map<(d0, d1) -> (d1, d0)>>
  return
}

// -----

func.func @dealloc_memory_space(%b: memref<4x8xf32, 1>) {
  // expected-error @+1 {{'slin.dealloc' op operand #0 has type 'memref<4x8xf32, 1>', expected the default memory space}}
  slin.dealloc %b : memref<4x8xf32, 1>
  return
}

// RUN: splitlinear-opt %s -split-input-file -verify-diagnostics

// The verifiers of the FP8 ops (slin.scaled_linear, slin.scaled_gemm) and of
// FP8 parts in the ops that move parts.

func.func @scaled_linear_input_not_fp8(%x: memref<4x32xbf16>, %sx: memref<4xf32>, %w: memref<16x32xf8E4M3FN>, %sw: memref<16xf32>, %y: memref<4x16xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op operand #0 must be 2D memref of f8E4M3FN type or f8E5M2 type values, but got 'memref<4x32xbf16>'}}
  slin.scaled_linear ins(%x : memref<4x32xbf16>) scale(%sx : memref<4xf32>) weights(%w : memref<16x32xf8E4M3FN>) weight_scale(%sw : memref<16xf32>) outs(%y : memref<4x16xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_weight_not_fp8(%x: memref<4x32xf8E4M3FN>, %sx: memref<4xf32>, %w: memref<16x32xbf16>, %sw: memref<16xf32>, %y: memref<4x16xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op operand #2 must be variadic of 2D memref of f8E4M3FN type or f8E5M2 type values, but got 'memref<16x32xbf16>'}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<4xf32>) weights(%w : memref<16x32xbf16>) weight_scale(%sw : memref<16xf32>) outs(%y : memref<4x16xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_mixed_parts(%x: memref<4x32xf8E4M3FN>, %sx: memref<4xf32>, %a: memref<16x32xf8E4M3FN>, %b: memref<16x32xf8E5M2>, %sw: memref<32xf32>, %y: memref<4x32xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op weight part #1 element type 'f8E5M2' differs from part #0's 'f8E4M3FN': the parts share one FP8 type}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<4xf32>) weights(%a, %b : memref<16x32xf8E4M3FN>, memref<16x32xf8E5M2>) weight_scale(%sw : memref<32xf32>) outs(%y : memref<4x32xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_e5m2_e5m2(%x: memref<4x32xf8E5M2>, %sx: memref<4xf32>, %w: memref<16x32xf8E5M2>, %sw: memref<16xf32>, %y: memref<4x16xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op the input and the weight parts are both f8E5M2: e5m2 x e5m2 is not supported (one of them must be f8E4M3FN)}}
  slin.scaled_linear ins(%x : memref<4x32xf8E5M2>) scale(%sx : memref<4xf32>) weights(%w : memref<16x32xf8E5M2>) weight_scale(%sw : memref<16xf32>) outs(%y : memref<4x16xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_tensorwise_parts(%x: memref<4x32xf8E4M3FN>, %sx: memref<1xf32>, %a: memref<16x32xf8E4M3FN>, %b: memref<16x32xf8E4M3FN>, %sw: memref<1xf32>, %y: memref<4x32xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op tensorwise scaling with 2 weight parts: parts with their own scales need outer_vector}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<1xf32>) weights(%a, %b : memref<16x32xf8E4M3FN>, memref<16x32xf8E4M3FN>) weight_scale(%sw : memref<1xf32>) outs(%y : memref<4x32xbf16>) {scaling = #slin.scaling<tensorwise>}
  return
}

// -----

func.func @scaled_linear_input_scale_size(%x: memref<4x32xf8E4M3FN>, %sx: memref<1xf32>, %w: memref<16x32xf8E4M3FN>, %sw: memref<16xf32>, %y: memref<4x16xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op input_scale has 1 elements, expected 4 (the input's rows, outer_vector)}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<1xf32>) weights(%w : memref<16x32xf8E4M3FN>) weight_scale(%sw : memref<16xf32>) outs(%y : memref<4x16xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_weight_scale_size(%x: memref<4x32xf8E4M3FN>, %sx: memref<4xf32>, %a: memref<16x32xf8E4M3FN>, %b: memref<?x32xf8E4M3FN>, %sw: memref<2xf32>, %y: memref<4x48xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op weight_scale has 2 elements, expected 48 (the sum of the weight parts' rows, outer_vector)}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<4xf32>) weights(%a, %b : memref<16x32xf8E4M3FN>, memref<?x32xf8E4M3FN>) weight_scale(%sw : memref<2xf32>) outs(%y : memref<4x48xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_tensorwise_scale_size(%x: memref<4x32xf8E4M3FN>, %sx: memref<1xf32>, %w: memref<16x32xf8E4M3FN>, %sw: memref<16xf32>, %y: memref<4x16xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op weight_scale has 16 elements, expected 1 (tensorwise)}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<1xf32>) weights(%w : memref<16x32xf8E4M3FN>) weight_scale(%sw : memref<16xf32>) outs(%y : memref<4x16xbf16>) {scaling = #slin.scaling<tensorwise>}
  return
}

// -----

func.func @scaled_linear_k_not_16(%x: memref<4x24xf8E4M3FN>, %sx: memref<4xf32>, %w: memref<16x24xf8E4M3FN>, %sw: memref<16xf32>, %y: memref<4x16xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op K (the input's columns) is 24, expected a multiple of 16 (FP8 GEMM)}}
  slin.scaled_linear ins(%x : memref<4x24xf8E4M3FN>) scale(%sx : memref<4xf32>) weights(%w : memref<16x24xf8E4M3FN>) weight_scale(%sw : memref<16xf32>) outs(%y : memref<4x16xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_n_not_16(%x: memref<4x32xf8E4M3FN>, %sx: memref<4xf32>, %a: memref<16x32xf8E4M3FN>, %b: memref<8x32xf8E4M3FN>, %sw: memref<24xf32>, %y: memref<4x24xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op N_1 (the rows of part #1) is 8, expected a multiple of 16 (FP8 GEMM)}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<4xf32>) weights(%a, %b : memref<16x32xf8E4M3FN>, memref<8x32xf8E4M3FN>) weight_scale(%sw : memref<24xf32>) outs(%y : memref<4x24xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_k_mismatch(%x: memref<4x32xf8E4M3FN>, %sx: memref<4xf32>, %w: memref<16x64xf8E4M3FN>, %sw: memref<16xf32>, %y: memref<4x16xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op weight part #0 has 64 columns, expected 32 (the input's K)}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<4xf32>) weights(%w : memref<16x64xf8E4M3FN>) weight_scale(%sw : memref<16xf32>) outs(%y : memref<4x16xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_output_columns(%x: memref<4x32xf8E4M3FN>, %sx: memref<4xf32>, %w: memref<16x32xf8E4M3FN>, %sw: memref<?xf32>, %y: memref<4x32xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op output has 32 columns, expected 16 (the sum of the weight parts' rows)}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<4xf32>) weights(%w : memref<16x32xf8E4M3FN>) weight_scale(%sw : memref<?xf32>) outs(%y : memref<4x32xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_output_rows(%x: memref<4x32xf8E4M3FN>, %sx: memref<?xf32>, %w: memref<16x32xf8E4M3FN>, %sw: memref<16xf32>, %y: memref<8x16xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op output has 8 rows, expected 4 (the input's rows)}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<?xf32>) weights(%w : memref<16x32xf8E4M3FN>) weight_scale(%sw : memref<16xf32>) outs(%y : memref<8x16xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_output_type(%x: memref<4x32xf8E4M3FN>, %sx: memref<4xf32>, %w: memref<16x32xf8E4M3FN>, %sw: memref<16xf32>, %y: memref<4x16xf64>) {
  // expected-error @+1 {{'slin.scaled_linear' op operand #4 must be 2D memref of 16-bit float or bfloat16 type or 32-bit float values, but got 'memref<4x16xf64>'}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<4xf32>) weights(%w : memref<16x32xf8E4M3FN>) weight_scale(%sw : memref<16xf32>) outs(%y : memref<4x16xf64>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_bias_type(%x: memref<4x32xf8E4M3FN>, %sx: memref<4xf32>, %w: memref<16x32xf8E4M3FN>, %sw: memref<16xf32>, %b: memref<16xf32>, %y: memref<4x16xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op bias part #0 element type 'f32' differs from the output's 'bf16'}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<4xf32>) weights(%w : memref<16x32xf8E4M3FN>) weight_scale(%sw : memref<16xf32>) bias(%b : memref<16xf32>) outs(%y : memref<4x16xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_bias_size(%x: memref<4x32xf8E4M3FN>, %sx: memref<4xf32>, %w: memref<16x32xf8E4M3FN>, %sw: memref<16xf32>, %b: memref<8xbf16>, %y: memref<4x16xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op bias part #0 has 8 elements, expected 16 (the rows of weight part #0)}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<4xf32>) weights(%w : memref<16x32xf8E4M3FN>) weight_scale(%sw : memref<16xf32>) bias(%b : memref<8xbf16>) outs(%y : memref<4x16xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_scale_type(%x: memref<4x32xf8E4M3FN>, %sx: memref<4xbf16>, %w: memref<16x32xf8E4M3FN>, %sw: memref<16xf32>, %y: memref<4x16xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op operand #1 must be 1D memref of 32-bit float values, but got 'memref<4xbf16>'}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<4xbf16>) weights(%w : memref<16x32xf8E4M3FN>) weight_scale(%sw : memref<16xf32>) outs(%y : memref<4x16xbf16>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_linear_no_scaling(%x: memref<4x32xf8E4M3FN>, %sx: memref<4xf32>, %w: memref<16x32xf8E4M3FN>, %sw: memref<16xf32>, %y: memref<4x16xbf16>) {
  // expected-error @+1 {{'slin.scaled_linear' op requires attribute 'scaling'}}
  slin.scaled_linear ins(%x : memref<4x32xf8E4M3FN>) scale(%sx : memref<4xf32>) weights(%w : memref<16x32xf8E4M3FN>) weight_scale(%sw : memref<16xf32>) outs(%y : memref<4x16xbf16>)
  return
}

// -----

func.func @scaled_gemm_e5m2_e5m2(%a: memref<4x32xf8E5M2>, %b: memref<16x32xf8E5M2>, %sa: memref<4xf32>, %sb: memref<16xf32>, %d: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.scaled_gemm' op operand A and operand B are both f8E5M2: e5m2 x e5m2 is not supported (one of them must be f8E4M3FN)}}
  slin.scaled_gemm ins(%a, %b : memref<4x32xf8E5M2>, memref<16x32xf8E5M2>) scales(%sa, %sb : memref<4xf32>, memref<16xf32>) outs(%d : memref<4x16xf32>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_gemm_k_mismatch(%a: memref<4x32xf8E4M3FN>, %b: memref<16x64xf8E4M3FN>, %sa: memref<4xf32>, %sb: memref<16xf32>, %d: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.scaled_gemm' op operand B has 64 columns, expected 32 (the columns of operand A: both are K-major)}}
  slin.scaled_gemm ins(%a, %b : memref<4x32xf8E4M3FN>, memref<16x64xf8E4M3FN>) scales(%sa, %sb : memref<4xf32>, memref<16xf32>) outs(%d : memref<4x16xf32>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_gemm_k_not_16(%a: memref<4x40xf8E4M3FN>, %b: memref<16x40xf8E4M3FN>, %sa: memref<4xf32>, %sb: memref<16xf32>, %d: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.scaled_gemm' op K (the columns of operand A) is 40, expected a multiple of 16 (FP8 GEMM)}}
  slin.scaled_gemm ins(%a, %b : memref<4x40xf8E4M3FN>, memref<16x40xf8E4M3FN>) scales(%sa, %sb : memref<4xf32>, memref<16xf32>) outs(%d : memref<4x16xf32>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_gemm_n_not_16(%a: memref<4x32xf8E4M3FN>, %b: memref<20x32xf8E4M3FN>, %sa: memref<4xf32>, %sb: memref<20xf32>, %d: memref<4x20xf32>) {
  // expected-error @+1 {{'slin.scaled_gemm' op N (the rows of operand B) is 20, expected a multiple of 16 (FP8 GEMM)}}
  slin.scaled_gemm ins(%a, %b : memref<4x32xf8E4M3FN>, memref<20x32xf8E4M3FN>) scales(%sa, %sb : memref<4xf32>, memref<20xf32>) outs(%d : memref<4x20xf32>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_gemm_d_rows(%a: memref<4x32xf8E4M3FN>, %b: memref<16x32xf8E4M3FN>, %sa: memref<?xf32>, %sb: memref<16xf32>, %d: memref<8x16xf32>) {
  // expected-error @+1 {{'slin.scaled_gemm' op D has 8 rows, expected 4 (the rows of operand A)}}
  slin.scaled_gemm ins(%a, %b : memref<4x32xf8E4M3FN>, memref<16x32xf8E4M3FN>) scales(%sa, %sb : memref<?xf32>, memref<16xf32>) outs(%d : memref<8x16xf32>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_gemm_d_columns(%a: memref<4x32xf8E4M3FN>, %b: memref<16x32xf8E4M3FN>, %sa: memref<4xf32>, %sb: memref<?xf32>, %d: memref<4x32xf32>) {
  // expected-error @+1 {{'slin.scaled_gemm' op D has 32 columns, expected 16 (the rows of operand B)}}
  slin.scaled_gemm ins(%a, %b : memref<4x32xf8E4M3FN>, memref<16x32xf8E4M3FN>) scales(%sa, %sb : memref<4xf32>, memref<?xf32>) outs(%d : memref<4x32xf32>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_gemm_scale_b_size(%a: memref<4x32xf8E4M3FN>, %b: memref<16x32xf8E4M3FN>, %sa: memref<4xf32>, %sb: memref<1xf32>, %d: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.scaled_gemm' op scale_b has 1 elements, expected 16 (the rows of operand B, outer_vector)}}
  slin.scaled_gemm ins(%a, %b : memref<4x32xf8E4M3FN>, memref<16x32xf8E4M3FN>) scales(%sa, %sb : memref<4xf32>, memref<1xf32>) outs(%d : memref<4x16xf32>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_gemm_tensorwise_scale_size(%a: memref<4x32xf8E4M3FN>, %b: memref<16x32xf8E4M3FN>, %sa: memref<4xf32>, %sb: memref<1xf32>, %d: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.scaled_gemm' op scale_a has 4 elements, expected 1 (tensorwise)}}
  slin.scaled_gemm ins(%a, %b : memref<4x32xf8E4M3FN>, memref<16x32xf8E4M3FN>) scales(%sa, %sb : memref<4xf32>, memref<1xf32>) outs(%d : memref<4x16xf32>) {scaling = #slin.scaling<tensorwise>}
  return
}

// -----

func.func @scaled_gemm_bias_type(%a: memref<4x32xf8E4M3FN>, %b: memref<16x32xf8E4M3FN>, %sa: memref<4xf32>, %sb: memref<16xf32>, %bias: memref<16xf16>, %d: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.scaled_gemm' op bias element type 'f16' differs from D's 'f32'}}
  slin.scaled_gemm ins(%a, %b : memref<4x32xf8E4M3FN>, memref<16x32xf8E4M3FN>) scales(%sa, %sb : memref<4xf32>, memref<16xf32>) bias(%bias : memref<16xf16>) outs(%d : memref<4x16xf32>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_gemm_bias_size(%a: memref<4x32xf8E4M3FN>, %b: memref<16x32xf8E4M3FN>, %sa: memref<4xf32>, %sb: memref<16xf32>, %bias: memref<32xf32>, %d: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.scaled_gemm' op bias has 32 elements, expected 16 (the columns of D)}}
  slin.scaled_gemm ins(%a, %b : memref<4x32xf8E4M3FN>, memref<16x32xf8E4M3FN>) scales(%sa, %sb : memref<4xf32>, memref<16xf32>) bias(%bias : memref<32xf32>) outs(%d : memref<4x16xf32>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

func.func @scaled_gemm_output_fp8(%a: memref<4x32xf8E4M3FN>, %b: memref<16x32xf8E4M3FN>, %sa: memref<4xf32>, %sb: memref<16xf32>, %d: memref<4x16xf8E4M3FN>) {
  // expected-error @+1 {{'slin.scaled_gemm' op operand #4 must be 2D memref of 16-bit float or bfloat16 type or 32-bit float values, but got 'memref<4x16xf8E4M3FN>'}}
  slin.scaled_gemm ins(%a, %b : memref<4x32xf8E4M3FN>, memref<16x32xf8E4M3FN>) scales(%sa, %sb : memref<4xf32>, memref<16xf32>) outs(%d : memref<4x16xf8E4M3FN>) {scaling = #slin.scaling<outer_vector>}
  return
}

// -----

// FP8 never reaches the ops that compute in float types.
func.func @linear_fp8(%x: memref<4x32xf8E4M3FN>, %w: memref<16x32xf8E4M3FN>, %y: memref<4x16xf8E4M3FN>) {
  // expected-error @+1 {{'slin.linear' op operand #0 must be 2D memref of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'memref<4x32xf8E4M3FN>'}}
  slin.linear ins(%x : memref<4x32xf8E4M3FN>) weights(%w : memref<16x32xf8E4M3FN>) outs(%y : memref<4x16xf8E4M3FN>)
  return
}

// -----

func.func @gemm_fp8(%a: memref<4x32xf32>, %b: memref<16x32xf8E4M3FN>, %d: memref<4x16xf32>) {
  // expected-error @+1 {{'slin.gemm' op operand #1 must be 2D memref of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'memref<16x32xf8E4M3FN>'}}
  slin.gemm ins(%a, %b : memref<4x32xf32>, memref<16x32xf8E4M3FN>) outs(%d : memref<4x16xf32>) {transpose_b}
  return
}

// -----

func.func @dgrad_fp8(%dy: memref<4x16xf32>, %w: memref<16x32xf8E4M3FN>, %dx: memref<4x32xf32>) {
  // expected-error @+1 {{'slin.linear_dgrad' op operand #1 must be variadic of 2D memref of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'memref<16x32xf8E4M3FN>'}}
  slin.linear_dgrad ins(%dy : memref<4x16xf32>) weights(%w : memref<16x32xf8E4M3FN>) outs(%dx : memref<4x32xf32>)
  return
}

// -----

func.func @concat_from_fp8(%a: memref<16x32xf8E4M3FN>, %b: memref<16x32xf8E4M3FN>, %out: memref<32x32xbf16>) {
  // expected-error @+1 {{'slin.concat' op part #0 element type 'f8E4M3FN' differs from the output's 'bf16': FP8 parts are copied, never converted}}
  slin.concat ins(%a, %b : memref<16x32xf8E4M3FN>, memref<16x32xf8E4M3FN>) outs(%out : memref<32x32xbf16>)
  return
}

// -----

func.func @concat_to_fp8(%a: memref<16x32xf8E4M3FN>, %b: memref<16x32xf32>, %out: memref<32x32xf8E4M3FN>) {
  // expected-error @+1 {{'slin.concat' op part #1 element type 'f32' differs from the output's 'f8E4M3FN': FP8 parts are copied, never converted}}
  slin.concat ins(%a, %b : memref<16x32xf8E4M3FN>, memref<16x32xf32>) outs(%out : memref<32x32xf8E4M3FN>)
  return
}

// -----

func.func @concat_fp8_kinds(%a: memref<16x32xf8E4M3FN>, %b: memref<16x32xf8E5M2>, %out: memref<32x32xf8E5M2>) {
  // expected-error @+1 {{'slin.concat' op part #0 element type 'f8E4M3FN' differs from the output's 'f8E5M2': FP8 parts are copied, never converted}}
  slin.concat ins(%a, %b : memref<16x32xf8E4M3FN>, memref<16x32xf8E5M2>) outs(%out : memref<32x32xf8E5M2>)
  return
}

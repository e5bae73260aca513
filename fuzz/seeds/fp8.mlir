func.func @f(%ctx: !slin.context, %x: memref<?x32xf8E4M3FN>, %sx: memref<?xf32>, %a: memref<16x32xf8E4M3FN, strided<[?, ?], offset: ?>>, %b: memref<?x32xf8E4M3FN, strided<[?, ?], offset: ?>>, %sw: memref<?xf32>, %ba: memref<16xbf16>, %bb: memref<?xbf16>, %y: memref<?x?xbf16>, %w5: memref<16x32xf8E5M2>, %s1: memref<1xf32>, %z: memref<?x16xf32>) -> i32 {
  %p = slin.scaled_linear ins(%x : memref<?x32xf8E4M3FN>) scale(%sx : memref<?xf32>) weights(%a, %b : memref<16x32xf8E4M3FN, strided<[?, ?], offset: ?>>, memref<?x32xf8E4M3FN, strided<[?, ?], offset: ?>>) weight_scale(%sw : memref<?xf32>) bias(%ba, %bb : memref<16xbf16>, memref<?xbf16>) outs(%y : memref<?x?xbf16>) {scaling = #slin.scaling<outer_vector>, fast_accum, strategy = #slin.strategy<auto>} -> i32
  slin.scaled_gemm ins(%x, %w5 : memref<?x32xf8E4M3FN>, memref<16x32xf8E5M2>) scales(%s1, %s1 : memref<1xf32>, memref<1xf32>) outs(%z : memref<?x16xf32>) {scaling = #slin.scaling<tensorwise>}
  return %p : i32
}



!m2 = memref<?x32xf32, strided<[15, ?], offset: ?>>
!v1 = memref<32xf32, strided<[?], offset: ?>>

func.func @checked(%ctx: !slin.context, %x: !m2, %w0: !m2, %w1: !m2,
                   %b0: !v1, %b1: !v1, %y: !m2) {
  slin.linear ins(%x : !m2) weights(%w0, %w1 : !m2, !m2)
      bias(%b0, %b1 : !v1, !v1) outs(%y : !m2)
  return
}

func.func @proven(%x: memref<4x16xf32>, %y: memref<4x12xf32>) {
  %w = memref.alloc() : memref<12x16xf32>
  %w0 = memref.subview %w[0, 0] [8, 16] [1, 1] : memref<12x16xf32> to memref<8x16xf32, strided<[16, 1]>>
  %w1 = memref.subview %w[8, 0] [4, 16] [1, 1] : memref<12x16xf32> to memref<4x16xf32, strided<[16, 1], offset: 128>>
  slin.linear ins(%x : memref<4x16xf32>)
      weights(%w0, %w1 : memref<8x16xf32, strided<[16, 1]>>, memref<4x16xf32, strided<[16, 1], offset: 128>>)
      outs(%y : memref<4x12xf32>)
  memref.dealloc %w : memref<12x16xf32>
  return
}

func.func @dgrad(%dy: memref<4x12xf32>, %dx: memref<4x16xf32>) {
  %w0 = memref.alloc() : memref<8x16xf32>
  %w1 = memref.alloc() : memref<4x16xf32>
  slin.linear_dgrad ins(%dy : memref<4x12xf32>)
      weights(%w0, %w1 : memref<8x16xf32>, memref<4x16xf32>) outs(%dx : memref<4x16xf32>)
  memref.dealloc %w0 : memref<8x16xf32>
  memref.dealloc %w1 : memref<4x16xf32>
  return
}

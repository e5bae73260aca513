//===- CPUQuantize.cpp - FP8 quantization on the CPU ------------*- C++ -*-===//
//
// The CPU backend of slinrt_amax_parts, slinrt_cast_parts_fp8 and
// slinrt_quantize_fp8 (and its duals): plain loops computing, in the same fp32
// operations as the CUDA kernels (Float8.h), the amax, scale, scale_inv and FP8
// bytes, so that both targets agree bit for bit.
//
//===----------------------------------------------------------------------===//

#include "Float8.h"
#include "Quantize.h"

#include <algorithm>
#include <vector>

using namespace slinrt;

namespace {

/// Calls `fn(TypeTag<S>{}, TypeTag<F8>{})` for the source and FP8 types.
template <typename Fn>
void dispatchQuant(slinrt_dtype src, slinrt_dtype dst, Fn &&fn) {
  dispatchDtype(src, [&](auto s) {
    if (dst == SLINRT_F8E4M3FN)
      fn(s, TypeTag<Float8E4M3FN>{});
    else
      fn(s, TypeTag<Float8E5M2>{});
  });
}

/// The value x[r, c] (times colScale[c]) in fp32.
template <typename S>
float valueAt(const QuantMatrix &x, int64_t r, int64_t c,
              const float *colScale) {
  float v = toFloat(reinterpret_cast<const S *>(x.data)[r * x.ld + c]);
  return colScale ? v * colScale[c] : v;
}

/// max |x| over a block of x as absBits (see Float8.h).
template <typename S>
uint32_t amaxBits(const QuantMatrix &x, int64_t r0, int64_t r1, int64_t c0,
                  int64_t c1, const float *colScale) {
  uint32_t best = 0;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c)
      best = std::max(best, absBits(valueAt<S>(x, r, c, colScale)));
  return best;
}

/// Writes satcast(x[r, c] · scale) of a block to out [., outLd] at
/// (rowBase + r, c) and to outT [., outTLd] at (c, rowBase + r). `scaleOf(r,
/// c)` gives the scale of an element.
template <typename S, typename F8, typename ScaleOf>
void castBlock(const QuantMatrix &x, const float *colScale, ScaleOf scaleOf,
               uint8_t *out, int64_t outLd, uint8_t *outT, int64_t outTLd,
               int64_t rowBase) {
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t c = 0; c < x.cols; ++c) {
      uint8_t q = encodeFp8<F8>(valueAt<S>(x, r, c, colScale) * scaleOf(r, c));
      if (out)
        out[(rowBase + r) * outLd + c] = q;
      if (outT)
        outT[c * outTLd + rowBase + r] = q;
    }
}

} // namespace

void cpu::amaxParts(slinrt_context &, const PartsProblem &p) {
  dispatchDtype(p.src, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (size_t i = 0; i < p.parts.size(); ++i) {
      const QuantMatrix &x = p.parts[i];
      p.amax[i] = bitCast<float>(amaxBits<S>(x, 0, x.rows, 0, x.cols, nullptr));
    }
  });
}

void cpu::castParts(slinrt_context &, const PartsProblem &p) {
  dispatchQuant(p.src, p.dst, [&](auto s, auto f) {
    using S = typename decltype(s)::type;
    using F8 = typename decltype(f)::type;
    for (size_t i = 0; i < p.parts.size(); ++i) {
      float scale = fp8Scale(p.amaxIn[i], Fp8Format<F8>::kMax, p.pow2Scales);
      float scaleInv = 1.0f / scale;
      if (p.scaleInv)
        p.scaleInv[i] = scaleInv;
      if (p.rowScaleInv)
        std::fill(p.rowScaleInv + p.rowOffset[i],
                  p.rowScaleInv + p.rowOffset[i] + p.parts[i].rows, scaleInv);
      castBlock<S, F8>(
          p.parts[i], nullptr, [&](int64_t, int64_t) { return scale; },
          static_cast<uint8_t *>(p.out), p.cols, static_cast<uint8_t *>(p.outT),
          p.totalRows, p.rowOffset[i]);
    }
  });
}

void cpu::quantizeBlockParts(slinrt_context &, const PartsProblem &p) {
  constexpr int64_t kBlock = SLINRT_QUANT_BLOCK;
  int64_t perRow = p.cols / kBlock;
  dispatchQuant(p.src, p.dst, [&](auto s, auto f) {
    using S = typename decltype(s)::type;
    using F8 = typename decltype(f)::type;
    for (size_t i = 0; i < p.parts.size(); ++i) {
      const QuantMatrix &x = p.parts[i];
      // Block (br, bc) of the part is block (rowOffset/128 + br, bc) of the
      // whole: entry `first` + br·K/128 + bc.
      int64_t first = p.rowOffset[i] / kBlock * perRow;
      std::vector<float> scales(size_t(x.rows / kBlock * perRow));
      for (size_t g = 0; g < scales.size(); ++g) {
        int64_t r0 = int64_t(g) / perRow * kBlock;
        int64_t c0 = int64_t(g) % perRow * kBlock;
        float amax = bitCast<float>(
            amaxBits<S>(x, r0, r0 + kBlock, c0, c0 + kBlock, nullptr));
        scales[g] = fp8Scale(amax, Fp8Format<F8>::kMax, p.pow2Scales);
        if (p.amax)
          p.amax[first + int64_t(g)] = amax;
        p.scaleInv[first + int64_t(g)] = 1.0f / scales[g];
      }
      castBlock<S, F8>(
          x, nullptr,
          [&](int64_t r, int64_t c) {
            return scales[size_t(r / kBlock * perRow + c / kBlock)];
          },
          static_cast<uint8_t *>(p.out), p.cols, static_cast<uint8_t *>(p.outT),
          p.totalRows, p.rowOffset[i]);
    }
  });
}

namespace {

/// outT [K, M'] of the 1x128 block dual (M' = M rounded up to 128): column
/// c of x in blocks of 128 rows, the rows past M zero.
void quantizeColumnBlocksT(const QuantizeProblem &p, float *amax) {
  constexpr int64_t kBlock = SLINRT_QUANT_BLOCK;
  const QuantMatrix &x = p.x;
  int64_t M = x.rows, K = x.cols;
  int64_t blocks = (M + kBlock - 1) / kBlock, ldT = blocks * kBlock;
  auto *outT = static_cast<uint8_t *>(p.outT);
  dispatchQuant(p.src, p.dst, [&](auto s, auto f) {
    using S = typename decltype(s)::type;
    using F8 = typename decltype(f)::type;
    for (int64_t c = 0; c < K; ++c)
      for (int64_t b = 0; b < blocks; ++b) {
        int64_t r0 = b * kBlock, r1 = std::min(M, r0 + kBlock);
        float blockAmax =
            bitCast<float>(amaxBits<S>(x, r0, r1, c, c + 1, nullptr));
        float scale = fp8Scale(blockAmax, Fp8Format<F8>::kMax, p.pow2Scales);
        if (amax)
          amax[c * blocks + b] = blockAmax;
        p.scaleInvT[c * blocks + b] = 1.0f / scale;
        for (int64_t r = r0; r < r0 + kBlock; ++r)
          outT[c * ldT + r] =
              r < r1 ? encodeFp8<F8>(valueAt<S>(x, r, c, nullptr) * scale) : 0;
      }
  });
}

} // namespace

void cpu::quantize(slinrt_context &ctx, const QuantizeProblem &p) {
  if (p.dual && p.axis == SLINRT_QUANT_BLOCKS) {
    QuantizeProblem rows = p;
    rows.dual = false;
    rows.outT = nullptr;
    quantize(ctx, rows);
    quantizeColumnBlocksT(
        p,
        p.amax ? p.amax + p.x.rows * (p.x.cols / SLINRT_QUANT_BLOCK) : nullptr);
    return;
  }
  if (p.dual) {
    // The two quantizations the dual one stands for: tensorwise twice, or
    // per row (folded) and per column (plain).
    bool rows = p.axis == SLINRT_QUANT_ROWS;
    QuantizeProblem folded = p, plain = p;
    folded.dual = plain.dual = false;
    folded.outT = nullptr;
    plain.axis = rows ? SLINRT_QUANT_COLS : SLINRT_QUANT_TENSOR;
    plain.colScale = nullptr;
    plain.out = nullptr;
    plain.amax = !p.amax ? nullptr : p.amax + (rows ? p.x.rows : 1);
    plain.scaleInv = p.scaleInvT;
    quantize(ctx, folded);
    quantize(ctx, plain);
    return;
  }
  dispatchQuant(p.src, p.dst, [&](auto s, auto f) {
    using S = typename decltype(s)::type;
    using F8 = typename decltype(f)::type;
    const QuantMatrix &x = p.x;
    int64_t M = x.rows, K = x.cols;
    // One amax per tensor, row, column or 1x128 block of a row (blocks
    // numbered row-major: g = r·K/128 + c/128).
    constexpr int64_t kBlock = SLINRT_QUANT_BLOCK;
    int64_t blocksPerRow = K / kBlock;
    int64_t groups = p.axis == SLINRT_QUANT_TENSOR ? 1
                     : p.axis == SLINRT_QUANT_ROWS ? M
                     : p.axis == SLINRT_QUANT_COLS ? K
                                                   : M * blocksPerRow;
    std::vector<float> scales(static_cast<size_t>(groups));
    for (int64_t g = 0; g < groups; ++g) {
      uint32_t bits = 0;
      switch (p.axis) {
      case SLINRT_QUANT_TENSOR:
        bits = amaxBits<S>(x, 0, M, 0, K, p.colScale);
        break;
      case SLINRT_QUANT_ROWS:
        bits = amaxBits<S>(x, g, g + 1, 0, K, p.colScale);
        break;
      case SLINRT_QUANT_COLS:
        bits = amaxBits<S>(x, 0, M, g, g + 1, p.colScale);
        break;
      case SLINRT_QUANT_BLOCKS: {
        int64_t r = g / blocksPerRow, c0 = (g % blocksPerRow) * kBlock;
        bits = amaxBits<S>(x, r, r + 1, c0, c0 + kBlock, p.colScale);
        break;
      }
      }
      float amax = bitCast<float>(bits);
      scales[g] = fp8Scale(amax, Fp8Format<F8>::kMax, p.pow2Scales);
      if (p.amax)
        p.amax[g] = amax;
      p.scaleInv[g] = 1.0f / scales[g];
    }
    castBlock<S, F8>(
        x, p.colScale,
        [&](int64_t r, int64_t c) {
          return scales[p.axis == SLINRT_QUANT_TENSOR ? 0
                        : p.axis == SLINRT_QUANT_ROWS ? r
                        : p.axis == SLINRT_QUANT_COLS
                            ? c
                            : r * blocksPerRow + c / kBlock];
        },
        static_cast<uint8_t *>(p.out), K, static_cast<uint8_t *>(p.outT), M, 0);
  });
}

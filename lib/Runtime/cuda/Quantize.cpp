//===- Quantize.cpp - FP8 quantization on the CUDA backend ------*- C++ -*-===//
//
// The backend's amaxParts, castParts and quantize: each validated problem
// (Quantize.h) becomes Fp8Part descriptors and the launches of the
// quantization kernels (kernels/quantize/QuantizeKernels.h) that compute it.
//
//===----------------------------------------------------------------------===//

#include "Quantize.h"
#include "cuda/CudaCheck.h"
#include "cuda/kernels/quantize/QuantizeKernels.h"

#include <climits>
#include <vector>

using namespace slinrt;
using namespace slinrt::cuda;

namespace {

cuda::Fp8Part partOf(const QuantMatrix &m, slinrt_dtype src,
                     int64_t rowOffset) {
  return cuda::Fp8Part{m.data,
                       m.rows,
                       m.cols,
                       m.ld,
                       rowOffset,
                       cuda::vectorLoadsOk(m.data, m.cols, m.ld) &&
                           (m.ld * dtypeSize(src)) % 16 == 0};
}

std::vector<cuda::Fp8Part> partsOf(const PartsProblem &p) {
  std::vector<cuda::Fp8Part> parts;
  parts.reserve(p.parts.size());
  for (size_t i = 0; i < p.parts.size(); ++i)
    parts.push_back(partOf(p.parts[i], p.src, p.rowOffset[i]));
  return parts;
}

int partCount(const PartsProblem &p) {
  if (p.parts.size() > size_t(INT_MAX))
    raise(SLINRT_ERROR_INVALID_ARGUMENT, "too many parts: ", p.parts.size());
  return int(p.parts.size());
}

} // namespace

void cuda::amaxParts(slinrt_context &ctx, const PartsProblem &p) {
  if (p.parts.empty())
    return;
  DeviceGuard guard(ctx.device);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  checkCuda(cudaMemsetAsync(p.amax, 0, p.parts.size() * sizeof(float), stream),
            "cudaMemsetAsync(amax)");
  std::vector<cuda::Fp8Part> parts = partsOf(p);
  checkCuda(launchAmaxParts(p.src, parts.data(), partCount(p), nullptr, p.amax,
                            stream),
            "amax kernel launch");
}

void cuda::castParts(slinrt_context &ctx, const PartsProblem &p) {
  if (p.parts.empty())
    return;
  DeviceGuard guard(ctx.device);
  std::vector<cuda::Fp8Part> parts = partsOf(p);
  checkCuda(launchCastParts(
                p.src, p.dst, parts.data(), partCount(p), p.cols, p.totalRows,
                nullptr, p.amaxIn, static_cast<uint8_t *>(p.out),
                static_cast<uint8_t *>(p.outT), p.scaleInv, p.rowScaleInv,
                p.pow2Scales, static_cast<cudaStream_t>(ctx.stream)),
            "FP8 cast kernel launch");
}

void cuda::quantizeBlockParts(slinrt_context &ctx, const PartsProblem &p) {
  DeviceGuard guard(ctx.device);
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  std::vector<cuda::Fp8Part> parts = partsOf(p);
  int64_t perRow = p.cols / SLINRT_QUANT_BLOCK;
  for (size_t i = 0; i < parts.size(); ++i) {
    int64_t first = p.rowOffset[i] / SLINRT_QUANT_BLOCK * perRow;
    auto *out = static_cast<uint8_t *>(p.out);
    auto *outT = static_cast<uint8_t *>(p.outT);
    checkCuda(launchQuantizeBlocks128x128(
                  p.src, p.dst, parts[i], p.amax ? p.amax + first : nullptr,
                  p.scaleInv + first,
                  out ? out + p.rowOffset[i] * p.cols : nullptr,
                  outT ? outT + p.rowOffset[i] : nullptr, p.totalRows,
                  p.pow2Scales, stream),
              "FP8 128x128 block quantization kernel launch");
  }
}

void cuda::quantize(slinrt_context &ctx, const QuantizeProblem &p) {
  DeviceGuard guard(ctx.device);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  Fp8Part x = partOf(p.x, p.src, 0);
  uint8_t *out = static_cast<uint8_t *>(p.out);
  uint8_t *outT = static_cast<uint8_t *>(p.outT);
  if (p.dual && p.axis == SLINRT_QUANT_BLOCKS) {
    checkCuda(launchQuantizeBlocksDual(p.src, p.dst, x, p.amax, p.scaleInv, out,
                                       p.scaleInvT, outT, p.pow2Scales, stream),
              "FP8 1x128 block dual quantization launch");
    return;
  }
  if (p.dual && p.axis == SLINRT_QUANT_ROWS) {
    checkCuda(launchQuantizeDualRows(p.src, p.dst, x, p.colScale, p.amax,
                                     p.scaleInv, out, p.scaleInvT, outT,
                                     p.pow2Scales, stream),
              "FP8 rows/cols dual quantization launch");
    return;
  }
  if (p.dual) {
    checkCuda(cudaMemsetAsync(p.amax, 0, 2 * sizeof(float), stream),
              "cudaMemsetAsync(amax)");
    checkCuda(
        launchAmaxParts(p.src, &x, 1, p.colScale, p.amax, stream, p.amax + 1),
        "amax kernel launch");
    checkCuda(launchCastDual(p.src, p.dst, x, p.colScale, p.amax, out,
                             p.scaleInv, outT, p.scaleInvT, p.pow2Scales,
                             stream),
              "FP8 dual cast kernel launch");
    return;
  }
  switch (p.axis) {
  case SLINRT_QUANT_TENSOR:
    checkCuda(cudaMemsetAsync(p.amax, 0, sizeof(float), stream),
              "cudaMemsetAsync(amax)");
    checkCuda(launchAmaxParts(p.src, &x, 1, p.colScale, p.amax, stream),
              "amax kernel launch");
    checkCuda(launchCastParts(p.src, p.dst, &x, 1, x.cols, x.rows, p.colScale,
                              p.amax, out, outT, p.scaleInv, nullptr,
                              p.pow2Scales, stream),
              "FP8 cast kernel launch");
    return;
  case SLINRT_QUANT_ROWS:
    checkCuda(launchQuantizeRows(p.src, p.dst, x, p.colScale, p.amax,
                                 p.scaleInv, out, outT, p.pow2Scales, stream),
              "FP8 row quantization kernel launch");
    return;
  case SLINRT_QUANT_BLOCKS:
    checkCuda(launchQuantizeBlocks(p.src, p.dst, x, p.colScale, p.amax,
                                   p.scaleInv, out, p.pow2Scales, stream),
              "FP8 1x128 block quantization kernel launch");
    return;
  case SLINRT_QUANT_COLS:
    checkCuda(launchQuantizeCols(p.src, p.dst, x, p.colScale, p.amax,
                                 p.scaleInv, out, outT, p.pow2Scales, stream),
              "FP8 column quantization kernel launch");
    return;
  }
}

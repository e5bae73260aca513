//===- Gemm.cpp - GEMM and copies on the CUDA backend -----------*- C++ -*-===//
//
// The backend's gemm (cuBLASLt through runLt, with the broadcast and row-sum
// kernels for empty problems and unfused epilogues) and copy
// (cudaMemcpy2DAsync, or the conversion kernel for other layouts and types).
//
//===----------------------------------------------------------------------===//

#include "GemmProblem.h"
#include "cuda/CudaCheck.h"
#include "cuda/GemmPlan.h"
#include "cuda/kernels/CopyKernels.h"

#include <climits>

using namespace slinrt;
using namespace slinrt::cuda;

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

void cuda::gemm(slinrt_context &ctx, const GemmProblem &p) {
  slinrt_dtype dtype = p.dtype;
  if (p.M == 0)
    return;
  DeviceGuard guard(ctx.device);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  bool biasGrad = p.epilogue == SLINRT_EPILOGUE_BIAS_GRAD;
  bool withBias = p.epilogue == SLINRT_EPILOGUE_BIAS;
  bool accumulate = p.epilogue == SLINRT_EPILOGUE_ACCUMULATE;

  // Row sums of op(A) by a kernel: element (m, k) of op(A) in storage.
  auto rowSums = [&] {
    checkCuda(launchRowSums(dtype, p.A.data, p.A.opRowStride(),
                            p.A.opColStride(), p.M, p.K, p.bias, stream),
              "row-sum kernel launch");
  };
  // Empty GEMMs: cuBLASLt does not take them; D gets zeros (plus bias), or
  // stays as it is for ACCUMULATE.
  if (p.N == 0 || p.K == 0) {
    if (accumulate)
      return;
    if (biasGrad)
      rowSums();
    checkCuda(launchBroadcastRows(dtype, p.D, p.ldd, p.M, p.N,
                                  withBias ? p.bias : nullptr, stream),
              "broadcast kernel launch");
    return;
  }

  LtProblem lt;
  lt.dtype = dtype;
  lt.type = lt.aType = lt.bType = cudaTypeOf(dtype);
  lt.scaleType = dtype == SLINRT_F64 ? CUDA_R_64F : CUDA_R_32F;
  lt.computeType = dtype == SLINRT_F64 ? CUBLAS_COMPUTE_64F
                   : (dtype == SLINRT_F32 && ctx.allowTF32)
                       ? CUBLAS_COMPUTE_32F_FAST_TF32
                       : CUBLAS_COMPUTE_32F;
  setSwappedOperands(lt, p.A, p.B, p.D, p.ldd);

  // Fused epilogues in the swapped (column-major, D^T) problem:
  //  * BIAS: cuBLASLt adds a vector of length m' (rows of its D) to every
  //    column; m' = N and its columns are our rows, so this is bias[N]
  //    broadcast over the rows of our D.
  //  * BIAS_GRAD wants bias[m] = sum_k op(A)[m, k]. Our op(A)^T is cuBLASLt's
  //    op(B) (k' x n' = K x M), and BGRADB reduces op(B) over k into a vector
  //    of length n' (columns of its D) = M. BGRADA would reduce our op(B)
  //    instead and give a length-N vector: wrong operand.
  cublasLtEpilogue_t fused = withBias   ? CUBLASLT_EPILOGUE_BIAS
                             : biasGrad ? CUBLASLT_EPILOGUE_BGRADB
                                        : CUBLASLT_EPILOGUE_DEFAULT;
  bool usedFused = runLt(ctx, lt, fused, p.bias, accumulate);
  if (biasGrad && !usedFused)
    rowSums();
}

//===----------------------------------------------------------------------===//
// Copies
//===----------------------------------------------------------------------===//

void cuda::copy(slinrt_context &ctx, slinrt_dtype srcType, slinrt_dtype dstType,
                const View2D &src, const View2D &dst) {
  DeviceGuard guard(ctx.device);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  int64_t elementSize = dtypeSize(srcType);
  // cudaMemcpy2DAsync takes same-type copies with contiguous rows and
  // non-negative pitches no smaller than a row (pitch is free for one row).
  auto pitchOf = [&](const View2D &v) -> int64_t {
    bool contiguous = v.cols <= 1 || v.colStride == 1;
    if (!contiguous)
      return -1;
    if (v.rows <= 1)
      return v.cols * elementSize;
    return v.rowStride >= v.cols ? v.rowStride * elementSize : -1;
  };
  int64_t srcPitch = pitchOf(src), dstPitch = pitchOf(dst);
  if (srcType == dstType && srcPitch >= 0 && dstPitch >= 0 &&
      srcPitch <= INT_MAX && dstPitch <= INT_MAX) {
    checkCuda(cudaMemcpy2DAsync(dst.data, size_t(dstPitch), src.data,
                                size_t(srcPitch),
                                size_t(src.cols * elementSize),
                                size_t(src.rows), cudaMemcpyDefault, stream),
              "cudaMemcpy2DAsync");
    return;
  }
  checkCuda(launchConvertCopy(srcType, dstType, src.data, src.rowStride,
                              src.colStride, dst.data, dst.rowStride,
                              dst.colStride, src.rows, src.cols, stream),
            "conversion copy kernel launch");
}

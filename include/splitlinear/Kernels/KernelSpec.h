//===- KernelSpec.h - what a kernel of the torch op is built for -*- C++ -*-===//
//
// The C++ description of one kernel: its kind, element types, weight and
// bias parts, target and view alignment (and, for the FP8 forward, the
// input's FP8 type, the scaling and fast accumulation). lib/Kernels builds IR
// from it and lib/JIT compiles it; the C API converts its `SlinKernelSpec` into
// this once (lib/CAPI), so the inner libraries do not depend on the outer face.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_KERNELS_KERNELSPEC_H
#define SPLITLINEAR_KERNELS_KERNELSPEC_H

#include "splitlinear/Conversion/Passes.h"
#include "splitlinear/Runtime/Runtime.h"

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace splitlinear {

/// The kernels of a split linear layer.
enum class KernelKind {
  /// y[M, N] = x[M, K] · concat(w_i[N_i, K])ᵀ (+ concat(b_i[N_i])).
  Fprop,
  /// dx[M, K] = dy[M, N] · concat(w_i[N_i, K]).
  Dgrad,
  /// dw[N, K] = dyᵀ · x and, with a bias gradient, db[N] = Σ_m dy[m, :].
  Wgrad,
  /// The FP8 forward (one slin.scaled_linear, strategy auto):
  /// y[m, j] = sx · ŝ[j] · Σ_k x8[m, k] · w8[j, k] (+ b[j]) with
  /// w8 = concat(w8_i) and b = concat(b_i): one GEMM over FP8 weight parts
  /// with their own scales. Arguments, after
  /// the context (all fully dynamic strided memrefs):
  ///   x8 [M, K] (inputDtype), input_scale [M or 1] f32,
  ///   w8_0 .. w8_{n-1} [N_i, K] (weightPartDtypes), weight_scale [N or 1]
  ///   f32, [b_0 .. b_{n-1} [N_i] (dtype)], y [M, N] (dtype)  -> i32 path.
  /// The scales are dequantization factors (scale_inv): input_scale has M
  /// entries for outer_vector and 1 for tensorwise; weight_scale has
  /// N = Σ N_i entries for outer_vector (part i's scale_inv repeated over its
  /// N_i rows, e.g. slinrt_cast_parts_fp8's rowScaleInv) and 1 for
  /// tensorwise (one weight part only). K and N_i must be multiples of 16.
  ScaledFprop,
};

/// What one kernel is compiled for. Dims are dynamic, so one kernel serves
/// every shape and strided layout of its signature.
struct KernelSpec {
  KernelKind kind = KernelKind::Fprop;
  /// Element type of the input, output and gradients (f32, f16, bf16,
  /// f64). ScaledFprop: the output's (and bias parts') type, f32, f16 or
  /// bf16.
  slinrt_dtype dtype = SLINRT_F32;
  /// Element type of each weight part, one entry per part (Fprop, Dgrad,
  /// ScaledFprop: at least one; Wgrad: none). A part of another type than
  /// `dtype` is converted, as the materializing concat does. ScaledFprop:
  /// one FP8 type (SLINRT_F8E4M3FN or SLINRT_F8E5M2) for all parts.
  llvm::SmallVector<slinrt_dtype> weightPartDtypes;
  /// ScaledFprop: the FP8 type of the input x8 (SLINRT_F8E4M3FN or
  /// SLINRT_F8E5M2; not SLINRT_F8E5M2 with e5m2 weight parts). Other kinds:
  /// ignored.
  slinrt_dtype inputDtype = SLINRT_F8E4M3FN;
  /// ScaledFprop: how the scales apply (see the KernelKind). Other kinds:
  /// ignored.
  slinrt_scaling scaling = SLINRT_SCALING_OUTER_VECTOR;
  /// ScaledFprop: allow cuBLASLt's fast FP8 accumulation. Other kinds:
  /// ignored.
  bool fastAccum = false;
  /// Fprop, ScaledFprop: the kernel reads one bias part per weight part.
  /// Wgrad: it also writes the bias gradient. Dgrad: must be false.
  bool hasBias = false;
  /// Fprop or ScaledFprop with `hasBias`: the element type of each bias
  /// part, one per weight part (ScaledFprop: each equal to `dtype`). Empty
  /// otherwise.
  llvm::SmallVector<slinrt_dtype> biasPartDtypes;
  /// The runtime the kernel calls.
  mlir::slin::RuntimeTarget target = mlir::slin::RuntimeTarget::cpu;
  /// Bytes a zero-copy view of the weight parts must be aligned to (a
  /// positive power of two).
  int64_t viewAlignmentBytes = 16;
  /// compileKernel writes the kernel IR and the IR after every pass here;
  /// empty: nowhere.
  std::string dumpDir;

  /// The number of weight parts.
  int64_t numWeightParts() const {
    return static_cast<int64_t>(weightPartDtypes.size());
  }
};

} // namespace splitlinear

#endif // SPLITLINEAR_KERNELS_KERNELSPEC_H

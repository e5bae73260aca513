//===- KernelSpec.h - what a kernel of the torch op is built for -*- C++ -*-===//
//
// The C++ description of one kernel: its kind, element types, weight and
// bias parts, target and view alignment. lib/Kernels builds IR from it and
// lib/JIT compiles it; the C API converts its `SlinKernelSpec` into this
// once (lib/CAPI), so the inner libraries do not depend on the outer face.
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

/// The three kernels of a split linear layer.
enum class KernelKind {
  /// y[M, N] = x[M, K] · concat(w_i[N_i, K])ᵀ (+ concat(b_i[N_i])).
  Fprop,
  /// dx[M, K] = dy[M, N] · concat(w_i[N_i, K]).
  Dgrad,
  /// dw[N, K] = dyᵀ · x and, with a bias gradient, db[N] = Σ_m dy[m, :].
  Wgrad,
};

/// What one kernel is compiled for. Dims are dynamic, so one kernel serves
/// every shape and strided layout of its signature.
struct KernelSpec {
  KernelKind kind = KernelKind::Fprop;
  /// Element type of the input, output and gradients.
  slinrt_dtype dtype = SLINRT_F32;
  /// Element type of each weight part, one entry per part (Fprop, Dgrad:
  /// at least one; Wgrad: none). A part of another type than `dtype` is
  /// converted, as the materializing concat does.
  llvm::SmallVector<slinrt_dtype> weightPartDtypes;
  /// Fprop: the kernel reads one bias part per weight part. Wgrad: it also
  /// writes the bias gradient. Dgrad: must be false.
  bool hasBias = false;
  /// Fprop with `hasBias`: the element type of each bias part, one per
  /// weight part. Empty otherwise.
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

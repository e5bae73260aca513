//===- Fp8WeightCache.h - FP8 weight parts cached across calls --*- C++ -*-===//
//
// fp8_cast_parts(..., cache=True) keeps its result for the parts it cast, so
// that the weights of a training step are quantized once however many
// micro-batches and no_grad forwards read them. An entry is reused only
// while every part is unchanged: the same storage (held weakly, so that its
// address cannot be reused while the entry lives), data pointer, offset,
// sizes, strides, dtype and version counter value. In-place updates
// (optimizer steps, copy_, load_state_dict) bump the version; `p.data = t`
// and set_ change the storage. Aliases with a version counter of their own
// (the whole-storage state_dict() entries of packed parameters, made by
// DLPack) are watched: a write through one invalidates every entry whose
// parts overlap its memory (watchFp8WeightCacheAlias). A write that bumps
// no counter the cache knows (through `.data`, straight into the untyped
// storage, or PyTorch's fused optimizers, whose `_fused_adamw_` leaves
// versions alone) is not seen: the Python package clears the cache after
// every torch.optim step for that reason.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_TORCH_FP8WEIGHTCACHE_H
#define SPLITLINEAR_LIB_TORCH_FP8WEIGHTCACHE_H

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>

#include <functional>
#include <string>
#include <tuple>

namespace splitlinear {

using Fp8PartsResult =
    std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

/// `cast(parts)`'s result, from the cache when an entry for these parts (and
/// `dtype` and `pow2Scales`, and a transposed copy when `writeTransposed`) is
/// still valid,
/// else computed and stored. Parts that cannot be keyed (inference tensors,
/// tensors without storage) and CUDA graph capture bypass the cache (a
/// captured graph must cast on every replay). The scale tensors returned are
/// fresh copies, so the caller's memory planning never writes over an entry.
Fp8PartsResult cachedFp8CastParts(at::TensorList parts, at::ScalarType dtype,
                                  bool writeTransposed, bool pow2Scales,
                                  const std::function<Fp8PartsResult()> &cast);

/// Watches `alias`, a tensor over the same memory as some parameter but
/// with a version counter of its own: while any tensor shares that counter,
/// an entry is reused only if the counter's value is what it was when the
/// entry was stored, for every watched alias overlapping its parts' memory
/// (a new overlapping alias invalidates the entry too). Undefined tensors
/// and tensors without storage are ignored.
void watchFp8WeightCacheAlias(const at::Tensor &alias);

/// Drops every entry (the FP8 copies are freed once no caller holds them),
/// and with `resetCounts` zeroes the counts of fp8WeightCacheInfo.
void clearFp8WeightCache(bool resetCounts);

/// `entries`, `bytes` (FP8 data held), `hits`, `misses` and `bypasses`.
c10::Dict<std::string, int64_t> fp8WeightCacheInfo();

} // namespace splitlinear

#endif // SPLITLINEAR_LIB_TORCH_FP8WEIGHTCACHE_H

//===- Fp8WeightCache.cpp - FP8 weight parts kept across calls --*- C++ -*-===//
//
// One process-wide table of entries, each the key of the parts one
// fp8_cast_parts call cast and that call's result. Lookups compare every
// part's identity and version (Fp8WeightCache.h); storages are held weakly,
// and entries whose storage died are dropped, their FP8 copies freed, at the
// next lookup or fp8WeightCacheInfo call.
//
//===----------------------------------------------------------------------===//

#include "Fp8WeightCache.h"

#include <c10/core/StorageImpl.h>
#include <c10/util/intrusive_ptr.h>

#ifdef SPLITLINEAR_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#include <dlfcn.h>
#endif

#include <algorithm>
#include <mutex>
#include <optional>
#include <vector>

using namespace splitlinear;

namespace {

/// A watched alias (watchFp8WeightCacheAlias): its memory and a handle on
/// its version counter, which keeps the counter (not the memory) alive.
struct Watched {
  uint64_t serial;
  at::Device device;
  uintptr_t begin, end;
  c10::VariableVersion version;
};

/// The bytes [begin, end) that `t`'s elements span.
std::pair<uintptr_t, uintptr_t> spanOf(const at::Tensor &t) {
  auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0)
      return {begin, begin};
    last += (t.size(d) - 1) * t.stride(d);
  }
  return {begin, begin + uintptr_t((last + 1) * t.element_size())};
}

/// (serial, version) of each watched alias overlapping `t`'s memory.
using AliasVersions = std::vector<std::pair<uint64_t, uint32_t>>;

/// What identifies one part's value: the storage (weakly), where the part
/// lies in it, its version counter value, and those of the watched aliases
/// overlapping it.
struct PartKey {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  const void *dataPtr = nullptr;
  size_t storageBytes = 0;
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
  at::ScalarType dtype = at::kFloat;
  at::Device device = at::kCPU;
  uint32_t version = 0;
  AliasVersions aliases;

  PartKey(c10::weak_intrusive_ptr<c10::StorageImpl> s)
      : storage(std::move(s)) {}

  bool alive() const { return !storage.expired(); }

  bool matches(const at::Tensor &t) const {
    const c10::StorageImpl *impl = t.storage().unsafeGetStorageImpl();
    // The weak reference keeps the StorageImpl's address from being reused,
    // so an equal pointer of a live storage is the same storage.
    return alive() && storage._unsafe_get_target() == impl &&
           t.data_ptr() == dataPtr && impl->nbytes() == storageBytes &&
           t.storage_offset() == offset &&
           t.sizes() == at::IntArrayRef(sizes) &&
           t.strides() == at::IntArrayRef(strides) &&
           t.scalar_type() == dtype && t.device() == device &&
           t._version() == version;
  }
};

/// The key of `t`, or nothing when `t` cannot be keyed.
std::optional<PartKey> keyOf(const at::Tensor &t) {
  if (!t.defined() || t.is_inference() || !t.has_storage())
    return std::nullopt;
  c10::StorageImpl *impl = t.storage().unsafeGetStorageImpl();
  PartKey key(t.storage().getWeakStorageImpl());
  key.dataPtr = t.data_ptr();
  key.storageBytes = impl->nbytes();
  key.offset = t.storage_offset();
  key.sizes = t.sizes().vec();
  key.strides = t.strides().vec();
  key.dtype = t.scalar_type();
  key.device = t.device();
  key.version = t._version();
  return key;
}

struct Entry {
  std::vector<PartKey> parts;
  at::ScalarType dtype;
  bool pow2Scales;
  Fp8PartsResult result;
  bool transposed;

  /// Whether this entry holds `ts` (whose keys, with their aliases'
  /// versions now, are `keys`).
  bool matches(at::TensorList ts, const std::vector<PartKey> &keys,
               at::ScalarType d, bool pow2, bool needTransposed) const {
    if (d != dtype || pow2 != pow2Scales || ts.size() != parts.size() ||
        (needTransposed && !transposed))
      return false;
    for (size_t i = 0; i < ts.size(); ++i)
      if (!parts[i].matches(ts[i]) || parts[i].aliases != keys[i].aliases)
        return false;
    return true;
  }
};

struct Cache {
  std::mutex mutex;
  std::vector<Entry> entries;
  std::vector<Watched> watched;
  uint64_t nextSerial = 0;
  int64_t hits = 0, misses = 0, bypasses = 0;
};

/// Drops the watched aliases whose counter no tensor shares any more (no
/// write can bump it); the caller holds the mutex.
void pruneWatched(Cache &c) {
  c.watched.erase(std::remove_if(c.watched.begin(), c.watched.end(),
                                 [](const Watched &w) {
                                   return w.version.unique();
                                 }),
                  c.watched.end());
}

/// Moves the entries whose parts' storage died (they can never be hit again)
/// out of `c`, so that the caller, which holds the mutex, frees their FP8
/// copies after releasing it.
std::vector<Entry> takeDead(Cache &c) {
  auto live = std::stable_partition(
      c.entries.begin(), c.entries.end(), [](const Entry &e) {
        return std::all_of(e.parts.begin(), e.parts.end(),
                           [](const PartKey &k) { return k.alive(); });
      });
  std::vector<Entry> dead(std::make_move_iterator(live),
                          std::make_move_iterator(c.entries.end()));
  c.entries.erase(live, c.entries.end());
  return dead;
}

/// The watched aliases overlapping `t`; the caller holds the mutex.
AliasVersions aliasVersionsOf(const Cache &c, const at::Tensor &t) {
  AliasVersions out;
  if (c.watched.empty())
    return out;
  auto [begin, end] = spanOf(t);
  for (const Watched &w : c.watched)
    if (w.device == t.device() && w.begin < end && begin < w.end)
      out.emplace_back(w.serial, w.version.current_version());
  return out;
}

Cache &cache() {
  static Cache *c = new Cache(); // never destroyed: no teardown-order issues
  return *c;
}

/// Whether the current CUDA stream of `t`'s device may be capturing a graph
/// (then the cache is bypassed). The op library links no CUDA runtime of its
/// own (CMakeLists.txt), so the query is PyTorch's cudart, found at run
/// time; without it every CUDA call counts as capturing (never cached).
bool capturing(const at::Tensor &t) {
#ifdef SPLITLINEAR_TORCH_CUDA
  if (t.is_cuda()) {
    // cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus
    // *)
    using IsCapturing = int (*)(cudaStream_t, int *);
    static const auto isCapturing = reinterpret_cast<IsCapturing>(
        dlsym(RTLD_DEFAULT, "cudaStreamIsCapturing"));
    if (!isCapturing)
      return true;
    int status = 0; // cudaStreamCaptureStatusNone
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream(t.get_device());
    return isCapturing(stream, &status) != 0 || status != 0;
  }
#endif
  return false;
}

Fp8PartsResult freshScales(const Fp8PartsResult &r) {
  return {std::get<0>(r), std::get<1>(r), std::get<2>(r).clone(),
          std::get<3>(r).clone()};
}

} // namespace

Fp8PartsResult
splitlinear::cachedFp8CastParts(at::TensorList parts, at::ScalarType dtype,
                                bool writeTransposed, bool pow2Scales,
                                const std::function<Fp8PartsResult()> &cast) {
  Cache &c = cache();
  std::vector<PartKey> keys;
  bool keyable = !parts.empty() && !capturing(parts[0]);
  for (size_t i = 0; keyable && i < parts.size(); ++i) {
    std::optional<PartKey> key = keyOf(parts[i]);
    keyable = key.has_value();
    if (key)
      keys.push_back(std::move(*key));
  }
  if (!keyable) {
    {
      std::lock_guard<std::mutex> lock(c.mutex);
      ++c.bypasses;
    }
    return cast();
  }
  std::vector<Entry> dead; // freed after the lock is released
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    pruneWatched(c);
    dead = takeDead(c);
    for (size_t i = 0; i < keys.size(); ++i)
      keys[i].aliases = aliasVersionsOf(c, parts[i]);
    for (const Entry &e : c.entries)
      if (e.matches(parts, keys, dtype, pow2Scales, writeTransposed)) {
        ++c.hits;
        return freshScales(e.result);
      }
    ++c.misses;
  }
  Fp8PartsResult result = cast();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto stale = [&](const Entry &e) {
    if (std::any_of(e.parts.begin(), e.parts.end(),
                    [](const PartKey &k) { return !k.alive(); }))
      return true;
    // The same tensors' older value (or the same value without the
    // transposed copy): replaced by this one. Another scale rule's entry
    // stays (a model may run two recipes).
    if (e.parts.size() != keys.size() || e.dtype != dtype ||
        e.pow2Scales != pow2Scales)
      return false;
    for (size_t i = 0; i < keys.size(); ++i)
      if (e.parts[i].storage._unsafe_get_target() !=
              keys[i].storage._unsafe_get_target() ||
          e.parts[i].offset != keys[i].offset)
        return false;
    return true;
  };
  c.entries.erase(std::remove_if(c.entries.begin(), c.entries.end(), stale),
                  c.entries.end());
  c.entries.push_back(
      Entry{std::move(keys), dtype, pow2Scales, result, writeTransposed});
  return freshScales(result);
}

void splitlinear::watchFp8WeightCacheAlias(const at::Tensor &alias) {
  if (!alias.defined() || !alias.has_storage() || alias.is_meta() ||
      alias.is_inference())
    return;
  auto [begin, end] = spanOf(alias);
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  pruneWatched(c);
  c.watched.push_back(Watched{c.nextSerial++, alias.device(), begin, end,
                              alias.unsafeGetTensorImpl()->version_counter()});
}

void splitlinear::clearFp8WeightCache(bool resetCounts) {
  Cache &c = cache();
  std::vector<Entry> dropped;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    dropped.swap(c.entries);
    if (resetCounts)
      c.hits = c.misses = c.bypasses = 0;
  }
}

c10::Dict<std::string, int64_t> splitlinear::fp8WeightCacheInfo() {
  Cache &c = cache();
  std::vector<Entry> dead; // freed after the lock is released
  std::lock_guard<std::mutex> lock(c.mutex);
  dead = takeDead(c);
  int64_t bytes = 0;
  for (const Entry &e : c.entries)
    bytes +=
        std::get<0>(e.result).nbytes() +
        (std::get<1>(e.result).defined() ? std::get<1>(e.result).nbytes() : 0);
  c10::Dict<std::string, int64_t> out;
  out.insert("entries", static_cast<int64_t>(c.entries.size()));
  out.insert("bytes", bytes);
  out.insert("hits", c.hits);
  out.insert("misses", c.misses);
  out.insert("bypasses", c.bypasses);
  return out;
}

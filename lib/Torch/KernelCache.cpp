//===- KernelCache.cpp - compiled kernels of the torch op -------*- C++ -*-===//
//
// Implements the bounded, thread-safe kernel cache of the torch op.
//
//===----------------------------------------------------------------------===//

#include "KernelCache.h"
#include "Counters.h"
#include "KernelPlan.h"
#include "Settings.h"

#include <c10/util/Exception.h>

#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace splitlinear {

bool KernelKey::operator==(const KernelKey &o) const {
  return kind == o.kind && dtype == o.dtype &&
         numWeightParts == o.numWeightParts && hasBias == o.hasBias &&
         target == o.target && inputFp8Dtype == o.inputFp8Dtype &&
         weightFp8Dtype == o.weightFp8Dtype && scaling == o.scaling &&
         fastAccum == o.fastAccum;
}

namespace {
struct KeyHash {
  size_t operator()(const KernelKey &k) const {
    size_t h = std::hash<int64_t>()(
        int64_t(k.kind) << 40 ^ int64_t(k.dtype) << 32 ^
        int64_t(k.inputFp8Dtype & 0xff) << 24 ^
        int64_t(k.weightFp8Dtype & 0xff) << 18 ^ int64_t(k.hasBias) << 16 ^
        int64_t(k.scaling) << 8 ^ int64_t(k.fastAccum) << 4 ^
        int64_t(k.target));
    return h * 1000003u ^ std::hash<int64_t>()(k.numWeightParts);
  }
};

/// LRU list of keys plus a map to (kernel, position in the list).
struct Cache {
  std::mutex mutex;
  std::list<KernelKey> order;
  std::unordered_map<KernelKey,
                     std::pair<std::shared_ptr<const Kernel>,
                               std::list<KernelKey>::iterator>,
                     KeyHash>
      map;
};

Cache &cache() {
  static Cache *instance = new Cache(); // never destroyed: engines may outlive main
  return *instance;
}
} // namespace

size_t cacheSize() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().map.size();
}

std::shared_ptr<const Kernel> getKernel(const KernelKey &key,
                                        const std::string &dumpDir) {
  size_t limit = kernelCacheCapacity(); // raises a bad SPLITLINEAR_KERNEL_CACHE_SIZE first
  checkPartCount(key.numWeightParts, "splitlinear", "a kernel");
  Cache &c = cache();
  // A compile that asks for dumps compiles even a cached signature (and
  // replaces the cached kernel), so its dump directory gets every kernel.
  if (dumpDir.empty()) {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.map.find(key);
    if (it != c.map.end()) {
      c.order.splice(c.order.begin(), c.order, it->second.second);
      counters().cacheHits.fetch_add(1, std::memory_order_relaxed);
      return it->second.first;
    }
  }
  // Compile outside the lock: another thread may compile the same key; the
  // first to insert wins and the other engine is dropped.
  SlinKernelSpec spec{};
  spec.kind = key.kind;
  spec.dtype = key.dtype;
  spec.num_parts = static_cast<int32_t>(key.numWeightParts);
  // Every part has `dtype`, except in SCALED_FPROP kernels (FP8 parts).
  std::vector<int32_t> partDtypes;
  if (key.kind == SLIN_KERNEL_SCALED_FPROP)
    partDtypes.assign(key.numWeightParts, key.weightFp8Dtype);
  spec.part_dtypes = partDtypes.empty() ? nullptr : partDtypes.data();
  spec.input_dtype = key.inputFp8Dtype;
  spec.scaling = key.scaling;
  spec.fast_accum = key.fastAccum;
  spec.has_bias = key.hasBias;
  spec.bias_dtypes = nullptr;
  spec.target = key.target;
  spec.alignment = 16;
  // Without a compile's own dump directory, the user's environment may ask
  // for dumps of every kernel compiled.
  spec.dump_dir = !dumpDir.empty() ? dumpDir.c_str() : kernelDumpDirFromEnv();
  void (*entry)(void **) = nullptr;
  char *error = nullptr;
  SlinEngine engine = slinKernelCompile(&spec, &entry, &error);
  if (!engine) {
    std::string message = error ? error : "unknown error";
    slinStringFree(error);
    TORCH_CHECK(false, "splitlinear: compiling the kernel failed:\n", message);
  }
  counters().compiles.fetch_add(1, std::memory_order_relaxed);
  auto kernel = std::make_shared<const Kernel>(engine, entry);
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.map.find(key);
  if (it != c.map.end()) {
    if (dumpDir.empty())
      return it->second.first;
    c.order.erase(it->second.second);
    c.map.erase(it);
  }
  c.order.push_front(key);
  c.map.emplace(key, std::make_pair(kernel, c.order.begin()));
  while (c.map.size() > limit) {
    c.map.erase(c.order.back());
    c.order.pop_back();
    counters().evictions.fetch_add(1, std::memory_order_relaxed);
  }
  return kernel;
}

} // namespace splitlinear

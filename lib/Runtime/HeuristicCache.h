//===- HeuristicCache.h - Bounded cache of heuristic answers ----*- C++ -*-===//
//
// The policy of the CUDA backend's cuBLASLt algorithm cache, kept free of
// CUDA so that it is unit-tested on any machine: which heuristic answers may
// be cached (an algorithm, or a definite "no algorithm"; never a transient
// failure such as out-of-memory, which must be asked again next time) and how
// many (a least-recently-used bound, so a process that sees endless shapes
// does not grow without limit). Values are shared pointers, so an entry that
// is evicted stays alive for whoever still holds it.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_HEURISTICCACHE_H
#define SPLITLINEAR_LIB_RUNTIME_HEURISTICCACHE_H

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace slinrt {

/// What a heuristic query answered.
enum class HeuristicOutcome {
  /// An algorithm was found.
  Found,
  /// The library has no algorithm for the problem: asking again gives the
  /// same answer.
  NoAlgorithm,
  /// The query itself failed (out of memory, internal error, ...): the
  /// answer says nothing about the problem.
  Failed,
};

/// True for the outcomes that describe the problem and may be cached.
constexpr bool isCacheable(HeuristicOutcome outcome) {
  return outcome != HeuristicOutcome::Failed;
}

/// A thread-safe map from `Key` to shared, immutable `Value`s holding at most
/// `capacity` entries; inserting into a full cache evicts the least recently
/// used entry (a lookup hit counts as a use).
template <typename Key, typename Value, typename Hash = std::hash<Key>>
class HeuristicCache {
public:
  using ValuePtr = std::shared_ptr<const Value>;

  /// A cache of at most `capacity` (at least 1) entries.
  explicit HeuristicCache(size_t capacity)
      : capacity(capacity ? capacity : 1) {}

  /// The cached value of `key` (marked most recently used), or null.
  ValuePtr find(const Key &key) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = index.find(key);
    if (it == index.end())
      return nullptr;
    order.splice(order.begin(), order, it->second);
    return it->second->second;
  }

  /// Caches `value` for `key` when `outcome` is cacheable and returns the
  /// value now cached for `key` (an earlier insertion by another thread
  /// wins); returns `value` itself, uncached, for a failed query.
  ValuePtr insert(const Key &key, ValuePtr value, HeuristicOutcome outcome) {
    if (!isCacheable(outcome))
      return value;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = index.find(key);
    if (it != index.end()) {
      order.splice(order.begin(), order, it->second);
      return it->second->second;
    }
    if (index.size() >= capacity) {
      index.erase(order.back().first);
      order.pop_back();
    }
    order.emplace_front(key, std::move(value));
    index.emplace(key, order.begin());
    return order.front().second;
  }

  /// The number of cached entries (at most `capacity`).
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex);
    return index.size();
  }

  /// The bound given at construction.
  size_t maxSize() const { return capacity; }

private:
  using Entry = std::pair<Key, ValuePtr>;
  const size_t capacity;
  mutable std::mutex mutex;
  /// Most recently used first.
  std::list<Entry> order;
  std::unordered_map<Key, typename std::list<Entry>::iterator, Hash> index;
};

} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_HEURISTICCACHE_H

//===- HeuristicCacheTest.cpp - Algorithm-cache policy tests -----*- C++ -*-===//
//
// The policy of the CUDA backend's cuBLASLt algorithm cache
// (lib/Runtime/HeuristicCache.h), tested on the CPU: only definite answers
// are cached, the cache is bounded and evicts the least recently used entry,
// and an evicted entry stays valid for its holders.
//
//===----------------------------------------------------------------------===//

#include "HeuristicCache.h"

#include <gtest/gtest.h>

#include <string>

using slinrt::HeuristicCache;
using slinrt::HeuristicOutcome;

namespace {

using Cache = HeuristicCache<int, std::string>;

std::shared_ptr<const std::string> value(const char *text) {
  return std::make_shared<const std::string>(text);
}

TEST(HeuristicCacheTest, CachesAlgorithmsAndNoAlgorithmAnswers) {
  Cache cache(8);
  cache.insert(1, value("algo"), HeuristicOutcome::Found);
  cache.insert(2, value("none"), HeuristicOutcome::NoAlgorithm);
  ASSERT_NE(cache.find(1), nullptr);
  EXPECT_EQ(*cache.find(1), "algo");
  ASSERT_NE(cache.find(2), nullptr);
  EXPECT_EQ(*cache.find(2), "none");
  EXPECT_EQ(cache.size(), 2u);
}

// A transient failure (out of memory, internal error) says nothing about the
// problem: the next call must query again.
TEST(HeuristicCacheTest, DoesNotCacheFailedQueries) {
  Cache cache(8);
  std::shared_ptr<const std::string> failed =
      cache.insert(3, value("ALLOC_FAILED"), HeuristicOutcome::Failed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(*failed, "ALLOC_FAILED"); // the caller still gets its answer
  EXPECT_EQ(cache.find(3), nullptr);
  EXPECT_EQ(cache.size(), 0u);
  // A later definite answer is cached.
  cache.insert(3, value("algo"), HeuristicOutcome::Found);
  ASSERT_NE(cache.find(3), nullptr);
  EXPECT_EQ(*cache.find(3), "algo");
}

TEST(HeuristicCacheTest, FirstInsertionWins) {
  Cache cache(8);
  cache.insert(4, value("first"), HeuristicOutcome::Found);
  EXPECT_EQ(*cache.insert(4, value("second"), HeuristicOutcome::Found),
            "first");
  EXPECT_EQ(*cache.find(4), "first");
  EXPECT_EQ(cache.size(), 1u);
}

TEST(HeuristicCacheTest, BoundedLeastRecentlyUsed) {
  Cache cache(3);
  EXPECT_EQ(cache.maxSize(), 3u);
  for (int key = 0; key < 3; ++key)
    cache.insert(key, value("v"), HeuristicOutcome::Found);
  ASSERT_NE(cache.find(0), nullptr); // 0 is now the most recently used
  cache.insert(3, value("v"), HeuristicOutcome::Found);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.find(1), nullptr); // the least recently used went
  EXPECT_NE(cache.find(0), nullptr);
  EXPECT_NE(cache.find(2), nullptr);
  EXPECT_NE(cache.find(3), nullptr);
  // Many more shapes than the bound: the size stays at the bound.
  for (int key = 100; key < 1100; ++key)
    cache.insert(key, value("v"), HeuristicOutcome::NoAlgorithm);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_NE(cache.find(1099), nullptr);
  EXPECT_EQ(cache.find(100), nullptr);
}

TEST(HeuristicCacheTest, EvictedEntryStaysValidForHolders) {
  Cache cache(1);
  std::shared_ptr<const std::string> held =
      cache.insert(1, value("held"), HeuristicOutcome::Found);
  cache.insert(2, value("other"), HeuristicOutcome::Found);
  EXPECT_EQ(cache.find(1), nullptr);
  EXPECT_EQ(*held, "held");
}

TEST(HeuristicCacheTest, ZeroCapacityMeansOne) {
  Cache cache(0);
  EXPECT_EQ(cache.maxSize(), 1u);
  cache.insert(1, value("v"), HeuristicOutcome::Found);
  EXPECT_NE(cache.find(1), nullptr);
}

} // namespace

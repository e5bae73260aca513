//===- Counters.cpp - counters of the op library ----------------*- C++ -*-===//
//
// Implements Counters.h.
//
//===----------------------------------------------------------------------===//

#include "Counters.h"
#include "KernelCache.h"

using namespace splitlinear;

OpCounters &splitlinear::counters() {
  static OpCounters instance;
  return instance;
}

c10::Dict<std::string, int64_t> splitlinear::runtimeCounters() {
  auto &c = counters();
  c10::Dict<std::string, int64_t> out;
  out.insert("views", c.fprop.views.load());
  out.insert("cats", c.fprop.cats.load());
  out.insert("per_part_gemms", c.fprop.perPartGemms.load());
  out.insert("compiles", c.compiles.load());
  out.insert("cache_hits", c.cacheHits.load());
  out.insert("evictions", c.evictions.load());
  out.insert("cache_size", static_cast<int64_t>(cacheSize()));
  out.insert("dgrad_views", c.dgrad.views.load());
  out.insert("dgrad_cats", c.dgrad.cats.load());
  out.insert("dgrad_per_part_gemms", c.dgrad.perPartGemms.load());
  out.insert("scaled_views", c.scaled.views.load());
  out.insert("scaled_cats", c.scaled.cats.load());
  out.insert("scaled_per_part_gemms", c.scaled.perPartGemms.load());
  return out;
}

void splitlinear::resetRuntimeCounters() {
  auto &c = counters();
  for (PathCounters *paths : {&c.fprop, &c.dgrad, &c.scaled}) {
    paths->views = 0;
    paths->cats = 0;
    paths->perPartGemms = 0;
  }
  c.compiles = 0;
  c.cacheHits = 0;
  c.evictions = 0;
}

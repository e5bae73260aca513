//===- Settings.cpp - Reading the CUDA backend's settings -------*- C++ -*-===//
//
// The one place the runtime reads its environment (Settings.h lists every
// variable): the typed readers of integer and keyword settings.
//
//===----------------------------------------------------------------------===//

#include "cuda/Settings.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace slinrt;

int64_t cuda::readSetting(const IntegerSetting &setting) {
  const char *env = std::getenv(setting.name);
  if (!env || !*env)
    return setting.unset;
  char *end = nullptr;
  long long value = std::strtoll(env, &end, 10);
  if (*end != '\0' || value < setting.min)
    return setting.off;
  return std::min<int64_t>(value, setting.max);
}

int cuda::matchKeyword(const char *name, const char *const *texts,
                       size_t count) {
  const char *env = std::getenv(name);
  if (!env)
    return -1;
  for (size_t i = 0; i < count; ++i)
    if (std::strcmp(env, texts[i]) == 0)
      return static_cast<int>(i);
  return -1;
}

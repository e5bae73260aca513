//===- shim.h - CUDA names for the host emulation ---------------*- C++ -*-===//
//
// What DecodeGemmKernels.cu's kernels use from CUDA, for host threads (see
// emu.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once
#include <algorithm>
#include <barrier>
#include <cstdint>
#include <cstring>
#include <vector_functions.h>
#include <vector_types.h>
// vector_types.h defines these for the host compiler too.
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__
#define __shared__ static
struct EmuIdx {
  unsigned x = 0, y = 0, z = 0;
};
extern thread_local EmuIdx threadIdx, blockIdx;
extern std::barrier<> *emuCta;
inline void __syncthreads() { emuCta->arrive_and_wait(); }
inline uint4 __ldcs(const uint4 *p) {
  uint4 v;
  std::memcpy(&v, p, 16);
  return v;
}
inline uint4 __ldg(const uint4 *p) {
  uint4 v;
  std::memcpy(&v, p, 16);
  return v;
}
using std::min;
void emuMma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
            uint32_t b0, uint32_t b1);

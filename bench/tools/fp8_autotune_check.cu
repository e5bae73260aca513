//===- fp8_autotune_check.cu - Times the runtime's FP8 GEMM -----*- C++ -*-===//
//
// Times _mlir_ciface_slinrt_cuda_scaled_gemm_bf16 (outer-vector scaling,
// fast accumulation, e4m3 x e4m3, bf16 out) at decode shapes through the
// runtime library, to compare heuristic #0 with the opt-in autotuning
// (SPLITLINEAR_FP8_AUTOTUNE_MAX_M). Weights rotate over >= 256 MiB of copies
// as in bench/tools/cublaslt_fp8_probe.cu. At M <= 16 the runtime runs its
// decode GEMM, not cuBLASLt, unless SPLITLINEAR_FP8_DECODE_MAX_M=0. Build and
// run on the GPU machine:
//   nvcc -O2 -std=c++17 -arch=sm_90 bench/tools/fp8_autotune_check.cu \
//     -Iinclude -L<runtime build>/lib -lsplitlinear_runtime -o /tmp/fp8check
//   export SPLITLINEAR_FP8_DECODE_MAX_M=0
//   /tmp/fp8check; SPLITLINEAR_FP8_AUTOTUNE_MAX_M=128 /tmp/fp8check
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Runtime/Runtime.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

int main() {
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  slinrt_context *ctx = slinrt_context_create_cuda(0, stream);
  if (!ctx) {
    std::printf("no context: %s\n", slinrt_last_create_error());
    return 1;
  }
  struct Shape {
    const char *name;
    int64_t K, N;
  } shapes[] = {{"qkv", 4096, 6144}, {"gate_up", 4096, 28672},
                {"down", 14336, 4096}};
  for (int64_t M : {16, 64})
    for (const Shape &s : shapes) {
      size_t wBytes = size_t(s.N) * s.K;
      size_t copies = ((size_t(256) << 20) + wBytes - 1) / wBytes;
      std::vector<void *> w(copies);
      for (void *&p : w) {
        cudaMalloc(&p, wBytes);
        cudaMemset(p, 0x38, wBytes); // e4m3 1.0
      }
      void *a, *d;
      float *sa, *sb;
      cudaMalloc(&a, M * s.K);
      cudaMemset(a, 0x30, M * s.K); // e4m3 0.5
      cudaMalloc(&d, 2 * M * s.N);
      cudaMalloc(&sa, M * 4);
      cudaMalloc(&sb, s.N * 4);
      std::vector<float> ones(s.N, 1.0f / 1024);
      cudaMemcpy(sa, ones.data(), M * 4, cudaMemcpyHostToDevice);
      cudaMemcpy(sb, ones.data(), s.N * 4, cudaMemcpyHostToDevice);
      auto call = [&](size_t i) {
        slinrt_memref2d A{a, a, 0, {M, s.K}, {s.K, 1}};
        slinrt_memref2d B{w[i % copies], w[i % copies], 0, {s.N, s.K},
                          {s.K, 1}};
        slinrt_memref2d D{d, d, 0, {M, s.N}, {s.N, 1}};
        slinrt_memref1d SA{sa, sa, 0, {M}, {1}}, SB{sb, sb, 0, {s.N}, {1}};
        slinrt_memref1d bias{nullptr, nullptr, 0, {0}, {1}};
        _mlir_ciface_slinrt_cuda_scaled_gemm_bf16(
            ctx, &A, &B, &D, &SA, &SB, &bias, SLINRT_F8E4M3FN,
            SLINRT_F8E4M3FN, SLINRT_SCALING_OUTER_VECTOR, 1);
      };
      call(0); // plan (and tuning) here
      if (slinrt_context_status(ctx) != SLINRT_OK) {
        std::printf("error: %s\n", slinrt_context_error(ctx));
        return 1;
      }
      for (int i = 0; i < 20; ++i)
        call(i);
      std::vector<cudaEvent_t> ev(202);
      for (auto &e : ev)
        cudaEventCreate(&e);
      std::vector<float> ms(101);
      for (int i = 0; i < 101; ++i) {
        cudaEventRecord(ev[2 * i], stream);
        call(i);
        cudaEventRecord(ev[2 * i + 1], stream);
      }
      cudaStreamSynchronize(stream);
      for (int i = 0; i < 101; ++i)
        cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]);
      std::sort(ms.begin(), ms.end());
      std::printf("%-8s M=%3lld median %.4f ms\n", s.name, (long long)M,
                  ms[50]);
      for (void *p : w)
        cudaFree(p);
      cudaFree(a), cudaFree(d), cudaFree(sa), cudaFree(sb);
    }
  slinrt_context_destroy(ctx);
  return 0;
}

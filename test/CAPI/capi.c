/*===- capi.c - test of the splitlinear C API and JIT -------------*- C -*-===*\
|*                                                                            *|
|* Exercises parse / pipeline / JIT / invoke / kernel build through the C    *|
|* API only, with data that makes every expected value exact by             *|
|* construction (small integers), on the CPU runtime.                        *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

// RUN: splitlinear-capi-test 2>&1 | FileCheck %s

#include "splitlinear-c/SplitLinear.h"
#include "splitlinear/Runtime/Runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static slinrt_memref2d matrix(float *base, int64_t offset, int64_t rows,
                              int64_t cols, int64_t ld) {
  slinrt_memref2d m = {base, base, offset, {rows, cols}, {ld, 1}};
  return m;
}

static slinrt_memref1d vector(float *base, int64_t offset, int64_t n) {
  slinrt_memref1d v = {base, base, offset, {n}, {1}};
  return v;
}

enum { M = 3, K = 4, NQ = 4, NK = 2, NV = 2, N = NQ + NK + NV };

/* y = x · Wᵀ + b on small integers; returns the max abs error vs. a loop
   and stores the path the kernel reports (a SlinKernelPath) in *path. */
static double runFprop(void (*entry)(void **), slinrt_context *ctx,
                       float *wbuf, const int64_t offsets[3], float *bbuf,
                       const int64_t boffsets[3], int32_t *path) {
  float x[M * K], y[M * N];
  for (int i = 0; i < M * K; ++i)
    x[i] = (float)((i * 7) % 5 - 2);
  const int64_t rows[3] = {NQ, NK, NV};
  slinrt_memref2d dx = matrix(x, 0, M, K, K), dy = matrix(y, 0, M, N, N);
  slinrt_memref2d dw[3];
  slinrt_memref1d db[3];
  for (int p = 0; p < 3; ++p) {
    dw[p] = matrix(wbuf, offsets[p], rows[p], K, K);
    db[p] = vector(bbuf, boffsets[p], rows[p]);
  }
  void *ptrs[9] = {&dx, &dw[0], &dw[1], &dw[2], &db[0], &db[1], &db[2], &dy};
  void *args[10] = {&ctx};
  for (int i = 0; i < 8; ++i)
    args[i + 1] = &ptrs[i];
  args[9] = path;
  entry(args);
  if (slinrt_context_status(ctx) != SLINRT_OK) {
    printf("runtime error: %s\n", slinrt_context_error(ctx));
    return -1;
  }
  double maxError = 0;
  for (int m = 0; m < M; ++m) {
    int col = 0;
    for (int p = 0; p < 3; ++p)
      for (int n = 0; n < rows[p]; ++n, ++col) {
        double ref = bbuf[boffsets[p] + n];
        for (int k = 0; k < K; ++k)
          ref += (double)x[m * K + k] * wbuf[offsets[p] + n * K + k];
        double err = fabs(ref - y[m * N + col]);
        if (err > maxError)
          maxError = err;
      }
  }
  return maxError;
}

int main(void) {
  char *error = NULL;

  /* Kernel IR from the one producer. */
  int32_t partDtypes[3] = {SLINRT_F32, SLINRT_F32, SLINRT_F32};
  SlinKernelSpec spec = {SLIN_KERNEL_FPROP, SLINRT_F32, 3, partDtypes, 1, NULL,
                         SLIN_TARGET_CPU, /*alignment=*/16};
  char *ir = slinKernelBuildIR(&spec, &error);
  /* CHECK: func.func @slin_kernel(%{{.*}}: !slin.context, %{{.*}}: memref<?x?xf32, strided<[?, ?], offset: ?>>
   * CHECK-SAME: -> i32
   * CHECK: slin.linear ins(
   * CHECK-SAME: bias(
   * CHECK-SAME: {strategy = #slin.strategy<auto>} -> i32
   */
  printf("%s\n", ir ? ir : error);
  slinStringFree(ir);

  /* Compile and run on adjacent parts (one buffer) and disjoint ones. */
  void (*entry)(void **) = NULL;
  SlinEngine engine = slinKernelCompile(&spec, &entry, &error);
  if (!engine) {
    printf("compile failed: %s\n", error);
    return 1;
  }
  slinrt_context *ctx = slinrt_context_create_cpu();
  float *w = aligned_alloc(64, 64 * sizeof(float));
  float *b = aligned_alloc(64, 64 * sizeof(float));
  for (int i = 0; i < 64; ++i) {
    w[i] = (float)((i * 3) % 7 - 3);
    b[i] = (float)(i % 4);
  }
  int64_t adjacent[3] = {0, NQ * K, (NQ + NK) * K};
  int64_t badjacent[3] = {0, NQ, NQ + NK};
  int32_t path = -1;
  slinrt_counters before = slinrt_context_counters(ctx);
  // CHECK: adjacent: max error 0, copies 0, path 0
  double err = runFprop(entry, ctx, w, adjacent, b, badjacent, &path);
  slinrt_counters after = slinrt_context_counters(ctx);
  printf("adjacent: max error %g, copies %lld, path %d\n", err,
         (long long)(after.copies - before.copies), path);
  int64_t reversed[3] = {(NK + NV) * K, NV * K, 0};
  int64_t breversed[3] = {NK + NV, NV, 0};
  /* Not adjacent, 3 rows: the CPU context's automatic choice (at most 64
     rows) runs one GEMM per part, copying nothing. */
  // CHECK: reversed, automatic: max error 0, copies 0, path 2
  err = runFprop(entry, ctx, w, reversed, b, breversed, &path);
  before = after;
  after = slinrt_context_counters(ctx);
  printf("reversed, automatic: max error %g, copies %lld, path %d\n", err,
         (long long)(after.copies - before.copies), path);
  /* With the per-part path off, the parts (and biases) are copied. */
  slinrt_context_set_per_part_max_rows(ctx, 0);
  // CHECK: reversed: max error 0, copies 6, path 1
  err = runFprop(entry, ctx, w, reversed, b, breversed, &path);
  before = after;
  after = slinrt_context_counters(ctx);
  printf("reversed: max error %g, copies %lld, path %d\n", err,
         (long long)(after.copies - before.copies), path);
  /* A misaligned start (offset of one float) falls back to the copy too. */
  int64_t shifted[3] = {1, 1 + NQ * K, 1 + (NQ + NK) * K};
  // CHECK: misaligned: max error 0, copies 3, path 1
  err = runFprop(entry, ctx, w, shifted, b, badjacent, &path);
  before = after;
  after = slinrt_context_counters(ctx);
  printf("misaligned: max error %g, copies %lld, path %d\n", err,
         (long long)(after.copies - before.copies), path);
  slinEngineDestroy(engine);
  slinrt_context_destroy(ctx);
  free(w);
  free(b);

  /* The FP8 forward: x8, its scale, the FP8 parts, their spread scale,
     the biases, y. */
  int32_t fp8Parts[2] = {SLINRT_F8E4M3FN, SLINRT_F8E4M3FN};
  SlinKernelSpec scaled = {SLIN_KERNEL_SCALED_FPROP, SLINRT_BF16, 2, fp8Parts,
                           1, NULL, SLIN_TARGET_CPU, /*alignment=*/16, NULL,
                           SLINRT_F8E4M3FN, SLINRT_SCALING_OUTER_VECTOR, 1};
  ir = slinKernelBuildIR(&scaled, &error);
  /* CHECK: func.func @slin_kernel(%{{.*}}: !slin.context, %{{.*}}: memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>, %{{.*}}: memref<?xf32, strided<[?], offset: ?>>, %{{.*}}: memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>, %{{.*}}: memref<?x?xf8E4M3FN, strided<[?, ?], offset: ?>>, %{{.*}}: memref<?xf32, strided<[?], offset: ?>>, %{{.*}}: memref<?xbf16, strided<[?], offset: ?>>, %{{.*}}: memref<?xbf16, strided<[?], offset: ?>>, %{{.*}}: memref<?x?xbf16, strided<[?, ?], offset: ?>>) -> i32
   * CHECK: slin.scaled_linear ins(
   * CHECK-SAME: {fast_accum, scaling = #slin.scaling<outer_vector>, strategy = #slin.strategy<auto>} -> i32
   */
  printf("%s\n", ir ? ir : error);
  slinStringFree(ir);
  scaled.scaling = SLINRT_SCALING_TENSORWISE;
  // CHECK: bad scaled spec: tensorwise scaling with 2 weight parts: parts with their own scales need outer_vector
  printf("bad scaled spec: %s\n",
         slinKernelBuildIR(&scaled, &error) ? "?" : error);
  slinStringFree(error);
  error = NULL;

  /* Errors come back as text, never as a crash. */
  SlinKernelSpec bad = spec;
  bad.num_parts = 0;
  // CHECK: bad spec: a kernel needs at least one weight part, got 0
  printf("bad spec: %s\n", slinKernelBuildIR(&bad, &error) ? "?" : error);
  slinStringFree(error);
  error = NULL;
  const char *badIR = "func.func @f() { slin.bogus }";
  // CHECK: bad IR: {{.*}}error: {{.*}}slin.bogus
  printf("bad IR: %s\n",
         slinModuleParse(badIR, strlen(badIR), &error) ? "?" : error);
  slinStringFree(error);
  error = NULL;
  const char *okIR = "func.func @f() { return }";
  SlinModule module = slinModuleParse(okIR, strlen(okIR), &error);
  // CHECK: bad pipeline: invalid pass pipeline 'builtin.module(no-such-pass)'
  printf("bad pipeline: %s\n",
         slinModuleRunPipeline(module, "no-such-pass", &error) ? error : "?");
  slinStringFree(error);
  slinModuleDestroy(module);
  return 0;
}

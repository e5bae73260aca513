//===- cublaslt_fp8_probe.cu - cuBLASLt FP8 algorithm probe ------*- C++ -*-===//
//
// A standalone probe (no project dependency) of the cuBLASLt algorithms for
// the decode-shape GEMMs (M = 1 and 16) of a Llama-3-8B layer: which
// algorithm, tile and split-K make one FP8 GEMM with FP8 weights faster than
// the bf16 GEMM, and how far heuristic #0 (what the runtime uses unless
// autotuning is on) is from the best one.
//
// Layout, as lib/Runtime/cuda/GemmPlan.cpp runs it: row-major D[M,N] =
// A[M,K] * B[N,K]^T is the column-major D^T = B * A^T, so cuBLASLt's A is our
// weight B (e4m3, transa = T, lda = K), its B our activation A (e4m3, N,
// ldb = K), D bf16 (ldd = N), compute 32F, scale type 32F, the heuristic's
// reduction scheme restricted to COMPUTE_TYPE and a 32 MiB workspace. Per
// shape: a bf16 GEMM of the same layout, and the FP8 GEMM with tensorwise
// (SCALAR_32F both sides) and outer-vector (OUTER_VEC_32F both sides; an N
// and an M vector) scaling, fast accumulation on and off, and "alpha_vec":
// tensorwise scales with the N weight scales as a device alpha vector
// (CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO).
//
// Per configuration: up to --max-algos heuristic answers, plus, for every
// answer whose algorithm reports CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, copies
// with CUBLASLT_ALGO_CONFIG_SPLITK_NUM in {2, 4, 8, 16} and a supported
// reduction scheme (COMPUTE_TYPE preferred, then OUTPUT_TYPE, then INPLACE),
// kept when cublasLtMatmulAlgoCheck accepts them within the workspace, and
// heuristic #0 forced to each other tile of CUBLASLT_ALGO_CAP_TILE_IDS that
// the check accepts (heuristic index -1 in the output).
// Every candidate is timed once; within 2x of the best so far it is
// screened (5 warmup + 20 timed calls) and checked
// against heuristic #0's output; heuristic #0 and the 3 fastest screened
// candidates are then timed in full (20 warmup + 100 timed calls, the median
// of per-call CUDA event times). The weights rotate over copies totalling
// >= 256 MiB so that every call reads them from HBM, as in a decode step over
// many layers (--hot: one copy, L2-resident when it fits).
//
// Build (no GPU needed):
//   nvcc -O2 -std=c++17 -arch=sm_90 bench/tools/cublaslt_fp8_probe.cu \
//     -lcublasLt -o .carry/cublaslt_fp8_probe
// Run (H200; libcublasLt.so.13 from the toolkit or torch's nvidia wheels):
//   NV=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])')
//   LD_LIBRARY_PATH=$NV/cu13/lib:$LD_LIBRARY_PATH \
//     .carry/cublaslt_fp8_probe --json $OUT/fp8-probe.json
// Options: --json PATH, --max-algos N (default 32), --hot, --m LIST (e.g.
// --m 1,16). Output: one line per (shape, mode, fast accumulation); tile and
// stages are the cublasLtMatmulTile_t / cublasLtMatmulStages_t values of
// cublasLt.h. Errors of one candidate are printed and the candidate skipped.
//
//===----------------------------------------------------------------------===//

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// Fatal for setup failures (allocation, handle): the probe cannot go on.
void checkCudaFatal(cudaError_t err, const char *what) {
  if (err == cudaSuccess)
    return;
  std::fprintf(stderr, "fatal: %s: %s\n", what, cudaGetErrorString(err));
  std::exit(1);
}

/// Prints a failed cuBLASLt call (the candidate is then skipped) and
/// returns false.
bool ok(cublasStatus_t status, const char *what, const std::string &who) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return true;
  std::printf("  skip %s: %s: %s\n", who.c_str(), what,
              cublasLtGetStatusName(status));
  return false;
}

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

__device__ float hashToUnit(uint64_t i, uint32_t seed) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return float(x & 0xFFFFFF) / float(0xFFFFFF) * 2.0f - 1.0f; // [-1, 1]
}

__global__ void fillFp8(__nv_fp8_e4m3 *p, uint64_t n, uint32_t seed) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x)
    p[i] = __nv_fp8_e4m3(hashToUnit(i, seed) * 4.0f);
}

__global__ void fillBf16(__nv_bfloat16 *p, uint64_t n, uint32_t seed) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(hashToUnit(i, seed));
}

__global__ void fillF32(float *p, uint64_t n, uint32_t seed, float lo,
                        float hi) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x)
    p[i] = lo + (hi - lo) * (hashToUnit(i, seed) * 0.5f + 0.5f);
}

/// out[0] = max |a - b|, out[1] = max |b| (as float bits; both >= 0, so
/// integer max orders them).
__global__ void maxDiff(const __nv_bfloat16 *a, const __nv_bfloat16 *b,
                        uint64_t n, unsigned *out) {
  float d = 0.0f, r = 0.0f;
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x) {
    float x = __bfloat162float(a[i]), y = __bfloat162float(b[i]);
    float e = fabsf(x - y);
    d = fmaxf(d, e != e ? INFINITY : e);
    r = fmaxf(r, fabsf(y));
  }
  atomicMax(out, __float_as_uint(d));
  atomicMax(out + 1, __float_as_uint(r));
}

void *deviceAlloc(size_t bytes) {
  void *p = nullptr;
  checkCudaFatal(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

//===----------------------------------------------------------------------===//
// Problems and candidates
//===----------------------------------------------------------------------===//

enum class Mode { Bf16, Tensorwise, OuterVector, AlphaVector };

const char *modeName(Mode m) {
  switch (m) {
  case Mode::Bf16:
    return "bf16";
  case Mode::Tensorwise:
    return "tensorwise";
  case Mode::OuterVector:
    return "outer_vec";
  case Mode::AlphaVector:
    return "alpha_vec";
  }
  return "?";
}

/// An algorithm's configuration, as read back from it.
struct AlgoConfig {
  int32_t id = -1, splitK = 1;
  uint32_t tile = 0, stages = 0, reduction = 0, swizzle = 0, custom = 0;
  uint16_t inner = 0, cluster = 0;
  bool operator==(const AlgoConfig &o) const {
    return id == o.id && splitK == o.splitK && tile == o.tile &&
           stages == o.stages && reduction == o.reduction &&
           swizzle == o.swizzle && custom == o.custom && inner == o.inner &&
           cluster == o.cluster;
  }
};

template <typename T>
void getConfig(const cublasLtMatmulAlgo_t &algo,
               cublasLtMatmulAlgoConfigAttributes_t attr, T &value) {
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof(value),
                                           &written) != CUBLAS_STATUS_SUCCESS)
    value = T(-1);
}

AlgoConfig configOf(const cublasLtMatmulAlgo_t &algo) {
  AlgoConfig c;
  getConfig(algo, CUBLASLT_ALGO_CONFIG_ID, c.id);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, c.tile);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, c.stages);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, c.splitK);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, c.reduction);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, c.swizzle);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, c.custom);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, c.inner);
  getConfig(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, c.cluster);
  return c;
}

std::string describe(const AlgoConfig &c) {
  char buf[160];
  std::snprintf(buf, sizeof(buf),
                "id=%d tile=%u stages=%u splitK=%d red=%u swz=%u cust=%u "
                "inner=%u cluster=%u",
                c.id, c.tile, c.stages, c.splitK, c.reduction, c.swizzle,
                c.custom, unsigned(c.inner), unsigned(c.cluster));
  return buf;
}

std::string configJson(const AlgoConfig &c) {
  char buf[240];
  std::snprintf(buf, sizeof(buf),
                "{\"id\": %d, \"tile\": %u, \"stages\": %u, \"splitK\": %d, "
                "\"reduction\": %u, \"swizzle\": %u, \"custom\": %u, "
                "\"inner\": %u, \"cluster\": %u}",
                c.id, c.tile, c.stages, c.splitK, c.reduction, c.swizzle,
                c.custom, unsigned(c.inner), unsigned(c.cluster));
  return buf;
}

struct Candidate {
  cublasLtMatmulAlgo_t algo;
  AlgoConfig config;
  int heuristicIndex; ///< its heuristic answer (split-K copies: the base's)
  size_t workspace;
  float waves;
  double screenMs = -1, fullMs = -1;
  double relError = 0;
};

/// The cuBLASLt objects of one (shape, mode, fastAccum) problem.
struct Problem {
  int64_t M, N, K;
  Mode mode;
  bool fastAccum;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t aLayout = nullptr, bLayout = nullptr,
                         dLayout = nullptr;
  ~Problem() {
    if (desc)
      cublasLtMatmulDescDestroy(desc);
    for (auto l : {aLayout, bLayout, dLayout})
      if (l)
        cublasLtMatrixLayoutDestroy(l);
  }
};

/// Device buffers of one (K, N): weight copies (rotated), activations for
/// the largest M, scales, outputs.
struct Buffers {
  std::vector<void *> weightsFp8, weightsBf16;
  void *actFp8 = nullptr, *actBf16 = nullptr;
  float *scaleScalarA = nullptr, *scaleScalarB = nullptr;
  float *scaleVecN = nullptr, *scaleVecM = nullptr;
  __nv_bfloat16 *d = nullptr, *dRef = nullptr;
  unsigned *diff = nullptr;
};

struct Context {
  cublasLtHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = size_t(32) << 20;
  int maxAlgos = 32;
};

bool buildProblem(Problem &p, const Buffers &buf) {
  std::string who = std::string("setup ") + modeName(p.mode);
  bool fp8 = p.mode != Mode::Bf16;
  cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  // cuBLASLt A = our B [N, K] row-major = [K, N] column-major, ld K.
  if (!ok(cublasLtMatrixLayoutCreate(&p.aLayout, in, p.K, p.N, p.K),
          "MatrixLayoutCreate(A)", who) ||
      !ok(cublasLtMatrixLayoutCreate(&p.bLayout, in, p.K, p.M, p.K),
          "MatrixLayoutCreate(B)", who) ||
      !ok(cublasLtMatrixLayoutCreate(&p.dLayout, CUDA_R_16BF, p.N, p.M, p.N),
          "MatrixLayoutCreate(D)", who) ||
      !ok(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
          "MatmulDescCreate", who))
    return false;
  int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  auto set = [&](cublasLtMatmulDescAttributes_t attr, const void *v,
                 size_t size, const char *what) {
    return ok(cublasLtMatmulDescSetAttribute(p.desc, attr, v, size), what,
              who);
  };
  if (!set(CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta), "TRANSA") ||
      !set(CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb), "TRANSB"))
    return false;
  if (!fp8)
    return true;
  // AlphaVector: tensorwise scales and the N weight scales as a device
  // alpha vector (POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO), an
  // alternative to OUTER_VEC when the activation scale is one float.
  if (p.mode == Mode::AlphaVector) {
    int32_t pointerMode = CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO;
    if (!set(CUBLASLT_MATMUL_DESC_POINTER_MODE, &pointerMode,
             sizeof(pointerMode), "POINTER_MODE"))
      return false;
  }
  int32_t mode = p.mode == Mode::OuterVector
                     ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F
                     : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  // cuBLASLt's A scale belongs to our B (N entries), its B scale to our A.
  const void *aScale = p.mode == Mode::OuterVector ? buf.scaleVecN
                                                   : buf.scaleScalarB;
  const void *bScale = p.mode == Mode::OuterVector ? buf.scaleVecM
                                                   : buf.scaleScalarA;
  int8_t fast = p.fastAccum ? 1 : 0;
  return set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof(mode),
             "A_SCALE_MODE") &&
         set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof(mode),
             "B_SCALE_MODE") &&
         set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &aScale, sizeof(aScale),
             "A_SCALE_POINTER") &&
         set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &bScale, sizeof(bScale),
             "B_SCALE_POINTER") &&
         set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast),
             "FAST_ACCUM");
}

/// Heuristic answers, then split-K copies, deduplicated by configuration.
std::vector<Candidate> candidatesFor(const Context &ctx, const Problem &p) {
  std::vector<Candidate> out;
  cublasLtMatmulPreference_t pref = nullptr;
  std::string who = "heuristic";
  if (!ok(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate", who))
    return out;
  uint64_t ws = ctx.workspaceBytes;
  uint32_t mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, align = 256;
  bool prefOk =
      ok(cublasLtMatmulPreferenceSetAttribute(
             pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
         "PREF_MAX_WORKSPACE_BYTES", who) &&
      ok(cublasLtMatmulPreferenceSetAttribute(
             pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask,
             sizeof(mask)),
         "PREF_REDUCTION_SCHEME_MASK", who);
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    prefOk = prefOk && ok(cublasLtMatmulPreferenceSetAttribute(
                              pref, attr, &align, sizeof(align)),
                          "PREF_MIN_ALIGNMENT", who);
  std::vector<cublasLtMatmulHeuristicResult_t> results(ctx.maxAlgos);
  int returned = 0;
  if (prefOk)
    ok(cublasLtMatmulAlgoGetHeuristic(ctx.handle, p.desc, p.aLayout,
                                      p.bLayout, p.dLayout, p.dLayout, pref,
                                      ctx.maxAlgos, results.data(), &returned),
       "AlgoGetHeuristic", who);
  cublasLtMatmulPreferenceDestroy(pref);

  auto add = [&out](const cublasLtMatmulAlgo_t &algo, int index, size_t ws,
                    float waves) {
    AlgoConfig c = configOf(algo);
    for (const Candidate &o : out)
      if (o.config == c)
        return;
    out.push_back(Candidate{algo, c, index, ws, waves});
  };
  for (int i = 0; i < returned; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS)
      add(results[i].algo, i, results[i].workspaceSize, results[i].wavesCount);
  size_t heuristicCount = out.size();

  for (size_t i = 0; i < heuristicCount; ++i) {
    Candidate base = out[i];
    int32_t splitSupport = 0;
    uint32_t schemes = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(
            &base.algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &splitSupport,
            sizeof(splitSupport), &written) != CUBLAS_STATUS_SUCCESS ||
        !splitSupport) {
      if (i == 0)
        std::printf("  %s M=%lld: heuristic #0 (%s) has no split-K\n",
                    modeName(p.mode), (long long)p.M,
                    describe(base.config).c_str());
      continue;
    }
    if (cublasLtMatmulAlgoCapGetAttribute(
            &base.algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes,
            sizeof(schemes), &written) != CUBLAS_STATUS_SUCCESS)
      schemes = 0;
    // COMPUTE_TYPE keeps fp32 partial sums (what the runtime allows); the
    // others round partials to bf16 and are probed only as a fallback.
    uint32_t scheme = (schemes & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE)
                          ? CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE
                      : (schemes & CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE)
                          ? CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE
                      : (schemes & CUBLASLT_REDUCTION_SCHEME_INPLACE)
                          ? CUBLASLT_REDUCTION_SCHEME_INPLACE
                          : CUBLASLT_REDUCTION_SCHEME_NONE;
    for (int32_t split : {2, 4, 8, 16}) {
      if (p.K / split < 128)
        continue;
      cublasLtMatmulAlgo_t algo = base.algo;
      std::string label = describe(base.config) + " -> splitK " +
                          std::to_string(split);
      if (!ok(cublasLtMatmulAlgoConfigSetAttribute(
                  &algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split,
                  sizeof(split)),
              "ConfigSetAttribute(SPLITK_NUM)", label) ||
          !ok(cublasLtMatmulAlgoConfigSetAttribute(
                  &algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                  sizeof(scheme)),
              "ConfigSetAttribute(REDUCTION_SCHEME)", label))
        continue;
      cublasLtMatmulHeuristicResult_t check{};
      cublasStatus_t status =
          cublasLtMatmulAlgoCheck(ctx.handle, p.desc, p.aLayout, p.bLayout,
                                  p.dLayout, p.dLayout, &algo, &check);
      // Refusals are common (and expected): counted, not printed.
      if (status != CUBLAS_STATUS_SUCCESS ||
          check.state != CUBLAS_STATUS_SUCCESS ||
          check.workspaceSize > ctx.workspaceBytes) {
        if (i == 0)
          std::printf("  %s M=%lld: splitK %d refused: %s, workspace %zu\n",
                      modeName(p.mode), (long long)p.M, split,
                      cublasLtGetStatusName(status != CUBLAS_STATUS_SUCCESS
                                                ? status
                                                : check.state),
                      check.workspaceSize);
        continue;
      }
      add(algo, base.heuristicIndex, check.workspaceSize, check.wavesCount);
    }
  }

  // Tiles the heuristic did not offer: heuristic #0's algorithm with every
  // tile it lists (CUBLASLT_ALGO_CAP_TILE_IDS), keeping its other settings,
  // else with automatic cluster shape and custom option 0, if
  // cublasLtMatmulAlgoCheck accepts it. This is what a runtime can force
  // when the heuristic offers one tile only (outer-vector scaling).
  if (heuristicCount > 0) {
    const Candidate base = out[0];
    size_t bytes = 0;
    std::vector<uint32_t> tiles;
    if (cublasLtMatmulAlgoCapGetAttribute(&base.algo,
                                          CUBLASLT_ALGO_CAP_TILE_IDS, nullptr,
                                          0, &bytes) == CUBLAS_STATUS_SUCCESS &&
        bytes >= sizeof(uint32_t)) {
      tiles.resize(bytes / sizeof(uint32_t));
      if (cublasLtMatmulAlgoCapGetAttribute(
              &base.algo, CUBLASLT_ALGO_CAP_TILE_IDS, tiles.data(),
              tiles.size() * sizeof(uint32_t), &bytes) != CUBLAS_STATUS_SUCCESS)
        tiles.clear();
    }
    int accepted = 0;
    for (uint32_t tile : tiles) {
      if (tile == base.config.tile || tile == 0)
        continue;
      for (int variant = 0; variant < 2; ++variant) {
        cublasLtMatmulAlgo_t algo = base.algo;
        uint16_t cluster = 0;
        uint32_t custom = 0;
        if (cublasLtMatmulAlgoConfigSetAttribute(
                &algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile)) !=
            CUBLAS_STATUS_SUCCESS)
          break;
        if (variant == 1 &&
            (cublasLtMatmulAlgoConfigSetAttribute(
                 &algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                 sizeof(cluster)) != CUBLAS_STATUS_SUCCESS ||
             cublasLtMatmulAlgoConfigSetAttribute(
                 &algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom,
                 sizeof(custom)) != CUBLAS_STATUS_SUCCESS))
          break;
        cublasLtMatmulHeuristicResult_t check{};
        if (cublasLtMatmulAlgoCheck(ctx.handle, p.desc, p.aLayout, p.bLayout,
                                    p.dLayout, p.dLayout, &algo, &check) ==
                CUBLAS_STATUS_SUCCESS &&
            check.state == CUBLAS_STATUS_SUCCESS &&
            check.workspaceSize <= ctx.workspaceBytes) {
          add(algo, -1, check.workspaceSize, check.wavesCount);
          ++accepted;
          break;
        }
      }
    }
    std::printf("  %s M=%lld: %zu tiles listed, %d more accepted\n",
                modeName(p.mode), (long long)p.M, tiles.size(), accepted);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

struct Timer {
  std::vector<cudaEvent_t> events;
  explicit Timer(int n) : events(2 * n) {
    for (auto &e : events)
      checkCudaFatal(cudaEventCreate(&e), "cudaEventCreate");
  }
  ~Timer() {
    for (auto e : events)
      cudaEventDestroy(e);
  }
};

/// Runs `c` once on weight copy `copy`.
cublasStatus_t launch(const Context &ctx, const Problem &p, const Buffers &buf,
                      const Candidate &c, size_t copy, __nv_bfloat16 *d) {
  bool fp8 = p.mode != Mode::Bf16;
  const std::vector<void *> &weights = fp8 ? buf.weightsFp8 : buf.weightsBf16;
  const void *a = weights[copy % weights.size()];
  const void *b = fp8 ? buf.actFp8 : buf.actBf16;
  float alpha = 1.0f, beta = 0.0f;
  const void *alphaPtr = &alpha;
  if (p.mode == Mode::AlphaVector)
    alphaPtr = buf.scaleVecN;
  return cublasLtMatmul(ctx.handle, p.desc, alphaPtr, a, p.aLayout, b,
                        p.bLayout, &beta, d, p.dLayout, d, p.dLayout, &c.algo,
                        ctx.workspace, ctx.workspaceBytes, ctx.stream);
}

/// The median time of `iters` calls after `warmup` calls, in ms, or -1.
double timeCandidate(const Context &ctx, const Problem &p, const Buffers &buf,
                     const Candidate &c, int warmup, int iters, Timer &timer,
                     const std::string &who) {
  size_t copy = 0;
  for (int i = 0; i < warmup; ++i)
    if (!ok(launch(ctx, p, buf, c, copy++, buf.d), "cublasLtMatmul", who))
      return -1;
  for (int i = 0; i < iters; ++i) {
    cudaEventRecord(timer.events[2 * i], ctx.stream);
    if (!ok(launch(ctx, p, buf, c, copy++, buf.d), "cublasLtMatmul", who))
      return -1;
    cudaEventRecord(timer.events[2 * i + 1], ctx.stream);
  }
  cudaError_t err = cudaStreamSynchronize(ctx.stream);
  if (err != cudaSuccess) {
    std::printf("  skip %s: %s\n", who.c_str(), cudaGetErrorString(err));
    (void)cudaGetLastError();
    return -1;
  }
  std::vector<float> ms(iters);
  for (int i = 0; i < iters; ++i)
    cudaEventElapsedTime(&ms[i], timer.events[2 * i], timer.events[2 * i + 1]);
  std::nth_element(ms.begin(), ms.begin() + iters / 2, ms.end());
  return ms[iters / 2];
}

/// max|D - Dref| / max|Dref| of one call of `c`, or +inf on failure.
double relErrorOf(const Context &ctx, const Problem &p, const Buffers &buf,
                  const Candidate &c) {
  if (launch(ctx, p, buf, c, 0, buf.d) != CUBLAS_STATUS_SUCCESS)
    return INFINITY;
  cudaMemsetAsync(buf.diff, 0, 2 * sizeof(unsigned), ctx.stream);
  maxDiff<<<264, 256, 0, ctx.stream>>>(buf.d, buf.dRef, uint64_t(p.M) * p.N,
                                       buf.diff);
  unsigned host[2];
  cudaMemcpyAsync(host, buf.diff, sizeof(host), cudaMemcpyDeviceToHost,
                  ctx.stream);
  if (cudaStreamSynchronize(ctx.stream) != cudaSuccess) {
    (void)cudaGetLastError();
    return INFINITY;
  }
  float d, r;
  std::memcpy(&d, &host[0], 4);
  std::memcpy(&r, &host[1], 4);
  return r > 0 ? d / r : INFINITY;
}

struct Outcome {
  int64_t M, N, K;
  const char *shape;
  Mode mode;
  bool fastAccum;
  int candidates = 0, failed = 0, pruned = 0;
  double heur0Ms = -1, bestMs = -1, bf16Ms = -1, bf16BestMs = -1;
  AlgoConfig heur0, best;
  int bestHeuristicIndex = -1;
  float bestWaves = 0;
  size_t bestWorkspace = 0;
  std::vector<Candidate> top; ///< fastest screened, for the JSON
};

/// Probes one problem; fills `o` (times -1 when nothing ran).
void probe(const Context &ctx, Problem &p, const Buffers &buf, Outcome &o) {
  std::string tag = std::string(modeName(p.mode)) +
                    (p.fastAccum ? "/fast" : "/nofast") + " M=" +
                    std::to_string(p.M);
  if (!buildProblem(p, buf))
    return;
  std::vector<Candidate> cands = candidatesFor(ctx, p);
  o.candidates = int(cands.size());
  if (cands.empty()) {
    std::printf("  %s: no algorithm\n", tag.c_str());
    return;
  }
  Timer timer(100);
  // The reference output: heuristic #0.
  if (!ok(launch(ctx, p, buf, cands[0], 0, buf.dRef), "cublasLtMatmul",
          tag + " heuristic #0") ||
      cudaStreamSynchronize(ctx.stream) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  double bestScreen = -1;
  for (Candidate &c : cands) {
    std::string who = tag + " " + describe(c.config);
    c.relError = relErrorOf(ctx, p, buf, c);
    // bf16 partial sums (OUTPUT_TYPE/INPLACE split-K) or a different tile
    // order stay well below this; a wrong kernel does not.
    if (!(c.relError < 0.02)) {
      std::printf("  skip %s: rel. error %.3g vs heuristic #0\n", who.c_str(),
                  c.relError);
      ++o.failed;
      continue;
    }
    // Forced tiles can be far slower (an 8x8 tile on a 28672-wide GEMM):
    // one call first, the full screen only within 2x of the best so far.
    double quick = timeCandidate(ctx, p, buf, c, 0, 1, timer, who);
    if (quick < 0) {
      ++o.failed;
      continue;
    }
    if (bestScreen > 0 && quick > 2 * bestScreen) {
      ++o.pruned;
      continue;
    }
    c.screenMs = timeCandidate(ctx, p, buf, c, 5, 20, timer, who);
    if (c.screenMs < 0)
      ++o.failed;
    else if (bestScreen < 0 || c.screenMs < bestScreen)
      bestScreen = c.screenMs;
  }
  o.heur0 = cands[0].config;
  o.heur0Ms = timeCandidate(ctx, p, buf, cands[0], 20, 100, timer, tag);
  cands[0].fullMs = o.heur0Ms;

  std::vector<Candidate *> order;
  for (Candidate &c : cands)
    if (c.screenMs > 0)
      order.push_back(&c);
  std::sort(order.begin(), order.end(),
            [](const Candidate *x, const Candidate *y) {
              return x->screenMs < y->screenMs;
            });
  const Candidate *best = o.heur0Ms > 0 ? &cands[0] : nullptr;
  o.bestMs = o.heur0Ms;
  for (size_t i = 0; i < order.size() && i < 3; ++i) {
    Candidate &c = *order[i];
    if (&c != &cands[0])
      c.fullMs = timeCandidate(ctx, p, buf, c, 20, 100, timer,
                               tag + " " + describe(c.config));
    if (c.fullMs > 0 && (o.bestMs < 0 || c.fullMs < o.bestMs)) {
      o.bestMs = c.fullMs;
      best = &c;
    }
  }
  if (best) {
    o.best = best->config;
    o.bestHeuristicIndex = best->heuristicIndex;
    o.bestWaves = best->waves;
    o.bestWorkspace = best->workspace;
  }
  for (size_t i = 0; i < order.size() && i < 10; ++i)
    o.top.push_back(*order[i]);
}

std::vector<int64_t> parseList(const char *s) {
  std::vector<int64_t> out;
  for (const char *p = s; *p;) {
    char *end = nullptr;
    long long v = std::strtoll(p, &end, 10);
    if (end == p)
      break;
    out.push_back(v);
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  const char *jsonPath = nullptr;
  bool hot = false;
  std::vector<int64_t> ms = {1, 16, 64, 128};
  Context ctx;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
      jsonPath = argv[++i];
    else if (!std::strcmp(argv[i], "--max-algos") && i + 1 < argc)
      ctx.maxAlgos = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--m") && i + 1 < argc)
      ms = parseList(argv[++i]);
    else if (!std::strcmp(argv[i], "--hot"))
      hot = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--json PATH] [--max-algos N] [--m 1,16,...] "
                   "[--hot]\n",
                   argv[0]);
      return 2;
    }
  }
  if (ms.empty() || *std::max_element(ms.begin(), ms.end()) <= 0) {
    std::fprintf(stderr, "--m needs positive sizes\n");
    return 2;
  }

  cudaDeviceProp prop{};
  checkCudaFatal(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("device %s, sm_%d%d, %d SMs, L2 %d MiB; cuBLASLt %zu; %s "
              "weights\n",
              prop.name, prop.major, prop.minor, prop.multiProcessorCount,
              prop.l2CacheSize >> 20, cublasLtGetVersion(),
              hot ? "hot" : "rotating (cold)");
  if (cublasLtCreate(&ctx.handle) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "fatal: cublasLtCreate failed\n");
    return 1;
  }
  checkCudaFatal(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking),
                 "cudaStreamCreate");
  ctx.workspace = deviceAlloc(ctx.workspaceBytes);

  struct Shape {
    const char *name;
    int64_t K, N;
  };
  const Shape shapes[] = {
      {"qkv", 4096, 6144}, {"gate_up", 4096, 28672}, {"down", 14336, 4096}};
  int64_t maxM = *std::max_element(ms.begin(), ms.end());
  std::vector<Outcome> outcomes;

  std::printf("%-8s %4s %5s %6s %-10s %-6s %9s %9s %9s %6s  %s\n", "shape",
              "M", "K", "N", "mode", "fast", "heur0_ms", "best_ms", "bf16_ms",
              "cands", "best algo");
  for (const Shape &s : shapes) {
    Buffers buf;
    size_t fp8Bytes = size_t(s.N) * s.K, bf16Bytes = 2 * fp8Bytes;
    const size_t rotateBytes = size_t(256) << 20;
    size_t fp8Copies = hot ? 1 : (rotateBytes + fp8Bytes - 1) / fp8Bytes;
    size_t bf16Copies = hot ? 1 : (rotateBytes + bf16Bytes - 1) / bf16Bytes;
    for (size_t i = 0; i < fp8Copies; ++i) {
      buf.weightsFp8.push_back(deviceAlloc(fp8Bytes));
      fillFp8<<<1024, 256>>>(static_cast<__nv_fp8_e4m3 *>(buf.weightsFp8[i]),
                             fp8Bytes, 1);
    }
    for (size_t i = 0; i < bf16Copies; ++i) {
      buf.weightsBf16.push_back(deviceAlloc(bf16Bytes));
      fillBf16<<<1024, 256>>>(
          static_cast<__nv_bfloat16 *>(buf.weightsBf16[i]), fp8Bytes, 2);
    }
    size_t act = size_t(maxM) * s.K;
    buf.actFp8 = deviceAlloc(act);
    fillFp8<<<256, 256>>>(static_cast<__nv_fp8_e4m3 *>(buf.actFp8), act, 3);
    buf.actBf16 = deviceAlloc(2 * act);
    fillBf16<<<256, 256>>>(static_cast<__nv_bfloat16 *>(buf.actBf16), act, 4);
    buf.scaleScalarA = static_cast<float *>(deviceAlloc(sizeof(float)));
    buf.scaleScalarB = static_cast<float *>(deviceAlloc(sizeof(float)));
    fillF32<<<1, 32>>>(buf.scaleScalarA, 1, 5, 0.01f, 0.02f);
    fillF32<<<1, 32>>>(buf.scaleScalarB, 1, 6, 0.01f, 0.02f);
    buf.scaleVecN = static_cast<float *>(deviceAlloc(s.N * sizeof(float)));
    buf.scaleVecM = static_cast<float *>(deviceAlloc(maxM * sizeof(float)));
    fillF32<<<64, 256>>>(buf.scaleVecN, s.N, 7, 0.005f, 0.02f);
    fillF32<<<64, 256>>>(buf.scaleVecM, maxM, 8, 0.005f, 0.02f);
    buf.d = static_cast<__nv_bfloat16 *>(deviceAlloc(2 * size_t(maxM) * s.N));
    buf.dRef =
        static_cast<__nv_bfloat16 *>(deviceAlloc(2 * size_t(maxM) * s.N));
    buf.diff = static_cast<unsigned *>(deviceAlloc(2 * sizeof(unsigned)));
    checkCudaFatal(cudaDeviceSynchronize(), "fill kernels");

    for (int64_t M : ms) {
      Outcome bf16{M, s.N, s.K, s.name, Mode::Bf16, false};
      {
        Problem p{M, s.N, s.K, Mode::Bf16, false};
        probe(ctx, p, buf, bf16);
      }
      for (Mode mode :
           {Mode::Tensorwise, Mode::OuterVector, Mode::AlphaVector})
        for (bool fast : {true, false}) {
          Outcome o{M, s.N, s.K, s.name, mode, fast};
          Problem p{M, s.N, s.K, mode, fast};
          probe(ctx, p, buf, o);
          o.bf16Ms = bf16.heur0Ms;
          o.bf16BestMs = bf16.bestMs;
          std::printf("%-8s %4lld %5lld %6lld %-10s %-6s %9.4f %9.4f %9.4f "
                      "%6d  %s (heur #%d)\n",
                      s.name, (long long)M, (long long)s.K, (long long)s.N,
                      modeName(mode), fast ? "on" : "off", o.heur0Ms, o.bestMs,
                      o.bf16Ms, o.candidates, describe(o.best).c_str(),
                      o.bestHeuristicIndex);
          std::fflush(stdout);
          outcomes.push_back(std::move(o));
        }
      bf16.bf16Ms = bf16.heur0Ms;
      bf16.bf16BestMs = bf16.bestMs;
      std::printf("%-8s %4lld %5lld %6lld %-10s %-6s %9.4f %9.4f %9.4f %6d  "
                  "%s (heur #%d)\n",
                  s.name, (long long)M, (long long)s.K, (long long)s.N, "bf16",
                  "-", bf16.heur0Ms, bf16.bestMs, bf16.heur0Ms,
                  bf16.candidates, describe(bf16.best).c_str(),
                  bf16.bestHeuristicIndex);
      outcomes.push_back(std::move(bf16));
    }
    for (void *w : buf.weightsFp8)
      cudaFree(w);
    for (void *w : buf.weightsBf16)
      cudaFree(w);
    for (void *q : {buf.actFp8, buf.actBf16, (void *)buf.scaleScalarA,
                    (void *)buf.scaleScalarB, (void *)buf.scaleVecN,
                    (void *)buf.scaleVecM, (void *)buf.d, (void *)buf.dRef,
                    (void *)buf.diff})
      cudaFree(q);
  }

  if (jsonPath) {
    FILE *f = std::fopen(jsonPath, "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", jsonPath);
      return 1;
    }
    std::fprintf(f,
                 "{\"device\": \"%s\", \"sms\": %d, \"cublaslt\": %zu, "
                 "\"weights\": \"%s\", \"workspace_bytes\": %zu, "
                 "\"results\": [\n",
                 prop.name, prop.multiProcessorCount, cublasLtGetVersion(),
                 hot ? "hot" : "cold", ctx.workspaceBytes);
    for (size_t i = 0; i < outcomes.size(); ++i) {
      const Outcome &o = outcomes[i];
      std::fprintf(
          f,
          "  {\"shape\": \"%s\", \"M\": %lld, \"K\": %lld, \"N\": %lld, "
          "\"mode\": \"%s\", \"fast_accum\": %s, \"candidates\": %d, "
          "\"failed\": %d, \"pruned\": %d, \"heur0_ms\": %.5f, \"best_ms\": %.5f, "
          "\"bf16_ms\": %.5f, \"bf16_best_ms\": %.5f, \"heur0\": %s, "
          "\"best\": %s, \"best_heuristic_index\": %d, \"best_waves\": %.3f, "
          "\"best_workspace\": %zu, \"top\": [",
          o.shape, (long long)o.M, (long long)o.K, (long long)o.N,
          modeName(o.mode), o.fastAccum ? "true" : "false", o.candidates,
          o.failed, o.pruned, o.heur0Ms, o.bestMs, o.bf16Ms, o.bf16BestMs,
          configJson(o.heur0).c_str(), configJson(o.best).c_str(),
          o.bestHeuristicIndex, o.bestWaves, o.bestWorkspace);
      for (size_t j = 0; j < o.top.size(); ++j)
        std::fprintf(f,
                     "%s{\"screen_ms\": %.5f, \"full_ms\": %.5f, "
                     "\"heuristic_index\": %d, \"waves\": %.3f, "
                     "\"rel_error\": %.3g, \"config\": %s}",
                     j ? ", " : "", o.top[j].screenMs, o.top[j].fullMs,
                     o.top[j].heuristicIndex, o.top[j].waves,
                     o.top[j].relError, configJson(o.top[j].config).c_str());
      std::fprintf(f, "]}%s\n", i + 1 < outcomes.size() ? "," : "");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
    std::printf("wrote %s\n", jsonPath);
  }
  cudaFree(ctx.workspace);
  cublasLtDestroy(ctx.handle);
  return 0;
}

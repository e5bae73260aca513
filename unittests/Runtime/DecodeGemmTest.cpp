//===- DecodeGemmTest.cpp - The small-M FP8 GEMM vs float64 -----*- C++ -*-===//
//
// The CUDA scaled GEMM at decode shapes (M <= SPLITLINEAR_FP8_DECODE_MAX_M,
// default 16), which runs the hand-written kernel of cuda/kernels/decode_gemm:
// every output dtype, both scalings, with and without bias, M in {1, 3, 16}
// (17 and 32 too when the bound is raised to 32), N covering partial tiles of
// both tile widths and the bulk-copy form, parts of different sizes and
// scales 10^4 apart, K in {16, 48, 4096, and 14336 on both sides of the bulk
// form's shared-memory bound}, against a float64 reference of decode(A) decode(B) scales
// (+ bias) on fresh random FP8 data; then the same GEMM captured in a CUDA
// graph and replayed. Skips without a CUDA context or below sm89.
//
//===----------------------------------------------------------------------===//

#include "Fp8TestUtils.h"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

using namespace slinrt_test;

namespace {

/// A device copy of `bytes` bytes at `host`, or `bytes` uninitialized ones
/// where `host` is null (freed on destruction).
class DeviceCopy {
public:
  DeviceCopy(const void *host, size_t bytes) : bytes(bytes) {
    if (cudaMalloc(&ptr, std::max<size_t>(bytes, 1)) != cudaSuccess)
      ptr = nullptr;
    else if (bytes && host)
      cudaMemcpy(ptr, host, bytes, cudaMemcpyHostToDevice);
  }
  ~DeviceCopy() { cudaFree(ptr); }
  DeviceCopy(const DeviceCopy &) = delete;
  DeviceCopy &operator=(const DeviceCopy &) = delete;
  void download(void *host) const {
    cudaMemcpy(host, ptr, bytes, cudaMemcpyDeviceToHost);
  }
  void *ptr = nullptr;
  size_t bytes;
};

/// The M bound the runtime reads (same rules as fp8DecodeMaxM).
int64_t decodeMaxM() {
  const char *env = std::getenv("SPLITLINEAR_FP8_DECODE_MAX_M");
  if (!env || !*env)
    return 16;
  char *end = nullptr;
  long long v = std::strtoll(env, &end, 10);
  return *end != '\0' || v <= 0 ? 0 : std::min<long long>(v, 32);
}

/// The device operands of a ScaledGemmCase, with descriptors retargeted.
struct DeviceCase {
  explicit DeviceCase(ScaledGemmCase &c)
      : a(c.a.data(), c.a.size()), b(c.b.data(), c.b.size()),
        sA(c.scaleA.data(), 4 * c.scaleA.size()),
        sB(c.scaleB.data(), 4 * c.scaleB.size()),
        d(c.d.base(), size_t(c.d.capacity * elementSize(c.outType))),
        bias(c.bias.matrix.base(),
             size_t(c.bias.matrix.capacity * elementSize(c.outType))) {
    aRef = c.aRef, bRef = c.bRef, sARef = c.sARef, sBRef = c.sBRef;
    dRef = *c.d.ref(), biasRef = *c.bias.ref();
    aRef.allocated = aRef.aligned = a.ptr;
    bRef.allocated = bRef.aligned = b.ptr;
    sARef.allocated = sARef.aligned = sA.ptr;
    sBRef.allocated = sBRef.aligned = sB.ptr;
    dRef.allocated = dRef.aligned = d.ptr;
    biasRef.allocated = biasRef.aligned = bias.ptr;
  }
  void run(slinrt_context *gpu, const ScaledGemmCase &c, int fastAccum) {
    scaledGemmFn(true, c.outType)(gpu, &aRef, &bRef, &dRef, &sARef, &sBRef,
                                  c.withBias ? &biasRef : nullptr, c.aType,
                                  c.bType, c.scaling, fastAccum);
  }
  DeviceCopy a, b, sA, sB, d, bias;
  slinrt_memref2d aRef, bRef, dRef;
  slinrt_memref1d sARef, sBRef, biasRef;
};

/// Per-part weight scales: parts of `sizes` rows (summing to N), part i's
/// scale spread over its rows, the second part 10^4 smaller than the first.
void setPartScales(ScaledGemmCase &c, const std::vector<int64_t> &sizes) {
  const float partScale[] = {2e-2f, 2e-6f, 3e-1f, 7e-3f};
  int64_t row = 0;
  for (size_t i = 0; i < sizes.size(); ++i)
    for (int64_t r = 0; r < sizes[i]; ++r)
      c.scaleB[row++] = partScale[i % 4];
  ASSERT_EQ(row, c.N);
}

/// Max over the case of |d - exact| / (ulp(exact) + bound), where bound is
/// fp32 accumulation's K 2^-23 Σ|terms| plus 2^-12 Σ|terms| for the FP8
/// MMA's partial sums (Hopper keeps about 14 bits inside one MMA; see
/// expectWithinOneUlp in CUDARuntimeTest.cpp). Also the largest
/// (|d - exact| - ulp) / Σ|terms| seen, to report the precision reached.
/// The exact value is ScaledGemmCase::exact's, with the FP8 bytes decoded
/// through a table (the reference dominates the test's time).
std::pair<double, double> errorRatio(const ScaledGemmCase &c) {
  int bits = c.outType == SLINRT_F32 ? 24 : c.outType == SLINRT_F16 ? 11 : 8;
  int minExponent = c.outType == SLINRT_F16 ? -24 : -149;
  double accumulation =
      double(c.K) * std::ldexp(1.0, -23) + std::ldexp(1.0, -12);
  double tableA[256], tableB[256];
  for (int v = 0; v < 256; ++v) {
    tableA[v] = decodeFp8Ref(c.aType, uint8_t(v));
    tableB[v] = decodeFp8Ref(c.bType, uint8_t(v));
  }
  std::vector<double> a(size_t(c.M * c.K)), b(size_t(c.N * c.K));
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t k = 0; k < c.K; ++k)
      a[m * c.K + k] = tableA[c.a[m * c.lda + k]];
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t k = 0; k < c.K; ++k)
      b[n * c.K + k] = tableB[c.b[n * c.ldb + k]];
  double worst = 0, relative = 0;
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < c.N; ++n) {
      double sum = 0, magnitude = 0;
      const double *ar = a.data() + m * c.K, *br = b.data() + n * c.K;
      for (int64_t k = 0; k < c.K; ++k) {
        double t = ar[k] * br[k];
        sum += t;
        magnitude += std::fabs(t);
      }
      double s = c.sA(m) * c.sB(n);
      double bias = c.withBias ? c.bias.get(n) : 0.0;
      double exact = s * sum + bias;
      magnitude = s * magnitude + std::fabs(bias);
      int e = 0;
      std::frexp(exact, &e);
      double ulp = std::ldexp(1.0, std::max(e - bits, minExponent));
      double err = std::fabs(c.d.get(m, n) - exact);
      worst = std::max(worst, err / (ulp + accumulation * magnitude));
      if (magnitude > 0)
        relative = std::max(relative, std::max(0.0, err - ulp) / magnitude);
    }
  return {worst, relative};
}

class DecodeGemmTest : public ::testing::Test {
protected:
  void SetUp() override {
    gpu = slinrt_context_create_cuda(0, nullptr);
    if (!gpu)
      GTEST_SKIP() << "no CUDA context: " << slinrt_last_create_error();
    int major = 0, minor = 0;
    ASSERT_CUDA(
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    ASSERT_CUDA(
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
    ASSERT_CUDA(
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    if (major * 10 + minor < 89)
      GTEST_SKIP() << "FP8 GEMM needs sm89+";
    ASSERT_CUDA(cudaStreamCreate(&stream));
    slinrt_context_set_stream(gpu, stream);
  }
  void TearDown() override {
    slinrt_context_destroy(gpu);
    if (stream)
      cudaStreamDestroy(stream);
  }
  std::string error() const { return slinrt_context_error(gpu); }

  slinrt_context *gpu = nullptr;
  cudaStream_t stream = nullptr;
  int sms = 0;
};

TEST_F(DecodeGemmTest, MatchesFloat64) {
  std::mt19937_64 rng(2026);
  const int64_t maxM = decodeMaxM();
  // N: one tile of 16; parts 64 + 16 + 16; 208 (a half 32-row tile);
  // 32 sms - 16, one wave of 32-row tiles, the last one half full, when
  // SPLITLINEAR_FP8_DECODE_TILE_N=32 forces those (scripts/gpu runs both);
  // 48 sms - 16, 3 sms - 1 tiles of 16 rows, which the one-wave
  // configuration takes (the others take the deep one); and 48 sms + 16
  // (N must be a multiple of 16), 3 sms + 1 tiles, which the bulk form takes
  // on sm90 (more than three tiles per SM).
  const int64_t wide = 32 * int64_t(sms) - 16;
  const int64_t oneWave = 48 * int64_t(sms) - 16;
  const int64_t bulk = 48 * int64_t(sms) + 16;
  struct Shape {
    int64_t N;
    std::vector<int64_t> parts;
  };
  const std::vector<Shape> shapes = {
      {16, {16}},           {96, {64, 16, 16}},
      {208, {128, 32, 48}}, {wide, {wide}},
      {oneWave, {oneWave - 32, 32}}, {bulk, {bulk - 48, 32, 16}}};
  std::vector<int64_t> ms = {1, 3, 16};
  if (maxM >= 32)
    ms.insert(ms.end(), {17, 32});
  int runs = 0, decoded = 0;
  double worstRelative = 0;
  for (int64_t M : ms)
    for (const Shape &shape : shapes)
      for (int64_t K : {16, 48, 4096})
        for (slinrt_dtype outType : {SLINRT_F32, SLINRT_F16, SLINRT_BF16})
          for (slinrt_scaling scaling :
               {SLINRT_SCALING_TENSORWISE, SLINRT_SCALING_OUTER_VECTOR})
            for (bool withBias : {false, true}) {
              // The widest N at K = 4096 once per M (the float64 reference
              // dominates the test's time).
              if ((shape.N == wide || shape.N == oneWave ||
                   shape.N == bulk) &&
                  K == 4096 &&
                  !(outType == SLINRT_BF16 && withBias &&
                    scaling == SLINRT_SCALING_OUTER_VECTOR))
                continue;
              SCOPED_TRACE(testing::Message()
                           << "M " << M << " N " << shape.N << " K " << K << " "
                           << dtypeName(outType) << " scaling " << scaling
                           << " bias " << withBias);
              ScaledGemmCase c(rng, M, shape.N, K, SLINRT_F8E4M3FN,
                               SLINRT_F8E4M3FN, outType, scaling, withBias);
              if (scaling == SLINRT_SCALING_OUTER_VECTOR)
                setPartScales(c, shape.parts);
              DeviceCase dev(c);
              dev.run(gpu, c, /*fastAccum=*/runs % 2);
              ASSERT_EQ(slinrt_context_status(gpu), SLINRT_OK) << error();
              ASSERT_CUDA(cudaStreamSynchronize(stream));
              dev.d.download(c.d.base());
              auto [worst, relative] = errorRatio(c);
              ASSERT_LE(worst, 1.0);
              worstRelative = std::max(worstRelative, relative);
              // Rows of D's padding and past the view stay untouched.
              EXPECT_EQ(c.d.changedOutsideView(3.0), 0);
              ++runs;
              decoded += M <= maxM;
            }
  slinrt_counters counters = slinrt_context_counters(gpu);
  EXPECT_EQ(counters.scaled_gemms, runs);
  EXPECT_EQ(counters.decode_gemms, decoded);
  std::printf("[ DECODE   ] %d GEMMs (%d by the decode kernel), largest "
              "|error| - ulp: %.3g of sum |terms|\n",
              runs, decoded, worstRelative);
}

TEST_F(DecodeGemmTest, LongKOnBothSidesOfTheSharedMemoryBound) {
  // The bulk form keeps M rows of x in shared memory: at K = 14336
  // (Llama-3-8B's down projection) one row fits and 16 do not, so on sm90
  // M = 1 and 3 take the bulk form (N: 3 sms + 1 tiles of 16 rows) and
  // M = 16 the register form. Rows of W contiguous (ldb == K) and padded.
  std::mt19937_64 rng(2029);
  const int64_t K = 14336, N = 48 * int64_t(sms) + 16;
  int runs = 0;
  for (int64_t M : {1, 3, 16})
    for (bool contiguous : {false, true}) {
      SCOPED_TRACE(testing::Message()
                   << "M " << M << " contiguous " << contiguous);
      ScaledGemmCase c(rng, M, N, K, SLINRT_F8E4M3FN, SLINRT_F8E4M3FN,
                       SLINRT_BF16, SLINRT_SCALING_OUTER_VECTOR, true,
                       /*contiguousB=*/contiguous);
      setPartScales(c, {N - 48, 32, 16});
      DeviceCase dev(c);
      dev.run(gpu, c, 1);
      ASSERT_EQ(slinrt_context_status(gpu), SLINRT_OK) << error();
      ASSERT_CUDA(cudaStreamSynchronize(stream));
      dev.d.download(c.d.base());
      EXPECT_LE(errorRatio(c).first, 1.0);
      EXPECT_EQ(c.d.changedOutsideView(3.0), 0);
      runs += M <= decodeMaxM();
    }
  EXPECT_EQ(slinrt_context_counters(gpu).decode_gemms, runs);
}

TEST_F(DecodeGemmTest, OtherTypesAndZeroKTakeOtherPaths) {
  // e5m2 x e4m3 is cuBLASLt's; K = 0 the broadcast; both still correct.
  std::mt19937_64 rng(2027);
  ScaledGemmCase c(rng, 4, 32, 64, SLINRT_F8E5M2, SLINRT_F8E4M3FN, SLINRT_BF16,
                   SLINRT_SCALING_OUTER_VECTOR, true);
  DeviceCase dev(c);
  dev.run(gpu, c, 1);
  ASSERT_EQ(slinrt_context_status(gpu), SLINRT_OK) << error();
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  dev.d.download(c.d.base());
  EXPECT_LE(errorRatio(c).first, 1.0);
  ScaledGemmCase z(rng, 4, 32, 0, SLINRT_F8E4M3FN, SLINRT_F8E4M3FN, SLINRT_F32,
                   SLINRT_SCALING_TENSORWISE, true);
  DeviceCase devZ(z);
  devZ.run(gpu, z, 0);
  ASSERT_EQ(slinrt_context_status(gpu), SLINRT_OK) << error();
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  devZ.d.download(z.d.base());
  for (int64_t n = 0; n < z.N; ++n)
    EXPECT_EQ(z.d.get(3, n), z.bias.get(n)) << n;
  EXPECT_EQ(slinrt_context_counters(gpu).decode_gemms, 0);
}

/// Copies the `bytes` bytes at `src` to `dst` (device) with the runtime's
/// copy kernel: the views are [bytes / 16, 16] column-major, which
/// cudaMemcpy2DAsync does not take.
void kernelCopy(slinrt_context *gpu, void *dst, void *src, int64_t bytes) {
  slinrt_memref2d s{src, src, 0, {bytes / 16, 16}, {1, bytes / 16}};
  slinrt_memref2d d{dst, dst, 0, {bytes / 16, 16}, {1, bytes / 16}};
  _mlir_ciface_slinrt_cuda_copy2d_f8e4m3fn_f8e4m3fn(gpu, &s, &d);
}

TEST_F(DecodeGemmTest, SeesTheWritesOfTheKernelBeforeIt) {
  // On sm90 the decode GEMM is launched as a programmatic dependent of the
  // kernel before it: it may start while that kernel runs, prefetches W
  // into L2 and waits (griddepcontrol.wait) before it reads x or W. Here a
  // copy kernel rewrites x, then W (or W, then x), right before each GEMM,
  // after both were garbled; each result must equal, bit for bit, that of
  // a GEMM that ran after a host synchronization. Shapes: the deep and the
  // one-wave register configurations, and the bulk form.
  if (decodeMaxM() < 16)
    GTEST_SKIP() << "decode GEMM disabled by SPLITLINEAR_FP8_DECODE_MAX_M";
  std::mt19937_64 rng(2029);
  for (int64_t N :
       {int64_t(96), 48 * int64_t(sms) - 16, 48 * int64_t(sms) + 16})
    for (int64_t M : {1, 16}) {
      SCOPED_TRACE(testing::Message() << "M " << M << " N " << N);
      ScaledGemmCase c(rng, M, N, 4096, SLINRT_F8E4M3FN, SLINRT_F8E4M3FN,
                       SLINRT_BF16, SLINRT_SCALING_OUTER_VECTOR, true);
      DeviceCase dev(c);
      DeviceCopy aSource(c.a.data(), c.a.size()),
          bSource(c.b.data(), c.b.size()), dFill(c.d.base(), dev.d.bytes);
      dev.run(gpu, c, 0);
      ASSERT_EQ(slinrt_context_status(gpu), SLINRT_OK) << error();
      ASSERT_CUDA(cudaStreamSynchronize(stream));
      dev.d.download(c.d.base());
      ASSERT_LE(errorRatio(c).first, 1.0);
      std::vector<uint8_t> want(dev.d.bytes), got(dev.d.bytes);
      dev.d.download(want.data());
      for (int rep = 0; rep < 8; ++rep) {
        SCOPED_TRACE(testing::Message() << "rep " << rep);
        ASSERT_CUDA(cudaMemsetAsync(dev.a.ptr, 0x7e, dev.a.bytes, stream));
        ASSERT_CUDA(cudaMemsetAsync(dev.b.ptr, 0x7e, dev.b.bytes, stream));
        ASSERT_CUDA(cudaMemcpyAsync(dev.d.ptr, dFill.ptr, dev.d.bytes,
                                    cudaMemcpyDeviceToDevice, stream));
        // Odd reps: W last, so the GEMM's L2 prefetch of W races its write.
        if (rep % 2)
          kernelCopy(gpu, dev.a.ptr, aSource.ptr, int64_t(dev.a.bytes));
        kernelCopy(gpu, dev.b.ptr, bSource.ptr, int64_t(dev.b.bytes));
        if (rep % 2 == 0)
          kernelCopy(gpu, dev.a.ptr, aSource.ptr, int64_t(dev.a.bytes));
        dev.run(gpu, c, 0);
        ASSERT_EQ(slinrt_context_status(gpu), SLINRT_OK) << error();
        ASSERT_CUDA(cudaStreamSynchronize(stream));
        dev.d.download(got.data());
        ASSERT_EQ(got, want);
      }
    }
}

TEST_F(DecodeGemmTest, WaitsForTheActivationQuantizationThatLetsItStart) {
  // The row quantization of x lets a dependent decode GEMM start at once
  // (its grid is resident): the GEMM's CTAs then run beside it and must
  // wait for its x and scale_inv. Each result, in a stream and replayed
  // from a CUDA graph, must equal bit for bit that of a GEMM that ran after
  // a host synchronization. N: the register form, and the bulk form (3 SMs
  // + 1 tiles of 16 rows).
  if (decodeMaxM() < 16)
    GTEST_SKIP() << "decode GEMM disabled by SPLITLINEAR_FP8_DECODE_MAX_M";
  std::mt19937_64 rng(2030);
  const int64_t K = 4096;
  for (int64_t N : {int64_t(96), 48 * int64_t(sms) + 16})
    for (int64_t M : {1, 16}) {
      SCOPED_TRACE(testing::Message() << "M " << M << " N " << N);
      ScaledGemmCase c(rng, M, N, K, SLINRT_F8E4M3FN, SLINRT_F8E4M3FN,
                       SLINRT_BF16, SLINRT_SCALING_OUTER_VECTOR, false);
      DeviceCase dev(c);
      std::vector<float> hx(size_t(M * K));
      std::normal_distribution<float> nd(0.0f, 1.0f);
      for (float &v : hx)
        v = nd(rng) * (1.0f + float(&v - hx.data()) / float(K));
      DeviceCopy x(hx.data(), 4 * hx.size()), x8(nullptr, size_t(M * K)),
          scaleInv(nullptr, 4 * size_t(M)), amax(nullptr, 4 * size_t(M)),
          dFill(c.d.base(), dev.d.bytes);
      slinrt_memref2d xRef = matrixRef(x.ptr, M, K, K);
      slinrt_memref2d aRef = matrixRef(x8.ptr, M, K, K);
      slinrt_memref1d sRef{scaleInv.ptr, scaleInv.ptr, 0, {M}, {1}};
      auto quantizeThenGemm = [&](bool sync) {
        slinrt_quantize_fp8(gpu, SLINRT_F32, SLINRT_F8E4M3FN, SLINRT_QUANT_ROWS,
                            &xRef, nullptr, static_cast<float *>(amax.ptr),
                            static_cast<float *>(scaleInv.ptr), x8.ptr, nullptr,
                            SLINRT_SCALE_EXACT);
        if (sync)
          ASSERT_CUDA(cudaStreamSynchronize(stream));
        scaledGemmFn(true, c.outType)(gpu, &aRef, &dev.bRef, &dev.dRef, &sRef,
                                      &dev.sBRef, nullptr, c.aType, c.bType,
                                      c.scaling, 0);
        ASSERT_EQ(slinrt_context_status(gpu), SLINRT_OK) << error();
        ASSERT_CUDA(cudaStreamSynchronize(stream));
      };
      quantizeThenGemm(true);
      std::vector<uint8_t> want(dev.d.bytes), got(dev.d.bytes);
      dev.d.download(want.data());
      // The synchronized result is a real one: not the fill.
      dev.d.download(c.d.base());
      EXPECT_NE(c.d.get(0, 0), 3.0);
      auto garble = [&] {
        ASSERT_CUDA(cudaMemsetAsync(x8.ptr, 0x7e, x8.bytes, stream));
        ASSERT_CUDA(
            cudaMemsetAsync(scaleInv.ptr, 0x7e, scaleInv.bytes, stream));
        ASSERT_CUDA(cudaMemcpyAsync(dev.d.ptr, dFill.ptr, dev.d.bytes,
                                    cudaMemcpyDeviceToDevice, stream));
      };
      for (int rep = 0; rep < 8; ++rep) {
        SCOPED_TRACE(testing::Message() << "rep " << rep);
        garble();
        quantizeThenGemm(false);
        dev.d.download(got.data());
        ASSERT_EQ(got, want);
      }
      // The same two kernels captured in a CUDA graph: stream capture turns
      // the dependent launch into a programmatic edge.
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      ASSERT_CUDA(
          cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      slinrt_quantize_fp8(gpu, SLINRT_F32, SLINRT_F8E4M3FN, SLINRT_QUANT_ROWS,
                          &xRef, nullptr, static_cast<float *>(amax.ptr),
                          static_cast<float *>(scaleInv.ptr), x8.ptr, nullptr,
                          SLINRT_SCALE_EXACT);
      scaledGemmFn(true, c.outType)(gpu, &aRef, &dev.bRef, &dev.dRef, &sRef,
                                    &dev.sBRef, nullptr, c.aType, c.bType,
                                    c.scaling, 0);
      ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
      ASSERT_EQ(slinrt_context_status(gpu), SLINRT_OK) << error();
      ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
      for (int rep = 0; rep < 4; ++rep) {
        SCOPED_TRACE(testing::Message() << "graph replay " << rep);
        garble();
        ASSERT_CUDA(cudaGraphLaunch(exec, stream));
        ASSERT_CUDA(cudaStreamSynchronize(stream));
        dev.d.download(got.data());
        ASSERT_EQ(got, want);
      }
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
    }
}

TEST_F(DecodeGemmTest, CapturedInCudaGraph) {
  if (decodeMaxM() < 16)
    GTEST_SKIP() << "decode GEMM disabled by SPLITLINEAR_FP8_DECODE_MAX_M";
  std::mt19937_64 rng(2028);
  ScaledGemmCase c(rng, 16, 96, 4096, SLINRT_F8E4M3FN, SLINRT_F8E4M3FN,
                   SLINRT_BF16, SLINRT_SCALING_OUTER_VECTOR, true);
  setPartScales(c, {64, 16, 16});
  DeviceCase dev(c);
  cudaStream_t capture = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
  slinrt_context_set_stream(gpu, capture);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(
      cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal));
  dev.run(gpu, c, 1);
  ASSERT_CUDA(cudaStreamEndCapture(capture, &graph));
  ASSERT_EQ(slinrt_context_status(gpu), SLINRT_OK) << error();
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  // Nothing ran during capture: D still holds the fill.
  ASSERT_CUDA(
      cudaMemcpy(c.d.base(), dev.d.ptr, dev.d.bytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(c.d.get(0, 0), 3.0);
  ASSERT_CUDA(cudaGraphLaunch(exec, capture));
  ASSERT_CUDA(cudaGraphLaunch(exec, capture));
  ASSERT_CUDA(cudaStreamSynchronize(capture));
  dev.d.download(c.d.base());
  EXPECT_LE(errorRatio(c).first, 1.0);
  EXPECT_EQ(slinrt_context_counters(gpu).decode_gemms, 1);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  slinrt_context_set_stream(gpu, stream);
  cudaStreamDestroy(capture);
}

} // namespace

//===- ScaledKernelTest.cpp - the FP8 forward kernel on the CPU -*- C++ -*-===//
//
// Compiles ScaledFprop kernels (KernelKind::ScaledFprop: one
// slin.scaled_linear, strategy auto) for the CPU target and runs them on
// fresh random FP8 data with per-part scales and biases: one part
// (tensorwise) and three parts in one buffer, in order (the view) or not
// (a copy, or one scaled GEMM per part, as the runtime is told to prefer).
// The reference is a float64 emulation written here: decode FP8, multiply,
// sum, scale, add the bias, round once to the output type; a result must be
// within 1 ulp of the output type of it.
//
// The data are chosen so that the runtime's fp32 pipeline is exact up to
// its final rounding (FP8 exponents in [-2, 3], so that every partial sum
// of K = 32 products fits in 24 bits; power-of-two scales): the 1-ulp
// tolerance then covers only the double rounding f32 -> bf16 / f16, and a
// scale applied to the wrong rows or columns, a bias of the wrong part or a
// wrong byte offset shows up as a large error.
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Dialect/Slin/IR/SlinOps.h"
#include "splitlinear/JIT/KernelCompiler.h"
#include "splitlinear/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

using namespace mlir;
using namespace splitlinear;

namespace {

//===----------------------------------------------------------------------===//
// Reference arithmetic (float64)
//===----------------------------------------------------------------------===//

/// The value of an FP8 byte of `dtype` (OCP e4m3fn: bias 7, 3 mantissa bits,
/// 0x7F / 0xFF NaN; e5m2: bias 15, 2 mantissa bits, IEEE-like), exactly.
double decodeFp8(slinrt_dtype dtype, uint8_t bits) {
  bool e4m3 = dtype == SLINRT_F8E4M3FN;
  int mantissaBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  int exponent = (bits & 0x7F) >> mantissaBits;
  int mantissa = bits & ((1 << mantissaBits) - 1);
  double sign = (bits & 0x80) ? -1.0 : 1.0;
  if (e4m3 && exponent == 15 && mantissa == 7)
    return NAN;
  if (!e4m3 && exponent == 31)
    return mantissa ? NAN : sign * INFINITY;
  if (exponent == 0)
    return sign * std::ldexp(mantissa, 1 - bias - mantissaBits);
  return sign * std::ldexp((1 << mantissaBits) + mantissa,
                           exponent - bias - mantissaBits);
}

/// A random FP8 byte of `dtype` whose value is 0 or ±(1.m) · 2^e with e in
/// [-2, 3] (see the file comment).
uint8_t randomFp8(slinrt_dtype dtype, std::mt19937 &gen) {
  bool e4m3 = dtype == SLINRT_F8E4M3FN;
  int mantissaBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  std::uniform_int_distribution<int> exponent(-2, 3);
  std::uniform_int_distribution<int> mantissa(0, (1 << mantissaBits) - 1);
  std::uniform_int_distribution<int> coin(0, 15);
  int c = coin(gen);
  if (c == 0)
    return 0;
  uint8_t sign = (c & 1) ? 0x80 : 0;
  return sign | static_cast<uint8_t>((exponent(gen) + bias) << mantissaBits) |
         static_cast<uint8_t>(mantissa(gen));
}

/// Number of explicit mantissa bits of an output dtype.
int mantissaBitsOf(slinrt_dtype dtype) {
  return dtype == SLINRT_F32 ? 23 : dtype == SLINRT_F16 ? 10 : 7;
}

/// One unit in the last place of `dtype` at the magnitude of `v`, down to
/// the subnormals' (the test's values never overflow).
double ulpOf(double v, slinrt_dtype dtype) {
  double smallest = std::ldexp(1.0, dtype == SLINRT_F32   ? -149
                                    : dtype == SLINRT_F16 ? -24
                                                          : -133);
  if (v == 0)
    return smallest;
  int exponent;
  std::frexp(v, &exponent); // v = f · 2^exponent, f in [0.5, 1)
  return std::max(smallest,
                  std::ldexp(1.0, exponent - 1 - mantissaBitsOf(dtype)));
}

/// `v` rounded once, to nearest even, to `dtype`.
double roundTo(double v, slinrt_dtype dtype) {
  double ulp = ulpOf(v, dtype);
  return std::nearbyint(v / ulp) * ulp;
}

/// The value of an output element of `dtype` stored at `p`.
double loadOutput(slinrt_dtype dtype, const void *p) {
  if (dtype == SLINRT_F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (dtype == SLINRT_BF16) {
    uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  // f16: bias 15, 10 mantissa bits (the test's values are normal or 0).
  int exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0)
    return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

/// Stores `v` (exactly representable in `dtype`) at `p`.
void storeOutput(slinrt_dtype dtype, double v, void *p) {
  if (dtype == SLINRT_F32) {
    float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
    return;
  }
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t h;
  if (dtype == SLINRT_BF16) {
    h = static_cast<uint16_t>(bits >> 16); // exact: v has <= 8 bits
  } else {
    int exponent = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
    h = static_cast<uint16_t>(
        ((bits >> 16) & 0x8000) |
        (f == 0 ? 0 : (exponent << 10) | ((bits >> 13) & 0x3FF)));
  }
  std::memcpy(p, &h, 2);
}

size_t bytesOf(slinrt_dtype dtype) { return dtype == SLINRT_F32 ? 4 : 2; }

/// 64-byte aligned zeroed storage (the scaled GEMM needs 16-byte aligned
/// operands).
struct Aligned {
  explicit Aligned(size_t bytes)
      : data(
            static_cast<char *>(std::aligned_alloc(64, (bytes + 63) & ~63ul))) {
    std::memset(data.get(), 0, (bytes + 63) & ~63ul);
  }
  char *get() const { return data.get(); }
  struct Free {
    void operator()(char *p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data;
};

//===----------------------------------------------------------------------===//
// One problem
//===----------------------------------------------------------------------===//

/// y[M, N] = sx · ŝ · (x8 · concat(w8_i)ᵀ) (+ concat(b_i)) with the parts
/// stored in one buffer, in order (adjacent) or in reverse order (not
/// adjacent), random data and power-of-two scales, and its reference.
struct ScaledCase {
  static constexpr int64_t M = 5, K = 32;
  slinrt_dtype xType, wType, outType;
  slinrt_scaling scaling;
  bool hasBias;
  std::vector<int64_t> rows; // N_i
  int64_t N = 0;
  Aligned x, w, bias, y;
  std::vector<float> sx, sw; // [M or 1], [N or 1]
  std::vector<int64_t> wRow; // the buffer row where part i starts
  std::vector<int64_t> bOff; // the bias element where part i starts
  std::vector<double> expected;

  ScaledCase(unsigned seed, const KernelSpec &spec, std::vector<int64_t> rowsIn,
             bool reversed)
      : xType(spec.inputDtype), wType(spec.weightPartDtypes.front()),
        outType(spec.dtype), scaling(spec.scaling), hasBias(spec.hasBias),
        rows(std::move(rowsIn)), N(sum(rows)), x(M * K), w(N * K),
        bias(N * bytesOf(outType)), y(M * N * bytesOf(outType)) {
    std::mt19937 gen(seed);
    auto *xb = reinterpret_cast<uint8_t *>(x.get());
    auto *wb = reinterpret_cast<uint8_t *>(w.get());
    for (int64_t i = 0; i < M * K; ++i)
      xb[i] = randomFp8(xType, gen);
    for (int64_t i = 0; i < N * K; ++i)
      wb[i] = randomFp8(wType, gen);
    std::uniform_int_distribution<int> small(-64, 64), exponent(-4, 3);
    for (int64_t n = 0; n < N; ++n)
      storeOutput(outType, small(gen) / 8.0, bias.get() + n * bytesOf(outType));
    bool outer = scaling == SLINRT_SCALING_OUTER_VECTOR;
    for (int64_t m = 0; m < (outer ? M : 1); ++m)
      sx.push_back(std::ldexp(1.0f, exponent(gen)));
    // One scale per part, spread over its rows (the caller's job).
    for (int64_t r : rows) {
      float s = std::ldexp(1.0f, exponent(gen) - 3);
      for (int64_t j = 0; j < (outer ? r : 1); ++j)
        sw.push_back(s);
    }
    // Storage order of the parts in the one buffer.
    size_t parts = rows.size();
    wRow.assign(parts, 0);
    bOff.assign(parts, 0);
    int64_t row = 0;
    for (size_t p = 0; p < parts; ++p) {
      size_t q = reversed ? parts - 1 - p : p;
      wRow[q] = bOff[q] = row;
      row += rows[q];
    }
    // Fill y with a value far from every result, so that an element left
    // unwritten fails the check.
    for (int64_t i = 0; i < M * N; ++i)
      storeOutput(outType, -1024.0, y.get() + i * bytesOf(outType));
    // The reference, over the parts in their logical order.
    expected.assign(M * N, 0);
    for (int64_t m = 0; m < M; ++m) {
      int64_t j = 0;
      for (size_t p = 0; p < parts; ++p)
        for (int64_t r = 0; r < rows[p]; ++r, ++j) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += decodeFp8(xType, xb[m * K + k]) *
                   decodeFp8(wType, wb[(wRow[p] + r) * K + k]);
          double v = double(sx[outer ? m : 0]) * sw[outer ? j : 0] * acc;
          if (hasBias)
            v += loadOutput(outType,
                            bias.get() + (bOff[p] + r) * bytesOf(outType));
          expected[m * N + j] = roundTo(v, outType);
        }
    }
  }

  static int64_t sum(const std::vector<int64_t> &v) {
    int64_t s = 0;
    for (int64_t x : v)
      s += x;
    return s;
  }

  /// Calls `entry` (argument order of KernelKind::ScaledFprop) with `ctx`;
  /// returns the slin::Path it took.
  int32_t run(void (*entry)(void **), slinrt_context *ctx) {
    size_t parts = rows.size();
    slinrt_memref2d dx = {x.get(), x.get(), 0, {M, K}, {K, 1}};
    slinrt_memref1d dsx = {
        sx.data(), sx.data(), 0, {static_cast<int64_t>(sx.size())}, {1}};
    slinrt_memref1d dsw = {
        sw.data(), sw.data(), 0, {static_cast<int64_t>(sw.size())}, {1}};
    slinrt_memref2d dy = {y.get(), y.get(), 0, {M, N}, {N, 1}};
    std::vector<slinrt_memref2d> dw(parts);
    std::vector<slinrt_memref1d> db(parts);
    for (size_t p = 0; p < parts; ++p) {
      dw[p] = {w.get(), w.get(), wRow[p] * K, {rows[p], K}, {K, 1}};
      db[p] = {bias.get(), bias.get(), bOff[p], {rows[p]}, {1}};
    }
    // ctx, x8, input_scale, w8_0..w8_{n-1}, weight_scale, [b_i...], y, path.
    std::vector<void *> ptrs{&dx, &dsx};
    for (auto &d : dw)
      ptrs.push_back(&d);
    ptrs.push_back(&dsw);
    if (hasBias)
      for (auto &d : db)
        ptrs.push_back(&d);
    ptrs.push_back(&dy);
    int32_t path = -1;
    std::vector<void *> args{&ctx};
    for (void *&p : ptrs)
      args.push_back(&p);
    args.push_back(&path);
    entry(args.data());
    return path;
  }

  /// Expects every element of y within 1 ulp (of the output type) of the
  /// reference.
  void check(const char *what) const {
    int bad = 0;
    for (int64_t i = 0; i < M * N; ++i) {
      double got = loadOutput(outType, y.get() + i * bytesOf(outType));
      double want = expected[i];
      if (!(std::fabs(got - want) <= ulpOf(want, outType)) && bad++ < 5)
        ADD_FAILURE() << what << ": y[" << i / N << ", " << i % N
                      << "] = " << got << ", expected " << want;
    }
    EXPECT_EQ(bad, 0) << what << ": " << bad << " elements off";
  }
};

/// A ScaledFprop spec for the CPU target.
KernelSpec scaledSpec(int64_t parts, slinrt_dtype out, slinrt_dtype weight,
                      slinrt_scaling scaling, bool hasBias) {
  KernelSpec spec;
  spec.kind = KernelKind::ScaledFprop;
  spec.dtype = out;
  spec.inputDtype = SLINRT_F8E4M3FN;
  spec.weightPartDtypes.assign(parts, weight);
  spec.scaling = scaling;
  spec.fastAccum = true;
  spec.hasBias = hasBias;
  if (hasBias)
    spec.biasPartDtypes.assign(parts, out);
  spec.target = slin::RuntimeTarget::cpu;
  return spec;
}

constexpr int32_t kView = static_cast<int32_t>(slin::Path::view);
constexpr int32_t kCopy = static_cast<int32_t>(slin::Path::copy);
constexpr int32_t kPerPart = static_cast<int32_t>(slin::Path::per_part);

/// One part, tensorwise, e5m2 weights, f32 output, no bias: one scaled GEMM
/// on the part.
TEST(ScaledKernelTest, OnePartTensorwiseMatchesEmulation) {
  KernelSpec spec = scaledSpec(1, SLINRT_F32, SLINRT_F8E5M2,
                               SLINRT_SCALING_TENSORWISE, /*hasBias=*/false);
  std::string error;
  FailureOr<CompiledKernel> kernel = compileKernel(spec, error);
  ASSERT_TRUE(succeeded(kernel)) << error;
  slinrt_context *ctx = slinrt_context_create_cpu();
  ASSERT_NE(ctx, nullptr);
  ScaledCase data(7, spec, {48}, /*reversed=*/false);
  EXPECT_EQ(data.run(kernel->entry, ctx), kView);
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK) << slinrt_context_error(ctx);
  EXPECT_EQ(slinrt_context_counters(ctx).scaled_gemms, 1);
  data.check("one part");
  slinrt_context_destroy(ctx);
}

/// Three parts with their own scales and biases, outer_vector, on every
/// path: a view of adjacent parts, a copy of parts that are not adjacent,
/// and one scaled GEMM per part; e4m3fn x e4m3fn into bf16 and e5m2 x
/// e4m3fn into f16.
TEST(ScaledKernelTest, ThreePartsMatchEmulationOnEveryPath) {
  struct {
    slinrt_dtype out, input;
  } types[] = {{SLINRT_BF16, SLINRT_F8E4M3FN}, {SLINRT_F16, SLINRT_F8E5M2}};
  for (auto [out, input] : types) {
    KernelSpec spec = scaledSpec(3, out, SLINRT_F8E4M3FN,
                                 SLINRT_SCALING_OUTER_VECTOR, /*hasBias=*/true);
    spec.inputDtype = input;
    std::string error;
    FailureOr<CompiledKernel> kernel = compileKernel(spec, error);
    ASSERT_TRUE(succeeded(kernel)) << error;
    struct {
      bool reversed;
      int64_t perPartMaxRows;
      int32_t path;
      int64_t gemms;
      const char *what;
    } cases[] = {{false, -1, kView, 1, "adjacent (view)"},
                 {true, 0, kCopy, 1, "not adjacent (copy)"},
                 {true, 1 << 20, kPerPart, 3, "not adjacent (per part)"}};
    unsigned seed = 11;
    for (const auto &c : cases) {
      slinrt_context *ctx = slinrt_context_create_cpu();
      ASSERT_NE(ctx, nullptr);
      slinrt_context_set_per_part_max_rows(ctx, c.perPartMaxRows);
      ScaledCase data(seed++, spec, {16, 32, 16}, c.reversed);
      EXPECT_EQ(data.run(kernel->entry, ctx), c.path) << c.what;
      EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK)
          << c.what << ": " << slinrt_context_error(ctx);
      EXPECT_EQ(slinrt_context_counters(ctx).scaled_gemms, c.gemms) << c.what;
      data.check(c.what);
      slinrt_context_destroy(ctx);
    }
  }
}

/// The CUDA kernel compiles and binds every runtime symbol it calls (the
/// cuda entry points' names come from the same list as the cpu ones; this
/// runs without a GPU, so it does not call the kernel).
TEST(ScaledKernelTest, CompilesForTheCudaTarget) {
  for (int64_t parts : {1, 3}) {
    KernelSpec spec =
        scaledSpec(parts, SLINRT_BF16, SLINRT_F8E4M3FN,
                   SLINRT_SCALING_OUTER_VECTOR, /*hasBias=*/parts > 1);
    spec.target = slin::RuntimeTarget::cuda;
    std::string error;
    FailureOr<CompiledKernel> kernel = compileKernel(spec, error);
    ASSERT_TRUE(succeeded(kernel)) << error;
    EXPECT_NE(kernel->entry, nullptr);
  }
}

/// An invalid ScaledFprop spec fails before any IR is built, naming the
/// problem; FP8 dtypes are refused for the other kinds.
TEST(ScaledKernelTest, InvalidSpecFailsWithItsReason) {
  struct {
    void (*breakSpec)(KernelSpec &);
    const char *reason;
  } cases[] = {
      {[](KernelSpec &s) { s.inputDtype = SLINRT_BF16; },
       "a scaled_fprop kernel needs an FP8 input dtype (4 = f8e4m3fn, 5 = "
       "f8e5m2), got 2"},
      {[](KernelSpec &s) { s.weightPartDtypes[1] = SLINRT_F32; },
       "weight part #1 of a scaled_fprop kernel needs an FP8 dtype"},
      {[](KernelSpec &s) { s.weightPartDtypes[1] = SLINRT_F8E5M2; },
       "weight part #1 has dtype 5, part #0 4: the parts share one FP8 type"},
      {[](KernelSpec &s) {
         s.inputDtype = SLINRT_F8E5M2;
         s.weightPartDtypes.assign(2, SLINRT_F8E5M2);
       },
       "e5m2 x e5m2 is not supported"},
      {[](KernelSpec &s) {
         s.dtype = SLINRT_F64;
         s.biasPartDtypes.assign(2, SLINRT_F64);
       },
       "the output dtype of a scaled_fprop kernel must be f32 (0), f16 (1) "
       "or bf16 (2), got 3"},
      {[](KernelSpec &s) { s.biasPartDtypes[0] = SLINRT_F32; },
       "bias part #0 has dtype 0, expected the output dtype 2"},
      {[](KernelSpec &s) { s.scaling = SLINRT_SCALING_TENSORWISE; },
       "tensorwise scaling with 2 weight parts: parts with their own scales "
       "need outer_vector"},
      {[](KernelSpec &s) {
         s.kind = KernelKind::Fprop;
         s.dtype = SLINRT_F32;
         s.biasPartDtypes.assign(2, SLINRT_F32);
       },
       "weight part #0 has the FP8 dtype 4: only a scaled_fprop kernel takes "
       "FP8 operands"},
  };
  for (const auto &c : cases) {
    KernelSpec spec = scaledSpec(2, SLINRT_BF16, SLINRT_F8E4M3FN,
                                 SLINRT_SCALING_OUTER_VECTOR, true);
    c.breakSpec(spec);
    std::string error;
    EXPECT_TRUE(failed(buildKernel(spec, error))) << c.reason;
    EXPECT_NE(error.find(c.reason), std::string::npos) << error;
  }
}

} // namespace

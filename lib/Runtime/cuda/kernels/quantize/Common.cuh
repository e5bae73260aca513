//===- Common.cuh - Shared parts of the FP8 quantization kernels *- C++ -*-===//
//
// What the FP8 quantization kernels share, written once: the block and tile
// geometry, the parts of a launch, the vector loads (with column scales), the
// FP8 encoder (the hardware conversion on sm89+, with NaN rewritten to the
// Float8.h encoding; Float8.h's encoder on older devices), the stores, the
// block maximum and the column maximum of a warp tile; on the host, the type
// dispatch, the device's SM count and the grid sizes, and the launchers one
// file of this folder offers the others.
//
//===----------------------------------------------------------------------===//

#ifndef SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_QUANTIZE_COMMON_CUH
#define SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_QUANTIZE_COMMON_CUH

#include "Float8.h"
#include "cuda/kernels/Launch.h"
#include "cuda/kernels/quantize/QuantizeKernels.h"

#include <cuda_fp8.h>

#include <algorithm>
#include <atomic>
#include <type_traits>

namespace slinrt {
namespace cuda {
namespace quant {

//===----------------------------------------------------------------------===//
// Geometry
//===----------------------------------------------------------------------===//

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
/// Elements per thread and load: 16 bytes of 16-bit types, two loads of fp32.
constexpr int kVec = 8;
/// Warp tiles of the cast and column amax: 4 x 8 lanes, each 8 rows x 8
/// columns, so that a lane writes 8 bytes of a column of outT. 8-row lane
/// tiles: with 16 rows a lane (16-byte outT stores) the cast needs 128
/// registers, 2 blocks per SM, and was slower in 7 of the 9 casts of a
/// Llama-3-8B training step on the H200, 1.06x slower on the whole
/// (docs/Design.md, Measured decisions: FP8 cast tiles of 8 rows a lane).
constexpr int kLaneRows = 8;
constexpr int kTileRows = 4 * kLaneRows, kTileCols = 8 * kVec;
/// Rows one warp of the column amax reduces before its atomics.
constexpr int64_t kAmaxChunkRows = 2 * kTileRows;
/// Largest row held in registers by the row quantizer: kThreads·kVec·8
/// elements in blocks of kThreads; 16-bit rows up to twice that (dY of
/// Llama-3-8B's gate/up, 28672) in blocks of 2·kThreads (120 registers a
/// thread, so one block per SM). Longer rows take the two-pass kernel, which
/// streamed dY of gate/up at about 1.2 TB/s on the H200 (docs/Design.md,
/// Measured decisions: rows held in registers by the row quantizer).
constexpr int kMaxRowVectors = 8;
constexpr int kLongRowThreads = 2 * kThreads;
/// Resident blocks of the cast per SM (its register bound: 85 a thread for
/// 16-bit sources; fp32 ones, twice the loads, would spill there and get 128).
template <typename S> constexpr int castBlocksPerSM() {
  return sizeof(S) == 4 ? 2 : 3;
}
/// Resident blocks of the amax per SM (its register bound): the grid is one
/// wave of them.
constexpr int kAmaxBlocksPerSM = 4;

//===----------------------------------------------------------------------===//
// Device helpers
//===----------------------------------------------------------------------===//

/// The parts of one launch, passed by value (kernel parameter space).
struct PartsArg {
  Fp8Part parts[kMaxPartsPerLaunch];
  /// Cast: first warp tile of each part (prefix sums; one more entry).
  int64_t tileStart[kMaxPartsPerLaunch + 1];
  int count;
};

/// Loads kVec consecutive elements at `p` as floats, 16 bytes at a time
/// (`p` 16-byte aligned).
template <typename S>
__device__ __forceinline__ void loadVector(const S *p, float (&v)[kVec]) {
  constexpr int perLoad = 16 / sizeof(S);
#pragma unroll
  for (int l = 0; l < kVec / perLoad; ++l) {
    uint4 raw = __ldg(reinterpret_cast<const uint4 *>(p) + l);
    S elems[perLoad];
    memcpy(elems, &raw, 16);
#pragma unroll
    for (int j = 0; j < perLoad; ++j)
      v[l * perLoad + j] = toFloat(elems[j]);
  }
}

/// colScale[c, c + kVec) (0 past `cols`): two 16-byte loads when the run
/// is whole and 16-byte aligned. Scalar loads of a lane's 8 scales, 32
/// bytes apart across the warp, touch a 32-byte sector per lane each: 8
/// times the sectors of the data they scale.
__device__ __forceinline__ void loadColScale(const float *colScale, int64_t c,
                                             int64_t cols, float (&s)[kVec]) {
  const float *p = colScale + c;
  if (c + kVec <= cols && reinterpret_cast<uintptr_t>(p) % 16 == 0) {
    float4 lo = __ldg(reinterpret_cast<const float4 *>(p));
    float4 hi = __ldg(reinterpret_cast<const float4 *>(p) + 1);
    float all[kVec] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      s[j] = all[j];
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      s[j] = c + j < cols ? __ldg(p + j) : 0.0f;
  }
}

/// Loads up to kVec elements of row `r` of `part` from column `c` (those
/// past `cols` are 0), times colScale when given. Vector loads when
/// `vectorOk` (16-byte aligned rows, cols a multiple of kVec).
template <typename S>
__device__ __forceinline__ void
loadRun(const Fp8Part &part, int64_t cols, int64_t r, int64_t c,
        const float *colScale, bool vectorOk, float (&v)[kVec]) {
  const S *row = static_cast<const S *>(part.data) + r * part.ld;
  if (vectorOk && c + kVec <= cols) {
    loadVector(row + c, v);
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      v[j] = c + j < cols ? toFloat(row[c + j]) : 0.0f;
  }
  if (colScale) {
    float cs[kVec];
    loadColScale(colScale, c, cols, cs);
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      v[j] = c + j < cols ? v[j] * cs[j] : 0.0f;
  }
}

/// Runs of kVec elements at column `c` of rows r0 + i·rowStep (i < N) of
/// `part`, as floats, with all N 16-byte loads (two each for fp32) issued
/// before the first is converted: a loadRun behind its vectorOk branch
/// converts its run before the next load leaves, one load in flight a
/// thread (docs/Design.md, Measured decisions: blockwise quantization loads
/// a thread's runs before converting them). Needs part.vectorOk, the rows
/// and the run inside the part.
template <typename S, int N>
__device__ __forceinline__ void loadRunsInFlight(const Fp8Part &part,
                                                 int64_t r0, int64_t rowStep,
                                                 int64_t c,
                                                 float (&v)[N][kVec]) {
  constexpr int kPerLoad = 16 / sizeof(S);
  constexpr int kLoads = kVec / kPerLoad;
  const S *src = static_cast<const S *>(part.data) + r0 * part.ld + c;
  uint4 raw[N][kLoads];
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int l = 0; l < kLoads; ++l)
      raw[i][l] =
          __ldg(reinterpret_cast<const uint4 *>(src + i * rowStep * part.ld) +
                l);
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      S elems[kPerLoad];
      memcpy(elems, &raw[i][l], 16);
#pragma unroll
      for (int j = 0; j < kPerLoad; ++j)
        v[i][l * kPerLoad + j] = toFloat(elems[j]);
    }
}

/// satcast (Float8.h) of kVec floats into two words, element j in byte j.
template <typename F8>
__device__ __forceinline__ uint2 encodeVector(const float (&v)[kVec]) {
  uint32_t w[2] = {0, 0};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  constexpr __nv_fp8_interpretation_t kind =
      std::is_same<F8, Float8E4M3FN>::value ? __NV_E4M3 : __NV_E5M2;
#pragma unroll
  for (int j = 0; j < kVec; j += 2) {
    uint32_t pair = __nv_cvt_float2_to_fp8x2(make_float2(v[j], v[j + 1]),
                                             __NV_SATFINITE, kind);
    w[j / 4] |= pair << (8 * (j % 4));
  }
  // The hardware's NaN is 0x7F whatever the sign; satcast keeps the sign.
  // Everything else (rounding, saturation of large values and infinities,
  // signed zeros) is satcast already. Only a NaN gives the byte 0x7F (the
  // largest finite byte is 0x7E or 0x7B), so one byte compare per word
  // skips the fix-up for the vectors without any.
  static_assert(Fp8Format<F8>::kNaNBits == 0x7F &&
                    Fp8Format<F8>::kMaxBits < 0x7F,
                "the hardware NaN byte must be the only 0x7F");
  if ((__vcmpeq4(w[0], 0x7F7F7F7Fu) | __vcmpeq4(w[1], 0x7F7F7F7Fu)) == 0)
    return make_uint2(w[0], w[1]);
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    uint32_t bits = bitCast<uint32_t>(v[j]);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
      uint32_t nan = ((bits >> 24) & 0x80u) | Fp8Format<F8>::kNaNBits;
      w[j / 4] =
          (w[j / 4] & ~(0xFFu << (8 * (j % 4)))) | (nan << (8 * (j % 4)));
    }
  }
#else
#pragma unroll
  for (int j = 0; j < kVec; ++j)
    w[j / 4] |= uint32_t(encodeFp8<F8>(v[j])) << (8 * (j % 4));
#endif
  return make_uint2(w[0], w[1]);
}

/// Stores the first `n` (<= kVec) bytes of `q` at `dst`, 8 at a time when
/// `vectorOk` and n == kVec.
__device__ __forceinline__ void storeRun(uint8_t *dst, uint2 q, int64_t n,
                                         bool vectorOk) {
  if (vectorOk && n >= kVec) {
    *reinterpret_cast<uint2 *>(dst) = q;
    return;
  }
#pragma unroll
  for (int j = 0; j < kVec; ++j)
    if (j < n)
      dst[j] = uint8_t((j < 4 ? q.x : q.y) >> (8 * (j % 4)));
}

/// The block-wide maximum of `bits` (every thread gets it), for blocks of
/// `Threads` threads.
template <int Threads = kThreads>
__device__ __forceinline__ uint32_t blockMax(uint32_t bits) {
  constexpr int kBlockWarps = Threads / 32;
  __shared__ uint32_t perWarp[kBlockWarps];
  bits = __reduce_max_sync(0xFFFFFFFFu, bits);
  int warp = threadIdx.x / 32;
  __syncthreads(); // perWarp may still be read by a previous call
  if (threadIdx.x % 32 == 0)
    perWarp[warp] = bits;
  __syncthreads();
  uint32_t best = 0;
#pragma unroll
  for (int w = 0; w < kBlockWarps; ++w)
    best = max(best, perWarp[w]);
  return best;
}

/// Sets the kVec values of a run to 0 (a run past the data: nothing loaded).
__device__ __forceinline__ void zeroRun(float (&v)[kVec]) {
#pragma unroll
  for (int j = 0; j < kVec; ++j)
    v[j] = 0.0f;
}

/// The column maxima of a warp tile: `best` holds this lane's maxima of
/// columns [c, c + kVec) over its rows; the 4 row groups (lanes 8 apart)
/// meet by shuffles, and row group 0 merges the nonzero ones into
/// colAmax[c, c + nCols) with one atomicMax per column (float bits).
__device__ __forceinline__ void mergeColumnMax(uint32_t (&best)[kVec], int rg,
                                               int64_t c, int64_t nCols,
                                               uint32_t *colAmax) {
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    best[j] = max(best[j], __shfl_xor_sync(0xFFFFFFFFu, best[j], 8));
    best[j] = max(best[j], __shfl_xor_sync(0xFFFFFFFFu, best[j], 16));
  }
  if (rg == 0)
    for (int j = 0; j < kVec && j < nCols; ++j)
      if (best[j] != 0)
        atomicMax(&colAmax[c + j], best[j]);
}

//===----------------------------------------------------------------------===//
// Host helpers
//===----------------------------------------------------------------------===//

/// Calls `fn(S{}, F8{})` for the source and FP8 types.
template <typename Fn>
cudaError_t dispatchQuant(slinrt_dtype src, slinrt_dtype dst, Fn &&fn) {
  auto withSource = [&](auto s) {
    if (dst == SLINRT_F8E4M3FN)
      return fn(s, Float8E4M3FN{});
    if (dst == SLINRT_F8E5M2)
      return fn(s, Float8E5M2{});
    return cudaErrorInvalidValue;
  };
  switch (src) {
  case SLINRT_F32:
    return withSource(float{});
  case SLINRT_F16:
    return withSource(Half{});
  case SLINRT_BF16:
    return withSource(BFloat16{});
  case SLINRT_F64:
  case SLINRT_F8E4M3FN:
  case SLINRT_F8E5M2:
    break;
  }
  return cudaErrorInvalidValue;
}

inline bool aligned(const void *p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

/// The current device's SM count (cached per device; 132 if unknown).
inline int64_t smCount() {
  constexpr int kDevices = 64;
  static std::atomic<int> counts[kDevices];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 ||
      device >= kDevices) {
    (void)cudaGetLastError();
    return 132;
  }
  int n = counts[device].load(std::memory_order_relaxed);
  if (n == 0) {
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) !=
            cudaSuccess ||
        n <= 0) {
      (void)cudaGetLastError();
      n = 132;
    }
    counts[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

/// ceil(a / b) for a >= 0, b > 0.
inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Blocks of `threads` of `kernel` resident on the whole device (at least
/// one per SM).
template <typename Kernel>
int64_t residentBlocks(Kernel kernel, int threads = kThreads) {
  int perSM = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, kernel, threads,
                                                    0) != cudaSuccess ||
      perSM <= 0) {
    (void)cudaGetLastError();
    perSM = 1;
  }
  return int64_t(perSM) * smCount();
}

/// Blocks for `warpJobs` jobs of one warp each: all of them up to 16 blocks
/// per SM, then grid-stride.
inline unsigned warpJobBlocks(int64_t warpJobs) {
  return unsigned(std::max<int64_t>(
      1, std::min(ceilDiv(warpJobs, kWarps), 16 * smCount())));
}

/// Copies parts[first, first + count) into a launch argument; tileStart in
/// warp tiles of `colTiles` columns (at least one row of tiles, so that
/// empty parts still get their scales written).
inline PartsArg partsArg(const Fp8Part *parts, int first, int count,
                         int64_t colTiles) {
  PartsArg args{};
  args.count = count;
  for (int i = 0; i < count; ++i) {
    args.parts[i] = parts[first + i];
    int64_t rowTiles = ceilDiv(parts[first + i].rows, kTileRows);
    args.tileStart[i + 1] =
        args.tileStart[i] + std::max<int64_t>(rowTiles, 1) * colTiles;
  }
  return args;
}

//===----------------------------------------------------------------------===//
// Launchers shared by the files of this folder
//===----------------------------------------------------------------------===//

/// colAmaxKernel (Amax.cu) over x with `jobs` warp jobs of `colTiles` tiles.
cudaError_t launchColAmax(slinrt_dtype src, slinrt_dtype dst, const Fp8Part &x,
                          int64_t colTiles, int64_t jobs, const float *colScale,
                          uint32_t *colAmax, cudaStream_t stream);

/// rowColAmaxKernel (Amax.cu) over x with `jobs` warp jobs of `tilesPerJob`
/// of its `colTiles` tiles.
cudaError_t launchRowColAmax(slinrt_dtype src, slinrt_dtype dst,
                             const Fp8Part &x, int64_t colTiles,
                             int64_t tilesPerJob, int64_t jobs,
                             const float *colScale, uint32_t *rowAmax,
                             uint32_t *colAmax, cudaStream_t stream);

/// The cast (Cast.cu) of one part with column c's scale from the amax bits
/// in colAmax[c]; no scale_inv is written.
cudaError_t launchCastPerColumn(slinrt_dtype src, slinrt_dtype dst,
                                const Fp8Part &part, const float *colScale,
                                const uint32_t *colAmax, uint8_t *out,
                                uint8_t *outT, bool pow2Scales,
                                cudaStream_t stream);

/// The rows/cols dual cast (Cast.cu) of one part: out = x · colScale with
/// its row's scale (rowAmax bits), outT = xᵀ with its column's (colAmax
/// bits); no scale_inv is written.
cudaError_t launchCastRowsCols(slinrt_dtype src, slinrt_dtype dst,
                               const Fp8Part &part, const float *colScale,
                               const uint32_t *rowAmax, const uint32_t *colAmax,
                               uint8_t *out, uint8_t *outT, bool pow2Scales,
                               cudaStream_t stream);

} // namespace quant
} // namespace cuda
} // namespace slinrt

#endif // SPLITLINEAR_LIB_RUNTIME_CUDA_KERNELS_QUANTIZE_COMMON_CUH

#!/usr/bin/env bash
# Runs on the H200 (device tool, `.carry` carried, after `bash scripts/gpu/pack.sh`
# here): the decode GEMM's gtests (default bound, then SPLITLINEAR_FP8_DECODE_MAX_M=32
# for the two m-tile kernel), the FP8 CUDA pytest file, and the CUDA-graph benchmark
# of the weights-in-FP8 GEMMs at M = 1, 16, 32 (bf16, the decode kernel, cuBLASLt,
# torch._scaled_mm, and both decode tile widths). Uses the carried runtime (sm80 +
# sm90 images). Outputs under $OUT. Takes about 3-4 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
B=/tmp/splitlinear-bundle
rm -rf "$B" && mkdir -p "$B"
tar -xJf .carry/gpu-bundle.tar.xz -C "$B"
tar -xJf .carry/gpu-deps.tar.xz -C "$B"
export LD_LIBRARY_PATH="$B/lib:$B/deps:${LD_LIBRARY_PATH:-}"
export SPLITLINEAR_LIBRARY_DIR="$B/lib" PYTHONPATH="$PWD/python:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

echo "== decode gtests (default: decode kernel for M <= 16) and the FP8 CUDA gtests"
timeout 90 "$B/bin/SplitLinearRuntimeTests" --gtest_brief=1 \
  --gtest_filter='DecodeGemmTest.*:CUDARuntimeTest.Fp8*' > "$OUT/decode-gtest.txt" 2>&1
echo "exit $?"; grep -E "Failure|FAILED|PASSED|SKIPPED|DECODE|TIME" "$OUT/decode-gtest.txt" | head -40

echo "== decode gtest with SPLITLINEAR_FP8_DECODE_MAX_M=32 (M 17 and 32: two m-tiles)"
SPLITLINEAR_FP8_DECODE_MAX_M=32 timeout 45 "$B/bin/SplitLinearRuntimeTests" --gtest_brief=1 \
  --gtest_filter='DecodeGemmTest.*' > "$OUT/decode-gtest-32.txt" 2>&1
echo "exit $?"; grep -E "Failure|FAILED|PASSED|SKIPPED|DECODE" "$OUT/decode-gtest-32.txt" | head -20

echo "== pytest python/tests/test_fp8_cuda.py"
SPLITLINEAR_REQUIRE_OP=1 TORCHINDUCTOR_CACHE_DIR=/tmp/slin-inductor timeout 120 \
  python3 -m pytest -q -rs -p no:cacheprovider python/tests/test_fp8_cuda.py > "$OUT/decode-pytest.txt" 2>&1
echo "exit $?"; grep -E "FAILED|ERROR|SKIPPED" "$OUT/decode-pytest.txt" | head -20; tail -2 "$OUT/decode-pytest.txt"

echo "== GPU time of the FP8-weight GEMMs (CUDA graphs)"
timeout 200 python3 bench/fp8_linear.py --graphs \
  --variant "SPLITLINEAR_FP8_DECODE_MAX_M=0" \
  --variant "SPLITLINEAR_FP8_DECODE_MAX_M=32 SPLITLINEAR_FP8_DECODE_TILE_N=16" \
  --variant "SPLITLINEAR_FP8_DECODE_MAX_M=32 SPLITLINEAR_FP8_DECODE_TILE_N=32" \
  --out "$OUT/decode-graphs.json" 2>&1 | tee "$OUT/decode-graphs.txt"

#!/usr/bin/env bash
# Runs on the H200 (device tool, `.carry` carried, after `bash scripts/gpu/pack.sh`
# here): the decode GEMM's gtests (default bound, then SPLITLINEAR_FP8_DECODE_MAX_M=32
# for the two m-tile kernel), the same gtests on the pipelined variant
# (SPLITLINEAR_FP8_DECODE_PIPELINE=1: its own tile choice, 3 tiles per CTA, 32-row
# tiles, M up to 32), the FP8 CUDA pytest file, and the CUDA-graph benchmark of the
# weights-in-FP8 GEMMs at M = 1, 16, 32 (bf16, the decode kernel, cuBLASLt,
# torch._scaled_mm, both decode tile widths, and the pipelined variant with its own
# tiles per CTA, one tile per CTA, and 32-row tiles). Uses the carried runtime (sm80
# + sm90 images). Outputs under $OUT. Takes about 5-6 minutes.
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

echo "== decode gtests on the pipelined variant (SPLITLINEAR_FP8_DECODE_PIPELINE=1)"
for v in "" "SPLITLINEAR_FP8_DECODE_TILES_PER_CTA=3" "SPLITLINEAR_FP8_DECODE_TILE_N=32" \
  "SPLITLINEAR_FP8_DECODE_MAX_M=32 SPLITLINEAR_FP8_DECODE_TILES_PER_CTA=2"; do
  name=$(echo "pipeline $v" | tr ' =' '_-')
  env SPLITLINEAR_FP8_DECODE_PIPELINE=1 $v timeout 60 "$B/bin/SplitLinearRuntimeTests" --gtest_brief=1 \
    --gtest_filter='DecodeGemmTest.*' > "$OUT/decode-gtest-$name.txt" 2>&1
  echo "[$v] exit $?"; grep -E "Failure|FAILED|PASSED|SKIPPED|DECODE" "$OUT/decode-gtest-$name.txt" | head -10
done

echo "== pytest python/tests/test_fp8_cuda.py"
SPLITLINEAR_REQUIRE_OP=1 TORCHINDUCTOR_CACHE_DIR=/tmp/slin-inductor timeout 120 \
  python3 -m pytest -q -rs -p no:cacheprovider python/tests/test_fp8_cuda.py > "$OUT/decode-pytest.txt" 2>&1
echo "exit $?"; grep -E "FAILED|ERROR|SKIPPED" "$OUT/decode-pytest.txt" | head -20; tail -2 "$OUT/decode-pytest.txt"

echo "== GPU time of the FP8-weight GEMMs (CUDA graphs)"
timeout 320 python3 bench/fp8_linear.py --graphs \
  --variant "SPLITLINEAR_FP8_DECODE_MAX_M=0" \
  --variant "SPLITLINEAR_FP8_DECODE_MAX_M=32 SPLITLINEAR_FP8_DECODE_TILE_N=16" \
  --variant "SPLITLINEAR_FP8_DECODE_MAX_M=32 SPLITLINEAR_FP8_DECODE_TILE_N=32" \
  --variant "SPLITLINEAR_FP8_DECODE_MAX_M=32 SPLITLINEAR_FP8_DECODE_PIPELINE=1" \
  --variant "SPLITLINEAR_FP8_DECODE_MAX_M=32 SPLITLINEAR_FP8_DECODE_PIPELINE=1 SPLITLINEAR_FP8_DECODE_TILES_PER_CTA=1" \
  --variant "SPLITLINEAR_FP8_DECODE_MAX_M=32 SPLITLINEAR_FP8_DECODE_PIPELINE=1 SPLITLINEAR_FP8_DECODE_TILE_N=32" \
  --out "$OUT/decode-graphs.json" 2>&1 | tee "$OUT/decode-graphs.txt"

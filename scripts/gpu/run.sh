#!/usr/bin/env bash
# Runs on the H200 machine (through the device tool, with `.carry` carried;
# scripts/gpu/pack.sh fills it): installs the wheel, then runs the runtime's
# unit tests, the C API test, the op-vs-PyTorch check, the pytest suite (cpu
# and cuda) against the installed package, and the benchmarks (bench/run.py;
# RUN_<PART>=0 skips a part). Every result lands in $OUT (default: ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
T=/tmp/splitlinear-tests
rm -rf "$T" && mkdir -p "$T"
tar -xJf .carry/gpu-tests.tar.xz -C "$T"
export PYTHONUNBUFFERED=1
# The packed tree's commit (pack.sh) for the results' header; this copy's .git may be stale.
BENCH_COMMIT=$(cat .carry/tree-commit 2>/dev/null || true)
export BENCH_COMMIT

echo "== device"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
# The wheel, offline (torch is there already); --force-reinstall: a warm
# machine may hold an older build.
python3 -m pip install -q --no-deps --no-index --force-reinstall .carry/splitlinear-*.whl 2>&1 | tail -2
# The benchmarks' peers that the machine lacks, carried by pack.sh (torchao,
# pytest-xdist), offline.
for w in .carry/wheels/*.whl; do
  [ -e "$w" ] || continue
  mod=$(basename "$w" | cut -d- -f1)
  python3 -c "import $mod" 2>/dev/null || python3 -m pip install -q --no-deps --no-index "$w" 2>&1 | tail -2
done
LIB=$(python3 -c "import splitlinear, pathlib; print(pathlib.Path(splitlinear.__file__).parent / 'lib')")
NV=$(python3 -c "import nvidia, pathlib; print(pathlib.Path(list(nvidia.__path__)[0]) / 'cu13' / 'lib')")
echo "installed: $LIB"
# The test executables link the runtime from the build tree: here, the wheel's.
export LD_LIBRARY_PATH="$LIB:$NV:${LD_LIBRARY_PATH:-}"
B=$T
# The tests run from a folder outside the tree, against the installed package.
TESTS=$PWD/python/tests

if [ "${RUN_BASICS:-1}" = 1 ]; then
echo "== runtime unit tests (CUDA included)"
# Whole log in $OUT; every failure (not only the last lines) printed here.
"$B/bin/SplitLinearRuntimeTests" --gtest_brief=1 > "$OUT/runtime-gtest.txt" 2>&1
echo "exit $?"; grep -E "Failure|^first:|FAILED|PASSED|SKIPPED|\[ TIME" "$OUT/runtime-gtest.txt" | head -60
# The decode GEMM's other forms: the register form at M <= 16 (bulk form
# off), 32-row tiles, and its launches as programmatic dependents (the
# bulk form only; none).
for v in SPLITLINEAR_FP8_DECODE_BULK=0 SPLITLINEAR_FP8_DECODE_TILE_N=32 \
         SPLITLINEAR_FP8_DECODE_PDL=bulk SPLITLINEAR_FP8_DECODE_PDL=0; do
  echo "== decode GEMM tests, $v"
  env "$v" "$B/bin/SplitLinearRuntimeTests" --gtest_brief=1 --gtest_filter='DecodeGemmTest.*' \
    > "$OUT/runtime-gtest-$v.txt" 2>&1
  echo "exit $?"; grep -E "Failure|FAILED|PASSED|DECODE" "$OUT/runtime-gtest-$v.txt" | head -20
done
# Opt-in FP8 autotuning (off by default): its bucket test runs only with it on.
echo "== FP8 GEMM tests, SPLITLINEAR_FP8_AUTOTUNE_MAX_M=4096"
SPLITLINEAR_FP8_AUTOTUNE_MAX_M=4096 "$B/bin/SplitLinearRuntimeTests" --gtest_brief=1 \
  --gtest_filter='*Fp8ScaledGemm*' > "$OUT/runtime-gtest-autotune.txt" 2>&1
echo "exit $?"; grep -E "Failure|FAILED|PASSED|SKIPPED" "$OUT/runtime-gtest-autotune.txt" | head -20
echo "== C API test"
"$B/bin/splitlinear-capi-test" > /tmp/capi-test.txt 2>&1; echo "exit $?"; grep -E "max error|bad" /tmp/capi-test.txt

echo "== op vs PyTorch"
python3 bench/tools/gpu_check.py --json "$OUT/gpu-check.json" 2>&1
fi

if [ "${RUN_PYTEST:-1}" = 1 ]; then
  # The whole suite: every device-parametrized test runs on cpu and cuda
  # (PYTEST_ARGS="-k cuda" for the CUDA half only).
  echo "== pytest (cpu + cuda)"
  (cd /tmp && SPLITLINEAR_REQUIRE_OP=1 TORCHINDUCTOR_CACHE_DIR=/tmp/slin-inductor timeout 420 \
    python3 -m pytest -v -rs -p no:cacheprovider ${PYTEST_ARGS:-} ${PYTEST_K:+-k "$PYTEST_K"} \
    --rootdir "$TESTS/.." -c "$TESTS/../pyproject.toml" "$TESTS" \
    --junitxml="$OUT/pytest.xml" > "$OUT/pytest.txt" 2>&1); echo "exit $?"
  grep -E "FAILED|ERROR|SKIPPED" "$OUT/pytest.txt" | head -40; tail -3 "$OUT/pytest.txt"
fi

if [ "${RUN_BENCH:-1}" = 1 ]; then
  # Every benchmark suite, one JSON per suite under $OUT/bench (bench/README.md);
  # BENCH_SUITE=train (or a comma-separated list) runs fewer; BENCH_ARGS adds
  # options (--timeout-s 280). A full `all` takes
  # longer than one device call: split it as bench/README.md says.
  echo "== benchmarks: bench/run.py --suite ${BENCH_SUITE:-all}"
  TORCHINDUCTOR_CACHE_DIR=/tmp/slin-inductor \
    python3 bench/run.py --suite "${BENCH_SUITE:-all}" --out "$OUT/bench" ${BENCH_ARGS:-} 2>&1 \
    | grep -v Warning | tee "$OUT/bench.txt" | grep -E "^== |failed"
fi

#!/usr/bin/env bash
# Builds the libFuzzer target slin-fuzz (fuzz/slin-fuzz.cpp) in
# ${FUZZ_BUILD_DIR:-build-fuzz} and fuzzes the compiler for SECONDS (default
# 60) with one process, after replaying the reproducers of past findings
# (fuzz/regressions/). Exits non-zero on any finding (crash, assertion,
# sanitizer report, leak, timeout, out-of-memory, invalid IR after a pass);
# the reproducer is left in <build>/fuzz/artifacts/.
#
# usage: scripts/fuzz.sh [SECONDS] [extra libFuzzer flags...]
#
# The build: clang-22 (+ libclang-rt-22-dev for libFuzzer and the
# sanitizers), ASan + UBSan on all project code, assertions on, CUDA and
# torch off; only the slin-fuzz target and what it needs are built. The
# working corpus (<build>/fuzz/corpus) persists between runs; the seeds are
# rebuilt from test/ each time (fuzz/make-corpus.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_TO_FUZZ=${1:-60}
shift || true
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
CLANG=${CLANG:-clang-22}

SPLITLINEAR_SKIP_PYTHON=1 bash scripts/install-deps.sh
if ! command -v "$CLANG" >/dev/null ||
   [ ! -e /usr/lib/llvm-22/lib/clang/22/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  echo "== installing clang-22 and libclang-rt-22-dev"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq clang-22 libclang-rt-22-dev
fi

echo "== configure + build slin-fuzz in $BUILD_DIR"
mkdir -p "$BUILD_DIR"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_C_COMPILER="$CLANG" -DCMAKE_CXX_COMPILER="${CLANG/clang/clang++}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_CXX_FLAGS="-include $ROOT/fuzz/ReleaseLLVMCompat.h" \
    -DSPLITLINEAR_ENABLE_SANITIZERS=ON -DSPLITLINEAR_STATIC_LLVM=OFF \
    -DSPLITLINEAR_ENABLE_CUDA=OFF \
    -DSPLITLINEAR_ENABLE_TORCH=OFF \
    -DSPLITLINEAR_BUILD_FUZZERS=ON \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >"$BUILD_DIR/fuzz-configure.log" 2>&1 ||
    { cat "$BUILD_DIR/fuzz-configure.log"; echo "fuzz: FAILED to configure"; exit 1; }
fi
build_start=$(date +%s)
if ! ninja -C "$BUILD_DIR" -j2 slin-fuzz >"$BUILD_DIR/fuzz-build.log" 2>&1; then
  grep -A20 "FAILED:" "$BUILD_DIR/fuzz-build.log" | head -40
  echo "fuzz: FAILED to build slin-fuzz (log: $BUILD_DIR/fuzz-build.log)"
  exit 1
fi
echo "build: $(( $(date +%s) - build_start )) s"

FUZZ="$BUILD_DIR/bin/slin-fuzz"
WORK="$BUILD_DIR/fuzz"
mkdir -p "$WORK/corpus" "$WORK/artifacts"
fuzz/make-corpus.sh "$WORK/seeds"

# Sanitizer settings: stop at the first report, symbolize, leaks on (each
# input builds and destroys its own MLIRContext, so whatever an input leaves
# allocated is a leak).
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:allocator_may_return_null=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1:symbolize=1}
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-22/bin/llvm-symbolizer}
export UBSAN_SYMBOLIZER_PATH=$ASAN_SYMBOLIZER_PATH

status=0
if compgen -G "fuzz/regressions/*" >/dev/null; then
  echo "== replaying $(ls fuzz/regressions | wc -l) reproducers of fixed findings"
  if ! "$FUZZ" fuzz/regressions/* >"$WORK/regressions.log" 2>&1; then
    tail -60 "$WORK/regressions.log"
    echo "fuzz: FAILED: a reproducer in fuzz/regressions/ fails again (log: $WORK/regressions.log)"
    exit 1
  fi
fi

echo "== fuzzing for $SECONDS_TO_FUZZ s"
LOG="$WORK/fuzz-$(date +%Y%m%d-%H%M%S).log"
before=$(ls "$WORK/artifacts" | wc -l)
fuzz_start=$(date +%s)
"$FUZZ" "$WORK/corpus" "$WORK/seeds" \
  -max_len=4096 -max_total_time="$SECONDS_TO_FUZZ" \
  -dict=fuzz/slin.dict -timeout=25 -rss_limit_mb=4096 -malloc_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$WORK/artifacts/" "$@" \
  >"$LOG" 2>&1 || status=$?

elapsed=$(( $(date +%s) - fuzz_start ))
fstat() { sed -n "s/^stat::$1: *//p" "$LOG" | tail -1; }
execs=$(fstat number_of_executed_units)
last=$(grep -E '^#[0-9]+' "$LOG" | tail -1 || true)
cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
corp=$(ls "$WORK/corpus" | wc -l)
new_artifacts=$(( $(ls "$WORK/artifacts" | wc -l) - before ))
echo "== summary"
echo "executions: ${execs:-?} in $elapsed s (${execs:+$(( execs / (elapsed > 0 ? elapsed : 1) ))} exec/s)"
echo "coverage: ${cov:-?} edges, ${ft:-?} features; corpus: $corp inputs (+ $(ls "$WORK/seeds" | wc -l) seeds)"
grep "^slin-fuzz: [0-9]* inputs" "$LOG" | tail -1 || true
echo "log: $LOG"
if [ "$status" -eq 72 ] && [ "$new_artifacts" -eq 0 ]; then
  echo "fuzz: FAILED: interrupted by a signal after $elapsed s (no finding)"
  exit 1
fi
if [ "$status" -ne 0 ] || [ "$new_artifacts" -gt 0 ]; then
  grep -E "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|Assertion|slin-fuzz: pass|deadly signal|SUMMARY:" "$LOG" | head -20 || true
  ls -t "$WORK/artifacts" | head -"$(( new_artifacts > 0 ? new_artifacts : 1 ))" |
    sed "s|^|reproduce: $FUZZ $WORK/artifacts/|"
  echo "fuzz: FAILED: $new_artifacts finding(s) (libFuzzer exit status $status)"
  exit 1
fi
echo "fuzz: OK: no findings in ${execs:-?} executions ($elapsed s)"

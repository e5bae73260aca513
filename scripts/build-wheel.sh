#!/usr/bin/env bash
# Builds the splitlinear wheel into DIR (default: dist/):
#   splitlinear-<version>-py3-none-manylinux_2_36_x86_64.whl
#
# usage: bash scripts/build-wheel.sh [DIR]
#
# On Debian 12 with Debian's LLVM/MLIR 22 and the CUDA 13 toolkit (installs
# them with scripts/install-deps.sh). Steps:
#  1. scripts/build.sh into ${BUILD_DIR:-build}: LLVM and MLIR linked
#     statically (cmake/StaticLLVM.cmake), CUDA code for every architecture in
#     WHEEL_CUDA_ARCHITECTURES;
#  2. the three libraries, stripped, staged into splitlinear/lib/ of a copy of
#     python/ (with splitlinear/_build_info.py: the commit and architectures), with a RUNPATH that finds torch's libraries and the CUDA 13
#     runtime and cuBLASLt where the torch wheel installs them
#     (site-packages/nvidia/cu13/lib), as libtorch_cuda.so does;
#  3. a py3-none-linux_x86_64 wheel (python/setup.py), then auditwheel repair:
#     OpenBLAS and the few system libraries it needs are bundled, the libraries
#     the torch wheel provides are not;
#  4. checks: one wheel, no libLLVM/libMLIR in NEEDED or RUNPATH, size.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=$(realpath -m "${1:-dist}")
BUILD_DIR=${BUILD_DIR:-build}
# Ampere, Ada, Hopper (sm_90a: the arch-specific features), Blackwell data
# center and consumer, plus PTX of the newest for GPUs after it. Each
# architecture adds about 3.5 MB to the wheel.
WHEEL_CUDA_ARCHITECTURES=${WHEEL_CUDA_ARCHITECTURES:-"80-real;89-real;90a-real;100-real;120"}
# Provided by the torch wheel (and its nvidia-* dependencies) at run time.
EXCLUDES=(libtorch.so libtorch_cpu.so libtorch_cuda.so libtorch_python.so
          libc10.so libc10_cuda.so 'libcudart.so.*' 'libcublasLt.so.*' 'libcublas.so.*')
# Relative to site-packages/splitlinear/lib.
RUNPATH='$ORIGIN:$ORIGIN/../../torch/lib:$ORIGIN/../../nvidia/cu13/lib'

bash scripts/install-deps.sh
bash scripts/build.sh -DSPLITLINEAR_STATIC_LLVM=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$WHEEL_CUDA_ARCHITECTURES"

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
cp -r python "$STAGE/python"
rm -rf "$STAGE/python/tests" "$STAGE"/python/*.egg-info "$STAGE/python/build"
find "$STAGE/python" -name __pycache__ -prune -exec rm -rf {} +
# What the wheel was built from, for the benchmarks' environment header
# (bench/common.py): the commit (+dirty with uncommitted changes) and the
# CUDA architectures.
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$COMMIT" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  COMMIT="$COMMIT+dirty"
fi
cat > "$STAGE/python/splitlinear/_build_info.py" <<PYEOF
"""How this wheel was built (written by scripts/build-wheel.sh)."""

COMMIT = "$COMMIT"
CUDA_ARCHITECTURES = "$WHEEL_CUDA_ARCHITECTURES"
PYEOF
mkdir -p "$STAGE/python/splitlinear/lib"
for lib in libsplitlinear_c.so libsplitlinear_runtime.so libsplitlinear_torch.so; do
  if [ ! -f "$BUILD_DIR/lib/$lib" ]; then
    echo "build-wheel: $BUILD_DIR/lib/$lib was not built (is torch importable?)" >&2
    exit 1
  fi
  cp "$BUILD_DIR/lib/$lib" "$STAGE/python/splitlinear/lib/"
  strip --strip-unneeded "$STAGE/python/splitlinear/lib/$lib"
done

python3 -m build --wheel --no-isolation --outdir "$STAGE/raw" "$STAGE/python" > "$STAGE/build.log" 2>&1 ||
  { tail -40 "$STAGE/build.log" >&2; exit 1; }
EXCLUDE_ARGS=()
for e in "${EXCLUDES[@]}"; do EXCLUDE_ARGS+=(--exclude "$e"); done
mkdir -p "$OUT_DIR"
rm -f "$OUT_DIR"/splitlinear-*.whl
python3 -m auditwheel repair "${EXCLUDE_ARGS[@]}" --wheel-dir "$OUT_DIR" "$STAGE"/raw/*.whl

# auditwheel keeps only RUNPATH entries inside the wheel; torch's and the CUDA
# libraries' folders are outside it, so they are added again, after its own.
WHEEL=$(ls "$OUT_DIR"/splitlinear-*.whl)
python3 -m wheel unpack --dest "$STAGE/fix" "$WHEEL" > /dev/null
UNPACKED=$(ls -d "$STAGE"/fix/splitlinear-*)
for so in "$UNPACKED"/splitlinear/lib/*.so; do
  rpath=$(patchelf --print-rpath "$so")
  IFS=: read -ra entries <<< "$RUNPATH"
  for entry in "${entries[@]}"; do
    case ":$rpath:" in *":$entry:"*) ;; *) rpath=${rpath:+$rpath:}$entry ;; esac
  done
  patchelf --set-rpath "$rpath" "$so"
done
rm -f "$WHEEL"
python3 -m wheel pack --dest-dir "$OUT_DIR" "$UNPACKED" > /dev/null
WHEEL=$(ls "$OUT_DIR"/splitlinear-*.whl)

# Nothing may need LLVM or MLIR at run time.
bad=0
for so in $(find "$UNPACKED" -name '*.so*' -type f); do
  if readelf -d "$so" | grep -E "NEEDED|RUNPATH|RPATH" | grep -iE "llvm|mlir"; then
    echo "build-wheel: $so depends on LLVM/MLIR" >&2; bad=1
  fi
done
[ "$bad" = 0 ]
# 60 MB: what a user downloads per install (torch's own wheel aside).
size_mb=$(( $(stat -c %s "$WHEEL") / 1000000 ))
echo "build-wheel: $(basename "$WHEEL"): $size_mb MB"
if [ "$size_mb" -gt 60 ]; then
  echo "build-wheel: the wheel is over 60 MB" >&2
  exit 1
fi
for so in "$UNPACKED"/splitlinear/lib/*.so; do
  echo "  $(basename "$so"): RUNPATH $(patchelf --print-rpath "$so")"
done

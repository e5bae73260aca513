#!/usr/bin/env bash
# Configures and builds splitlinear into ${BUILD_DIR:-build} with 2 jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
EXTRA=()
# ccache (installed by install-deps.sh) with paths relative to the checkout, so
# a second clone (CI's) reuses the first one's objects: the CUDA code for five
# architectures is 70 % of a clean build's compile time.
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  EXTRA+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
          -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
if [ -x /usr/local/cuda/bin/nvcc ]; then
  EXTRA+=(-DCUDAToolkit_ROOT=/usr/local/cuda -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
cmake -S . -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  "${EXTRA[@]}" "$@"
ninja -C "$BUILD_DIR" -j2

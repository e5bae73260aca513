#!/usr/bin/env bash
# Configures and builds splitlinear into ${BUILD_DIR:-build} with 2 jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
EXTRA=()
if [ -x /usr/local/cuda/bin/nvcc ]; then
  EXTRA+=(-DCUDAToolkit_ROOT=/usr/local/cuda -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
cmake -S . -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  "${EXTRA[@]}" "$@"
ninja -C "$BUILD_DIR" -j2

#!/usr/bin/env bash
# Host emulation of the decode GEMM kernels (emu.cpp): turns
# lib/Runtime/DecodeGemmKernels.cu into host code (the mma.sync asm becomes
# emuMma; the launchers are dropped), builds it with AddressSanitizer and runs
# it. No GPU needed; about 5 s. Exit status 0 when every case passes.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../../.. && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 - "$ROOT/lib/Runtime/DecodeGemmKernels.cu" "$WORK/kernels.inc" <<'PY'
import sys
s = open(sys.argv[1]).read()
a = s.index('#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890\n  asm("mma')
b = s.index('#endif', a) + len('#endif')
s = s[:a] + '  emuMma(d, a0, a1, a2, a3, b0, b1);' + s[b:]
s = s[:s.index('template <int MT, int NT, typename T>\ncudaError_t launchTyped(')]
s = s.replace('namespace {\n', '', 1) + '} // namespace cuda\n} // namespace slinrt\n'
open(sys.argv[2], 'w').write(s)
PY
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
g++ -std=c++20 -O1 -g -fsanitize=address -pthread -I"$WORK" -I. -I"$CUDA_INC" \
  -I"$ROOT/lib/Runtime" -I"$ROOT/include" emu.cpp -o "$WORK/emu"
"$WORK/emu"

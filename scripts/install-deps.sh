#!/usr/bin/env bash
# Installs what building and testing splitlinear needs on a fresh Debian 12
# machine (as root): LLVM/MLIR 22, lit/FileCheck, ninja, OpenBLAS, GoogleTest,
# and the Python packages of the torch integration. Idempotent.
set -euo pipefail

APT_PACKAGES=(cmake ninja-build g++ llvm-22-dev llvm-22-tools libmlir-22-dev
              mlir-22-tools libopenblas-dev libgtest-dev)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}"
fi

if [ "${SPLITLINEAR_SKIP_PYTHON:-0}" != 1 ]; then
  # torch pinned to the version of the GPU machine.
  python3 -m pip install -q --disable-pip-version-check -r python/requirements.txt
  # The package itself (editable): registers the torch_dynamo_backends entry
  # point, so backend="splitlinear" works without an import.
  python3 -m pip install -q --disable-pip-version-check --no-deps -e python
fi

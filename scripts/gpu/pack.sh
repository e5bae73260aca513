#!/usr/bin/env bash
# Packs what the GPU machine needs and cannot build (it has no MLIR and no
# package registry) into .carry/: the wheel from scripts/build-wheel.sh
# (.carry/splitlinear-*.whl), the native test executables, which the wheel
# does not ship (.carry/gpu-tests.tar.xz: the runtime's unit tests and the C
# API test), and the peers' wheels (.carry/wheels). Run after scripts/build-wheel.sh; carry `.carry` with the device
# tool and run scripts/gpu/run.sh there.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build}
WHEEL_DIR=${WHEEL_DIR:-dist}
mkdir -p .carry
rm -f .carry/splitlinear-*.whl .carry/gpu-tests.tar.xz
cp "$WHEEL_DIR"/splitlinear-*.whl .carry/
# The tree's commit for the results' header (the GPU machine's copy of .git may be stale).
echo "$(git rev-parse --short HEAD)$(git status --porcelain --untracked-files=no | grep -q . && echo +dirty)" \
  > .carry/tree-commit
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin"
cp "$BUILD_DIR"/bin/SplitLinearRuntimeTests "$BUILD_DIR"/bin/splitlinear-capi-test "$STAGE/bin/"
strip --strip-unneeded "$STAGE"/bin/*
tar -C "$STAGE" -cf - . | xz -3 -T2 > .carry/gpu-tests.tar.xz
# torchao, the benchmarks' peer, and pytest-xdist's two wheels, for a machine
# without a registry (run.sh installs what is missing); the wheels are
# pure-Python or abi3, so one download serves Python 3.12.
mkdir -p .carry/wheels
python3 -m pip download -q --no-deps --dest .carry/wheels --python-version 3.12 \
  --platform manylinux_2_28_x86_64 --only-binary=:all: torchao==0.18.0 pytest-xdist execnet \
  || echo "pack.sh: no registry here; the benchmarks skip torchao where the GPU machine lacks it"
ls -la .carry/

#!/usr/bin/env bash
# The test command: installs dependencies, builds, checks that docs/generated
# is current, and runs every test (lit + FileCheck, GoogleTest through ctest,
# pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
echo "== docs/generated"
BUILD_DIR="$BUILD_DIR" bash scripts/check-docs.sh
echo "== lit"
ninja -C "$BUILD_DIR" check-splitlinear
echo "== ctest"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2
if [ -d python/tests ]; then
  echo "== pytest"
  SPLITLINEAR_REQUIRE_OP=1 SPLITLINEAR_BUILD_DIR="$PWD/$BUILD_DIR" python3 -m pytest -q python/tests
fi

#!/usr/bin/env bash
# The test command: installs dependencies, builds once (the wheel's build:
# scripts/build-wheel.sh), checks that docs/generated is current, runs the C++
# unit tests (ctest) in the build tree, then installs the wheel into a fresh
# venv and tests the installed package from outside the source tree: the lit
# suite with the wheel's splitlinear-opt, and pytest (2 workers).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export BUILD_DIR=${BUILD_DIR:-build}
WHEEL_DIR=${WHEEL_DIR:-$ROOT/dist}
SECONDS=0

bash scripts/build-wheel.sh "$WHEEL_DIR"
echo "== built in ${SECONDS} s"

echo "== docs/generated"
bash scripts/check-docs.sh
echo "== ctest"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2

echo "== the installed wheel"
# An editable install of the source tree would shadow the wheel (its import
# finder runs before the venv's site-packages): the wheel is what is tested.
if python3 -m pip show -q splitlinear > /dev/null 2>&1; then
  python3 -m pip uninstall -q -y splitlinear
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# torch (2.5 GB with its CUDA libraries) comes from the system site-packages.
python3 -m venv --system-site-packages "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --no-deps --no-index "$WHEEL_DIR"/splitlinear-*.whl
# No source tree and no SPLITLINEAR_* variable: what a user has.
for v in $(env | grep -o '^SPLITLINEAR_[A-Z_]*' || true); do unset "$v"; done
cd "$WORK"
"$WORK/venv/bin/python" - <<'EOF'
import pathlib, sys, torch, splitlinear, splitlinear.ops
where = pathlib.Path(splitlinear.__file__).resolve()
assert where.is_relative_to(pathlib.Path(sys.prefix).resolve()), f"splitlinear imported from {where}"
print(f"splitlinear from {where.parent}, op library {splitlinear._library.load_library()}")
EOF

echo "== lit (the wheel's splitlinear-opt)"
/usr/lib/llvm-22/bin/lit -sv "$ROOT/$BUILD_DIR/test" -Dsplitlinear_opt="$WORK/venv/bin/splitlinear-opt"

echo "== pytest (the installed package)"
SPLITLINEAR_REQUIRE_OP=1 TORCHINDUCTOR_CACHE_DIR="$WORK/inductor" \
  "$WORK/venv/bin/python" -m pytest -q -n 2 -p no:cacheprovider \
  --rootdir "$ROOT/python" -c "$ROOT/python/pyproject.toml" "$ROOT/python/tests"
echo "== tests done in ${SECONDS} s"

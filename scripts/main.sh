#!/usr/bin/env bash
# The main job: installs, builds, and runs the real-model example
# (examples/real_models.py) on CPU (pass --device cuda on a GPU machine).
# Writes the report as JSON too.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
SPLITLINEAR_BUILD_DIR="$PWD/${BUILD_DIR:-build}" PYTHONPATH="$PWD/python" \
  python3 examples/real_models.py --json "${REPORT:-splitlinear-report.json}" "$@"

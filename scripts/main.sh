#!/usr/bin/env bash
# The main job: installs, builds the wheel (scripts/build-wheel.sh), installs
# it as a user would (pip, into this Python), and runs the real-model example
# (examples/real_models.py) on CPU (pass --device cuda on a GPU machine)
# against the installed package. Writes the report as JSON too.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEEL_DIR=${WHEEL_DIR:-dist}
bash scripts/build-wheel.sh "$WHEEL_DIR"
python3 -m pip install -q --disable-pip-version-check --no-deps --force-reinstall \
  "$WHEEL_DIR"/splitlinear-*.whl
python3 examples/real_models.py --json "${REPORT:-splitlinear-report.json}" "$@"

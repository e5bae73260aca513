#!/usr/bin/env bash
# Checks that the committed dialect and pass references in docs/generated are
# what the ODS definitions generate: rebuilds them with the `splitlinear-doc`
# target (docs/CMakeLists.txt: mlir-doc, then a copy into docs/generated) and
# fails if git then sees a change there. Needs a configured build directory
# (${BUILD_DIR:-build}); scripts/test.sh runs it after the build.
# CHECK_DOCS_BUILD=0 skips the rebuild and only compares (for a dry run).
# Then re-renders the tables of docs/Performance.md from bench/results/<gpu>/
# (bench/report.py --check, no plots, no GPU) and fails if one differs.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

if ! git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  echo "check-docs: not a git checkout, nothing to compare against; skipped"
  exit 0
fi

if [ "${CHECK_DOCS_BUILD:-1}" != 0 ]; then
  ninja -C "$BUILD_DIR" splitlinear-doc
fi

# A changed or a new file (a new pass reference) both mean the commit is stale.
untracked=$(git ls-files --others --exclude-standard -- docs/generated)
if ! git --no-pager diff --exit-code --stat -- docs/generated >&2 || [ -n "$untracked" ]; then
  [ -z "$untracked" ] || echo "new, not committed: $untracked" >&2
  echo "error: docs/generated is not what the ODS definitions generate;" \
       "run 'ninja -C $BUILD_DIR splitlinear-doc' and commit docs/generated" >&2
  exit 1
fi
echo "check-docs: docs/generated is current"

PYTHON=${PYTHON:-python3}
"$PYTHON" bench/report.py --check --doc docs/Performance.md  # the results of report.DEFAULT_RESULTS

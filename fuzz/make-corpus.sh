#!/usr/bin/env bash
# Builds the seed corpus of slin-fuzz: every .mlir file under test/ split at
# `// -----` (as -split-input-file does), full-line `//` comments (RUN/CHECK
# lines, expected-* annotations) dropped, empty chunks skipped; plus the
# hand-written seeds in fuzz/seeds/. One file per chunk, named after its
# source (test/Dialect/Slin/invalid.mlir chunk 3 -> Dialect_Slin_invalid.3.mlir).
#
# usage: fuzz/make-corpus.sh OUT_DIR
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT=${1:?usage: fuzz/make-corpus.sh OUT_DIR}
rm -rf "$OUT"
mkdir -p "$OUT"
find "$ROOT/test" -name '*.mlir' | sort | while read -r f; do
  rel=${f#"$ROOT/test/"}
  awk -v out="$OUT/$(echo "${rel%.mlir}" | tr '/' '_')" '
    function flush() {
      if (chunk ~ /[^ \t\n]/) { file = out "." n ".mlir"; printf "%s", chunk > file; close(file) }
      chunk = ""; n++
    }
    BEGIN { n = 0; chunk = "" }
    /^\/\/ -----/ { flush(); next }
    /^[ \t]*\/\// { next }
    { chunk = chunk $0 "\n" }
    END { flush() }
  ' "$f"
done
if [ -d "$ROOT/fuzz/seeds" ]; then
  cp "$ROOT"/fuzz/seeds/*.mlir "$OUT"/ 2>/dev/null || true
fi
echo "seed corpus: $(ls "$OUT" | wc -l) inputs in $OUT"

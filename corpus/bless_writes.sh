#!/usr/bin/env bash
# Goldens for the write side: runs every write operation on every valid corpus file
# (examples/write_ops.rs, deterministic ids and clock), then dumps each resulting file
# with pi 1.6.0's own SessionManager into corpus/golden/writes/<stem>/<file>.json.
# (--compact --tree flat: one line each, and deep trees stay small).
# Run from the repository root: corpus/bless_writes.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ORACLE_DIR="${ORACLE_DIR:-../shared/oracle}"
# A fixed folder: branched and forked headers name files by absolute path, and
# tests/it/writes.rs recreates them in this same folder.
out="${TMPDIR:-/tmp}/pi-session-write-goldens"
rm -rf "$out"
trap 'rm -rf "$out"' EXIT
rm -rf corpus/golden/writes
cargo run --release --quiet --example write_ops -- "$out" | while IFS=$'\t' read -r stem file; do
  mkdir -p "corpus/golden/writes/$stem"
  TZ=UTC timeout 60 node "$ORACLE_DIR/dump.mjs" "$file" --compact --tree flat \
    > "corpus/golden/writes/$stem/$(basename "$file" .jsonl).json"
done
echo "goldens: $(find corpus/golden/writes -name '*.json' | wc -l)"

#!/usr/bin/env bash
# Expected Markdown and HTML of `pi-session export` (tests/it/export.rs), from the binary as
# built now: run after a change of the export's format, then read the diff.
# Run from the repository root: corpus/export/bless.sh [PI_SESSION_BINARY]
set -euo pipefail
bin=${1:-target/release/pi-session}
out=corpus/golden/export
for case in export/hostile valid/all-entry-types valid/branches; do
  name=$(basename "$case")
  "$bin" export "corpus/$case.jsonl" --format md > "$out/$name.md"
  "$bin" export "corpus/$case.jsonl" --format html > "$out/$name.html"
done
"$bin" export corpus/export/hostile.jsonl --format md --thinking > "$out/hostile-thinking.md"

#!/usr/bin/env bash
# Seed and run one fuzz target.
#
# usage: fuzz/run.sh TARGET SECONDS [extra libFuzzer flags...]
#
# Environment:
#   CARGO_TARGET_DIR  build directory (default /work/fuzz-target, outside the repo)
#   FUZZ_SANITIZER    none (default: the crate is #![deny(unsafe_code)], so ASan mostly
#                     costs speed) or address
#   KEEP_GOING=1      fork mode: keep fuzzing after a crash/timeout/OOM (artifacts are
#                     still written to fuzz/artifacts/TARGET/)
#   PI_FUZZ_TREE_GUARD=0  disable the exponential-tree workaround (see README)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=${1:?usage: run.sh TARGET SECONDS [flags]}
secs=${2:?usage: run.sh TARGET SECONDS [flags]}
shift 2
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/work/fuzz-target}
export RUSTC_BOOTSTRAP=1   # cargo-fuzz needs -Z flags; stable rustc accepts them with this
sanitizer=${FUZZ_SANITIZER:-none}

case $target in
  open_session)  max_len=1048576 ;;
  split_lines)   max_len=262144 ;;
  header_parser) max_len=65536 ;;
  parent_links)  max_len=131072 ;;
  structural)    max_len=65536 ;;
  listing_walk)  max_len=131072 ;;
  verbatim_twin) max_len=65536 ;;
  decode_twin)   max_len=65536 ;;
  context_twin)  max_len=262144 ;;
  listing_cache) max_len=65536 ;;
  search)        max_len=65536 ;;
  usage)         max_len=4096 ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac

python3 "$here/seed.py" "$target"
mkdir -p "$here/artifacts/$target"

flags=(
  -max_total_time="$secs"
  -timeout=10
  -rss_limit_mb=2048
  -malloc_limit_mb=2048
  -max_len="$max_len"
  -print_final_stats=1
  -detect_leaks=0
)
if [[ ${KEEP_GOING:-0} == 1 ]]; then
  flags+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
fi

cd "$here"
exec cargo fuzz run -O -a -s "$sanitizer" --target-dir "$CARGO_TARGET_DIR" \
  "$target" "$here/corpus/$target" -- "${flags[@]}" "$@"

#!/bin/sh
# One run that times pi-session against pi 1.6.0 and wc -l, whole process against whole
# process, page cache warm, and prints the ratios:
#   1. `pi-session check` vs `node bench.mjs open` vs `wc -l`, and `context --json` vs `cat`,
#      on three 1 GiB generated sessions: the realistic shape, the image-heavy one
#      (`gen session --shape image-heavy`) and the small-entries one;
#   2. index throughput, one thread, against simdjson on the same bytes, one parse per line
#      (benches/simdjson/, Debian's libsimdjson-dev; skipped with a message without it), on
#      the realistic, image-heavy and small-entries shapes;
#   3. `pi-session ls --all --json` vs pi's listAll on 10,000 sessions (benches/compare_listing.sh;
#      SKIP_LISTING=1 skips it);
#   4. `pi-session search` vs ripgrep on the same 10,000 sessions (benches/compare_search.sh:
#      a common literal, a case-insensitive regex, a phrase with a quote and a line break,
#      and the twin check of each; SKIP_SEARCH=1 skips it).
#
#   benches/compare.sh [DATA_DIR] [REPS]
#
# DATA_DIR (default /work/bench-data) receives the generated inputs (~8 GB; delete when done).
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-/work/bench-data}
reps=${2:-3}
oracle=${PI_ORACLE_DIR:-$repo/../shared/oracle}
target=${CARGO_TARGET_DIR:-$repo/target}
mkdir -p "$data"
cargo build --quiet --release --manifest-path "$repo/Cargo.toml" --bin pi-session
bin=$target/release/pi-session

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() { # prints seconds of one run of "$@"
	s=$(date +%s.%N); "$@" > /dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc -l
}
# compare LABEL FILE: check vs wc -l vs pi's open on one file.
compare() {
	label=$1 big=$2
	# Interleaved, each run right after reading the file (this VM's DAMON reclaim evicts
	# idle page-cache pages), so both see the same machine and a warm cache.
	: >/tmp/compare.ours.$$
	: >/tmp/compare.wc.$$
	: >/tmp/compare.ctx.$$
	: >/tmp/compare.cat.$$
	for i in $(seq "$reps"); do
		cat "$big" > /dev/null
		timeit "$bin" check "$big" >>/tmp/compare.ours.$$
		cat "$big" > /dev/null
		timeit wc -l "$big" >>/tmp/compare.wc.$$
		cat "$big" > /dev/null
		timeit "$bin" context --json "$big" >>/tmp/compare.ctx.$$
		timeit cat "$big" >>/tmp/compare.cat.$$
	done
	ours=$(median </tmp/compare.ours.$$)
	wc=$(median </tmp/compare.wc.$$)
	ctx=$(median </tmp/compare.ctx.$$)
	cat=$(median </tmp/compare.cat.$$)
	rm -f /tmp/compare.ours.$$ /tmp/compare.wc.$$ /tmp/compare.ctx.$$ /tmp/compare.cat.$$
	cat "$big" > /dev/null
	pi=$(node --expose-gc "$oracle/bench.mjs" open "$big" --reps "$reps" | awk -F': ' '/^open_context_ms_median/ {print $2/1000}')
	printf '1 GiB session, %s (%s):\n' "$label" "$big"
	printf '  pi-session check   %8.3f s\n  wc -l              %8.3f s\n  pi open+context    %8.3f s (in-process, node start-up excluded)\n' "$ours" "$wc" "$pi"
	printf '  pi / pi-session    %8.1fx\n  wc / pi-session    %8.2fx\n' "$(echo "$pi / $ours" | bc -l)" "$(echo "$wc / $ours" | bc -l)"
	printf '  context --json     %8.3f s\n  cat > /dev/null    %8.3f s\n  context / cat      %8.2fx\n' "$ctx" "$cat" "$(echo "$ctx / $cat" | bc -l)"
	echo
}
# The realistic shape, and the image-heavy one (the current branch holds the images and
# big tool outputs, ~90% of the bytes in the leaf's context, no compaction).
[ -f "$data/g1.jsonl" ] || "$bin" gen session "$data/g1.jsonl" --size 1G --seed 7
[ -f "$data/ih1.jsonl" ] || "$bin" gen session "$data/ih1.jsonl" --size 1G --seed 7 --shape image-heavy
[ -f "$data/small1.jsonl" ] || "$bin" gen session "$data/small1.jsonl" --size 1G --seed 7 --shape small-entries
compare realistic "$data/g1.jsonl"
compare image-heavy "$data/ih1.jsonl"
compare small-entries "$data/small1.jsonl"

# simdjson against the index, one thread, GB/s, the same bytes (the file held in memory;
# simdjson parses each line in place, its padding after it; the faster of DOM and a full
# On-Demand walk counts).
if sj=$("$repo/benches/simdjson/build.sh" "$target/simdjson_lines" 2>&1); then
	cargo build --quiet --release --manifest-path "$repo/Cargo.toml" --features aids --example profile_index_speed
	echo "Index vs simdjson, one thread, GB/s (best of $reps):"
	printf '  %-14s %10s %10s %8s\n' shape simdjson index ratio
	for shape in realistic:g1 image-heavy:ih1 small-entries:small1; do
		f=$data/${shape#*:}.jsonl
		s=$("$sj" "$f" "$reps" | awk '{for (i = 1; i <= NF; i++) if ($i == "GB/s") print $(i-1)}' | sort -n | tail -1)
		i=$("$target/release/examples/profile_index_speed" "$f" "$reps" | awk '/^1 thread/ {print $(NF-1)}')
		printf '  %-14s %10s %10s %7.2fx\n' "${shape%%:*}" "$s" "$i" "$(echo "$i / $s" | bc -l)"
	done
	echo
else
	echo "simdjson comparison skipped: $sj"
	echo
fi
if [ -n "${SKIP_LISTING:-}" ]; then
	echo "listing comparison skipped (SKIP_LISTING is set)"
else
	"$repo/benches/compare_listing.sh" "$data/listing-10k" "$reps"
fi
if [ -n "${SKIP_SEARCH:-}" ]; then
	echo "search comparison skipped (SKIP_SEARCH is set)"
else
	# The acceptance corpus of `search` (deterministic; ~2.9 GB).
	[ -d "$data/search-10k/sessions" ] ||
		"$bin" gen tree "$data/search-10k/sessions" --sessions 10000 --folders 200 --size 2900M
	"$repo/benches/compare_search.sh" "$data/search-10k/sessions" "$reps"
fi

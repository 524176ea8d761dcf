#!/bin/sh
# The listing cache (issue #15) on 10,000 sessions: a cold list (no cache, and filling an
# empty one), a warm re-list of the unchanged tree, and a re-list after 1% of the files
# changed, against pi 1.6.0's listAll and ccusage's pi report, whole process against whole
# process, interleaved in one run; then the changed tree's listing against pi's, field by
# field.
#
#   benches/compare_listing_cache.sh [DATA_DIR] [REPS]
#
# DATA_DIR (default /work/bench-data/listing-10k) holds DATA_DIR/sessions as
# benches/compare_listing.sh makes it (generated when missing); the changes are made to a
# copy, DATA_DIR/changed (2.9 GB more; delete it when done). ccusage's pi report
# (`@ccusage/pi session --json`) is installed into DATA_DIR/ccusage with npm when it can be;
# without it its column says so. Medians of REPS (default 3) runs, each after a pause of
# SETTLE seconds (default 3) with the session files read right before it (warm page cache).
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-/work/bench-data/listing-10k}
reps=${2:-3}
settle=${SETTLE:-3}
oracle=${PI_ORACLE_DIR:-$repo/../shared/oracle}
[ -f "$oracle/bench.mjs" ] || oracle=/work/shared/oracle
target=${CARGO_TARGET_DIR:-$repo/target}
cargo build --quiet --release --manifest-path "$repo/Cargo.toml" --bin pi-session
bin=$target/release/pi-session
if [ ! -d "$data/sessions" ]; then
	"$bin" gen tree "$data/sessions" --sessions 10000 --folders 200 --size 2900000000
fi
ccusage=$data/ccusage/node_modules/.bin/ccusage-pi
if [ ! -x "$ccusage" ] && command -v npm >/dev/null 2>&1; then
	mkdir -p "$data/ccusage"
	(cd "$data/ccusage" && npm install --silent --no-audit --no-fund @ccusage/pi@18.0.11 >/dev/null 2>&1) || true
fi
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
warm() { find -L "$1" -mindepth 2 -maxdepth 2 -name '*.jsonl' -exec cat {} + >/dev/null; }
now() { date +%s.%N; }
# time_it NAME CMD...: run after the pause and the warm-up, append the seconds to NAME's list.
time_it() {
	name=$1
	shift
	sleep "$settle"
	warm "$data/sessions"
	t0=$(now)
	"$@" >/dev/null 2>&1 || true
	t1=$(now)
	eval "times_$name=\"\${times_$name:-} $(echo "$t1 - $t0" | bc -l)\""
}
median() { echo "$@" | tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# Unchanged tree: the warm cache is filled once, and its files are long still.
"$bin" ls --all --json --agent-dir "$data" --cache-dir "$cache/warm" >/dev/null
i=1
while [ "$i" -le "$reps" ]; do
	time_it nocache "$bin" ls --all --json --agent-dir "$data" --no-cache
	rm -rf "$cache/cold"
	time_it cold "$bin" ls --all --json --agent-dir "$data" --cache-dir "$cache/cold"
	time_it warm "$bin" ls --all --json --agent-dir "$data" --cache-dir "$cache/warm"
	time_it pi node --expose-gc "$oracle/bench.mjs" listall "$data/sessions" --reps 1
	if [ -x "$ccusage" ]; then
		time_it ccusage "$ccusage" session --json --piPath "$data/sessions"
	fi
	i=$((i + 1))
done
nocache=$(median $times_nocache)
cold=$(median $times_cold)
warm_t=$(median $times_warm)
pi=$(median $times_pi)
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
printf 'no cache (as before the cache): %.3f s\n' "$nocache"
printf 'cold, filling an empty cache: %.3f s (%.3fx the run without a cache)\n' "$cold" "$(echo "$cold / $nocache" | bc -l)"
printf 'warm, unchanged tree: %.3f s\n' "$warm_t"
printf 'pi listAll: %.3f s (%.1fx no cache, %.1fx cold, %.0fx warm)\n' "$pi" "$(echo "$pi / $nocache" | bc -l)" "$(echo "$pi / $cold" | bc -l)" "$(echo "$pi / $warm_t" | bc -l)"
if [ -n "${times_ccusage:-}" ]; then
	cc=$(median $times_ccusage)
	printf 'ccusage pi session --json: %.3f s (%.1fx no cache, %.0fx warm)\n' "$cc" "$(echo "$cc / $nocache" | bc -l)" "$(echo "$cc / $warm_t" | bc -l)"
else
	echo "ccusage: not installed (npm install @ccusage/pi@18.0.11 failed)"
fi

# 1% changed: on a copy, from a cache filled when every copied file had been still for
# longer than the racy window (2 s), with the texts; the timed re-list is `ls --all
# --json`, as the warm one, then a re-list with `--text`; both are held against pi's
# listAll of the changed tree.
if [ ! -d "$data/changed/sessions" ]; then
	mkdir -p "$data/changed"
	cp -a "$data/sessions" "$data/changed/sessions"
fi
sleep 3
"$bin" ls --all --json --text --agent-dir "$data/changed" --cache-dir "$cache/changed" >/dev/null
sleep 3
i=1
while [ "$i" -le "$reps" ]; do
	python3 "$repo/benches/mutate_tree.py" "$data/changed/sessions" "$(date +%s%N)" >"$cache/mutation"
	sleep "$settle"
	warm "$data/changed/sessions"
	t0=$(now)
	"$bin" ls --all --json --cache-stats --agent-dir "$data/changed" --cache-dir "$cache/changed" >"$cache/ours.jsonl" 2>"$cache/stats"
	t1=$(now)
	times_changed="${times_changed:-} $(echo "$t1 - $t0" | bc -l)"
	printf 'changed run %d: %.3f s; %s; %s\n' "$i" "$(echo "$t1 - $t0" | bc -l)" "$(grep bytes_to_read "$cache/mutation")" "$(grep '^cache:' "$cache/stats")"
	# The next run starts from a cache whose new entries are no longer racy.
	sleep 3
	i=$((i + 1))
done
printf 're-list after 1%% changed: %.3f s (%.0fx pi listAll of the unchanged tree)\n' "$(median $times_changed)" "$(echo "$pi / $(median $times_changed)" | bc -l)"
python3 "$repo/benches/listing_equals_pi.py" "$cache/ours.jsonl" "$data/changed/sessions" "$oracle"
"$bin" ls --all --json --text --cache-stats --agent-dir "$data/changed" --cache-dir "$cache/changed" >"$cache/ours-text.jsonl" 2>"$cache/stats"
echo "with --text: $(grep '^cache:' "$cache/stats")"
python3 "$repo/benches/listing_equals_pi.py" "$cache/ours-text.jsonl" "$data/changed/sessions" "$oracle"

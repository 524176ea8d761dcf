#!/bin/sh
# Times `pi-session ls --all --json` against pi 1.6.0's listAll over the same sessions,
# whole process against whole process, interleaved in one run, and prints the ratio.
#
#   benches/compare_listing.sh [DATA_DIR] [REPS]
#
# DATA_DIR (default /work/bench-data/listing-10k) gets DATA_DIR/sessions: 10,000 realistic
# sessions in 200 project folders, ~2.9 GB, written once by the project's generator
# (`pi-session gen tree`, src/generator/; delete DATA_DIR when done). The
# files are read right before each timed command (warm page cache). pi's side is
# `node --expose-gc ../shared/oracle/bench.mjs listall DATA_DIR/sessions --reps 1`, timed
# from outside, so node's start-up counts as ours does. Medians of REPS (default 3) runs;
# each timed command starts after a pause of SETTLE seconds (default 5).
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-/work/bench-data/listing-10k}
reps=${2:-3}
oracle=${PI_ORACLE_DIR:-$repo/../shared/oracle}
[ -f "$oracle/bench.mjs" ] || oracle=/work/shared/oracle
target=${CARGO_TARGET_DIR:-$repo/target}
sessions=${SESSIONS:-10000}
folders=${FOLDERS:-200}
bytes=${BYTES:-2900000000}
settle=${SETTLE:-5}

cargo build --quiet --release --manifest-path "$repo/Cargo.toml" --bin pi-session
bin=$target/release/pi-session
if [ ! -d "$data/sessions" ]; then
	echo "generating $sessions sessions in $folders folders (~$bytes bytes) into $data/sessions"
	"$bin" gen tree "$data/sessions" --sessions "$sessions" --folders "$folders" --size "$bytes"
fi
files=$(find -L "$data/sessions" -mindepth 2 -maxdepth 2 -name '*.jsonl' | wc -l)
mb=$(du -smL "$data/sessions" | cut -f1)
echo "data: $files files, $mb MB in $data/sessions"
# This VM's DAMON reclaim evicts page-cache pages left idle for a few seconds (a run after
# a pause showed ~200 major faults), so the files are read again right before each timed
# command, for both sides alike.
warm() { find -L "$data/sessions" -mindepth 2 -maxdepth 2 -name '*.jsonl' -exec cat {} + >/dev/null; }

now() { date +%s.%N; }
ours_times=""
pi_times=""
i=1
while [ "$i" -le "$reps" ]; do
	# Both sides start after the same pause, so neither runs on the heels of the other's
	# load (this shared VM slows down for a while after sustained use).
	sleep "$settle"
	warm
	t0=$(now)
	"$bin" ls --all --json --agent-dir "$data" >/tmp/compare_listing.ours.$$ 2>/dev/null
	t1=$(now)
	sleep "$settle"
	warm
	t2=$(now)
	node --expose-gc "$oracle/bench.mjs" listall "$data/sessions" --reps 1 >/tmp/compare_listing.pi.$$ 2>&1
	t3=$(now)
	o=$(echo "$t1 - $t0" | bc -l)
	p=$(echo "$t3 - $t2" | bc -l)
	printf 'run %d: pi-session %.3f s, pi %.3f s (ratio %.1fx)\n' "$i" "$o" "$p" "$(echo "$p / $o" | bc -l)"
	ours_times="$ours_times $o"
	pi_times="$pi_times $p"
	i=$((i + 1))
done
median() { echo "$@" | tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mo=$(median $ours_times)
mp=$(median $pi_times)
listed_ours=$(wc -l </tmp/compare_listing.ours.$$)
listed_pi=$(sed -n 's/^sessions_listed: //p' /tmp/compare_listing.pi.$$)
inproc=$(sed -n 's/^list_ms_median: //p' /tmp/compare_listing.pi.$$)
rm -f /tmp/compare_listing.ours.$$ /tmp/compare_listing.pi.$$
echo "sessions listed: pi-session $listed_ours, pi $listed_pi"
echo "pi listAll in-process (last run): $inproc ms"
printf 'median whole process: pi-session %.3f s, pi %.3f s\n' "$mo" "$mp"
printf 'ratio (pi / pi-session): %.1fx\n' "$(echo "$mp / $mo" | bc -l)"
[ "$listed_ours" = "$listed_pi" ] || { echo "session counts differ" >&2; exit 1; }

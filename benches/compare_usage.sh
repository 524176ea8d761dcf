#!/bin/sh
# `pi-session usage daily --json` against ccusage's `ccusage pi daily --json --offline` over
# a sessions root, whole process against whole process, page cache warm, runs interleaved,
# medians and peak memory; then what each counted.
#
#   benches/compare_usage.sh ROOT [RUNS]
#
# ROOT: a sessions root (`pi-session gen tree ROOT --sessions 10000 --folders 200 --size 2900M`
# is the acceptance corpus); RUNS (default 5).
#
# ccusage comes from npm (20.0.24: the newest whose Linux binary the registry serves here),
# installed once into $CCUSAGE_HOME (default ~/.cache/pi-session-ccusage). It runs with an
# empty HOME (no config) and --pi-path ROOT, days in UTC on both sides.
#
# pi-session is timed twice: "cold", with an empty cache folder each run (every file read,
# the cache written), and "cached", the same command again over the unchanged tree (the
# per-file records read from the cache, no session opened).
#
# The totals differ by design: ccusage counts only assistant messages (not tool results'
# usage, summaries or `usage` entries) and drops what it cannot date; pi-session counts
# every source once. The last lines print both, and pi-session's assistant-only total.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:?usage: benches/compare_usage.sh ROOT [RUNS]}
runs=${2:-5}
target=${CARGO_TARGET_DIR:-$repo/target}
cc_home=${CCUSAGE_HOME:-$HOME/.cache/pi-session-ccusage}
command -v npm >/dev/null || { echo "needs node and npm (apt-get install nodejs npm)"; exit 1; }
if [ ! -x "$cc_home/node_modules/.bin/ccusage" ]; then
	mkdir -p "$cc_home"
	(cd "$cc_home" && npm init -y >/dev/null && npm install --no-audit --no-fund --loglevel=error ccusage@20.0.24 >/dev/null)
fi
cc=$cc_home/node_modules/.bin/ccusage
cargo build --quiet --release --manifest-path "$repo/Cargo.toml" --bin pi-session
bin=$target/release/pi-session
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/home"

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, $(free -g | awk '/^Mem:/ {print $2}') GB"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "pi-session: ${PI_SESSION_REV:-$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo "?")}; ccusage $("$cc" --version 2>/dev/null | head -1)"
echo "root: $root, $(find "$root" -name '*.jsonl' | wc -l) files, $(du -sb "$root" | cut -f1) bytes; $runs runs each"
echo

warm() { find "$root" -name '*.jsonl' -exec cat {} + >/dev/null; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# time_it NAME CMD...: wall seconds and peak RSS (KB) appended to $tmp/NAME.
time_it() {
	name=$1
	shift
	/usr/bin/time -f "%e %M" -o "$tmp/t" "$@" >"$tmp/$name.json" 2>/dev/null
	cat "$tmp/t" >>"$tmp/$name"
}
i=0
while [ "$i" -lt "$runs" ]; do
	warm
	time_it ccusage env HOME="$tmp/home" "$cc" pi daily --json --offline -z UTC --pi-path "$root"
	warm
	rm -rf "$tmp/cache"
	time_it cold "$bin" usage daily --json --utc --cache-dir "$tmp/cache" "$root"
	warm
	cat "$tmp/cache"/* >/dev/null
	time_it cached "$bin" usage daily --json --utc --cache-dir "$tmp/cache" "$root"
	i=$((i + 1))
done
cc_s=$(cut -d' ' -f1 "$tmp/ccusage" | median)
printf '%-34s %8s %10s %8s\n' "daily --json" "seconds" "max RSS" "vs ccusage"
for n in ccusage cold cached; do
	s=$(cut -d' ' -f1 "$tmp/$n" | median)
	m=$(cut -d' ' -f2 "$tmp/$n" | sort -n | tail -1)
	printf '%-34s %8s %7s MB %8s\n' "$n" "$s" "$((m / 1024))" "$(echo "$cc_s / $s" | bc -l | xargs printf '%.1fx')"
done
echo "(medians of $runs runs, whole process; max RSS over the runs; vs ccusage: how many times faster)"
echo
echo "Counted (totals):"
python3 - "$tmp" <<'PY'
import json, sys
t = sys.argv[1]
cc = json.load(open(t + "/ccusage.json"))["totals"]
ps = json.load(open(t + "/cold.json"))
tot, src = ps["totals"], ps["totals"]["sources"]["assistant"]
print(f"  ccusage:                 {cc['totalTokens']:>16,} tokens  ${cc['totalCost']:,.2f}")
print(f"  pi-session, every source:{tot['totalTokens']:>16,} tokens  ${tot['totalCost']:,.2f}  ({tot['records']:,} records, {ps['report']['duplicates']:,} duplicates left out)")
print(f"  pi-session, assistant:   {src['totalTokens']:>16,} tokens  ${src['cost']:,.2f}")
PY

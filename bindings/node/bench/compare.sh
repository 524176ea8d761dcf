#!/bin/sh
# The binding against pi 1.6.0's own SessionManager, each call in a fresh `node`, runs
# interleaved, page cache warm: seconds (medians, measured inside the process around the
# one call) and peak RSS of the whole process (max over the runs).
#
#   bench/compare.sh listall AGENT_DIR [RUNS]      # await SessionManager.listAll()
#   bench/compare.sh context SESSION.jsonl [RUNS]  # open(file).buildSessionContext()
#
# AGENT_DIR holds `sessions/` (pi-session gen tree AGENT_DIR/sessions --sessions 10000
# --folders 200 --size 2900M is the issue's corpus). Run `npm run build` first.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
what=${1:?usage: bench/compare.sh listall|context PATH [RUNS]}
arg=${2:?usage: bench/compare.sh listall|context PATH [RUNS]}
runs=${3:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
warm() { find "$arg" -name '*.jsonl' -exec cat {} + >/dev/null; }
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; node $(node --version); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "$what $arg ($(du -sh "$arg" | cut -f1)); $runs runs each"
i=0
while [ "$i" -lt "$runs" ]; do
	for side in pi ours; do
		warm
		/usr/bin/time -f "%M" -o "$tmp/rss" node "$here/bench/run.mjs" "$side" "$what" "$arg" >>"$tmp/$side"
		cat "$tmp/rss" >>"$tmp/$side.rss"
	done
	i=$((i + 1))
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
pi_s=$(cut -d' ' -f1 "$tmp/pi" | median)
for side in pi ours; do
	s=$(cut -d' ' -f1 "$tmp/$side" | median)
	n=$(cut -d' ' -f2 "$tmp/$side" | head -1)
	m=$(sort -n "$tmp/$side.rss" | tail -1)
	printf '%-5s %9.3f s %7s MB  %s  (count %s)\n' "$side" "$s" "$((m / 1024))" "$(echo "$pi_s / $s" | bc -l | xargs printf '%.1fx')" "$n"
done

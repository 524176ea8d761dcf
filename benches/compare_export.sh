#!/bin/sh
# `pi-session export-parquet` against a cold `pi-session ls --all --json` over the same
# sessions root (issue #19's yardstick: the export at most 2x the listing), whole process
# against whole process, page cache warm, runs interleaved, medians and peak RSS; then an
# incremental re-export after 1% of the files got an appended message, and one after 1%
# were rewritten (other content, as pi's migration or a hand edit would).
#
#   benches/compare_export.sh ROOT [RUNS]
#
# ROOT: a sessions root (`pi-session gen tree ROOT --sessions 10000 --folders 200 --size
# 2900M` is the acceptance corpus). It is copied first (the appends change the copy only).
# "Cold" listing: an empty listing cache each run (`--cache-dir` a fresh folder), so that
# every file is read, as the export's first run reads every file.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:?usage: benches/compare_export.sh ROOT [RUNS]}
runs=${2:-3}
target=${CARGO_TARGET_DIR:-$repo/target}
cargo build --quiet --release --features parquet --manifest-path "$repo/Cargo.toml" --bin pi-session
bin=$target/release/pi-session
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root" "$tmp/agent-sessions"
mkdir -p "$tmp/agent"
mv "$tmp/agent-sessions" "$tmp/agent/sessions"
sessions=$tmp/agent/sessions
warm() { find "$sessions" -name '*.jsonl' -exec cat {} + >/dev/null; }

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, $(free -g | awk '/^Mem:/ {print $2}') GB; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "$sessions: $(find "$sessions" -name '*.jsonl' | wc -l) files, $(du -sh "$sessions" | cut -f1); $runs runs each"
i=0
while [ "$i" -lt "$runs" ]; do
	warm
	rm -rf "$tmp/cache"
	/usr/bin/time -f "%e %M" -o "$tmp/t" "$bin" ls --all --agent-dir "$tmp/agent" --json --cache-dir "$tmp/cache" >/dev/null
	cat "$tmp/t" >>"$tmp/ls"
	warm
	rm -rf "$tmp/out"
	/usr/bin/time -f "%e %M" -o "$tmp/t" "$bin" export-parquet "$sessions" --out "$tmp/out" >/dev/null
	cat "$tmp/t" >>"$tmp/export"
	i=$((i + 1))
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ls_s=$(cut -d' ' -f1 "$tmp/ls" | median)
ex_s=$(cut -d' ' -f1 "$tmp/export" | median)
printf '%-34s %8s s %6d MB\n' "ls --all --json (cold)" "$ls_s" "$(($(cut -d' ' -f2 "$tmp/ls" | sort -n | tail -1) / 1024))"
printf '%-34s %8s s %6d MB  %s x ls\n' "export-parquet (full)" "$ex_s" "$(($(cut -d' ' -f2 "$tmp/export" | sort -n | tail -1) / 1024))" \
	"$(echo "$ex_s $ls_s" | awk '{printf "%.2f", $1 / $2}')"
echo "output: $(du -sh "$tmp/out" | cut -f1), $(find "$tmp/out" -name '*.parquet' | wc -l) files"

# Nothing changed: the manifest alone.
/usr/bin/time -f "%e %M" -o "$tmp/t" "$bin" export-parquet "$sessions" --out "$tmp/out" >/dev/null
printf '%-34s %8s s %6d MB\n' "re-export, nothing changed" "$(cut -d' ' -f1 "$tmp/t")" "$(($(cut -d' ' -f2 "$tmp/t") / 1024))"
# 1% of the files: one message appended to each.
n=$(find "$sessions" -name '*.jsonl' | wc -l)
k=$((n / 100))
find "$sessions" -name '*.jsonl' | sort | awk -v k="$k" -v n="$n" 'NR % int(n / k) == 0' | head -"$k" >"$tmp/changed"
while read -r f; do
	"$bin" append "$f" '{"role":"user","content":"one more"}' >/dev/null
done <"$tmp/changed"
warm
/usr/bin/time -f "%e %M" -o "$tmp/t" "$bin" export-parquet "$sessions" --out "$tmp/out" --json >"$tmp/inc.json"
printf '%-34s %8s s %6d MB  %s\n' "re-export, $k files appended to" "$(cut -d' ' -f1 "$tmp/t")" "$(($(cut -d' ' -f2 "$tmp/t") / 1024))" \
	"$(cat "$tmp/inc.json")"
# 1% of the files (others): rewritten with another session of about their size.
find "$sessions" -name '*.jsonl' | sort | awk -v k="$k" -v n="$n" 'NR % int(n / k) == 1' | head -"$k" >"$tmp/rewritten"
i=0
while read -r f; do
	"$bin" gen session "$f" --size "$(($(stat -c %s "$f") / 1024))K" --seed "$((1000 + i))" >/dev/null
	i=$((i + 1))
done <"$tmp/rewritten"
warm
/usr/bin/time -f "%e %M" -o "$tmp/t" "$bin" export-parquet "$sessions" --out "$tmp/out" --json >"$tmp/rw.json"
printf '%-34s %8s s %6d MB  %s\n' "re-export, $k files rewritten" "$(cut -d' ' -f1 "$tmp/t")" "$(($(cut -d' ' -f2 "$tmp/t") / 1024))" \
	"$(cat "$tmp/rw.json")"

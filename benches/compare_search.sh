#!/bin/sh
# `pi-session search` against ripgrep over a sessions root, whole process against whole
# process, page cache warm, runs interleaved, medians; then the exactness check (the fast
# path against its slow twin on every file, benches/aids/profile_search_twin.rs) for the
# same three searches:
#   a. a common literal:                  pi-session search handler    rg -S handler
#   b. a case-insensitive regex:          -i 'error|fail(ed|ure)'      the same
#   c. a phrase with a quote and a line break, -U -F:
#        pi-session: the decoded text   " block handling.<LF>First
#        rg:         the raw JSON       -F '\" block handling.\nFirst'
#
#   benches/compare_search.sh ROOT [RUNS]
#
# ROOT: a sessions root (`pi-session gen tree ROOT --sessions 10000 --folders 200 --size 2900M`
# is the acceptance corpus); RUNS (default 5) timed runs of each command.
#
# What "equivalent" means: pi-session searches the decoded text of what was said (user
# and assistant text, summaries, custom messages, bash commands, names, labels; not
# thinking, tool calls or tool results unless asked), never keys, ids, signatures or
# image data. rg searches the raw bytes of every line. (a) and (b) are the same regex on
# both sides (smart case on both: pi-session's default is smart case, rg's is not, hence
# -S); (c) is the phrase as pi's JSON.stringify writes it, `"` as `\"` and the line break
# as `\n`. rg cannot find a phrase written with other escapes (`\u0022`, `\u000a`, which
# other writers may choose), nor one split across lines or keys; and its hit counts
# include lines where the words are in keys, ids, base64, tool output or thinking. So
# the hit counts differ by design; the times compare the cost of answering "where was
# this said" each way. Outputs go to /dev/null (pi-session's text output, rg's lines).
#
# pi-session runs with its listing cache warm (a scratch --cache-dir, filled before
# timing). This VM's DAMON reclaim pages out file pages idle for ~60 s, so every timed
# run follows a read of the whole corpus (and the cache file).
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:?usage: benches/compare_search.sh ROOT [RUNS]}
runs=${2:-5}
target=${CARGO_TARGET_DIR:-$repo/target}
command -v rg >/dev/null || { echo "needs ripgrep (apt-get install ripgrep)"; exit 1; }
cargo build --quiet --release --manifest-path "$repo/Cargo.toml" --bin pi-session
cargo build --quiet --release --manifest-path "$repo/Cargo.toml" --features aids --example profile_search_twin
bin=$target/release/pi-session
twin=$target/release/examples/profile_search_twin
cache=$(mktemp -d)
tmp=$(mktemp -d)
trap 'rm -rf "$cache" "$tmp"' EXIT
nl='
'
phrase="\" block handling.${nl}First"
phrase_json='\" block handling.\nFirst'

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, $(free -g | awk '/^Mem:/ {print $2}') GB"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "pi-session: ${PI_SESSION_REV:-$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo "?")} ($bin); $(rg --version | sed -n 1p)"
echo "root: $root, $(find "$root" -name '*.jsonl' | wc -l) files, $(du -sb "$root" | cut -f1) bytes; $runs runs each"
echo

warm() {
	find "$root" -name '*.jsonl' -exec cat {} + >/dev/null
	cat "$cache"/* >/dev/null 2>&1 || true
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() { # appends the seconds of one run of "$@" to $out
	s=$(date +%s.%N); "$@" >/dev/null 2>&1 || [ $? -eq 1 ]; e=$(date +%s.%N)
	echo "$e - $s" | bc -l >>"$out"
}
pis() { "$bin" search --cache-dir "$cache" "$@" "$root"; }
rgs() { rg "$@" "$root"; }
# The three searches: name, pi-session's flags and pattern, rg's.
run() { # run NAME: one timed run of both sides of search NAME
	case $1 in
	a) warm; out=$tmp/a.ps timeit pis handler; warm; out=$tmp/a.rg timeit rgs -S handler ;;
	b) warm; out=$tmp/b.ps timeit pis -i 'error|fail(ed|ure)'; warm; out=$tmp/b.rg timeit rgs -i 'error|fail(ed|ure)' ;;
	c) warm; out=$tmp/c.ps timeit pis -U -F "$phrase"; warm; out=$tmp/c.rg timeit rgs -F "$phrase_json" ;;
	esac
}
# Fill the listing cache.
pis -c handler >/dev/null || true
for i in $(seq "$runs"); do
	# Interleaved: pi-session and rg one after the other, each search in turn, so both
	# see the same machine.
	for s in a b c; do run $s; done
done

ps_count() { pis --json "$@" | tail -1 | sed 's/.*"matchingLines":\([0-9]*\).*/\1/'; }
rg_count() { rgs -c "$@" | awk -F: '{n += $NF} END {print n + 0}'; }
printf '%-44s %9s %9s %8s %12s %12s\n' search pi-session rg 'ps/rg' 'ps lines' 'rg lines'
row() { # row NAME LABEL PS_COUNT RG_COUNT
	p=$(median <"$tmp/$1.ps") r=$(median <"$tmp/$1.rg")
	printf '%-44s %8.3fs %8.3fs %7.2fx %12s %12s\n' "$2" "$p" "$r" "$(echo "$p / $r" | bc -l)" "$3" "$4"
}
row a "a. handler (smart case; rg -S)" "$(ps_count handler)" "$(rg_count -S handler)"
row b "b. -i 'error|fail(ed|ure)'" "$(ps_count -i 'error|fail(ed|ure)')" "$(rg_count -i 'error|fail(ed|ure)')"
row c "c. -U -F '\" block handling.\\\\nFirst'" "$(ps_count -U -F "$phrase")" "$(rg_count -F "$phrase_json")"
echo "(times: medians of $runs runs, whole process, output to /dev/null; lines: pi-session's"
echo " matchingLines (lines of decoded text), rg -c summed (raw JSON lines))"
echo

echo "Exactness: the fast path against the slow twin on every file (benches/aids/profile_search_twin.rs)"
for s in a b c; do
	case $s in
	a) set -- handler ;;
	b) set -- -i 'error|fail(ed|ure)' ;;
	c) set -- -U -F "$phrase" ;;
	esac
	printf '%s. ' "$s"
	if "$twin" "$root" "$@" >"$tmp/twin"; then :; else echo "(exit $?)"; grep -A2 '^DIFFERS' "$tmp/twin" | head -40; fi
	grep -E '^(files|hits|time|differences)' "$tmp/twin" | tr '\n' ' '
	echo
done

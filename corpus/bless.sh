#!/usr/bin/env bash
# Regenerate every golden file in corpus/golden/ with the oracle (pi 1.6.0's own
# SessionManager, see ../shared/oracle/README.md).
#
#   corpus/bless.sh                 # from the repository root (or from anywhere)
#   ORACLE_DIR=/path/to/oracle corpus/bless.sh
#   corpus/bless.sh valid/branches.jsonl ...   # only these corpus files (and their leaves)
#
# For each corpus file F in valid/, malformed/ and pig/:
#   node $ORACLE_DIR/dump.mjs F            > golden/<valid|malformed>/<stem>.json
# and for each line "F<TAB>LEAF" of leaves.tsv:
#   node $ORACLE_DIR/dump.mjs F --leaf LEAF > golden/<dir>/<stem>@<LEAF>.json
# and for each line "F<TAB>N" of digests.tsv:
#   node $ORACLE_DIR/dump.mjs F --digest N --compact --tree flat > golden/digest/<stem>@<N>.json
#
# Default dump options (nested tree, 2-space indent), except:
#   --tree flat   for files whose tree is deeper than ~500 (nested output would be quadratic):
#                 valid/tree-deep-linear.jsonl
#   --compact     for files whose *messages* nest deeply (10,000 levels; indented output would
#                 be ~100 MB): valid/deep-nesting-in-message.jsonl
#   --tree none   for malformed/cycle-tree-only-via-idless-entries.jsonl: pi's getTree() never
#                 returns there (a child cycle through the id-less node), and dump.mjs's cycle
#                 guard misses it (its treeCycle() returns `entry.id ?? null`, i.e. null = "no
#                 cycle", when the repeated node has no id), so the plain dump hangs until the
#                 timeout. NOTES.md has the details.
#
# TZ is pinned to UTC: pi parses entry timestamps with `new Date(ts)`, and ISO strings without
# an offset ("2025-03-14T09:00:00") or legacy formats are read in local time.
#
# Nondeterministic goldens (regenerating changes them; compare structurally, see
# ../shared/oracle/README.md): every v1 file (migration draws random ids) and
# malformed/empty-file.jsonl (a new UUIDv7 and the current time).
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
ORACLE_DIR="${ORACLE_DIR:-$root/../shared/oracle}"
dump="$ORACLE_DIR/dump.mjs"
TIMEOUT="${BLESS_TIMEOUT:-60}"
export TZ=UTC

if [ ! -f "$dump" ]; then
	echo "bless.sh: oracle not found at $dump (set ORACLE_DIR)" >&2
	exit 2
fi

opts_for() {
	case "$1" in
	valid/tree-deep-linear.jsonl) echo "--tree flat" ;;
	valid/deep-nesting-in-message.jsonl) echo "--compact" ;;
	malformed/cycle-tree-only-via-idless-entries.jsonl) echo "--tree none" ;;
	*) echo "" ;;
	esac
}

failures=0
count=0

run_one() { # rel_file out_file [extra args...]
	local rel="$1" out="$2"
	shift 2
	local tmp="$out.tmp"
	# shellcheck disable=SC2046
	if timeout "$TIMEOUT" node "$dump" "$here/$rel" $(opts_for "$rel") "$@" >"$tmp"; then
		mv "$tmp" "$out"
		count=$((count + 1))
	else
		local rc=$?
		rm -f "$tmp"
		echo "bless.sh: FAILED (exit $rc): $rel $*" >&2
		failures=$((failures + 1))
	fi
}

cd "$here"
if [ $# -gt 0 ]; then
	files=()
	for f in "$@"; do files+=("${f#corpus/}"); done # accept corpus/valid/x.jsonl too
	set -- "${files[@]}"
else
	files=()
	for f in valid/*.jsonl malformed/*.jsonl pig/*.jsonl; do
		[ -e "$f" ] && files+=("$f")
	done
	# A full run starts from scratch so that goldens of removed fixtures do not linger.
	rm -f golden/valid/*.json golden/malformed/*.json golden/pig/*.json
fi
mkdir -p golden/valid golden/malformed golden/pig

for rel in "${files[@]}"; do
	dir="${rel%%/*}"
	stem="$(basename "$rel" .jsonl)"
	run_one "$rel" "golden/$dir/$stem.json"
done

if [ -f leaves.tsv ]; then
	while IFS=$'\t' read -r rel leaf; do
		[ -z "$rel" ] && continue
		case "$rel" in \#*) continue ;; esac
		if [ $# -gt 0 ]; then
			keep=0
			for f in "${files[@]}"; do [ "$f" = "$rel" ] && keep=1; done
			[ $keep = 1 ] || continue
		fi
		dir="${rel%%/*}"
		stem="$(basename "$rel" .jsonl)"
		run_one "$rel" "golden/$dir/$stem@$leaf.json" --leaf "$leaf"
	done <leaves.tsv
fi

# Digested dumps (long strings replaced by their sha256 and UTF-8 length, as the real
# sessions' goldens are): digests.tsv lists FILE<TAB>N.
if [ -f digests.tsv ]; then
	mkdir -p golden/digest
	while IFS=$'\t' read -r rel n; do
		[ -z "$rel" ] && continue
		case "$rel" in \#*) continue ;; esac
		stem="$(basename "$rel" .jsonl)"
		run_one "$rel" "golden/digest/$stem@$n.json" --digest "$n" --compact --tree flat
	done <digests.tsv
fi

echo "bless.sh: wrote $count golden files, $failures failures"
[ "$failures" -eq 0 ]

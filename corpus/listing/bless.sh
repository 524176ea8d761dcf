#!/bin/sh
# Rebuilds the listing corpus (make.py, which also sets every mtime) and records what
# pi 1.6.0 lists for it (../shared/oracle/list.mjs) as goldens in corpus/golden/listing/.
# Run from anywhere; needs node and the oracle (../shared/oracle/install.sh).
# Progress partials depend on I/O completion order, so they are left out (--no-partials);
# absolute corpus paths in the "call" field are replaced by <corpus>.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
oracle=${PI_ORACLE_DIR:-$repo/../shared/oracle}
[ -f "$oracle/list.mjs" ] || oracle=/work/shared/oracle
out=$repo/corpus/golden/listing
mkdir -p "$out"
python3 "$here/make.py"
cd "$here"
run() {
	name=$1
	shift
	node "$oracle/list.mjs" "$@" --relative --no-partials | sed "s#$here#<corpus>#g" >"$out/$name.json"
	echo "$name: $(grep -c '"path"' "$out/$name.json" || true) sessions"
}
run listall agent/sessions
run list-proj-a agent/sessions --dir agent/sessions/--home-u-proj-a-- --cwd /home/u/proj-a
run list-proj-b agent/sessions --dir agent/sessions/--home-u-proj-b-- --cwd /home/u/proj-b
run list-linked agent/sessions --dir agent/sessions/--home-u-linked-- --cwd /home/u/linked
run list-missing agent/sessions --dir agent/sessions/--home-u-nope-- --cwd /home/u/nope
run list-flat-proj-a agent/sessions --dir flat --cwd /home/u/proj-a
run list-flat-proj-b agent/sessions --dir flat --cwd /home/u/proj-b
run flat-all flat --flat

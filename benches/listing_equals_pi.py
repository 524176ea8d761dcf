#!/usr/bin/env python3
"""Whether `pi-session ls --all --json --text` output equals pi 1.6.0's listAll on the same
sessions, field by field and in order (the oracle's list.mjs).

    benches/listing_equals_pi.py OURS.jsonl SESSIONS_ROOT [ORACLE_DIR]

OURS.jsonl is the output of `pi-session ls --all --json`, with `--text` or without (then
pi's listing is taken without `allMessagesText`). The oracle prints its objects with
sorted keys, so fields are compared by name. Prints the number of sessions on each side
and every difference (the first 20); exits 1 when there is one.
"""
import json
import os
import subprocess
import sys


def main():
    ours_path, root = sys.argv[1], sys.argv[2]
    oracle = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__), "../../shared/oracle")
    with open(ours_path, encoding="utf-8") as f:
        ours = [json.loads(line) for line in f if line.strip()]
    text = bool(ours) and "allMessagesText" in ours[0]
    out = subprocess.run(
        ["node", os.path.join(oracle, "list.mjs"), root, "--compact", "--no-partials"] + ([] if text else ["--no-text"]),
        check=True,
        capture_output=True,
    ).stdout
    pi = json.loads(out)["sessions"]
    print("sessions: pi-session %d, pi %d (%s allMessagesText)" % (len(ours), len(pi), "with" if text else "without"))
    diffs = []
    if len(ours) != len(pi):
        diffs.append("counts differ")
    for i, (a, b) in enumerate(zip(ours, pi)):
        a = {k: v for k, v in a.items() if k != "pathBytes"}
        if sorted(a.keys()) != sorted(b.keys()):
            diffs.append("#%d: fields %s against %s" % (i, sorted(a.keys()), sorted(b.keys())))
            continue
        for k in a:
            if a[k] != b[k]:
                diffs.append("#%d %s: %r against pi's %r" % (i, k, str(a[k])[:80], str(b[k])[:80]))
    for d in diffs[:20]:
        print(d)
    print("differences: %d" % len(diffs))
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()

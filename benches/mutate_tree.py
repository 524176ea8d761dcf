#!/usr/bin/env python3
"""Change a sessions tree the way issue #15's acceptance test does, for the listing cache's
re-list measurement (benches/compare_listing.sh) and its equality with pi's listAll.

    benches/mutate_tree.py SESSIONS_ROOT SEED

On distinct files chosen with SEED: append a user message to 100, delete 50, add 50
(copies of others with a new session id), rewrite 20 in place with the same size (one
letter of a text changes case) and their mtimes put back, rename 10 within their folder.
Prints what it did and the bytes it wrote or changed, one `name: value` line each.
"""
import os
import random
import sys
import uuid


def sessions(root):
    out = []
    for d in sorted(os.listdir(root)):
        p = os.path.join(root, d)
        if os.path.isdir(p):
            out.extend(os.path.join(p, f) for f in sorted(os.listdir(p)) if f.endswith(".jsonl"))
    return out


def same_size_rewrite(path):
    """Flip the case of a letter inside the first `"text":"` string; keep the mtime."""
    st = os.stat(path)
    with open(path, "r+b") as f:
        data = f.read()
        at = data.find(b'"text":"')
        if at < 0:
            return False
        i = at + len(b'"text":"')
        while i < len(data) and data[i] != ord('"'):
            c = data[i]
            if ord("a") <= c <= ord("z") or ord("A") <= c <= ord("Z"):
                f.seek(i)
                f.write(bytes([c ^ 0x20]))
                break
            i += 1
        else:
            return False
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return True


def main():
    root, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    files = sessions(root)
    picked = rng.sample(files, 230)
    appends, deletes, adds, rewrites, renames = (
        picked[:100],
        picked[100:150],
        picked[150:200],
        picked[200:220],
        picked[220:230],
    )
    changed = 0
    for p in appends:
        line = (
            '{"type":"message","id":"%s","parentId":null,"timestamp":"2026-12-01T12:00:00.000Z",'
            '"message":{"role":"user","content":[{"type":"text","text":"one more thing, seed %d"}],'
            '"timestamp":1796126400000}}\n' % (uuid.UUID(int=rng.getrandbits(128)).hex[:8], seed)
        )
        with open(p, "ab") as f:
            f.write(line.encode())
        changed += len(line)
    for p in deletes:
        os.remove(p)
    for p in adds:
        with open(p, "rb") as f:
            data = f.read()
        sid = str(uuid.UUID(int=rng.getrandbits(128)))
        nl = data.find(b"\n")
        head = data[:nl].split(b'"id":"', 1)
        if len(head) == 2:
            head[1] = sid.encode() + head[1][head[1].index(b'"'):]
            data = b'"id":"'.join(head) + data[nl:]
        new = os.path.join(os.path.dirname(p), "added-%s.jsonl" % sid)
        with open(new, "wb") as f:
            f.write(data)
        changed += len(data)
    rewritten = 0
    for p in rewrites:
        if same_size_rewrite(p):
            rewritten += 1
            changed += os.path.getsize(p)
    for p in renames:
        os.rename(p, os.path.join(os.path.dirname(p), "renamed-" + os.path.basename(p)))
        changed += os.path.getsize(os.path.join(os.path.dirname(p), "renamed-" + os.path.basename(p)))
    print("appended: %d" % len(appends))
    print("deleted: %d" % len(deletes))
    print("added: %d" % len(adds))
    print("rewritten_same_size: %d" % rewritten)
    print("renamed: %d" % len(renames))
    print("bytes_to_read: %d" % changed)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Seed fuzz/corpus/<target>/ from ../corpus/valid and ../corpus/malformed (and ../corpus/crash).

usage: seed.py TARGET

- split_lines:   one chunk-size byte + each file;
- header_parser: each line of each file (and each whole file);
- open_session:  selector byte 0x00 (no added header) and 0x08 (no header, dump on)
                 + each file; 0x01 + each file without its first line;
- structural:    selector bytes 0x00, 0x01, 0x02 (white space flavours) and 0x81 (portable
                 classes) + each line of each file;
- listing_walk:  each file, each file without its first line, and the listing fixtures;
- verbatim_twin, decode_twin: each line of each file;
- context_twin: each file;
- usage:         the first 4 KiB of each file (the generator's input: any bytes do);
- search:        a mode byte and eight query bytes + each file: mode 0x00 with the file
                 without its first line (the target puts a header in front), mode 0x01
                 with the file as the generator's input; query bytes pick a few patterns
                 (plain word, fixed string with a quote, `\\Aword`, `(?s)hello.*word`,
                 `-w word`, and `k` and `[0-9]+`, which the corpus's text holds) with every
                 field, context, a max count, `since`, branch only; and two entries whose
                 words are written with `\\u` escapes between ANSI `\\u001b` escapes;
- parent_links:  nothing (its inputs are `arbitrary` byte streams; libFuzzer starts from
                 scratch and the corpus it keeps is reused on the next run).
Seeds are named by content hash, so re-seeding is idempotent.
"""
import hashlib
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
target = sys.argv[1]
out = os.path.join(here, "corpus", target)
os.makedirs(out, exist_ok=True)


def files():
    for sub in ("valid", "malformed", "crash"):
        d = os.path.join(root, "corpus", sub)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            p = os.path.join(d, name)
            if os.path.isfile(p) and not name.endswith((".md", ".txt")):
                with open(p, "rb") as f:
                    yield f.read()


def put(data, limit=1 << 20):
    if len(data) > limit:
        return
    h = hashlib.sha1(data).hexdigest()
    with open(os.path.join(out, "seed-" + h), "wb") as f:
        f.write(data)


# Query bytes for `search` (hostile::query): pattern index, flags (bit 0 word, bit 1
# multiline, bits 2-3 case, bit 4 a second pattern), options (bits 0-2 thinking / tool
# calls / tool results, bit 3 branch only, bits 4-5 context, bit 6 max count, bit 7 since),
# with the second pattern's index before the options when bit 4 is set, then the bytes the
# options read (max count, since). Eight bytes each, whatever the query reads.
SEARCH_QUERIES = [
    bytes([0, 0x00, 0x07, 0, 0, 0, 0, 0]),  # hello, smart case, every field
    bytes([3, 0x04, 0x17, 0, 0, 0, 0, 0]),  # fixed `say "hi"`, sensitive, one line of context
    bytes([15, 0x00, 0x47, 2, 0, 0, 0, 0]),  # \Aword (no gate), at most 2 lines
    bytes([24, 0x12, 11, 0xA7, 0x20, 0, 0, 0]),  # (?s)hello.*word | h.llo, -U, 2 lines of context, since Jan 3
    bytes([10, 0x09, 0x0F, 0, 0, 0, 0, 0]),  # word -w, insensitive, branch only
    # Patterns that the corpus's own text matches, so that raw-mode seeds reach the matcher:
    bytes([18, 0x08, 0x37, 0, 0, 0, 0, 0]),  # k, insensitive (K, k, Kelvin sign), 3 lines of context
    bytes([16, 0x02, 0x47, 3, 0, 0, 0, 0]),  # [0-9]+ -U, at most 3 lines
]

n = 0
for data in files():
    if target == "split_lines":
        put(b"\x07" + data)
        put(b"\x01" + data[:4096])
    elif target == "header_parser":
        put(data[:65536])
        for line in data.split(b"\n"):
            put(line, 65536)
    elif target == "open_session":
        put(b"\x00" + data)
        put(b"\x08" + data)
        first, _, rest = data.partition(b"\n")
        put(b"\x01" + rest)
    elif target == "structural":
        for line in data.split(b"\n"):
            for sel in (b"\x00", b"\x01", b"\x02", b"\x81"):
                put(sel + line, 65536)
    elif target == "parent_links":
        pass
    elif target in ("verbatim_twin", "decode_twin"):
        for line in data.split(b"\n"):
            put(line, 65536)
    elif target == "context_twin":
        put(data, 262144)
    elif target == "listing_walk":
        put(data, 131072)
        first, _, rest = data.partition(b"\n")
        put(rest, 131072)
    elif target == "listing_cache":
        # The append path: the file cut at its start, middle and end, with text and without.
        for cut in (0, len(data) // 2, max(len(data) - 1, 0)):
            for mode in (b"\x01", b"\x03"):
                put(mode + min(cut, 65535).to_bytes(2, "little") + data[:65536])
    elif target == "search":
        first, _, rest = data.partition(b"\n")
        for query in SEARCH_QUERIES:
            put(b"\x00" + query + rest[:65536 - 9], 65536)
        # The generator reads bytes, not JSON: a file is as good as any other stream.
        put(b"\x01" + SEARCH_QUERIES[0] + data[:4096])
    elif target == "usage":
        # The generator (usage::twin::hostile::case) reads bytes, not JSON: any stream seeds it.
        put(data[:4096])
    else:
        sys.exit("unknown target " + target)
    n += 1
if target == "search":
    # Escapes a raw prefilter must see through: ANSI colour escapes of tool output
    # (\u001b, which no piece holds), escaped letters inside the words, a surrogate pair.
    body = (
        b'{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-02T00:00:00.000Z",'
        b'"message":{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"\\u001b[31mhello\\u001b[0m"}]}}\n'
        b'{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-02T00:00:01.000Z",'
        b'"message":{"role":"user","content":"h\\u0065llo w\\u006Frd \\ud83d\\ude00 \\u0000k"}}\n'
    )
    for query in SEARCH_QUERIES:
        put(b"\x00" + query + body)
if target == "listing_cache":
    # Real cache files (what follows their magic, version and flags, which the target
    # puts back), written by the release binary listing the demo corpus, when it is built.
    import subprocess
    import tempfile

    exe = os.path.join(root, "target", "release", "pi-session")
    if os.path.exists(exe):
        with tempfile.TemporaryDirectory() as cache:
            for extra in ([], ["--text"]):
                subprocess.run(
                    [exe, "ls", "--all", "--json", "--agent-dir", os.path.join(root, "corpus", "demo"), "--cache-dir", cache] + extra,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    check=False,
                )
                for name in os.listdir(cache):
                    if name.startswith("list-") and not name.endswith(".text"):
                        with open(os.path.join(cache, name), "rb") as f:
                            put(b"\x00" + f.read()[24:])
if target == "listing_walk":
    # The listing fixtures too (one is a symlink loop: skipped).
    for dp, dn, fn in os.walk(os.path.join(root, "corpus", "listing")):
        for name in fn:
            if name.endswith(".jsonl"):
                try:
                    put(open(os.path.join(dp, name), "rb").read(), 131072)
                except OSError:
                    pass
print(f"seeded {target} from {n} files: {len(os.listdir(out))} files in {out}")

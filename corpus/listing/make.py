#!/usr/bin/env python3
"""Builds the listing corpus: a sessions root with several project folders, a custom
flat session dir with mixed cwds, and damaged files of every kind SPEC.md names.

    python3 corpus/listing/make.py          # rewrites corpus/listing/{agent,linked-target,flat}

Layout (relative to corpus/listing/):
  agent/sessions/                 the sessions root (agent dir = agent/)
    --home-u-proj-a--/            normal sessions + damaged files
    --home-u-proj-b--/            sessions with equal times (sort stability, localeCompare)
    --home-u-linked--  -> ../../linked-target   a symlinked project folder
    --dangling--       -> ../../nowhere          a dangling folder symlink (skipped)
    --loop--           -> --loop--               a symlink loop (readdir fails: skipped)
    file-link          -> ../../linked-target/keep.txt   a symlink to a file (skipped)
    stray.jsonl                   a file directly in the root (pi ignores it)
  linked-target/                  the folder behind --home-u-linked--
  flat/                           a custom flat session dir, sessions of several cwds
  mtimes.json                     {relative path: mtime in ns}; git does not keep mtimes,
                                  so tests apply these to a copy before listing.

"Unreadable" files are made with symlinks, not chmod 000, because the tests run as root,
who can read anything: a dangling symlink `dangling.jsonl`, a self-loop `loop.jsonl`,
and a folder named `dir.jsonl`.

Every mtime is set with os.utime to a fixed value, since pi orders candidates by mtime.
"""

import json
import os
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE_MS = 1_760_000_000_000  # 2025-10-09
MTIMES = {}


def j(v):
    """JSON.stringify-like compact JSON (non-ASCII kept raw)."""
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def header(sid, cwd, ts="2025-10-01T10:00:00.000Z", **extra):
    h = {"type": "session", "version": 3, "id": sid, "timestamp": ts, "cwd": cwd}
    h.update(extra)
    return j(h)


_n = [0]


def eid():
    _n[0] += 1
    return f"{_n[0]:08x}"


def msg(role, content, ts="2025-10-01T10:01:00.000Z", mts=None, **extra):
    m = {"role": role, "content": content}
    if mts is not None:
        m["timestamp"] = mts
    m.update(extra)
    return j({"type": "message", "id": eid(), "parentId": None, "timestamp": ts, "message": m})


def user(text, **kw):
    return msg("user", [{"type": "text", "text": text}], **kw)


def assistant(text, **kw):
    return msg("assistant", [{"type": "text", "text": text}], **kw)


def write(rel, data, mtime_ms, mode="lines"):
    p = HERE / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, list):
        data = "".join(line + "\n" for line in data)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    p.write_bytes(data)
    set_mtime(rel, mtime_ms)


def set_mtime(rel, mtime_ms):
    ns = int(round(mtime_ms * 1_000_000))
    os.utime(HERE / rel, ns=(ns, ns), follow_symlinks=True)
    MTIMES[rel] = ns


def symlink(rel, target):
    p = HERE / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, p)


def ms(minutes):
    return BASE_MS + minutes * 60_000


def main():
    for d in ["agent", "linked-target", "flat"]:
        shutil.rmtree(HERE / d, ignore_errors=True)
    A = "agent/sessions/--home-u-proj-a--"
    B = "agent/sessions/--home-u-proj-b--"
    CA, CB = "/home/u/proj-a", "/home/u/proj-b"

    # ---- project A: normal sessions -------------------------------------------------
    write(f"{A}/2025-10-01T10-00-00-000Z_a1.jsonl", [
        header("a1", CA),
        user("fix the bug in main.rs", mts=1759312860000),
        msg("assistant", [{"type": "thinking", "thinking": "hmm"},
                          {"type": "text", "text": "Looking."},
                          {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "x"}}],
            mts=1759312870000),
        msg("toolResult", [{"type": "text", "text": "tool output is not listed"}], toolCallId="c1",
            toolName="read", isError=False, mts=1759312880000),
        msg("assistant", [{"type": "text", "text": "Done."}, {"type": "text", "text": "Bye."}], mts=1759312890000),
        j({"type": "session_info", "id": eid(), "parentId": None, "timestamp": "2025-10-01T10:02:00.000Z",
           "name": "  Bug fix  "}),
    ], ms(10))
    # images and big tool results are passed over
    write(f"{A}/2025-10-01T11-00-00-000Z_a2.jsonl", [
        header("a2", CA, ts="2025-10-01T11:00:00.000Z", parentSession="/x/a1.jsonl"),
        msg("user", [{"type": "image", "data": "iVBORw0KGgo" * 5000, "mimeType": "image/png"},
                     {"type": "text", "text": "what is in the image?"}], mts=1759316460000),
        msg("toolResult", [{"type": "text", "text": "line\n\t\"quoted\" \\ " * 2000}], mts=1759316470000),
        msg("assistant", "a plain string answer with \u00e9 and \U0001F600", mts=1759316480000),
        msg("bashExecution", "ignored", mts=9999999999999),
        j({"type": "session_info", "name": "first name"}),
        j({"type": "session_info", "name": None}),
    ], ms(20))
    # string content, escaped keys and values, lone surrogates, invalid UTF-8
    write(f"{A}/2025-10-01T12-00-00-000Z_a3.jsonl",
          (header("a3", CA, ts="2025-10-01T12:00:00.000Z") + "\n"
           + '{"typ\\u0065":"message","timestamp":"2025-10-01T12:05:00.000Z","message":{"role":"us\\u0065r","content":"esc\\u0061ped \\ud800 lone"}}\n'
           + '{"type":"message","message":{"role":"assistant","content":[{"type":"t\\u0065xt","text":"dup"}],"content":[{"type":"text","text":"last wins"}]}}\n').encode()
          + b'{"type":"message","message":{"role":"user","content":"bad \xff\xfe utf8"}}\n'
          + b'{"type":"message","message":{"role":"user","content":""}}\n'
          + b'{"type":"message","message":{"role":"user","content":[]}}\n'
          + b'{"type":"message","message":{"role":"user"}}\n'
          + b'{"type":"message","message":{"role":7,"content":null}}\n'
          + b'{"type":"message","message":"not an object"}\n'
          + b'{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":42},{"type":"text"},{"type":"text","text":null},{"type":"text","text":{"a":1}},{"type":"text","text":[1,[2,null],"x"]},3,"s",[],true]}}\n',
          ms(30))
    # junk before the header, falsy lines, NBSP-blank lines, a later header line, CRLF
    write(f"{A}/2025-10-01T13-00-00-000Z_a4.jsonl",
          ("not json\r\n0\r\nnull\r\n\"\"\r\n\u00a0 \r\n"
           + header("a4", CA, ts="2025-10-01T13:00:00.000Z") + "\r\n"
           + user("crlf user", ts="2025-10-01T13:01:00.000Z") + "\r\n"
           + header("other", "/elsewhere") + "\r\n"
           + '42\r\n"x"\r\n[1]\r\n'
           + assistant("crlf assistant", ts="2025-10-01T13:02:00.000Z") + "\r\n"), ms(40))
    # torn last line
    write(f"{A}/2025-10-01T14-00-00-000Z_a5.jsonl",
          "\n".join([header("a5", CA, ts="2025-10-01T14:00:00.000Z"),
                     user("before the tear", mts=1759327260000)])
          + '\n{"type":"message","message":{"role":"user","content":"torn', ms(50))
    # lone \r inside JSON white space: readline splits the line, pi's listing loses it
    write(f"{A}/2025-10-01T15-00-00-000Z_a6.jsonl",
          header("a6", CA, ts="2025-10-01T15:00:00.000Z") + "\n"
          + '{"type":"message",\r"message":{"role":"user","content":"split by a lone CR"}}\n'
          + user("kept", mts=1759330860000) + "\r"
          + assistant("after a lone CR", mts=1759330870000) + "\r\r"
          + '"just a string"\r\r\n', ms(60))
    # CR-only file: readline splits on \r, so pi lists it (the loader would not open it)
    write(f"{A}/2025-10-01T16-00-00-000Z_a7.jsonl",
          "\r".join([header("a7", CA, ts="2025-10-01T16:00:00.000Z"), user("cr only", mts=1759334460000)]) + "\r",
          ms(70))
    # times: numeric message timestamps win; entry ISO time otherwise; negative; invalid
    write(f"{A}/2025-10-01T17-00-00-000Z_a8.jsonl", [
        header("a8", CA, ts="not a date"),
        user("iso time only", ts="2025-10-02T09:00:00.000Z"),
        user("string mts falls back to entry time", mts="1759312860000", ts="2025-10-02T08:00:00.000Z"),
        assistant("negative", mts=-5),
    ], ms(80))
    # invalid header time, no messages: modified = mtime (sub-ms mtime rounds)
    write(f"{A}/2025-10-01T18-00-00-000Z_a9.jsonl", [header("a9", CA, ts=12345)], ms(90) + 0.5)
    # header id not a string, no cwd, header timestamp missing, name cleared by ""
    write(f"{A}/2025-10-01T19-00-00-000Z_a10.jsonl", [
        j({"type": "session", "id": 17}),
        j({"type": "session_info", "name": "will be cleared"}),
        j({"type": "session_info", "name": "   "}),
        user("id is a number"),
    ], ms(100))
    # huge timestamp: modified is an Invalid Date (null), sorts by NaN
    write(f"{A}/2025-10-01T20-00-00-000Z_a11.jsonl", [
        header("a11", CA, ts="2025-10-01T20:00:00.000Z"),
        '{"type":"message","message":{"role":"user","content":"far future","timestamp":1e400}}',
    ], ms(110))
    write(f"{A}/2025-10-01T21-00-00-000Z_a12.jsonl", [
        header("a12", CA, ts="+275760-09-13T00:00:00.000Z"),
        assistant("ts over the limit", mts=8.64e15 + 1),
    ], ms(120))

    # ---- project A: damaged files ---------------------------------------------------
    write(f"{A}/notes.txt", "not a session file\n", ms(200))
    write(f"{A}/session.json", [header("json", CA)], ms(201))
    write(f"{A}/2025-10-02T00-00-00-000Z_bak.jsonl.bak", [header("bak", CA)], ms(202))
    write(f"{A}/2025-10-02T01-00-00-000Z_noheader.jsonl", [user("no header"), header("late", CA)], ms(203))
    write(f"{A}/2025-10-02T02-00-00-000Z_bom.jsonl",
          "\ufeff" + header("bom", CA) + "\n" + user("after a BOM header") + "\n", ms(204))
    write(f"{A}/2025-10-02T02-30-00-000Z_bomonly.jsonl", "\ufeff" + header("bomonly", CA) + "\n", ms(204))
    write(f"{A}/2025-10-02T03-00-00-000Z_nullcontent.jsonl",
          [header("nullcontent", CA), '{"type":"message","message":{"role":"user","content":null}}'], ms(205))
    write(f"{A}/2025-10-02T03-30-00-000Z_nullblock.jsonl",
          [header("nullblock", CA), '{"type":"message","message":{"role":"assistant","content":[null]}}'], ms(205))
    write(f"{A}/2025-10-02T03-40-00-000Z_numcontent.jsonl",
          [header("numcontent", CA), '{"type":"message","message":{"role":"user","content":5}}'], ms(205))
    write(f"{A}/2025-10-02T03-50-00-000Z_nomessage.jsonl",
          [header("nomessage", CA), '{"type":"message","id":"x"}'], ms(205))
    write(f"{A}/2025-10-02T04-00-00-000Z_badname.jsonl",
          [header("badname", CA), user("named badly"), '{"type":"session_info","name":42}'], ms(206))
    write(f"{A}/2025-10-02T04-30-00-000Z_objname.jsonl",
          [header("objname", CA), '{"type":"session_info","name":{"x":1}}'], ms(206))
    write(f"{A}/2025-10-02T05-00-00-000Z_empty.jsonl", b"", ms(207))
    write(f"{A}/2025-10-02T05-30-00-000Z_blank.jsonl", "\n\n  \n", ms(207))
    write(f"{A}/2025-10-02T06-00-00-000Z_nonobject.jsonl", ["[1,2]", header("nonobj", CA)], ms(208))
    write(f"{A}/2025-10-02T06-30-00-000Z_badheader.jsonl", ['{"type":"session","id":"x"', user("x")], ms(208))
    symlink(f"{A}/2025-10-02T07-00-00-000Z_dangling.jsonl", "does-not-exist.jsonl")
    symlink(f"{A}/2025-10-02T08-00-00-000Z_loop.jsonl", "2025-10-02T08-00-00-000Z_loop.jsonl")
    write(f"{A}/2025-10-02T09-00-00-000Z_dir.jsonl/keep.txt", "a folder named *.jsonl\n", ms(209))
    set_mtime(f"{A}/2025-10-02T09-00-00-000Z_dir.jsonl", ms(209))

    # ---- project B: ties --------------------------------------------------------------
    # Same activity time in every file, so the output keeps candidate order (mtime, then
    # localeCompare of the names, descending).
    tie = 1759400000000
    names = ["a.jsonl", "A.jsonl", "b.jsonl", "B.jsonl", "a-b.jsonl", "a_b.jsonl", "ab.jsonl",
             "a.b.jsonl", "a b.jsonl", "10.jsonl", "9.jsonl", "a1.jsonl", "a10.jsonl", "a2.jsonl",
             "Ab.jsonl", "aB.jsonl", "a~b.jsonl", "a$b.jsonl", "a(b).jsonl", "a@b.jsonl"]
    for i, n in enumerate(names):
        write(f"{B}/{n}", [header(f"tie-{i}", CB), user(f"tie {n}", mts=tie)], ms(300 + (i % 3)))
    # equal mtimes across folders too
    write(f"{B}/2025-10-03T00-00-00-000Z_b1.jsonl", [header("b1", CB), user("b1", mts=tie)], ms(300))

    # ---- symlinked project folder and other root entries ------------------------------
    write("linked-target/2025-10-04T00-00-00-000Z_l1.jsonl",
          [header("l1", "/home/u/linked"), user("through a symlinked folder", mts=tie)], ms(300))
    write("linked-target/2025-10-04T01-00-00-000Z_l2.jsonl",
          [header("l2", "/home/u/linked"), assistant("only an assistant", mts=tie + 1)], ms(301))
    write("linked-target/keep.txt", "x\n", ms(0))
    symlink("agent/sessions/--home-u-linked--", "../../linked-target")
    symlink("agent/sessions/--dangling--", "../../nowhere")
    symlink("agent/sessions/--loop--", "--loop--")
    symlink("agent/sessions/file-link", "../../linked-target/keep.txt")
    write("agent/sessions/stray.jsonl", [header("stray", "/")], ms(400))

    # ---- custom flat dir with mixed cwds ----------------------------------------------
    F = "flat"
    write(f"{F}/2025-10-05T00-00-00-000Z_f1.jsonl", [header("f1", CA), user("flat a", mts=ms(500))], ms(500))
    write(f"{F}/2025-10-05T01-00-00-000Z_f2.jsonl", [header("f2", CB), user("flat b", mts=ms(501))], ms(501))
    write(f"{F}/2025-10-05T02-00-00-000Z_f3.jsonl", [header("f3", CA + "/"), user("trailing slash cwd")], ms(502))
    write(f"{F}/2025-10-05T03-00-00-000Z_f4.jsonl", [header("f4", "/home/u/./proj-a/../proj-a"), user("dotted cwd")], ms(503))
    write(f"{F}/2025-10-05T04-00-00-000Z_f5.jsonl", [header("f5", ""), user("empty cwd")], ms(504))
    write(f"{F}/2025-10-05T05-00-00-000Z_f6.jsonl", [j({"type": "session", "id": "f6"}), user("no cwd")], ms(505))
    write(f"{F}/2025-10-05T06-00-00-000Z_f7.jsonl", [header("f7", 42), user("numeric cwd")], ms(506))
    write(f"{F}/2025-10-05T07-00-00-000Z_f8.jsonl", [header("f8", CA), '{"type":"message"}'], ms(507))

    (HERE / "mtimes.json").write_text(json.dumps(MTIMES, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()

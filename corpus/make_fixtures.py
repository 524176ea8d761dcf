#!/usr/bin/env python3
"""Regenerate the hand-made session corpus: corpus/valid/*.jsonl, corpus/malformed/*.jsonl
and corpus/leaves.tsv.

Run from anywhere:   python3 corpus/make_fixtures.py
then bless:          corpus/bless.sh

Everything here is deterministic (ids are derived from the file name), so re-running gives
byte-identical files. Many files need exact bytes (CRLF, BOM, invalid UTF-8, lone surrogate
escapes, NUL, no final newline), so lines are built as bytes, not through a JSON library,
wherever that matters.

Classification (see README.md):
  valid/      pi opens the file as a session, every non-blank line is a JSON object, and every
              step (branch, context, tree, name) finishes without throwing.
  malformed/  pi refuses the file, or the file holds lines pi drops or keeps as non-objects,
              or some step throws or never terminates (parent cycles), or it is not a session.
"""

import hashlib
import json
import os
import shutil
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
MISSING = object()  # "leave this key out"

LEAVES = []  # (relative file, leaf)
WRITTEN = []


def J(v):
    """Compact JSON like JS's JSON.stringify for plain data (ASCII-safe values only)."""
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def obj(pairs):
    """Serialise an ordered list of (key, value) pairs, dropping MISSING values."""
    return "{" + ",".join(J(k) + ":" + J(v) for k, v in pairs if v is not MISSING) + "}"


def iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


BASE = datetime(2025, 3, 14, 9, 0, 0, tzinfo=timezone.utc)


def ms(dt):
    return int(dt.timestamp() * 1000)


class S:
    """One session file under construction."""

    def __init__(self, name, version=3, header=True, header_extra=None, cwd="/home/dev/project"):
        self.name = name
        self.lines = []  # list of bytes (without line terminator)
        self.n = 0
        self.t = BASE
        self.last = None
        self.first = None
        self.session_id = self._uuid()
        if header:
            pairs = [("type", "session")]
            if version is not MISSING:
                pairs.append(("version", version))
            pairs += [("id", self.session_id), ("timestamp", iso(self.t)), ("cwd", cwd)]
            if header_extra:
                pairs += list(header_extra)
            self.raw(obj(pairs))

    def _uuid(self):
        h = hashlib.sha1(("session:" + self.name).encode()).hexdigest()
        return f"0195{h[:4]}-{h[4:8]}-7{h[8:11]}-8{h[11:14]}-{h[14:26]}"

    def nid(self):
        """Next realistic 8-hex entry id, deterministic per file."""
        self.n += 1
        return hashlib.sha1(f"{self.name}#{self.n}".encode()).hexdigest()[:8]

    def tick(self, seconds=7):
        self.t = self.t + timedelta(seconds=seconds)
        return self.t

    def raw(self, line):
        self.lines.append(line.encode("utf-8") if isinstance(line, str) else line)

    def entry(self, type_, fields=(), parent=MISSING, id=MISSING, ts=MISSING, after=None):
        """Append an entry. parent: MISSING -> previous entry (or null); None -> null;
        use NOPARENT to leave the key out. id: MISSING -> fresh id; NOID -> no id key."""
        eid = self.nid() if id is MISSING else id
        par = self.last if parent is MISSING else parent
        t = self.tick()
        tsv = iso(t) if ts is MISSING else ts
        pairs = [("type", type_)]
        if eid is not NOID:
            pairs.append(("id", eid))
        if par is not NOPARENT:
            pairs.append(("parentId", par))
        if tsv is not NOTS:
            pairs.append(("timestamp", tsv))
        pairs += list(fields)
        if after:
            pairs += list(after)
        self.raw(obj(pairs))
        if eid is not NOID:
            self.last = eid
        return eid

    # ---- entry helpers -------------------------------------------------------------------
    def msg(self, message, **kw):
        return self.entry("message", [("message", message)], **kw)

    def user(self, text, **kw):
        return self.msg({"role": "user", "content": text, "timestamp": ms(self.t) + 7000}, **kw)

    def assistant(self, text, provider="anthropic", model="claude-sonnet-4-5", **kw):
        return self.msg(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "api": "anthropic-messages",
                "provider": provider,
                "model": model,
                "usage": {"input": 120, "output": 40, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 160,
                          "cost": {"input": 0.00036, "output": 0.0006, "cacheRead": 0, "cacheWrite": 0, "total": 0.00096}},
                "stopReason": "stop",
                "timestamp": ms(self.t) + 7000,
            },
            **kw,
        )

    def tool_result(self, text, call="toolu_01", **kw):
        return self.msg({"role": "toolResult", "toolCallId": call, "toolName": "bash",
                         "content": [{"type": "text", "text": text}], "isError": False,
                         "timestamp": ms(self.t) + 7000}, **kw)

    def system(self, content, **kw):
        return self.msg({"role": "system", "content": content, "sections": {"preamble": "You are a coding assistant."},
                         "timestamp": ms(self.t) + 7000}, **kw)

    def compaction(self, first_kept, summary="Summary of the earlier conversation.", tokens=48000, extra=(), **kw):
        f = [("summary", summary), ("firstKeptEntryId", first_kept), ("tokensBefore", tokens)] + list(extra)
        return self.entry("compaction", f, **kw)

    def context_edit(self, target, replacement, **kw):
        return self.entry("context_edit", [("targetId", target), ("replacement", replacement)], **kw)

    def label(self, target, label, **kw):
        return self.entry("label", [("targetId", target), ("label", label)], **kw)

    def session_info(self, name, **kw):
        return self.entry("session_info", [("name", name)], **kw)

    def custom_message(self, content, custom_type="my-ext", display=True, details=MISSING, **kw):
        return self.entry("custom_message", [("customType", custom_type), ("content", content),
                                             ("display", display), ("details", details)], **kw)

    # ---- output ------------------------------------------------------------------------------
    def write(self, kind, eol=b"\n", final_eol=True, tail=b""):
        data = eol.join(self.lines) + (eol if final_eol and self.lines else b"") + tail
        write_bytes(kind, self.name, data)
        return self


def S_id(line):
    """The id of an already written line."""
    return json.loads(line)["id"]


def rawentry(s, type_part, fields_part):
    """Append an entry built from raw bytes (for bytes JSON libraries will not write)."""
    eid = s.nid()
    par = b"null" if s.last is None else b'"' + s.last.encode() + b'"'
    ts = iso(s.tick()).encode()
    s.raw(b"{" + type_part + b',"id":"' + eid.encode() + b'","parentId":' + par + b',"timestamp":"' + ts + b'",' + fields_part + b"}")
    if s.first is None:
        s.first = eid
    s.last = eid
    return eid


def rawmsg(s, content, role=b"user"):
    """A message whose content string is given as raw bytes (already JSON-escaped as wanted)."""
    if role == b"assistant":
        m = b'"message":{"role":"assistant","content":[{"type":"text","text":"' + content + b'"}],"provider":"p","model":"m","timestamp":1}'
    else:
        m = b'"message":{"role":"' + role + b'","content":"' + content + b'","timestamp":1}'
    return rawentry(s, b'"type":"message"', m)


NOID = object()
NOPARENT = object()
NOTS = object()


def write_bytes(kind, name, data):
    assert kind in ("valid", "malformed")
    path = os.path.join(HERE, kind, name + ".jsonl")
    with open(path, "wb") as f:
        f.write(data)
    WRITTEN.append(f"{kind}/{name}.jsonl")


def leaf(kind, name, leaf_id):
    LEAVES.append((f"{kind}/{name}.jsonl", leaf_id))


def conv(s, n=2, prefix=""):
    """n user/assistant exchanges; returns the ids."""
    ids = []
    for i in range(n):
        ids.append(s.user(f"{prefix}question {i + 1}"))
        ids.append(s.assistant(f"{prefix}answer {i + 1}"))
    return ids


# =====================================================================================
# valid/
# =====================================================================================


def valid_basic():
    s = S("minimal-conversation")
    s.user("Hello")
    s.assistant("Hi! How can I help?")
    s.write("valid")

    s = S("header-only")
    s.write("valid")

    s = S("header-only-no-final-newline")
    s.write("valid", final_eol=False)

    s = S("header-extra-fields", header_extra=[("parentSession", "/home/dev/.pi/agent/sessions/--home-dev-project--/2025-03-13T08-00-00-000Z_0195aaaa-bbbb-7ccc-8ddd-eeeeffff0000.jsonl"),
                                               ("provider", "anthropic"), ("branchedFrom", "/tmp/old.jsonl"),
                                               ("extra", {"nested": [1, 2, {"k": None}]})])
    s.user("continue from the parent")
    s.assistant("ok")
    s.write("valid")

    s = S("header-empty-id")
    # id "" is a string, so pi accepts the header
    s.lines[0] = obj([("type", "session"), ("version", 3), ("id", ""), ("timestamp", iso(BASE)), ("cwd", "/home/dev/project")]).encode()
    s.user("hi")
    s.write("valid")


def valid_all_types():
    s = S("all-entry-types")
    sysm = s.msg({"role": "system", "content": "", "sections": {"preamble": "You are an expert coding assistant.", "cwd": "/home/dev/project"},
                  "toolsAdded": [{"name": "bash", "description": "Run a command", "parameters": {"type": "object"}}], "timestamp": ms(s.t) + 7000})
    s.entry("model_change", [("provider", "anthropic"), ("modelId", "claude-sonnet-4-5")])
    s.entry("thinking_level_change", [("thinkingLevel", "medium")])
    u1 = s.user("List the files in src/")
    s.msg({"role": "assistant", "content": [{"type": "thinking", "thinking": "I should run ls.", "thinkingSignature": "sig=="},
                                            {"type": "toolCall", "id": "toolu_01", "name": "bash", "arguments": {"command": "ls src"}}],
           "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
           "usage": {"input": 900, "output": 30, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 930,
                     "cost": {"input": 0.0027, "output": 0.00045, "cacheRead": 0, "cacheWrite": 0, "total": 0.00315}},
           "stopReason": "toolUse", "timestamp": ms(s.t) + 7000})
    s.tool_result("lib.rs\nmain.rs\n")
    a2 = s.assistant("There are two files: lib.rs and main.rs.")
    s.msg({"role": "bashExecution", "command": "cargo check", "output": "Finished dev profile", "exitCode": 0,
           "cancelled": False, "truncated": False, "timestamp": ms(s.t) + 7000})
    s.msg({"role": "custom", "customType": "reminder", "content": "Remember to run tests.", "display": True, "timestamp": ms(s.t) + 7000})
    s.msg({"role": "branchSummary", "summary": "Tried a different approach.", "fromId": "0f0f0f0f", "timestamp": ms(s.t) + 7000})
    s.msg({"role": "compactionSummary", "summary": "Old summary as a message.", "tokensBefore": 1000, "timestamp": ms(s.t) + 7000})
    s.entry("custom", [("customType", "my-extension"), ("data", {"count": 42})])
    cm = s.custom_message("Injected context from an extension.", details={"source": "ext"})
    lab = s.label(u1, "checkpoint-1")
    s.session_info("Explore src layout")
    s.entry("usage", [("kind", "cache_warm"), ("provider", "anthropic"), ("model", "claude-sonnet-4-5"),
                      ("usage", {"input": 0, "output": 0, "cacheRead": 50000, "cacheWrite": 0, "totalTokens": 50000,
                                 "cost": {"input": 0, "output": 0, "cacheRead": 0.015, "cacheWrite": 0, "total": 0.015}})])
    bs = s.entry("branch_summary", [("fromId", "0f0f0f0f"), ("summary", "Branch explored approach A."), ("details", {"readFiles": ["src/lib.rs"], "modifiedFiles": []})])
    comp = s.compaction(a2, extra=[("details", {"readFiles": ["src/lib.rs"], "modifiedFiles": []}),
                            ("systemMessage", {"role": "system", "content": "You are an expert coding assistant.", "toolsAdded": [], "timestamp": ms(s.t) + 7000})])
    s.context_edit(a2, {"content": "There are two files."})
    s.context_edit(cm, None)
    s.user("Thanks, now open lib.rs")
    s.assistant("Opening it.")
    s.write("valid")
    for l in (comp, bs, lab):
        leaf("valid", "all-entry-types", l)


def valid_branches():
    s = S("branches")
    u1 = s.user("Write a parser")
    a1 = s.assistant("Which format?")
    u2 = s.user("JSON")
    a2 = s.assistant("Here is a JSON parser.")
    s.last = a1
    u2b = s.user("CSV")
    a2b = s.assistant("Here is a CSV parser.")
    u3b = s.user("Add quoting")
    a3b = s.assistant("Quoting added.")
    s.last = a1
    bs = s.entry("branch_summary", [("fromId", a3b), ("summary", "Wrote a CSV parser with quoting.")])
    s.user("TOML then")
    s.assistant("Here is a TOML parser.")
    s.write("valid")
    for l in (a2, a3b, a1, u1, u2b, bs, "null", "ffffffff"):
        leaf("valid", "branches", l)

    # orphans: parentId naming no entry; several roots stay in file order
    s = S("orphans")
    s.user("root conversation")
    s.assistant("ok")
    o1 = s.user("orphan one", parent="0badf00d")
    s.assistant("reply under orphan one")
    s.user("orphan two", parent="deadbeef")
    s.user("second null root", parent=None)
    s.assistant("last entry, child of the second root")
    s.write("valid")
    leaf("valid", "orphans", o1)

    # parentId equal to own id, NOT on the leaf path: a root in the tree, nothing else
    s = S("parentid-self-side-root")
    u = s.user("main line")
    sid = s.nid()
    s.user("self parented", id=sid, parent=sid)
    s.last = u
    s.assistant("leaf on the main line")
    s.write("valid")
    leaf("valid", "parentid-self-side-root", sid)  # getBranch from it never returns

    # entries whose parentId is missing vs null
    s = S("missing-parentid-vs-null")
    s.user("null parent root")
    s.assistant("child")
    x = s.user("no parentId key at all", parent=NOPARENT)
    s.assistant("child of the parentless one")
    s.write("valid")
    leaf("valid", "missing-parentid-vs-null", x)

    s = S("missing-parentid-child-of-idless")
    u = s.user("root")
    s.user("an entry without id (parent: root)", id=NOID, parent=u)
    x = s.assistant("entry with id but no parentId", parent=NOPARENT)
    s.user("child of that one")
    s.write("valid")
    leaf("valid", "missing-parentid-child-of-idless", x)

    s = S("idless-entry-last")
    conv(s, 1)
    s.user("last line has no id", id=NOID)
    s.write("valid")

    # two id-less roots: pi's nodeMap keeps one node for key undefined, pushed twice into roots;
    # entries with an id but no parentId become its children (sorted twice, NaN timestamps)
    s = S("idless-roots-duplicated")
    s.entry("custom", [("customType", "first-idless")], id=NOID, parent=NOPARENT)
    s.entry("custom", [("customType", "second-idless")], id=NOID, parent=NOPARENT)
    tss = ["2025-03-14T09:05:00.000Z", "bogus", "2025-03-14T09:01:00.000Z", MISSING, "2025-03-14T09:03:00.000Z",
           "2025-03-14T09:02:00.000Z", "nope", "2025-03-14T09:00:30.000Z"]
    for i, t in enumerate(tss):
        s.entry("custom", [("customType", f"child-{i}")], parent=NOPARENT, ts=NOTS if t is MISSING else t)
    s.user("last", parent=None)
    s.write("valid")


def valid_ids():
    s = S("duplicate-ids-later-wins")
    u1 = s.user("first question")
    a1 = s.assistant("first answer")
    x = s.nid()
    s.user("ORIGINAL text of x", id=x, parent=a1)
    y = s.assistant("answer under x")
    s.user("REPLACEMENT text of x (same id, same parent)", id=x, parent=a1)
    s.last = y
    s.user("follow-up under y")
    s.write("valid")
    leaf("valid", "duplicate-ids-later-wins", x)

    s = S("duplicate-id-different-parents")
    u1 = s.user("q1")
    a1 = s.assistant("a1")
    x = s.nid()
    s.user("x under a1", id=x, parent=a1)
    s.last = u1
    s.assistant("a1 alternative")
    s.user("x again, now under the alternative", id=x)
    s.assistant("child of x")
    s.write("valid")

    s = S("duplicate-id-last-line")
    u1 = s.user("q1")
    a1 = s.assistant("a1")
    s.user("q2")
    s.assistant("a2")
    u2 = s.lines[-2]  # (bytes of q2's line; only the id matters)
    q2 = s.last  # a2
    s.user("q2's id re-used as the last line, parent a1 (a2's parent is now this entry)", id=S_id(u2), parent=a1)
    s.write("valid")

    s = S("non-string-ids")
    r = s.user("root")
    s.entry("message", [("message", {"role": "user", "content": "id is the number 5", "timestamp": 1})], id=5, parent=r)
    s.entry("message", [("message", {"role": "assistant", "content": [{"type": "text", "text": "parentId is the number 5"}], "provider": "p", "model": "m", "timestamp": 2})], id=6.5, parent=5)
    s.entry("message", [("message", {"role": "user", "content": "parentId is the string \"5\"", "timestamp": 3})], id=True, parent="5")
    s.entry("custom", [("customType", "id-array")], id=["x"], parent=5)
    s.last = r
    s.assistant("last, ordinary")
    s.write("valid")
    leaf("valid", "non-string-ids", "5")  # a string "5" never finds the number id 5

    s = S("id-null-last")
    conv(s, 1)
    s.user("last line has id null", id=None)
    s.write("valid")

    s = S("id-empty-string-last")
    conv(s, 1)
    s.user("last line has id \"\"", id="")
    s.write("valid")

    s = S("id-zero-last")
    conv(s, 1)
    s.user("last line has id 0", id=0)
    s.write("valid")

    s = S("id-object-last")
    conv(s, 1)
    s.user("last line has id {}", id={})
    s.write("valid")

    s = S("non-string-type")
    r = s.user("root")
    for t in (5, None, True, ["message"], {"t": "message"}, "Message", ""):
        s.entry(t, [("message", {"role": "user", "content": f"type is {J(t)}", "timestamp": 1})])
    s.assistant("last")
    s.write("valid")

    s = S("unknown-entry-types-and-fields")
    s.user("hello", after=[("futureField", {"a": 1})])
    s.entry("checkpoint", [("snapshot", "abc123"), ("files", ["a.rs"])])
    s.msg({"role": "user", "content": "message with unknown inner fields", "timestamp": ms(s.t), "x-client": "web", "attachments": []})
    s.entry("ui_state", [("collapsed", True)])
    s.msg({"role": "weird", "content": "unknown role", "timestamp": 1})
    s.msg({"content": "no role at all"})
    s.assistant("done", after=[("zz", None)])
    s.write("valid")

    s = S("later-session-lines")
    s.user("q1")
    s.raw(obj([("type", "session"), ("version", 3), ("id", "0195ffff-0000-7000-8000-000000000000"), ("timestamp", iso(BASE)), ("cwd", "/other")]))
    s.assistant("a1")
    s.raw('{"type":"session"}')
    u2 = s.user("q2")
    s.raw('{"type":"session","version":1,"id":"x","parentId":"%s"}' % u2)
    s.write("valid")


def valid_compaction():
    s = S("compaction-kept-on-path")
    u1, a1, u2, a2 = conv(s, 2)
    u3 = s.user("question 3")
    s.assistant("answer 3")
    c = s.compaction(u3)
    s.user("question 4")
    s.assistant("answer 4")
    s.write("valid")
    for l in (c, a2, u3):
        leaf("valid", "compaction-kept-on-path", l)

    s = S("compaction-first-kept-self")
    conv(s, 2)
    cid = s.nid()
    s.compaction(cid, id=cid)
    s.user("after")
    s.write("valid")

    s = S("compaction-first-kept-off-path")
    u1, a1 = conv(s, 1)
    s.user("side question")
    side = s.assistant("side answer")
    s.last = a1
    conv(s, 1, prefix="main ")
    s.compaction(side)
    s.user("after compaction")
    s.write("valid")

    s = S("compaction-first-kept-unknown-id")
    conv(s, 2)
    s.compaction("c0ffee00")
    s.user("after")
    s.write("valid")

    s = S("compaction-first-kept-missing")
    conv(s, 2)
    s.entry("compaction", [("summary", "no firstKeptEntryId"), ("tokensBefore", 100)])
    s.user("after")
    s.write("valid")

    s = S("compaction-first-kept-after-compaction")
    conv(s, 1)
    fid = s.nid()
    s.compaction(fid)
    s.user("after, and the firstKeptEntryId", id=fid)
    s.assistant("answer")
    s.write("valid")

    s = S("compaction-two-older-in-kept-range")
    u1, a1, u2, a2 = conv(s, 2)
    c1 = s.compaction(u2, summary="first summary")
    u3 = s.user("question 3")
    s.assistant("answer 3")
    c2 = s.compaction(a2, summary="second summary")
    s.user("question 4")
    s.write("valid")
    leaf("valid", "compaction-two-older-in-kept-range", u3)

    s = S("compaction-two-older-summarized")
    conv(s, 2)
    c1 = s.compaction(s.last, summary="first summary")
    u3 = s.user("question 3")
    s.assistant("answer 3")
    s.compaction(u3, summary="second summary")
    s.user("question 4")
    s.write("valid")
    leaf("valid", "compaction-two-older-summarized", c1)

    s = S("compaction-system-message")
    s.system("initial prompt")
    s.user("q1")
    a1 = s.assistant("a1")
    s.system("patch in kept range")
    s.user("q2")
    s.assistant("a2")
    s.compaction(a1, extra=[("systemMessage", {"role": "system", "content": "Checkpoint prompt.", "sections": {"preamble": "checkpoint"}, "timestamp": ms(s.t)})])
    s.system("patch after compaction")
    s.system(None)
    s.user("q3")
    s.write("valid")

    s = S("compaction-systemmessage-values")
    u1, a1 = conv(s, 1)
    leaves_ = []
    for label_, sm in (("null", None), ("string", "raw string system message"), ("false", False), ("user-role", {"role": "user", "content": "a user message as systemMessage"}), ("empty-object", {})):
        s.last = a1
        s.compaction(a1, summary=f"systemMessage is {label_}", extra=[("systemMessage", sm)])
        leaves_.append(s.user(f"after {label_}"))
    s.write("valid")
    for l in leaves_[:-1]:
        leaf("valid", "compaction-systemmessage-values", l)

    s = S("compaction-fields-missing")
    u1, a1 = conv(s, 1)
    s.entry("compaction", [("firstKeptEntryId", a1)], ts="not a date")
    s.user("after")
    s.write("valid")

    s = S("compaction-as-leaf")
    u1, a1, u2, a2 = conv(s, 2)
    s.compaction(u2)
    s.write("valid")

    s = S("compaction-retained-tail-seed")
    u1, a1, u2, a2 = conv(s, 2)
    s.compaction(u2, extra=[("retainedTail", [{"role": "user", "content": "retained tail message", "timestamp": 1}])])
    s.user("after")
    s.write("valid")

    s = S("system-messages-no-compaction")
    s.system("first")
    s.user("q1")
    s.system([{"type": "text", "text": "array content"}])
    s.assistant("a1")
    s.system(None)
    s.write("valid")


def valid_context_edit():
    def all_roles(s):
        ids = {}
        ids["system"] = s.system("prompt")
        ids["user"] = s.user("user text")
        ids["assistant"] = s.assistant("assistant text")
        ids["toolResult"] = s.tool_result("tool output")
        ids["bashExecution"] = s.msg({"role": "bashExecution", "command": "ls", "output": "a b", "exitCode": 0, "cancelled": False, "truncated": False, "timestamp": 1})
        ids["customRole"] = s.msg({"role": "custom", "customType": "hook", "content": "custom role message", "display": True, "timestamp": 2})
        ids["branchSummaryRole"] = s.msg({"role": "branchSummary", "summary": "bs message", "fromId": "abcdef01", "timestamp": 3})
        ids["custom_message"] = s.custom_message("custom_message text")
        ids["branch_summary"] = s.entry("branch_summary", [("fromId", "abcdef01"), ("summary", "branch summary entry")])
        ids["custom"] = s.entry("custom", [("customType", "state"), ("data", {})])
        return ids

    s = S("context-edit-null-each-role")
    ids = all_roles(s)
    for k, v in ids.items():
        s.context_edit(v, None)
    s.user("only this is left")
    s.write("valid")

    s = S("context-edit-string-each-role")
    ids = all_roles(s)
    for k, v in ids.items():
        s.context_edit(v, {"content": f"edited {k}"})
    s.write("valid")

    s = S("context-edit-array-content")
    u = s.user("original user")
    a = s.assistant("original assistant")
    cm = s.custom_message([{"type": "text", "text": "original custom"}])
    s.context_edit(u, {"content": [{"type": "text", "text": "new user"}, {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]})
    s.context_edit(a, {"content": [{"type": "text", "text": "new assistant"}], "extra": "ignored"})
    s.context_edit(cm, {"content": []})
    s.write("valid")

    s = S("context-edit-on-compaction")
    u1, a1, u2, a2 = conv(s, 2)
    c = s.compaction(u2, extra=[("systemMessage", {"role": "system", "content": "checkpoint", "timestamp": 5})])
    s.user("q3")
    e1 = s.context_edit(c, {"content": "edit with content: unchanged"})
    s.last = e1
    s.context_edit(c, None)
    s.write("valid")
    leaf("valid", "context-edit-on-compaction", e1)

    s = S("context-edit-latest-wins")
    u1 = s.user("q1")
    a1 = s.assistant("a1")
    e1 = s.context_edit(u1, {"content": "first edit"})
    e2 = s.context_edit(u1, None)
    s.context_edit(u1, {"content": "third edit"})
    s.context_edit(a1, {"content": "x"})
    s.context_edit(a1, None)
    s.user("q2")
    s.write("valid")
    for l in (e1, e2, a1):
        leaf("valid", "context-edit-latest-wins", l)

    s = S("context-edit-target-off-context")
    u1, a1 = conv(s, 1)
    side = s.user("side branch question")
    s.last = a1
    u2 = s.user("q2")
    a2 = s.assistant("a2")
    a3_id = s.nid()
    early_edit = s.context_edit(a3_id, None)  # drops a3, but is itself summarized away below
    u3 = s.user("q3")
    a3 = s.assistant("a3 (kept: the edit dropping it is not in the context)", id=a3_id)
    s.compaction(u3)
    s.context_edit(side, None)          # target on another branch
    s.context_edit(u1, None)            # target summarized away
    s.context_edit("c0ffee00", None)    # target unknown
    s.context_edit(u3, {"content": "edited q3 (in kept range)"})
    s.user("q4")
    s.write("valid")

    s = S("context-edit-on-other-branch")
    u1, a1 = conv(s, 1)
    s.context_edit(u1, None)
    s.last = a1
    s.user("q2 on the branch without the edit")
    s.write("valid")

    s = S("context-edit-odd-replacement")
    u = s.user("user")
    a = s.assistant("assistant")
    t = s.tool_result("tool")
    cm = s.custom_message("custom")
    u2 = s.user("user 2")
    s.context_edit(u, "a bare string")
    s.context_edit(a, {})
    s.context_edit(t, False)
    s.context_edit(cm, {"content": 5})
    s.context_edit(u2, {"content": None})
    s.write("valid")

    s = S("context-edit-missing-replacement-harmless")
    sy = s.system("prompt")
    s.user("q1")
    lb = s.label(sy, "sys")
    s.entry("context_edit", [("targetId", sy)])
    s.entry("context_edit", [("targetId", lb)])
    s.write("valid")

    s = S("context-edit-without-target-id")
    u1, a1 = conv(s, 1)
    e = s.entry("context_edit", [("replacement", None)])
    s.user("id-less last message, dropped by the targetId-less edit", id=NOID, parent=e)
    s.write("valid")


def valid_messages():
    s = S("custom-message-fields")
    s.user("start")
    s.custom_message("plain string content", details={"k": 1})
    s.entry("custom_message", [("customType", "no-content"), ("display", False)])
    s.custom_message("invalid timestamp", ts="yesterday")
    s.custom_message("missing timestamp", ts=NOTS)
    s.custom_message("null timestamp", ts=None)
    s.custom_message("numeric timestamp", ts=1700000000000)
    s.custom_message([{"type": "text", "text": "array content"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}])
    s.entry("custom_message", [("content", "no customType, no display")])
    s.custom_message(None, custom_type="null-content")
    s.write("valid")

    s = S("timestamp-parsing-iso")
    for i, t in enumerate(("2025-03-14T09:00:00.000Z", "2025-03-14T09:00:00Z", "2025-03-14T09:00:00.1234Z", "2025-03-14T09:00:00.1Z",
              "2025-03-14", "2025-03", "2025", "2025-03-14T09:00:00", "2025-03-14T09:00", "2025-03-14T09:00:00+02:00",
              "2025-03-14T09:00:00.000-0530", "2025-03-14t09:00:00z", "2025-03-14 09:00:00Z", "+002025-03-14T09:00:00.000Z",
              "-000001-01-01T00:00:00Z", "2025-02-30T00:00:00Z", "2025-02-31T00:00:00Z", "2025-13-01T00:00:00Z",
              "2025-03-14T24:00:00Z", "2025-03-14T23:59:60Z", "Mar 14 2025", "Fri, 14 Mar 2025 09:00:00 GMT",
              "2025/03/14", "14 March 2025 10:00 UTC", "1741942800000", "", " ", "0", "275760-09-13T00:00:00Z",
              "+275760-09-13T00:00:00.000Z", "+275760-09-13T00:00:00.001Z", 0, -1, 1741942800000.5, 8.64e15, 8.64e15 + 1, True, False, [2025], {})):
        if i == 20:  # second half: legacy formats and non-string timestamps
            s.write("valid")
            s = S("timestamp-parsing-legacy-and-non-string")
        s.custom_message(f"timestamp {J(t)}", ts=t)
    s.write("valid")

    def role_msgs(s, with_content):
        for role, extra in (("user", {}), ("assistant", {"provider": "anthropic", "model": "claude-sonnet-4-5", "api": "anthropic-messages", "stopReason": "stop"}),
                            ("toolResult", {"toolCallId": "toolu_9", "toolName": "bash", "isError": False}), ("system", {}),
                            ("custom", {"customType": "hook", "display": True}), ("bashExecution", {"command": "ls", "exitCode": 0}),
                            ("branchSummary", {"summary": "s", "fromId": "abcdef01"}), ("compactionSummary", {"summary": "s", "tokensBefore": 1})):
            m = {"role": role}
            if with_content:
                m["content"] = None
            m.update(extra)
            m["timestamp"] = 1741942800000
            s.msg(m)

    s = S("message-null-content")
    role_msgs(s, True)
    s.write("valid")

    s = S("message-missing-content")
    role_msgs(s, False)
    s.write("valid")

    s = S("message-non-object-message")
    s.user("root")
    for m in ("just a string", 42, [], True, 0, False, "", {}):
        s.msg(m)
    s.write("valid")

    s = S("model-and-thinking-settings")
    s.entry("model_change", [("provider", "anthropic"), ("modelId", "claude-sonnet-4-5")])
    s.entry("thinking_level_change", [("thinkingLevel", "high")])
    s.user("q1")
    a = s.assistant("a1", provider="openai", model="gpt-4o")
    s.entry("thinking_level_change", [("thinkingLevel", "xhigh")])
    s.user("q2")
    mc = s.entry("model_change", [("provider", "google"), ("modelId", "gemini-2.5-pro")])
    s.write("valid")
    leaf("valid", "model-and-thinking-settings", a)

    s = S("model-settings-missing-fields")
    mc = s.entry("model_change", [("provider", "anthropic")])
    s.entry("thinking_level_change", [])
    s.user("q1")
    s.msg({"role": "assistant", "content": [{"type": "text", "text": "no provider/model"}], "timestamp": 1})
    s.write("valid")
    leaf("valid", "model-settings-missing-fields", mc)


def valid_labels_names():
    s = S("labels-set-clear-reset")
    u1, a1, u2, a2 = conv(s, 2)
    s.label(u1, "start")
    s.label(a1, "temp")
    s.label(a1, "")
    s.label(u2, "will be cleared by a missing label")
    s.entry("label", [("targetId", u2)])
    s.label(a2, "old")
    s.label(a2, None)
    s.label(u1, "restart")
    s.label(a2, "again")
    s.user("q3")
    s.write("valid")

    s = S("labels-non-string-values")
    u1, a1, u2, a2 = conv(s, 2)
    s.label(u1, 42)
    s.label(a1, True)
    s.label(u2, {"k": 1})
    s.label(a2, [])
    u3 = s.user("q3")
    s.label(u3, "0")
    s.label(s.last, 0)  # label on the label entry, falsy: clears nothing
    s.label(u3, "  spaced  ")
    s.write("valid")

    s = S("label-missing-target")
    conv(s, 1)
    s.label("deadbeef", "nobody home")
    s.user("q2")
    s.write("valid")

    s = S("label-without-target-id")
    conv(s, 1)
    s.entry("custom", [("customType", "idless")], id=NOID)
    s.entry("label", [("label", "targetless")])
    s.user("q2")
    s.write("valid")

    s = S("last-entry-is-label")
    u1, a1 = conv(s, 1)
    s.label(u1, "bookmark")
    s.write("valid")

    for name, names in (("session-name-trimmed", ["  Refactor auth module  "]),
                        ("session-name-internal-newline", ["fix\nthe bug\r\nnow"]),
                        ("session-name-empty-clears", ["First name", ""]),
                        ("session-name-whitespace-clears", ["First name", " \t\n "]),
                        ("session-name-null-clears", ["First name", None]),
                        ("session-name-missing-clears", ["First name", MISSING]),
                        ("session-name-non-string-then-string", [42, {"a": 1}, "Final name"]),
                        ("session-name-unicode-spaces", ["\u00a0\u2003Name with NBSP/em space\u3000\ufeff"])):
        s = S(name)
        s.user("q1")
        for n in names:
            s.entry("session_info", [("name", n)])
        s.assistant("a1")
        s.write("valid")

    s = S("session-name-latest-in-file-wins")
    u1, a1 = conv(s, 1)
    s.session_info("Name on branch A")
    la = s.user("branch A")
    s.last = a1
    s.session_info("Name on branch B")
    s.user("branch B")
    s.write("valid")
    leaf("valid", "session-name-latest-in-file-wins", la)


def valid_bytes():
    s = S("blank-lines")
    s.raw("")
    s.user("q1")
    s.raw("   ")
    s.raw("\t")
    s.raw("\r")
    s.raw("")
    s.assistant("a1")
    s.raw("\x0c")
    s.raw("\u00a0")  # NBSP line: trim() makes it blank
    s.raw("\u2028")
    s.raw("\ufeff")  # a lone BOM line: trim() removes U+FEFF, so it is blank
    s.raw("\u3000 \u00a0")
    s.write("valid")

    s = S("crlf-line-endings")
    conv(s, 2)
    s.write("valid", eol=b"\r\n")

    s = S("invalid-utf8-in-strings")
    for bad in (b"lone \xff byte", b"overlong \xc0\x80 nul", b"raw surrogate \xed\xa0\x80 bytes", b"truncated \xe2\x82 euro",
                b"above max \xf4\x90\x80\x80 cp", b"cut emoji \xf0\x9f\x98", b"lone continuation \x80\x80 x", b"latin1 caf\xe9",
                b"five-byte \xf8\x88\x80\x80\x80 form", b"fe ff \xfe\xff"):
        rawmsg(s, bad)
    rawentry(s, b'"type":"session_info"', b'"name":"name \xff with \xc3 bad bytes"')
    s.write("valid")

    s = S("lone-surrogate-escapes")
    rawmsg(s, b"lone high \\ud800 | lone low \\udc00 | x\\ud800y | two highs \\ud800\\udbff | end \\udbff")
    rawmsg(s, b"reversed pair \\ude00\\ud83d and upper \\uD800", role=b"assistant")
    rawentry(s, b'"type":"session_info"', b'"name":"name \\ud800 end"')
    rawentry(s, b'"type":"label"', b'"targetId":"' + s.first.encode() + b'","label":"\\udfff"')
    s.write("valid")

    s = S("escaped-surrogate-pairs")
    rawmsg(s, b"lower \\ud83d\\ude00 upper \\uD83D\\uDE00 mixed \\uD83d\\ude00 raw \xf0\x9f\x98\x80 bmp \\u00e9\\u20ac")
    s.write("valid")

    s = S("numbers-edge")
    s.user("numbers below")
    nums = b'{"inf":1e400,"ninf":-1e400,"negzero":-0,"negzerof":-0.0,"big":12345678901234567890,"bigger":123456789012345678901234567890,"one":1.0,"exp":1E2,"expplus":1e+2,"small":1e-7,"tiny":5e-324,"under":1e-400,"maxsafe1":9007199254740993,"frac":0.1000000000000000055511151231257827,"e21":1e21,"e20":100000000000000000000,"pi":3.14159265358979323846264338327950288}'
    s.custom_message("numbers in details")
    s.lines[-1] = s.lines[-1][:-1] + b',"details":' + nums + b"}"
    s.msg({"role": "user", "content": "usage numbers", "timestamp": 1})
    s.lines[-1] = s.lines[-1].replace(b'"timestamp":1}', b'"timestamp":1.0e3,"tokens":-0}')
    s.write("valid")

    s = S("duplicate-keys")
    u1 = s.user("q1")
    a1 = s.assistant("a1")
    x = s.nid()
    s.raw('{"type":"label","type":"message","id":"00000000","id":"%s","parentId":null,"parentId":"%s","timestamp":"2025-03-14T09:01:00.000Z","message":{"role":"user","content":"first content","content":"second content wins","timestamp":1}}' % (x, a1))
    y = s.nid()
    s.raw('{"type":"message","id":"%s","parentId":"%s","timestamp":"2025-03-14T09:02:00.000Z","timestamp":"bad","message":{"role":"system","content":"x"},"message":{"role":"assistant","content":[{"type":"text","text":"message key twice"}],"provider":"p1","provider":"p2","model":"m","timestamp":2}}' % (y, x))
    s.write("valid")

    s = S("escaped-keys")
    u1 = s.user("q1")
    x = s.nid()
    s.raw('{"t\\u0079pe":"message","\\u0069d":"%s","parent\\u0049d":"%s","timestamp":"2025-03-14T09:01:00.000Z","m\\u0065ssage":{"r\\u006fle":"user","\\u0063ontent":"escaped keys","timestamp":1}}' % (x, u1))
    s.raw('{"type":"session_info","id":"%s","parentId":"%s","timestamp":"2025-03-14T09:02:00.000Z","n\\u0061me":"escaped name key","\\ud800":"lone surrogate key"}' % (s.nid(), x))
    s.write("valid")

    s = S("trailing-whitespace-on-lines")
    s.user("q1")
    s.lines[-1] = b"  \t" + s.lines[-1] + b" \t \r"
    s.assistant("a1")
    s.lines[-1] = s.lines[-1] + b"   "
    s.write("valid")

    s = S("final-line-no-newline")
    conv(s, 1)
    s.write("valid", final_eol=False)

    s = S("whitespace-after-last-newline")
    conv(s, 1)
    s.write("valid", tail=b"  \t")

    s = S("cr-after-last-newline")
    conv(s, 1)
    s.write("valid", tail=b"\r")

    # deep nesting: 10,000 levels inside a custom entry's data (never printed by the dump)
    s = S("deep-nesting-custom-data")
    s.user("q1")
    s.entry("custom", [("customType", "deep"), ("data", 0)])
    s.lines[-1] = s.lines[-1].replace(b'"data":0', b'"data":' + b"[" * 10000 + b"]" * 10000)
    s.assistant("a1")
    s.write("valid")

    # deep nesting inside a message (printed in the context; bless.sh uses --compact)
    s = S("deep-nesting-in-message")
    s.msg({"role": "user", "content": "deep meta follows", "timestamp": 1, "meta": 0})
    s.lines[-1] = s.lines[-1].replace(b'"meta":0', b'"meta":' + b"[" * 10000 + b"]" * 10000)
    s.write("valid")


def valid_versions():
    def body(s):
        u = s.user("q1")
        # a blank line and a non-canonical line: a rewrite (migration) is visible in fileChange
        s.raw("")
        s.msg({"role": "hookMessage", "customType": "legacy-hook", "content": "hook text", "display": True, "timestamp": 1})
        s.lines[-1] = s.lines[-1].replace(b'{"type":"message",', b'{ "type": "message", ')
        s.assistant("a1")

    for name, v in (("version-absent", MISSING), ("version-1", 1), ("version-2", 2), ("version-2-string", "2"),
                    ("version-3-string", "3"), ("version-4", 4), ("version-null", None), ("version-abc", "abc"),
                    ("version-true", True), ("version-empty-string", ""), ("version-2-point-5", 2.5)):
        s = S(name, version=v)
        body(s)
        s.write("valid")

    def v1(name):
        s = S(name, version=MISSING)
        return s

    def v1_entries(s, n):
        """n plain v1 message entries (no id/parentId)."""
        for i in range(n):
            role = "user" if i % 2 == 0 else "assistant"
            if role == "user":
                s.raw(obj([("type", "message"), ("timestamp", iso(s.tick())), ("message", {"role": "user", "content": f"v1 message {i + 1}", "timestamp": 1})]))
            else:
                s.raw(obj([("type", "message"), ("timestamp", iso(s.tick())), ("message", {"role": "assistant", "content": [{"type": "text", "text": f"v1 message {i + 1}"}], "provider": "anthropic", "model": "claude-3-5-sonnet", "timestamp": 1})]))

    def v1_compaction(s, idx, summary="v1 summary"):
        s.raw(obj([("type", "compaction"), ("timestamp", iso(s.tick())), ("summary", summary), ("firstKeptEntryIndex", idx), ("tokensBefore", 5000)]))

    s = v1("v1-compaction-first-kept-index")
    v1_entries(s, 4)          # entries[1..4]
    v1_compaction(s, 3)       # entries[3] = "v1 message 3"
    v1_entries(s, 2)
    s.write("valid")

    s = v1("v1-compaction-index-header")
    v1_entries(s, 4)
    v1_compaction(s, 0)
    v1_entries(s, 1)
    s.write("valid")

    s = v1("v1-compaction-index-out-of-range")
    v1_entries(s, 2)
    v1_compaction(s, -1, "index -1")
    v1_entries(s, 2)
    v1_compaction(s, 99, "index 99")
    v1_entries(s, 1)
    s.write("valid")

    s = v1("v1-compaction-index-non-number")
    v1_entries(s, 4)
    v1_compaction(s, 1.5, "index 1.5")
    v1_compaction(s, "3", "index \"3\"")
    v1_compaction(s, None, "index null")
    v1_entries(s, 1)
    s.write("valid")

    s = v1("v1-compaction-index-self")
    v1_entries(s, 2)
    v1_compaction(s, 3, "points at itself")
    v1_entries(s, 2)
    s.write("valid")

    s = v1("v1-compaction-index-forward")
    v1_entries(s, 2)
    v1_compaction(s, 5, "points at entries[5] (later, legacy id legacy05): firstKeptEntryId is the stale legacy id")
    s.raw(obj([("type", "message"), ("id", "legacy04"), ("timestamp", iso(s.tick())), ("message", {"role": "user", "content": "has legacy id", "timestamp": 1})]))
    s.raw(obj([("type", "message"), ("id", "legacy05"), ("parentId", "legacy04"), ("timestamp", iso(s.tick())), ("message", {"role": "assistant", "content": [], "provider": "p", "model": "m", "timestamp": 1})]))
    v1_compaction(s, 7, "points at entries[7] (later, no id): firstKeptEntryId becomes undefined")
    v1_entries(s, 1)
    s.write("valid")

    s = v1("v1-existing-ids-overwritten")
    s.raw(obj([("type", "message"), ("id", "legacy01"), ("parentId", None), ("timestamp", iso(s.tick())), ("message", {"role": "user", "content": "id and parentId first", "timestamp": 1})]))
    s.raw(obj([("type", "message"), ("timestamp", iso(s.tick())), ("message", {"role": "user", "content": "no id", "timestamp": 1}), ("parentId", "legacy01")]))
    s.raw(obj([("type", "label"), ("timestamp", iso(s.tick())), ("targetId", "legacy01"), ("label", "legacy label")]))
    s.raw(obj([("type", "session_info"), ("timestamp", iso(s.tick())), ("name", "v1 name")]))
    s.write("valid")

    s = v1("v1-later-session-line")
    v1_entries(s, 2)
    s.raw('{"type":"session","id":"second-header","cwd":"/elsewhere"}')
    v1_entries(s, 1)
    v1_compaction(s, 4, "index 4 = the message after the later session line (which is entries[3])")
    v1_entries(s, 1)
    s.write("valid")

    s = S("v2-hook-message", version=2)
    s.user("q1")
    s.msg({"role": "hookMessage", "customType": "h", "content": "hook 1", "display": False, "timestamp": 1})
    s.entry("custom_message", [("customType", "x"), ("content", "not a message entry"), ("role", "hookMessage")])
    s.entry("custom", [("customType", "y"), ("message", {"role": "hookMessage"})])
    s.msg({"role": "hookMessage", "customType": "h", "content": [{"type": "text", "text": "hook 2"}], "display": True, "timestamp": 2})
    s.write("valid")

    s = S("v2-missing-vs-null-parentid-rewrite", version=2)
    s.user("null parent")
    s.user("missing parentId key", parent=NOPARENT)
    s.user("idless", id=NOID, parent=NOPARENT)
    s.write("valid")

    s = S("v2-rewrite-serialisation", version=2)
    s.raw('{"type":"message","id":"%s","parentId":null,"timestamp":"2025-03-14T09:00:07.000Z","message":{"role":"user","content":"dup keys","content":"dup keys (second)","timestamp":1},"type":"message"}' % s.nid())
    s.raw('{"type":"custom","id":"%s","parentId":null,"timestamp":"2025-03-14T09:00:08.000Z","customType":"keys","data":{"b":1,"2":0,"10":0,"1":0,"a":1,"-1":0,"01":0,"4294967294":0,"4294967295":0,"1.5":0,"b":2,"__proto__":{"x":1},"\\u0069d":"escaped"}}' % s.nid())
    s.raw('{"zzz":1,"type":"custom","aaa":2,"id":"%s","parentId":null,"timestamp":"2025-03-14T09:00:09.000Z","7":"integer key on the entry"}' % s.nid())
    s.raw(b'{"type":"custom","id":"' + s.nid().encode() + b'","parentId":null,"timestamp":"2025-03-14T09:00:10.000Z","customType":"nums","data":{"inf":1e400,"negzero":-0,"big":12345678901234567890,"one":1.0,"exp":1E2,"small":1e-7,"tiny":5e-324,"e21":1e21,"e20":100000000000000000000,"frac":0.30000000000000004,"neg":-1.5e-10}}')
    s.raw(b'{"type":"custom","id":"' + s.nid().encode() + b'","parentId":null,"timestamp":"2025-03-14T09:00:11.000Z","customType":"strings","data":["lone \\ud800","pair \\ud83d\\ude00","upper \\uD83D\\uDE00","raw \xf0\x9f\x98\x80","bad \xff\xed\xa0\x80","ctl \\u0000\\u0001\\u001f\\u007f","esc \\/ \\b\\f\\n\\r\\t","sep \\u2028\\u2029","nbsp \\u00a0 raw \xc2\xa0","quote \\" backslash \\\\","html <>&\'"]}')
    s.write("valid")



def valid_tree():
    s = S("timestamps-tree-order-small")
    r = s.user("root")
    tss = ["2025-03-14T10:00:05.000Z", "2025-03-14T10:00:01.000Z", "garbage", "2025-03-14T10:00:03.000Z",
           1741946400000, None, "2025-03-14T10:00:01.000Z", MISSING, "2025", "2025-03-14T10:00:02.000Z"]
    for i, t in enumerate(tss):
        s.entry("message", [("message", {"role": "user", "content": f"child {i} ts={J(t) if t is not MISSING else 'missing'}", "timestamp": 1})],
                parent=r, ts=NOTS if t is MISSING else t)
    s.last = r
    s.assistant("last")
    s.write("valid")

    # >70 children, ~20% NaN: the order is exactly V8's TimSort with an inconsistent comparator
    import random
    rnd = random.Random(1234)
    s = S("tree-many-children-nan")
    r = s.user("root")
    for i in range(90):
        if rnd.random() < 0.2:
            t = rnd.choice(["n/a", "", MISSING, "2025-13-45T00:00:00Z"])
        else:
            t = iso(BASE + timedelta(seconds=rnd.randint(0, 600)))
        s.entry("custom", [("customType", f"c{i:02d}")], parent=r, ts=NOTS if t is MISSING else t)
    s.last = r
    s.assistant("last")
    s.write("valid")

    s = S("tree-children-timsort-runs")
    r = s.user("root")
    ts_list = []
    ts_list += [iso(BASE + timedelta(seconds=i)) for i in range(40)]                 # ascending run
    ts_list += [iso(BASE + timedelta(seconds=400 - i)) for i in range(40)]           # strictly descending run
    ts_list += [iso(BASE + timedelta(seconds=200))] * 25                              # equal run
    ts_list += [iso(BASE + timedelta(seconds=300 - i)) if i % 5 else "NaN" for i in range(40)]  # descending with NaN
    ts_list += ["x"] * 10                                                             # NaN cluster
    ts_list += [iso(BASE + timedelta(seconds=rnd.randint(0, 500))) for _ in range(60)]  # random
    ts_list += [iso(BASE + timedelta(seconds=100 + i)) for i in range(45)]           # ascending again (galloping)
    for i, t in enumerate(ts_list):
        s.entry("custom", [("customType", f"r{i:03d}")], parent=r, ts=t)
    s.last = r
    s.assistant("last")
    s.write("valid")

    # a 700-deep linear chain (bless.sh dumps it with --tree flat)
    s = S("tree-deep-linear")
    s.user("root")
    for i in range(700):
        s.entry("custom", [("customType", "step")])
    s.write("valid")


# =====================================================================================
# malformed/
# =====================================================================================


def malformed_files():
    write_bytes("malformed", "empty-file", b"")
    write_bytes("malformed", "only-blank-lines", b"\n   \n\t\n\r\n\n")
    write_bytes("malformed", "lone-cr", b"\r")

    s = S("cr-only-line-endings")
    conv(s, 1)
    s.write("malformed", eol=b"\r")

    s = S("bom-before-header")
    conv(s, 1)
    s.lines[0] = b"\xef\xbb\xbf" + s.lines[0]
    s.write("malformed")

    s = S("bom-header-then-plain-header")
    s.lines.insert(0, b"\xef\xbb\xbf" + obj([("type", "session"), ("version", 3), ("id", "bom-header"), ("timestamp", iso(BASE)), ("cwd", "/bom")]).encode())
    conv(s, 1)
    s.write("malformed")

    s = S("bom-on-later-line")
    u1, a1, u2, a2 = conv(s, 2)
    s.lines[2] = b"\xef\xbb\xbf" + s.lines[2]  # the first assistant message
    s.write("malformed")

    s = S("junk-before-header", header=False)
    for j in ("this is not json", "", "null", "false", "0", '""', "   ", "{oops", "\r"):
        s.raw(j)
    s2 = S("junk-before-header")
    s.lines += s2.lines
    s.last = None
    s.user("q1")
    s.assistant("a1")
    s.write("malformed")

    s = S("junk-object-before-header", header=False)
    s.raw('{"type":"message","note":"a JSON object before the header"}')
    s.lines += S("junk-object-before-header").lines
    s.user("q1")
    s.write("malformed")

    s = S("non-object-lines")
    s.user("q1")
    for j in ("42", "true", '"x"', "[1]", "{}", "null", "false", "0", '""', "-0", "0.0", "[]", '"session"', "1e400"):
        s.raw(j)
    s.assistant("a1 (parent q1)")
    s.write("malformed")

    s = S("non-object-last-line")
    conv(s, 1)
    s.raw("42")
    s.write("malformed")

    s = S("non-object-first-line", header=False)
    s.raw("42")
    s.lines += S("non-object-first-line").lines
    s.user("q1")
    s.write("malformed")

    for name, hdr in (("header-missing-id", '{"type":"session","version":3,"timestamp":"2025-03-14T09:00:00.000Z","cwd":"/home/dev/project"}'),
                      ("header-numeric-id", '{"type":"session","version":3,"id":12345,"timestamp":"2025-03-14T09:00:00.000Z","cwd":"/home/dev/project"}'),
                      ("header-type-not-session", '{"type":"Session","version":3,"id":"0195aaaa-0000-7000-8000-000000000001","timestamp":"2025-03-14T09:00:00.000Z","cwd":"/home/dev/project"}'),
                      ("header-array", '[{"type":"session","version":3,"id":"0195aaaa-0000-7000-8000-000000000002"}]')):
        s = S(name, header=False)
        s.raw(hdr)
        s.user("q1", parent=None)
        s.write("malformed")

    s = S("header-without-id-then-valid-header", header=False)
    s.raw('{"type":"session","version":3}')
    s.lines += S("header-without-id-then-valid-header").lines
    s.user("q1")
    s.write("malformed")

    s = S("invalid-utf8-outside-strings")
    u1 = s.user("q1")
    a1 = s.assistant("a1")
    s.lines[-1] = s.lines[-1][:-1] + b"\xff}"  # garbage byte between the last value and the brace
    s.raw(b"\xc3\x28")
    s.raw(b'{"type":"message",\xa0"id":"abcdef12"}')
    s.user("q2 (parent a1, which was dropped)", parent=a1)
    s.write("malformed")

    s = S("invalid-utf8-at-eof")
    conv(s, 1)
    s.write("malformed", tail=b"\xe2\x82")

    s = S("nul-bytes")
    s.user("q1")
    s.raw(b'{"type":"message","id":"' + s.nid().encode() + b'","parentId":"' + s.last.encode() + b'","timestamp":"2025-03-14T09:01:00.000Z","message":{"role":"user","content":"raw NUL \x00 inside a string","timestamp":1}}')
    s.raw(b"\x00")
    s.raw(b"\x00\x00\x00\x00")
    s.user("escaped \\u0000 is fine")
    s.lines[-1] = s.lines[-1].replace(b"\\\\u0000", b"\\u0000")
    s.raw(s.lines[-1][:-1] + b"}\x00")
    s.write("malformed")

    s = S("raw-control-chars-in-strings")
    s.user("q1")
    s.user("TAB")
    s.lines[-1] = s.lines[-1].replace(b"TAB", b"raw\ttab")
    s.user("LF")
    s.lines[-1] = s.lines[-1].replace(b"LF", b"raw\rcr")
    s.user("DEL")
    s.lines[-1] = s.lines[-1].replace(b"DEL", b"raw\x7fdel is allowed")
    s.write("malformed")

    rnd = __import__("random").Random(99)
    write_bytes("malformed", "binary-garbage", bytes(rnd.randrange(256) for _ in range(2048)))

    s = S("binary-garbage-lines")
    s.user("q1")
    s.raw(bytes(rnd.randrange(256) for _ in range(300)).replace(b"\n", b"\x01"))
    s.raw(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03")  # gzip magic
    s.assistant("a1")
    s.write("malformed")

    s = S("trailing-garbage-after-object")
    u1 = s.user("q1")
    s.lines[-1] += b" x"
    a1 = s.assistant("a1 (parent q1, dropped)")
    s.lines[-1] += b"}"
    s.user("q2")
    s.lines[-1] += b","
    s.user("q3")
    s.lines[-1] += "\u00a0".encode()
    s.user("q4")
    s.lines[-1] += b"{}"
    s.user("q5 (survives: trailing spaces and tab only)")
    s.lines[-1] += b" \t "
    s.write("malformed")

    s = S("truncated-last-line")
    conv(s, 1)
    s.user("this line is cut")
    s.lines[-1] = s.lines[-1][: len(s.lines[-1]) // 2]
    s.write("malformed", final_eol=False)

    s = S("truncated-line-mid-file")
    u1, a1 = conv(s, 1)
    s.user("cut")
    s.lines[-1] = s.lines[-1][:40]
    s.user("after the cut line (its parent was the cut line)")
    s.write("malformed")

    # steps that throw
    s = S("message-without-message")
    conv(s, 1)
    s.entry("message", [])
    s.user("after")
    s.write("malformed")

    s = S("message-null-message")
    conv(s, 1)
    s.entry("message", [("message", None)])
    s.write("malformed")

    s = S("compaction-kept-message-without-message")
    u1, a1 = conv(s, 1)
    s.entry("message", [])
    s.compaction(u1)
    s.user("after")
    s.write("malformed")
    leaf("malformed", "compaction-kept-message-without-message", u1)

    s = S("context-edit-missing-replacement")
    u1, a1 = conv(s, 1)
    s.entry("context_edit", [("targetId", u1)])
    s.user("q2")
    s.write("malformed")

    s = S("session-name-number")
    conv(s, 1)
    s.session_info(42)
    s.write("malformed")

    s = S("session-name-false")
    conv(s, 1)
    s.session_info("a name")
    s.session_info(False)
    s.write("malformed")

    # parent cycles
    s = S("cycle-two-entries")
    a, b = s.nid(), s.nid()
    s.user("a -> b", id=a, parent=b)
    s.assistant("b -> a", id=b, parent=a)
    s.write("malformed")

    s = S("cycle-self-parent-on-leaf-path")
    u = s.user("root")
    x = s.nid()
    s.assistant("parentId is its own id", id=x, parent=x)
    s.write("malformed")

    s = S("cycle-via-duplicate-ids")
    x = s.nid()
    s.user("x, root", id=x, parent=None)
    y = s.assistant("y under x")
    s.user("x again, now under y", id=x, parent=y)
    s.write("malformed")

    s = S("cycle-long")
    ids = [s.nid() for _ in range(40)]
    for i, e in enumerate(ids):
        s.entry("custom", [("customType", f"ring-{i}")], id=e, parent=ids[i - 1])
    s.write("malformed")

    s = S("cycle-detached")
    s.user("root")
    main_leaf = s.assistant("main")
    a, b = s.nid(), s.nid()
    s.user("a -> b (cycle not reachable from any root)", id=a, parent=b)
    s.user("b -> a", id=b, parent=a)
    s.user("leaf on the main line", parent=main_leaf)
    s.write("malformed")
    leaf("malformed", "cycle-detached", a)

    s = S("cycle-tree-only-via-idless-entries")
    r = s.user("root")
    x = s.user("x: no parentId -> child of the id-less node", parent=NOPARENT)
    s.entry("custom", [("customType", "idless, parentId x")], id=NOID, parent=x)
    s.entry("custom", [("customType", "idless, no parentId (root)")], id=NOID, parent=NOPARENT)
    s.write("malformed")

    s = S("cycle-branch-leaf-option")
    u = s.user("root")
    s.assistant("ordinary leaf")
    a, b = s.nid(), s.nid()
    s.user("a -> b", id=a, parent=b)
    s.user("b -> a", id=b, parent=a)
    s.last = u
    s.assistant("last line, ordinary")
    s.write("malformed")
    leaf("malformed", "cycle-branch-leaf-option", a)

    # migration trouble
    def v1(name):
        return S(name, version=MISSING)

    def v1_msg(s, text):
        s.raw(obj([("type", "message"), ("timestamp", iso(s.tick())), ("message", {"role": "user", "content": text, "timestamp": 1})]))

    s = v1("v1-non-object-number-line")
    v1_msg(s, "first")
    s.raw("42")
    v1_msg(s, "after 42")
    s.write("malformed")

    s = v1("v1-non-object-string-line")
    v1_msg(s, "first")
    s.raw('"x"')
    s.write("malformed")

    s = v1("v1-non-object-true-line")
    v1_msg(s, "first")
    s.raw("true")
    s.write("malformed")

    s = v1("v1-array-line")
    v1_msg(s, "first")
    s.raw("[1]")
    v1_msg(s, "after the array (its parent is the array's id)")
    s.write("malformed")

    s = v1("v1-junk-lines-dropped")
    v1_msg(s, "m1 (entries[1])")
    s.raw("")
    s.raw("not json")
    s.raw("null")
    v1_msg(s, "m2 (entries[2])")
    s.raw(obj([("type", "compaction"), ("timestamp", iso(s.tick())), ("summary", "s"), ("firstKeptEntryIndex", 2), ("tokensBefore", 1)]))
    v1_msg(s, "m3")
    s.write("malformed", eol=b"\r\n")

    s = S("v2-rewrite-drops-bad-lines", version=2)
    s.user("q1")
    s.raw("")
    s.raw("   ")
    s.raw("{broken")
    s.raw("null")
    s.raw("0")
    s.assistant("a1")
    s.write("malformed", eol=b"\r\n", tail=b"  ")

    s = S("v2-non-object-lines-rewritten", version=2)
    s.user("q1")
    for j in ("42", "true", '"x"', "[1, 2]", "{ }", "1.50"):
        s.raw(j)
    s.assistant("a1")
    s.write("malformed")

    s = S("deep-nesting-v2-rewrite", version=2)
    s.user("q1")
    s.entry("custom", [("customType", "deep"), ("data", 0)])
    s.lines[-1] = s.lines[-1].replace(b'"data":0', b'"data":' + b"[" * 10000 + b"]" * 10000)
    s.assistant("a1 (after the deep line: lost when the rewrite fails)")
    s.write("malformed")


def main():
    for kind in ("valid", "malformed"):
        d = os.path.join(HERE, kind)
        if os.path.isdir(d):
            for f in os.listdir(d):
                if f.endswith(".jsonl"):
                    os.remove(os.path.join(d, f))
        os.makedirs(d, exist_ok=True)
    valid_basic()
    valid_all_types()
    valid_branches()
    valid_ids()
    valid_compaction()
    valid_context_edit()
    valid_messages()
    valid_labels_names()
    valid_bytes()
    valid_versions()
    valid_tree()
    malformed_files()
    assert len(WRITTEN) == len(set(WRITTEN)), "duplicate fixture name"
    with open(os.path.join(HERE, "leaves.tsv"), "w") as f:
        for file, l in LEAVES:
            f.write(f"{file}\t{l}\n")
    print(f"{len(WRITTEN)} fixtures, {len(LEAVES)} leaf variants")


if __name__ == "__main__":
    main()

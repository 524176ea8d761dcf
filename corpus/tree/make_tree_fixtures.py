#!/usr/bin/env python3
"""Write the fixtures of `pi-session tree` (tests/it/tree.rs) into corpus/tree/.

Deterministic: fixed ids (8 hex digits) and timestamps. Run from the repository root:
`python3 corpus/tree/make_tree_fixtures.py`; then regenerate the goldens with
`PI_SESSION_BLESS_TREE=1 cargo test --test it tree::` and read the diff.
"""
import json, os

HERE = os.path.dirname(os.path.abspath(__file__))


class Session:
    def __init__(self, sid):
        self.lines = [{"type": "session", "version": 3, "id": sid,
                       "timestamp": "2025-12-01T09:00:00.000Z", "cwd": "/home/u/proj"}]
        self.n = 0

    def ts(self):
        self.n += 1
        s = self.n
        return "2025-12-01T%02d:%02d:%02d.000Z" % (9 + s // 3600, s // 60 % 60, s % 60)

    def add(self, eid, parent, ty, **fields):
        e = {"type": ty, "id": eid, "parentId": parent, "timestamp": self.ts()}
        e.update(fields)
        self.lines.append(e)
        return eid

    def msg(self, eid, parent, role, content, **extra):
        m = {"role": role, "content": content}
        m.update(extra)
        m["timestamp"] = 1764579600000 + self.n * 1000
        return self.add(eid, parent, "message", message=m)

    def write(self, name):
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            for l in self.lines:
                f.write(json.dumps(l, ensure_ascii=False, separators=(",", ":")) + "\n")


def text(t):
    return [{"type": "text", "text": t}]


def call(cid, name, args):
    return {"type": "toolCall", "id": cid, "name": name, "arguments": args}


def assistant(parts, stop="stop", **extra):
    return dict(api="anthropic-messages", provider="anthropic", model="claude-sonnet-4-5",
                stopReason=stop, **extra), parts


# A conversation with forks, labels, a compaction, a branch summary, tool calls of
# every kind pi formats, an aborted and a failed answer, bookkeeping entries.
s = Session("0b0d4e2a-1111-4222-8333-000000000001")
s.add("b0000001", None, "model_change", provider="anthropic", modelId="claude-sonnet-4-5")
s.add("b0000002", "b0000001", "thinking_level_change", thinkingLevel="medium")
s.msg("b0000003", "b0000002", "user", "Fix the failing test in src/parser.rs\nIt fails since yesterday.")
ex, parts = assistant([{"type": "thinking", "thinking": "Let me look."},
                       call("c1", "read", {"path": "/home/u/proj/src/parser.rs", "offset": 10, "limit": 20}),
                       call("c2", "bash", {"command": "cargo test parser -- --nocapture 2>&1 | tail -n 40 && echo done"})],
                      stop="toolUse")
s.msg("b0000004", "b0000003", "assistant", parts, **ex)
s.msg("b0000005", "b0000004", "toolResult", text("fn parse() {}\n" * 30), toolCallId="c1", toolName="read", isError=False)
s.msg("b0000006", "b0000005", "toolResult", text("test result: FAILED"), toolCallId="c2", toolName="bash", isError=False)
ex, parts = assistant(text("The test expects a trailing newline.\nI will add it."))
s.msg("b0000007", "b0000006", "assistant", parts, **ex)
# Fork 1: the user tried another way first (abandoned), with an aborted answer.
s.msg("b0000008", "b0000007", "user", "Rather rewrite the tokenizer")
ex, parts = assistant([], stop="aborted")
s.msg("b0000009", "b0000008", "assistant", parts, **ex)
# Fork 2: a failed answer.
s.msg("b000000a", "b0000007", "user", "Use the nom crate")
ex, parts = assistant([], stop="error", errorMessage="529 overloaded_error:\nOverloaded")
s.msg("b000000b", "b000000a", "assistant", parts, **ex)
# Fork 3 (current): the summary of the branch left, then on.
s.add("b000000c", "b0000007", "branch_summary", fromId="b0000009",
      summary="Tried rewriting the tokenizer;\nabandoned.")
s.msg("b000000d", "b000000c", "user", "Go ahead with the newline")
ex, parts = assistant([call("c3", "edit", {"path": "/home/u/proj/src/parser.rs", "oldText": "a", "newText": "b"}),
                       call("c4", "grep", {"pattern": "fn parse", "path": "/home/u/proj/src"}),
                       call("c5", "web_search", {"query": "nom crate trailing newline handling in parsers"})],
                      stop="toolUse")
s.msg("b000000e", "b000000d", "assistant", parts, **ex)
s.msg("b000000f", "b000000e", "toolResult", text("ok"), toolCallId="c3", toolName="edit", isError=False)
s.msg("b0000010", "b000000f", "toolResult", text("src/parser.rs:12"), toolCallId="c4", toolName="grep", isError=False)
s.msg("b0000011", "b0000010", "toolResult", text("results"), toolCallId="c5", toolName="web_search", isError=False)
s.add("b0000012", "b0000011", "compaction", summary="Fixed the newline.", firstKeptEntryId="b000000d",
      tokensBefore=45321)
s.add("b0000013", "b0000012", "message", message={"role": "bashExecution", "command": "git diff\n--stat",
                                                   "output": "1 file changed", "exitCode": 0,
                                                   "timestamp": 1764579700000})
s.add("b0000014", "b0000013", "custom_message", customType="reminder", content="Run clippy\nbefore committing",
      display=True)
s.add("b0000015", "b0000014", "session_info", name="Fix parser test")
s.add("b0000016", "b0000015", "custom", customType="my-ext", data={"k": 1})
ex, parts = assistant(text("All tests pass now."))
s.msg("b0000017", "b0000016", "assistant", parts, **ex)
s.add("b0000018", "b0000017", "label", targetId="b0000007", label="plan")
s.add("b0000019", "b0000018", "label", targetId="b000000d", label="go")
s.add("b000001a", "b0000019", "usage", usage={"input": 1})
s.write("conversation.jsonl")

# A ladder: every step forks, leaving one alternative behind (30 steps here; the test
# builds a 600-step one).
s = Session("0b0d4e2a-1111-4222-8333-000000000002")
prev = None
for i in range(30):
    u = s.msg("c%07x" % (2 * i), prev, "user", "step %d" % i)
    s.msg("d%07x" % i, u, "user", "alternative %d" % i)
    prev = u
s.write("ladder.jsonl")

# Hostile strings: controls, bidi overrides, wide CJK, combining marks, emoji, in texts,
# labels and a tool call; two roots (an entry whose parent names nothing).
s = Session("0b0d4e2a-1111-4222-8333-000000000003")
s.msg("e0000001", None, "user", "clear \u001b[2J\u001b[31mred\u001b[0m and \u202eesrever\u202c text\rreturn")
ex, parts = assistant(text("日本語のテキストは二列ずつ幅を取ります。これは長い行です。まだまだ続きます。終わり。"))
s.msg("e0000002", "e0000001", "assistant", parts, **ex)
s.msg("e0000003", "e0000002", "user", "combining: e\u0301e\u0301e\u0301 a\u0308o\u0308u\u0308 and emoji 👩‍👩‍👧 ❤️ 🎉🎉🎉 family")
ex, parts = assistant([call("h1", "bash", {"command": "printf '\u001b]0;title\u0007'; rm -rf /tmp/x"})], stop="toolUse")
s.msg("e0000004", "e0000003", "assistant", parts, **ex)
s.msg("e0000005", "e0000004", "toolResult", text("\u001b[31mboom"), toolCallId="h1", toolName="bash", isError=True)
ex, parts = assistant(text("Done \u0007 with a bell."))
s.msg("e0000006", "e0000005", "assistant", parts, **ex)
s.msg("e0000007", "e0000002", "user", "全角の代わり：ＡＢＣ１２３")
s.add("e0000008", "e0000006", "label", targetId="e0000003", label="\u001b[5mblink\u001b[0m 標識")
s.msg("e0000009", "zzzzzzzz", "user", "a second root: its parent names nothing")
s.write("hostile.jsonl")

#!/usr/bin/env python3
"""Writes corpus/export/hostile.jsonl: corpus/show/hostile.jsonl (terminal escapes, a 1.2 MB
image, thinking, a long tool output, a label with a bidi override, a compaction, a name with
BEL) plus what an HTML export must survive. Every payload, if it ran, would set the attribute
data-xss on <html> (tests/it/export.rs looks for it in Chromium's DOM). Run from the
repository root: python3 corpus/export/make_hostile.py"""
import base64, json

MARK = "document.documentElement.setAttribute('data-xss','{}')"


def js(tag):
    return MARK.format(tag)


lines = open("corpus/show/hostile.jsonl").read().splitlines()
# A 1x1 transparent PNG (embedded with --images).
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
HTML_IMG = base64.b64encode(f"<script>{js('html-image')}</script>".encode()).decode()
SVG_IMG = base64.b64encode(
    f'<svg xmlns="http://www.w3.org/2000/svg" onload="{js("svg-onload")}"><script>{js("svg-script")}</script></svg>'.encode()
).decode()
T = "2025-12-01T09:01:{:02d}.000Z"
parent = "a0000008"
n = 0


def entry(ty, **fields):
    global parent, n
    n += 1
    eid = f"b{n:07d}"
    o = {"type": ty, "id": eid, "parentId": parent, "timestamp": T.format(n)}
    o.update(fields)
    parent = eid
    lines.append(json.dumps(o, separators=(",", ":"), ensure_ascii=False))
    return eid


user_text = "\n".join(
    [
        f"<script>{js('script')}</script>",
        f"</textarea><script>{js('textarea')}</script>",
        f"[click me](javascript:{js('link')}) and <a href=\"javascript:{js('a-href')}\">a link</a>",
        f"\" onerror=\"{js('attr-dq')}\" x=\" and ' onmouseover='{js('attr-sq')}' y='",
        f"</style><script>{js('style')}</script><style>body{{display:none}}</style>",
        "</pre></div></section></main><h1>forged heading</h1>",
        "&lt;escaped already&gt; &amp; &#60;script&#62;",
        "```\nnot a fence break\n````",
    ]
)
entry("message", message={"role": "user", "content": [{"type": "text", "text": user_text}]})
entry(
    "message",
    message={
        "role": "assistant",
        "provider": f"evil\"><script>{js('provider')}</script>",
        "model": "m<b>1</b>",
        "content": [
            {"type": "thinking", "thinking": f"plan</details><script>{js('thinking')}</script>"},
            {"type": "text", "text": "Running it."},
            {
                "type": "toolCall",
                "id": "call_9",
                "name": f"<script>{js('tool-name')}</script>",
                "arguments": {"path": f"</code></pre><img src=x onerror=\"{js('tool-args')}\">", "n": 3},
            },
        ],
        "errorMessage": f"<iframe src=\"javascript:{js('iframe')}\"></iframe>",
        "usage": {"input": 1, "output": 1},
        "stopReason": "error",
        "timestamp": 1764580000000,
    },
)
entry(
    "message",
    message={
        "role": "toolResult",
        "toolCallId": "call_9",
        "toolName": "read",
        "content": [
            {"type": "text", "text": f"<img src=x onerror=\"{js('tool-result')}\">\n`````\nfive backticks above"},
            {"type": "image", "mimeType": "text/html", "data": HTML_IMG},
            {"type": "image", "mimeType": "image/svg+xml", "data": SVG_IMG},
            {"type": "image", "mimeType": "image/png", "data": f"AAAA\" onerror=\"{js('png-attr')}"},
            {"type": "image", "mimeType": "image/png", "data": PNG},
        ],
        "isError": False,
        "timestamp": 1764580001000,
    },
)
target = parent
entry("label", targetId=target, label=f"<b onmouseover=\"{js('label')}\">label</b>")
entry(
    "message",
    message={
        "role": "bashExecution",
        "command": f"echo '<script>{js('bash')}</script>'",
        "output": f"<script>{js('bash-output')}</script>\n",
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": 1764580002000,
    },
)
entry("custom_message", customType=f"<i>{js('custom-type')}</i>", content=f"<script>{js('custom')}</script>", display=True)
entry("branch_summary", fromId="a0000004", summary=f"<script>{js('branch-summary')}</script>")
entry("session_info", name=f"<img src=x onerror=\"{js('name')}\"> & </title><script>{js('title')}</script>")
lines.append('{"type":"message","id":"broken", this line is not JSON')
entry("message", message={"role": "user", "content": "last words", "timestamp": 1764580003000})
open("corpus/export/hostile.jsonl", "w").write("\n".join(lines) + "\n")

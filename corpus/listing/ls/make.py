#!/usr/bin/env python3
"""Builds the `ls` table fixtures: an agent dir whose sessions exercise display widths
(CJK, combining accents, ZWJ emoji, flags), names, hostile text, long titles and cwds,
and every age bucket of pi's picker relative to NOW_MS (tests/it/ls.rs runs with
PI_SESSION_NOW_MS set to it). Modified times come from message timestamps, not mtimes, so
git keeps everything the goldens depend on.

    python3 corpus/listing/ls/make.py     # rewrites corpus/listing/ls/agent
"""

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOW_MS = 1_764_086_880_000  # 2025-11-25T16:08:00Z
MIN = 60_000
DAY = 86_400_000


def iso(ms):
    import datetime

    d = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def j(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def session(folder, sid, cwd, start_ms, texts, name=None):
    """A session started at start_ms; texts: [(role, text, ms)]."""
    lines = [j({"type": "session", "version": 3, "id": sid, "timestamp": iso(start_ms), "cwd": cwd})]
    parent = None
    for n, (role, text, ms) in enumerate(texts):
        eid = f"{sid[:4]}{n:04x}"
        m = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": ms}
        if role == "assistant":
            m.update({"provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop"})
        lines.append(j({"type": "message", "id": eid, "parentId": parent, "timestamp": iso(ms), "message": m}))
        parent = eid
    if name is not None:
        lines.append(j({"type": "session_info", "id": f"{sid[:4]}ffff", "parentId": parent,
                        "timestamp": iso(texts[-1][2] if texts else start_ms), "name": name}))
    p = HERE / "agent/sessions" / folder / f"{iso(start_ms).replace(':', '-').replace('.', '-')}_{sid}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def main():
    shutil.rmtree(HERE / "agent", ignore_errors=True)
    app, other, srv = "--home-u-app--", "--home-u-src-other--", "--srv-x--"
    cwd_app = "/home/u/app"
    cwd_other = "/home/u/src/other-project-with-a-long-name/services/billing"

    def ago(ms):
        return NOW_MS - ms

    session(app, "019ab001-0000-7000-8000-000000000001", cwd_app, ago(40 * MIN),
            [("user", "セッション一覧の表示幅を正しく計算して列を揃えるための修正をお願いします", ago(40 * MIN)),
             ("assistant", "はい。", ago(30 * 1000))])
    session(app, "019ab002-0000-7000-8000-000000000002", cwd_app, ago(10 * MIN),
            [("user", "Cafe\u0301 re\u0301sume\u0301: the accents combine, na\u0308i\u0308ve", ago(5 * MIN))])
    session(app, "019ab003-0000-7000-8000-000000000003", cwd_app, ago(4 * 60 * MIN),
            [("user", "\U0001f469\u200d\U0001f4bb pair on the \U0001f468\u200d\U0001f469\u200d\U0001f467 tree \U0001f1ef\U0001f1f5\U0001f1eb\U0001f1f7 \U0001f44d\U0001f3fd ok", ago(3 * 60 * MIN)),
             ("assistant", "Done.", ago(3 * 60 * MIN + 1000))])
    session(app, "019ab004-0000-7000-8000-000000000004", cwd_app, ago(2 * DAY + 5 * MIN),
            [("user", "Refactor the listing code so that every column of the table is measured by display width and cut with an ellipsis when the terminal is narrow, then add tests for wide characters", ago(2 * DAY + 5 * MIN)),
             ("assistant", "Plan: measure, cut, pad. " * 40, ago(2 * DAY))])
    session(app, "019ab005-0000-7000-8000-000000000005", cwd_app, ago(8 * DAY),
            [("user", "write the release notes", ago(8 * DAY)), ("assistant", "Here they are.", ago(8 * DAY))],
            name="release notes 1.6")
    session(app, "019ab006-0000-7000-8000-000000000006", cwd_app, ago(125 * DAY),
            [("user", "evil \u001b]0;TITLE\u0007 \u202etxt.exe\u202c back\\slash\ttab\nsecond line \u009b2J", ago(125 * DAY))],
            name="名前 \u001b[31mred\u001b[0m")
    session(app, "019ab007-0000-7000-8000-000000000007", cwd_app, ago(400 * DAY), [])
    session(other, "019ab008-0000-7000-8000-000000000008", cwd_other, ago(20 * DAY),
            [("user", "Why is the invoice total off by one cent?", ago(20 * DAY)),
             ("assistant", "Rounding. " * 200, ago(20 * DAY - 2 * MIN))])
    session(srv, "019ab009-0000-7000-8000-000000000009", "/srv/x", ago(45 * MIN),
            [("user", "deploy", ago(45 * MIN))])


if __name__ == "__main__":
    main()

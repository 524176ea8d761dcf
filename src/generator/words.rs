//! Vocabulary and the short phrases built from it: identifiers, paths, shell commands and
//! session names.

use std::fmt::Write as _;

use super::rng::Rng;

// Vocabulary for synthetic code and prose.
pub(super) const WORDS: &[&str] = &[
    "session",
    "entry",
    "parent",
    "leaf",
    "branch",
    "context",
    "message",
    "tool",
    "result",
    "index",
    "buffer",
    "line",
    "offset",
    "reader",
    "writer",
    "token",
    "usage",
    "model",
    "provider",
    "config",
    "path",
    "file",
    "cache",
    "tree",
    "node",
    "child",
    "label",
    "summary",
    "compaction",
    "header",
    "stream",
    "chunk",
    "parser",
    "value",
    "error",
    "state",
    "event",
    "handler",
    "render",
    "editor",
    "theme",
    "footer",
    "queue",
    "agent",
    "prompt",
    "thinking",
    "level",
    "signature",
    "image",
    "data",
    "cursor",
    "span",
    "scratch",
    "pool",
    "stats",
    "count",
    "bytes",
    "digest",
    "hash",
    "store",
    "settings",
    "manager",
    "loader",
    "watcher",
    "timer",
    "retry",
    "limit",
    "window",
    "frame",
    "layout",
    "widget",
    "command",
    "shell",
    "process",
    "output",
    "input",
    "status",
    "response",
    "request",
    "client",
    "server",
    "socket",
    "channel",
    "schema",
    "range",
    "slice",
    "block",
    "map",
];
pub(super) const VERBS: &[&str] = &[
    "get",
    "set",
    "build",
    "parse",
    "load",
    "save",
    "read",
    "write",
    "find",
    "update",
    "create",
    "delete",
    "handle",
    "render",
    "apply",
    "compute",
    "resolve",
    "validate",
    "append",
    "flush",
    "open",
    "close",
    "scan",
    "collect",
    "emit",
    "format",
    "normalize",
    "merge",
    "split",
    "track",
    "reset",
    "init",
    "dispose",
    "subscribe",
    "notify",
    "select",
    "toggle",
    "cycle",
    "expand",
    "migrate",
    "index",
    "walk",
];
pub(super) const TS_TYPES: &[&str] = &[
    "string",
    "number",
    "boolean",
    "void",
    "unknown",
    "SessionEntry",
    "AgentMessage",
    "Message[]",
    "Promise<void>",
    "Map<string, SessionEntry>",
    "Record<string, unknown>",
    "Uint8Array",
    "ToolCall",
    "Usage",
    "string | undefined",
    "ReadonlyArray<Entry>",
    "TreeNode | null",
];
pub(super) const RS_TYPES: &[&str] = &[
    "&str",
    "String",
    "usize",
    "u64",
    "u32",
    "Vec<u8>",
    "Option<&Entry>",
    "Result<(), Error>",
    "&[u8]",
    "HashMap<u32, usize>",
    "Box<dyn Write>",
    "Cow<'a, str>",
    "Span",
    "Option<Span>",
    "io::Result<usize>",
];
pub(super) const MODULES: &[&str] = &[
    "node:fs",
    "node:path",
    "node:crypto",
    "node:os",
    "node:readline",
    "./session-manager.js",
    "../core/agent.js",
    "./messages.js",
    "../tools/truncate.js",
    "@earendil-works/pi-ai",
    "@earendil-works/pi-tui",
    "chalk",
    "zod",
    "vitest",
    "./theme/theme.js",
    "../config.js",
];
pub(super) const UNI: &[&str] = &[
    "→",
    "—",
    "é",
    "ü",
    "✓",
    "✗",
    "…",
    "•",
    "±",
    "°",
    "✅",
    "🚀",
    "🎉",
    "🐛",
    "⚠️",
    "📦",
    "中文注释",
    "日本語",
    "Привет",
    "naïve",
    "café",
    "Ωmega",
    "λ",
    "∑",
    "👋",
    "🔥",
    "ß",
    "Ø",
    "€",
    "½",
];
pub(super) const DIRS: &[&str] = &[
    "src",
    "src/core",
    "src/tools",
    "src/tui",
    "src/modes",
    "packages/agent/src",
    "packages/ai/src",
    "packages/tui/src",
    "tests",
    "docs",
    "scripts",
    "src/util",
    "crates/core/src",
    "lib",
];
pub(super) const EXTS: &[&str] = &[
    "ts", "ts", "ts", "rs", "rs", "md", "json", "py", "tsx", "js", "toml", "sh",
];
pub(super) const LANGS: &[&str] = &["typescript", "ts", "rust", "bash", "json", "python", ""];

pub(super) fn cap_first(s: &mut String, w: &str) {
    let mut c = w.chars();
    if let Some(f) = c.next() {
        s.extend(f.to_uppercase());
        s.push_str(c.as_str());
    }
}

pub(super) fn camel(r: &mut Rng, s: &mut String, upper: bool) {
    let n = r.range(1, 3);
    for i in 0..n {
        let w = if i == 0 && n > 1 && !upper {
            r.pick(VERBS)
        } else {
            r.pick(WORDS)
        };
        if i == 0 && !upper {
            s.push_str(w);
        } else {
            cap_first(s, w);
        }
    }
}

pub(super) fn snake(r: &mut Rng, s: &mut String) {
    let n = r.range(1, 3);
    for i in 0..n {
        if i > 0 {
            s.push('_');
        }
        s.push_str(if i == 0 && n > 1 { r.pick(VERBS) } else { r.pick(WORDS) });
    }
}

/// A short path for small lines: `src/<word>.<ext>`.
pub(super) fn short_path(r: &mut Rng, s: &mut String) {
    s.push_str(r.pick(&DIRS[..5]));
    s.push('/');
    s.push_str(r.pick(WORDS));
    s.push('.');
    s.push_str(r.pick(&EXTS[..5]));
}

pub(super) fn rel_path(r: &mut Rng, s: &mut String) {
    s.push_str(r.pick(DIRS));
    s.push('/');
    let w = r.pick(WORDS);
    s.push_str(w);
    if r.chance(0.5) {
        s.push('-');
        s.push_str(r.pick(WORDS));
    }
    s.push('.');
    s.push_str(r.pick(EXTS));
}

pub(super) fn bash_command(r: &mut Rng, s: &mut String, cwd: &str, small: bool) {
    match r.below(10) {
        0 => {
            if !small {
                let _ = write!(s, "cd {cwd} && ");
            }
            s.push_str("npm run check");
        }
        1 => s.push_str("git status --short"),
        2 => s.push_str("git diff --stat HEAD~1"),
        3 => {
            s.push_str("rg -n \"");
            if small {
                s.push_str(r.pick(WORDS));
            } else {
                camel(r, s, false);
            }
            s.push_str("\" src/");
        }
        4 if small => {
            s.push_str("cargo test ");
            s.push_str(r.pick(WORDS));
        }
        4 => {
            s.push_str("cargo test --release -- ");
            snake(r, s);
        }
        5 => {
            s.push_str("ls -la ");
            s.push_str(r.pick(DIRS));
        }
        6 => {
            s.push_str("cat ");
            if small {
                short_path(r, s);
            } else {
                rel_path(r, s);
                s.push_str(" | head -50");
            }
        }
        7 => {
            s.push_str("find . -name \"*.");
            s.push_str(r.pick(EXTS));
            s.push('"');
            if !small {
                s.push_str(" -newer package.json");
            }
        }
        8 => {
            s.push_str("npx vitest run ");
            if small {
                short_path(r, s);
            } else {
                rel_path(r, s);
            }
        }
        _ => {
            s.push_str("git log --oneline -");
            let _ = write!(s, "{}", r.range(5, 30));
        }
    }
}

pub(super) fn session_name(r: &mut Rng, s: &mut String) {
    match r.below(10) {
        0 => {
            s.push_str("Fix flaky ");
            s.push_str(r.pick(WORDS));
            s.push_str(" test");
        }
        1 => {
            s.push_str("Refactor ");
            s.push_str(r.pick(WORDS));
            s.push(' ');
            s.push_str(r.pick(WORDS));
        }
        2 => {
            s.push_str("Port ");
            s.push_str(r.pick(WORDS));
            s.push_str(" parser to Rust");
        }
        3 => {
            s.push_str("Investigate ");
            s.push_str(r.pick(WORDS));
            s.push_str(" regression");
        }
        4 => {
            cap_first(s, r.pick(WORDS));
            s.push_str(" perf ");
            s.push_str(r.pick(UNI));
        }
        5 => {
            s.push_str("Add ");
            s.push_str(r.pick(WORDS));
            s.push_str(" support to ");
            camel(r, s, true);
        }
        6 => s.push_str(r.pick(&[
            "Überarbeitung der Sitzungen",
            "修复 session 解析",
            "🚀 release prep",
            "café order bug",
        ])),
        7 => {
            s.push_str("  ");
            cap_first(s, r.pick(VERBS));
            s.push(' ');
            s.push_str(r.pick(WORDS));
            s.push_str("s  ");
        }
        _ => {
            cap_first(s, r.pick(VERBS));
            s.push(' ');
            s.push_str(r.pick(WORDS));
            s.push(' ');
            s.push_str(r.pick(WORDS));
            let _ = write!(s, " #{}", r.range(1, 999));
        }
    }
}

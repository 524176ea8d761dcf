//! `pi-session tree`: the fixtures of `corpus/tree/` (written by
//! `corpus/tree/make_tree_fixtures.py`) against their expected text and `--json` in
//! `corpus/golden/tree/` (at a fixed `--width`, so terminal-independent; rewrite them with
//! `PI_SESSION_BLESS_TREE=1 cargo test --test it tree::` and read the diff); lines never
//! wider than `--width` by display width, on a 600-step ladder too; nothing a terminal
//! acts on; a cycle prints what it can and fails; and on the real sessions of
//! `../shared/corpus/real` (skipped when absent) every entry of `dump --tree flat` is a
//! node of `tree --json` once, with the same parent.

use crate::common::{strip_sgr, terminal_safe};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use unicode_width::UnicodeWidthStr;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `pi-session tree FILE ARGS`, with a fixed HOME (tool paths under it read `~/…`).
fn run(file: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .arg("tree")
        .arg(file)
        .args(args)
        .env("HOME", "/home/u")
        .env_remove("COLUMNS")
        .env_remove("NO_COLOR")
        .output()
        .expect("run pi-session")
}

fn ok(file: &Path, args: &[&str]) -> String {
    let out = run(file, args);
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn widest(text: &str) -> usize {
    text.lines().map(UnicodeWidthStr::width).max().unwrap_or(0)
}

/// The goldens: (fixture, arguments, golden file).
const CASES: &[(&str, &[&str], &str)] = &[
    ("conversation", &["--width", "80"], "conversation.txt"),
    (
        "conversation",
        &["--width", "80", "--filter", "all"],
        "conversation.all.txt",
    ),
    ("conversation", &["--width", "80", "--fold"], "conversation.fold.txt"),
    (
        "conversation",
        &["--width", "80", "--filter", "no-tools"],
        "conversation.no-tools.txt",
    ),
    (
        "conversation",
        &["--filter", "user", "--leaf", "b0000008"],
        "conversation.user.txt",
    ),
    ("conversation", &["--filter", "labeled"], "conversation.labeled.txt"),
    ("conversation", &["--json"], "conversation.json"),
    ("hostile", &["--width", "60"], "hostile.txt"),
    ("hostile", &["--json"], "hostile.json"),
    ("ladder", &["--width", "80"], "ladder.txt"),
    ("ladder", &["--width", "40", "--fold"], "ladder.fold.txt"),
];

#[test]
fn fixtures_draw_as_their_goldens() {
    let bless = std::env::var_os("PI_SESSION_BLESS_TREE").is_some();
    let mut failed = Vec::new();
    for (fixture, args, golden) in CASES {
        let file = root().join(format!("corpus/tree/{fixture}.jsonl"));
        let got = ok(&file, args);
        let path = root().join("corpus/golden/tree").join(golden);
        if bless {
            std::fs::write(&path, &got).expect("write golden");
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if got != want {
            failed.push(format!(
                "{golden} ({fixture} {args:?}):\n--- want\n{want}--- got\n{got}"
            ));
        }
        // (--json is JSON.stringify's, exact: a bidi override stays as it is.)
        assert!(args.contains(&"--json") || terminal_safe(&got), "{golden}: {got}");
        if let Some(i) = args.iter().position(|&a| a == "--width") {
            let w: usize = args[i + 1].parse().expect("a width");
            assert!(widest(&got) <= w, "{golden}: a line wider than {w}:\n{got}");
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn the_text_shows_what_pi_shows() {
    let file = root().join("corpus/tree/conversation.jsonl");
    let got = ok(&file, &["--width", "0"]);
    let line = |id: &str| {
        got.lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("no line for {id}:\n{got}"))
    };
    // Tool results as their calls, pi's formats; HOME shortened to ~.
    assert!(line("b0000005").ends_with("* [read: ~/proj/src/parser.rs:10-29]"));
    assert!(line("b0000006").contains("[bash: cargo test parser -- --nocapture 2>&1 | tail -n 40...]"));
    assert!(line("b0000011").contains(r#"[web_search: {"query":"nom crate trailing newline han...]"#));
    // The fork, its label, the marks; an aborted and a failed answer; a compaction.
    assert!(
        line("b0000007")
            .contains("* [plan] [3 branches] assistant: The test expects a trailing newline. I will add it.")
    );
    assert!(line("b0000017").contains("* assistant: All tests pass now."));
    // The leaf is always shown, whatever the filter.
    assert!(line("b000001a").ends_with("@ [usage]"));
    assert!(line("b0000009").ends_with("assistant: (aborted)") && !line("b0000009").contains('*'));
    assert!(line("b000000b").ends_with("assistant: 529 overloaded_error: Overloaded"));
    assert!(line("b0000012").contains("* [compaction: 45k tokens]"));
    assert!(line("b000000c").contains("├─ * [branch summary]: Tried rewriting the tokenizer; abandoned."));
    // The default filter leaves out bookkeeping and assistant messages that only call
    // tools; `all` shows them.
    for hidden in ["b0000001", "b0000004", "b0000015", "b0000018", "b0000019"] {
        assert!(!got.contains(hidden), "{hidden} shown:\n{got}");
    }
    let all = ok(&file, &["--filter", "all"]);
    assert_eq!(all.lines().count(), 26, "{all}");
    assert!(all.contains("[title: Fix parser test]") && all.contains("[label: plan]") && all.contains("[usage]"));
    // Colour adds SGR sequences and nothing else.
    let colored = ok(&file, &["--color", "always"]);
    assert_ne!(colored, got);
    assert_eq!(strip_sgr(&colored), got);
    // NO_COLOR and a pipe: none.
    assert!(!ok(&file, &[]).contains('\u{1b}'));
}

#[test]
fn json_is_one_node_a_line_in_the_same_order() {
    let file = root().join("corpus/tree/conversation.jsonl");
    let text = ok(&file, &["--filter", "all"]);
    let json = ok(&file, &["--json"]);
    let nodes: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(nodes.len(), 26);
    let ids: Vec<&str> = nodes.iter().map(|n| n["id"].as_str().expect("an id")).collect();
    let text_ids: Vec<&str> = text.lines().map(|l| &l[..8]).collect();
    assert_eq!(ids, text_ids);
    let node = |id: &str| nodes.iter().find(|n| n["id"] == id).expect("a node");
    let n = node("b0000007");
    assert_eq!(n["children"], 3);
    assert_eq!(n["label"], "plan");
    assert_eq!(n["onBranch"], true);
    assert_eq!(n["role"], "assistant");
    assert_eq!(n["line"], 8);
    assert_eq!(n["depth"], 6);
    assert_eq!(n["timestamp"], "2025-12-01T09:00:07.000Z");
    assert_eq!(node("b0000017")["isLeaf"], false);
    assert_eq!(node("b000001a")["isLeaf"], true);
    assert_eq!(node("b0000012")["preview"], "[compaction: 45k tokens]");
    assert_eq!(node("b0000012")["role"], serde_json::Value::Null);
    // A filter applies to --json too; the shown parent skips what it hides.
    let user = ok(&file, &["--json", "--filter", "user"]);
    let first: Vec<serde_json::Value> = user.lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    assert!(first.iter().all(|n| n["role"] == "user" || n["isLeaf"] == true));
    let d = first.iter().find(|n| n["id"] == "b000000d").expect("b000000d");
    assert_eq!(d["parentId"], "b000000c");
    assert_eq!(d["shownParentId"], "b0000003");
    // --fold is for the text.
    assert_eq!(run(&file, &["--json", "--fold"]).status.code(), Some(2));
}

/// A ladder of `steps` forks: each step's user message has two children, the next step
/// and an alternative left behind.
fn ladder(steps: usize) -> String {
    let mut s = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"0b0d4e2a-1111-4222-8333-000000000009\",\"timestamp\":\"2025-12-01T09:00:00.000Z\",\"cwd\":\"/p\"}\n",
    );
    let mut parent = "null".to_owned();
    for i in 0..steps {
        let t = 1764579600000u64 + 2 * i as u64;
        let secs = |k: u64| format!("2025-12-01T{:02}:{:02}:{:02}.000Z", 9 + k / 3600, k / 60 % 60, k % 60);
        let step = format!("{:08x}", 2 * i);
        s.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{step}\",\"parentId\":{parent},\"timestamp\":\"{}\",\"message\":{{\"role\":\"user\",\"content\":\"step {i} of the ladder, a line long enough to be cut\",\"timestamp\":{t}}}}}\n",
            secs(2 * i as u64)
        ));
        s.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{:08x}\",\"parentId\":\"{step}\",\"timestamp\":\"{}\",\"message\":{{\"role\":\"user\",\"content\":\"alternative {i}\",\"timestamp\":{}}}}}\n",
            2 * i + 1,
            secs(2 * i as u64 + 1),
            t + 1
        ));
        parent = format!("\"{step}\"");
    }
    s
}

#[test]
fn a_600_step_ladder_stays_inside_the_width() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("ladder.jsonl");
    std::fs::write(&file, ladder(600)).expect("write");
    for w in [40usize, 80, 120] {
        let got = ok(&file, &["--width", &w.to_string()]);
        assert_eq!(got.lines().count(), 1200);
        assert!(widest(&got) <= w, "width {w}: {}", widest(&got));
        // The depth beyond the drawn levels is a number.
        let deep = got.lines().any(|l| {
            l.split('…')
                .nth(1)
                .and_then(|r| r.split(' ').next()?.parse::<usize>().ok())
                .is_some_and(|d| d > 500)
        });
        assert!(deep, "{}", got.lines().nth(600).unwrap_or(""));
    }
    // Not cut, the gutter is still bounded: 16 levels.
    let uncut = ok(&file, &[]);
    assert!(widest(&uncut) < 140, "{}", widest(&uncut));
    let json = ok(&file, &["--json"]);
    assert_eq!(json.lines().count(), 1200);
    assert!(json.lines().nth(599).expect("line").contains("\"depth\":599"));
}

#[test]
fn cycles_print_what_can_be_printed_and_fail() {
    let bad = |name: &str| root().join("corpus/malformed").join(name);
    // No root at all: nothing to draw.
    let out = run(&bad("cycle-two-entries.jsonl"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("form a cycle"));
    let out = run(&bad("cycle-two-entries.jsonl"), &["--json"]);
    assert_eq!(out.status.code(), Some(2));
    let err: serde_json::Value = serde_json::from_slice(&out.stdout).expect("an error object");
    assert_eq!(err["error"]["kind"], "invalidSession");
    // A cycle no root reaches: the tree, then why it is not all.
    let out = run(&bad("cycle-detached.jsonl"), &["--filter", "all"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("2 entries are in no tree"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A current branch that loops: the tree without marks.
    let out = run(&bad("cycle-self-parent-on-leaf-path.jsonl"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!out.stdout.is_empty() && !String::from_utf8_lossy(&out.stdout).contains(" * "));
    assert!(String::from_utf8_lossy(&out.stderr).contains("current branch cannot be marked"));
    // A cycle that a root reaches: pi never returns; an error.
    let out = run(&bad("cycle-via-duplicate-ids.jsonl"), &["--json"]);
    assert_eq!(out.status.code(), Some(2));
    // Every malformed file: no panic, safe output.
    for e in std::fs::read_dir(root().join("corpus/malformed")).expect("dir") {
        let f = e.expect("entry").path();
        let out = run(&f, &["--filter", "all", "--width", "50"]);
        assert!(matches!(out.status.code(), Some(0..=2)), "{}", f.display());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(terminal_safe(&text) && widest(&text) <= 50, "{}", f.display());
    }
}

#[test]
fn real_sessions_have_every_entry_once_with_its_parent() {
    let Some(files) = crate::common::real_sessions() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    for f in &files {
        // Old-format files get new ids on every open: migrate a copy so both commands see
        // the same ids.
        let copy = tmp.path().join(f.file_name().expect("a name"));
        std::fs::copy(f, &copy).expect("copy");
        let _ = Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .arg("migrate")
            .arg(&copy)
            .output()
            .expect("migrate");
        let dump = Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .args(["dump", "--compact", "--tree", "flat"])
            .arg(&copy)
            .output()
            .expect("dump");
        let dump: serde_json::Value = serde_json::from_slice(&dump.stdout).expect("dump JSON");
        // Parents from the flat preorder's depths.
        let mut want: HashMap<String, Option<String>> = HashMap::new();
        let mut path: Vec<String> = Vec::new();
        for n in dump["tree"].as_array().expect("flat tree") {
            let depth = n["depth"].as_u64().expect("depth") as usize;
            let id = n["id"].as_str().expect("id").to_owned();
            path.truncate(depth);
            assert!(
                want.insert(id.clone(), path.last().cloned()).is_none(),
                "{id} twice in dump"
            );
            path.push(id);
        }
        let json = ok(&copy, &["--json"]);
        let mut seen = 0;
        for l in json.lines() {
            let n: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let id = n["id"].as_str().expect("id");
            let parent = want.remove(id).unwrap_or_else(|| panic!("{id}: not in dump, or twice"));
            assert_eq!(n["shownParentId"].as_str(), parent.as_deref(), "{id}");
            seen += 1;
        }
        assert!(want.is_empty() && seen > 100, "{}: {} missing", f.display(), want.len());
        let text = ok(&copy, &["--width", "100"]);
        assert!(terminal_safe(&text) && widest(&text) <= 100, "{}", f.display());
        let all = ok(&copy, &["--filter", "all"]);
        assert_eq!(all.lines().count(), seen);
    }
}

/// The member reads `tree` takes its text from agree with the whole entry decoded (their
/// slow twin), on every corpus file.
#[test]
fn member_reads_agree_with_the_whole_entry() {
    use pi_session::{EntryType, Session, Value};
    let keys = [
        "role",
        "content",
        "stopReason",
        "errorMessage",
        "toolCallId",
        "toolName",
        "command",
        "nope",
    ];
    let mut dirs = vec![
        root().join("corpus/valid"),
        root().join("corpus/malformed"),
        root().join("corpus/tree"),
    ];
    dirs.push(root().join("../shared/corpus/real"));
    let mut checked = 0;
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd {
            let f = e.expect("entry").path();
            let Ok(s) = Session::open(&f) else { continue };
            for &p in s.entries() {
                let whole = s.value(p).expect("decodes");
                let ts = s.entry_timestamp(p).expect("reads");
                assert_eq!(ts.as_ref(), whole.get("timestamp"), "{}: {p:?}", f.display());
                if s.record(p).ty != EntryType::Message {
                    continue;
                }
                let got = s.message_members_of(p, &keys).expect("reads");
                match whole.get("message") {
                    None => assert!(got.is_none(), "{}", f.display()),
                    Some(m) => {
                        let got = got.expect("a message");
                        for (k, v) in keys.iter().zip(&got) {
                            let want = match m {
                                Value::Object(_) => m.get(k),
                                _ => None,
                            };
                            assert_eq!(v.as_ref(), want, "{}: {p:?} {k}", f.display());
                        }
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 200, "{checked}");
}

/// On a terminal (a pty from util-linux `script`; skipped without it): the terminal's
/// width (`stty cols`) or `$COLUMNS` cuts the lines, the text goes through `$PAGER`
/// unless `--no-pager`, colour unless NO_COLOR.
#[cfg(unix)]
#[test]
fn on_a_terminal_it_fits_pages_and_colours() {
    if Command::new("script").arg("--version").output().is_err() {
        crate::common::absent(std::path::Path::new("script (util-linux)"));
        return;
    }
    let file = root().join("corpus/tree/conversation.jsonl");
    let pty = |setup: &str, args: &str| {
        let cmd = format!(
            "stty cols 44; {setup} '{}' tree '{}' {args}",
            env!("CARGO_BIN_EXE_pi-session"),
            file.display()
        );
        let out = Command::new("script")
            .args(["-q", "-e", "-c", &cmd, "/dev/null"])
            .env_remove("COLUMNS")
            .env("HOME", "/home/u")
            .output()
            .expect("script");
        assert!(
            out.status.success(),
            "{cmd}: {:?} {} {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8").replace('\r', "")
    };
    let paged = pty("env -u COLUMNS NO_COLOR=1 PAGER='sed s/^/P:/'", "");
    assert!(
        paged.lines().count() > 10 && paged.lines().all(|l| l.starts_with("P:")),
        "{paged}"
    );
    assert!(paged.lines().all(|l| l.width() <= 44 + 2), "{paged}");
    assert!(paged.contains('…') && !paged.contains('\u{1b}'));
    let columns = pty("env COLUMNS=30 NO_COLOR=1 PAGER='sed s/^/P:/'", "--no-pager");
    assert!(
        columns.lines().all(|l| !l.starts_with("P:") && l.width() <= 30),
        "{columns}"
    );
    let colored = pty("env -u NO_COLOR -u COLUMNS", "--no-pager");
    assert!(colored.contains('\u{1b}'), "{colored}");
    assert_eq!(strip_sgr(&colored), pty("env -u COLUMNS NO_COLOR=1", "--no-pager"));
}

mod twins {
    use pi_session::{EntryType, Session, Value};
    use proptest::prelude::*;

    /// A member of an entry line: key and raw JSON value.
    fn member() -> impl Strategy<Value = (String, String)> {
        let ts = prop_oneof![
            Just("\"2025-12-01T09:00:01.000Z\"".to_owned()),
            Just("1764579601000".to_owned()),
            Just("null".to_owned()),
            Just("{\"t\":\"x\"}".to_owned()),
            Just("\"a\\\"b\\u0041\"".to_owned()),
        ];
        let body = (0usize..300, prop_oneof![Just("x"), Just("\\n"), Just("\\\"}")]).prop_map(|(n, s)| s.repeat(n));
        let message = (body, any::<bool>(), ts.clone()).prop_map(|(b, call, t)| {
            let extra = if call { ",\"toolCallId\":\"c1\"" } else { "" };
            format!("{{\"role\":\"toolResult\"{extra},\"content\":\"{b}\",\"timestamp\":{t}}}")
        });
        prop_oneof![
            ts.prop_map(|t| ("timestamp".to_owned(), t)),
            message.prop_map(|m| ("message".to_owned(), m)),
            Just(("note".to_owned(), "[1,{\"timestamp\":2}]".to_owned())),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// `entry_timestamp` (the line without its `message`) and `message_members_of`
        /// agree with the whole entry decoded, whatever the members' order, duplicates and
        /// spacing.
        #[test]
        fn member_reads_match_the_decoded_entry(lines in proptest::collection::vec((proptest::collection::vec(member(), 0..5), any::<bool>()), 1..6)) {
            let mut text = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n");
            for (i, (members, spaced)) in lines.iter().enumerate() {
                let sep = if *spaced { " , " } else { "," };
                let mut parts = vec![format!("\"type\":\"message\""), format!("\"id\":\"e{i}\"")];
                parts.extend(members.iter().map(|(k, v)| format!("\"{k}\":{v}")));
                text.push_str(&format!("{{{}}}\n", parts.join(sep)));
            }
            let s = Session::from_bytes(text.into_bytes()).expect("a session");
            for &p in s.entries() {
                let whole = s.value(p).expect("decodes");
                let ts = s.entry_timestamp(p).expect("reads");
                prop_assert_eq!(ts.as_ref(), whole.get("timestamp"));
                if s.record(p).ty == EntryType::Message {
                    let keys = ["role", "content", "toolCallId", "timestamp"];
                    let got = s.message_members_of(p, &keys).expect("reads");
                    match whole.get("message") {
                        None => prop_assert!(got.is_none()),
                        Some(m) => {
                            let got = got.expect("a message");
                            for (k, v) in keys.iter().zip(&got) {
                                let want = if matches!(m, Value::Object(_)) { m.get(k) } else { None };
                                prop_assert_eq!(v.as_ref(), want);
                            }
                        }
                    }
                }
            }
        }
    }
}

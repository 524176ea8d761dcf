//! PiG's sessions (`corpus/pig/`: the examples of PiG's document, a conversation in PiG's
//! content blocks, a hostile one, and one fixture per rule of PiG's context), through
//! every command that shows, searches, exports or builds a context. Each output is held
//! to its golden in `corpus/golden/pig-views/` (read the diff, then bless with
//! `PI_SESSION_BLESS_PIG=1 cargo test --profile ci --test it pig::`); pi's own answers on
//! these files are held to pi 1.6.0 by the conformance suite (`corpus/golden/pig/`).

use crate::common::{run_cli, terminal_safe};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> Vec<PathBuf> {
    // Relative names (tests run in the package's folder): the outputs name the file.
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("corpus/pig"))
        .expect("corpus/pig")
        .map(|e| Path::new("corpus/pig").join(e.expect("entry").file_name()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    v.sort();
    assert!(v.len() >= 9, "the PiG corpus is missing");
    v
}

/// stdout of a command that must succeed.
fn ok(sub: &str, args: &[&str]) -> String {
    let out = run_cli(sub, args);
    assert!(
        out.status.success(),
        "{sub} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Compare `got` with `corpus/golden/pig-views/NAME`, or write it when blessing.
fn golden(name: &str, got: &str, failures: &mut Vec<String>) {
    let path = root().join("corpus/golden/pig-views").join(name);
    if std::env::var_os("PI_SESSION_BLESS_PIG").is_some() {
        std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        std::fs::write(&path, got).expect("write golden");
        return;
    }
    match std::fs::read_to_string(&path) {
        Ok(want) if want == got => {}
        Ok(want) => failures.push(format!("{name}: differs\n--- want\n{want}\n--- got\n{got}")),
        Err(_) => failures.push(format!("{name}: no golden")),
    }
}

fn stem(p: &Path) -> String {
    p.file_stem().expect("stem").to_string_lossy().into_owned()
}

#[test]
fn every_view_of_every_pig_session_is_its_golden() {
    let mut failures = Vec::new();
    for f in fixtures() {
        let (file, name) = (f.to_str().expect("UTF-8 path"), stem(&f));
        let show = ok("show", &[file, "--full", "--thinking"]);
        assert!(terminal_safe(&show), "{name}: {show}");
        golden(&format!("{name}.show.txt"), &show, &mut failures);
        let tree = ok("tree", &[file]);
        assert!(terminal_safe(&tree), "{name}: {tree}");
        golden(&format!("{name}.tree.txt"), &tree, &mut failures);
        for fmt in ["md", "html"] {
            let page = ok("export", &[file, "--format", fmt, "--thinking"]);
            golden(&format!("{name}.{fmt}"), &page, &mut failures);
        }
        // PiG's reading views: the branch flattened, and every entry's bytes as written.
        let view = ok("dump", &[file, "--branch-view"]);
        golden(&format!("{name}.branch-view.jsonl"), &view, &mut failures);
        let entries = ok("dump", &[file, "--entries"]);
        let written = std::fs::read_to_string(&f).expect("fixture");
        let lines: Vec<&str> = written.lines().skip(1).collect();
        assert_eq!(entries.lines().collect::<Vec<_>>(), lines, "{name}: --entries");
        let pi = run_cli("context", &[file, "--json"]);
        let pig = run_cli("context", &[file, "--json", "--flavor", "pig"]);
        let text = |o: &std::process::Output| {
            format!(
                "exit {}\n--- stderr\n{}--- stdout\n{}",
                o.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&o.stderr),
                String::from_utf8_lossy(&o.stdout)
            )
        };
        golden(&format!("{name}.context-pi.txt"), &text(&pi), &mut failures);
        golden(&format!("{name}.context-pig.txt"), &text(&pig), &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn pigs_blocks_are_shown_as_pis_are() {
    let f = root().join("corpus/pig/blocks.jsonl");
    let file = f.to_str().expect("UTF-8");
    let show = ok("show", &[file, "--thinking"]);
    for want in [
        // tool_use: its name and input, as a toolCall's name and arguments.
        "→ bash(command: go test ./..., timeout: 120)",
        "→ read(path: /work/gopher/api/handler.go, offset: 10, limit: 20)",
        // image by url: its type and address, never fetched; by data: type and size.
        "[image/png at https://example.com/shots/failing-test.png]",
        "[image/jpeg 162 B]",
        // thinking with a signature reads as pi's.
        "The log shows a nil map write in the handler.",
        // blocks of other types: type and size only.
        "[server_tool_use block, 89 B]",
        "[tool_result block, 75 B]",
    ] {
        assert!(show.contains(want), "no {want:?} in\n{show}");
    }
    assert!(!show.contains("opaque to pi-session") && !show.contains("\"type\":\"tool_use\""));
    // The tree names tool_use calls as pi's /tree names toolCall ones.
    let tree = ok("tree", &[file]);
    assert!(
        tree.contains("[bash: go test ./...]") || tree.contains("go test ./..."),
        "{tree}"
    );
    assert!(tree.contains("[read: "), "{tree}");
    // Markdown: a url image is a link; HTML: an <a>, never an <img> of it.
    let md = ok("export", &[file, "--format", "md"]);
    assert!(md.contains("(<https://example.com/shots/failing-test.png>)"), "{md}");
    let html = ok("export", &[file, "--format", "html", "--images"]);
    assert!(
        html.contains("<a href=\"https://example.com/shots/failing-test.png\" rel=\"noopener noreferrer nofollow\">")
    );
    assert!(!html.contains("<img src=\"https://"), "{html}");
    assert!(
        html.contains("<img src=\"data:image/jpeg;base64,"),
        "the data image is embedded"
    );
}

#[test]
fn search_finds_tool_use_input_with_tool_calls_only() {
    let f = root().join("corpus/pig/blocks.jsonl");
    let file = f.to_str().expect("UTF-8");
    let hits = |extra: &[&str]| {
        let mut args = vec!["--json"];
        args.extend_from_slice(extra);
        args.push(file);
        ok("search", &args)
    };
    let with = hits(&["--tool-calls", "go test"]);
    assert!(with.contains("\"a0000002\"") && with.contains("\"toolCall\""), "{with}");
    // Without --tool-calls the input is not searched (the text of a0000009 still is).
    let without = hits(&["go test"]);
    assert!(
        !without.contains("\"a0000002\"") && without.contains("\"a0000009\""),
        "{without}"
    );
    // An opaque block's contents are never searched.
    let opaque = run_cli(
        "search",
        &["--json", "--tool-calls", "--tool-results", "opaque to pi-session", file],
    );
    assert_eq!(opaque.status.code(), Some(1), "no match");
}

#[test]
fn a_hostile_pig_session_is_safe_on_a_terminal_and_in_a_page() {
    let f = root().join("corpus/pig/hostile.jsonl");
    let file = f.to_str().expect("UTF-8");
    for args in [vec![file, "--full", "--thinking"], vec![file]] {
        let show = ok("show", &args);
        assert!(terminal_safe(&show), "{show}");
    }
    let html = ok("export", &[file, "--format", "html", "--thinking", "--images"]);
    let lower = html.to_ascii_lowercase();
    assert!(!lower.contains("<script"), "{html}");
    assert!(
        !lower.contains("href=\"javascript:") && !lower.contains("href=\"data:"),
        "{html}"
    );
    assert!(!lower.contains("<svg") && !lower.contains("<img src=x"), "{html}");
    // The https address with spaces and quotes is a link with every special escaped.
    assert!(
        html.contains("href=\"https://example.com/a%20b%3Cc%3E%5Cd.png?x=&quot;y&quot;&amp;z=%E2%80%AE\""),
        "{html}"
    );
    let md = ok("export", &[file, "--format", "md", "--thinking"]);
    assert!(!md.contains("](<javascript:") && !md.contains("](<data:"), "{md}");
    assert!(
        md.contains("](<https://example.com/a%20b%3Cc%3E%5Cd.png?x=\"y\"&z=%E2%80%AE>)"),
        "{md}"
    );
    assert!(md.contains("](<HTTPS://example.com/%1B]52;c;cGF3bmVk%07.png>)"), "{md}");
}

#[test]
fn pigs_context_applies_no_context_edit_and_says_so() {
    let f = root().join("corpus/pig/context-edits.jsonl");
    let file = f.to_str().expect("UTF-8");
    let pi = run_cli("context", &[file]);
    let pig = run_cli("context", &[file, "--flavor", "pig"]);
    let (pi_out, pig_out) = (
        String::from_utf8_lossy(&pi.stdout),
        String::from_utf8_lossy(&pig.stdout),
    );
    assert!(
        pi_out.contains("2 messages") && pig_out.contains("3 messages"),
        "{pi_out}\n{pig_out}"
    );
    assert!(pi.stderr.is_empty());
    let note = String::from_utf8_lossy(&pig.stderr);
    assert!(
        note.contains("PiG's context differs from pi's: 2 context edits that pi applies not applied (e3, e4)"),
        "{note}"
    );
    // Where pi's build throws, PiG's answers, and says why the two differ.
    let f = root().join("corpus/pig/context-edit-without-replacement.jsonl");
    let file = f.to_str().expect("UTF-8");
    assert_eq!(run_cli("context", &[file]).status.code(), Some(2));
    let pig = run_cli("context", &[file, "--flavor", "pig"]);
    assert!(pig.status.success());
    assert!(String::from_utf8_lossy(&pig.stderr).contains("pi's build fails here"));
    // PiG has no retainedTail.
    let both = run_cli("context", &[file, "--flavor", "pig", "--retained-tail"]);
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn a_session_under_pigs_folder_is_read_with_pigs_rules() {
    let home = tempfile::tempdir().expect("tmp");
    let dir = home.path().join(".pig/agent/sessions/--work-ctx--");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let f = dir.join("2026-03-01T09-00-00-000Z_ctx.jsonl");
    std::fs::copy(root().join("corpus/pig/context-edits.jsonl"), &f).expect("copy");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .arg("context")
            .arg(&f)
            .args(args)
            .env("HOME", home.path())
            .env_remove("PIG_CODING_AGENT_DIR")
            .env_remove("PIG_CODING_AGENT_SESSION_DIR")
            .output()
            .expect("run")
    };
    let out = run(&[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 messages"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("PiG's context differs"));
    // --flavor pi asks for pi's.
    let out = run(&["--flavor", "pi"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 messages"));
}

/// What the view shows of one block, as the two documents say, written from a
/// `serde_json` reading of it (the slow twin of `session::block` + the transcript walk).
fn twin_part(b: &serde_json::Value) -> String {
    use serde_json::Value as J;
    let s = |k: &str| b.get(k).and_then(J::as_str);
    let args = |a: Option<&J>| match a {
        Some(J::Object(o)) => o
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
            .collect::<Vec<_>>()
            .join("|"),
        Some(v) => v.to_string(),
        None => String::new(),
    };
    match s("type") {
        Some("text") => format!("text {}", s("text").unwrap_or("")),
        Some("thinking") => format!("thinking {}", s("thinking").unwrap_or("")),
        Some("toolCall") => format!("call {} {}", s("name").unwrap_or("?"), args(b.get("arguments"))),
        Some("tool_use") => format!("call {} {}", s("name").unwrap_or("?"), args(b.get("input"))),
        Some("image") => {
            let mime = s("mimeType").or(s("media_type"));
            match (s("data"), s("url")) {
                (Some(d), _) => format!("image {mime:?} data {}", d.len()),
                (None, Some(u)) => format!("image {mime:?} url {u}"),
                (None, None) => format!("image {mime:?} data 0"),
            }
        }
        // `JSON.stringify` of the block, for its size (serde_json writes the values
        // generated here as JSON.stringify does: no floats, keys in order).
        ty => format!("block {ty:?} {}", size(b.to_string().len())),
    }
}

fn size(n: usize) -> String {
    match n {
        0..1_000 => format!("{n} B"),
        1_000..1_000_000 => format!("{:.1} KB", n as f64 / 1e3),
        _ => format!("{:.1} MB", n as f64 / 1e6),
    }
}

/// The transcript's parts, in the twin's words.
struct Parts(Vec<String>);

impl pi_session::view::transcript::Sink for Parts {
    fn start(&mut self, _: &pi_session::view::transcript::Info<'_>) -> std::io::Result<()> {
        Ok(())
    }
    fn unreadable(&mut self, _: &str, _: &str) -> std::io::Result<()> {
        Ok(())
    }
    fn note(&mut self, _: &pi_session::view::transcript::Note<'_>) -> std::io::Result<()> {
        Ok(())
    }
    fn head(&mut self, _: &pi_session::view::transcript::Head<'_>) -> std::io::Result<()> {
        Ok(())
    }
    fn part(&mut self, part: &pi_session::view::transcript::Part<'_>) -> std::io::Result<()> {
        use pi_session::view::transcript::Part;
        let args = |a: &[(Option<String>, String)]| {
            a.iter()
                .map(|(k, v)| match k {
                    Some(k) => format!("{k}={v}"),
                    None => v.clone(),
                })
                .collect::<Vec<_>>()
                .join("|")
        };
        self.0.push(match part {
            Part::Text(t, _) => format!("text {t}"),
            Part::Thinking(t) => format!("thinking {t}"),
            Part::Call { name, args: a } => format!("call {name} {}", args(a)),
            Part::Image(i) => match i.url {
                Some(u) => format!("image {:?} url {u}", i.mime),
                None => format!("image {:?} data {}", i.mime, i.data.len()),
            },
            Part::Block { ty, bytes } => format!("block {ty:?} {}", size(*bytes)),
            _ => "other".into(),
        });
        Ok(())
    }
    fn end(&mut self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
}

/// A content block of pi's or PiG's shape, or of another type, with members that may be
/// missing, of the other program's name, or of another JSON type.
fn block_strategy() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    use serde_json::{Value as J, json};
    let text = "[ -~é\u{202e}\u{1b}<>\"\\\\]{0,12}";
    let member = prop_oneof![
        text.prop_map(J::String),
        any::<i32>().prop_map(|n| json!(n)),
        Just(J::Null),
        Just(json!({"k": "v", "n": [1, "x"]})),
        Just(json!([1, 2])),
    ];
    let ty = prop_oneof![
        Just("text"),
        Just("thinking"),
        Just("toolCall"),
        Just("tool_use"),
        Just("image"),
        Just("tool_result"),
        Just("server_tool_use"),
        Just("redacted_thinking"),
    ];
    let keys = proptest::sample::subsequence(
        vec![
            "text",
            "thinking",
            "signature",
            "thinkingSignature",
            "id",
            "name",
            "arguments",
            "input",
            "mimeType",
            "media_type",
            "data",
            "url",
        ],
        0..6,
    );
    (ty, keys, proptest::collection::vec(member, 6), any::<bool>()).prop_map(|(ty, keys, vals, typed)| {
        let mut o = serde_json::Map::new();
        if typed {
            o.insert("type".into(), J::String(ty.into()));
        }
        for (k, v) in keys.into_iter().zip(vals) {
            o.insert(k.into(), v);
        }
        J::Object(o)
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256)))]

    /// Every block, pi's or PiG's or neither, shows what the documents say it shows.
    #[test]
    fn the_view_of_a_block_is_what_the_documents_say(blocks in proptest::collection::vec(block_strategy(), 1..5)) {
        let message = serde_json::json!({"role": "assistant", "content": blocks});
        let text = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"s\"}}\n{{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{message}}}\n"
        );
        let s = pi_session::Session::from_bytes(text.into_bytes()).expect("opens");
        let branch = s.branch_path(None).expect("branch");
        let mut got = Parts(Vec::new());
        pi_session::view::transcript::walk(&s, Path::new("x.jsonl"), &branch, &mut got).expect("walk");
        let want: Vec<String> = blocks.iter().map(twin_part).collect();
        proptest::prop_assert_eq!(got.0, want);
    }
}

/// A generated store of PiG-shaped sessions (`gen tree --flavor pig`) through every
/// command: nothing shows a PiG block as raw JSON, `--tool-calls` finds tool_use input.
#[test]
fn a_generated_pig_store_passes_through_every_command() {
    let home = tempfile::tempdir().expect("tmp");
    let agent = home.path().join("agent");
    let root = agent.join("sessions");
    let r = root.to_str().expect("UTF-8");
    ok(
        "gen",
        &[
            "tree",
            r,
            "--sessions",
            "6",
            "--folders",
            "2",
            "--size",
            "3M",
            "--flavor",
            "pig",
        ],
    );
    let a = agent.to_str().expect("UTF-8");
    let ls = ok("ls", &["--all", "--agent-dir", a, "--json"]);
    assert_eq!(ls.matches("\"path\"").count(), 6, "{ls}");
    assert!(ok("usage", &["--agent-dir", a, "--json"]).contains("\"totalCost\""));
    let hits = ok("search", &["--tool-calls", "--count", "-e", ".", "--agent-dir", a]);
    assert!(!hits.is_empty());
    let mut calls = 0;
    for dir in std::fs::read_dir(&root).expect("root") {
        for f in std::fs::read_dir(dir.expect("dir").path()).expect("project") {
            let p = f.expect("file").path();
            let file = p.to_str().expect("UTF-8");
            let show = ok("show", &[file, "--full", "--thinking"]);
            assert!(
                !show.contains("\"tool_use\"") && !show.contains("[image 0 B]"),
                "{show}"
            );
            calls += show.matches("\n→ ").count();
            for fmt in ["md", "html"] {
                let page = ok("export", &[file, "--format", fmt]);
                assert!(!page.contains("\"tool_use\""), "{fmt}");
            }
            ok("tree", &[file]);
            ok("context", &[file, "--flavor", "pig"]);
            ok("dump", &[file, "--branch-view"]);
        }
    }
    assert!(calls > 0, "tool_use blocks are shown as calls");
}

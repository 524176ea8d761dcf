//! docs/cli.md is true: every ```` ```console ```` block runs, in order, in a scratch
//! folder with the files the page names, each command's output (stdout and stderr, as a
//! terminal shows them) and exit status as shown; the ```` ```sh ```` install block's
//! `pi-session` commands run and print something; every ```` ```json ```` block parses.
//! No other fenced block holds a command.
//!
//! The syntax is trycmd's (`$ ` starts a command, split as sh splits words; `? N` under it
//! is the exit status, 0 when absent; then the output, up to the next `$ ` or the end of
//! the block, its last line break excepted; `[..]` stands for any text within a line,
//! `...` on a line of its own for any lines, `[CWD]` for the scratch folder).

use super::readme::fenced_blocks;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The page's files, and the corpus files they are copies of.
const FIXTURES: &[(&str, &str)] = &[
    ("s.jsonl", "corpus/valid/branches.jsonl"),
    ("old.jsonl", "corpus/valid/version-1.jsonl"),
    ("skips.jsonl", "corpus/malformed/truncated-line-mid-file.jsonl"),
    ("cycle.jsonl", "corpus/malformed/cycle-two-entries.jsonl"),
    ("pig/blocks.jsonl", "corpus/pig/blocks.jsonl"),
    ("pig/edits.jsonl", "corpus/pig/context-edits.jsonl"),
];

/// A command of a console block.
struct Step {
    line_no: usize,
    args: Vec<String>,
    status: i32,
    expected: String,
}

fn steps(page: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for b in fenced_blocks(page).into_iter().filter(|b| b.lang == "console") {
        let mut lines = b.lines.into_iter().peekable();
        while let Some((line_no, line)) = lines.next() {
            let Some(cmd) = line.strip_prefix("$ ") else {
                return Err(format!("docs/cli.md:{line_no}: expected `$ `, got `{line}`"));
            };
            let words = shlex::split(cmd).ok_or_else(|| format!("docs/cli.md:{line_no}: cannot split `{cmd}`"))?;
            if words.first().map(String::as_str) != Some("pi-session") {
                return Err(format!("docs/cli.md:{line_no}: not a pi-session command: `{cmd}`"));
            }
            let mut status = 0;
            if let Some(code) = lines.peek().and_then(|(_, l)| l.strip_prefix("? ")) {
                status = code
                    .trim()
                    .parse()
                    .map_err(|_| format!("docs/cli.md:{line_no}: bad status `{code}`"))?;
                lines.next();
            }
            let mut expected = String::new();
            while lines.peek().is_some_and(|(_, l)| !l.starts_with("$ ")) {
                expected.push_str(&lines.next().expect("peeked").1);
                expected.push('\n');
            }
            // The last line break only ends the block's text.
            expected.pop();
            steps.push(Step {
                line_no,
                args: words[1..].to_vec(),
                status,
                expected,
            });
        }
    }
    Ok(steps)
}

/// Runs the console blocks of `page`; the failures.
fn check_page(page: &str) -> Vec<String> {
    let steps = match steps(page) {
        Ok(s) => s,
        Err(e) => return vec![e],
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = std::fs::canonicalize(tmp.path()).expect("canonical").join("cli.in");
    std::fs::create_dir(&dir).expect("mkdir");
    for (name, from) in FIXTURES {
        let to = dir.join(name);
        std::fs::create_dir_all(to.parent().expect("a folder")).expect("make its folder");
        std::fs::copy(root().join(from), to).expect("copy a fixture");
    }
    std::fs::write(dir.join("notes.txt"), "{\"not\":\"a session\"}\n").expect("write");
    let home = dir.parent().expect("parent").join("home");
    std::fs::create_dir(&home).expect("mkdir");
    let cwd = dir.to_str().expect("a UTF-8 temp dir");
    let mut failures = Vec::new();
    for step in &steps {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .args(&step.args)
            .current_dir(&dir)
            .env("HOME", &home)
            .env("NO_COLOR", "1")
            // `ls` prints local times and ages: the page shows them in UTC, on 2025-11-25.
            .env("TZ", "UTC")
            .env("PI_SESSION_NOW_MS", "1764086880000")
            .env_remove("COLUMNS")
            .env_remove("PI_CODING_AGENT_DIR")
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run pi-session");
        // As a terminal shows them (each stream is written whole, stdout first here).
        let mut actual = String::from_utf8_lossy(&out.stdout).into_owned();
        actual.push_str(&String::from_utf8_lossy(&out.stderr));
        let here = format!("docs/cli.md:{}: $ pi-session {}", step.line_no, step.args.join(" "));
        if out.status.code() != Some(step.status) {
            failures.push(format!(
                "{here}\n  exit status {:?}, the page says {}\n{actual}",
                out.status.code(),
                step.status
            ));
            continue;
        }
        let expected = step.expected.replace("[CWD]", cwd);
        if !shown(&expected, &actual) {
            failures.push(format!(
                "{here}\n  the page shows:\n{}\n  printed:\n{}",
                indent(&step.expected),
                indent(&actual)
            ));
        }
    }
    failures
}

#[test]
fn docs_cli_md_console_blocks_print_what_they_show() {
    let page = std::fs::read_to_string(root().join("docs/cli.md")).expect("docs/cli.md");
    let n = steps(&page).expect("parses").len();
    assert!(n >= 20, "only {n} commands: is the parsing broken?");
    let failures = check_page(&page);
    assert!(
        failures.is_empty(),
        "docs/cli.md is not true ({} of {n} commands):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The test above fails on drift: a changed line, a changed exit status.
#[test]
fn drift_in_docs_cli_md_fails() {
    let page = std::fs::read_to_string(root().join("docs/cli.md")).expect("docs/cli.md");
    for (from, to) in [
        ("entry nosuchid not found", "entry nosuchid was found"),
        (
            "$ pi-session check missing.jsonl\n? 2\n",
            "$ pi-session check missing.jsonl\n? 1\n",
        ),
        ("\"migration\":null", "\"migration\":\"none\""),
    ] {
        let changed = page.replacen(from, to, 1);
        assert_ne!(changed, page, "{from}");
        let failures = check_page(&changed);
        assert_eq!(failures.len(), 1, "{from}: {failures:#?}");
    }
}

/// `[..]` within a line, `...` for lines, nothing else.
#[test]
fn the_wildcards_match_only_what_they_stand_for() {
    let eq = |actual: &str, expected: &str| shown(expected, actual);
    assert!(eq("a\nb\nc\n", "a\n..."));
    assert!(eq("a\nb\nc\n", "a\n...\nc"));
    assert!(eq("a\nc\n", "a\n...\nc"));
    assert!(!eq("a\nb\nc\nd\n", "a\n...\nc"));
    assert!(eq("x 12 y\n", "x [..] y"));
    assert!(eq("x  y\n", "x [..] y"));
    assert!(eq("{\"a\":1,\"b\":2}\n", "{\"a\":[..],\"b\":2}"));
    assert!(!eq("x 12 z\n", "x [..] y"));
    assert!(!eq("x 1\n2 y\n", "x [..] y"));
    assert!(!eq("a\nb\n", "a"));
    assert!(!eq("a\n", "a\nb"));
    assert!(eq("a\n", "a\n"));
    assert!(!eq("a\n\n", "a\n"));
    assert!(eq("", ""));
    assert!(!eq("a\n", ""));
}

/// Whether `actual` is what `expected` shows: line for line (a last line break on either
/// side aside), `[..]` any text within a line, a line `...` any number of lines.
fn shown(expected: &str, actual: &str) -> bool {
    let lines = |t: &str| -> Vec<String> {
        let t = t.strip_suffix('\n').unwrap_or(t);
        if t.is_empty() {
            Vec::new()
        } else {
            t.split('\n').map(str::to_string).collect()
        }
    };
    let (want, got) = (lines(expected), lines(actual));
    let want: Vec<&str> = want.iter().map(String::as_str).collect();
    let got: Vec<&str> = got.iter().map(String::as_str).collect();
    lines_match(&want, &got)
}

fn lines_match(want: &[&str], got: &[&str]) -> bool {
    match want.split_first() {
        None => got.is_empty(),
        Some((&"...", rest)) => (0..=got.len()).any(|skip| lines_match(rest, &got[skip..])),
        Some((w, rest)) => got
            .split_first()
            .is_some_and(|(g, more)| line_matches(w, g) && lines_match(rest, more)),
    }
}

/// One line: the parts between `[..]` in order, the first at the start, the last at the end.
fn line_matches(want: &str, got: &str) -> bool {
    let parts: Vec<&str> = want.split("[..]").collect();
    if parts.len() == 1 {
        return want == got;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !got.starts_with(first) || got.len() < first.len() + last.len() || !got.ends_with(last) {
        return false;
    }
    let mut rest = &got[first.len()..got.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    true
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    |{l}\n")).collect()
}

#[test]
fn docs_cli_md_other_blocks_are_checked_too() {
    let page = std::fs::read_to_string(root().join("docs/cli.md")).expect("docs/cli.md");
    let home = tempfile::tempdir().expect("tempdir");
    let mut install = 0;
    let mut extensions = 0;
    for b in fenced_blocks(&page) {
        match b.lang.as_str() {
            "console" => {}
            "json" => {
                let text: Vec<&str> = b.lines.iter().map(|(_, l)| l.as_str()).collect();
                let text = text.join("\n");
                serde_json::from_str::<serde_json::Value>(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            }
            "sh" => {
                for (line_no, line) in &b.lines {
                    // `pi-session ARGS > FILE [# comment]`: the command must succeed and
                    // print what would go into FILE.
                    let cmd = line.split(" > ").next().unwrap_or(line);
                    let cmd = cmd.split(" >> ").next().unwrap_or(cmd);
                    // Run as a shell runs it: `~` is the (scratch) home, and anything
                    // written to a relative path lands in the scratch folder, never in the
                    // checkout.
                    let home_text = home.path().display().to_string();
                    let words: Vec<String> = cmd
                        .split_whitespace()
                        .map(|w| match w.strip_prefix('~') {
                            Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{home_text}{rest}"),
                            _ => w.to_string(),
                        })
                        .collect();
                    let words: Vec<&str> = words.iter().map(String::as_str).collect();
                    assert_eq!(
                        words.first(),
                        Some(&"pi-session"),
                        "docs/cli.md:{line_no}: not a pi-session command: {line}"
                    );
                    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
                        .args(&words[1..])
                        .env("HOME", home.path())
                        .current_dir(home.path())
                        .output()
                        .expect("run");
                    assert!(
                        out.status.success(),
                        "docs/cli.md:{line_no}: {line}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    assert!(
                        out.stdout.len() > 100,
                        "docs/cli.md:{line_no}: {line}: prints too little"
                    );
                    install += 1;
                }
            }
            "js" => {
                let text: Vec<&str> = b.lines.iter().map(|(_, l)| l.as_str()).collect();
                run_extension(&text.join("\n"));
                extensions += 1;
            }
            other => panic!("docs/cli.md: a ```{other} block that no test runs"),
        }
    }
    assert!(install >= 5, "the install block: {install} commands");
    assert_eq!(extensions, 1, "the pi extension of `usage statusline`");
}

/// Run a pi extension of the page in Node against a stand-in for pi's `ExtensionAPI`
/// (`on`, `exec` without a shell, `ctx.ui.setStatus`, `ctx.sessionManager`): on
/// `session_start` and `turn_end` it must set the status `usage statusline` prints for
/// the session. Without Node: skipped, a failure under `CI`.
fn run_extension(js: &str) {
    if std::process::Command::new("node").arg("--version").output().is_err() {
        crate::common::absent(Path::new("node"));
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let session = dir.path().join("s.jsonl");
    std::fs::copy(root().join("corpus/valid/branches.jsonl"), &session).expect("copy");
    std::fs::write(dir.path().join("usage-status.mjs"), js).expect("write");
    let harness = r#"
import { spawnSync } from "node:child_process";
const mod = await import(process.argv[2]);
const handlers = {};
const pi = {
  on: (event, fn) => { handlers[event] = fn; },
  exec: async (cmd, args, opts) => {
    const r = spawnSync(cmd === "pi-session" ? process.env.PI_SESSION_BIN : cmd, args, { encoding: "utf8", timeout: opts?.timeout });
    return { stdout: r.stdout, stderr: r.stderr, code: r.status ?? 128, killed: false, truncated: false };
  },
};
mod.default(pi);
const statuses = [];
const ctx = { sessionManager: { getSessionFile: () => process.argv[3] }, ui: { setStatus: (key, text) => statuses.push([key, text]) } };
for (const event of ["session_start", "turn_end"]) await handlers[event]?.({}, ctx);
console.log(JSON.stringify(statuses));
"#;
    std::fs::write(dir.path().join("harness.mjs"), harness).expect("write");
    let env = |c: &mut std::process::Command| {
        c.current_dir(dir.path())
            .env("HOME", dir.path())
            .env("TZ", "UTC")
            .env("PI_SESSION_NOW_MS", "1741946400000")
            .env("PI_CODING_AGENT_SESSION_DIR", dir.path())
            .env("PI_SESSION_BIN", env!("CARGO_BIN_EXE_pi-session"))
            .env_remove("PI_CODING_AGENT_DIR");
    };
    let mut node = std::process::Command::new("node");
    node.arg("harness.mjs")
        .arg(dir.path().join("usage-status.mjs"))
        .arg(&session);
    env(&mut node);
    let out = node.output().expect("node");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut cli = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"));
    cli.args(["usage", "statusline"]).arg(&session);
    env(&mut cli);
    let line = String::from_utf8(cli.output().expect("run").stdout).expect("UTF-8");
    assert!(line.contains("block ("), "an active block at that moment: {line}");
    let want = serde_json::json!([["usage", line.trim()], ["usage", line.trim()]]);
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(got, want);
}

/// A closed pipe (`pi-session context --json big.jsonl | head -c 100`) ends the program
/// quietly, with status 0, as docs/cli.md says.
#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::Read as _;
    let tmp = tempfile::tempdir().expect("tempdir");
    let big = tmp.path().join("big.jsonl");
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(["gen", "session"])
        .arg(&big)
        .args(["--size", "2M", "--shape", "image-heavy"])
        .output()
        .expect("gen");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    for args in [&["context", "--json"][..], &["dump", "--compact"][..]] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .args(args)
            .arg(&big)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut head = [0u8; 100];
        child
            .stdout
            .take()
            .expect("stdout")
            .read_exact(&mut head)
            .expect("read the head");
        // The reading end is closed here, long before the output's end.
        let out = child.wait_with_output().expect("wait");
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
    }
}

//! docs/cli.md is true: every ```` ```console ```` block runs with trycmd, in order, in a
//! scratch folder with the files the page names, each command's output and exit status
//! as shown; the ```` ```sh ```` install block's `pi-session` commands run and print
//! something; every ```` ```json ```` block parses. No other fenced block holds a command.
//!
//! `TRYCMD=overwrite cargo test --test it cli_doc::` writes the outputs the commands print
//! back into docs/cli.md (keeping `[..]` where it can): review the diff.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The page's files, and the corpus files they are copies of.
const FIXTURES: &[(&str, &str)] = &[
    ("s.jsonl", "corpus/valid/branches.jsonl"),
    ("old.jsonl", "corpus/valid/version-1.jsonl"),
    ("skips.jsonl", "corpus/malformed/truncated-line-mid-file.jsonl"),
    ("cycle.jsonl", "corpus/malformed/cycle-two-entries.jsonl"),
];

/// A scratch copy of `page` as `<dir>/cli.md`, beside `cli.in/` (trycmd's working folder
/// for it) with the fixtures, and a HOME.
fn scratch(page: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let inputs = tmp.path().join("cli.in");
    std::fs::create_dir(&inputs).expect("mkdir");
    for (name, from) in FIXTURES {
        std::fs::copy(root().join(from), inputs.join(name)).expect("copy a fixture");
    }
    std::fs::write(inputs.join("notes.txt"), "{\"not\":\"a session\"}\n").expect("write");
    std::fs::create_dir(tmp.path().join("home")).expect("mkdir");
    let md = tmp.path().join("cli.md");
    std::fs::write(&md, page).expect("write the page");
    (tmp, md)
}

fn cases(md: &Path, home: &Path) -> trycmd::TestCases {
    let t = trycmd::TestCases::new();
    t.register_bin("pi-session", Path::new(env!("CARGO_BIN_EXE_pi-session")))
        .env("HOME", home.to_str().expect("utf-8 home"))
        .env("PI_CODING_AGENT_DIR", "")
        .env("PI_CODING_AGENT_SESSION_DIR", "")
        .env("NO_COLOR", "1")
        .case(md);
    t
}

#[test]
fn docs_cli_md_console_blocks_print_what_they_show() {
    let page = std::fs::read_to_string(root().join("docs/cli.md")).expect("docs/cli.md");
    assert!(
        page.matches("\n$ pi-session ").count() >= 20,
        "too few commands: is the page there?"
    );
    let (tmp, md) = scratch(&page);
    cases(&md, &tmp.path().join("home")).run();
    if std::env::var_os("TRYCMD").is_some_and(|v| v == "overwrite") {
        std::fs::copy(&md, root().join("docs/cli.md")).expect("write back docs/cli.md");
    }
}

/// The test above fails on drift: one shown line changed.
#[test]
fn a_changed_line_in_docs_cli_md_fails() {
    let page = std::fs::read_to_string(root().join("docs/cli.md")).expect("docs/cli.md");
    let changed = page.replacen(
        "pi-session: s.jsonl: entry nosuchid not found",
        "pi-session: s.jsonl: entry nosuchid was found",
        1,
    );
    assert_ne!(changed, page);
    let (tmp, md) = scratch(&changed);
    let home = tmp.path().join("home");
    if std::env::var_os("TRYCMD").is_some() {
        return;
    }
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cases(&md, &home).run()));
    assert!(r.is_err(), "a wrong line passed");
}

struct Block {
    lang: String,
    lines: Vec<String>,
}

fn blocks(page: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for line in page.lines() {
        if let Some(rest) = line.strip_prefix("```") {
            match open.take() {
                Some(b) => out.push(b),
                None => {
                    open = Some(Block {
                        lang: rest.trim().to_string(),
                        lines: Vec::new(),
                    })
                }
            }
        } else if let Some(b) = open.as_mut() {
            b.lines.push(line.to_string());
        }
    }
    out
}

#[test]
fn docs_cli_md_other_blocks_are_checked_too() {
    let page = std::fs::read_to_string(root().join("docs/cli.md")).expect("docs/cli.md");
    let home = tempfile::tempdir().expect("tempdir");
    let mut install = 0;
    for b in blocks(&page) {
        match b.lang.as_str() {
            "console" => {}
            "json" => {
                let text = b.lines.join("\n");
                serde_json::from_str::<serde_json::Value>(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            }
            "sh" => {
                for line in &b.lines {
                    // `pi-session ARGS > FILE [# comment]`: the command must succeed and
                    // print what would go into FILE.
                    let cmd = line.split(" > ").next().unwrap_or(line);
                    let cmd = cmd.split(" >> ").next().unwrap_or(cmd);
                    let words: Vec<&str> = cmd.split_whitespace().collect();
                    assert_eq!(words.first(), Some(&"pi-session"), "not a pi-session command: {line}");
                    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
                        .args(&words[1..])
                        .env("HOME", home.path())
                        .output()
                        .expect("run");
                    assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
                    assert!(out.stdout.len() > 100, "{line}: prints too little");
                    install += 1;
                }
            }
            other => panic!("docs/cli.md: a ```{other} block that no test runs"),
        }
    }
    assert!(install >= 5, "the install block: {install} commands");
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

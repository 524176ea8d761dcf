//! The README's commands, run with the built binary so that the README cannot drift.
//!
//! - ```` ```text ```` blocks whose lines start with `$ pi-session ...` (or
//!   `$ echo ... | pi-session ...`): each command runs from the repository root; a trailing
//!   `| tail -N` keeps the last N lines of stdout and a trailing `# comment` is ignored.
//!   The lines shown after a command are its exact stdout, except that the time of
//!   `checked in:` may differ and a line `...` stands for one or more elided lines.
//!   Every command must exit 0; `follow`, which runs until interrupted, is stopped once
//!   its output has been quiet for half a second, and must still be running then.
//! - Commands on `corpus/listing/` run in a copy of that corpus with
//!   `corpus/listing/mtimes.json` applied, as `tests/it/listing.rs` prepares it (git keeps
//!   no mtimes, and pi sorts by them).
//! - A block with a write command (`append`, `label`, ..., `export -o`) runs in a temp dir that is also
//!   `HOME`, on a copy of a corpus session as `s.jsonl` and of a v1 session as
//!   `old-v1.jsonl`; the README's entry id `8cecc1bf` stands for the id `append` printed.
//! - The ```` ```sh ```` blocks of "Install" and "Start here": `cargo run --release -- ARGS`
//!   runs as the binary with ARGS and must list every session file of the agent dir,
//!   newest first; `cargo test --profile ci` is what runs this test, so it is not run
//!   again, but `.ci/run` must run it;
//!   `cargo install --path . --features parquet` must be run by `.ci/run` (after the parquet
//!   tests, on their release build).
//!
//! Every `$ ` line of the README must be one of these commands, and every fenced block in
//! a shell language must be the "Start here" block: nothing the README tells a reader to
//! type escapes the test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The entry id the README's write examples use for the entry `append` printed.
const README_APPENDED_ID: &str = "8cecc1bf";
/// The README's test command (the one running this test; `.ci/run` runs it).
const TEST: &str = "cargo test --profile ci";
/// The README's install command (`.ci/run` runs it).
const INSTALL: &str = "cargo install --path . --features parquet";
/// The commands that write; a block holding one runs in a temp dir.
const WRITE_COMMANDS: &[&str] = &["append", "label", "name", "branch", "fork", "migrate", "recover", "gen"];
/// Files the write examples name, and the corpus files they are copies of.
const WRITE_FIXTURES: &[(&str, &str)] = &[
    ("s.jsonl", "corpus/valid/branches.jsonl"),
    ("old-v1.jsonl", "corpus/valid/version-1.jsonl"),
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn readme_commands_run_and_print_what_it_shows() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let report = check_readme(&readme);
    for s in &report.skipped {
        eprintln!("readme: skipped: {s}");
    }
    assert!(
        report.failures.is_empty(),
        "README.md is not true ({} of {} commands):\n\n{}",
        report.failures.len(),
        report.ran,
        report.failures.join("\n\n")
    );
    assert!(
        report.ran >= 10,
        "only {} README commands ran: is the parsing broken?",
        report.ran
    );
}

/// The test above would fail on drift: one changed output line, or a command that fails.
#[test]
fn drift_in_the_readme_fails_the_test() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines: Vec<&str> = readme.lines().collect();

    // One shown output line changed.
    let blocks = fenced_blocks(&readme);
    let (line_no, _) = blocks
        .iter()
        .filter(|b| b.lang == "text")
        .flat_map(|b| b.lines.iter())
        .skip_while(|(_, l)| !l.starts_with("$ "))
        .find(|(_, l)| !l.starts_with("$ ") && !is_ellipsis(l) && !l.starts_with("checked in:"))
        .expect("the README shows some output");
    let mut changed = lines.clone();
    let edited = format!("{} (drift)", lines[line_no - 1]);
    changed[line_no - 1] = &edited;
    let report = check_readme(&(changed.join("\n") + "\n"));
    assert_eq!(report.failures.len(), 1, "{:#?}", report.failures);
    assert!(report.failures[0].contains("(drift)"), "{}", report.failures[0]);

    // A different time is no drift.
    let (line_no, _) = blocks
        .iter()
        .flat_map(|b| b.lines.iter())
        .find(|(_, l)| l.starts_with("checked in:"))
        .expect("a timing line");
    let mut changed = lines.clone();
    changed[line_no - 1] = "checked in:        9.999 s";
    assert_eq!(
        check_readme(&(changed.join("\n") + "\n")).failures,
        Vec::<String>::new()
    );

    // One command that fails (a usage error exits 2).
    let line_no = lines
        .iter()
        .position(|l| l.starts_with("$ pi-session "))
        .expect("a command")
        + 1;
    let mut changed = lines.clone();
    let edited = lines[line_no - 1].replacen("$ pi-session ", "$ pi-session --no-such-option ", 1);
    changed[line_no - 1] = &edited;
    let report = check_readme(&(changed.join("\n") + "\n"));
    assert_eq!(report.failures.len(), 1, "{:#?}", report.failures);
    assert!(report.failures[0].contains("exit status"), "{}", report.failures[0]);
}

/// `...` stands for one or more lines; the lines around it are a prefix, a suffix and, in
/// between, runs found in order; only the time of `checked in:` is normalised.
#[test]
fn shown_output_matching() {
    let ok = |e: &[&str], a: &[&str]| matches_shown(e, a).is_ok();
    assert!(ok(&["a", "b"], &["a", "b"]));
    assert!(!ok(&["a", "b"], &["a", "b", "c"]));
    assert!(!ok(&["a", "b "], &["a", "b"]));
    assert!(ok(&["a", "  ...", "d"], &["a", "b", "c", "d"]));
    assert!(!ok(&["a", "...", "d"], &["a", "d"]));
    assert!(!ok(&["a", "...", "d"], &["a", "b", "c", "d", "e"]));
    assert!(!ok(&["x", "...", "d"], &["a", "b", "c", "d"]));
    assert!(ok(&["...", "c", "...", "e"], &["a", "b", "c", "d", "e"]));
    assert!(!ok(&["...", "c", "...", "e"], &["a", "b", "c", "e"]));
    assert!(ok(&["a", "..."], &["a", "b"]));
    assert!(ok(&["checked in:   0.000 s"], &["checked in:   12.345 s"]));
    assert!(!ok(&["checked in:   0.000 s"], &["checked in:  0.000 s"]));
    assert!(!ok(&["checked in:   0.000 s"], &["checked in:   0.000 ms"]));
    assert!(!ok(&["tree roots:   1"], &["tree roots:   2"]));
}

#[derive(Default)]
struct Report {
    ran: usize,
    failures: Vec<String>,
    skipped: Vec<String>,
}

/// Runs every command of `readme` (the text of a README.md at the repository root).
fn check_readme(readme: &str) -> Report {
    let mut report = Report::default();
    let work = tempfile::tempdir().expect("tempdir");
    let home = work.path().join("home");
    std::fs::create_dir(&home).expect("mkdir home");
    let mut listing: Option<PathBuf> = None;
    let mut commands_seen = 0;

    for block in fenced_blocks(readme) {
        match block.lang.as_str() {
            "text" => {
                let steps = match steps(&block) {
                    Ok(s) => s,
                    Err(e) => {
                        report.failures.push(e);
                        continue;
                    }
                };
                if steps.is_empty() {
                    continue;
                }
                commands_seen += steps.len();
                // (An export with `-o` writes a file too.)
                let writes = steps.iter().any(|s| {
                    words_of(&s.command).is_some_and(|a| {
                        WRITE_COMMANDS.contains(&a.as_str()) || (a == "export" && s.command.contains(" -o "))
                    })
                });
                if writes {
                    run_write_block(&steps, work.path(), &mut report);
                } else {
                    for step in &steps {
                        run_read_step(step, &home, work.path(), &mut listing, &mut report);
                    }
                }
            }
            "sh" | "bash" | "shell" | "console" => {
                for (line_no, line) in &block.lines {
                    run_start_here_line(*line_no, line, &home, &mut report);
                }
            }
            _ => {}
        }
    }
    let dollar_lines = readme.lines().filter(|l| l.trim_start().starts_with("$ ")).count();
    if dollar_lines != commands_seen {
        report.failures.push(format!(
            "README.md has {dollar_lines} `$ ` lines but {commands_seen} are commands in ```text blocks"
        ));
    }
    report
}

/// The first word after `pi-session` in a command line, if it parses.
fn words_of(command: &str) -> Option<String> {
    parse_command(command, Some(Path::new("/")))
        .ok()?
        .args
        .into_iter()
        .next()
}

/// A fenced block of a Markdown page (the README, docs/cli.md).
pub(crate) struct Block {
    pub(crate) lang: String,
    /// (1-based line number in the page, line)
    pub(crate) lines: Vec<(usize, String)>,
}

pub(crate) fn fenced_blocks(readme: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in readme.lines().enumerate() {
        if let Some(rest) = line.strip_prefix("```") {
            match open.take() {
                Some(b) => blocks.push(b),
                None => {
                    open = Some(Block {
                        lang: rest.trim().to_string(),
                        lines: Vec::new(),
                    })
                }
            }
        } else if let Some(b) = open.as_mut() {
            b.lines.push((i + 1, line.to_string()));
        }
    }
    blocks
}

/// A `$ ` command of a ```text block and the lines shown after it.
struct Step {
    line_no: usize,
    command: String,
    expected: Vec<String>,
}

fn steps(block: &Block) -> Result<Vec<Step>, String> {
    let mut steps: Vec<Step> = Vec::new();
    for (line_no, line) in &block.lines {
        if let Some(cmd) = line.strip_prefix("$ ") {
            steps.push(Step {
                line_no: *line_no,
                command: cmd.to_string(),
                expected: Vec::new(),
            });
        } else if let Some(s) = steps.last_mut() {
            s.expected.push(line.clone());
        } else if block.lines.iter().any(|(_, l)| l.starts_with("$ ")) {
            return Err(format!("README.md:{line_no}: output before the block's first command"));
        }
    }
    Ok(steps)
}

/// A parsed README command: `[echo WORDS |] pi-session ARGS [| tail -N] [# comment]`.
#[derive(Debug)]
struct Cmd {
    stdin: Option<String>,
    args: Vec<String>,
    tail: Option<usize>,
}

#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    Pipe,
}

/// Splits a command line as sh would, for the little shell the README uses: words,
/// '...' and "..." quoting, backslash escapes, `|`, `# comment`, and `~/` (with `home`).
fn tokenize(line: &str, home: Option<&Path>) -> Result<Vec<Tok>, String> {
    let mut toks = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(w) = word.take() {
                    toks.push(Tok::Word(w));
                }
            }
            '|' if word.is_none() => toks.push(Tok::Pipe),
            '#' if word.is_none() => break,
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err(format!("unterminated ' in `{line}`")),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => {
                            w.push(chars.next().expect("peeked"))
                        }
                        Some(c @ ('$' | '`')) => return Err(format!("unsupported `{c}` in \"...\" in `{line}`")),
                        Some(c) => w.push(c),
                        None => return Err(format!("unterminated \" in `{line}`")),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err(format!("trailing \\ in `{line}`")),
            },
            '~' if word.is_none() && matches!(chars.peek(), None | Some('/' | ' ')) => {
                let home = home.ok_or_else(|| format!("`~` without a HOME in `{line}`"))?;
                word = Some(home.to_str().expect("utf-8 home").to_string());
            }
            '|' | ';' | '&' | '<' | '>' | '$' | '`' | '(' | ')' | '*' | '?' | '[' | '{' => {
                return Err(format!("unsupported shell syntax `{c}` in `{line}`"));
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(w) = word {
        toks.push(Tok::Word(w));
    }
    Ok(toks)
}

fn parse_command(line: &str, home: Option<&Path>) -> Result<Cmd, String> {
    let toks = tokenize(line, home)?;
    let mut segments: Vec<Vec<String>> = vec![Vec::new()];
    for t in toks {
        match t {
            Tok::Pipe => segments.push(Vec::new()),
            Tok::Word(w) => segments.last_mut().expect("one segment").push(w),
        }
    }
    let mut segments = segments.into_iter().peekable();
    let mut stdin = None;
    if segments.peek().is_some_and(|s| s.first().is_some_and(|w| w == "echo")) {
        let s = segments.next().expect("peeked");
        if s.get(1).is_some_and(|w| w.starts_with('-')) {
            return Err(format!("unsupported echo option in `{line}`"));
        }
        stdin = Some(s[1..].join(" ") + "\n");
    }
    let args = match segments.next() {
        Some(s) if s.first().is_some_and(|w| w == "pi-session") => s[1..].to_vec(),
        _ => return Err(format!("not a pi-session command: `{line}`")),
    };
    let mut tail = None;
    if let Some(s) = segments.next() {
        match s.as_slice() {
            [t, n] if t == "tail" && n.starts_with('-') => {
                tail = Some(n[1..].parse().map_err(|_| format!("bad tail count in `{line}`"))?)
            }
            _ => return Err(format!("unsupported pipe into `{}` in `{line}`", s.join(" "))),
        }
    }
    if segments.next().is_some() {
        return Err(format!("too many pipes in `{line}`"));
    }
    Ok(Cmd { stdin, args, tail })
}

struct Output {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

fn run(args: &[String], stdin: Option<&str>, cwd: &Path, home: &Path) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pi-session"));
    c.args(args)
        .current_dir(cwd)
        .env("HOME", home)
        // `ls` prints local times and ages: the README shows them in UTC, on 2025-11-25.
        .env("TZ", "UTC")
        .env("PI_SESSION_NOW_MS", "1764086880000")
        .env_remove("COLUMNS")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in [
        "PI_CODING_AGENT_DIR",
        "PI_CODING_AGENT_SESSION_DIR",
        "PIG_CODING_AGENT_DIR",
        "PIG_CODING_AGENT_SESSION_DIR",
    ] {
        c.env_remove(var);
    }
    let mut child = c.spawn().expect("run pi-session");
    if args.first().is_some_and(|a| a == "follow") {
        return followed(child);
    }
    if let Some(input) = stdin {
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
    }
    let out = child.wait_with_output().expect("wait for pi-session");
    Output {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `follow` runs until interrupted: its output is what it printed once it has been quiet
/// for half a second (at most 10 s), then it is stopped, as a reader's Ctrl-C does.
fn followed(mut child: std::process::Child) -> Output {
    use crate::follow::gather;
    use std::sync::{Arc, Mutex};
    let out = gather(child.stdout.take().expect("stdout"));
    let err = gather(child.stderr.take().expect("stderr"));
    let start = std::time::Instant::now();
    let (mut last, mut quiet) = (0, 0);
    while start.elapsed() < std::time::Duration::from_secs(10) && quiet < 5 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let n = out.lock().expect("lock").len();
        quiet = if n > 0 && n == last { quiet + 1 } else { 0 };
        last = n;
    }
    // Still running: it follows until stopped (an exit would be its error).
    let running = child.try_wait().expect("wait").is_none();
    let _ = child.kill();
    let status = child.wait().expect("wait");
    let text = |b: &Arc<Mutex<Vec<u8>>>| String::from_utf8_lossy(&b.lock().expect("lock")).into_owned();
    Output {
        status: if running {
            std::os::unix::process::ExitStatusExt::from_raw(0)
        } else {
            status
        },
        stdout: text(&out),
        stderr: text(&err),
    }
}

fn describe(line_no: usize, command: &str, out: &Output) -> String {
    format!(
        "README.md:{line_no}: $ {command}\n  {}\n  stdout:\n{}  stderr:\n{}",
        out.status,
        indent(&out.stdout),
        indent(&out.stderr)
    )
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    |{l}\n")).collect()
}

/// A read-only command: from the repository root (or the listing corpus copy), output
/// compared with the lines the README shows.
fn run_read_step(step: &Step, home: &Path, work: &Path, listing: &mut Option<PathBuf>, report: &mut Report) {
    let cmd = match parse_command(&step.command, Some(home)) {
        Ok(c) => c,
        Err(e) => {
            report.failures.push(format!("README.md:{}: {e}", step.line_no));
            return;
        }
    };
    let cwd = if cmd.args.iter().any(|a| a.starts_with("corpus/listing/")) {
        listing.get_or_insert_with(|| listing_copy(work)).clone()
    } else {
        root().to_path_buf()
    };
    report.ran += 1;
    let out = run(&cmd.args, cmd.stdin.as_deref(), &cwd, home);
    if !out.status.success() {
        report.failures.push(describe(step.line_no, &step.command, &out));
        return;
    }
    compare_shown(step, &cmd, &out, report);
}

/// The output a step shows against what it printed (after its `| tail`), if it shows any.
fn compare_shown(step: &Step, cmd: &Cmd, out: &Output, report: &mut Report) {
    if step.expected.is_empty() {
        return;
    }
    let mut actual: Vec<&str> = out.stdout.lines().collect();
    if let Some(n) = cmd.tail {
        actual = actual.split_off(actual.len().saturating_sub(n));
    }
    let expected: Vec<&str> = step.expected.iter().map(String::as_str).collect();
    if let Err(why) = matches_shown(&expected, &actual) {
        report.failures.push(format!(
            "README.md:{}: $ {}\n  {why}\n  README shows:\n{}  actual stdout{}:\n{}",
            step.line_no,
            step.command,
            indent(&step.expected.join("\n")),
            if cmd.tail.is_some() { " (after tail)" } else { "" },
            indent(&actual.join("\n"))
        ));
    }
}

fn is_ellipsis(line: &str) -> bool {
    line.trim() == "..."
}

/// The one part of an output line that legitimately varies: the time in `checked in:`.
fn normalize(line: &str) -> String {
    if let Some(rest) = line.strip_prefix("checked in:") {
        let value = rest.trim_start();
        if let Some(num) = value.strip_suffix(" s")
            && let Some((int, frac)) = num.split_once('.')
            && !int.is_empty()
            && int.bytes().all(|b| b.is_ascii_digit())
            && !frac.is_empty()
            && frac.bytes().all(|b| b.is_ascii_digit())
        {
            return format!("checked in:{}<time> s", &rest[..rest.len() - value.len()]);
        }
    }
    line.to_string()
}

/// Whether `actual` is what the README shows: line for line, except that a `...` line
/// stands for one or more lines.
fn matches_shown(expected: &[&str], actual: &[&str]) -> Result<(), String> {
    let actual: Vec<String> = actual.iter().map(|l| normalize(l)).collect();
    let segments: Vec<Vec<String>> = expected
        .split(|l| is_ellipsis(l))
        .map(|seg| seg.iter().map(|l| normalize(l)).collect())
        .collect();
    if segments.len() == 1 {
        if actual != segments[0] {
            let at = actual.iter().zip(&segments[0]).position(|(a, e)| a != e);
            return Err(match at {
                Some(i) => format!(
                    "line {} differs: shown `{}`, printed `{}`",
                    i + 1,
                    segments[0][i],
                    actual[i]
                ),
                None => format!("{} lines shown, {} printed", segments[0].len(), actual.len()),
            });
        }
        return Ok(());
    }
    let last = segments.len() - 1;
    let first = &segments[0];
    if !actual.starts_with(first) {
        return Err("the lines before the first `...` are not how the output starts".into());
    }
    let mut cursor = first.len();
    for (i, seg) in segments.iter().enumerate().skip(1) {
        // A `...` stands for at least one line.
        let from = cursor + 1;
        if i == last {
            if actual.len() < from + seg.len() || !actual.ends_with(seg) {
                return Err("the lines after the last `...` are not how the output ends".into());
            }
        } else {
            let found = (from..=actual.len().saturating_sub(seg.len()))
                .find(|&p| actual[p..p + seg.len()] == seg[..])
                .ok_or_else(|| format!("the lines after `...` number {i} are not in the output in order"))?;
            cursor = found + seg.len();
        }
    }
    Ok(())
}

/// The write examples, in order, in a temp dir that is also HOME.
fn run_write_block(steps: &[Step], work: &Path, report: &mut Report) {
    let dir = work.join(format!("writes-{}", steps[0].line_no));
    std::fs::create_dir(&dir).expect("mkdir");
    for (name, from) in WRITE_FIXTURES {
        std::fs::copy(root().join(from), dir.join(name)).expect("copy a write fixture");
    }
    let mut appended: Option<String> = None;
    for step in steps {
        let fail =
            |report: &mut Report, why: String| report.failures.push(format!("README.md:{}: {why}", step.line_no));
        let mut cmd = match parse_command(&step.command, Some(&dir)) {
            Ok(c) => c,
            Err(e) => {
                fail(report, e);
                continue;
            }
        };
        for a in &mut cmd.args {
            if a.contains(README_APPENDED_ID) {
                match &appended {
                    Some(id) => *a = a.replace(README_APPENDED_ID, id),
                    None => fail(
                        report,
                        format!("{README_APPENDED_ID} is used before an `append` printed an id"),
                    ),
                }
            }
        }
        let sub = cmd.args.first().cloned().unwrap_or_default();
        let sessions = dir.join(".pi/agent/sessions");
        let before_fork = count_jsonl(&sessions);
        let before_header = cmd.args.get(1).and_then(|f| first_line(&dir.join(f)));
        report.ran += 1;
        let out = run(&cmd.args, cmd.stdin.as_deref(), &dir, &dir);
        if !out.status.success() {
            report.failures.push(describe(step.line_no, &step.command, &out));
            continue;
        }
        match sub.as_str() {
            "append" => {
                let id = out.stdout.trim_end_matches('\n');
                if id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
                    appended = Some(id.to_string());
                } else {
                    report.failures.push(format!(
                        "{}\n  `append` should print the new entry's 8-hex id",
                        describe(step.line_no, &step.command, &out)
                    ));
                }
            }
            // `--cwd ~/other`: the copy lands in the (temp) HOME's agent dir.
            "fork" if cmd.args.iter().any(|a| a == "--cwd") && count_jsonl(&sessions) != before_fork + 1 => {
                report.failures.push(format!(
                    "{}\n  no new session under {}",
                    describe(step.line_no, &step.command, &out),
                    sessions.display()
                ));
            }
            // The file named by `-o` is there (a device or a pipe is streamed into).
            "export" => {
                let to = cmd
                    .args
                    .iter()
                    .position(|a| a == "-o")
                    .and_then(|i| cmd.args.get(i + 1));
                if let Some(to) = to.filter(|t| !t.starts_with("/dev/"))
                    && !std::fs::metadata(dir.join(to)).is_ok_and(|m| m.is_file() && m.len() > 0)
                {
                    report.failures.push(format!(
                        "{}\n  no file {to} was written",
                        describe(step.line_no, &step.command, &out)
                    ));
                }
            }
            "migrate" => {
                let after = cmd.args.get(1).and_then(|f| first_line(&dir.join(f)));
                let v3 = |h: &Option<String>| h.as_deref().is_some_and(|h| h.contains("\"version\":3"));
                if v3(&before_header) || !v3(&after) {
                    report.failures.push(format!(
                        "{}\n  the file should go from an older version to version 3: before {before_header:?}, after {after:?}",
                        describe(step.line_no, &step.command, &out),
                    ));
                }
            }
            _ => {}
        }
        // (What `append` prints is a new id each run: checked above.)
        if sub != "append" {
            compare_shown(step, &cmd, &out, report);
        }
    }
}

fn first_line(p: &Path) -> Option<String> {
    let text = std::fs::read_to_string(p).ok()?;
    text.lines().next().map(str::to_string)
}

/// Every `*.jsonl` under `dir`, recursively.
pub(crate) fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            jsonl_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

fn count_jsonl(dir: &Path) -> usize {
    let mut v = Vec::new();
    jsonl_files(dir, &mut v);
    v.len()
}

/// A line of the "Start here" ```sh block.
fn run_start_here_line(line_no: usize, line: &str, home: &Path, report: &mut Report) {
    let line = line.trim();
    if line.is_empty() {
        return;
    }
    // The test command is the one running this test; a second build of the tool would not
    // fit its time, so `.ci/run` runs the install after the tests and runs what it
    // installed. Either must be in `.ci/run` as written.
    if line == TEST || line == INSTALL {
        report.ran += 1;
        let ci = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
        if !ci.lines().any(|l| l.trim_start().starts_with(line)) {
            report
                .failures
                .push(format!("README.md:{line_no}: `{line}` is not run by .ci/run"));
        }
        return;
    }
    let Some(rest) = line.strip_prefix("cargo run --release -- ") else {
        report
            .failures
            .push(format!("README.md:{line_no}: tests/it/readme.rs cannot run `{line}`"));
        return;
    };
    let args: Vec<String> = match tokenize(rest, Some(home)) {
        Ok(toks) if toks.iter().all(|t| matches!(t, Tok::Word(_))) => toks
            .into_iter()
            .map(|t| match t {
                Tok::Word(w) => w,
                Tok::Pipe => unreachable!(),
            })
            .collect(),
        Ok(_) => {
            report.failures.push(format!("README.md:{line_no}: a pipe in `{line}`"));
            return;
        }
        Err(e) => {
            report.failures.push(format!("README.md:{line_no}: {e}"));
            return;
        }
    };
    report.ran += 1;
    let out = run(&args, None, root(), home);
    let command = format!("pi-session {rest}");
    if !out.status.success() {
        report.failures.push(describe(line_no, &command, &out));
        return;
    }
    if args.first().map(String::as_str) != Some("ls") {
        return;
    }
    // `ls --all --agent-dir D`: every session file under D/sessions, newest first: a row
    // starts with the session's short id (the file name's id, 8 characters) and its time.
    let Some(agent) = args
        .iter()
        .position(|a| a == "--agent-dir")
        .and_then(|i| args.get(i + 1))
    else {
        report.failures.push(format!(
            "README.md:{line_no}: `{line}`: the test knows what to expect only with --agent-dir"
        ));
        return;
    };
    let mut files = Vec::new();
    jsonl_files(&root().join(agent).join("sessions"), &mut files);
    let short_id = |p: &PathBuf| {
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let id = stem.rsplit('_').next().unwrap_or_default().to_string();
        id.chars().take(8).collect::<String>()
    };
    let mut want: Vec<String> = files.iter().map(short_id).collect();
    want.sort();
    let rows: Vec<&str> = out.stdout.lines().collect();
    let mut listed: Vec<String> = rows
        .iter()
        .filter_map(|r| r.split_whitespace().next())
        .map(str::to_string)
        .collect();
    listed.sort();
    let dates: Vec<&str> = rows.iter().map(|r| r.get(10..26).unwrap_or(r)).collect();
    let newest_first = dates.windows(2).all(|w| w[0] >= w[1]);
    if want.is_empty() || listed != want || rows.len() != want.len() || !newest_first {
        report.failures.push(format!(
            "{}\n  should list, newest first, every session file of {agent}/sessions:\n{}",
            describe(line_no, &command, &out),
            indent(&want.join("\n"))
        ));
    }
}

/// `corpus/listing/` copied to `<work>/listing/corpus/listing/` with
/// `corpus/listing/mtimes.json` applied (the setup of `tests/it/listing.rs`); returns the
/// directory to run from, where `corpus/listing/...` names the copy.
fn listing_copy(work: &Path) -> PathBuf {
    let base = work.join("listing");
    crate::listing::copy_corpus_into(&base.join("corpus/listing"));
    base
}

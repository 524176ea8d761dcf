//! `pi-session check --json`: every figure it prints agrees with the library, on every
//! corpus file (valid and malformed), including the steps that fail.

use pi_session::{Session, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus_files() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for dir in ["valid", "malformed"] {
        let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(dir);
        for e in std::fs::read_dir(&d).expect("corpus dir") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

fn num(v: &Value<'_>, key: &str) -> f64 {
    match v.get(key) {
        Some(Value::Number(n)) => *n,
        other => panic!("{key}: {other:?}"),
    }
}

#[test]
fn check_json_agrees_with_the_library() {
    let mut checked = 0;
    let mut with_errors = 0;
    for path in corpus_files() {
        // `check` never changes the file: work on a copy all the same.
        let dir = tempfile::tempdir().expect("tempdir");
        let copy = dir.path().join("s.jsonl");
        std::fs::copy(&path, &copy).expect("copy");
        let before = std::fs::read(&copy).expect("read");
        let out = Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .args(["check", "--json"])
            .arg(&copy)
            .output()
            .expect("run pi-session");
        assert_eq!(
            std::fs::read(&copy).expect("read"),
            before,
            "{}: check wrote",
            path.display()
        );
        let line = out.stdout.split(|&b| b == b'\n').next().expect("a line");
        let v = Value::parse(line).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        let opened = Session::open(&copy).ok().filter(|s| !s.is_empty_file());
        let Some(s) = opened else {
            // No session, or an empty file (pi's open would start a new one in it): no
            // session to check (#36: an empty file answered with a new random id).
            assert!(
                matches!(v.get("session"), Some(Value::Bool(false))),
                "{}",
                path.display()
            );
            assert!(!out.status.success(), "{}: not a session, yet success", path.display());
            continue;
        };
        let name = path.display().to_string();
        assert_eq!(num(&v, "entries") as usize, s.entries().len(), "{name}");
        assert_eq!(num(&v, "distinctIds") as usize, s.entry_count(), "{name}");
        assert_eq!(num(&v, "lines") as u64, s.index().lines, "{name}");
        let skipped = match v.get("skipped") {
            Some(Value::Array(a)) => a.len(),
            other => panic!("{name}: skipped {other:?}"),
        };
        assert_eq!(skipped, s.index().skipped.len(), "{name}");
        let errors = v.get("errors").and_then(Value::as_object).expect("errors");
        match s.branch_path(None) {
            Ok(b) => assert_eq!(num(&v, "branchLength") as usize, b.len(), "{name}"),
            Err(_) => assert!(errors.get("branch").is_some(), "{name}: branch error"),
        }
        match s.context(s.leaf()) {
            Ok(c) => assert_eq!(num(&v, "contextMessages") as usize, c.messages.len(), "{name}"),
            Err(_) => assert!(errors.get("context").is_some(), "{name}: context error"),
        }
        match s.tree() {
            Ok(t) => assert_eq!(num(&v, "treeRoots") as usize, t.roots.len(), "{name}"),
            Err(_) => assert!(errors.get("tree").is_some(), "{name}: tree error"),
        }
        if !errors.is_empty() {
            with_errors += 1;
        }
        checked += 1;
    }
    assert!(checked > 100, "only {checked} sessions checked");
    assert!(with_errors > 5, "the corpus has files where steps fail: {with_errors}");
}

/// A missing or unreadable file: one line, each part once (the path, then the OS error),
/// exit 1, for every command that reads a session.
#[test]
fn a_missing_file_is_one_line_saying_each_part_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nonexistent.jsonl");
    let p = missing.display().to_string();
    for args in [
        vec!["check", &p],
        vec!["dump", &p],
        vec!["tree", &p],
        vec!["context", &p],
        vec!["migrate", &p],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .args(&args)
            .output()
            .expect("runs");
        // An I/O error: exit 2 (docs/cli.md).
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err,
            format!("pi-session: cannot open {p}: No such file or directory\n"),
            "{args:?}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let not_a_session = dir.path().join("notes.jsonl");
    std::fs::write(&not_a_session, "{\"hello\":1}\n").expect("write");
    let n = not_a_session.display().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(["tree", &n])
        .output()
        .expect("runs");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("pi-session: {n}: not a pi session: the first JSON line is not a session header\n")
    );
    assert_eq!(out.status.code(), Some(1));
}

/// Each fact of an error once: no part between `: ` twice, one OS error, one line.
fn assert_each_fact_once(err: &str, what: &str) {
    assert!(
        err.ends_with('\n') && err.lines().count() == 1,
        "{what}: one line: {err:?}"
    );
    let parts: Vec<&str> = err.trim_end().split(": ").collect();
    for (i, p) in parts.iter().enumerate() {
        assert!(!parts[..i].contains(p), "{what}: {p:?} twice in {err:?}");
    }
    assert!(err.matches("(os error").count() <= 1, "{what}: {err:?}");
}

/// The commands that open FILE, with the prefix each puts before the file's error.
const OPENING: [(&[&str], &str); 9] = [
    (&["check"], "cannot open "),
    (&["dump"], "cannot open "),
    (&["tree"], "cannot open "),
    (&["context"], "cannot open "),
    (&["migrate"], "cannot open "),
    (&["label", "x", "y"], "cannot open "),
    (&["name", "n"], "cannot open for writing "),
    (&["branch", "x"], "cannot open "),
    (&["fork", "--cwd", "/tmp"], "cannot fork "),
];

fn run_on(args: &[&str], file: &Path, as_nobody: bool) -> std::process::Output {
    let mut cmd = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_pi-session"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_pi-session"))
    };
    cmd.arg(args[0]).arg(file).args(&args[1..]);
    cmd.stdin(std::process::Stdio::null()).output().expect("runs")
}

/// A directory given as the file: the OS error once, after the path, for every command
/// that opens a session.
#[test]
fn a_directory_given_as_the_file_is_said_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().display().to_string();
    for (args, prefix) in OPENING {
        let out = run_on(args, dir.path(), false);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err, format!("pi-session: {prefix}{p}: Is a directory\n"), "{args:?}");
        assert_each_fact_once(&err, args[0]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// Whether this process reads files it has no permission for (root, CAP_DAC_OVERRIDE).
fn privileged() -> bool {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("probe");
    std::fs::write(&f, "x").expect("write");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    std::fs::read(&f).is_ok()
}

/// Permission denied on the file (and on a journal in a read-only folder): each fact once.
fn permission_errors_are_said_once(as_nobody: bool) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let file = dir.path().join("locked.jsonl");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/valid/all-entry-types.jsonl"),
        &file,
    )
    .expect("copy");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    let p = file.display().to_string();
    for (args, prefix) in OPENING {
        let out = run_on(args, &file, as_nobody);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err, format!("pi-session: {prefix}{p}: Permission denied\n"), "{args:?}");
        assert_each_fact_once(&err, args[0]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    // A session anyone may write in a folder nobody may: an append that needs the journal
    // either succeeds or says what failed once.
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).expect("mkdir");
    let s = ro.join("s.jsonl");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/valid/all-entry-types.jsonl"),
        &s,
    )
    .expect("copy");
    std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let big = format!(
        "{{\"role\":\"user\",\"content\":\"{}\",\"timestamp\":1}}",
        "x".repeat(9000)
    );
    let mut cmd = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_pi-session"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_pi-session"))
    };
    let mut child = cmd
        .arg("append")
        .arg(&s)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), big.as_bytes()).expect("stdin");
    let out = child.wait_with_output().expect("runs");
    if !out.status.success() {
        assert_each_fact_once(&String::from_utf8_lossy(&out.stderr), "append in a read-only folder");
    }
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn permission_denied_is_said_once() {
    if privileged() {
        eprintln!("skipped: this process reads files without permission (root); see the #[ignore]d twin");
        return;
    }
    permission_errors_are_said_once(false);
}

/// [`permission_denied_is_said_once`] where the suite runs as root: the commands run as
/// `nobody` through `setpriv`.
#[test]
#[ignore = "runs setpriv to drop root; `cargo test -- --ignored` as root"]
fn permission_denied_is_said_once_as_nobody() {
    permission_errors_are_said_once(privileged());
}

/// One rule for every reader (#36): an empty file has no session header (pi's open would
/// start a new session in it; the readers answered with a new random id and the current
/// folder on every run, `dump` otherwise), and a file that is no session says why.
#[test]
fn every_reader_refuses_a_file_without_a_header_and_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, b"").expect("write");
    let malformed = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/malformed");
    let cases = [
        (empty.clone(), "an empty file, no session header"),
        (malformed.join("bom-before-header.jsonl"), "byte-order mark"),
        (
            malformed.join("header-numeric-id.jsonl"),
            "the session header's id is not a string",
        ),
        (malformed.join("only-blank-lines.jsonl"), "no line of it is JSON"),
        (
            malformed.join("header-type-not-session.jsonl"),
            "the first JSON line is not a session header",
        ),
    ];
    for (file, why) in &cases {
        for cmd in [
            &["show", "--no-pager"][..],
            &["export"],
            &["check"],
            &["context"],
            &["tree"],
            &["dump"],
        ] {
            let out = Command::new(env!("CARGO_BIN_EXE_pi-session"))
                .args(cmd)
                .arg(file)
                .output()
                .expect("run pi-session");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{cmd:?} {}: {err}", file.display());
            assert_eq!(err.lines().count(), 1, "{cmd:?} {}: {err}", file.display());
            assert!(
                err.contains("not a pi session: ") && err.contains(why),
                "{cmd:?} {}: {err}",
                file.display()
            );
            if cmd[0] != "dump" {
                assert!(
                    out.stdout.is_empty(),
                    "{cmd:?}: {}",
                    String::from_utf8_lossy(&out.stdout)
                );
            }
        }
    }
}

/// `context`'s table keeps its text column aligned whatever the line numbers' widths, and
/// shows a bash execution's command (#36: the column shifted, the bash row was blank).
#[test]
fn context_rows_align_and_show_a_bash_command() {
    let out = Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .arg("context")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/valid/all-entry-types.jsonl"))
        .output()
        .expect("run pi-session");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert!(rows.len() > 5, "{text}");
    let starts: Vec<usize> = rows
        .iter()
        .map(|r| {
            let after = r.find(" line ").expect("a line column") + 6;
            let rest = r[after..].trim_start_matches(|c: char| c.is_ascii_digit());
            r.len() - rest.trim_start_matches(' ').len()
        })
        .collect();
    assert!(starts.windows(2).all(|w| w[0] == w[1]), "{text}");
    assert!(
        rows.iter()
            .any(|r| r.contains("bashExecution") && r.ends_with("$ cargo check")),
        "{text}"
    );
}

/// A missing file is worded one way by every command that takes one (#36: "X: No such
/// file…" beside "cannot open X: …"), without Rust's "(os error N)".
#[test]
fn a_missing_file_is_worded_the_same_by_every_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.jsonl");
    let m = missing.to_str().expect("UTF-8");
    let want = format!("pi-session: cannot open {m}: No such file or directory\n");
    for args in [
        vec!["show", m],
        vec!["tree", m],
        vec!["export", m],
        vec!["check", m],
        vec!["context", m],
        vec!["dump", m],
        vec!["usage", "--no-cache", m],
        vec!["search", "--no-cache", "x", m],
        vec!["label", m, "abcd", "x"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_pi-session"))
            .args(&args)
            .output()
            .expect("run pi-session");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), want, "{args:?}");
    }
}

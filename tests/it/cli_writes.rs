//! The write commands are safe to try: a failing invocation of each leaves the file as it
//! was (bytes, size and mtime), a v1 file included, which pi's open would rewrite; and
//! `branch` writes the header pi's `createBranchedSession` writes (an absolute
//! `parentSession`), checked against pi 1.6.0's own output in `corpus/golden/branch/`
//! (`node corpus/bless_branch.mjs`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pi-session"));
    for var in ["PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR"] {
        c.env_remove(var);
    }
    c
}

fn run(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut c = bin();
    c.current_dir(dir)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("run pi-session");
    if let Some(input) = stdin {
        use std::io::Write as _;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
    }
    child.wait_with_output().expect("wait")
}

/// A file's bytes, size and mtime.
#[derive(Debug, PartialEq)]
struct Snapshot {
    bytes: Vec<u8>,
    len: u64,
    mtime: SystemTime,
}

fn snapshot(f: &Path) -> Snapshot {
    let m = std::fs::metadata(f).expect("metadata");
    Snapshot {
        bytes: std::fs::read(f).expect("read"),
        len: m.len(),
        mtime: m.modified().expect("mtime"),
    }
}

/// A copy of a corpus file as `dir/name`, with an mtime in the past (so that a write in
/// the same second would show).
fn fixture(dir: &Path, name: &str, corpus: &str) -> PathBuf {
    let f = dir.join(name);
    std::fs::copy(root().join(corpus), &f).expect("copy");
    set_old_mtime(&f);
    f
}

fn set_old_mtime(f: &Path) {
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    std::fs::File::options()
        .write(true)
        .open(f)
        .expect("open")
        .set_modified(t)
        .expect("set mtime");
}

const V1: &str = "corpus/valid/version-1.jsonl";
const V3: &str = "corpus/valid/branches.jsonl";
const NOT_A_SESSION: &str = "corpus/malformed/header-type-not-session.jsonl";

/// Runs `args` (with `FILE` replaced by the file's name) on a fresh copy of `corpus` and
/// asserts that it fails with `code` and leaves the file byte-identical; returns stderr.
fn fails_untouched(corpus: &str, args: &[&str], stdin: Option<&str>, code: i32) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = fixture(dir.path(), "s.jsonl", corpus);
    let before = snapshot(&f);
    let args: Vec<&str> = args.iter().map(|a| if *a == "FILE" { "s.jsonl" } else { a }).collect();
    let out = run(dir.path(), &args, stdin);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?} on {corpus}: {err}");
    assert!(
        out.stdout.is_empty(),
        "{args:?}: stdout {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(snapshot(&f), before, "{args:?} on {corpus} changed the file");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("s.jsonl")], "{args:?}: files left");
    if !err.starts_with("error: ") {
        // (clap's usage errors are its own, several lines)
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
    err
}

#[test]
fn a_failing_append_leaves_the_file_as_it_was() {
    for corpus in [V1, V3] {
        for (msg, why) in [
            ("{}", "no `role`"),
            (r#"{"role":"wizard"}"#, "unknown role"),
            (r#"{"role":"user","content":{"text":"hi"}}"#, "`content`"),
            (r#"{"role":"assistant","content":"hi"}"#, "`content`"),
            ("[1]", "a JSON object"),
            ("not json", "not JSON"),
        ] {
            let err = fails_untouched(corpus, &["append", "FILE"], Some(msg), 2);
            assert!(err.contains(why), "{msg}: {err}");
            let err = fails_untouched(corpus, &["append", "FILE", msg], None, 2);
            assert!(err.contains(why), "{msg}: {err}");
        }
    }
    let msg = r#"{"role":"user","content":"hi"}"#;
    let err = fails_untouched(V3, &["append", "FILE", msg, "--parent", "nosuchid"], None, 1);
    assert_eq!(err, "pi-session: s.jsonl: entry nosuchid not found\n");
    // A v1 file (which the write would migrate first) is left unmigrated.
    let err = fails_untouched(V1, &["append", "FILE", msg, "--parent", "nosuchid"], None, 1);
    assert_eq!(err, "pi-session: s.jsonl: entry nosuchid not found\n");
    fails_untouched(NOT_A_SESSION, &["append", "FILE", msg], None, 1);
}

#[test]
fn append_takes_what_pi_writes_and_raw_anything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = fixture(dir.path(), "s.jsonl", V3);
    let before = std::fs::read_to_string(&f).expect("read");
    let out = run(
        dir.path(),
        &["append", "s.jsonl", r#"{"role":"user","content":"hi"}"#],
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let id = String::from_utf8(out.stdout).expect("utf-8");
    let id = id.trim_end();
    let after = std::fs::read_to_string(&f).expect("read");
    let line = after.strip_prefix(&before).expect("appended").trim_end();
    assert!(
        line.contains(&format!(r#""id":"{id}","parentId":"702d6f32""#)),
        "{line}"
    );
    assert!(
        line.contains(r#""message":{"role":"user","content":"hi","timestamp":"#),
        "{line}"
    );
    // --parent: a child of an earlier entry.
    let out = run(
        dir.path(),
        &[
            "append",
            "s.jsonl",
            "--parent",
            "56c43613",
            r#"{"role":"user","content":"again"}"#,
        ],
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&f).expect("read");
    assert!(text.lines().last().expect("line").contains(r#""parentId":"56c43613""#));
    // --raw: as it is, no timestamp added.
    let out = run(
        dir.path(),
        &["append", "s.jsonl", "--raw", r#"{"role":"wizard"}"#],
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&f).expect("read");
    assert!(
        text.lines()
            .last()
            .expect("line")
            .ends_with(r#""message":{"role":"wizard"}}"#)
    );
}

#[test]
fn a_failing_label_leaves_the_file_as_it_was() {
    let err = fails_untouched(V3, &["label", "FILE", "nosuchid", "x"], None, 1);
    assert_eq!(err, "pi-session: s.jsonl: entry nosuchid not found\n");
    // The review's case: a v1 file, which pi's open rewrites with new ids. A label for
    // an id that names nothing leaves it as it was (not migrated).
    let dir = tempfile::tempdir().expect("tempdir");
    let f = fixture(dir.path(), "v1.jsonl", V1);
    let before = snapshot(&f);
    let out = run(dir.path(), &["label", "v1.jsonl", "0badc0de", "important"], None);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(snapshot(&f), before);
    fails_untouched(NOT_A_SESSION, &["label", "FILE", "a", "x"], None, 1);
    fails_untouched(V3, &["label", "FILE"], None, 2);
}

/// A v1 file's ids are the same in every read-only command and every run, and a write
/// that migrates the file stores those ids: an id taken from `tree` labels that entry.
#[test]
fn v1_ids_shown_are_the_ids_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = fixture(dir.path(), "v1.jsonl", V1);
    let tree = |d: &Path| String::from_utf8(run(d, &["tree", "v1.jsonl"], None).stdout).expect("utf-8");
    let first = tree(dir.path());
    assert_eq!(tree(dir.path()), first, "ids differ between runs");
    let ids: Vec<String> = first
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .find(|w| w.len() == 8 && w.bytes().all(|c| c.is_ascii_hexdigit()))
        })
        .map(str::to_owned)
        .collect();
    assert!(ids.len() >= 2, "{first}");
    let context = run(dir.path(), &["context", "v1.jsonl"], None);
    let context = String::from_utf8_lossy(&context.stdout);
    assert!(context.contains(ids.last().expect("an id").as_str()), "{context}");
    // The label migrates the file (pi's open would) with the ids shown above.
    let out = run(dir.path(), &["label", "v1.jsonl", &ids[0][..5], "important"], None);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let s = pi_session::Session::open(&f).expect("open");
    assert_eq!(s.migration(), pi_session::Migration::None);
    for id in &ids {
        assert!(s.find(id).is_some(), "{id} not in the migrated file");
    }
    let label = s.label(ids[0].as_str()).expect("label").map(|v| v.stringify());
    assert_eq!(label.as_deref(), Some("\"important\""));
}

/// An entry named by a short id (a unique prefix of four characters or more) is the entry
/// whose id it begins; one that begins several ids is refused, the file untouched.
#[test]
fn writes_take_short_ids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = fixture(dir.path(), "s.jsonl", "corpus/show/hostile.jsonl");
    let out = run(dir.path(), &["label", "s.jsonl", "a0000004", "checked"], None);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let s = pi_session::Session::open(&f).expect("open");
    let label = s.label("a0000004").expect("label").map(|v| v.stringify());
    assert_eq!(label.as_deref(), Some("\"checked\""));
    let err = fails_untouched("corpus/show/hostile.jsonl", &["label", "FILE", "a00000", "x"], None, 2);
    assert!(err.contains("ambiguous") && err.contains("a0000008"), "{err}");
    fails_untouched("corpus/show/hostile.jsonl", &["branch", "FILE", "a000000"], None, 2);
    // The label entry just written has a random id: six characters of it name it.
    let ids = pi_session::Session::open(&f).expect("open");
    let last = ids.record(*ids.entries().last().expect("entries")).id.to_key();
    let short = &last.as_str().expect("a string id")[..6];
    let out = run(dir.path(), &["label", "s.jsonl", short, "newest"], None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{short}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A file without its final line break: pi's open (the first step of a write) appends
/// one, so the arguments are checked before.
#[test]
fn a_failing_write_on_a_file_without_its_final_newline_leaves_it_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("s.jsonl");
    let text = std::fs::read_to_string(root().join(V3)).expect("read");
    std::fs::write(&f, text.trim_end()).expect("write");
    set_old_mtime(&f);
    let before = snapshot(&f);
    for args in [
        &["label", "s.jsonl", "nosuchid", "x"][..],
        &["branch", "s.jsonl", "nosuchid"][..],
        &[
            "append",
            "s.jsonl",
            "--parent",
            "nosuchid",
            r#"{"role":"user","content":"hi"}"#,
        ][..],
        &["append", "s.jsonl", "{}"][..],
    ] {
        let out = run(dir.path(), args, None);
        assert!(!out.status.success(), "{args:?}");
        assert_eq!(snapshot(&f), before, "{args:?}");
    }
    // A write that succeeds adds the break first, as pi does.
    let out = run(dir.path(), &["label", "s.jsonl", "56c43613", "x"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let after = std::fs::read_to_string(&f).expect("read");
    assert!(after.starts_with(&format!("{}\n{{", text.trim_end())), "{after}");
}

#[test]
fn a_failing_name_leaves_the_file_as_it_was() {
    fails_untouched(NOT_A_SESSION, &["name", "FILE", "x"], None, 1);
    fails_untouched(V1, &["name", "FILE"], None, 2);
}

#[test]
fn a_failing_branch_leaves_the_file_as_it_was() {
    let err = fails_untouched(V3, &["branch", "FILE", "nosuchid"], None, 1);
    assert_eq!(err, "pi-session: s.jsonl: entry nosuchid not found\n");
    fails_untouched(V1, &["branch", "FILE", "whatever"], None, 1);
    fails_untouched(NOT_A_SESSION, &["branch", "FILE", "a"], None, 1);
    // A path without a user or assistant message: pi writes no file for it, so the
    // command prints no path (the review's `branch big.jsonl 7409d7ae`).
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("quiet.jsonl");
    std::fs::write(
        &f,
        concat!(
            r#"{"type":"session","version":3,"id":"q","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
            "\n",
            r#"{"type":"thinking_level_change","id":"aaaa0001","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","thinkingLevel":"high"}"#,
            "\n"
        ),
    )
    .expect("write");
    set_old_mtime(&f);
    let before = snapshot(&f);
    let out = run(dir.path(), &["branch", "quiet.jsonl", "aaaa0001"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to write"));
    assert_eq!(snapshot(&f), before);
    assert_eq!(std::fs::read_dir(dir.path()).expect("ls").count(), 1);
}

#[test]
fn a_failing_migrate_fork_or_recover_leaves_the_file_as_it_was() {
    fails_untouched(NOT_A_SESSION, &["migrate", "FILE"], None, 1);
    fails_untouched(
        NOT_A_SESSION,
        &["fork", "FILE", "--cwd", "/elsewhere", "--session-dir", "."],
        None,
        1,
    );
}

/// With the append lock held by another process, every write command gives up after
/// `--wait` and leaves the (v1) file as it was.
#[test]
fn every_write_command_gives_up_on_a_held_lock_without_a_change() {
    let msg = r#"{"role":"user","content":"hi"}"#;
    for (corpus, args) in [
        (V1, vec!["append", "FILE", msg]),
        (V1, vec!["name", "FILE", "x"]),
        (V1, vec!["migrate", "FILE"]),
        (V3, vec!["append", "FILE", msg]),
        (V3, vec!["label", "FILE", "56c43613", "x"]),
        (V3, vec!["branch", "FILE", "56c43613"]),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = fixture(dir.path(), "s.jsonl", corpus);
        let holder = std::fs::File::open(&f).expect("open");
        holder.lock().expect("lock");
        let before = snapshot(&f);
        // (`--wait` belongs to the commands that write: after the command's name.)
        let mut full: Vec<&str> = args.iter().map(|a| if *a == "FILE" { "s.jsonl" } else { a }).collect();
        full.extend(["--wait", "0.2"]);
        let out = run(dir.path(), &full, None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("append lock"), "{args:?}: {err}");
        assert_eq!(snapshot(&f), before, "{args:?}");
    }
}

/// `recover` fails on a journal name holding something pi-session never writes, and leaves
/// the session as it was (with the lock held it has nothing to do: it says so, exit 0).
#[cfg(unix)]
#[test]
fn a_failing_recover_leaves_the_file_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = fixture(dir.path(), "s.jsonl", V1);
    std::os::unix::fs::symlink("/dev/zero", pi_session::journal_path(&f)).expect("symlink");
    let before = snapshot(&f);
    for cmd in ["recover", "migrate", "name"] {
        let out = run(
            dir.path(),
            &[cmd, "s.jsonl", "x"][..if cmd == "name" { 3 } else { 2 }],
            None,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert!(err.contains("not an append journal pi-session wrote"), "{cmd}: {err}");
        assert_eq!(snapshot(&f), before, "{cmd}");
    }
    let holder = std::fs::File::open(&f).expect("open");
    holder.lock().expect("lock");
    std::fs::remove_file(pi_session::journal_path(&f)).expect("rm");
    let out = run(dir.path(), &["recover", "s.jsonl", "--wait", "0.2"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(snapshot(&f), before);
}

/// `{"dir","source","opened","leaf","path","text"}` as corpus/bless_branch.mjs wrote it.
struct Golden {
    dir: String,
    source: String,
    opened: String,
    leaf: String,
    path: String,
    text: String,
}

fn golden(name: &str) -> Golden {
    let text = std::fs::read_to_string(root().join("corpus/golden/branch").join(name)).expect("golden");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let s = |k: &str| v[k].as_str().expect(k).to_string();
    Golden {
        dir: s("dir"),
        source: s("source"),
        opened: s("opened"),
        leaf: s("leaf"),
        path: s("path"),
        text: s("text"),
    }
}

/// A branched file's text with what is drawn at random or depends on the machine named
/// instead: the folder, the new session id and time, and each id not in `source`.
fn normalize(text: &str, path: &str, dir: &str, source: &str) -> (String, String) {
    let header: serde_json::Value = serde_json::from_str(text.lines().next().expect("header")).expect("header json");
    let id = header["id"].as_str().expect("id").to_string();
    let ts = header["timestamp"].as_str().expect("timestamp").to_string();
    let file_ts = ts.replace([':', '.'], "-");
    let mut out = text.replace(dir, "<dir>").replace(&id, "<id>").replace(&ts, "<time>");
    let mut n = 0;
    for line in text.lines().skip(1) {
        let e: serde_json::Value = serde_json::from_str(line).expect("entry json");
        if let Some(eid) = e["id"].as_str()
            && !source.contains(&format!("\"id\":\"{eid}\""))
        {
            n += 1;
            out = out.replace(&format!("\"{eid}\""), &format!("\"<new {n}>\""));
        }
    }
    let path = path
        .replace(dir, "<dir>")
        .replace(&id, "<id>")
        .replace(&file_ts, "<time>");
    (out, path)
}

#[test]
fn branch_writes_the_header_and_entries_pi_writes() {
    let mut names: Vec<String> = std::fs::read_dir(root().join("corpus/golden/branch"))
        .expect("corpus/golden/branch")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 4, "{names:?}");
    for name in names {
        let g = golden(&name);
        let source = std::fs::read_to_string(root().join(&g.source)).expect("source");
        let (want, want_path) = normalize(&g.text, &g.path, &g.dir, &source);
        assert!(want.contains("\"parentSession\":\"<dir>/s.jsonl\""), "{name}: {want}");
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = std::fs::canonicalize(tmp.path()).expect("canonical");
        std::fs::create_dir(dir.join("sub")).expect("mkdir");
        std::fs::copy(root().join(&g.source), dir.join("s.jsonl")).expect("copy");
        let out = run(&dir, &["branch", &g.opened, &g.leaf], None);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let printed = String::from_utf8(out.stdout).expect("utf-8");
        let printed = printed.trim_end();
        let text = std::fs::read_to_string(printed).expect("the printed file");
        let dir_text = dir.to_str().expect("utf-8 dir");
        let (got, got_path) = normalize(&text, printed, dir_text, &source);
        assert_eq!(got_path, want_path, "{name}: the printed path");
        assert_eq!(got, want, "{name}: the new file");
    }
}

/// The normalisation cannot hide a relative parent: the review's case fails it.
#[test]
fn a_relative_parent_session_would_fail_the_golden_test() {
    let g = golden("branches-relative.json");
    let source = std::fs::read_to_string(root().join(&g.source)).expect("source");
    let relative = g.text.replace(&format!("{}/s.jsonl", g.dir), "s.jsonl");
    let (want, _) = normalize(&g.text, &g.path, &g.dir, &source);
    let (got, _) = normalize(&relative, &g.path, &g.dir, &source);
    assert_ne!(got, want);
}

/// Two `append` loops on one file at once: each message goes on the current branch, as a
/// child of the file's leaf when the lock was taken (review bug 6, #35: the parent was read
/// before the lock, and 1 message in 120 ended off the branch).
#[test]
fn concurrent_appends_all_land_on_the_current_branch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("s.jsonl");
    std::fs::copy(root().join("corpus/valid/branches.jsonl"), &f).expect("copy");
    let before = pi_session::Session::open(&f).expect("open").entries_len();
    let file = f.to_str().expect("utf-8").to_string();
    let writers: Vec<_> = (0..3)
        .map(|k| {
            let file = file.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let m = format!(r#"{{"role":"user","content":"writer {k} message {i}"}}"#);
                    let o = bin().args(["append", &file, &m]).output().expect("run");
                    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    let s = pi_session::Session::open(&f).expect("open");
    assert_eq!(s.entries_len(), before + 75);
    let branch = s.branch_path(None).expect("branch");
    let on_branch: std::collections::HashSet<usize> = branch.iter().map(|p| p.0 as usize).collect();
    let off: Vec<usize> = (before..before + 75).filter(|i| !on_branch.contains(i)).collect();
    assert!(off.is_empty(), "appended entries off the current branch: {off:?}");
}

//! Writes survive `kill -9` (the file is the old one or the new one, never a damaged one,
//! once the next writer has run recovery), and an open session picks up what another
//! process appends.

use pi_session::{Entropy, Recovery, Session, Writer};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pi-session")
}

fn corpus(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(name)
}

/// Every line ends with `\n` and parses; the file opens as a session pi would not change.
fn intact(path: &Path) {
    let bytes = std::fs::read(path).expect("read");
    assert!(bytes.ends_with(b"\n"), "{}: torn last line", path.display());
    let s = Session::open(path).expect("still a session");
    assert!(
        s.skipped()
            .iter()
            .all(|k| k.len == 0 || k.reason == pi_session::SkipReason::Blank),
        "{}: damaged line",
        path.display()
    );
}

/// A message whose JSON is `kib` KiB of text.
fn big_message(dir: &Path, kib: usize) -> std::path::PathBuf {
    let msg = dir.join(format!("msg{kib}.json"));
    std::fs::write(
        &msg,
        format!("{{\"role\":\"user\",\"content\":\"{}\"}}", "x".repeat(kib << 10)),
    )
    .expect("msg");
    msg
}

/// A number from the environment (to stress the crash tests harder by hand).
fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// After a kill: the file must be `before` followed by whole appended message lines and at
/// most one torn line that a journal covers; recovery, run as the next writer runs it
/// (`Writer::open`), must then leave exactly `before` plus the whole lines. Returns
/// (whole lines added, whether the last append was torn).
fn settle_after_kill(path: &Path, before: &[u8], round: u64) -> (usize, bool) {
    let raw = std::fs::read(path).expect("read");
    assert!(
        raw.starts_with(before),
        "round {round}: bytes before the appends changed"
    );
    let added = &raw[before.len()..];
    let whole = memchr::memrchr(b'\n', added).map_or(0, |i| i + 1);
    let mut lines = 0;
    for line in added[..whole].split_inclusive(|&b| b == b'\n') {
        let v: serde_json::Value = serde_json::from_slice(line).expect("an appended line parses");
        assert_eq!(
            v["type"], "message",
            "round {round}: appended line is not a message entry"
        );
        lines += 1;
    }
    let tail = &added[whole..];
    let pending = pi_session::pending_recovery(path).expect("journal readable");
    if tail.is_empty() {
        assert!(
            matches!(pending, None | Some(Recovery::NotWritten) | Some(Recovery::Completed)),
            "round {round}: whole lines but the journal says {pending:?}"
        );
    } else {
        // The only damage a kill may leave: a torn last line, covered by its journal.
        assert_eq!(
            pending,
            Some(Recovery::Truncated {
                len: (before.len() + whole) as u64,
                removed: tail.len() as u64
            }),
            "round {round}: a torn tail of {} bytes not covered by a journal",
            tail.len()
        );
    }
    let w = Writer::open(path, None, Entropy::default()).expect("the next writer opens it");
    assert_eq!(
        w.recovery(),
        &pending.clone().unwrap_or(Recovery::Clean),
        "round {round}"
    );
    drop(w);
    assert_eq!(
        std::fs::read(path).expect("read"),
        &raw[..before.len() + whole],
        "round {round}: recovery did not restore the old bytes plus whole lines"
    );
    assert!(
        !pi_session::journal_path(path).exists(),
        "round {round}: journal left behind"
    );
    intact(path);
    (lines, !tail.is_empty())
}

/// Kill a child's whole process group with SIGKILL, reap it, and wait until every process
/// of the group is gone (they all hold the child's stdout pipe until they exit).
fn kill_group(mut child: std::process::Child) {
    let _ = Command::new("kill")
        .args(["-9", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.wait();
    let mut rest = Vec::new();
    use std::io::Read;
    let _ = child.stdout.take().expect("stdout").read_to_end(&mut rest);
}

/// kill -9 at varying moments of a loop of 256 KiB appends (`CRASH_ROUNDS`,
/// `CRASH_SLEEP_BASE_MS`, `CRASH_SLEEP_STEP_MS` stress it harder).
#[test]
fn kill_dash_nine_during_appends_leaves_whole_lines() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.jsonl");
    std::fs::copy(corpus("valid/all-entry-types.jsonl"), &path).expect("copy");
    let msg = big_message(dir.path(), 256);
    let (rounds, base, step) = (
        knob("CRASH_ROUNDS", 12),
        knob("CRASH_SLEEP_BASE_MS", 40),
        knob("CRASH_SLEEP_STEP_MS", 23),
    );
    let (mut lines, mut torn) = (0, 0);
    for round in 0..rounds {
        let before = std::fs::read(&path).expect("read");
        // A shell appending 256 KiB messages in a loop, in its own process group, killed
        // (with the append it is running) at a varying moment.
        let script = format!(
            "for i in $(seq 1 1000); do {} append {} < {} || exit 1; done",
            bin(),
            path.display(),
            msg.display()
        );
        let child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(Duration::from_millis(base + step * round));
        kill_group(child);
        let (l, t) = settle_after_kill(&path, &before, round);
        lines += l;
        torn += usize::from(t);
    }
    eprintln!("{rounds} kills: {lines} whole appends kept, {torn} torn appends undone");
    assert!(lines > 0, "no append went through");
}

/// kill -9 exactly while an append is writing: the file is watched until its size moves
/// (a 4 MiB line is being copied in) or the journal appears, then the appender is killed.
#[test]
fn kill_dash_nine_in_the_middle_of_an_append_write_is_undone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.jsonl");
    std::fs::copy(corpus("valid/all-entry-types.jsonl"), &path).expect("copy");
    let msg = big_message(dir.path(), 4096);
    let journal = pi_session::journal_path(&path);
    let rounds = knob("CRASH_ROUNDS", 12);
    let mut outcomes = [0usize; 3];
    for round in 0..rounds {
        let before = std::fs::read(&path).expect("read");
        let len = before.len() as u64;
        let child = Command::new(bin())
            .arg("append")
            .arg(&path)
            .stdin(std::fs::File::open(&msg).expect("msg"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        // Every third round kills as soon as the journal exists (before the write), the
        // others as soon as the write has begun.
        // A writer that finished before the poll saw its journal (it lives for well under a
        // millisecond) is not waited for: the round counts as completed.
        let mut child = child;
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            let hit = if round % 3 == 2 {
                journal.exists()
            } else {
                std::fs::metadata(&path).is_ok_and(|m| m.len() > len)
            };
            if hit || child.try_wait().is_ok_and(|status| status.is_some()) {
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let (lines, torn) = settle_after_kill(&path, &before, round);
        outcomes[if torn {
            0
        } else if lines > 0 {
            1
        } else {
            2
        }] += 1;
    }
    eprintln!(
        "{rounds} kills mid-append: {} torn and undone, {} completed, {} before the write",
        outcomes[0], outcomes[1], outcomes[2]
    );
    assert!(
        outcomes[0] > 0,
        "no kill landed inside a write: the test did not test anything"
    );
}

#[test]
fn kill_dash_nine_during_migration_leaves_old_or_new() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = corpus("valid/v2-hook-message.jsonl");
    let original = std::fs::read(&src).expect("read");
    // Make it big so the rewrite takes a while.
    let mut big = original.clone();
    let line = b"{\"type\":\"message\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{\"role\":\"hookMessage\",\"content\":\"pad pad pad pad pad pad pad pad pad pad pad pad pad pad pad pad\"}}\n";
    while big.len() < 40 << 20 {
        big.extend_from_slice(line);
    }
    let path = dir.path().join("old.jsonl");
    for round in 0..6 {
        std::fs::write(&path, &big).expect("write");
        let mut child = Command::new(bin())
            .arg("migrate")
            .arg(&path)
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(Duration::from_millis(20 + 40 * round));
        let _ = child.kill();
        let _ = child.wait();
        // Whatever the kill left, no other name in the folder is a session to pi or to
        // pi-session (a temporary file never ends in `.jsonl`).
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("ls")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "old.jsonl")
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".jsonl")), "round {round}: {names:?}");
        let now = std::fs::read(&path).expect("read");
        if now != big {
            // The new file: version 3, pi opens it without changing it.
            let s = Session::open(&path).expect("migrated file opens");
            assert_eq!(
                s.file_change(),
                pi_session::FileChange::None,
                "round {round}: half-migrated file"
            );
        }
    }
    // The next rewrite in the folder removes what killed rewrites left.
    std::fs::write(&path, &original).expect("write");
    pi_session::migrate_file(&path).expect("migrate");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("ls")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, ["old.jsonl"]);
}

#[test]
fn an_open_session_sees_another_process_append() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.jsonl");
    std::fs::copy(corpus("valid/all-entry-types.jsonl"), &path).expect("copy");
    let mut s = Session::open(&path).expect("opens");
    let before = s.entries().len();
    let leaf = s.leaf().clone();
    // Another process appends two messages.
    for text in ["one", "two"] {
        let mut child = Command::new(bin())
            .arg("append")
            .arg(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn");
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(format!("{{\"role\":\"user\",\"content\":\"{text}\"}}").as_bytes())
            .expect("write");
        assert!(child.wait().expect("wait").success());
    }
    let r = s.refresh().expect("refresh");
    assert_eq!(r.entries, 2);
    assert_eq!(s.entries().len(), before + 2);
    assert_ne!(s.leaf(), &leaf);
    {
        let ctx = s.context(s.leaf()).expect("context");
        assert_eq!(
            ctx.messages
                .last()
                .map(|m| s.message(m).expect("decodes"))
                .as_ref()
                .and_then(|m| m.get("content"))
                .and_then(|c| c.as_str()),
            Some("two")
        );
    }
    // A partial line is pending, not an error; it is indexed once its newline arrives.
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).expect("open");
    use std::io::Write;
    let line =
        br#"{"type":"custom","id":"partial1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","customType":"x"}"#;
    f.write_all(&line[..40]).expect("write");
    let r = s.refresh().expect("refresh");
    assert_eq!((r.entries, r.pending_bytes), (0, 40));
    f.write_all(&line[40..]).expect("write");
    f.write_all(b"\n").expect("write");
    let r = s.refresh().expect("refresh");
    assert_eq!((r.entries, r.pending_bytes), (1, 0));
    assert!(s.find("partial1").is_some());
    // Our own appends go through the same path.
    let mut w = Writer::open(&path, None, Entropy::default()).expect("writer");
    let t = Instant::now();
    for i in 0..50 {
        w.append_custom_entry("bench", Some(pi_session::Value::Number(i as f64)))
            .expect("append");
    }
    assert!(t.elapsed() < Duration::from_secs(30));
    assert_eq!(w.session().entries().len(), before + 3 + 50);
}

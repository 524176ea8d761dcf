//! Writes that cannot be turned against their user (issue #12 item 3; review BUG 3, 4, 7,
//! WEAK 9, 10, 12, 13): whatever sits at the journal's name, a symlinked or foreign-owned
//! session, a stale temporary file, a held lock, `ulimit -f`, a read-only folder, many
//! labels. Unix only (symlinks, FIFOs, flock, rlimits).
#![cfg(unix)]

use crate::labelled::labelled;
use pi_session::{Entropy, JournalUse, Recovery, Session, Value, WriteOptions, Writer};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pi-session")
}

const HEADER: &str =
    "{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n";

fn entry(id: &str, parent: Option<&str>, text: &str) -> String {
    let p = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{p},\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\",\"timestamp\":1}}}}\n"
    )
}

/// A session of a header and two messages in `dir`.
fn session(dir: &Path, name: &str) -> PathBuf {
    let f = dir.join(name);
    std::fs::write(
        &f,
        format!("{HEADER}{}{}", entry("a1", None, "one"), entry("a2", Some("a1"), "two")),
    )
    .expect("write");
    f
}

/// A message big enough that its append is journaled (it crosses a 4 KiB block).
fn big_message() -> Value<'static> {
    Value::parse(format!("{{\"role\":\"user\",\"content\":\"{}\"}}", "x".repeat(5000)).as_bytes())
        .expect("json")
        .into_owned()
}

fn small_message() -> Value<'static> {
    Value::parse(br#"{"role":"user","content":"hi"}"#)
        .expect("json")
        .into_owned()
}

fn journal(f: &Path) -> PathBuf {
    pi_session::journal_path(f)
}

/// An error with its causes, as the CLI prints it.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut c = e.source();
    while let Some(x) = c {
        out += ": ";
        out += &x.to_string();
        c = x.source();
    }
    out
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Run the CLI with `stdin`, killed after `limit`; (exit code or None if killed, stderr).
fn run_bounded(cmd: &mut Command, stdin: &[u8], limit: Duration) -> (Option<i32>, String, Duration) {
    use std::io::Write as _;
    let t0 = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let _ = child.stdin.take().expect("stdin").write_all(stdin);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut err = String::new();
            use std::io::Read as _;
            let _ = child.stderr.take().expect("stderr").read_to_string(&mut err);
            return (status.code(), err, t0.elapsed());
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return (None, String::new(), t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn big_message_json() -> Vec<u8> {
    format!("{{\"role\":\"user\",\"content\":\"{}\"}}", "x".repeat(5000)).into_bytes()
}

#[test]
fn a_journal_symlink_to_a_sentinel_is_never_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = session(dir.path(), "s.jsonl");
    let before = std::fs::read(&f).expect("read");
    let sentinel = dir.path().join("precious");
    std::fs::write(&sentinel, b"precious data\n").expect("sentinel");
    std::os::unix::fs::symlink("precious", journal(&f)).expect("symlink");
    // Found at open: refused, named, left alone.
    let e = Writer::open(&f, None, Entropy::default()).expect_err("a symlinked journal is refused");
    assert_eq!(e.path(), Some(journal(&f).as_path()), "{e}");
    let text = chain(&e);
    assert!(text.contains(".s.jsonl.append: a symlink (to \"precious\")"), "{text}");
    assert_eq!(
        pi_session::pending_recovery(&f).expect("pending"),
        Some(Recovery::Foreign {
            found: "a symlink (to \"precious\")".into()
        })
    );
    assert!(pi_session::recover(&f).is_err());
    assert_eq!(std::fs::read(&sentinel).expect("read"), b"precious data\n");
    assert!(
        std::fs::symlink_metadata(journal(&f))
            .expect("lstat")
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(&f).expect("read"), before);
    // Planted between the writer's open and its append: the append is refused too.
    std::fs::remove_file(journal(&f)).expect("rm");
    let mut w = Writer::open(&f, None, Entropy::default()).expect("open");
    std::os::unix::fs::symlink("precious", journal(&f)).expect("symlink");
    assert!(w.append_message(big_message()).is_err());
    assert_eq!(std::fs::read(&sentinel).expect("read"), b"precious data\n");
    assert_eq!(std::fs::read(&f).expect("read"), before);
}

/// The review's race: a loop re-creating the link while appends run. Short and bounded;
/// with the fix the sentinel can never change, whoever wins each round.
#[test]
fn a_journal_symlink_planted_in_a_loop_never_reaches_the_sentinel() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = session(dir.path(), "s.jsonl");
    let sentinel = dir.path().join("precious");
    std::fs::write(&sentinel, b"precious data\n").expect("sentinel");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let planter = {
        let stop = stop.clone();
        let j = journal(&f);
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::os::unix::fs::symlink("precious", &j);
                std::thread::yield_now();
            }
        })
    };
    let t0 = Instant::now();
    let mut tries = 0;
    while t0.elapsed() < Duration::from_millis(1500) && tries < 200 {
        tries += 1;
        if let Ok(mut w) = Writer::open(&f, None, Entropy::default()) {
            let _ = w.append_message(big_message());
        }
        let _ = std::fs::remove_file(journal(&f));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    planter.join().expect("planter");
    assert_eq!(
        std::fs::read(&sentinel).expect("read"),
        b"precious data\n",
        "after {tries} tries"
    );
}

#[test]
fn a_dangling_journal_symlink_creates_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = session(dir.path(), "s.jsonl");
    let target = dir.path().join("created-by-the-append");
    std::os::unix::fs::symlink(&target, journal(&f)).expect("symlink");
    let (code, err, _) = run_bounded(
        Command::new(bin()).arg("append").arg(&f),
        &big_message_json(),
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(".s.jsonl.append: a symlink"), "{err}");
    assert!(!target.exists(), "the append created the link's target");
}

#[test]
fn a_journal_name_on_dev_zero_or_a_fifo_fails_at_once_with_what_was_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = session(dir.path(), "s.jsonl");
    let before = std::fs::read(&f).expect("read");
    std::os::unix::fs::symlink("/dev/zero", journal(&f)).expect("symlink");
    // Under a 1 GB address-space limit, so that a regression fails instead of eating memory.
    let sh = |cmd: &str| {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(format!("ulimit -v 1000000; exec \"$0\" {cmd} \"$1\""))
            .arg(bin())
            .arg(&f);
        c
    };
    for cmd in ["append", "recover"] {
        let (code, err, took) = run_bounded(&mut sh(cmd), &big_message_json(), Duration::from_secs(20));
        assert_eq!(code, Some(2), "{cmd}: {err}");
        assert!(err.contains("a symlink (to \"/dev/zero\")"), "{cmd}: {err}");
        assert!(took < Duration::from_secs(5), "{cmd} took {took:?}");
    }
    let (code, _, took) = run_bounded(&mut sh("check"), b"", Duration::from_secs(20));
    assert_eq!(code, Some(0));
    assert!(took < Duration::from_secs(5));
    std::fs::remove_file(journal(&f)).expect("rm");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        journal(&f),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    let (code, err, took) = run_bounded(
        Command::new(bin()).arg("append").arg(&f),
        &big_message_json(),
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(".s.jsonl.append: a FIFO"), "{err}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let t0 = Instant::now();
    assert_eq!(
        pi_session::pending_recovery(&f).expect("pending"),
        Some(Recovery::Foreign { found: "a FIFO".into() })
    );
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(std::fs::read(&f).expect("read"), before);
}

#[test]
fn a_journal_bigger_than_any_journal_is_not_read_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = session(dir.path(), "s.jsonl");
    // A sparse 1 GiB file at the journal's name: read up to MAX_JOURNAL + 1 bytes only.
    let j = std::fs::File::create(journal(&f)).expect("create");
    j.set_len(1 << 30).expect("sparse");
    drop(j);
    let t0 = Instant::now();
    let r = pi_session::recover(&f).expect("recover");
    assert!(
        matches!(&r, Recovery::Stale { reason } if reason.contains(&format!("({} bytes)", pi_session::MAX_JOURNAL + 1))),
        "{r:?}"
    );
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert!(
        !journal(&f).exists(),
        "a file of the caller's that is no journal is removed"
    );
}

#[test]
fn migrating_a_symlinked_session_migrates_its_target_and_keeps_the_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = dir.path().join("real");
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&real).expect("dir");
    std::fs::create_dir_all(&sessions).expect("dir");
    let target = real.join("t.jsonl");
    let v2 = format!(
        "{}{}",
        HEADER.replace("\"version\":3", "\"version\":2"),
        entry("a1", None, "one")
    );
    std::fs::write(&target, &v2).expect("write");
    let link = sessions.join("t.jsonl");
    std::os::unix::fs::symlink("../real/t.jsonl", &link).expect("symlink");
    assert_eq!(
        pi_session::migrate_file(&link).expect("migrate"),
        pi_session::FileChange::Rewritten
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("lstat")
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_link(&link).expect("readlink"),
        Path::new("../real/t.jsonl")
    );
    let text = std::fs::read_to_string(&target).expect("read");
    assert!(text.starts_with("{\"type\":\"session\",\"version\":3"), "{text}");
    assert_eq!(
        Session::open(&link).expect("open").file_change(),
        pi_session::FileChange::None
    );
    // Only the session in each folder: no temporary file stayed.
    for d in [&real, &sessions] {
        let names: Vec<_> = std::fs::read_dir(d)
            .expect("ls")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["t.jsonl"], "{}", d.display());
    }
}

#[test]
fn migrate_keeps_mode_and_owner() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("u.jsonl");
    std::fs::write(&f, HEADER.replace("\"version\":3", "\"version\":2")).expect("write");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    // Owner: only root can hand a file to someone else; otherwise the mode alone.
    let owner = if is_root() {
        rustix::fs::chown(
            &f,
            Some(rustix::fs::Uid::from_raw(65534)),
            Some(rustix::fs::Gid::from_raw(65534)),
        )
        .expect("chown");
        (65534, 65534)
    } else {
        let m = std::fs::metadata(&f).expect("stat");
        (m.uid(), m.gid())
    };
    pi_session::migrate_file(&f).expect("migrate");
    let m = std::fs::metadata(&f).expect("stat");
    assert!(std::fs::read_to_string(&f).expect("read").contains("\"version\":3"));
    assert_eq!(m.mode() & 0o7777, 0o640);
    assert_eq!((m.uid(), m.gid()), owner);
}

#[test]
fn stale_temporary_files_are_removed_by_the_next_rewrite_and_never_listed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = dir.path().join("agent");
    let folder = agent.join("sessions").join("--p--");
    std::fs::create_dir_all(&folder).expect("dir");
    let f = session(&folder, "2025-01-01T00-00-00-000Z_s1.jsonl");
    // An old-style leftover (a copy of the session, named *.jsonl) of a dead writer, and a
    // new-style one.
    let old_style = folder.join(".pi-session-tmp-2147483632-0123abcd-2025-01-01T00-00-00-000Z_s1.jsonl");
    let new_style = folder.join(".pi-session-tmp-2147483632-0123abcd-2025-01-01T00-00-00-000Z_s1.jsonl.tmp");
    std::fs::copy(&f, &old_style).expect("copy");
    std::fs::copy(&f, &new_style).expect("copy");
    let ls = Command::new(bin())
        .args(["ls", "--all", "--json", "--agent-dir"])
        .arg(&agent)
        .output()
        .expect("ls");
    let text = String::from_utf8_lossy(&ls.stdout);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(!text.contains("pi-session-tmp"), "{text}");
    let found = pi_session::listing::find_by_id_in(
        &pi_session::Env::from_process(pi_session::Flavor::Pi).expect("env"),
        &folder,
        "s1",
        None,
    );
    assert_eq!(found.as_deref(), Some(f.as_path()));
    // The next rewrite in the folder sweeps both.
    std::fs::write(&f, HEADER.replace("\"version\":3", "\"version\":2")).expect("v2");
    pi_session::migrate_file(&f).expect("migrate");
    assert!(!old_style.exists() && !new_style.exists());
    let names: Vec<_> = std::fs::read_dir(&folder)
        .expect("ls")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

/// `ulimit -f` just above the file: the append fails cleanly (EFBIG), the file unchanged,
/// and `recover` agrees there is nothing to undo. Before, SIGXFSZ killed the append between
/// two `write()`s and left a torn, unjournaled line that `recover` called clean.
#[test]
fn an_append_past_ulimit_f_leaves_the_file_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("s.jsonl");
    let mut text = HEADER.to_string();
    let mut parent = None::<String>;
    while text.len() < 14_600 {
        let id = format!("m{:05}", text.len());
        text += &entry(&id, parent.as_deref(), &"z".repeat(100));
        parent = Some(id);
    }
    std::fs::write(&f, &text).expect("write");
    let limit_blocks = text.len() / 1024 + 1; // just above the file
    let msg = format!("{{\"role\":\"user\",\"content\":\"{}\"}}", "y".repeat(1000));
    for journaled in [false, true] {
        let msg = if journaled {
            big_message_json()
        } else {
            msg.clone().into_bytes()
        };
        let (code, err, _) = run_bounded(
            Command::new("sh")
                .arg("-c")
                .arg(format!("ulimit -f {limit_blocks}; exec \"$0\" append \"$1\""))
                .arg(bin())
                .arg(&f),
            &msg,
            Duration::from_secs(20),
        );
        assert_eq!(code, Some(2), "killed by a signal? {err}");
        assert!(err.contains("file size limit"), "{err}");
        assert_eq!(
            std::fs::read(&f).expect("read"),
            text.as_bytes(),
            "journaled {journaled}"
        );
        assert!(!journal(&f).exists());
        assert_eq!(pi_session::recover(&f).expect("recover"), Recovery::Clean);
    }
}

/// An unterminated tail no journal covers is reported, not called clean.
#[test]
fn recover_reports_an_unterminated_tail_it_did_not_journal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = session(dir.path(), "s.jsonl");
    let mut bytes = std::fs::read(&f).expect("read");
    bytes.extend_from_slice(b"{\"type\":\"message\",\"id\":\"torn");
    std::fs::write(&f, &bytes).expect("write");
    assert_eq!(
        pi_session::recover(&f).expect("recover"),
        Recovery::Unterminated { tail: 28 }
    );
    assert_eq!(std::fs::read(&f).expect("read"), bytes, "left alone");
    let out = Command::new(bin())
        .args(["recover", "--json"])
        .arg(&f)
        .output()
        .expect("recover");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"action\":\"unterminated\""), "{text}");
}

/// The newline that completes a torn line someone else left goes in with the next line;
/// the line is never glued onto the torn bytes.
#[test]
fn an_append_after_a_foreign_torn_line_starts_a_line_of_its_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = session(dir.path(), "s.jsonl");
    let mut w = Writer::open(&f, None, Entropy::default()).expect("open");
    let before = std::fs::read(&f).expect("read");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&f)
        .and_then(|mut o| std::io::Write::write_all(&mut o, b"{\"torn"))
        .expect("torn");
    let id = w.append_message(small_message()).expect("append");
    let after = std::fs::read(&f).expect("read");
    let added = &after[before.len()..];
    assert!(
        added.starts_with(b"{\"torn\n{\"type\":\"message\""),
        "{}",
        String::from_utf8_lossy(added)
    );
    assert!(!after.windows(2).any(|w| w == b"\n\n"), "no blank line");
    let s = Session::open(&f).expect("open");
    assert!(s.find(&id).is_some());
}

#[test]
fn a_held_lock_makes_a_writer_fail_within_its_timeout_naming_the_lock() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static TOLD: AtomicUsize = AtomicUsize::new(0);
    fn told(_: &Path) {
        TOLD.fetch_add(1, Ordering::Relaxed);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let f = session(dir.path(), "s.jsonl");
    let before = std::fs::read(&f).expect("read");
    let mut w = Writer::open(&f, None, Entropy::default()).expect("open");
    let timeout = Duration::from_millis(300);
    w.set_write_options(
        WriteOptions::default()
            .with_lock_timeout(timeout)
            .with_lock_notice(told),
    );
    // A reader's descriptor is enough to hold flock.
    let holder = std::fs::File::open(&f).expect("open");
    holder.lock().expect("lock");
    let t0 = Instant::now();
    let e = w.append_message(small_message()).expect_err("the lock is held");
    let took = t0.elapsed();
    assert!(took >= timeout && took < timeout + Duration::from_secs(2), "{took:?}");
    assert_eq!(TOLD.load(Ordering::Relaxed), 1, "told once");
    assert_eq!(e.path(), Some(f.as_path()));
    assert!(chain(&e).contains("append lock"), "{}", chain(&e));
    assert_eq!(std::fs::read(&f).expect("read"), before);
    // Released: the same writer goes on.
    drop(holder);
    w.append_message(small_message()).expect("append");
    // The CLI: --wait bounds it, one line says it waits.
    let holder = std::fs::File::open(&f).expect("open");
    holder.lock().expect("lock");
    let (code, err, took) = run_bounded(
        Command::new(bin()).args(["append", "--wait", "0.5"]).arg(&f),
        br#"{"role":"user","content":"hi"}"#,
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(err.matches("waiting for the append lock on").count(), 1, "{err}");
    assert!(err.contains("append lock (flock"), "{err}");
}

#[test]
fn concurrent_pending_recovery_calls_are_never_busy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = session(dir.path(), "s.jsonl");
    let len = std::fs::metadata(&f).expect("stat").len();
    std::fs::write(
        journal(&f),
        format!("pi-session append journal v1 old={len} len=9000 head=2 tail=2\n{{\"9}}"),
    )
    .expect("journal");
    let busy = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..2000 {
                    if pi_session::pending_recovery(&f).expect("pending") == Some(Recovery::Busy) {
                        busy.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(busy.into_inner(), 0);
    // A writer holding the lock is still seen.
    let holder = std::fs::File::open(&f).expect("open");
    holder.lock().expect("lock");
    assert_eq!(pi_session::pending_recovery(&f).expect("pending"), Some(Recovery::Busy));
}

/// The review's WEAK 12 file: branching at the last label of a session where every message
/// carries a label keeps every message and label, in order, with their labels. (Its cost,
/// which was quadratic in the labels, is measured by `cargo bench --features bench --bench
/// write`, not here: a timed test is no speed check.)
#[test]
fn branch_at_the_last_of_many_labels_keeps_them_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let n = 2_000;
    let f = labelled(dir.path(), n);
    let out = dir.path().join("out");
    let mut w = Writer::open(&f, Some(&out), Entropy::seeded(1, 1_767_225_600_000)).expect("open");
    let p = w
        .create_branched_session(&format!("l{:07}", n - 1))
        .expect("branch")
        .expect("file");
    let s = Session::open(&p).expect("open");
    assert_eq!(s.entries().len(), 2 * n);
    let branch = s.branch_path(None).expect("branch");
    assert_eq!(branch.len(), 2 * n, "one line of descent");
    for i in [0, n / 2, n - 1] {
        let m = format!("m{i:07}");
        assert_eq!(
            s.label(&m).expect("label").map(|v| v.stringify()).as_deref(),
            Some(format!("\"L{i}\"").as_str()),
            "{m}"
        );
    }
}

/// WEAK 9 as a non-root user: a folder the user cannot write to, a session they can. Small
/// and large appends alike succeed (as pi's would); the large one says it had no journal.
#[test]
fn a_read_only_folder_takes_every_append_unjournaled_and_says_so() {
    if is_root() {
        eprintln!("skipped: root writes into read-only folders (see the #[ignore]d setpriv version)");
        return;
    }
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().join("ro");
    std::fs::create_dir(&d).expect("dir");
    let f = session(&d, "s.jsonl");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let result = std::panic::catch_unwind(|| {
        let mut w = Writer::open(&f, None, Entropy::default()).expect("open");
        w.append_message(small_message()).expect("small append");
        assert_eq!(w.last_append_journal(), &JournalUse::NotNeeded);
        w.append_message(big_message()).expect("large append");
        assert!(
            matches!(w.last_append_journal(), JournalUse::Unavailable { folder, .. } if folder == &d),
            "{:?}",
            w.last_append_journal()
        );
        assert_eq!(Session::open(&f).expect("open").entries().len(), 5);
    });
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).expect("chmod back");
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
}

/// The same through the CLI as `nobody` (needs root and setpriv, hence ignored): one
/// warning line naming the folder and the reason, exit 0 for both sizes.
#[test]
#[ignore]
fn a_read_only_folder_as_nobody_through_the_cli() {
    assert!(is_root(), "run as root: it switches to nobody with setpriv");
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().join("ro");
    std::fs::create_dir(&d).expect("dir");
    let f = session(&d, "s.jsonl");
    rustix::fs::chown(&f, Some(rustix::fs::Uid::from_raw(65534)), None).expect("chown");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    for (msg, warned) in [
        (&br#"{"role":"user","content":"hi"}"#[..], false),
        (&big_message_json()[..], true),
    ] {
        let (code, err, _) = run_bounded(
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", bin(), "append"])
                .arg(&f),
            msg,
            Duration::from_secs(20),
        );
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(
            err.contains(&format!("cannot create the append journal in {}", d.display())),
            warned,
            "{err}"
        );
        assert_eq!(err.lines().count(), usize::from(warned), "{err}");
    }
}

/// A pi-like appender (no lock) whose multi-page write is seen half done: the append waits
/// for the file to stop growing instead of ending the half line with a newline of its own
/// (review weakness 7, #35: blank lines, and lines glued to the other writer's).
#[test]
fn an_append_waits_for_another_writers_line_to_end() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let f = session(dir.path(), "s.jsonl");
    let mut w = Writer::open(&f, None, Entropy::default()).expect("open");
    let other = entry("p1", Some("a2"), &"y".repeat(9000));
    let (half, rest) = other.split_at(4000);
    let (tx, rx) = std::sync::mpsc::channel();
    let t = {
        let (f, half, rest) = (f.clone(), half.to_string(), rest.to_string());
        std::thread::spawn(move || {
            let mut h = std::fs::OpenOptions::new().append(true).open(&f).expect("open");
            h.write_all(half.as_bytes()).expect("half");
            tx.send(()).expect("signal");
            std::thread::sleep(Duration::from_millis(3));
            h.write_all(rest.as_bytes()).expect("rest");
        })
    };
    rx.recv().expect("half written");
    w.append_message(small_message()).expect("append");
    t.join().expect("writer");
    let text = std::fs::read_to_string(&f).expect("read");
    for (i, line) in text.lines().enumerate() {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "line {} is no JSON (a blank or glued line): {:.80}",
            i + 1,
            line
        );
    }
    assert_eq!(text.lines().count(), 5, "header, two messages, the other's line, ours");
}

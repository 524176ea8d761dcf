//! `pi-session follow`: another process appends to a session (whole lines, lines torn in
//! two writes), rewrites it, deletes it and makes it again, or starts a newer session of
//! the project; the followed output ends, each time, with what `show` (text) or
//! `dump --entries` (`--raw`) prints of the file as it is then.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The lines of a real-looking session to append, header first (PiG's conversation).
fn lines() -> Vec<String> {
    std::fs::read_to_string(root().join("corpus/pig/blocks.jsonl"))
        .expect("fixture")
        .lines()
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A running `follow`, its stdout and stderr gathered as they come.
struct Followed {
    child: Child,
    out: Arc<Mutex<Vec<u8>>>,
    err: Arc<Mutex<Vec<u8>>>,
}

/// What `r` gives, gathered on a thread as it comes (a child's stdout or stderr).
pub(crate) fn gather(mut r: impl Read + Send + 'static) -> Arc<Mutex<Vec<u8>>> {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let b = buf.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        while let Ok(n) = r.read(&mut chunk) {
            if n == 0 {
                break;
            }
            b.lock().expect("lock").extend_from_slice(&chunk[..n]);
        }
    });
    buf
}

impl Followed {
    fn start(args: &[&str], envs: &[(&str, &Path)]) -> Followed {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pi-session"));
        cmd.arg("follow")
            .args(args)
            .env("TZ", "UTC")
            .env("NO_COLOR", "1")
            .env_remove("PI_CODING_AGENT_DIR")
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn follow");
        let out = gather(child.stdout.take().expect("stdout"));
        let err = gather(child.stderr.take().expect("stderr"));
        Followed { child, out, err }
    }

    fn out(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().expect("lock")).into_owned()
    }

    fn err(&self) -> String {
        String::from_utf8_lossy(&self.err.lock().expect("lock")).into_owned()
    }

    /// Wait (at most 20 s) until `ok(stdout, stderr)`; the two when it failed to come.
    fn until(&self, what: &str, ok: impl Fn(&str, &str) -> bool) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if ok(&self.out(), &self.err()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "{what}: not seen in 20 s\n--- stdout\n{}\n--- stderr\n{}",
            self.out(),
            self.err()
        );
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn append(path: &Path, bytes: &str) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open for append");
    f.write_all(bytes.as_bytes()).expect("append");
}

fn cli(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .args(args)
        .env("TZ", "UTC")
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn appends_torn_lines_rewrites_and_a_file_made_again_end_as_the_file_reads() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("s.jsonl");
    let f = file.to_str().expect("UTF-8");
    let l = lines();
    std::fs::write(&file, l[..3].concat()).expect("write");
    let raw = Followed::start(&[f, "--raw"], &[]);
    let text = Followed::start(&[f], &[]);
    let entries = || cli(&["dump", "--entries", f]);
    let show = || cli(&["show", f]);
    let both_caught_up = |what: &str| {
        let (e, s) = (entries(), show());
        raw.until(what, |out, _| out.ends_with(&e));
        text.until(what, |out, _| out.ends_with(&s));
    };
    both_caught_up("the session as it was");

    // Whole lines, one write each.
    append(&file, &l[3]);
    append(&file, &l[4]);
    both_caught_up("whole lines");

    // A line torn in two writes: nothing of it until its end comes.
    let (a, b) = l[5].split_at(l[5].len() / 2);
    append(&file, a);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !raw.out().contains("t0000005"),
        "a torn line was printed:\n{}",
        raw.out()
    );
    append(&file, b);
    both_caught_up("a torn line completed");
    // A whole entry whose `\n` is not written yet is not complete either.
    append(&file, l[6].trim_end());
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !raw.out().contains("b0000006"),
        "a line without its end was printed:\n{}",
        raw.out()
    );
    append(&file, "\n");
    both_caught_up("a line given its end");

    // A rewrite in place (shorter: the last entries cut, as `recover` cuts a torn append).
    std::fs::write(&file, l[..5].concat()).expect("rewrite");
    raw.until("the rewrite is said", |_, err| {
        err.contains("was rewritten: read again from its start")
    });
    text.until("the rewrite is said", |out, _| {
        out.contains("was rewritten: read again from its start")
    });
    both_caught_up("a rewritten file");

    // Deleted, then made again with other content.
    std::fs::remove_file(&file).expect("delete");
    raw.until("the delete is said", |_, err| {
        err.contains("is gone: waiting for it to come back")
    });
    std::fs::write(&file, l[..2].concat()).expect("make again");
    append(&file, &l[2]);
    both_caught_up("a file made again");
    assert!(
        raw.err().contains("is back: read from its start") || raw.err().contains("was rewritten"),
        "{}",
        raw.err()
    );
    // And it goes on following the new file.
    append(&file, &l[3]);
    both_caught_up("an append to the file made again");
}

#[test]
fn new_prints_only_what_is_appended_and_json_is_the_branch_view() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("s.jsonl");
    let f = file.to_str().expect("UTF-8");
    let l = lines();
    std::fs::write(&file, l[..4].concat()).expect("write");
    let new = Followed::start(&[f, "--new", "--raw"], &[]);
    let json = Followed::start(&[f, "--json"], &[]);
    json.until("the branch view", |out, _| out.lines().count() == 3);
    // Give --new time to read the file, then append.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(new.out(), "");
    append(&file, &l[4]);
    new.until("only the appended line", |out, _| out == l[4]);
    let view = cli(&["dump", "--branch-view", f]);
    json.until("the branch view of the final file", |out, _| out == view);
}

#[test]
fn latest_switches_to_the_newer_session_pi_starts() {
    let home = tempfile::tempdir().expect("tmp");
    let agent = home.path().join("agent");
    let project = agent.join("sessions/--work-gopher--");
    std::fs::create_dir_all(&project).expect("mkdir");
    let l = lines();
    let first = project.join("2026-02-03T10-00-00-000Z_a.jsonl");
    std::fs::write(&first, l[..3].concat()).expect("write");
    let agent_s = agent.to_str().expect("UTF-8");
    let followed = Followed::start(&["--latest", "/work/gopher", "--raw", "--agent-dir", agent_s], &[]);
    followed.until("the first session", |out, _| out.lines().count() == 2);
    // pi starts a new session: a newer file in the project's folder.
    std::thread::sleep(Duration::from_millis(20));
    let second = project.join("2026-02-03T11-00-00-000Z_b.jsonl");
    let header = l[0].replace(
        "0199a0c2-5a7e-7000-8000-00000000a11c",
        "0199a0c2-5a7e-7000-8000-0000000000b2",
    );
    std::fs::write(&second, format!("{header}{}", l[1])).expect("write");
    followed.until("the switch is said", |_, err| {
        err.contains("a newer session of the project")
    });
    append(&second, &l[2]);
    let s = second.to_str().expect("UTF-8");
    let e = cli(&["dump", "--entries", s]);
    followed.until("the newer session's entries", |out, _| out.ends_with(&e));
}

/// The library's follower, run on a thread of its own as the Node binding runs it, stops
/// when another thread wakes it: a wait with no timeout ends without an event, at once.
#[test]
fn a_waker_ends_a_wait_that_has_no_timeout() {
    use pi_session::follow::{Event, Follower, Target};
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("s.jsonl");
    let lines = lines();
    std::fs::write(&file, lines[..2].concat()).expect("write");
    let mut f = Follower::new(Target::File(file.clone()), Default::default());
    let waker = f.waker();
    let (tx, rx) = std::sync::mpsc::channel();
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        loop {
            match f.next_event(None).expect("follow") {
                Some(Event::Entries(new)) => tx.send(new.len()).expect("send"),
                Some(_) => {}
                None => return done.send(f).expect("send"),
            }
        }
    });
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(1), "the first entry");
    append(&file, &lines[2]);
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(1), "the appended entry");
    // Now waiting for the next change, which never comes: only the waker ends it (the
    // poll alone would not: it looks again, finds nothing, and waits on).
    std::thread::sleep(Duration::from_millis(100));
    waker.wake();
    let f = ended
        .recv_timeout(Duration::from_secs(5))
        .expect("the wait ended when woken");
    assert_eq!(f.session().map(|s| s.entries().len()), Some(2));
}

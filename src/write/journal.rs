//! Crash-atomic appends: a tiny roll-back journal beside the session file, and recovery.
//!
//! An append is one `O_APPEND` `write()`, but Linux's buffered write loop checks for a fatal
//! signal between pages (folios), so `kill -9` during a write that crosses a page boundary
//! can leave the first pages written and the rest not: a torn last line. Without copying
//! the file nothing makes such a write atomic, so pi-session makes it undoable instead:
//!
//! 1. The appender takes an exclusive advisory lock (`flock`) on the session file, and
//!    holds it until step 4.
//! 2. If the append could tear (it crosses a 4096-byte boundary of the file offset:
//!    `len_before % 4096 + bytes > 4096`; pages are never smaller), it first writes a
//!    journal `.<file name>.append` in the same folder: the length before the append, the
//!    length of the line, and its first (up to 2 KiB) and last (up to 64) bytes.
//! 3. The line is written with one `O_APPEND` `write()`.
//! 4. The journal is removed.
//!
//! [`recover`] runs before anything opens an existing file for writing ([`crate::Writer`],
//! [`crate::migrate_file`], and every append, which holds the lock anyway). With the lock
//! taken (without waiting: if another pi-session is appending right now, it does nothing
//! and says [`Recovery::Busy`]) it compares the journal with the file:
//! - size = length before: nothing was written ([`Recovery::NotWritten`]);
//! - the line is all there (first and last bytes match): [`Recovery::Completed`];
//! - the file holds a part of the line (its first bytes match and no newline follows):
//!   the torn part is cut off, which restores the old file exactly
//!   ([`Recovery::Truncated`]);
//! - anything else (the file shrank, or something, say pi, appended a newline and more
//!   after the torn bytes): the file is left alone ([`Recovery::Stale`]), because only
//!   bytes provably of the interrupted append are ever removed.
//!
//! The journal is then removed. A journal that was itself cut short by the kill means the
//! append never started (the line is written only after the journal is complete).
//!
//! Scope: `kill -9` (or any crash of the process) with the kernel still running. The page
//! cache survives that, so nothing is fsynced; a power loss can still lose or tear the last
//! append (and pi does not fsync its appends either). The lock is advisory and pi itself
//! takes none: a pi process appending to the same file concurrently is not excluded, but
//! recovery never removes bytes that contain a newline, and pi never truncates. A journal
//! is found by the path the file was opened with (a second path to the same file through
//! a symlink has its own journal name). On platforms other than Unix there is no lock.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Appends that stay within one block of this size cannot be torn (Linux copies a write
/// page by page, and pages are at least this big).
const BLOCK: u64 = 4096;
/// First line of a journal; the numbers follow it.
const MAGIC: &[u8] = b"pi-session append journal v1";
/// How many of the line's first and last bytes a journal keeps.
const HEAD_MAX: usize = 2048;
const TAIL_MAX: usize = 64;

/// What [`recover`] found (and did) for a session file.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recovery {
    /// No journal: the last append (if any) finished.
    Clean,
    /// A journal, but none of its line had reached the file (the process died before the
    /// write began). The journal was removed; the file is unchanged.
    NotWritten,
    /// The journaled line is in the file in full (the process died after the write, before
    /// removing the journal). The journal was removed; the file is unchanged.
    Completed,
    /// A torn append: the file held only the first bytes of the line and was cut back to
    /// its length before the append, which is exactly the old file.
    Truncated {
        /// The file's length now (as before the append).
        len: u64,
        /// How many torn bytes were removed.
        removed: u64,
    },
    /// The file does not hold what the journal describes (it shrank, or other data follows
    /// the journaled position). The file was left alone; the stale journal was removed.
    Stale {
        /// Why the journal does not match.
        reason: String,
    },
    /// Another process holds the append lock (it is appending now): nothing was done.
    Busy,
}

impl Recovery {
    /// A short name: `clean`, `not-written`, `completed`, `truncated`, `stale`, `busy`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Recovery::Clean => "clean",
            Recovery::NotWritten => "not-written",
            Recovery::Completed => "completed",
            Recovery::Truncated { .. } => "truncated",
            Recovery::Stale { .. } => "stale",
            Recovery::Busy => "busy",
        }
    }
}

impl std::fmt::Display for Recovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Recovery::Clean => f.write_str("no interrupted append"),
            Recovery::NotWritten => f.write_str("an interrupted append had written nothing; the file is unchanged"),
            Recovery::Completed => f.write_str("an interrupted append had completed; the file is unchanged"),
            Recovery::Truncated { len, removed } => write!(
                f,
                "a torn append was removed: {removed} bytes cut, the file is back to its {len} bytes from before"
            ),
            Recovery::Stale { reason } => write!(f, "a stale append journal (file left alone): {reason}"),
            Recovery::Busy => f.write_str("another process is appending right now; nothing done"),
        }
    }
}

/// The journal of appends to `path`: `.<file name>.append` in the same folder (it does not
/// end in `.jsonl`, so neither pi nor pi-session lists it).
pub fn journal_path(path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(".append");
    path.with_file_name(name)
}

/// Finish or undo an append that a crash interrupted, as described in the module docs.
/// Cheap when there is nothing to do (one `stat` of the journal's name).
///
/// # Errors
/// I/O errors (the file cannot be opened for writing or truncated, the journal cannot be
/// read).
pub fn recover(path: &Path) -> Result<Recovery> {
    let journal = journal_path(path);
    if !exists(&journal) {
        return Ok(Recovery::Clean);
    }
    let io = |e| Error::from(e).with_path(path);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io)?;
    if !try_lock(&file).map_err(io)? {
        return Ok(Recovery::Busy);
    }
    recover_locked(&file, &journal, true).map_err(io)
}

/// What [`recover`] would do now, doing nothing: `None` when there is no journal.
///
/// # Errors
/// I/O errors reading the file or the journal.
pub fn pending_recovery(path: &Path) -> Result<Option<Recovery>> {
    let journal = journal_path(path);
    if !exists(&journal) {
        return Ok(None);
    }
    let io = |e| Error::from(e).with_path(path);
    let file = File::open(path).map_err(io)?;
    if !try_lock(&file).map_err(io)? {
        return Ok(Some(Recovery::Busy));
    }
    match recover_locked(&file, &journal, false).map_err(io)? {
        Recovery::Clean => Ok(None),
        r => Ok(Some(r)),
    }
}

fn exists(p: &Path) -> bool {
    !matches!(std::fs::symlink_metadata(p), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// Append one whole line (`bytes` ends with its only `\n`) to `path` so that a crash leaves
/// either the old file or the old file plus the line, once recovered. With
/// `only_if_unterminated`, append only when the file does not end with `\n` now (the
/// newline pi adds after a torn last line). Returns whether it wrote.
pub(crate) fn append(path: &Path, bytes: &[u8], only_if_unterminated: bool) -> std::io::Result<bool> {
    let file = std::fs::OpenOptions::new().read(true).append(true).open(path)?;
    lock(&file)?;
    let journal = journal_path(path);
    if exists(&journal) {
        // An earlier append died: undo its torn bytes before ours would bury them.
        recover_locked(&file, &journal, true)?;
    }
    let old = file.metadata()?.len();
    if only_if_unterminated && (old == 0 || read_at(&file, old - 1, 1)? == b"\n") {
        return Ok(false);
    }
    let journaled = old % BLOCK + bytes.len() as u64 > BLOCK;
    if journaled {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&journal)
            .and_then(|mut j| j.write_all(&Journal::of(old, bytes).encode()))
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", journal.display())))?;
    }
    if let Err(e) = (&file).write_all(bytes) {
        // Cut back what this write added, if the file shows nothing but our own bytes.
        if let Ok(Plan::Truncate) = Journal::of(old, bytes).assess(&file) {
            let _ = file.set_len(old);
        }
        let _ = std::fs::remove_file(&journal);
        return Err(e);
    }
    if journaled {
        let _ = std::fs::remove_file(&journal);
    }
    Ok(true)
}

/// With the lock held: compare the journal with the file, act (when `act`), remove it.
fn recover_locked(file: &File, journal: &Path, act: bool) -> std::io::Result<Recovery> {
    let text = match std::fs::read(journal) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Recovery::Clean),
        Err(e) => return Err(e),
    };
    let r = match Journal::decode(&text) {
        Decoded::Incomplete => Recovery::NotWritten,
        Decoded::Foreign => Recovery::Stale {
            reason: "the journal is not one pi-session wrote".into(),
        },
        Decoded::Journal(j) => match j.assess(file)? {
            Plan::NotWritten => Recovery::NotWritten,
            Plan::Completed => Recovery::Completed,
            Plan::Stale(reason) => Recovery::Stale { reason },
            Plan::Truncate => {
                let size = file.metadata()?.len();
                if act {
                    file.set_len(j.old)?;
                }
                Recovery::Truncated {
                    len: j.old,
                    removed: size - j.old,
                }
            }
        },
    };
    if act {
        match std::fs::remove_file(journal) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(r)
}

/// One journaled append: where it started, how long it is, its first and last bytes.
#[derive(Debug, PartialEq, Eq)]
struct Journal {
    old: u64,
    len: u64,
    head: Vec<u8>,
    tail: Vec<u8>,
}

enum Decoded {
    Journal(Journal),
    /// Cut short by the kill while it was written: the append had not begun.
    Incomplete,
    Foreign,
}

#[derive(Debug, PartialEq, Eq)]
enum Plan {
    NotWritten,
    Completed,
    Truncate,
    Stale(String),
}

impl Journal {
    fn of(old: u64, bytes: &[u8]) -> Journal {
        Journal {
            old,
            len: bytes.len() as u64,
            head: bytes[..bytes.len().min(HEAD_MAX)].to_vec(),
            tail: bytes[bytes.len() - bytes.len().min(TAIL_MAX)..].to_vec(),
        }
    }

    /// `MAGIC old=N len=N head=N tail=N\n`, then the head and tail bytes.
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(100 + self.head.len() + self.tail.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(
            format!(
                " old={} len={} head={} tail={}\n",
                self.old,
                self.len,
                self.head.len(),
                self.tail.len()
            )
            .as_bytes(),
        );
        out.extend_from_slice(&self.head);
        out.extend_from_slice(&self.tail);
        out
    }

    fn decode(text: &[u8]) -> Decoded {
        let Some(nl) = memchr::memchr(b'\n', text) else {
            // A header cut short (or an empty file): the journal was being written.
            let n = text.len().min(MAGIC.len());
            return if text[..n] == MAGIC[..n] {
                Decoded::Incomplete
            } else {
                Decoded::Foreign
            };
        };
        let (line, body) = (&text[..nl], &text[nl + 1..]);
        let Some(fields) = line.strip_prefix(MAGIC) else {
            return Decoded::Foreign;
        };
        let mut vals = [0u64; 4];
        let mut words = fields.split(|&b| b == b' ').filter(|w| !w.is_empty());
        for (slot, key) in vals.iter_mut().zip(["old=", "len=", "head=", "tail="]) {
            let Some(v) = words
                .next()
                .and_then(|w| w.strip_prefix(key.as_bytes()))
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(|v| v.parse().ok())
            else {
                return Decoded::Foreign;
            };
            *slot = v;
        }
        let [old, len, head, tail] = vals;
        if words.next().is_some() || head > len || tail > len || head > HEAD_MAX as u64 || tail > TAIL_MAX as u64 {
            return Decoded::Foreign;
        }
        let (head, tail) = (head as usize, tail as usize);
        match body.len().cmp(&(head + tail)) {
            std::cmp::Ordering::Less => Decoded::Incomplete,
            std::cmp::Ordering::Greater => Decoded::Foreign,
            std::cmp::Ordering::Equal => Decoded::Journal(Journal {
                old,
                len,
                head: body[..head].to_vec(),
                tail: body[head..].to_vec(),
            }),
        }
    }

    /// What the file says happened to this append.
    fn assess(&self, file: &File) -> std::io::Result<Plan> {
        let size = file.metadata()?.len();
        let (old, end) = (self.old, self.old.saturating_add(self.len));
        if size < old {
            return Ok(Plan::Stale(format!(
                "the file ({size} bytes) is shorter than before the append ({old} bytes)"
            )));
        }
        if size == old {
            return Ok(Plan::NotWritten);
        }
        let written = size - old;
        let n = (self.head.len() as u64).min(written) as usize;
        if read_at(file, old, n)? != self.head[..n] {
            return Ok(Plan::Stale(format!(
                "the bytes at offset {old} are not the start of the journaled line"
            )));
        }
        if size >= end {
            let t = self.tail.len() as u64;
            return Ok(if read_at(file, end - t, t as usize)? == self.tail {
                Plan::Completed
            } else {
                Plan::Stale(format!(
                    "the file reaches past the journaled line ({end} bytes) but the line's last bytes differ"
                ))
            });
        }
        // A part of the line and nothing after it? The line's only newline is its last
        // byte, so a newline here means someone else appended after the torn bytes.
        let mut f = file;
        f.seek(SeekFrom::Start(old))?;
        let mut rest = f.take(written);
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let k = rest.read(&mut buf)?;
            if k == 0 {
                break;
            }
            if memchr::memchr(b'\n', &buf[..k]).is_some() {
                return Ok(Plan::Stale(format!(
                    "a newline follows the {written} bytes written of the journaled line: other data was appended after it"
                )));
            }
        }
        Ok(Plan::Truncate)
    }
}

fn read_at(file: &File, at: u64, n: usize) -> std::io::Result<Vec<u8>> {
    let mut f = file;
    f.seek(SeekFrom::Start(at))?;
    let mut buf = Vec::with_capacity(n);
    f.take(n as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Take the exclusive append lock, waiting for it. Released when `file` is closed.
///
/// std's `File::lock` is `flock(fd, LOCK_EX)` on Unix, the lock pi-session has always
/// taken (so writers of older builds still exclude each other). It is used on Unix only:
/// on Windows std takes a mandatory `LockFileEx` lock, under which pi's own appends to the
/// file would fail, so there the lock stays a no-op, as before.
#[cfg(unix)]
fn lock(file: &File) -> std::io::Result<()> {
    loop {
        match file.lock() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Take the exclusive append lock if nobody holds it; `false` if someone does
/// (`flock(fd, LOCK_EX | LOCK_NB)`, see [`lock`]).
#[cfg(unix)]
fn try_lock(file: &File) -> std::io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(not(unix))]
fn lock(_: &File) -> std::io::Result<()> {
    Ok(())
}

#[cfg(not(unix))]
fn try_lock(_: &File) -> std::io::Result<bool> {
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &[u8] = b"{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"custom\",\"id\":\"a1\"}\n";

    fn line(n: usize) -> Vec<u8> {
        let mut l = format!("{{\"type\":\"custom\",\"id\":\"b2\",\"data\":\"{}", "x".repeat(n)).into_bytes();
        l.extend_from_slice(b"\"}\n");
        l
    }

    /// A session file holding OLD, and the journal of an append of `l` to it.
    fn setup(l: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, OLD).expect("write");
        std::fs::write(journal_path(&path), Journal::of(OLD.len() as u64, l).encode()).expect("journal");
        (dir, path)
    }

    fn add(path: &Path, bytes: &[u8]) {
        let mut f = std::fs::OpenOptions::new().append(true).open(path).expect("open");
        f.write_all(bytes).expect("write");
    }

    #[test]
    fn journal_round_trips_and_cut_journals_are_incomplete() {
        let l = line(10_000);
        let j = Journal::of(123, &l);
        assert_eq!((j.head.len(), j.tail.len()), (HEAD_MAX, TAIL_MAX));
        let e = j.encode();
        assert!(matches!(Journal::decode(&e), Decoded::Journal(ref d) if *d == j));
        for cut in [0, 5, MAGIC.len(), 40, e.len() - 1] {
            assert!(
                matches!(Journal::decode(&e[..cut]), Decoded::Incomplete),
                "cut at {cut}"
            );
        }
        assert!(matches!(Journal::decode(b"hello\n"), Decoded::Foreign));
        assert!(matches!(
            Journal::decode(&[e.as_slice(), b"x"].concat()),
            Decoded::Foreign
        ));
        let short = Journal::of(0, b"{}\n");
        assert!(matches!(Journal::decode(&short.encode()), Decoded::Journal(ref d) if *d == short));
        assert_eq!(
            journal_path(Path::new("/a/b/s.jsonl")),
            Path::new("/a/b/.s.jsonl.append")
        );
        assert_eq!(journal_path(Path::new("s.jsonl")), Path::new(".s.jsonl.append"));
    }

    #[test]
    fn no_journal_is_clean() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, OLD).expect("write");
        assert_eq!(recover(&path).expect("recover"), Recovery::Clean);
        assert_eq!(pending_recovery(&path).expect("pending"), None);
        assert_eq!(std::fs::read(&path).expect("read"), OLD);
    }

    #[test]
    fn nothing_written_leaves_the_file() {
        let (_d, path) = setup(&line(9000));
        assert_eq!(pending_recovery(&path).expect("pending"), Some(Recovery::NotWritten));
        assert!(journal_path(&path).exists(), "a dry run removes nothing");
        assert_eq!(recover(&path).expect("recover"), Recovery::NotWritten);
        assert_eq!(std::fs::read(&path).expect("read"), OLD);
        assert!(!journal_path(&path).exists());
        // A journal cut short while it was written: the append had not begun.
        std::fs::write(journal_path(&path), &MAGIC[..10]).expect("journal");
        assert_eq!(recover(&path).expect("recover"), Recovery::NotWritten);
        assert!(!journal_path(&path).exists());
    }

    #[test]
    fn a_completed_append_is_kept() {
        let l = line(9000);
        let (_d, path) = setup(&l);
        add(&path, &l);
        assert_eq!(recover(&path).expect("recover"), Recovery::Completed);
        assert_eq!(std::fs::read(&path).expect("read"), [OLD, &l[..]].concat());
        assert!(!journal_path(&path).exists());
        // Also when more was appended after it.
        let (_d, path) = setup(&l);
        add(&path, &l);
        add(&path, b"{\"more\":1}\n");
        assert_eq!(recover(&path).expect("recover"), Recovery::Completed);
    }

    #[test]
    fn a_torn_append_is_cut_back_to_the_old_file() {
        let l = line(20_000);
        for torn in [1, 100, 4096 - OLD.len(), 8192 - OLD.len(), l.len() - 1] {
            let (_d, path) = setup(&l);
            add(&path, &l[..torn]);
            assert_eq!(
                pending_recovery(&path).expect("pending"),
                Some(Recovery::Truncated {
                    len: OLD.len() as u64,
                    removed: torn as u64
                })
            );
            assert_eq!(std::fs::metadata(&path).expect("stat").len(), (OLD.len() + torn) as u64);
            assert!(matches!(recover(&path).expect("recover"), Recovery::Truncated { .. }));
            assert_eq!(std::fs::read(&path).expect("read"), OLD, "torn at {torn}");
            assert!(!journal_path(&path).exists());
        }
    }

    #[test]
    fn foreign_data_after_the_journaled_position_is_left_alone() {
        let l = line(20_000);
        // pi opened the torn file, added its newline and an entry.
        let (_d, path) = setup(&l);
        let after = [&l[..5000], b"\n{\"type\":\"custom\",\"id\":\"c3\"}\n"].concat();
        add(&path, &after);
        assert!(matches!(recover(&path).expect("recover"), Recovery::Stale { .. }));
        assert_eq!(std::fs::read(&path).expect("read"), [OLD, &after[..]].concat());
        assert!(!journal_path(&path).exists(), "the stale journal is removed");
        // Other bytes than the journaled line.
        let (_d, path) = setup(&l);
        add(&path, b"{\"type\":\"custom\",\"id\":\"zz\"");
        assert!(matches!(recover(&path).expect("recover"), Recovery::Stale { .. }));
        assert_eq!(
            std::fs::read(&path).expect("read"),
            [OLD, b"{\"type\":\"custom\",\"id\":\"zz\""].concat()
        );
        // The file shrank.
        let (_d, path) = setup(&l);
        std::fs::write(&path, &OLD[..10]).expect("write");
        assert!(matches!(recover(&path).expect("recover"), Recovery::Stale { .. }));
        assert_eq!(std::fs::read(&path).expect("read"), &OLD[..10]);
        // The full length is there but the end differs.
        let (_d, path) = setup(&l);
        let mut other = l.clone();
        let n = other.len();
        other[n - 3] = b'y';
        add(&path, &other);
        assert!(matches!(recover(&path).expect("recover"), Recovery::Stale { .. }));
        assert_eq!(std::fs::read(&path).expect("read"), [OLD, &other[..]].concat());
        // Not our journal at all.
        let (_d, path) = setup(&l);
        add(&path, &l[..100]);
        std::fs::write(journal_path(&path), b"something else\n").expect("journal");
        assert!(matches!(recover(&path).expect("recover"), Recovery::Stale { .. }));
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), (OLD.len() + 100) as u64);
    }

    #[cfg(unix)]
    #[test]
    fn a_held_lock_means_someone_is_appending_and_nothing_is_touched() {
        let l = line(20_000);
        let (_d, path) = setup(&l);
        add(&path, &l[..5000]);
        let holder = File::open(&path).expect("open");
        lock(&holder).expect("lock");
        assert_eq!(recover(&path).expect("recover"), Recovery::Busy);
        assert_eq!(pending_recovery(&path).expect("pending"), Some(Recovery::Busy));
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), (OLD.len() + 5000) as u64);
        assert!(journal_path(&path).exists());
        drop(holder);
        assert!(matches!(recover(&path).expect("recover"), Recovery::Truncated { .. }));
        assert_eq!(std::fs::read(&path).expect("read"), OLD);
    }

    #[test]
    fn appends_journal_only_what_could_tear_and_clean_up_after_themselves() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, OLD).expect("write");
        let small = line(10);
        assert!(append(&path, &small, false).expect("append"));
        let big = line(100_000);
        assert!(append(&path, &big, false).expect("append"));
        assert!(!journal_path(&path).exists());
        assert_eq!(
            std::fs::read(&path).expect("read"),
            [OLD, &small[..], &big[..]].concat()
        );
        // The next append first undoes a torn one it finds.
        let before = std::fs::read(&path).expect("read");
        std::fs::write(journal_path(&path), Journal::of(before.len() as u64, &big).encode()).expect("journal");
        add(&path, &big[..7000]);
        assert!(append(&path, &small, false).expect("append"));
        assert_eq!(std::fs::read(&path).expect("read"), [&before[..], &small[..]].concat());
        assert!(!journal_path(&path).exists());
        // The newline pi adds after a torn last line, only when it is still missing.
        assert!(!append(&path, b"\n", true).expect("append"));
        add(&path, b"{\"partial\"");
        assert!(append(&path, b"\n", true).expect("append"));
        assert!(std::fs::read(&path).expect("read").ends_with(b"{\"partial\"\n"));
    }
}

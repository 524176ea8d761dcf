//! Crash-atomic appends: a tiny roll-back journal beside the session file, and recovery.
//!
//! An append is one `O_APPEND` `write()`, but Linux's buffered write loop checks for a fatal
//! signal between pages (folios), so `kill -9` during a write that crosses a page boundary
//! can leave the first pages written and the rest not: a torn last line. Without copying
//! the file nothing makes such a write atomic, so pi-session makes it undoable instead:
//!
//! 1. The appender takes an exclusive advisory lock (`flock`) on the session file, and
//!    holds it until step 4 (see "The lock" below).
//! 2. If the append could tear (it crosses a 4096-byte boundary of the file offset:
//!    `len_before % 4096 + bytes > 4096`; pages are never smaller), it first writes a
//!    journal `.<file name>.append` in the same folder: the length before the append, the
//!    length of the line, and its first (up to 2 KiB) and last (up to 64) bytes.
//! 3. The line is written with one `O_APPEND` `write()`. When the file does not end with a
//!    newline (a torn line someone else left) and stays so while it stops growing (50 ms
//!    without a change: it is not a pi write of several pages seen half done), the newline
//!    that completes it goes first, in the same `write()`, so the line can never be glued
//!    onto foreign bytes.
//! 4. The journal is removed.
//!
//! [`recover`] runs before anything opens an existing file for writing ([`crate::Writer`],
//! [`crate::migrate_file`], and every append, which holds the lock anyway). With the lock
//! taken it compares the journal with the file:
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
//! # A journal name nobody can turn against the writer
//!
//! Anyone who can create files in a sessions folder (a shared or group-writable folder, a
//! custom `sessionDir`, a sandboxed tool) controls what sits at `.<name>.append`. So:
//! - the journal is created with `O_CREAT | O_EXCL | O_NOFOLLOW` (std's `create_new`), mode
//!   0600: an existing name, a symlink, even a dangling one, is never followed or reused,
//!   and an append whose journal name is taken fails with an error naming the journal;
//! - an existing journal is opened with `O_NOFOLLOW | O_NONBLOCK` and `fstat`ed before a
//!   byte is read: a symlink, FIFO, device, socket or folder, or a file owned by someone
//!   other than the caller, the session file's owner or root, is refused (left alone, not
//!   read, not removed) with an error that says what was found (`a symlink (to "x") at
//!   .s.jsonl.append`); [`pending_recovery`] reports it as [`Recovery::Foreign`];
//! - at most [`MAX_JOURNAL`] bytes are read (a journal is a header, up to 2 KiB of head
//!   and 64 bytes of tail): a bigger file there is not a journal.
//!
//! Only the journal's last component is guarded this way; the folder itself is trusted
//! (whoever can replace the folder can replace the session).
//!
//! # When the journal cannot be created
//!
//! pi appends with `appendFileSync` and keeps no journal, so in a folder the caller cannot
//! write to (a session shared read-only at folder level, a sandbox) every pi append works.
//! pi-session does the same for every size: when creating the journal fails with
//! `EACCES`, `EPERM` or `EROFS`, the line is appended without one and the result says so
//! ([`JournalUse::Unavailable`], naming the folder and the reason; the CLI prints one
//! warning line). Such an append is as crash-safe as pi's own (not at all against a kill
//! inside a multi-page `write()`), and if it is torn, [`recover`] reports the unterminated
//! tail ([`Recovery::Unterminated`]) instead of saying the file is clean. Failing every
//! append in such a folder was the other choice; it would make pi-session refuse files
//! pi writes happily. Other journal errors (disk full, quota) fail the append, which then
//! has written nothing.
//!
//! # Short writes
//!
//! `RLIMIT_FSIZE` (`ulimit -f`), a full disk or a quota can make `write()` store only a part
//! of the line. Before writing, the append compares the file's length plus the line with
//! the soft `RLIMIT_FSIZE` and fails with [`std::io::ErrorKind::FileTooLarge`] (`EFBIG`),
//! the file unchanged. A short write that happens anyway is followed by a second `write()`
//! that fails (`ENOSPC`, or `EFBIG` once the CLI ignores `SIGXFSZ`, whose default action
//! would kill the process between the two calls), and the append cuts its own bytes back.
//!
//! # The lock
//!
//! Writers take `flock(LOCK_EX)`; readers that only look at a journal ([`pending_recovery`],
//! used by `check` and `dump`) take `flock(LOCK_SH)`, so two readers never see each other
//! as a writer. `flock` works on a read-only descriptor, so anyone who can read the
//! session can hold the lock: a writer therefore first tries without blocking, then (once
//! telling [`WriteOptions::on_lock_wait`]) polls until [`WriteOptions::lock_timeout`]
//! (default 10 s) and fails with an error naming the lock. After taking it, a writer checks
//! that its descriptor still is the file at the path (a [`crate::migrate_file`] holding the
//! lock may have renamed a new file over it meanwhile) and otherwise opens the path again.
//!
//! Scope: `kill -9` (or any crash of the process) with the kernel still running. The page
//! cache survives that, so nothing is fsynced; a power loss can still lose or tear the last
//! append (and pi does not fsync its appends either). The lock is advisory and pi itself
//! takes none: a pi process appending to the same file concurrently is not excluded, but
//! recovery never removes bytes that contain a newline, and pi never truncates. The check
//! for a missing final newline and the `write()` are two system calls, so a pi append that
//! lands between them still leaves an empty line; no lock pi ignores can close that. A
//! journal is found by the path the file was opened with (a second path to the same file
//! through a symlink has its own journal name). On platforms other than Unix, and on file
//! systems without `flock` (`ENOLCK`, `EOPNOTSUPP`: some network mounts), there is no
//! lock.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Appends that stay within one block of this size cannot be torn (Linux copies a write
/// page by page, and pages are at least this big).
const BLOCK: u64 = 4096;
/// First line of a journal; the numbers follow it.
const MAGIC: &[u8] = b"pi-session append journal v1";
/// How many of the line's first and last bytes a journal keeps.
const HEAD_MAX: usize = 2048;
const TAIL_MAX: usize = 64;
/// The most bytes a journal can hold (header line, head, tail); no more is ever read.
pub const MAX_JOURNAL: u64 = 256 + HEAD_MAX as u64 + TAIL_MAX as u64;

/// How a writer waits for the append lock.
///
/// ```
/// use std::time::Duration;
/// let o = pi_session::WriteOptions::default().with_lock_timeout(Duration::from_millis(500));
/// assert_eq!(o.lock_timeout, Duration::from_millis(500));
/// ```
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct WriteOptions {
    /// How long to wait for a lock another process holds before failing (default 10 s).
    pub lock_timeout: Duration,
    /// Called once, with the session file, when the lock is busy and the wait begins.
    pub on_lock_wait: Option<fn(&Path)>,
    /// The ids a version-1 file gets when opening it for writing migrates it (pi's
    /// random ones by default; [`V1Ids::Stable`](crate::V1Ids): the ones read-only opens
    /// with that option showed).
    pub v1_ids: crate::session::V1Ids,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            lock_timeout: Duration::from_secs(10),
            on_lock_wait: None,
            v1_ids: crate::session::V1Ids::Random,
        }
    }
}

impl WriteOptions {
    /// These options with another lock timeout.
    pub fn with_lock_timeout(mut self, t: Duration) -> Self {
        self.lock_timeout = t;
        self
    }
    /// These options with the ids a version-1 file gets when it is migrated.
    pub fn with_v1_ids(mut self, ids: crate::session::V1Ids) -> Self {
        self.v1_ids = ids;
        self
    }
    /// These options with a function told when a wait for the lock begins.
    pub fn with_lock_notice(mut self, f: fn(&Path)) -> Self {
        self.on_lock_wait = Some(f);
        self
    }
}

/// Whether an append went through a journal (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum JournalUse {
    /// The append could not tear (it stayed within one 4 KiB block), or nothing was written.
    #[default]
    NotNeeded,
    /// The append was journaled.
    Journaled,
    /// The journal could not be created (a folder the caller cannot write to), so the line
    /// was appended without one, as pi appends: not crash-safe.
    Unavailable {
        /// The folder where the journal could not be created.
        folder: PathBuf,
        /// Why (the OS error).
        reason: String,
    },
}

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
    /// the journaled position), or the journal's name held a file of the caller's that is
    /// no journal. The file was left alone; the stale journal was removed.
    Stale {
        /// Why the journal does not match.
        reason: String,
    },
    /// Another process holds the append lock (it is appending now): nothing was done.
    Busy,
    /// No journal, but the file ends in an unterminated line no journal covers (an append
    /// without a journal was cut short, or another program wrote it). Left alone: pi's open
    /// adds a newline after it, and so does `pi-session migrate`.
    Unterminated {
        /// Bytes after the last newline.
        tail: u64,
    },
    /// Only from [`pending_recovery`]: the journal's name holds something pi-session never
    /// writes (a symlink, a FIFO, a device, a file of another user). It is left alone;
    /// writers refuse to go on until it is removed.
    Foreign {
        /// What was found, e.g. `a symlink (to "../x")`.
        found: String,
    },
}

impl Recovery {
    /// A short name: `clean`, `not-written`, `completed`, `truncated`, `stale`, `busy`,
    /// `unterminated`, `foreign`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Recovery::Clean => "clean",
            Recovery::NotWritten => "not-written",
            Recovery::Completed => "completed",
            Recovery::Truncated { .. } => "truncated",
            Recovery::Stale { .. } => "stale",
            Recovery::Busy => "busy",
            Recovery::Unterminated { .. } => "unterminated",
            Recovery::Foreign { .. } => "foreign",
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
            Recovery::Stale { reason } => write!(f, "a stale append journal was removed (file left alone): {reason}"),
            Recovery::Busy => f.write_str("another process holds the append lock; nothing done"),
            Recovery::Unterminated { tail } => write!(
                f,
                "no append journal, but the file ends in an unterminated line of {tail} bytes (left alone; pi's open would add a newline after it)"
            ),
            Recovery::Foreign { found } => write!(
                f,
                "{found} at the journal's name, not a journal pi-session wrote (left alone)"
            ),
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

fn io_at(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::from(e).with_path(path)
}

fn msg(kind: std::io::ErrorKind, text: String) -> std::io::Error {
    std::io::Error::new(kind, text)
}

/// Finish or undo an append that a crash interrupted, as described in the module docs,
/// waiting for the lock as [`WriteOptions::default`] says. Cheap when there is nothing to
/// do (a `stat` of the journal's name and a look at the file's last byte). Also says when
/// the file ends in an unterminated line no journal covers ([`Recovery::Unterminated`]).
///
/// # Errors
/// I/O errors (the file cannot be opened for writing or truncated, the journal cannot be
/// read); a journal name holding something pi-session never writes (see the module docs),
/// with the journal as the error's path.
pub fn recover(path: &Path) -> Result<Recovery> {
    recover_with(path, &WriteOptions::default())
}

/// [`recover`] with these lock options; [`Recovery::Busy`] when the lock stayed taken for
/// the whole timeout.
///
/// # Errors
/// As [`recover`].
pub fn recover_with(path: &Path, opts: &WriteOptions) -> Result<Recovery> {
    let journal = journal_path(path);
    let r = if exists(&journal) {
        let Some(file) = open_locked(path, opts, false)? else {
            return Ok(Recovery::Busy);
        };
        recover_locked(&file, path, &journal, true)?
    } else {
        Recovery::Clean
    };
    if r != Recovery::Clean {
        return Ok(r);
    }
    let file = open_regular(path)?;
    match unterminated_tail(&file).map_err(io_at(path))? {
        0 => Ok(Recovery::Clean),
        tail => Ok(Recovery::Unterminated { tail }),
    }
}

/// How many bytes follow the file's last newline (0: it ends with one, or is empty).
fn unterminated_tail(file: &File) -> std::io::Result<u64> {
    let size = file.metadata()?.len();
    let mut end = size;
    while end > 0 {
        let start = end.saturating_sub(64 << 10);
        let chunk = read_at(file, start, (end - start) as usize)?;
        if chunk.is_empty() {
            break;
        }
        if let Some(i) = memchr::memrchr(b'\n', &chunk) {
            return Ok(size - (start + i as u64 + 1));
        }
        end = start;
    }
    Ok(size)
}

/// What [`recover`] would do now, doing nothing: `None` when there is no journal. Takes the
/// shared lock (without waiting), so concurrent readers never see each other as a writer;
/// [`Recovery::Busy`] only when a writer holds the exclusive lock.
///
/// # Errors
/// I/O errors reading the file or the journal.
pub fn pending_recovery(path: &Path) -> Result<Option<Recovery>> {
    let journal = journal_path(path);
    if !exists(&journal) {
        return Ok(None);
    }
    let file = open_regular(path)?;
    if !try_lock_shared(&file).map_err(io_at(path))? {
        return Ok(Some(Recovery::Busy));
    }
    match recover_locked(&file, path, &journal, false)? {
        Recovery::Clean => Ok(None),
        r => Ok(Some(r)),
    }
}

/// `path` opened to read, refused unless it is a regular file (never blocking on a FIFO).
fn open_regular(path: &Path) -> Result<File> {
    let file = crate::source::open_for_reading(path).map_err(io_at(path))?;
    crate::source::regular(&file.metadata().map_err(io_at(path))?).map_err(io_at(path))?;
    Ok(file)
}

fn exists(p: &Path) -> bool {
    !matches!(std::fs::symlink_metadata(p), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// Open `path` for appending (read-only when `writable` is false and writing is not
/// permitted) and take the exclusive lock, waiting as `opts` says; the descriptor is
/// checked to still be the file at `path` once locked. `None`: the lock stayed taken.
fn open_locked(path: &Path, opts: &WriteOptions, read_only_ok: bool) -> Result<Option<File>> {
    let deadline = Instant::now() + opts.lock_timeout;
    let mut told = false;
    loop {
        // Never blocks on a FIFO; anything but a regular file is refused before a byte
        // is written (`crate::files`).
        let file = crate::files::open_append(path, read_only_ok).map_err(io_at(path))?;
        if !lock_until(&file, path, deadline, opts, &mut told).map_err(io_at(path))? {
            return Ok(None);
        }
        if still_at(&file, path) {
            return Ok(Some(file));
        }
        // Replaced while we waited (a rewrite renamed a new file over the path): again.
    }
}

/// Whether `file` is (still) the file that `path` names.
#[cfg(unix)]
fn still_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => true,
    }
}

#[cfg(not(unix))]
fn still_at(_: &File, _: &Path) -> bool {
    true
}

/// The error of a writer that gave up waiting for the lock.
fn lock_timeout_error(opts: &WriteOptions) -> std::io::Error {
    msg(
        std::io::ErrorKind::WouldBlock,
        format!(
            "another process holds the append lock (flock) on this file; gave up waiting after {:.1} s",
            opts.lock_timeout.as_secs_f64()
        ),
    )
}

/// Run `f` with `path` open and exclusively locked (waiting as `opts` says, then failing
/// with an error naming the lock), after an interrupted append has been recovered. For the
/// writer's open and [`crate::migrate_file`], which read the file and may rewrite it.
pub(crate) fn with_lock<T>(
    path: &Path,
    opts: &WriteOptions,
    f: impl FnOnce(&File, Recovery) -> Result<T>,
) -> Result<T> {
    let Some(file) = open_locked(path, opts, true)? else {
        return Err(Error::from(lock_timeout_error(opts)).with_path(path));
    };
    let journal = journal_path(path);
    let recovery = if exists(&journal) {
        recover_locked(&file, path, &journal, true)?
    } else {
        Recovery::Clean
    };
    f(&file, recovery)
}

/// Append one whole line (`bytes` ends with its only `\n`) to `path` so that a crash leaves
/// either the old file or the old file plus the line, once recovered. With
/// `only_if_unterminated`, append only when the file does not end with `\n` now (the
/// newline pi adds after a torn last line). Returns whether it wrote, and how the journal
/// was used.
pub(crate) fn append(
    path: &Path,
    bytes: &[u8],
    only_if_unterminated: bool,
    opts: &WriteOptions,
) -> Result<(bool, JournalUse)> {
    let Some(file) = open_locked(path, opts, false)? else {
        return Err(Error::from(lock_timeout_error(opts)).with_path(path));
    };
    let journal = journal_path(path);
    if exists(&journal) {
        // An earlier append died: undo its torn bytes before ours would bury them.
        recover_locked(&file, path, &journal, true)?;
    }
    append_locked(&file, path, bytes, only_if_unterminated)
}

/// [`append`] on a file already open and locked (see [`with_lock`]).
pub(crate) fn append_locked(
    file: &File,
    path: &Path,
    bytes: &[u8],
    only_if_unterminated: bool,
) -> Result<(bool, JournalUse)> {
    let journal = journal_path(path);
    let (old, terminated) = settled_tail(file).map_err(io_at(path))?;
    if only_if_unterminated && terminated {
        return Ok((false, JournalUse::NotNeeded));
    }
    // The newline that completes a torn last line goes in the same write as the line.
    let owned;
    let bytes = if terminated || only_if_unterminated {
        bytes
    } else {
        owned = [b"\n", bytes].concat();
        &owned[..]
    };
    check_file_size_limit(old, bytes.len() as u64).map_err(io_at(path))?;
    let mut used = JournalUse::NotNeeded;
    if old % BLOCK + bytes.len() as u64 > BLOCK {
        used = match create_journal(&journal, &Journal::of(old, bytes).encode()) {
            Ok(()) => JournalUse::Journaled,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                JournalUse::Unavailable {
                    folder: journal
                        .parent()
                        .filter(|d| !d.as_os_str().is_empty())
                        .unwrap_or(Path::new("."))
                        .to_path_buf(),
                    reason: e.to_string(),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(Error::from(msg(
                    e.kind(),
                    format!(
                        "{} appeared there while the append lock was held (not a journal of pi-session's); nothing appended",
                        found_at(&journal)
                    ),
                ))
                .with_path(&journal));
            }
            Err(e) => return Err(Error::from(e).with_path(&journal)),
        };
    }
    if let Err(e) = (&*file).write_all(bytes) {
        // Cut back what this write added, if the file shows nothing but our own bytes.
        if let Ok(Plan::Truncate) = Journal::of(old, bytes).assess(file) {
            let _ = file.set_len(old);
        }
        if used == JournalUse::Journaled {
            let _ = crate::files::remove(&journal);
        }
        return Err(Error::from(e).with_path(path));
    }
    if used == JournalUse::Journaled {
        let _ = crate::files::remove(&journal);
    }
    Ok((true, used))
}

/// How long the file's length must stay the same before an unterminated last line is
/// taken as torn (see [`settled_tail`]). 10 ms was too short on a loaded two-core machine:
/// a writer descheduled between the two halves of its line for longer had its line taken
/// as torn (the test `an_append_waits_for_another_writers_line_to_end` failed once in CI);
/// the wait is paid only when the file ends in an unterminated line.
const TAIL_QUIET: Duration = Duration::from_millis(50);
/// How long [`settled_tail`] waits at most for a growing file.
const TAIL_WAIT: Duration = Duration::from_millis(250);

/// The file's length and whether it ends with a newline (or is empty), once it does or has
/// stopped growing. pi appends without a lock, and a write of several pages is seen page by
/// page: a last line without its newline may be another process's write under way, not a
/// torn one. So an unterminated end is looked at again after [`TAIL_QUIET`], for as long as
/// the file grows (up to [`TAIL_WAIT`]); only an end that stays unterminated is completed.
fn settled_tail(file: &File) -> std::io::Result<(u64, bool)> {
    let ends = |len: u64| -> std::io::Result<bool> { Ok(len == 0 || read_at(file, len - 1, 1)? == b"\n") };
    let mut len = file.metadata()?.len();
    let mut terminated = ends(len)?;
    let deadline = Instant::now() + TAIL_WAIT;
    while !terminated && Instant::now() < deadline {
        std::thread::sleep(TAIL_QUIET);
        let now = file.metadata()?.len();
        if now == len {
            break;
        }
        len = now;
        terminated = ends(len)?;
    }
    Ok((len, terminated))
}

/// Fail with `EFBIG` before a write that the soft `RLIMIT_FSIZE` would cut short.
#[cfg(unix)]
fn check_file_size_limit(old: u64, len: u64) -> std::io::Result<()> {
    match rustix::process::getrlimit(rustix::process::Resource::Fsize).current {
        Some(max) if old.saturating_add(len) > max => Err(msg(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "appending {len} bytes would take the file past the file size limit of {max} bytes (ulimit -f); nothing appended"
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(not(unix))]
fn check_file_size_limit(_: u64, _: u64) -> std::io::Result<()> {
    Ok(())
}

/// Create the journal (never following or reusing an existing name) and write it.
fn create_journal(journal: &Path, text: &[u8]) -> std::io::Result<()> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        o.mode(0o600).custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    let mut j = o.open(journal)?;
    if let Err(e) = j.write_all(text) {
        drop(j);
        let _ = crate::files::remove(journal);
        return Err(e);
    }
    Ok(())
}

/// What is at `journal`, in words, for messages about it (`a symlink (to "x")`, `a FIFO`).
fn found_at(journal: &Path) -> String {
    match std::fs::symlink_metadata(journal) {
        Ok(m) => describe(&m, journal),
        Err(_) => "a file".into(),
    }
}

fn describe(m: &std::fs::Metadata, journal: &Path) -> String {
    let t = m.file_type();
    if t.is_symlink() {
        return match std::fs::read_link(journal) {
            Ok(to) => format!("a symlink (to {:?})", to.as_os_str()),
            Err(_) => "a symlink".into(),
        };
    }
    if t.is_file() {
        return "a file".into();
    }
    crate::source::kind_name(&t).into()
}

/// What the journal's name holds.
enum Found {
    Missing,
    Text(Vec<u8>),
    /// Something pi-session never writes: left alone.
    Refused(String),
}

/// Read the journal safely: never through a symlink, never from a FIFO or a device, never
/// a file of a stranger's, never more than [`MAX_JOURNAL`] bytes (+1, to see it is more).
fn read_journal(journal: &Path, session: &File) -> std::io::Result<Found> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use rustix::fs::OFlags;
        use std::os::unix::fs::OpenOptionsExt as _;
        o.custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32);
    }
    let f = match o.open(journal) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Missing),
        Err(e) => {
            // A symlink (ELOOP), a socket (ENXIO): say what it is; else the error.
            return match std::fs::symlink_metadata(journal) {
                Ok(m) if !m.is_file() => Ok(Found::Refused(describe(&m, journal))),
                _ => Err(e),
            };
        }
    };
    let m = f.metadata()?;
    if !m.is_file() {
        return Ok(Found::Refused(describe(&m, journal)));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let me = rustix::process::geteuid().as_raw();
        let owner = m.uid();
        let session_owner = session.metadata()?.uid();
        if owner != me && owner != session_owner && owner != 0 {
            return Ok(Found::Refused(format!("a file owned by uid {owner}")));
        }
    }
    #[cfg(not(unix))]
    let _ = session;
    let mut text = Vec::new();
    f.take(MAX_JOURNAL + 1).read_to_end(&mut text)?;
    Ok(Found::Text(text))
}

/// The error for a journal name that holds something pi-session never writes.
fn refused(journal: &Path, found: &str) -> Error {
    Error::from(msg(
        std::io::ErrorKind::InvalidData,
        format!("{found}, not an append journal pi-session wrote; left alone (remove it to go on)"),
    ))
    .with_path(journal)
}

/// With the lock held: compare the journal with the file, act (when `act`), remove it.
fn recover_locked(file: &File, path: &Path, journal: &Path, act: bool) -> Result<Recovery> {
    let text = match read_journal(journal, file).map_err(io_at(journal))? {
        Found::Missing => return Ok(Recovery::Clean),
        Found::Text(t) => t,
        Found::Refused(found) if act => return Err(refused(journal, &found)),
        Found::Refused(found) => return Ok(Recovery::Foreign { found }),
    };
    let r = match Journal::decode(&text) {
        Decoded::Incomplete => Recovery::NotWritten,
        Decoded::Foreign => Recovery::Stale {
            reason: format!(
                "the file at {} ({} bytes) is not a journal pi-session writes",
                journal.display(),
                text.len()
            ),
        },
        Decoded::Journal(j) => match j.assess(file).map_err(io_at(path))? {
            Plan::NotWritten => Recovery::NotWritten,
            Plan::Completed => Recovery::Completed,
            Plan::Stale(reason) => Recovery::Stale { reason },
            Plan::Truncate => {
                let size = file.metadata().map_err(io_at(path))?.len();
                if act {
                    file.set_len(j.old).map_err(io_at(path))?;
                }
                Recovery::Truncated {
                    len: j.old,
                    removed: size - j.old,
                }
            }
        },
    };
    if act {
        crate::files::remove(journal).map_err(io_at(journal))?;
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

/// Take the exclusive append lock before `deadline`: first without blocking; when it is
/// busy, tell `opts.on_lock_wait` (once per call chain, through `told`) and poll. `false`:
/// still busy at the deadline. Released when `file` is closed.
///
/// std's `File::try_lock` is `flock(fd, LOCK_EX | LOCK_NB)` on Unix, the lock pi-session
/// has always taken (so writers of older builds still exclude each other). It is used on
/// Unix only: on Windows std takes a mandatory `LockFileEx` lock, under which pi's own
/// appends to the file would fail, so there the lock stays a no-op, as before.
#[cfg(unix)]
fn lock_until(
    file: &File,
    path: &Path,
    deadline: Instant,
    opts: &WriteOptions,
    told: &mut bool,
) -> std::io::Result<bool> {
    let mut pause = Duration::from_millis(2);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(true),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A file system without flock (some network mounts): no lock, as on Windows.
            Err(std::fs::TryLockError::Error(e)) if no_locks(&e) => return Ok(true),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        if !*told {
            *told = true;
            if let Some(f) = opts.on_lock_wait {
                f(path);
            }
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// Take the shared lock if no writer holds the exclusive one; `false` if one does
/// (`flock(fd, LOCK_SH | LOCK_NB)`).
#[cfg(unix)]
fn try_lock_shared(file: &File) -> std::io::Result<bool> {
    loop {
        match file.try_lock_shared() {
            Ok(()) => return Ok(true),
            Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
            Err(std::fs::TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(std::fs::TryLockError::Error(e)) if no_locks(&e) => return Ok(true),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// The file system offers no `flock` (`ENOLCK`, `EOPNOTSUPP`).
#[cfg(unix)]
fn no_locks(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Unsupported || e.raw_os_error() == Some(rustix::io::Errno::NOLCK.raw_os_error())
}

#[cfg(not(unix))]
fn lock_until(_: &File, _: &Path, _: Instant, _: &WriteOptions, _: &mut bool) -> std::io::Result<bool> {
    Ok(true)
}

#[cfg(not(unix))]
fn try_lock_shared(_: &File) -> std::io::Result<bool> {
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const O: WriteOptions = WriteOptions {
        lock_timeout: Duration::from_secs(10),
        on_lock_wait: None,
        v1_ids: crate::session::V1Ids::Random,
    };

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
        holder.lock().expect("lock");
        let quick = WriteOptions::default().with_lock_timeout(Duration::from_millis(50));
        let t0 = Instant::now();
        assert_eq!(recover_with(&path, &quick).expect("recover"), Recovery::Busy);
        assert!(t0.elapsed() >= Duration::from_millis(50));
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
        assert!(append(&path, &small, false, &O).expect("append").0);
        let big = line(100_000);
        assert!(append(&path, &big, false, &O).expect("append").0);
        assert!(!journal_path(&path).exists());
        assert_eq!(
            std::fs::read(&path).expect("read"),
            [OLD, &small[..], &big[..]].concat()
        );
        // The next append first undoes a torn one it finds.
        let before = std::fs::read(&path).expect("read");
        std::fs::write(journal_path(&path), Journal::of(before.len() as u64, &big).encode()).expect("journal");
        add(&path, &big[..7000]);
        assert!(append(&path, &small, false, &O).expect("append").0);
        assert_eq!(std::fs::read(&path).expect("read"), [&before[..], &small[..]].concat());
        assert!(!journal_path(&path).exists());
        // The newline pi adds after a torn last line, only when it is still missing.
        assert!(!append(&path, b"\n", true, &O).expect("append").0);
        add(&path, b"{\"partial\"");
        assert!(append(&path, b"\n", true, &O).expect("append").0);
        assert!(std::fs::read(&path).expect("read").ends_with(b"{\"partial\"\n"));
    }
}

//! One file of a listing: open it (relative to its folder where the OS allows), stat it,
//! read it into a reused buffer or map it (as `crate::source::should_map` decides, into
//! the thread's map arena where there is one), and build its [`SessionInfo`]. [`Scratch`]
//! holds what is reused from file to file.

use super::info::{self, Carry, InfoScratch, Resume};
use super::{SessionInfo, SkipFileReason};
use crate::source::{Print, Purpose, ReadMode, Source, Stamp, read_upto, regular, should_map, still_held};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Reusable per-thread scratch for [`session_info_from_bytes`].
#[derive(Debug, Default)]
pub struct Scratch {
    buf: Vec<u8>,
    info: InfoScratch,
    /// Where this thread maps files (`crate::source::MapArena`), made on first use.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    arena: Option<crate::source::MapArena>,
}

/// Address space per listing thread for mapping files side by side. 16, 64 and 256 MiB
/// arenas listed 10,000 sessions equally fast; the mapped pages count in the process's
/// RSS until the arena starts over (max RSS 114 MB at 16 MiB, 523 MB at 256 MiB).
#[cfg(any(target_os = "linux", target_os = "android"))]
const ARENA: usize = 32 << 20;

impl Scratch {
    /// Empty scratch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether to collect `allMessagesText` (the default) or leave it empty, which saves
    /// copying every message's text when only the other fields are wanted.
    pub fn set_collect_text(&mut self, collect: bool) {
        self.info.skip_text = !collect;
    }

    /// Drop the file mappings this scratch still holds (they are otherwise kept until its
    /// arena fills up or the scratch is dropped).
    pub fn release_mappings(&mut self) {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Some(a) = self.arena.as_mut() {
            let _ = a.release();
        }
    }
}

/// Build pi's [`SessionInfo`] for a file whose bytes are `bytes` and whose mtime is
/// `mtime_ms` (Unix ms, used when no other time is known).
///
/// # Errors
/// [`SkipFileReason::NotSession`] or [`SkipFileReason::PiThrows`] where pi's
/// `buildSessionInfo` returns `null`; [`SkipFileReason::Changed`] when the bytes changed
/// while they were read (a mapped file rewritten by another process).
pub fn session_info_from_bytes(
    path: &Path,
    bytes: &[u8],
    mtime_ms: f64,
    scratch: &mut Scratch,
) -> Result<SessionInfo, SkipFileReason> {
    // The walker is compiled a second time for AVX2 and BMI, used when the CPU has them.
    crate::json::with_avx2_bmi(|| info::build(path, bytes, bytes, mtime_ms, &mut scratch.info))
}

/// What a listing cache keeps of a file besides its [`SessionInfo`]: the `fstat` its bytes
/// were read under, where the listing can carry on when the file grows, and the digest of
/// its bytes' print (`crate::source::Print`): a file that grew is carried on only when its
/// first `stamp.size()` bytes still have that digest.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Memo {
    pub(super) stamp: Stamp,
    pub(super) carry: Option<Carry>,
    pub(super) print: u64,
    /// The header's line, when the file has one.
    pub(super) header_line: Option<Vec<u8>>,
}

/// What a read gives a [`Memo`] besides the stamp and the print.
type Kept = (Option<Carry>, Option<Vec<u8>>);

/// [`session_info_from_bytes`], with what a [`Memo`] keeps of the bytes when `memo`.
fn info_and_memo(
    path: &Path,
    bytes: &[u8],
    mtime_ms: f64,
    scratch: &mut Scratch,
    memo: bool,
) -> (Result<SessionInfo, SkipFileReason>, Option<Kept>) {
    if !memo {
        return (session_info_from_bytes(path, bytes, mtime_ms, scratch), None);
    }
    let built =
        crate::json::with_avx2_bmi(|| info::build_carried(path, bytes, bytes, mtime_ms, &mut scratch.info, None, true));
    let Some(c) = built else {
        return (Err(SkipFileReason::Changed), None);
    };
    (c.result, Some((c.carry, c.header_line)))
}

/// Read `path` (following symlinks) and build its [`SessionInfo`], as pi's
/// `buildSessionInfo` does. With [`ReadMode::Auto`], files of at least 32 KiB are
/// memory-mapped (see [`ReadMode`]); smaller ones are read into the scratch buffer, which
/// is reused.
///
/// # Errors
/// Why the file is not listed.
pub fn read_session_info(path: &Path, mode: ReadMode, scratch: &mut Scratch) -> Result<SessionInfo, SkipFileReason> {
    let file = crate::source::open_for_reading(path).map_err(unreadable)?;
    read_opened_session_info(path, file, mode, scratch)
}

fn unreadable(e: std::io::Error) -> SkipFileReason {
    SkipFileReason::io(&e)
}

/// [`read_session_info`] of a file already opened.
///
/// Only regular files are read (a FIFO, a device or a socket is skipped as unreadable,
/// before a byte of it is read), and no further than the size `fstat` gave. A file that
/// changed while it was read (see `crate::source`: its `fstat` differs afterwards, or a
/// mapping of it faulted) is read again, into memory, up to twice; then it is skipped as
/// [`SkipFileReason::Changed`].
pub(super) fn read_opened_session_info(
    path: &Path,
    file: File,
    mode: ReadMode,
    scratch: &mut Scratch,
) -> Result<SessionInfo, SkipFileReason> {
    read_opened(path, &file, mode, scratch, false).0
}

/// The outcome of reading one file: its info (or why it is not listed), and its [`Memo`]
/// when one was asked for and the bytes held still.
pub(super) type Read = (Result<SessionInfo, SkipFileReason>, Option<Memo>);

/// [`read_opened_session_info`], with the file's [`Memo`] when `memo`.
pub(super) fn read_opened(path: &Path, file: &File, mode: ReadMode, scratch: &mut Scratch, memo: bool) -> Read {
    for attempt in 0..3 {
        let meta = match file.metadata() {
            Ok(m) => m,
            Err(e) => return (Err(unreadable(e)), None),
        };
        if let Err(e) = regular(&meta) {
            return (Err(unreadable(e)), None);
        }
        let stamp = Stamp::of(&meta);
        let mtime = mtime_ms(&meta).unwrap_or(f64::NAN);
        let res = if attempt == 0 && should_map(mode, meta.len(), Purpose::List) {
            mapped_info(path, file, &stamp, mtime, scratch, memo)
        } else {
            read_info(path, file, &stamp, mtime, scratch, memo)
        };
        if let Some((r, m, print, held)) = res {
            let m = m.map(|(carry, header_line)| Memo {
                stamp: held,
                carry,
                print: print.digest(),
                header_line,
            });
            return (r, m);
        }
    }
    (Err(SkipFileReason::Changed), None)
}

/// How one attempt at a file went: `None` when it changed while it was read; else the
/// outcome, the print of the bytes read, and the stamp the file was found to hold them
/// under afterwards.
type Attempt = Option<(Result<SessionInfo, SkipFileReason>, Option<Kept>, Print, Stamp)>;

/// The outcome of a file that could not be read.
fn unread(e: std::io::Error, stamp: &Stamp) -> Attempt {
    Some((Err(unreadable(e)), None, Print::of(&[]), *stamp))
}

/// The file mapped (into the arena where there is one): `None` when it changed while it
/// was read (it no longer holds the bytes' print, taken before they were used, or the
/// mapping faulted).
fn mapped_info(path: &Path, file: &File, stamp: &Stamp, mtime: f64, scratch: &mut Scratch, memo: bool) -> Attempt {
    let len = stamp.size();
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Some((r, print, faulted)) = info_in_arena(path, file, len, mtime, scratch, memo) {
        if faulted {
            return None;
        }
        let held = still_held(file, stamp, &print).ok()??;
        return Some((r.0, r.1, print, held));
    }
    let src = match file.try_clone().and_then(|f| Source::from_file(f, ReadMode::Mmap)) {
        Ok(s) => s,
        Err(e) => return unread(e, stamp),
    };
    // (The source took the print of its mapping when it was made.)
    let print = src.print()?.clone();
    let r = info_and_memo(path, src.bytes(), mtime, scratch, memo);
    if src.len() != len {
        return None;
    }
    let held = src.held().ok()??;
    Some((r.0, r.1, print, held))
}

/// The file read into the scratch buffer: `None` when it changed while it was read (it
/// no longer holds the bytes read: an append or a `touch` since is fine).
fn read_info(path: &Path, file: &File, stamp: &Stamp, mtime: f64, scratch: &mut Scratch, memo: bool) -> Attempt {
    let mut buf = std::mem::take(&mut scratch.buf);
    buf.clear();
    let len = stamp.size();
    let res = match read_upto(file, 0, len, &mut buf) {
        Ok(got) if got < len => None,
        Ok(_) => {
            let print = Print::of(&buf);
            let r = info_and_memo(path, &buf, mtime, scratch, memo);
            still_held(file, stamp, &print)
                .ok()
                .flatten()
                .map(|held| (r.0, r.1, print, held))
        }
        Err(e) => unread(e, stamp),
    };
    if buf.capacity() > (64 << 20) {
        buf = Vec::new();
    }
    scratch.buf = buf;
    res
}

/// What is known of a file from an earlier listing, to read only what was appended since.
pub(super) struct Before<'a> {
    /// Its size then.
    pub(super) size: u64,
    pub(super) memo: &'a Memo,
    pub(super) carry: &'a Carry,
    /// Its joined text up to `carry.offset` (empty when the text was not collected).
    pub(super) text: &'a [u8],
}

/// The file read from `before.carry.offset` on and the listing carried on from there,
/// when it only grew since `before`: the same file, longer, whose first `before.size`
/// bytes still have the print digest of then (hashed again: memory speed, far below
/// listing them again). `None` when it did not (or changed while it was read): the caller
/// reads it whole.
pub(super) fn read_appended(path: &Path, file: &File, before: &Before<'_>, scratch: &mut Scratch) -> Option<Read> {
    let meta = file.metadata().ok()?;
    regular(&meta).ok()?;
    let stamp = Stamp::of(&meta);
    let (old, new) = (before.size, stamp.size());
    if !stamp.same_file(&before.memo.stamp) || new <= old || before.carry.offset > old {
        return None;
    }
    let mtime = mtime_ms(&meta).unwrap_or(f64::NAN);
    // The print of the whole file, taken before the new bytes are used: its old part must
    // be what the memo saw.
    let mut print = Print::of_file(file, old).ok()??;
    if print.digest() != before.memo.print || !print.extend_from_file(file, new).ok()? {
        return None;
    }
    let start = before.carry.offset;
    let mut buf = std::mem::take(&mut scratch.buf);
    buf.clear();
    let got = read_upto(file, start, new - start, &mut buf).ok();
    let out = (|| {
        if got? < new - start {
            return None;
        }
        let resume = Resume {
            carry: before.carry,
            text: before.text,
        };
        let c = crate::json::with_avx2_bmi(|| {
            info::build_carried(path, &buf, &buf, mtime, &mut scratch.info, Some(resume), true)
        })?;
        // The bytes read are still the file's (an append or a `touch` since is fine).
        let held = still_held(file, &stamp, &print).ok()??;
        Some((
            c.result,
            Some(Memo {
                stamp: held,
                carry: c.carry,
                print: print.digest(),
                header_line: c.header_line,
            }),
        ))
    })();
    if buf.capacity() > (64 << 20) {
        buf = Vec::new();
    }
    scratch.buf = buf;
    out
}

/// Whether `fstat` still says what it said when the file was stamped.
/// [`session_info_from_bytes`] over the file mapped into the scratch's arena, and whether
/// the print of the bytes (taken before they were listed), and whether the mapping
/// faulted (the file shrank under it); `None` when it cannot be mapped there
/// (too big, or mapping failed: the caller maps it alone).
#[cfg(any(target_os = "linux", target_os = "android"))]
#[allow(clippy::type_complexity)]
fn info_in_arena(
    path: &Path,
    file: &File,
    len: u64,
    mtime: f64,
    scratch: &mut Scratch,
    memo: bool,
) -> Option<((Result<SessionInfo, SkipFileReason>, Option<Kept>), Print, bool)> {
    let len = usize::try_from(len).ok()?;
    let mut arena = match scratch.arena.take() {
        Some(a) => a,
        None => crate::source::MapArena::new(ARENA).ok()?,
    };
    let res = match arena.map(file, len) {
        Ok(Some(bytes)) => {
            // The print first: a write while the bytes are listed then shows in it.
            let print = Print::of(bytes);
            let r = info_and_memo(path, bytes, mtime, scratch, memo);
            Some((r, print, arena.faulted()))
        }
        _ => None,
    };
    scratch.arena = Some(arena);
    res
}

/// Node's `stats.mtimeMs`: seconds * 1e3 + nanoseconds / 1e6.
pub(super) fn mtime_ms(meta: &std::fs::Metadata) -> Option<f64> {
    meta.modified().ok().map(system_time_ms)
}

/// Milliseconds since the epoch, as node computes them.
fn system_time_ms(t: std::time::SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as f64 * 1e3 + f64::from(d.subsec_nanos()) / 1e6,
        Err(e) => {
            let d = e.duration();
            -(d.as_secs() as f64 * 1e3 + f64::from(d.subsec_nanos()) / 1e6)
        }
    }
}

/// [`mtime_ms`] of a `stat` result.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn stat_mtime_ms(st: &rustix::fs::Stat) -> Option<f64> {
    use std::time::Duration;
    let nanos = u32::try_from(st.st_mtime_nsec).ok().filter(|&n| n < 1_000_000_000)?;
    let t = if st.st_mtime >= 0 {
        UNIX_EPOCH.checked_add(Duration::new(u64::try_from(st.st_mtime).ok()?, nanos))?
    } else {
        // `u64::from`: `time_t` is 32 bits on some targets (i386 FreeBSD).
        #[allow(clippy::useless_conversion)]
        UNIX_EPOCH
            .checked_sub(Duration::from_secs(u64::from(st.st_mtime.unsigned_abs())))?
            .checked_add(Duration::from_nanos(u64::from(nanos)))?
    };
    Some(system_time_ms(t))
}

// Files are opened and stat'ed relative to their folder's descriptor (`openat`/`statat` on
// an `O_PATH` descriptor: one path step instead of the whole path, twice per file) where
// rustix has `O_PATH` and the `stat` fields used here are known: Linux, Android, FreeBSD.
// Elsewhere (macOS, the other BSDs, ...) `DirFd` has no values, so every file goes by path,
// exactly as when a folder cannot be opened here.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
mod at {
    use std::fs::File;
    use std::path::Path;
    use std::sync::Arc;

    /// An open folder (`O_PATH`: nothing is read through it).
    pub(crate) type DirFd = Arc<std::os::fd::OwnedFd>;

    /// The folder opened for `openat`/`statat`.
    pub(super) fn open_folder(d: &Path) -> Option<DirFd> {
        use rustix::fs::{Mode, OFlags, open};
        open(d, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .ok()
            .map(Arc::new)
    }

    pub(super) fn open_at(dir: &DirFd, name: &[u8]) -> std::io::Result<File> {
        use rustix::fs::{Mode, OFlags, openat};
        Ok(File::from(openat(
            dir,
            name,
            // Not blocking on a FIFO, not taking a terminal: such files are then refused
            // by their `fstat` before a byte is read.
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
        )?))
    }

    pub(super) fn stat_at(dir: &DirFd, name: &[u8]) -> (Option<f64>, u64, Option<crate::source::Stamp>) {
        rustix::fs::statat(dir, name, rustix::fs::AtFlags::empty())
            .ok()
            .map_or((None, 0, None), |st| {
                (
                    super::stat_mtime_ms(&st),
                    u64::try_from(st.st_size).unwrap_or(0),
                    Some(crate::source::Stamp::of_stat(&st)),
                )
            })
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
mod at {
    use std::fs::File;
    use std::path::Path;

    /// No folder descriptors here: no values.
    #[derive(Clone, Debug)]
    pub(crate) enum DirFd {}

    pub(super) fn open_folder(_: &Path) -> Option<DirFd> {
        None
    }

    pub(super) fn open_at(dir: &DirFd, _: &[u8]) -> std::io::Result<File> {
        match *dir {}
    }

    pub(super) fn stat_at(dir: &DirFd, _: &[u8]) -> (Option<f64>, u64, Option<crate::source::Stamp>) {
        match *dir {}
    }
}

pub(super) use at::DirFd;

/// The folder opened for [`Candidate::open`]/[`Candidate::stat`], where the OS allows.
pub(super) fn open_folder(d: &Path) -> Option<DirFd> {
    at::open_folder(d)
}

/// A file to list.
pub(super) struct Candidate {
    pub(super) path: PathBuf,
    pub(super) name: Vec<u8>,
    /// The folder, opened, when it could be: the file is then opened and stat'ed relative
    /// to it.
    pub(super) dir: Option<DirFd>,
    pub(super) mtime: Option<f64>,
    /// Bytes, when known (0 otherwise): the largest files are started first.
    pub(super) size: u64,
    /// What `stat` said, when it was asked (a listing cache compares it with its entry).
    pub(super) stamp: Option<Stamp>,
}

impl Candidate {
    /// Open the file (relative to its folder when that is open).
    pub(super) fn open(&self) -> std::io::Result<File> {
        match &self.dir {
            Some(fd) => at::open_at(fd, &self.name).map_err(|e| crate::source::explain_open_error(&self.path, e)),
            None => crate::source::open_for_reading(&self.path),
        }
    }

    /// Its mtime (node's `mtimeMs`), size and stamp; `(None, 0, None)` when it cannot be
    /// stat'ed.
    pub(super) fn stat(&self) -> (Option<f64>, u64, Option<Stamp>) {
        match &self.dir {
            Some(fd) => at::stat_at(fd, &self.name),
            None => std::fs::metadata(&self.path)
                .ok()
                .map_or((None, 0, None), |m| (mtime_ms(&m), m.len(), Some(Stamp::of(&m)))),
        }
    }
}

//! The bytes of a session file: memory-mapped or read, with identical meaning.
//!
//! mmap is an optimisation, never a meaning: [`ReadMode`] chooses, [`should_map`] is the one
//! place that decides (for opening a session and for the listing, with its two thresholds),
//! and every test runs each corpus file through both. The OS calls (mappings, the map
//! arena, page advice) live in `mmap.rs`, the crate's only OS `unsafe`; the other `unsafe`
//! code is CPU intrinsics in `crate::json` (`kernel.rs`, `string.rs`, `dispatch.rs`).
//!
//! # Files that change under us
//! Another process may truncate, rewrite, replace or grow a file while pi-session reads
//! it (pi migrates a session by rewriting it in place: `open(f, "w")`, then one write).
//! pi-session answers for one consistent version of the bytes or says the file changed
//! ([`crate::ErrorKind::FileChanged`]; a listing skips or re-reads that one file); it is
//! never killed and never takes a mixture of two versions for a session. The mechanism:
//!
//! - **Mapped bytes cannot kill the process.** Every mapping is watched (`guard.rs`): a
//!   read past the end of a file that shrank under it raises SIGBUS, which a handler turns
//!   into zero pages and a fault count for that mapping. Readers check the count after
//!   each pass over the bytes; zeros never decode as JSON. Mapping is kept because it pays
//!   for large files: reading a 1 GiB session into memory costs about as much again as
//!   indexing it.
//! - **Each open is checked against the file afterwards, by its bytes.** [`Source`]
//!   remembers the file's identity and times (`fstat` at open: device, inode, size,
//!   mtime, ctime) and a print of the bytes it read ([`Print`]: an XXH3-64 hash per
//!   4 MiB block, taken while the bytes are indexed, so in the same pass). After the
//!   bytes were used ([`Source::settled`]), the file is read as whole when its `fstat`
//!   is unchanged and was not *racy* at open (its ctime more than two seconds before
//!   the open, as git calls it: a write in the same clock tick could leave the times as
//!   they were). Otherwise its bytes decide: the file's first bytes hash to the print
//!   (a `touch`, a write still landing, an append) or the bytes read are not what it
//!   holds now (rewritten, shrunk, replaced: an error). Times never decide that bytes
//!   changed; they only spare reading them again. Read bytes are read with `pread` up to
//!   the size `fstat` gave, never past it, so a file that grows without end (a device, a
//!   log someone is writing) costs what it was when opened.
//! - **Only regular files are read.** Files are opened with `O_NONBLOCK | O_NOCTTY`, so a
//!   FIFO or a terminal does not block the open, and anything that is not a regular file
//!   (after symlinks: a link to `/dev/zero` too) is refused before a byte is read.
//!
//! The checks are as exact as a 64-bit hash per block: a rewrite that keeps every
//! block's hash is the only one that goes unseen. Re-hashing costs a read of the
//! prefix (a few GB/s from the page cache); it is paid only when the times moved or
//! the file was racy, so a file at rest costs one `fstat`.

// pi-session is written for and tested on Unix: file locks (`flock`) keep its appends and
// pi's apart, listing opens files relative to their folder, and the map arena reserves
// address space with `mmap`. Elsewhere it would build only with those guards silently
// gone (appends without a lock), so it refuses to build instead.
#[cfg(not(unix))]
compile_error!(
    "pi-session supports Unix only: its appends rely on flock(2) to stay apart from pi's, \
     and it is neither built nor tested elsewhere"
);

mod guard;
mod mmap;
pub(crate) mod print;

pub(crate) use print::Print;

#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) use mmap::MapArena;

use std::fs::File;
use std::path::Path;

/// How to get at a file's bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadMode {
    /// Map large files, read small ones: at least 1 MiB when a session is opened, at least
    /// 32 KiB when sessions are listed (what was fastest for each; see `should_map`).
    #[default]
    Auto,
    /// Always map (falls back to reading when mapping fails, e.g. on a pipe).
    Mmap,
    /// Always read into memory: never maps, so a file another process truncates cannot
    /// crash the reader.
    Read,
}

/// What the bytes are for: the two readers use them differently, so mapping pays off at
/// different sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Opening a session ([`Source::open`]): indexed once, bodies decoded later on demand.
    Open,
    /// Listing: each byte read once, front to back, then the file is let go.
    List,
}

thread_local! {
    /// The buffer this thread reads files into, kept from one file to the next.
    static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Take this thread's read buffer, as its last user gave it back (its bytes are stale):
/// tools that read thousands of files in turn reuse one buffer per thread, as a fresh one
/// costs a page fault per 4 KiB.
pub(crate) fn thread_buffer() -> Vec<u8> {
    BUF.with(|b| std::mem::take(&mut *b.borrow_mut()))
}

/// Give this thread's read buffer back (kept up to 64 MiB: a larger file is mapped).
pub(crate) fn give_thread_buffer(buf: Vec<u8>) {
    if buf.capacity() <= 64 << 20 {
        BUF.with(|b| *b.borrow_mut() = buf);
    }
}

/// Files smaller than this are read rather than mapped when a session is opened in
/// [`ReadMode::Auto`]: mapping costs more than a read for them.
pub(crate) const OPEN_MMAP_THRESHOLD: u64 = 1 << 20;

/// Files of at least this many bytes are memory-mapped by the listing in
/// [`ReadMode::Auto`]. Listing reads each byte once, front to back, so the choice is
/// about kernel work only: copying with `read()` cost about 1.75 times what mapping (page
/// faults with fault-around, then `munmap`) cost per byte, while mapping has a fixed cost
/// per file. Over 10,000 generated sessions (2.9 GB), 16-64 KiB thresholds without
/// pre-faulting were best, 7-8% faster whole-process than 1 MiB with `MADV_POPULATE_READ`.
pub(crate) const LIST_MMAP_THRESHOLD: u64 = 32 << 10;

/// Whether to map a file of `len` bytes read in `mode` for `purpose`: the one place that
/// decides.
///
/// - [`ReadMode::Read`]: never. [`ReadMode::Mmap`]: every non-empty file.
/// - [`ReadMode::Auto`], [`Purpose::Open`]: files of at least [`OPEN_MMAP_THRESHOLD`]
///   (1 MiB). Below that a read into a fresh buffer costs less than setting up and
///   tearing down a mapping; above it the index pass and the later lazy body decodes
///   share one set of pages instead of a copy of the whole file.
/// - [`ReadMode::Auto`], [`Purpose::List`]: files of at least [`LIST_MMAP_THRESHOLD`]
///   (32 KiB, measurements at the constant). Smaller ones are read into a reused
///   per-thread buffer; larger ones are mapped into the listing thread's `MapArena`.
///
/// # The SIGBUS contract
/// A mapped file that another process truncates turns reads past its new end into SIGBUS,
/// which kills the process with no message. pi rewrites a file in place when it migrates
/// it (`open(f, "w")`, then write), so that can happen to any file pi is using. Mapped
/// bytes can also change under a reader without a truncation; every reader treats bytes
/// that stop making sense as "the file changed" (an error or a skipped file), never as a
/// panic. Callers that expect files to be rewritten under them and cannot afford the
/// crash should use [`ReadMode::Read`], which copies the bytes once and is immune.
pub(crate) fn should_map(mode: ReadMode, len: u64, purpose: Purpose) -> bool {
    match mode {
        ReadMode::Read => false,
        ReadMode::Mmap => len > 0,
        ReadMode::Auto => {
            len >= match purpose {
                Purpose::Open => OPEN_MMAP_THRESHOLD,
                Purpose::List => LIST_MMAP_THRESHOLD,
            }
        }
    }
}

/// A stamp whose ctime is less than this old when it is taken is *racy* (as git calls it):
/// a write in the same timestamp tick (up to 10 ms; seconds on some network file systems)
/// would leave it as it is, so the bytes are compared however equal it stays.
pub(crate) const RACY_NS: i128 = 2_000_000_000;

/// Now, in nanoseconds since the epoch (0 before it).
pub(crate) fn now_ns() -> i128 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i128::try_from(d.as_nanos()).unwrap_or(i128::MAX),
        Err(_) => 0,
    }
}

/// What `fstat` says of a file, as far as telling versions apart goes; and whether it was
/// racy when taken (not compared).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    /// The file changed less than [`RACY_NS`] before this stamp was taken (or its ctime is
    /// ahead of the clock): a write in the same timestamp tick could leave the stamp as it
    /// is, so it cannot vouch for bytes read under it.
    racy: bool,
}

impl PartialEq for Stamp {
    fn eq(&self, o: &Stamp) -> bool {
        (self.dev, self.ino, self.size, self.mtime, self.ctime) == (o.dev, o.ino, o.size, o.mtime, o.ctime)
    }
}

impl Eq for Stamp {}

impl Stamp {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            racy: false,
        }
        .seen_now()
    }

    /// With [`Stamp::racy`] judged now, when the stamp was just taken.
    fn seen_now(mut self) -> Stamp {
        self.racy = self.ctime_ns() > now_ns().saturating_sub(RACY_NS);
        self
    }

    /// The size.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// What `stat` says (the same fields as [`Stamp::of`] takes from `fstat`).
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    pub(crate) fn of_stat(st: &rustix::fs::Stat) -> Stamp {
        Stamp {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as u64,
            mtime: (i64::from(st.st_mtime), st.st_mtime_nsec as i64),
            ctime: (i64::from(st.st_ctime), st.st_ctime_nsec as i64),
            racy: false,
        }
        .seen_now()
    }

    /// The fields, to store: device, inode, size, mtime seconds and nanoseconds, ctime
    /// seconds and nanoseconds.
    pub(crate) fn to_parts(self) -> [u64; 7] {
        [
            self.dev,
            self.ino,
            self.size,
            self.mtime.0 as u64,
            self.mtime.1 as u64,
            self.ctime.0 as u64,
            self.ctime.1 as u64,
        ]
    }

    /// The stamp [`Stamp::to_parts`] stored (taken as racy: a store keeps that apart).
    pub(crate) fn from_parts(p: [u64; 7]) -> Stamp {
        Stamp {
            dev: p[0],
            ino: p[1],
            size: p[2],
            mtime: (p[3] as i64, p[4] as i64),
            ctime: (p[5] as i64, p[6] as i64),
            racy: true,
        }
    }

    /// The change time, in nanoseconds since the epoch.
    pub(crate) fn ctime_ns(&self) -> i128 {
        i128::from(self.ctime.0) * 1_000_000_000 + i128::from(self.ctime.1)
    }

    /// Whether `other` is the same file (device and inode).
    pub(crate) fn same_file(&self, other: &Stamp) -> bool {
        (self.dev, self.ino) == (other.dev, other.ino)
    }

    /// Whether the stamp was racy when it was taken (see the field).
    pub(crate) fn racy(&self) -> bool {
        self.racy
    }
}

/// The stamps of many files, as [`Stamp::of`] takes them (`None`: no regular file, or
/// none there): each run of files in one folder `stat`ed relative to the folder's
/// descriptor (one path step a file instead of the whole path), the runs on every core.
pub(crate) fn stamps_of(paths: &[std::path::PathBuf]) -> Vec<Option<Stamp>> {
    use rayon::prelude::*;
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if paths[r.start].parent() == p.parent() => r.end = i + 1,
            _ => runs.push(i..i + 1),
        }
    }
    let per_run: Vec<Vec<Option<Stamp>>> = runs
        .par_iter()
        .map(|r| {
            let run = &paths[r.clone()];
            #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
            let dir = run[0].parent().filter(|d| !d.as_os_str().is_empty()).and_then(|d| {
                use rustix::fs::{Mode, OFlags, open};
                open(d, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok()
            });
            #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
            let dir: Option<rustix::fd::OwnedFd> = None;
            run.iter()
                .map(|p| stamp_at(dir.as_ref().map(rustix::fd::AsFd::as_fd), p))
                .collect()
        })
        .collect();
    per_run.into_iter().flatten().collect()
}

/// The stamp of the file at `path` (`None`: no regular file, or none there), `stat`ed
/// relative to `dir`, its folder's descriptor, when there is one (one path step instead of
/// the whole path).
pub(crate) fn stamp_at(dir: Option<rustix::fd::BorrowedFd<'_>>, path: &Path) -> Option<Stamp> {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    if let Some(dir) = dir {
        let st = rustix::fs::statat(dir, path.file_name()?, rustix::fs::AtFlags::empty()).ok()?;
        return (rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile)
            .then(|| Stamp::of_stat(&st));
    }
    let _ = dir;
    std::fs::metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|m| Stamp::of(&m))
}

/// Refuse what is not a regular file (a FIFO, a device, a socket, a folder) before a byte
/// of it is read: reading one could block forever or never end.
pub(crate) fn regular(meta: &std::fs::Metadata) -> std::io::Result<()> {
    let t = meta.file_type();
    if t.is_file() {
        return Ok(());
    }
    if t.is_dir() {
        return Err(std::io::Error::from_raw_os_error(
            rustix::io::Errno::ISDIR.raw_os_error(),
        ));
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("not a regular file ({})", kind_name(&t)),
    ))
}

/// What a file is, in words: `a regular file`, `a folder`, `a FIFO`, `a character
/// device`, `a block device`, `a socket`, `a symlink`.
pub(crate) fn kind_name(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = if t.is_file() {
        rustix::fs::FileType::RegularFile
    } else if t.is_dir() {
        rustix::fs::FileType::Directory
    } else if t.is_symlink() {
        rustix::fs::FileType::Symlink
    } else if t.is_fifo() {
        rustix::fs::FileType::Fifo
    } else if t.is_char_device() {
        rustix::fs::FileType::CharacterDevice
    } else if t.is_block_device() {
        rustix::fs::FileType::BlockDevice
    } else if t.is_socket() {
        rustix::fs::FileType::Socket
    } else {
        rustix::fs::FileType::Unknown
    };
    kind_of(t)
}

/// [`kind_name`] of a type as `stat` gives it.
pub(crate) fn kind_of(t: rustix::fs::FileType) -> &'static str {
    use rustix::fs::FileType as T;
    match t {
        T::RegularFile => "a regular file",
        T::Directory => "a folder",
        T::Symlink => "a symlink",
        T::Fifo => "a FIFO",
        T::CharacterDevice => "a character device",
        T::BlockDevice => "a block device",
        T::Socket => "a socket",
        T::Unknown => "a special file",
    }
}

/// Open `path` for reading without blocking on a FIFO or taking a terminal, following
/// symlinks; [`regular`] then says whether to read it.
pub(crate) fn open_for_reading(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32 | rustix::fs::OFlags::NOCTTY.bits() as i32)
        .open(path)
        .map_err(|e| explain_open_error(path, e))
}

/// An open of a socket fails with `ENXIO` ("No such device or address"): say what the
/// file is instead.
pub(crate) fn explain_open_error(path: &Path, e: std::io::Error) -> std::io::Error {
    if e.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error())
        && let Ok(meta) = std::fs::metadata(path)
        && let Err(why) = regular(&meta)
    {
        return why;
    }
    e
}

/// Read `len` bytes of `file` from `at` onto `buf`, with `pread` (the file position does
/// not matter and is not moved); fewer when the file ends sooner. Returns how many.
pub(crate) fn read_upto(file: &File, at: u64, len: u64, buf: &mut Vec<u8>) -> std::io::Result<u64> {
    let want = usize::try_from(len).map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
    mmap::pread_onto(file, at, want, buf).map(|got| got as u64)
}

/// Fill `out` with the bytes of `file` from `at` (`pread`, retried when interrupted or
/// short); fewer when the file ends sooner. Returns how many.
pub(crate) fn read_at_most(file: &File, at: u64, out: &mut [u8]) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut got = 0;
    while got < out.len() {
        match file.read_at(&mut out[got..], at + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Whether `file` still holds the bytes `print` stands for, read under `before`: the
/// stamp it holds them under now (taken before its bytes were compared), or `None` when it
/// no longer does. The one rule every reader and cache follows:
///
/// - `fstat` as `before`, and `before` not racy ([`Stamp::racy`]): held, nothing read;
/// - another file (device, inode), or shorter than the print: not held;
/// - else the bytes decide: the file's first `print.len()` bytes are hashed again (at
///   memory speed) and compared. Equal means held, whatever the timestamps say (a
///   `touch`, an append); different means rewritten.
///
/// # Errors
/// I/O errors of `fstat` or `pread`.
pub(crate) fn still_held(file: &File, before: &Stamp, print: &Print) -> std::io::Result<Option<Stamp>> {
    let now = Stamp::of(&file.metadata()?);
    Ok(held_at(file, before, &now, print)?.then_some(now))
}

/// [`still_held`] with the `fstat` taken (`now`).
fn held_at(file: &File, before: &Stamp, now: &Stamp, print: &Print) -> std::io::Result<bool> {
    if now == before && !before.racy() {
        return Ok(true);
    }
    if !now.same_file(before) || now.size < print.len() {
        return Ok(false);
    }
    print.held_by(file)
}

/// A file's bytes.
#[derive(Debug)]
pub struct Source {
    inner: Inner,
    file: Option<File>,
    len: u64,
    /// `fstat` when the bytes were read (or last refreshed); `None` without a file.
    stamp: Option<Stamp>,
    /// The print of the bytes, taken before they were used (see [`print`]); `None` without
    /// a file, and for a mapping whose user takes it in its own pass over the bytes
    /// ([`Source::from_file_unprinted`], [`Source::set_print`]) until it does.
    print: Option<Print>,
    /// Fewer bytes could be read than `fstat` said: the file shrank while it was read.
    short: bool,
    /// The last `fstat` found to leave the bytes valid (an append or a `touch` since), so
    /// that checks before each body decode hash the file again only when it changed again.
    verified: std::sync::Mutex<Option<Stamp>>,
}

#[derive(Debug)]
enum Inner {
    /// The watch is dropped (deregistered) before the mapping is unmapped.
    Mapped(guard::Watch, memmap2::Mmap),
    Owned(Vec<u8>),
}

/// What [`Source::refresh`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Update {
    /// The file holds the same bytes (its stamp may have moved: a `touch`).
    Same,
    /// Bytes were appended; the old length.
    Appended(u64),
    /// The file was rewritten (shorter, another file, or other bytes before the old end):
    /// nothing was read, open it again.
    Rewritten,
}

impl Source {
    /// Open `path` with the chosen mode.
    ///
    /// # Errors
    /// I/O errors, and `InvalidInput` ("not a regular file (a FIFO)") for anything but a
    /// regular file (after symlinks).
    pub fn open(path: &Path, mode: ReadMode) -> std::io::Result<Source> {
        Source::from_file(open_for_reading(path)?, mode)
    }

    /// Use an open file. Its bytes are read from offset 0 whatever the file position.
    ///
    /// # Errors
    /// As [`Source::open`].
    pub fn from_file(file: File, mode: ReadMode) -> std::io::Result<Source> {
        Source::from_file_into(file, mode, Vec::new())
    }

    /// [`Source::from_file`], reading a file that is not mapped into `buf` (emptied
    /// first; its capacity is what is reused): a search reads thousands of files, and a
    /// fresh buffer per file costs a page fault per 4 KiB. [`Source::take_buffer`] gives
    /// it back.
    ///
    /// # Errors
    /// As [`Source::open`].
    pub fn from_file_into(file: File, mode: ReadMode, buf: Vec<u8>) -> std::io::Result<Source> {
        let mut s = Source::from_file_unprinted(file, mode, buf)?;
        if s.print.is_none() && s.file.is_some() {
            s.print = Some(Print::of(s.bytes()));
        }
        Ok(s)
    }

    /// [`Source::from_file_into`], leaving the print of a mapping to the caller, who
    /// takes it in its own pass over the bytes, each block before using it, and hands it
    /// over with [`Source::set_print`] (a session's index pass: one pass instead of two).
    /// Until then a change of the file's stamp counts as a rewrite.
    pub(crate) fn from_file_unprinted(file: File, mode: ReadMode, mut buf: Vec<u8>) -> std::io::Result<Source> {
        let meta = file.metadata()?;
        regular(&meta)?;
        let stamp = Stamp::of(&meta);
        let len = meta.len();
        if should_map(mode, len, Purpose::Open)
            && let Some((watch, m)) = map_watched(&file, len)
        {
            return Ok(Source {
                inner: Inner::Mapped(watch, m),
                file: Some(file),
                len,
                stamp: Some(stamp),
                print: None,
                short: false,
                verified: std::sync::Mutex::new(None),
            });
        }
        buf.clear();
        let got = read_upto(&file, 0, len, &mut buf)?;
        // Read bytes stay as they were read: their print can be taken at any time.
        let print = Print::of(&buf);
        Ok(Source {
            inner: Inner::Owned(buf),
            file: Some(file),
            len: got,
            stamp: Some(stamp),
            print: Some(print),
            short: got < len,
            verified: std::sync::Mutex::new(None),
        })
    }

    /// Whether the print is still to be taken ([`Source::from_file_unprinted`]).
    pub(crate) fn wants_print(&self) -> bool {
        self.print.is_none() && self.file.is_some()
    }

    /// The print of the bytes (see [`Source::from_file_unprinted`]).
    pub(crate) fn print(&self) -> Option<&Print> {
        self.print.as_ref()
    }

    /// The print of the bytes, taken by the caller of [`Source::from_file_unprinted`].
    pub(crate) fn set_print(&mut self, print: Print) {
        debug_assert_eq!(print.len(), self.len);
        self.print = Some(print);
    }

    /// A second, independent mapping of this mapped file (the same open file, so the
    /// same file even if its path now names another), checked to hold this source's
    /// bytes: for values handed out that read their bytes later, whatever becomes of
    /// this source. `None` for bytes held in memory, when the file no longer holds them,
    /// or when no mapping can be made (no free watch slot).
    ///
    /// # Errors
    /// I/O errors of `dup`, `fstat` or `pread`.
    pub fn reopen(&self) -> std::io::Result<Option<Source>> {
        let (Inner::Mapped(..), Some(f)) = (&self.inner, &self.file) else {
            return Ok(None);
        };
        let Some(now) = self.held()? else {
            return Ok(None);
        };
        let file = f.try_clone()?;
        let Some((watch, m)) = map_watched(&file, now.size) else {
            return Ok(None);
        };
        // Mapped after the check: unless `fstat` still says what the check was made under
        // (and may vouch), the new mapping must hold the print too.
        let Some(print) = &self.print else {
            return Ok(None);
        };
        let still = Stamp::of(&file.metadata()?);
        // (Unchanged and not racy: held without hashing.)
        if (still != now || now.racy) && !print.holds_in(&m) {
            return Ok(None);
        }
        let mut print = print.clone();
        print.extend(&m);
        let fresh = Source {
            inner: Inner::Mapped(watch, m),
            file: Some(file),
            len: now.size,
            stamp: Some(now),
            print: Some(print),
            short: false,
            verified: std::sync::Mutex::new(None),
        };
        Ok((!fresh.faulted()).then_some(fresh))
    }

    /// The buffer the bytes were read into, to be used again ([`Source::from_file_into`]);
    /// empty for a mapped file. The source holds no bytes after.
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.len = 0;
        self.print = None;
        match &mut self.inner {
            Inner::Owned(v) => std::mem::take(v),
            Inner::Mapped(..) => Vec::new(),
        }
    }

    /// Bytes held in memory (tests, fuzzing, in-memory sessions).
    pub fn from_bytes(bytes: Vec<u8>) -> Source {
        let len = bytes.len() as u64;
        Source {
            inner: Inner::Owned(bytes),
            file: None,
            len,
            stamp: None,
            print: None,
            short: false,
            verified: std::sync::Mutex::new(None),
        }
    }

    /// Add `more` to bytes held in memory without a file (a session written in memory);
    /// `false`, and nothing changed, for a file's bytes, which grow only in the file.
    pub(crate) fn extend_owned(&mut self, more: &[u8]) -> bool {
        match (&mut self.inner, &self.file) {
            (Inner::Owned(v), None) => {
                v.extend_from_slice(more);
                self.len = v.len() as u64;
                true
            }
            _ => false,
        }
    }

    /// The bytes. For a mapped file another process truncated, the bytes past its new end
    /// read as zeros (instead of killing the process); [`Source::settled`] and
    /// [`Source::check_unchanged`] then say so.
    pub fn bytes(&self) -> &[u8] {
        match &self.inner {
            Inner::Mapped(_, m) => m,
            Inner::Owned(v) => v,
        }
    }

    /// Let the pages of mapped `bytes()[range]` go from this process's resident memory
    /// (see [`crate::OpenOptions::release_pages`]): the bytes stay readable, read again
    /// from the kernel's page cache (or the disk) when next used. A no-op for bytes held
    /// in memory and off Linux.
    pub fn release(&self, range: std::ops::Range<usize>) {
        if let Inner::Mapped(_, m) = &self.inner {
            mmap::release(m, range);
        }
    }

    /// Whether the bytes are memory-mapped.
    pub fn is_mapped(&self) -> bool {
        matches!(self.inner, Inner::Mapped(..))
    }

    /// Length at open.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The file's device and inode when the bytes were read, to compare with what a path
    /// names now (a file replaced by rename is another inode).
    pub(crate) fn stamp(&self) -> Option<&Stamp> {
        self.stamp.as_ref()
    }

    /// Whether the bytes are all there: none read short, no read of a mapping faulted (a
    /// file cut under its mapping reads zeros). Unlike [`Source::settled`], says nothing
    /// of whether the file changed since (for a file only ever replaced by a rename).
    pub(crate) fn intact(&self) -> bool {
        !self.short && !self.faulted()
    }

    fn faulted(&self) -> bool {
        matches!(&self.inner, Inner::Mapped(w, _) if w.faulted())
    }

    /// Whether the bytes are one version of the file, now that they were used (indexed,
    /// listed): `false` when the file shrank, was rewritten, or faulted under the mapping
    /// while they were read (see the module docs). Always `true` without a file.
    ///
    /// # Errors
    /// I/O errors of `fstat` or `pread`.
    pub fn settled(&self) -> std::io::Result<bool> {
        self.current()
    }

    /// The stamp under which the file was last found to hold these bytes (see
    /// [`still_held`]), now or remembered from an earlier check under the same stamp;
    /// `None` when it no longer does.
    pub(crate) fn held(&self) -> std::io::Result<Option<Stamp>> {
        let (Some(f), Some(stamp)) = (&self.file, &self.stamp) else {
            return Ok(None);
        };
        if self.short || self.faulted() {
            return Ok(None);
        }
        let now = Stamp::of(&f.metadata()?);
        let mut verified = self.verified.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if *verified == Some(now) {
            return Ok(Some(now));
        }
        let held = match (&self.print, &self.inner) {
            // A mapping of the same file shows its bytes as they are now: hashed where they
            // are, without copying them out with `pread` (1 GiB: 0.15 s against 0.05 s). A
            // cut under the hash reads zeros and is counted as a fault: not held.
            (Some(p), Inner::Mapped(_, m)) if now != *stamp || stamp.racy => {
                now.same_file(stamp) && now.size >= p.len() && p.holds_in(m) && !self.faulted()
            }
            (Some(p), _) => held_at(f, stamp, &now, p)?,
            // No print yet: only an unchanged, trusted stamp vouches.
            (None, _) => now == *stamp && !stamp.racy,
        };
        if held {
            // (A racy stamp is compared again each time: a write in its tick shows only
            // in the bytes.)
            *verified = (!now.racy).then_some(now);
        }
        Ok(held.then_some(now))
    }

    /// Pick up bytes another process (or this one) appended to the file since it was
    /// opened or last refreshed: a mapping is re-made over the new length, read bytes are
    /// extended with the new ones (read with `pread` up to the size `fstat` gives). Says
    /// [`Update::Rewritten`], and changes nothing, when the file is no longer what was read
    /// followed by new bytes (judged from the bytes, see [`still_held`]).
    ///
    /// # Errors
    /// I/O errors.
    pub(crate) fn refresh(&mut self) -> std::io::Result<Update> {
        let old = self.len;
        if self.file.is_none() {
            return Ok(Update::Same);
        }
        let Some(now) = self.held()? else {
            return Ok(Update::Rewritten);
        };
        if now == self.stamp.unwrap_or(now) || now.size == old {
            self.stamp = Some(now);
            return Ok(Update::Same);
        }
        let Some(file) = &self.file else {
            return Ok(Update::Same);
        };
        let Some(mut print) = self.print.take() else {
            return Ok(Update::Rewritten);
        };
        // A mapping grown in place keeps its pages mapped (see `mmap::grow`).
        let grown = match &mut self.inner {
            Inner::Mapped(watch, m) => {
                let ok = usize::try_from(now.size).is_ok_and(|len| mmap::grow(m, len).is_ok());
                if ok {
                    watch.set(m.as_ptr(), m.len());
                }
                ok
            }
            Inner::Owned(_) => false,
        };
        match &mut self.inner {
            Inner::Mapped(_, m) if grown => {
                // The new bytes are hashed before they are used (a rewrite of the old ones
                // since the check shows in the next one).
                print.extend(m);
            }
            Inner::Mapped(..) => {
                let Some((watch, m)) = map_watched(file, now.size) else {
                    // No mapping or no free watch slot: the whole file is read instead, and
                    // must still hold the print.
                    let mut v = Vec::new();
                    let got = read_upto(file, 0, now.size, &mut v)?;
                    if !print.holds_in(&v) {
                        self.print = Some(print);
                        return Ok(Update::Rewritten);
                    }
                    print.extend(&v);
                    self.short = got < now.size;
                    self.inner = Inner::Owned(v);
                    return Ok(self.appended(old, now, print));
                };
                // The new bytes are hashed before they are used (a rewrite of the old ones
                // since the check shows in the next one).
                print.extend(&m);
                self.inner = Inner::Mapped(watch, m);
            }
            Inner::Owned(v) => {
                let got = read_upto(file, old, now.size - old, v)?;
                self.short = got < now.size - old;
                print.extend(v);
            }
        }
        Ok(self.appended(old, now, print))
    }

    /// After new bytes were taken in: the new length, stamp and print.
    fn appended(&mut self, old: u64, now: Stamp, print: Print) -> Update {
        self.len = self.bytes().len() as u64;
        self.stamp = Some(now);
        self.print = Some(print);
        *self.verified.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        Update::Appended(old)
    }

    /// For a mapped file on Linux: ask the kernel to map every page now
    /// (`MADV_POPULATE_READ`), which costs far less than faulting pages in one by one when
    /// the whole file is about to be read. A no-op for bytes in memory; errors (older
    /// kernels) are ignored.
    pub fn populate(&self) {
        if let Inner::Mapped(_, m) = &self.inner {
            mmap::populate(m);
        }
    }

    /// Before using mapped bytes, the check that costs one `fstat`: `false` if the
    /// mapping faulted, or the file shrank below them or was replaced. A rewrite that
    /// keeps the size shows only in the bytes: it is for [`Source::current`] after use
    /// (a hash pass over the file when its times moved), which callers that hand out
    /// answers make once, not once per value they decode. Always `true` for bytes held in
    /// memory, which were checked when they were read.
    ///
    /// # Errors
    /// I/O errors of `fstat`.
    pub fn check_unchanged(&self) -> std::io::Result<bool> {
        if !self.is_mapped() {
            return Ok(true);
        }
        let (Some(f), Some(stamp)) = (&self.file, &self.stamp) else {
            return Ok(true);
        };
        if self.short || self.faulted() {
            return Ok(false);
        }
        let now = Stamp::of(&f.metadata()?);
        Ok(now.same_file(stamp) && now.size >= self.len)
    }

    /// Whether the file still holds these bytes, mapped or read: `false` once it shrank,
    /// was rewritten, or faulted under the mapping (an append or a `touch` since leaves it
    /// `true`). Always `true` without a file.
    ///
    /// # Errors
    /// I/O errors of `fstat` or `pread`.
    pub fn current(&self) -> std::io::Result<bool> {
        if self.file.is_none() {
            return Ok(true);
        }
        Ok(self.held()?.is_some())
    }
}

/// Map `len` bytes of `file` and watch the mapping (see `guard.rs`); `None` when it cannot
/// be mapped or watched: the caller reads instead.
fn map_watched(file: &File, len: u64) -> Option<(guard::Watch, memmap2::Mmap)> {
    let m = mmap::map_file(file, usize::try_from(len).ok()?).ok()?;
    let watch = guard::Watch::new(m.as_ptr(), m.len())?;
    Some((watch, m))
}

impl Drop for Source {
    /// Unmapping a large file means clearing a page-table entry per 4 KiB page (25 ms for
    /// 1 GiB here), on one thread under the address-space lock; the pieces of the mapping
    /// are cleared side by side on the rayon threads first (`mmap::release_in_parallel`),
    /// and the unmap that follows finds nothing left to clear.
    fn drop(&mut self) {
        if let Inner::Mapped(_, m) = &self.inner {
            mmap::release_in_parallel(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_policy_for_both_purposes() {
        for p in [Purpose::Open, Purpose::List] {
            assert!(!should_map(ReadMode::Read, u64::MAX, p));
            assert!(!should_map(ReadMode::Mmap, 0, p));
            assert!(should_map(ReadMode::Mmap, 1, p));
            assert!(!should_map(ReadMode::Auto, 0, p));
        }
        assert!(!should_map(ReadMode::Auto, (1 << 20) - 1, Purpose::Open));
        assert!(should_map(ReadMode::Auto, 1 << 20, Purpose::Open));
        assert!(!should_map(ReadMode::Auto, (32 << 10) - 1, Purpose::List));
        assert!(should_map(ReadMode::Auto, 32 << 10, Purpose::List));
    }
}

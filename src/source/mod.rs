//! The bytes of a session file: memory-mapped or read, with identical meaning.
//!
//! mmap is an optimisation, never a meaning: [`ReadMode`] chooses, [`should_map`] is the one
//! place that decides (for opening a session and for the listing, with its two thresholds),
//! and every test runs each corpus file through both. The OS calls (mappings, the map
//! arena, page advice) live in `mmap.rs`, the crate's only OS `unsafe`; the other `unsafe`
//! code is CPU intrinsics in `crate::json` (`kernel.rs`, `string.rs`, `dispatch.rs`).
//!
//! # Files that change under us
//! See [`should_map`] for the SIGBUS contract. pi-session never writes through a mapping
//! and maps read-only. To keep the window small it (1) indexes the mapping once at open,
//! in one pass; (2) before decoding any body later, checks with `fstat` that the file is
//! still at least as long as when it was mapped ([`Source::check_unchanged`]), failing with
//! [`crate::ErrorKind::FileChanged`] otherwise.

// pi-session is written for and tested on Unix: file locks (`flock`) keep its appends and
// pi's apart, listing opens files relative to their folder, and the map arena reserves
// address space with `mmap`. Elsewhere it would build only with those guards silently
// gone (appends without a lock), so it refuses to build instead.
#[cfg(not(unix))]
compile_error!(
    "pi-session supports Unix only: its appends rely on flock(2) to stay apart from pi's, \
     and it is neither built nor tested elsewhere"
);

mod mmap;

#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) use mmap::MapArena;
pub(crate) use mmap::prefer_huge_pages;

use std::fs::File;
use std::io::Read;
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

/// A file's bytes.
#[derive(Debug)]
pub struct Source {
    inner: Inner,
    file: Option<File>,
    len: u64,
}

#[derive(Debug)]
enum Inner {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Source {
    /// Open `path` with the chosen mode.
    pub fn open(path: &Path, mode: ReadMode) -> std::io::Result<Source> {
        let file = File::open(path)?;
        Source::from_file(file, mode)
    }

    /// Use an open file.
    pub fn from_file(mut file: File, mode: ReadMode) -> std::io::Result<Source> {
        let len = file.metadata()?.len();
        if should_map(mode, len, Purpose::Open)
            && let Ok(m) = mmap::map_file(&file)
        {
            let len = m.len() as u64;
            return Ok(Source {
                inner: Inner::Mapped(m),
                file: Some(file),
                len,
            });
        }
        // `len` is a hint only: the file may grow or shrink while we read it.
        let mut buf = Vec::new();
        file.read_to_end(&mut buf)?;
        let len = buf.len() as u64;
        Ok(Source {
            inner: Inner::Owned(buf),
            file: Some(file),
            len,
        })
    }

    /// Bytes held in memory (tests, fuzzing, in-memory sessions).
    pub fn from_bytes(bytes: Vec<u8>) -> Source {
        let len = bytes.len() as u64;
        Source {
            inner: Inner::Owned(bytes),
            file: None,
            len,
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

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.inner {
            Inner::Mapped(m) => m,
            Inner::Owned(v) => v,
        }
    }

    /// Whether the bytes are memory-mapped.
    pub fn is_mapped(&self) -> bool {
        matches!(self.inner, Inner::Mapped(_))
    }

    /// Length at open.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Pick up bytes another process (or this one) appended to the file since it was
    /// opened or last refreshed: a mapping is re-made over the new length, read bytes are
    /// extended with the new ones. Returns the previous length.
    ///
    /// # Errors
    /// I/O errors; `InvalidData` when the file became shorter (it was rewritten, not
    /// appended to: open it again).
    pub fn refresh(&mut self) -> std::io::Result<u64> {
        let old = self.len;
        let Some(file) = &mut self.file else { return Ok(old) };
        let len = file.metadata()?.len();
        if len < old {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the file became shorter: it was rewritten, not appended to",
            ));
        }
        if len == old {
            return Ok(old);
        }
        match &mut self.inner {
            Inner::Mapped(m) => {
                let new = mmap::map_file(file)?;
                self.len = new.len() as u64;
                *m = new;
            }
            Inner::Owned(v) => {
                use std::io::{Seek, SeekFrom};
                file.seek(SeekFrom::Start(old))?;
                file.read_to_end(v)?;
                self.len = v.len() as u64;
            }
        }
        Ok(old)
    }

    /// For a mapped file on Linux: ask the kernel to map every page now
    /// (`MADV_POPULATE_READ`), which costs far less than faulting pages in one by one when
    /// the whole file is about to be read. A no-op for bytes in memory; errors (older
    /// kernels) are ignored.
    pub fn populate(&self) {
        if let Inner::Mapped(m) = &self.inner {
            mmap::populate(m);
        }
    }

    /// For a mapped file: fail if the file is now shorter than when it was mapped, so that
    /// touching the mapping could fault. Always `Ok` for bytes held in memory.
    pub fn check_unchanged(&self) -> std::io::Result<bool> {
        match (&self.inner, &self.file) {
            (Inner::Mapped(_), Some(f)) => Ok(f.metadata()?.len() >= self.len),
            _ => Ok(true),
        }
    }
}

impl Drop for Source {
    /// Unmapping a large file means clearing a page-table entry per 4 KiB page (25 ms for
    /// 1 GiB here), on one thread under the address-space lock; the pieces of the mapping
    /// are cleared side by side on the rayon threads first (`mmap::release_in_parallel`),
    /// and the unmap that follows finds nothing left to clear.
    fn drop(&mut self) {
        if let Inner::Mapped(m) = &self.inner {
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

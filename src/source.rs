//! The bytes of a session file: memory-mapped or read, with identical meaning.
//!
//! mmap is an optimisation, never a meaning: [`ReadMode`] chooses, and every test runs each
//! corpus file through both. This module holds the crate's only `unsafe` code.
//!
//! # Files that change under us
//! A mapped file that another process truncates turns reads past its new end into SIGBUS.
//! pi-session never writes through a mapping and maps read-only. To keep the window small
//! it (1) indexes the mapping once at open, in one pass; (2) before decoding any body later,
//! checks with `fstat` that the file is still at least as long as when it was mapped
//! ([`Source::check_unchanged`]), failing with [`crate::ErrorKind::FileChanged`] otherwise.
//! A truncation that races with an access in progress can still fault; callers that expect
//! other processes to rewrite files (pi rewrites a file when it migrates it) should use
//! [`ReadMode::Read`], which copies the bytes once and is immune.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// How to get at a file's bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadMode {
    /// Map files of at least [`MMAP_THRESHOLD`] bytes, read smaller ones.
    #[default]
    Auto,
    /// Always map (falls back to reading when mapping fails, e.g. on a pipe).
    Mmap,
    /// Always read into memory.
    Read,
}

/// Files smaller than this are read rather than mapped in [`ReadMode::Auto`]: mapping costs
/// more than a read for them.
pub const MMAP_THRESHOLD: u64 = 1 << 20;

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
        let map = match mode {
            ReadMode::Read => false,
            ReadMode::Mmap => len > 0,
            ReadMode::Auto => len >= MMAP_THRESHOLD,
        };
        if map && let Ok(m) = map_file(&file) {
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
                let new = map_file(file)?;
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
        #[cfg(target_os = "linux")]
        if let Inner::Mapped(m) = &self.inner {
            let _ = m.advise(memmap2::Advice::PopulateRead);
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

#[allow(unsafe_code)]
fn map_file(file: &File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the mapping is read-only and private to this process; pi-session never
    // writes through it. The remaining hazard is another process truncating the file,
    // which makes later reads past the new end fault (SIGBUS) instead of being UB in the
    // Rust sense of aliasing; see the module docs for how pi-session narrows that window
    // (one indexing pass at open, a length check before every later access) and for
    // `ReadMode::Read`, which avoids it entirely.
    unsafe { memmap2::MmapOptions::new().map(file) }
}

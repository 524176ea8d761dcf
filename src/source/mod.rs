//! The bytes of a session file: memory-mapped or read, with identical meaning.
//!
//! mmap is an optimisation, never a meaning: [`ReadMode`] chooses, and every test runs each
//! corpus file through both. This module (mappings) and `crate::simd` (CPU kernels) hold the
//! crate's only `unsafe` code.
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

/// Ask for transparent huge pages under `buf` (`MADV_HUGEPAGE`, Linux; a hint, errors
/// ignored). Filling a fresh multi-MB buffer otherwise takes a page fault per 4 KiB: for
/// the index of a 1 GiB session (25 MB of records) that was ~15 ms on one thread.
#[allow(unsafe_code)]
pub fn prefer_huge_pages<T>(buf: &mut [std::mem::MaybeUninit<T>]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (buf.as_ptr() as usize).next_multiple_of(HUGE);
        let end = (buf.as_ptr() as usize + std::mem::size_of_val(buf)) & !(HUGE - 1);
        if end > start {
            // SAFETY: `start..end` lies inside `buf`, memory we hold exclusively; the
            // advice changes how the kernel backs it, never its contents.
            let _ = unsafe {
                rustix::mm::madvise(
                    start as *mut std::ffi::c_void,
                    end - start,
                    rustix::mm::Advice::LinuxHugepage,
                )
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

/// Mappings of at least this many bytes drop their pages on two or more threads before
/// they are unmapped.
const PARALLEL_RELEASE: usize = 64 << 20;

/// Drop the page-table entries of `start..start + len` (`MADV_DONTNEED`): clearing them
/// takes the address-space lock for reading only, where `munmap` (or `mmap` over the
/// range) takes it for writing, so other threads' faults and mappings go on meanwhile.
///
/// # Safety
/// The range must be whole pages of read-only private file mappings the caller owns.
/// Such mappings hold no private copies of pages, so no byte anyone reads changes, even
/// through a live borrow: the next read faults the same file page back in.
/// (Elsewhere than Linux the advice may leave the entries in place: only a hint.)
#[cfg(unix)]
#[allow(unsafe_code)]
unsafe fn drop_page_tables(start: *mut std::ffi::c_void, len: usize) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    let advice = rustix::mm::Advice::LinuxDontNeed;
    #[cfg(not(target_os = "linux"))]
    let advice = rustix::mm::Advice::DontNeed;
    // SAFETY: per this function's contract.
    unsafe { rustix::mm::madvise(start, len, advice) }?;
    Ok(())
}

impl Drop for Source {
    /// Unmapping a large file means clearing a page-table entry per 4 KiB page (25 ms for
    /// 1 GiB here), on one thread under the address-space lock; the pieces of the mapping
    /// are cleared side by side on the rayon threads first, and the unmap that follows
    /// finds nothing left to clear.
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Inner::Mapped(m) = &self.inner
            && m.len() >= PARALLEL_RELEASE
        {
            use rayon::prelude::*;
            let page = rustix::param::page_size();
            let piece = (m.len() / rayon::current_num_threads().max(1)).div_ceil(page) * page;
            let base = m.as_ptr() as usize;
            let len = m.len();
            (0..len.div_ceil(piece)).into_par_iter().for_each(|k| {
                let start = base + k * piece;
                // SAFETY: whole pages (the mapping starts on a page, pieces are whole
                // pages) of this read-only private file mapping, which is being dropped.
                let _ = unsafe { drop_page_tables(start as *mut _, piece.min(base + len - start)) };
            });
        }
    }
}

/// A stretch of address space that files are mapped into side by side and released all at
/// once.
///
/// Unmapping costs a TLB shootdown, and with two threads of one process on two CPUs that
/// is an inter-processor interrupt per `munmap` (a trapped MSR write on a virtual
/// machine): listing 10,000 sessions spent ~4% of its time there. The listing maps each
/// file into the next free part of an arena reserved once (`PROT_NONE`, `MAP_NORESERVE`,
/// then `MAP_FIXED` file mappings over it, all inside our own reservation), drops the
/// pages of every mapping at once when it is full, and re-reserves the whole stretch when
/// the listing ends: one shootdown per arena instead of one per file.
#[cfg(unix)]
pub struct MapArena {
    base: std::ptr::NonNull<std::ffi::c_void>,
    size: usize,
    used: usize,
}

// SAFETY: the arena owns a range of this process's address space; nothing in it is tied
// to the thread that reserved it, and `map` takes `&mut self`, so moving it to another
// thread cannot race with a borrow of its bytes.
#[cfg(unix)]
#[allow(unsafe_code)]
unsafe impl Send for MapArena {}

#[cfg(unix)]
#[allow(unsafe_code)]
impl MapArena {
    /// Reserve `size` bytes of address space (no memory is committed).
    pub fn new(size: usize) -> std::io::Result<MapArena> {
        use rustix::mm::{MapFlags, ProtFlags, mmap_anonymous};
        let page = rustix::param::page_size();
        let size = size.div_ceil(page).max(1) * page;
        // SAFETY: a fresh anonymous PROT_NONE reservation at an address the kernel picks;
        // it aliases nothing.
        let p = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                size,
                ProtFlags::empty(),
                MapFlags::PRIVATE | MapFlags::NORESERVE,
            )
        }?;
        let base = std::ptr::NonNull::new(p).ok_or_else(|| std::io::Error::other("mmap returned null"))?;
        Ok(MapArena { base, size, used: 0 })
    }

    /// Map the first `len` bytes of `file` read-only. `Ok(None)` when `len` is 0 or larger
    /// than the whole arena (map it on its own). When the free part is too small, every
    /// earlier mapping is dropped first, which the `&mut self` borrow makes safe: no bytes
    /// handed out before can still be in use.
    pub fn map<'a>(&'a mut self, file: &File, len: usize) -> std::io::Result<Option<&'a [u8]>> {
        use rustix::mm::{MapFlags, ProtFlags, mmap};
        let page = rustix::param::page_size();
        let span = len.div_ceil(page) * page;
        if len == 0 || span > self.size {
            return Ok(None);
        }
        if self.used + span > self.size {
            self.recycle()?;
        }
        // SAFETY: `base + used .. base + used + span` lies inside our own reservation
        // (checked above), so MAP_FIXED replaces only pages of this arena, none of which
        // is borrowed (`&mut self`). The mapping is private and read-only; see the module
        // docs for files truncated by other processes.
        let p = unsafe {
            mmap(
                self.base.as_ptr().cast::<u8>().add(self.used).cast(),
                span,
                ProtFlags::READ,
                MapFlags::PRIVATE | MapFlags::FIXED,
                file,
                0,
            )
        }?;
        self.used += span;
        // SAFETY: `p` starts a readable mapping of at least `len` bytes that lives until a
        // later `map` starts over, `release` or drop, which all need `&mut self`, so not
        // while the returned borrow lives.
        Ok(Some(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }))
    }

    /// Start over when full: drop the pages of every mapping at once (one TLB shootdown)
    /// with `MADV_DONTNEED`, which takes the address-space lock for reading only, so the
    /// other threads' faults and `mmap` calls go on meanwhile. Re-reserving the stretch
    /// instead zapped the pages under the lock held for writing, and the other thread spun
    /// on it (listing 10,000 sessions: 4% of its CPU time; 5% less CPU in all without).
    /// The file mappings stay until later `map` calls replace them or [`MapArena::release`].
    fn recycle(&mut self) -> std::io::Result<()> {
        // SAFETY: `base..base + used` holds only this arena's read-only private file
        // mappings, whole pages each.
        unsafe { drop_page_tables(self.base.as_ptr(), self.used) }?;
        self.used = 0;
        Ok(())
    }

    /// Drop every file mapping at once (one TLB shootdown), keeping the reservation; no
    /// file stays referenced by the arena.
    pub fn release(&mut self) -> std::io::Result<()> {
        use rustix::mm::{MapFlags, ProtFlags, mmap_anonymous};
        if self.used == 0 {
            return Ok(());
        }
        // SAFETY: re-reserves exactly our own range (MAP_FIXED over it); `&mut self` means
        // no borrowed bytes of it are alive.
        unsafe {
            mmap_anonymous(
                self.base.as_ptr(),
                self.size,
                ProtFlags::empty(),
                MapFlags::PRIVATE | MapFlags::FIXED | MapFlags::NORESERVE,
            )
        }?;
        self.used = 0;
        Ok(())
    }
}

#[cfg(unix)]
#[allow(unsafe_code)]
impl Drop for MapArena {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the range this arena reserved; no borrow of it can
        // outlive the arena.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr(), self.size) };
    }
}

#[cfg(unix)]
impl std::fmt::Debug for MapArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MapArena")
            .field("size", &self.size)
            .field("used", &self.used)
            .finish()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::MapArena;

    #[test]
    fn arena_maps_files_side_by_side_and_starts_over_when_full() {
        let dir = tempfile::tempdir().expect("tempdir");
        let page = rustix::param::page_size();
        let mut files = Vec::new();
        for (i, len) in [1, page - 1, page, page + 1, 3 * page, 5].into_iter().enumerate() {
            let p = dir.path().join(format!("f{i}"));
            let bytes: Vec<u8> = (0..len).map(|k| (k * 7 + i) as u8).collect();
            std::fs::write(&p, &bytes).expect("write");
            files.push((std::fs::File::open(&p).expect("open"), bytes));
        }
        // Room for four pages: the fourth file no longer fits and the arena starts over.
        let mut arena = MapArena::new(4 * page).expect("arena");
        for round in 0..3 {
            for (f, want) in &files {
                let got = arena.map(f, want.len()).expect("map").expect("fits");
                assert_eq!(got, &want[..], "round {round}");
            }
        }
        // Too big for the arena, or empty: the caller maps it alone.
        assert!(arena.map(&files[0].0, 5 * page).expect("no error").is_none());
        assert!(arena.map(&files[0].0, 0).expect("no error").is_none());
        arena.release().expect("release");
        let got = arena.map(&files[1].0, files[1].1.len()).expect("map").expect("fits");
        assert_eq!(got, &files[1].1[..]);
    }
}

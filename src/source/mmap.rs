//! The OS side of [`super::Source`] and of the listing's reads: file mappings, the map
//! arena, page advice (`madvise`) and transparent huge pages. The only OS `unsafe` of the
//! crate lives here (the rest is CPU intrinsics in `crate::json`); see
//! [`super::should_map`] for when files are mapped and what happens when another process
//! truncates one.

use std::fs::File;

/// Map the first `len` bytes of `file` read-only (the caller watches the mapping with
/// `guard::Watch` before reading it).
#[allow(unsafe_code)]
pub(super) fn map_file(file: &File, len: usize) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the mapping is read-only and private to this process; pi-session never
    // writes through it. Another process may still change the file: bytes then change
    // under the mapping (never a Rust aliasing violation for `u8`s read through a shared
    // slice), and reads past a new, shorter end fault with SIGBUS, which the guard
    // (`guard.rs`) turns into zero pages and a count every reader checks; see the module
    // docs of `source`.
    unsafe { memmap2::MmapOptions::new().len(len).map(file) }
}

/// Grow a mapping of a file to its first `len` bytes in place (Linux `mremap`, moved
/// when it must be): the pages already mapped stay mapped, so reading the old bytes again
/// faults nothing (a new mapping of 1 GiB faulted 0.1 s back in, and unmapping the old
/// one cost 25 ms). The caller points its `guard::Watch` at the new range before reading
/// it. Elsewhere: `Unsupported`, and the caller maps the file anew.
#[allow(unsafe_code)]
pub(super) fn grow(m: &mut memmap2::Mmap, len: usize) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: as `map_file`: a read-only mapping of the same file, now longer; no
        // reference into the old range outlives this call (`m` is borrowed mutably), and
        // no byte of the new range is read before the caller's watch covers it.
        unsafe { m.remap(len, memmap2::RemapOptions::new().may_move(true)) }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (m, len);
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// Mappings of at least this many bytes drop their pages on two or more threads before
/// they are unmapped.
#[cfg(target_os = "linux")]
const PARALLEL_RELEASE: usize = 64 << 20;

/// Drop the page-table entries of `start..start + len` (`MADV_DONTNEED`): clearing them
/// takes the address-space lock for reading only, where `munmap` (or `mmap` over the
/// range) takes it for writing, so other threads' faults and mappings go on meanwhile.
///
/// # Safety
/// The range must be whole pages of read-only private file mappings the caller owns.
/// Such mappings hold no private copies of pages, so no byte anyone reads changes, even
/// through a live borrow: the next read faults the same file page back in.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[allow(unsafe_code)]
unsafe fn drop_page_tables(start: *mut std::ffi::c_void, len: usize) -> std::io::Result<()> {
    let advice = rustix::mm::Advice::LinuxDontNeed;
    // SAFETY: per this function's contract.
    unsafe { rustix::mm::madvise(start, len, advice) }?;
    Ok(())
}

/// For a mapped file on Linux: ask the kernel to map every page now
/// (`MADV_POPULATE_READ`); errors (older kernels) are ignored, elsewhere a no-op.
pub(super) fn populate(m: &memmap2::Mmap) {
    #[cfg(target_os = "linux")]
    let _ = m.advise(memmap2::Advice::PopulateRead);
    #[cfg(not(target_os = "linux"))]
    let _ = m;
}

/// Drop the pages of `m[range]` from this process's resident set (Linux): the whole pages
/// the range covers (a partial page at either end stays, but the mapping's last page
/// goes when the range reaches its end). The file's pages stay in the kernel's cache; a
/// later read maps them again. Elsewhere a no-op.
#[allow(unsafe_code)]
pub(super) fn release(m: &memmap2::Mmap, range: std::ops::Range<usize>) {
    #[cfg(target_os = "linux")]
    {
        let page = rustix::param::page_size();
        let end = range.end.min(m.len());
        let lo = range.start.div_ceil(page) * page;
        let hi = if end == m.len() {
            end.div_ceil(page) * page
        } else {
            end / page * page
        };
        if hi > lo {
            let start = m.as_ptr() as usize + lo;
            // SAFETY: whole pages (the mapping starts on a page; `lo` and `hi` are page
            // multiples within it, `hi` at most the mapping's page-rounded end) of a
            // read-only private file mapping this `Mmap` owns.
            let _ = unsafe { drop_page_tables(start as *mut _, hi - lo) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (m, range);
}

/// Before a large mapping is unmapped (Linux): drop its page-table entries piece by piece
/// on the rayon threads, so that the `munmap` that follows finds nothing left to clear.
#[allow(unsafe_code)]
pub(super) fn release_in_parallel(m: &memmap2::Mmap) {
    #[cfg(target_os = "linux")]
    if m.len() >= PARALLEL_RELEASE {
        use rayon::prelude::*;
        let page = rustix::param::page_size();
        let piece = (m.len() / rayon::current_num_threads().max(1)).div_ceil(page) * page;
        let base = m.as_ptr() as usize;
        let len = m.len();
        (0..len.div_ceil(piece)).into_par_iter().for_each(|k| {
            let start = base + k * piece;
            // SAFETY: whole pages (the mapping starts on a page, pieces are whole pages)
            // of this read-only private file mapping, which is being dropped.
            let _ = unsafe { drop_page_tables(start as *mut _, piece.min(base + len - start)) };
        });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = m;
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
///
/// Linux and Android only (where `MAP_NORESERVE` and `MADV_DONTNEED`'s dropping of pages
/// are known to behave as used here); elsewhere the listing maps each file on its own.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) struct MapArena {
    base: std::ptr::NonNull<std::ffi::c_void>,
    size: usize,
    used: usize,
    /// The file mapped last, watched for faults (see `guard.rs`).
    watch: super::guard::Watch,
}

// SAFETY: the arena owns a range of this process's address space; nothing in it is tied
// to the thread that reserved it, and `map` takes `&mut self`, so moving it to another
// thread cannot race with a borrow of its bytes.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[allow(unsafe_code)]
unsafe impl Send for MapArena {}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[allow(unsafe_code)]
impl MapArena {
    /// Reserve `size` bytes of address space (no memory is committed).
    pub(crate) fn new(size: usize) -> std::io::Result<MapArena> {
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
        let arena = |watch| MapArena {
            base,
            size,
            used: 0,
            watch,
        };
        match super::guard::Watch::new(p.cast(), 0) {
            Some(w) => Ok(arena(w)),
            None => {
                // Dropped by hand: no watch, no arena (the listing then reads or maps alone).
                // SAFETY: the reservation made above, referenced by nothing else.
                let _ = unsafe { rustix::mm::munmap(p, size) };
                Err(std::io::Error::other("no free slot to watch a mapping"))
            }
        }
    }

    /// Map the first `len` bytes of `file` read-only. `Ok(None)` when `len` is 0 or larger
    /// than the whole arena (map it on its own). When the free part is too small, every
    /// earlier mapping is dropped first, which the `&mut self` borrow makes safe: no bytes
    /// handed out before can still be in use.
    pub(crate) fn map<'a>(&'a mut self, file: &File, len: usize) -> std::io::Result<Option<&'a [u8]>> {
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
        self.watch.set(p.cast::<u8>(), span);
        self.used += span;
        // SAFETY: `p` starts a readable mapping of at least `len` bytes that lives until a
        // later `map` starts over, `release` or drop, which all need `&mut self`, so not
        // while the returned borrow lives.
        Ok(Some(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }))
    }

    /// Whether the file mapped last faulted under its mapping (it shrank while it was
    /// read): its bytes from some page on read as zeros.
    pub(crate) fn faulted(&self) -> bool {
        self.watch.faulted()
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
    pub(crate) fn release(&mut self) -> std::io::Result<()> {
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

#[cfg(any(target_os = "linux", target_os = "android"))]
#[allow(unsafe_code)]
impl Drop for MapArena {
    fn drop(&mut self) {
        // No longer watched before it is unmapped: a fault at these addresses from now on
        // is not ours.
        self.watch.set(std::ptr::null(), 0);
        // SAFETY: unmaps exactly the range this arena reserved; no borrow of it can
        // outlive the arena.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr(), self.size) };
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
impl std::fmt::Debug for MapArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MapArena")
            .field("size", &self.size)
            .field("used", &self.used)
            .finish()
    }
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
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

/// Read up to `want` bytes of `file` from `at` onto the end of `buf` with `pread`,
/// straight into its spare capacity (zeroing it first cost as much as a tenth of the
/// copy); fewer when the file ends sooner. Returns how many.
#[allow(unsafe_code)]
pub(super) fn pread_onto(file: &File, at: u64, want: usize, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    buf.try_reserve_exact(want)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
    let start = buf.len();
    let mut got = 0;
    while got < want {
        match rustix::io::pread(file, &mut buf.spare_capacity_mut()[got..want], at + got as u64) {
            Ok(([], _)) => break,
            Ok((filled, _)) => got += filled.len(),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    // SAFETY: the `pread` calls wrote `buf[start .. start + got]` (each wrote the bytes it
    // reported, right after those of the calls before), within the capacity reserved.
    unsafe { buf.set_len(start + got) };
    Ok(got)
}

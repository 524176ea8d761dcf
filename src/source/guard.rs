//! Mapped bytes that another process truncates read as zeros instead of killing us.
//!
//! Reading a page of a file mapping past the file's current end raises SIGBUS, whose
//! default action kills the process with no message. pi rewrites a session in place when
//! it migrates it (`open(f, "w")`, then one write), so any file pi is using can shrink under
//! a reader for a moment. pi-session keeps its mappings (reading 1 GiB into memory instead
//! costs as much again as indexing it) and makes them safe:
//!
//! - every mapping pi-session makes is registered here, as a range of addresses, before a
//!   byte of it is read, and deregistered before it is unmapped ([`Watch`]);
//! - a process-wide SIGBUS handler, installed on the first registration, looks the
//!   faulting address up. Inside a registered range it maps anonymous zero pages
//!   (`MAP_FIXED`) from the faulting page to the end of the range, counts the fault in the
//!   range's slot and returns: the access is retried and reads zeros. Any other SIGBUS
//!   goes on to the handler that was there before (Rust's own stack-overflow handler, or
//!   the default action, which kills the process as it would have without us);
//! - readers never trust bytes of a range that faulted: [`Watch::faulted`] is checked
//!   after each pass over the bytes (the index at open, a listing's walk, a body decode),
//!   and turns the result into "the file changed" (`ErrorKind::FileChanged`, or the
//!   listing's `SkipFileReason::Changed`). Zeros never pass for JSON: a NUL byte is no
//!   JSON token, so a line that reads zeros fails to decode rather than decoding wrong.
//!
//! The handler does only async-signal-safe work: atomic loads and stores on a fixed table
//! and one `mmap` system call. The table has [`SLOTS`] slots; when all are taken a file is
//! read rather than mapped (the caller asks [`Watch::new`], which says `None`).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Mappings that can be watched at once: one per open mapped session, one per listing
/// thread's arena. Past this, files are read instead.
pub(crate) const SLOTS: usize = 1024;

struct Slot {
    /// First address of the range; 0 when the slot is free or being (re)filled.
    start: AtomicUsize,
    /// Length of the range in bytes.
    len: AtomicUsize,
    /// SIGBUS faults handled inside the range since it was registered.
    faults: AtomicUsize,
    /// Taken by a [`Watch`] (0 free, 1 taken).
    taken: AtomicUsize,
    /// Odd while `start` and `len` are being changed: the handler takes a slot's range only
    /// when this is even and the same before and after it read both.
    seq: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    faults: AtomicUsize::new(0),
    taken: AtomicUsize::new(0),
    seq: AtomicUsize::new(0),
};

static TABLE: [Slot; SLOTS] = [FREE; SLOTS];

/// A registered range of mapped addresses: faults inside it are survived and counted.
/// Deregistered on drop, which must come before the range is unmapped.
#[derive(Debug)]
pub(crate) struct Watch {
    slot: usize,
}

impl Watch {
    /// Watch `len` bytes from `start`; `None` when no slot is free or the handler could not
    /// be installed (the caller then reads instead of mapping).
    pub(crate) fn new(start: *const u8, len: usize) -> Option<Watch> {
        if !handler::install() {
            return None;
        }
        for (i, s) in TABLE.iter().enumerate() {
            if s.taken
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                let w = Watch { slot: i };
                w.set(start, len);
                return Some(w);
            }
        }
        None
    }

    /// Point the watch at another range (the listing's arena maps file after file) and
    /// clear its fault count.
    pub(crate) fn set(&self, start: *const u8, len: usize) {
        let s = &TABLE[self.slot];
        s.seq.fetch_add(1, Ordering::SeqCst);
        s.start.store(start as usize, Ordering::SeqCst);
        s.len.store(len, Ordering::SeqCst);
        s.faults.store(0, Ordering::SeqCst);
        s.seq.fetch_add(1, Ordering::SeqCst);
    }

    /// Whether a read inside the range faulted (the file shrank under the mapping) since
    /// the range was set: its bytes from some page on are zeros, not the file's.
    pub(crate) fn faulted(&self) -> bool {
        TABLE[self.slot].faults.load(Ordering::SeqCst) != 0
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let s = &TABLE[self.slot];
        s.seq.fetch_add(1, Ordering::SeqCst);
        s.start.store(0, Ordering::SeqCst);
        s.len.store(0, Ordering::SeqCst);
        s.seq.fetch_add(1, Ordering::SeqCst);
        s.taken.store(0, Ordering::SeqCst);
    }
}

/// The registered range holding `addr`, as (slot, start, len).
fn lookup(addr: usize) -> Option<(&'static Slot, usize, usize)> {
    TABLE.iter().find_map(|s| {
        // A range being changed is skipped: it is changed by the thread that reads it, so
        // that thread is not the one faulting here. Another thread's fault in it would be
        // a read of a mapping being replaced, which no reader does.
        let seq = s.seq.load(Ordering::SeqCst);
        if seq % 2 == 1 {
            return None;
        }
        let start = s.start.load(Ordering::SeqCst);
        let len = s.len.load(Ordering::SeqCst);
        if s.seq.load(Ordering::SeqCst) != seq {
            return None;
        }
        (start != 0 && addr >= start && addr - start < len).then_some((s, start, len))
    })
}

#[allow(unsafe_code)]
mod handler {
    use std::sync::OnceLock;

    /// The SIGBUS action found when ours was installed, which faults outside our ranges go
    /// on to.
    struct Previous(libc::sigaction);
    // SAFETY: a plain C struct (a handler address, flags and a signal set) written once
    // before it is shared and only read afterwards.
    unsafe impl Sync for Previous {}
    // SAFETY: as above; nothing in it belongs to a thread.
    unsafe impl Send for Previous {}

    static PREVIOUS: OnceLock<Option<Previous>> = OnceLock::new();

    /// The page size, read at install (`sysconf` is not async-signal-safe by POSIX).
    static PAGE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(4096);

    /// Install the handler once; whether it is in place.
    pub(super) fn install() -> bool {
        PREVIOUS
            .get_or_init(|| {
                PAGE.store(rustix::param::page_size(), std::sync::atomic::Ordering::SeqCst);
                // SAFETY: `sigaction` with a zeroed (valid: empty mask, no flags) struct
                // filled with our handler; the previous action is written into `old`.
                unsafe {
                    let mut new: libc::sigaction = std::mem::zeroed();
                    new.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
                    new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
                    libc::sigemptyset(&mut new.sa_mask);
                    let mut old: libc::sigaction = std::mem::zeroed();
                    (libc::sigaction(libc::SIGBUS, &new, &mut old) == 0).then_some(Previous(old))
                }
            })
            .is_some()
    }

    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
        let addr = unsafe { (*info).si_addr() } as usize;
        if let Some((slot, start, len)) = super::lookup(addr) {
            let page = PAGE.load(std::sync::atomic::Ordering::SeqCst);
            let from = addr & !(page - 1);
            let end = (start + len).next_multiple_of(page);
            // SAFETY: `from..end` lies inside a registered mapping (whole pages: mappings
            // start on a page), which the registration keeps alive until it is
            // deregistered; replacing its pages with zeros changes bytes no one may rely
            // on any more (the fault is counted and checked by every reader), and `mmap`
            // is a plain system call, safe in a signal handler.
            let p = unsafe {
                libc::mmap(
                    from as *mut libc::c_void,
                    end - from,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if p != libc::MAP_FAILED {
                slot.faults.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                return;
            }
        }
        // Not ours (or the zero pages could not be mapped): what would have happened
        // without us.
        let Some(Some(Previous(prev))) = PREVIOUS.get() else {
            return;
        };
        let h = prev.sa_sigaction;
        if h == libc::SIG_DFL || h == libc::SIG_IGN {
            // SAFETY: restoring the default action; returning re-runs the faulting access,
            // which then takes the default action (the process dies, as it would have).
            unsafe {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: the previous handler was installed as a three-argument handler.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(h) };
            f(sig, info, ctx);
        } else {
            // SAFETY: the previous handler was installed as a one-argument handler.
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
            f(sig);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_found_until_dropped() {
        let a = Watch::new(0x10_0000 as *const u8, 0x2000).expect("slot");
        let b = Watch::new(0x20_0000 as *const u8, 0x1000).expect("slot");
        assert!(lookup(0x10_0000).is_some());
        assert!(lookup(0x10_1fff).is_some());
        assert!(lookup(0x10_2000).is_none());
        assert_eq!(lookup(0x20_0fff).map(|(_, s, _)| s), Some(0x20_0000));
        drop(a);
        assert!(lookup(0x10_0000).is_none());
        b.set(0x30_0000 as *const u8, 0x1000);
        assert!(lookup(0x20_0000).is_none());
        assert!(lookup(0x30_0000).is_some());
        assert!(!b.faulted());
    }
}

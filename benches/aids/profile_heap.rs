//! Peak heap of `check`'s work on a file (index, tree, context, name), measured with a
//! counting global allocator: `cargo run --release --features aids --example profile_heap -- FILE`.
use pi_session::Session;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts bytes.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let n = NOW.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(n, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        NOW.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Peak and live heap so far, in MB, and the peak reset to what is live (so the next
/// phase's peak is its own).
fn phase() -> String {
    let (peak, now) = (PEAK.load(Ordering::Relaxed), NOW.load(Ordering::Relaxed));
    PEAK.store(now, Ordering::Relaxed);
    format!("peak {:.1} live {:.1}", peak as f64 / 1e6, now as f64 / 1e6)
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: heap FILE");
    let size = std::fs::metadata(&path).expect("stat").len();
    let overall = std::cell::Cell::new(0usize);
    let mut phases = Vec::new();
    let mut mark = |name: &str| {
        overall.set(overall.get().max(PEAK.load(Ordering::Relaxed)));
        phases.push(format!("{name}: {}", phase()));
    };
    let s = Session::open(&path).expect("open");
    mark("open");
    let after_open = overall.get();
    let _ = s.branch_path(None).expect("branch").len();
    mark("branch");
    let n = s.context(s.leaf()).expect("context").messages.len();
    mark("context");
    // As `check` does: the roots of pi's tree, counted (the tree is built only when ids
    // repeat).
    let _ = s.tree_root_count().expect("tree");
    mark("tree roots");
    let _ = s.session_name();
    mark("name");
    let peak = overall.get();
    println!(
        "file {size} bytes, {} entries, {n} context messages: peak heap after open {:.1} MB, overall {:.1} MB = {:.2}% of the file, {:.1} bytes an entry",
        s.entries_len(),
        after_open as f64 / 1e6,
        peak as f64 / 1e6,
        100.0 * peak as f64 / size as f64,
        peak as f64 / s.entries_len().max(1) as f64
    );
    println!("  {}", phases.join("; "));
}

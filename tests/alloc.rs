//! Allocation counts: the listing and the index reuse their buffers, so doing the same
//! work a second time allocates a small, fixed number of times per file (the result's
//! strings and records), never once per line. A counting global allocator sees every
//! thread; the tests of this file take turns.

use pi_session::ReadMode;
use pi_session::listing::{ListOptions, Scratch, list_dir, read_session_info};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator; the counter has no effect on the memory.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One test at a time: the counter is process-wide.
static TURN: Mutex<()> = Mutex::new(());

fn allocations(f: impl FnOnce()) -> u64 {
    let before = ALLOCS.load(Ordering::SeqCst);
    f();
    ALLOCS.load(Ordering::SeqCst) - before
}

/// Lines per session: a per-line allocation would cost at least this much per file.
const LINES: usize = 400;

/// A session with `LINES` entries: user and assistant messages (string and array
/// content, text without escapes), tool results, a name.
fn session(k: usize) -> String {
    let mut s = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"s{k:07}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}}\n"
    );
    let mut parent = String::from("null");
    for i in 0..LINES {
        let id = format!("{:08x}", k * LINES + i);
        let body = match i % 4 {
            0 => format!(
                "{{\"role\":\"user\",\"content\":\"question {i} of session {k}\",\"timestamp\":{}}}",
                1_735_776_000_000u64 + i as u64
            ),
            1 => format!(
                "{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"answer {i}\"}},{{\"type\":\"toolCall\",\"id\":\"c{i}\",\"arguments\":{{\"path\":\"/p/f{i}.rs\"}}}}]}}"
            ),
            2 => format!(
                "{{\"role\":\"toolResult\",\"toolCallId\":\"c{i}\",\"content\":[{{\"type\":\"text\",\"text\":\"result {i} ok\"}}]}}"
            ),
            _ => format!(
                "{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"more {i}\"}},{{\"type\":\"image\",\"data\":\"QUJD\"}}]}}"
            ),
        };
        s.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2025-01-02T00:00:00.000Z\",\"message\":{body}}}\n"
        ));
        parent = format!("\"{id}\"");
    }
    s.push_str("{\"type\":\"session_info\",\"name\":\"a name\"}\n");
    s
}

#[test]
fn listing_again_allocates_per_file_not_per_line() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let files: Vec<_> = (0..40)
        .map(|k| {
            let p = dir.path().join(format!("2025-01-01T00-00-00-000Z_{k:04}.jsonl"));
            std::fs::write(&p, session(k)).expect("write");
            p
        })
        .collect();
    // One thread, one scratch, read into its buffer: the builder alone.
    for mode in [ReadMode::Read, ReadMode::Mmap] {
        let mut scratch = Scratch::new();
        let run = |scratch: &mut Scratch| {
            for p in &files {
                let s = read_session_info(p, mode, scratch).expect("a session");
                assert_eq!(s.message_count, LINES as u64);
            }
        };
        run(&mut scratch);
        let n = allocations(|| run(&mut scratch));
        let per_file = n as f64 / files.len() as f64;
        eprintln!("{mode:?}: {per_file} allocations per file");
        // The result: path, id, cwd, name, first message, all text, the header's parse
        // (about 15); a per-line allocation would add 400.
        assert!(per_file <= 40.0, "{mode:?}: {per_file} allocations per file");
    }
    // The whole listing (rayon, candidates, sort): warm once, then count.
    let list = || {
        let l = list_dir(dir.path(), &mut ListOptions::default()).expect("not cancelled");
        assert_eq!(l.sessions.len(), files.len());
    };
    list();
    let n = allocations(list);
    let per_file = n as f64 / files.len() as f64;
    eprintln!("list_dir: {per_file} allocations per file");
    assert!(per_file <= 60.0, "list_dir: {per_file} allocations per file");
}

#[test]
fn opening_again_allocates_per_chunk_not_per_line() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = (0..5).map(session).collect::<String>().into_bytes();
    let lines = bytes.iter().filter(|&&b| b == b'\n').count();
    let open = || {
        let source = pi_session::Source::from_bytes(bytes.clone());
        pi_session::Session::from_source(source, pi_session::OpenOptions::default()).expect("a session")
    };
    assert_eq!(open().index().len(), lines);
    let n = allocations(|| {
        let again = open();
        assert_eq!(again.index().len(), lines);
    });
    eprintln!("open: {n} allocations for {lines} lines");
    // The copy of the bytes, the records' vectors (grown by doubling), the parent links,
    // byId, the state's maps and rayon's bookkeeping (33 when written); ids of 8 bytes stay
    // inline. A per-line allocation would add 2,000. (Through the public API, so that the
    // test needs no `internals` feature.)
    assert!(n <= 64, "{n} allocations to open {lines} lines");
}

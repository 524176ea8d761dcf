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
/// Bytes live now, and the most live at once since [`peak_from_now`].
static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

fn grow(n: usize) {
    let now = LIVE.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: forwards to the system allocator; the counter has no effect on the memory.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        grow(l.size());
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as u64, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // Counted as the new block coming before the old one goes (the worst case).
        grow(n);
        LIVE.fetch_sub(l.size() as u64, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One test at a time: the counter is process-wide.
static TURN: Mutex<()> = Mutex::new(());

/// Reset the peak to what is live now; returns that.
fn peak_from_now() -> u64 {
    let now = LIVE.load(Ordering::SeqCst);
    PEAK.store(now, Ordering::SeqCst);
    now
}

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
    let count = |k: usize| {
        let bytes = (0..k).map(session).collect::<String>().into_bytes();
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
        (n, lines)
    };
    let (few, few_lines) = count(5);
    let (many, many_lines) = count(20);
    // The copy of the bytes, the records' runs, the parent links, byId (256 shards, a
    // table each), the state's maps and rayon's bookkeeping; ids of 8 bytes stay inline.
    // A per-line allocation would add one for each of the extra lines. (Through the public
    // API, so that the test needs no `internals` feature.)
    assert!(few <= 400, "{few} allocations to open {few_lines} lines");
    let extra = many.saturating_sub(few);
    assert!(
        extra * 50 < (many_lines - few_lines) as u64,
        "{extra} more allocations for {} more lines",
        many_lines - few_lines
    );
}

/// A header and `n` lines of `{}`: entries without type, id or parent.
fn tiny(n: usize) -> Vec<u8> {
    let mut b = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n".to_vec();
    for _ in 0..n {
        b.extend_from_slice(b"{}\n");
    }
    b
}

#[test]
fn tiny_entries_cost_tens_of_bytes_each() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let n = 100_000;
    let bytes = tiny(n);
    let base = peak_from_now();
    let s = pi_session::Session::from_bytes(bytes.clone()).expect("a session");
    let kept = LIVE.load(Ordering::SeqCst) - base - bytes.len() as u64;
    let peak = PEAK.load(Ordering::SeqCst) - base - bytes.len() as u64;
    // What check does besides: the walks, the context, the tree.
    let before_walks = peak_from_now();
    let _ = s.branch_path(None).expect("branch").len();
    let _ = s.context(s.leaf()).expect("context").messages.len();
    let _ = s.tree().expect("tree").roots.len();
    let walks = PEAK.load(Ordering::SeqCst) - before_walks;
    let per = |b: u64| b as f64 / n as f64;
    eprintln!(
        "{n} tiny entries: {:.1} bytes each kept, {:.1} at the peak of opening, {:.1} more for branch, context and tree",
        per(kept),
        per(peak),
        per(walks)
    );
    // At the review's commit: records of 96 bytes with two 24-byte keys each, `byId`
    // sized for every entry (~130 bytes kept). Now: a 32-byte record and pi's entry list.
    assert!(per(kept) < 40.0, "{:.1} bytes per entry kept", per(kept));
    assert!(per(peak) < 80.0, "{:.1} bytes per entry at the peak", per(peak));
    assert!(per(walks) < 80.0, "{:.1} bytes per entry for the walks", per(walks));
    drop(s);
}

/// `check`'s work on a session of small entries (100-600 byte lines, where the index's
/// memory per entry weighs most against the file): under 5% of the file at its peak.
#[test]
fn checking_small_entries_stays_under_a_twentieth_of_the_file() {
    use pi_session::generator::{Mix, SessionSpec, write_session};
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let mut text = Vec::new();
    let spec = SessionSpec {
        mix: Mix::SmallEntries,
        ..SessionSpec::new(11, 64 << 20)
    };
    write_session(&spec, &mut text).expect("generate");
    let size = text.len() as u64;
    let base = peak_from_now();
    let s = pi_session::Session::from_bytes(text).expect("a session");
    let _ = s.branch_path(None).expect("branch").len();
    let _ = s.context(s.leaf()).expect("context").messages.len();
    let _ = s.tree_root_count().expect("tree");
    let _ = s.session_name();
    // The text was allocated before `base` and moves into the session uncopied.
    let peak = PEAK.load(Ordering::SeqCst) - base;
    let n = s.entries_len() as u64;
    eprintln!(
        "{n} small entries in {size} bytes: peak heap {peak} ({:.2}% of the file, {:.1} bytes an entry)",
        100.0 * peak as f64 / size as f64,
        peak as f64 / n as f64
    );
    // 5% of the file, and a little for what does not grow with it (the 256 shards of
    // `byId`, a batch of hashed ids, the workers' runs in flight): on 1 GiB of the same
    // shape the peak is 4.5% (`benches/aids/profile_heap.rs`).
    assert!(
        peak < size / 20 + (256 << 10),
        "{peak} bytes of heap for {size} bytes of file"
    );
    assert!(peak < 24 * n, "{peak} bytes of heap for {n} entries");
    drop(s);
}

/// A writer that only counts.
struct Count(u64);
impl std::io::Write for Count {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn chain(n: usize) -> String {
    let mut text = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n",
    );
    let mut parent = "null".to_string();
    for i in 0..n {
        text.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{i:08x}\",\"parentId\":{parent},\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"m\",\"timestamp\":1}}}}\n"
        ));
        parent = format!("\"{i:08x}\"");
    }
    text
}

/// The peak heap of opening `p`, of dumping it, and the dump's size.
fn dump_heap(p: &std::path::Path, compact: bool) -> (u64, u64, u64) {
    let opts = pi_session::dump::DumpOptions {
        open: pi_session::OpenOptions {
            read_mode: ReadMode::Read,
            chunk: None,
            release_pages: false,
            v1_ids: Default::default(),
        },
        compact,
        ..Default::default()
    };
    let base = peak_from_now();
    let s = pi_session::Session::open_with(p, opts.open).expect("opens");
    let open_peak = PEAK.load(Ordering::SeqCst) - base;
    drop(s);
    let mut out = Count(0);
    let base = peak_from_now();
    pi_session::dump::dump(p, &opts, &mut out).expect("dump");
    let dump_peak = PEAK.load(Ordering::SeqCst) - base;
    (open_peak, dump_peak, out.0)
}

#[test]
fn dump_streams_its_report() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    // The nested, indented tree of a chain is quadratic: 4,000 entries print 257 MB.
    let p = dir.path().join("deep.jsonl");
    std::fs::write(&p, chain(4000)).expect("write");
    let (open_peak, dump_peak, out) = dump_heap(&p, false);
    eprintln!("dump of a chain of 4000: {out} bytes out, peak heap {dump_peak} (open alone {open_peak})");
    assert!(out > 200_000_000, "{out} bytes");
    assert!(
        dump_peak < out / 50,
        "{dump_peak} bytes at the peak for {out} bytes out"
    );
    // What the report costs beyond the open session, per entry: it was a whole value
    // before (~900 bytes an entry); now ids, messages and tree nodes are written one at a
    // time, beside the tree's position lists and a 1.25 MiB output buffer.
    let n = 50_000;
    let p = dir.path().join("long.jsonl");
    std::fs::write(&p, chain(n)).expect("write");
    let (open_peak, dump_peak, out) = dump_heap(&p, true);
    let extra = dump_peak.saturating_sub(open_peak);
    eprintln!("dump --compact of a chain of {n}: {out} bytes out, peak heap {dump_peak} (open alone {open_peak})");
    let bound = (3 << 19) + 100 * n as u64;
    assert!(extra < bound, "{extra} bytes over the open session (bound {bound})");
}

/// The context of a session whose current branch holds nearly all of its bytes (images,
/// big tool outputs) is built without decoding a message and in memory independent of
/// them; `context --json` of it streams in windows.
#[test]
fn context_of_an_image_heavy_session_costs_the_walk() {
    use pi_session::generator::{Mix, SessionSpec, write_session};
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let mut text = Vec::new();
    let spec = SessionSpec {
        mix: Mix::ImageHeavy,
        ..SessionSpec::new(7, 96 << 20)
    };
    write_session(&spec, &mut text).expect("generate");
    let size = text.len() as u64;
    let s = pi_session::Session::from_bytes(text).expect("a session");
    let decoded = s.decoded_count();
    let base = peak_from_now();
    let ctx = s.context(s.leaf()).expect("context");
    let build_peak = PEAK.load(Ordering::SeqCst) - base;
    let source: u64 = ctx.messages.iter().map(|m| m.span.len).sum();
    // Only the settings' entries (thinking level, model) are decoded to build it.
    let build_decoded = s.decoded_count() - decoded;
    eprintln!(
        "{} messages from {source} of {size} bytes: build decoded {build_decoded} entries, peak heap {build_peak}",
        ctx.messages.len()
    );
    assert!(source > size / 2, "the shape puts most bytes in the context");
    assert!(
        build_decoded <= 2,
        "{build_decoded} entries decoded to build the context"
    );
    assert!(
        build_peak < size / 200,
        "{build_peak} bytes to build the context of {size}"
    );
    let base = peak_from_now();
    let mut out = Count(0);
    s.write_context_json(&ctx, &mut out).expect("json");
    let json_peak = PEAK.load(Ordering::SeqCst) - base;
    eprintln!("context --json: {} bytes out, peak heap {json_peak}", out.0);
    assert!(out.0 > source / 2);
    // Windows of 32 MiB of source, decoded and written in parallel: about one window's
    // output, never the whole context (94 MB here; three times that as one value).
    assert!(json_peak < 2 * (32 << 20), "{json_peak} bytes at the peak");
}

/// A search of one long line that matches everywhere (issue #35 item 6: `search -c a` on a
/// 300 MB line took 10.5 GB, a range per match): the hit keeps the line and its first
/// [`MATCHES_KEPT`] matches, and finding the session's name and id for it copies no
/// message text (`allMessagesText`). The heap holds the file (a small one is read, not
/// mapped), the session's first message (pi's `firstMessage`) and the hit's line: three
/// times the line, where a range per match took 16 bytes per byte.
#[test]
fn searching_a_line_that_matches_everywhere_keeps_the_line_not_every_match() {
    use pi_session::search::{MATCHES_KEPT, Pattern, Query, SearchOptions, search_paths};
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("long.jsonl");
    let n = 4 << 20;
    let text = "a".repeat(n);
    std::fs::write(
        &p,
        format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}}\n\
             {{\"type\":\"message\",\"id\":\"m\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\",\"timestamp\":1}}}}\n"
        ),
    )
    .expect("write");
    let q = Query::new(Pattern::new("a").compile().expect("pattern"));
    let base = peak_from_now();
    let sessions =
        pi_session::search::sessions_in(std::slice::from_ref(&p), None, ReadMode::Mmap, None).expect("listed");
    assert_eq!(sessions.sessions.len(), 1);
    let paths = vec![p.clone()];
    let mut hits = Vec::new();
    search_paths(&paths, &q, &mut SearchOptions::default(), |f| {
        hits.extend(f.result.expect("searched"));
        std::ops::ControlFlow::Continue(())
    })
    .expect("search");
    let peak = PEAK.load(Ordering::SeqCst) - base;
    let line = &hits[0].lines[0];
    assert_eq!((hits.len(), hits[0].lines.len(), line.text.len()), (1, 1, n));
    assert_eq!(line.matches.len(), MATCHES_KEPT);
    assert!(line.more_matches);
    assert!(
        peak < 3 * n as u64 + (1 << 20),
        "peak heap {peak} bytes for a line of {n}"
    );
}

/// A warm listing that finds nothing changed writes nothing and builds no new entry
/// (issue #35 item 6: a warm `ls` over 10^5 empty files took 194 MB, 58 MB without the
/// cache, building every entry of the next cache to find it would be the same).
#[test]
fn a_warm_listing_that_changed_nothing_builds_nothing() {
    use pi_session::listing::{ListOptions, ListingCache, list_dir};
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().join("s");
    std::fs::create_dir(&folder).expect("mkdir");
    let n = 4000;
    for k in 0..n {
        // Empty files (not sessions, but remembered as such) and small sessions.
        let body = if k % 2 == 0 {
            String::new()
        } else {
            session(k).lines().take(3).collect::<Vec<_>>().join("\n") + "\n"
        };
        std::fs::write(folder.join(format!("{k:05}.jsonl")), body).expect("write");
    }
    let cache = ListingCache::at(dir.path().join("cache")).with_racy_window(std::time::Duration::ZERO);
    let list = || {
        let mut o = ListOptions {
            cache: Some(cache.clone()),
            ..ListOptions::default()
        };
        list_dir(&folder, &mut o).expect("listed")
    };
    let cold = list();
    assert_eq!(cold.sessions.len(), n / 2);
    let base = peak_from_now();
    let warm = list();
    let peak = PEAK.load(Ordering::SeqCst) - base;
    assert_eq!(warm.sessions.len(), n / 2);
    assert!(warm.cache.as_ref().is_some_and(|r| !r.written), "{:?}", warm.cache);
    // The loaded cache's entries (about 400 bytes each), the candidates and the answers
    // (1,400 bytes a file here); building the next cache's entries to compare them
    // added 600 more.
    let per_file = peak / n as u64;
    assert!(
        per_file < 1700,
        "{per_file} bytes per file at the peak of a warm listing"
    );
}

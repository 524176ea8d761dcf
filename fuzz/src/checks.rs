//! Checks shared by the fuzz targets and by the main crate's `tests/it/crashes.rs` (which
//! includes this file with `#[path]`), so that a stored crash is replayed through exactly
//! what found it. Depends on `pi_session` and `std` only.
//!
//! Everything here must terminate and must not panic on any input, except through the
//! `assert!`s, which state properties of pi-session's answers.

use pi_session::EntryRec;
use pi_session::dump::{DumpOptions, LeafChoice, TreeMode};
use pi_session::{EntryPos, Key, Session};
use std::collections::HashMap;
use std::path::Path;

/// How many nodes a preorder walk of the tree may visit before the tree is considered
/// too big to build (see [`tree_visits`]).
pub const MAX_TREE_VISITS: u64 = 1 << 16;

/// Upper bound on the entries whose typed view is decoded one by one.
const MAX_ENTRY_VIEWS: usize = 50_000;

/// Whether [`exercise`] should skip `tree()`, `tree_nested()`, `tree_flat()` and the dump
/// when [`tree_visits`] exceeds [`MAX_TREE_VISITS`].
///
/// This is the fuzzing workaround for the known exponential tree (see `fuzz/README.md`):
/// duplicate ids make pi's tree a DAG whose walk is exponential in the number of entries.
/// Set `PI_FUZZ_TREE_GUARD=0` to run the tree on every input (and find it again).
/// `tests/it/crashes.rs` turns it off with [`set_tree_guard`] so that a stored exponential
/// tree is replayed for real.
pub fn tree_guard() -> bool {
    match TREE_GUARD.load(std::sync::atomic::Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => std::env::var_os("PI_FUZZ_TREE_GUARD").is_none_or(|v| v != "0"),
    }
}

static TREE_GUARD: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Force the tree guard on or off (instead of reading `PI_FUZZ_TREE_GUARD`).
pub fn set_tree_guard(on: bool) {
    TREE_GUARD.store(if on { 1 } else { 2 }, std::sync::atomic::Ordering::Relaxed);
}

/// The number of nodes pi's `getTree()` walk visits (one per root-to-node path), computed
/// from the public index alone, saturating; 0 when a cycle is reachable from a root (then
/// `tree()` reports the cycle before walking).
pub fn tree_visits(s: &Session) -> u64 {
    let mut roots = Vec::new();
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for &p in s.entries() {
        let e = s.record(p);
        let Some(node) = s.entry_by_id(e.id) else {
            // Every listed entry's id is in byId; if not, tree() itself will say.
            return 0;
        };
        if e.parent.is_null() || e.parent == e.id {
            roots.push(node.0);
        } else if let Some(parent) = s.entry_by_id(e.parent) {
            children.entry(parent.0).or_default().push(node.0);
        } else {
            roots.push(node.0);
        }
    }
    // paths(n) = 1 + sum(paths(child)); iterative post-order with a cycle guard.
    let mut memo: HashMap<u32, u64> = HashMap::new();
    let mut on_stack: HashMap<u32, bool> = HashMap::new();
    let mut total = 0u64;
    for &r in &roots {
        let mut stack: Vec<(u32, usize)> = vec![(r, 0)];
        if memo.contains_key(&r) {
            stack.clear();
        } else {
            on_stack.insert(r, true);
        }
        while let Some(&mut (n, ref mut i)) = stack.last_mut() {
            let kids = children.get(&n).map_or(&[][..], Vec::as_slice);
            if *i < kids.len() {
                let c = kids[*i];
                *i += 1;
                if memo.contains_key(&c) {
                    continue;
                }
                if on_stack.get(&c) == Some(&true) {
                    return 0;
                }
                on_stack.insert(c, true);
                stack.push((c, 0));
                continue;
            }
            let sum = kids.iter().fold(1u64, |acc, k| acc.saturating_add(memo[k]));
            memo.insert(n, sum);
            on_stack.insert(n, false);
            stack.pop();
        }
        total = total.saturating_add(memo[&r]);
    }
    total
}

/// Properties of a successful `branch_path`/`session_path`-like walk ending at `start`.
fn check_path(s: &Session, path: &[EntryPos], start: Option<EntryPos>) {
    let n = s.index().len();
    let mut seen = vec![false; n];
    for &p in path {
        assert!((p.0 as usize) < n, "path position out of range");
        assert!(!seen[p.0 as usize], "a successful walk repeats entry {p:?}");
        seen[p.0 as usize] = true;
    }
    assert_eq!(path.last().copied(), start, "the walk does not end where it started");
    for w in path.windows(2) {
        let child = s.record(w[1]);
        assert!(child.parent.truthy(), "walk continued past a falsy parentId");
        assert_eq!(
            s.entry_by_id(child.parent),
            Some(w[0]),
            "walk step is not byId[parentId]"
        );
    }
    if let Some(&root) = path.first() {
        let r = s.record(root);
        assert!(
            !r.parent.truthy() || s.entry_by_id(r.parent).is_none(),
            "walk stopped at an entry whose parent exists"
        );
    }
}

fn start_of(s: &Session, k: &Key) -> Option<EntryPos> {
    if k.truthy() { s.entry_by_id(k) } else { None }
}

fn touch_err(e: &pi_session::Error) {
    let _ = e.to_string();
    let _ = e.pi_text();
    let _ = e.line();
    let _ = format!("{:?}", e.kind());
}

fn touch<T>(r: pi_session::Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            touch_err(&e);
            None
        }
    }
}

/// Everything that depends on a leaf.
pub fn exercise_leaf(s: &Session, leaf: &Key) {
    // getBranch(leaf)
    let from = if matches!(leaf, Key::Null | Key::Undefined) {
        None
    } else {
        Some(leaf)
    };
    if let Some(path) = touch(s.branch_path(from)) {
        let start = start_of(s, from.unwrap_or(s.leaf()));
        check_path(s, &path, start);
    }
    // buildSessionPath(leaf)
    let spath = touch(s.session_path(leaf));
    if let Some(path) = &spath {
        if *leaf == Key::Null {
            assert!(path.is_empty(), "a null leaf gives a non-empty path");
        } else {
            let start = start_of(s, leaf).or_else(|| s.entries().last().copied());
            check_path(s, path, start);
        }
    }
    if let Some(entries) = touch(s.context_entries(leaf)) {
        let path = spath
            .as_ref()
            .expect("context_entries succeeded where session_path failed");
        for p in &entries {
            assert!(path.contains(p), "context entry {p:?} is not on the path");
        }
    }
    for tail in [pi_session::RetainedTail::Ignore, pi_session::RetainedTail::Honor] {
        if let Some(ctx) = touch(s.context_with(leaf, tail)) {
            let _ = format!("{:?}", ctx.thinking_level);
            // Decoded one by one, all at once, and written as JSON: the same messages.
            let one: Option<Vec<String>> = ctx
                .messages
                .iter()
                .map(|m| touch(s.message(m)).map(|v| v.stringify()))
                .collect();
            if let (Some(one), Some(all)) = (one, touch(s.context_values(&ctx))) {
                let all: Vec<String> = all.iter().map(|v| v.stringify()).collect();
                assert_eq!(one, all, "messages decoded one by one and all at once differ");
                let mut json = Vec::new();
                if touch(s.write_context_json(&ctx, &mut json)).is_some() {
                    let want = format!("{{\"messages\":[{}]", all.join(","));
                    assert!(
                        json.starts_with(want.as_bytes()),
                        "context JSON differs from its messages"
                    );
                }
            }
        }
    }
}

/// Run every read-only query of an open session; `leaves` are extra leaves to try with
/// `set_leaf_raw` (the file's own leaf, `null` and `undefined` are always tried).
pub fn exercise(s: &mut Session, leaves: &[Key]) {
    let n = s.index().len();
    for sk in s.skipped() {
        let _ = sk.reason.to_string();
    }
    let _ = touch(s.header());
    let _ = touch(s.session_name());
    let _ = s.migration();
    let _ = s.file_change();
    let own = s.leaf().clone();
    exercise_leaf(s, &own);
    let _ = touch(s.branch_items());

    // The tree, unless it is exponentially big (see tree_guard).
    let visits = tree_visits(s);
    if !tree_guard() || visits <= MAX_TREE_VISITS {
        match s.tree() {
            Ok(tree) => {
                let pre = tree.preorder();
                assert_eq!(
                    pre.len() as u64,
                    visits,
                    "preorder length differs from the number of root-to-node paths"
                );
                let _ = touch(s.tree_nested());
                if let Some(flat) = touch(s.tree_flat()) {
                    match &flat {
                        pi_session::Value::Array(a) => assert_eq!(a.len(), pre.len()),
                        _ => panic!("tree_flat is not an array"),
                    }
                }
            }
            Err(e) => {
                if let pi_session::ErrorKind::TreeExplodes { occurrences, .. } = e.kind() {
                    assert!(
                        *occurrences <= visits,
                        "tree refused for {occurrences} nodes, but it has {visits}"
                    );
                }
                touch_err(&e);
            }
        }
    }

    for i in 0..n.min(MAX_ENTRY_VIEWS) {
        let p = EntryPos(i as u32);
        let _ = touch(s.entry(p));
        let rec: EntryRec = s.record(p);
        let _ = s.label_entry(rec.id);
        if let Some(id) = rec.id.as_str() {
            let _ = touch(s.label(id));
        }
        let _ = s.line_of(p);
    }

    let mut tried = vec![Key::Null, Key::Undefined];
    tried.extend(leaves.iter().cloned());
    for k in &tried {
        s.set_leaf_raw(k.clone());
        exercise_leaf(s, k);
        let _ = touch(s.branch_items());
    }
    s.reset_leaf();
    let _ = touch(s.branch_items());
    if let Some(id) = own.as_str() {
        let id = id.to_string();
        let _ = touch(s.branch(&id));
        let _ = touch(s.branch_items());
    }
    s.set_leaf_raw(own);
}

/// Some leaves worth trying on a session: the ids of the first and last few entries.
pub fn some_leaves(s: &Session) -> Vec<Key> {
    let list = s.entries();
    let mut out = Vec::new();
    for &p in list.iter().take(3).chain(list.iter().rev().take(3)) {
        out.push(s.record(p).id.to_key());
    }
    out
}

/// Open `bytes` as a session and exercise it; returns whether it opened.
pub fn check_bytes(bytes: &[u8]) -> bool {
    match Session::from_bytes(bytes.to_vec()) {
        Ok(mut s) => {
            let leaves = some_leaves(&s);
            exercise(&mut s, &leaves);
            true
        }
        Err(e) => {
            touch_err(&e);
            false
        }
    }
}

/// Whether a dump of this session would build a tree of acceptable size.
pub fn dump_is_cheap(bytes: &[u8]) -> bool {
    if !tree_guard() {
        return true;
    }
    match Session::from_bytes(bytes.to_vec()) {
        Ok(s) => tree_visits(&s) <= MAX_TREE_VISITS,
        Err(_) => true,
    }
}

/// The oracle report of a file on disk, with a few option sets chosen by `sel`.
pub fn check_dump(path: &Path, sel: u8) {
    let leaf = match sel & 3 {
        0 => LeafChoice::Current,
        1 => LeafChoice::Navigate(Some("a".into())),
        2 => LeafChoice::Navigate(None),
        _ => LeafChoice::Raw(Some("zz-unknown".into())),
    };
    let tree = match (sel >> 2) & 3 {
        0 | 3 => TreeMode::Nested,
        1 => TreeMode::Flat,
        _ => TreeMode::None,
    };
    let opts = DumpOptions {
        leaf,
        tree,
        digest: if sel & 0x10 != 0 { Some(16) } else { None },
        compact: sel & 0x20 != 0,
        ..DumpOptions::default()
    };
    let r = pi_session::dump::with_report(path, &opts, |v| {
        let mut sink = std::io::sink();
        pi_session::dump::canonical::write_canonical(
            &mut sink,
            v,
            pi_session::dump::canonical::CanonOptions {
                indent: if opts.compact { 0 } else { 2 },
                digest_over: opts.digest,
            },
        )
        .map_err(pi_session::Error::from)?;
        Ok(())
    });
    if let Err(e) = r {
        touch_err(&e);
    }
}

/// Header lines the `open_session` target may put before its input.
pub const HEADERS: &[&str] = &[
    "",
    "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
    "{\"type\":\"session\",\"version\":2,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
    "{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
    "{\"type\":\"session\",\"version\":\"x\",\"id\":\"s\"}\n",
    "{\"type\":\"session\",\"version\":\"3\",\"id\":\"s\",\"cwd\":\"/w\"}\n",
    "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"parentSession\":\"/p.jsonl\"}\r\n",
    "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n",
];

/// The `open_session` input format: the low 3 bits of the first byte pick a header from
/// [`HEADERS`] to put before the rest; the other bits are options. Returns the session
/// bytes and the option bits.
pub fn decode_open_input(data: &[u8]) -> (Vec<u8>, u8) {
    let Some((&sel, rest)) = data.split_first() else {
        return (Vec::new(), 0);
    };
    let mut bytes = HEADERS[(sel & 7) as usize].as_bytes().to_vec();
    bytes.extend_from_slice(rest);
    (bytes, sel >> 3)
}

/// Known open bugs the targets step around while they are open, so that the rest of a run
/// stays useful (`PI_FUZZ_SKIP_KNOWN=0` turns this off). Each entry names the stored
/// reproducer in `corpus/crash/`. None is open now.
///
/// Closed (kept for the record; the predicate below is how it was skipped):
/// - `hang-control-char-in-string.jsonl`: `value::first_control` called itself instead of
///   searching when a run held a byte below 0x20, so any string with a raw control
///   character (a tab, a CR) looped forever in `scan::skip_string` /
///   `value::decode_string` ([`control_char_in_string`] skipped such inputs).
pub fn skip_known(data: &[u8]) -> bool {
    if std::env::var_os("PI_FUZZ_SKIP_KNOWN").is_some_and(|v| v == "0") {
        return false;
    }
    let _ = data;
    false
}

/// Whether a byte below 0x20 occurs inside a (possibly unterminated) JSON string, lexing
/// `"` and `\` only; over-approximates, which only makes the fuzzer skip more.
pub fn control_char_in_string(data: &[u8]) -> bool {
    let mut in_str = false;
    let mut i = 0;
    while i < data.len() {
        let c = data[i];
        if in_str {
            match c {
                b'\\' => i += 1,
                b'"' => in_str = false,
                0..=0x1F => return true,
                _ => {}
            }
        } else if c == b'"' {
            in_str = true;
        }
        i += 1;
    }
    false
}

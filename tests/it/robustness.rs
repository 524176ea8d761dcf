//! Nothing panics or hangs: deep chains, cycles, garbage, huge lines, files that change
//! under a mapping; and bodies off the path are never decoded.

use pi_session::{ErrorKind, Key, OpenOptions, ReadMode, Session};
use std::io::Write;

fn header() -> String {
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/x"}"#.to_string() + "\n"
}

fn msg(id: &str, parent: Option<&str>, role: &str, text: &str) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"{role}","content":"{text}"}}}}"#
    ) + "\n"
}

#[test]
fn session_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Session>();
}

#[test]
fn million_deep_chain_has_no_stack_overflow() {
    let n = 1_000_000;
    let mut text = header();
    text.reserve(n * 60);
    for i in 0..n {
        let parent = if i == 0 {
            "null".to_string()
        } else {
            format!("\"{:08x}\"", i - 1)
        };
        text.push_str(&format!(
            "{{\"type\":\"custom\",\"id\":\"{i:08x}\",\"parentId\":{parent},\"timestamp\":\"t\"}}\n"
        ));
    }
    let s = Session::from_bytes(text.into_bytes()).expect("opens");
    assert_eq!(s.entry_count(), n);
    assert_eq!(s.branch_path(None).expect("branch").len(), n);
    let tree = s.tree().expect("tree");
    assert_eq!(tree.roots.len(), 1);
    assert_eq!(tree.preorder().len(), n);
    // The nested tree is a million levels deep: build, write and drop it.
    let nested = s.tree_nested().expect("nested tree");
    let mut sink = std::io::sink();
    pi_session::dump::canonical::write_canonical(&mut sink, &nested, Default::default()).expect("writes");
    drop(nested);
    assert!(s.context(s.leaf()).expect("context").messages.is_empty());
}

#[test]
fn parent_cycles_are_reported_not_followed() {
    let mut text = header();
    text.push_str(&msg("a", Some("b"), "user", "a"));
    text.push_str(&msg("b", Some("a"), "user", "b"));
    let s = Session::from_bytes(text.into_bytes()).expect("opens");
    let err = s.branch_path(None).expect_err("cycle");
    assert!(matches!(err.kind(), ErrorKind::ParentCycle { .. }), "{err}");
    assert!(matches!(
        s.context(s.leaf()).expect_err("cycle").kind(),
        ErrorKind::ParentCycle { .. }
    ));
    // Neither entry is a root, so the tree (as in pi) is empty and finite.
    assert!(s.tree().expect("tree").roots.is_empty());
}

#[test]
fn self_parent_via_duplicate_ids_terminates() {
    let mut text = header();
    text.push_str(&msg("a", None, "user", "1"));
    text.push_str(&msg("b", Some("a"), "user", "2"));
    text.push_str(&msg("a", Some("b"), "user", "3"));
    let s = Session::from_bytes(text.into_bytes()).expect("opens");
    assert!(s.branch_path(None).is_err());
    let _ = s.tree();
}

#[test]
fn garbage_never_panics() {
    let mut seed = 0x2545F4914F6CDD1Du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let alphabet = b"{}[]\":,\\nu0123456789abcdeftrlsx \t\r\n\xff\xc3\xa9";
    for round in 0..3000 {
        let len = (next() % 300) as usize;
        let mut bytes: Vec<u8> = if round % 2 == 0 {
            header().into_bytes()
        } else {
            Vec::new()
        };
        for _ in 0..len {
            let r = next();
            bytes.push(if r % 3 == 0 {
                r as u8
            } else {
                alphabet[(r >> 8) as usize % alphabet.len()]
            });
        }
        if let Ok(s) = Session::from_bytes(bytes) {
            let leaf = s.leaf().clone();
            let _ = s.branch_path(None);
            let _ = s.context(&leaf);
            let _ = s.tree_nested();
            let _ = s.session_name();
        }
    }
}

#[test]
fn one_huge_line_opens() {
    // 64 MiB of base64-like text in one message (the 600 MB case is an ignored test).
    let mut text = header();
    let big = "QUJD".repeat(16 << 20);
    text.push_str(&msg("a", None, "user", &big));
    let s = Session::from_bytes(text.into_bytes()).expect("opens");
    let ctx = s.context(s.leaf()).expect("context");
    let m = s.message(&ctx.messages[0]).expect("decodes");
    let content = m.get("content").and_then(|c| c.as_js_str()).expect("string content");
    assert_eq!(content.as_bytes().len(), 64 << 20);
    // The string borrows from the file: same address range.
    let base = s.bytes().as_ptr() as usize;
    let p = content.as_bytes().as_ptr() as usize;
    assert!(p >= base && p < base + s.bytes().len(), "the big string was copied");
}

#[test]
#[ignore = "needs ~1.3 GB of memory and a few seconds; run with --ignored"]
fn six_hundred_megabyte_line_opens() {
    let mut text = header();
    let big = "QUJD".repeat(150 << 20);
    text.push_str(&msg("a", None, "user", &big));
    let s = Session::from_bytes(text.into_bytes()).expect("opens");
    assert_eq!(s.context(s.leaf()).expect("context").messages.len(), 1);
}

#[test]
fn entries_off_the_path_are_never_decoded() {
    // A main path of 5 messages and a side branch of 2,000 entries hanging off the root.
    let mut text = header();
    text.push_str(&msg("root", None, "user", "hi"));
    for i in 0..2000 {
        let parent = if i == 0 {
            "root".to_string()
        } else {
            format!("side{}", i - 1)
        };
        text.push_str(&msg(&format!("side{i}"), Some(&parent), "assistant", "side branch"));
    }
    let mut prev = "root".to_string();
    for i in 0..4 {
        let id = format!("main{i}");
        text.push_str(&msg(
            &id,
            Some(&prev),
            if i % 2 == 0 { "assistant" } else { "user" },
            "main",
        ));
        prev = id;
    }
    let s = Session::from_bytes(text.into_bytes()).expect("opens");
    let opened = s.decoded_count();
    let ctx = s.context(s.leaf()).expect("context");
    assert_eq!(ctx.messages.len(), 5);
    let used = s.decoded_count() - opened;
    // Settings pass plus projection: at most two decodes per path entry, none for the
    // 2,000 side entries.
    assert!(used <= 10, "{used} bodies decoded for a 5-entry path");
    assert_eq!(opened, 0, "opening decoded bodies");
}

#[test]
fn a_truncated_mapped_file_is_an_error_not_a_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.jsonl");
    let mut f = std::fs::File::create(&path).expect("create");
    f.write_all(header().as_bytes()).expect("write");
    let filler = "x".repeat(1 << 20);
    f.write_all(msg("a", None, "user", &filler).as_bytes()).expect("write");
    f.write_all(msg("b", Some("a"), "assistant", "ok").as_bytes())
        .expect("write");
    drop(f);
    let s = Session::open_with(
        &path,
        OpenOptions {
            read_mode: ReadMode::Mmap,
            chunk: None,
            release_pages: false,
            v1_ids: Default::default(),
        },
    )
    .expect("opens");
    assert!(s.is_mapped());
    // Another process rewrites the file (pi does this when it migrates a file).
    std::fs::File::create(&path).expect("truncate");
    let err = s.context(&Key::str("b")).expect_err("the file changed");
    assert!(matches!(err.kind(), ErrorKind::FileChanged { .. }), "{err}");
    // Reading mode is immune.
    std::fs::write(&path, header() + &msg("a", None, "user", "x")).expect("rewrite");
    let s = Session::open_with(
        &path,
        OpenOptions {
            read_mode: ReadMode::Read,
            chunk: None,
            release_pages: false,
            v1_ids: Default::default(),
        },
    )
    .expect("opens");
    std::fs::File::create(&path).expect("truncate");
    assert_eq!(s.context(s.leaf()).expect("context").messages.len(), 1);
}

#[test]
fn empty_and_non_session_files() {
    assert!(matches!(
        Session::from_bytes(b"\n\n".to_vec()).expect_err("blank").kind(),
        ErrorKind::NotASession { .. }
    ));
    assert!(matches!(
        Session::from_bytes(b"\r".to_vec()).expect_err("cr").kind(),
        ErrorKind::NotASession { .. }
    ));
    let bom = [b"\xEF\xBB\xBF".as_slice(), header().as_bytes()].concat();
    assert!(matches!(
        Session::from_bytes(bom).expect_err("bom").kind(),
        ErrorKind::NotASession { .. }
    ));
    let s = Session::from_bytes(Vec::new()).expect("a zero-byte file is a new session");
    assert_eq!(s.file_change(), pi_session::FileChange::Rewritten);
    assert!(s.entries().is_empty());
}

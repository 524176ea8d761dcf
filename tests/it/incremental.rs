//! The incremental paths: `Session::refresh` over appended bytes, and the in-memory
//! writer, which grows its session's bytes and indexes only the new line. Both must give
//! the answers of a session opened from the same bytes at once, and must say so when
//! they cannot.

use pi_session::{Entropy, OpenOptions, ReadMode, Session, Value, Writer};
use std::io::{Seek, SeekFrom, Write};

/// A label line rewritten in place under the mapping, then an append: `refresh` must not
/// take it for an append (before, it returned `Ok` with the labels after it not applied,
/// then an error): it opens the file again and answers as a fresh open.
#[test]
fn refresh_reports_a_state_update_that_failed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.jsonl");
    let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;
    let a = r#"{"type":"custom","customType":"x","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z"}"#;
    let label = r#"{"type":"label","id":"l1","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","targetId":"a","label":"one"}"#;
    // The last entry has no `\n` yet: when the rest arrives, pi's state is folded again
    // from the first line (the last entry may have been anything until its `\n`).
    let b = r#"{"type":"custom","customType":"x","id":"b","parentId":"l1","timestamp":"2026-01-01T00:00:03.000Z"}"#;
    std::fs::write(&path, format!("{header}\n{a}\n{label}\n{b}")).expect("write");
    let mut s = Session::open_with(
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
    assert_eq!(s.label_order().len(), 1);
    // Another process rewrites the label line in place (same length): `{` becomes `[`,
    // and the line is no longer JSON. Then the last line is finished, with a new label.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open for writing");
    f.seek(SeekFrom::Start((header.len() + 1 + a.len() + 1) as u64))
        .expect("seek");
    f.write_all(b"[").expect("corrupt");
    let label2 = r#"{"type":"label","id":"l2","parentId":"b","timestamp":"2026-01-01T00:00:04.000Z","targetId":"b","label":"two"}"#;
    f.seek(SeekFrom::End(0)).expect("seek");
    f.write_all(format!("\n{label2}\n").as_bytes()).expect("append");
    drop(f);
    let r = s.refresh().expect("the rewrite is seen, and the file opened again");
    assert!(r.rebuilt);
    let fresh = Session::open_with(
        &path,
        OpenOptions {
            read_mode: ReadMode::Mmap,
            chunk: None,
            release_pages: false,
            v1_ids: Default::default(),
        },
    )
    .expect("opens");
    assert_eq!(answers(&s), answers(&fresh));
}

fn msg(role: &str, text: &str) -> Value<'static> {
    Value::parse(format!(r#"{{"role":"{role}","content":"{text}"}}"#).as_bytes())
        .expect("json")
        .into_owned()
}

/// Everything a session answers, as text, for comparing two sessions.
pub(crate) fn answers(s: &Session) -> String {
    let mut out = String::new();
    let leaf = s.leaf().clone();
    out += &format!("header {:?}\nleaf {leaf:?}\ncount {}\n", s.header(), s.entry_count());
    out += &format!("index {:?}\n", s.index());
    out += &format!("entries {:?}\n", s.entries());
    out += &format!("labels {:?}\n", s.label_order());
    out += &format!("name {:?}\nchange {:?}\n", s.session_name(), s.file_change());
    out += &format!("branch {:?}\n", s.branch_path(None));
    out += &format!("context entries {:?}\n", s.context_entries(&leaf));
    out += &format!("context {:?}\n", s.context(&leaf));
    out += &format!("tree {:?}\nflat {:?}\n", s.tree_nested(), s.tree_flat());
    for &p in s.entries() {
        out += &format!("{p:?} {:?}\n", s.value(p));
    }
    out
}

/// The in-memory writer grows its session in place; after many appends of every kind it
/// must answer as a session opened from the same bytes at once.
#[test]
fn an_in_memory_writer_answers_as_its_bytes_opened_at_once() {
    let mut w = Writer::in_memory("/w", Entropy::seeded(3, 1_767_225_600_000));
    let mut ids: Vec<String> = Vec::new();
    for i in 0..400 {
        let id = match i % 10 {
            0 => w.append_model_change("anthropic", &format!("model-{i}")),
            1 => w.append_thinking_level_change(if i % 20 == 1 { "low" } else { "high" }),
            2 | 4 | 6 => w.append_message(msg("user", &format!("question {i}"))),
            3 | 5 => w.append_message(msg("assistant", &format!("answer {i}"))),
            7 => w.append_label_change(&ids[i - 3], if i % 30 == 7 { None } else { Some("mark") }),
            8 => w.append_session_info(&format!("name\n{i}")),
            _ => w.append_custom_entry("note", Some(msg("user", "data"))),
        }
        .expect("append");
        ids.push(id);
        if i % 97 == 96 {
            // Navigation: the next appends start a branch of their own.
            let back = ids[i / 2].clone();
            w.branch(&back).expect("branch");
        }
        if i % 50 == 49 {
            // After each append the leaf is the new entry, as on open.
            let whole = Session::from_bytes(w.session().bytes().to_vec()).expect("opens");
            let (grown, at_once) = (answers(w.session()), answers(&whole));
            assert_eq!(grown, at_once, "after {} appends", i + 1);
        }
    }
    let whole = Session::from_bytes(w.session().bytes().to_vec()).expect("opens");
    assert_eq!(answers(w.session()), answers(&whole));
    // The writer's lines are what pi's JSON.stringify writes: a rewrite (the public path
    // of the migration bytes) reproduces them.
    assert_eq!(
        pi_session::dump::rewrite_text(&whole).expect("rewrite"),
        w.session().bytes()
    );
    // A compaction builds the context over the grown session.
    w.append_compaction("summary", None, 1000.0, None, None, None)
        .expect("compaction");
    let whole = Session::from_bytes(w.session().bytes().to_vec()).expect("opens");
    assert_eq!(answers(w.session()), answers(&whole));
}

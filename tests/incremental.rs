//! The incremental paths: `Session::refresh` over appended bytes, and the in-memory
//! writer, which grows its session's bytes and indexes only the new line. Both must give
//! the answers of a session opened from the same bytes at once, and must say so when
//! they cannot.

use pi_session::{ErrorKind, OpenOptions, ReadMode, Session};
use std::io::{Seek, SeekFrom, Write};

/// A label line that no longer parses when the file changes under the mapping must make
/// `refresh` fail: before, `refresh` returned `Ok` with the labels after it not applied.
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
    let e = s.refresh().expect_err("the labels could not all be applied");
    assert!(matches!(e.kind(), ErrorKind::FileChanged { .. }), "{e}");
    assert_eq!(e.path(), Some(path.as_path()), "the error names the file");
}

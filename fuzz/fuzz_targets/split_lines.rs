//! `index::build_with(data, chunk)` against a naive `split(b'\n')`: same line count, kept
//! lines at the same line numbers and byte offsets with the same type and keys, skipped
//! lines at the same positions with the same reasons. The first byte picks the chunk size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_session::EntryType;
use pi_session::internals as index;
use pi_session::internals::{Line, scan_line};
use pi_session::Value;
use pi_session::{ByteOffset, LineNo, SkipReason};
use pi_session_fuzz::json::{entry_type_of, key_matches};

fuzz_target!(|data: &[u8]| {
    if pi_session_fuzz::checks::skip_known(data) {
        return;
    }
    let Some((&c, text)) = data.split_first() else {
        return;
    };
    let chunk = match c {
        255 => usize::MAX / 2,
        254 => 0,
        c => (c as usize % 96) + 1,
    };
    let idx = index::build_with(text, chunk);

    // Naive split: a trailing '\n' does not start a line; empty input has no lines.
    let mut lines: Vec<(usize, &[u8])> = Vec::new();
    let mut off = 0;
    for piece in text.split(|&b| b == b'\n') {
        lines.push((off, piece));
        off += piece.len() + 1;
    }
    if text.is_empty() || text.last() == Some(&b'\n') {
        lines.pop();
    }
    assert_eq!(idx.lines, lines.len() as u64, "line count");
    assert_eq!(
        idx.unterminated_tail,
        text.last().is_some_and(|&b| b != b'\n'),
        "unterminated_tail"
    );

    let mut kept = idx.iter(text);
    let mut skipped = idx.skipped.iter();
    for (i, &(off, line)) in lines.iter().enumerate() {
        let line_no = LineNo(i as u64 + 1);
        let offset = ByteOffset(off as u64);
        let reason = match scan_line(line) {
            Line::Blank => Some(SkipReason::Blank),
            Line::Falsy => Some(SkipReason::Falsy),
            Line::Malformed(e) => Some(SkipReason::Malformed {
                at: e.offset as u64,
                reason: e.reason,
            }),
            Line::NonObject | Line::Object(_) => None,
        };
        match reason {
            Some(reason) => {
                let s = skipped.next().expect("a skipped line is missing from the index");
                assert_eq!(
                    (s.line, s.offset, s.len, s.reason),
                    (line_no, offset, line.len() as u64, reason),
                    "skipped line"
                );
            }
            None => {
                let e = kept.next().expect("a kept line is missing from the index");
                assert_eq!(
                    (e.line, e.offset, e.len),
                    (line_no, offset, line.len() as u64),
                    "kept line position"
                );
                let v = Value::parse(line).expect("scan_line kept a line value::parse rejects");
                assert_eq!(e.ty, entry_type_of(&v), "entry type of line {line_no}");
                if e.ty == EntryType::NonObject {
                    assert!(e.id.is_undefined() && e.parent.is_undefined());
                } else {
                    assert!(key_matches(&e.id, v.get("id")), "id of line {line_no}: {:?}", e.id);
                    assert!(
                        key_matches(&e.parent, v.get("parentId")),
                        "parentId of line {line_no}: {:?}",
                        e.parent
                    );
                    assert_eq!(
                        e.id_is_string,
                        matches!(v.get("id"), Some(Value::String(_))),
                        "id_is_string"
                    );
                }
            }
        }
    }
    assert!(kept.next().is_none(), "the index has extra kept lines");
    assert!(skipped.next().is_none(), "the index has extra skipped lines");
});

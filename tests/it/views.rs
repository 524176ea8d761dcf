//! Typed views, raw bytes and the flattened branch view on a corpus file.

use pi_session::{Entry, EntryFields, Session};
use std::path::Path;

fn corpus(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(name)
}

#[test]
fn typed_views_follow_the_entry_type_and_raw_bytes_are_exact() {
    let path = corpus("valid/all-entry-types.jsonl");
    let s = Session::open(&path).expect("opens");
    let text = std::fs::read(&path).expect("read");
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    let mut seen = std::collections::BTreeSet::new();
    for (i, &p) in s.entries().iter().enumerate() {
        assert_eq!(s.raw(p), lines[i + 1], "raw bytes of entry {i}");
        let e = s.entry(p).expect("decodes");
        let name = match &e {
            Entry::Message(m) => {
                assert!(m.role().is_some());
                "message"
            }
            Entry::ModelChange(m) => {
                assert_eq!(m.provider(), Some("anthropic"));
                "model_change"
            }
            Entry::ThinkingLevelChange(t) => {
                assert!(t.thinking_level().is_some());
                "thinking_level_change"
            }
            Entry::Compaction(c) => {
                assert!(c.summary().is_some());
                "compaction"
            }
            Entry::BranchSummary(_) => "branch_summary",
            Entry::Custom(_) => "custom",
            Entry::CustomMessage(_) => "custom_message",
            Entry::Label(l) => {
                assert!(l.target_id().is_some());
                "label"
            }
            Entry::SessionInfo(_) => "session_info",
            Entry::ContextEdit(c) => {
                assert!(c.target_id().is_some());
                "context_edit"
            }
            Entry::Usage(u) => {
                assert!(u.id().is_some());
                "usage"
            }
            Entry::Unknown(_) => "unknown",
            _ => "other",
        };
        seen.insert(name);
    }
    for t in [
        "message",
        "model_change",
        "thinking_level_change",
        "label",
        "session_info",
        "context_edit",
    ] {
        assert!(seen.contains(t), "no {t} entry seen: {seen:?}");
    }
}

#[test]
fn flattened_branch_matches_the_branch_path() {
    let s = Session::open(corpus("valid/all-entry-types.jsonl")).expect("opens");
    let items = s.branch_items().expect("branch");
    let path = s.branch_path(None).expect("path");
    assert_eq!(items.len(), path.len());
    for (item, p) in items.iter().zip(&path) {
        assert_eq!(item.id.as_deref(), s.record(*p).id.as_str());
    }
    let user = items
        .iter()
        .find(|i| i.role.as_deref() == Some("user"))
        .expect("a user message");
    assert!(!user.text.is_empty());
    assert!(user.message_timestamp.is_some());
}

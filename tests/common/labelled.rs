//! The review's WEAK 12 file: a session of `n` messages, each followed by a label on it.
//! Shared by `tests/it/hostile_writes.rs` (what a branch of it keeps) and
//! `benches/write.rs` (what the branch costs).

use std::path::{Path, PathBuf};

/// Write `dir/b{n}.jsonl`: messages `m0000000`, ..., each followed by label `l0000000`, ...
/// on it (label text `L{i}`), one line of descent.
pub fn labelled(dir: &Path, n: usize) -> PathBuf {
    let f = dir.join(format!("b{n}.jsonl"));
    let mut text = String::with_capacity(n * 300);
    text += "{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n";
    let mut parent = "null".to_string();
    for i in 0..n {
        let (m, l) = (format!("m{i:07}"), format!("l{i:07}"));
        text += &format!(
            "{{\"type\":\"message\",\"id\":\"{m}\",\"parentId\":{parent},\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}}}\n"
        );
        text += &format!(
            "{{\"type\":\"label\",\"id\":\"{l}\",\"parentId\":\"{m}\",\"timestamp\":\"2025-01-01T00:00:02.000Z\",\"targetId\":\"{m}\",\"label\":\"L{i}\"}}\n"
        );
        parent = format!("\"{l}\"");
    }
    std::fs::write(&f, text).expect("write");
    f
}

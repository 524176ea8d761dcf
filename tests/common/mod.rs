//! Shared test helpers: one tester drives every reader path.
#![allow(dead_code)]

use pi_session::dump::{DumpOptions, LeafChoice, TreeMode};
use pi_session::{OpenOptions, ReadMode};
use serde_json::Value as J;
use std::collections::HashMap;
use std::path::Path;

/// The ways a file can be read; each must give the same answer.
#[derive(Clone, Copy, Debug)]
pub enum ReaderPath {
    /// mmap, default chunking.
    Mmap,
    /// read(), default chunking.
    Read,
    /// read(), tiny chunks indexed in parallel.
    ReadTinyChunks,
    /// mmap, odd chunk size.
    MmapOddChunks,
}

impl ReaderPath {
    pub const ALL: [ReaderPath; 4] = [
        ReaderPath::Mmap,
        ReaderPath::Read,
        ReaderPath::ReadTinyChunks,
        ReaderPath::MmapOddChunks,
    ];
    pub fn open_options(self) -> OpenOptions {
        match self {
            ReaderPath::Mmap => OpenOptions {
                read_mode: ReadMode::Mmap,
                chunk: None,
            },
            ReaderPath::Read => OpenOptions {
                read_mode: ReadMode::Read,
                chunk: None,
            },
            ReaderPath::ReadTinyChunks => OpenOptions {
                read_mode: ReadMode::Read,
                chunk: Some(7),
            },
            ReaderPath::MmapOddChunks => OpenOptions {
                read_mode: ReadMode::Mmap,
                chunk: Some(1013),
            },
        }
    }
}

/// `pi-session dump FILE [--leaf LEAF] [--tree flat|none] [--compact]` as text; `tree`
/// is `(flat, none)`.
pub fn dump_text(file: &Path, leaf: Option<&str>, tree: (bool, bool), compact: bool, path: ReaderPath) -> String {
    let mode = match tree {
        (_, true) => TreeMode::None,
        (true, false) => TreeMode::Flat,
        (false, false) => TreeMode::Nested,
    };
    dump_text_mode(file, leaf, mode, compact, None, path)
}

/// [`dump_text`] with `--digest N`.
pub fn dump_text_digest(
    file: &Path,
    leaf: Option<&str>,
    flat: bool,
    compact: bool,
    digest: Option<usize>,
    path: ReaderPath,
) -> String {
    let mode = if flat { TreeMode::Flat } else { TreeMode::Nested };
    dump_text_mode(file, leaf, mode, compact, digest, path)
}

fn dump_text_mode(
    file: &Path,
    leaf: Option<&str>,
    tree: TreeMode,
    compact: bool,
    digest: Option<usize>,
    path: ReaderPath,
) -> String {
    let opts = DumpOptions {
        leaf: match leaf {
            None => LeafChoice::Current,
            Some("null") => LeafChoice::Navigate(None),
            Some(l) => LeafChoice::Navigate(Some(l.to_string())),
        },
        tree,
        digest,
        compact,
        open: path.open_options(),
    };
    let mut out = Vec::new();
    pi_session::dump::dump(file, &opts, &mut out).unwrap_or_else(|e| panic!("dump {}: {e}", file.display()));
    String::from_utf8(out).expect("dump output is UTF-8")
}

/// Structural form of a dump for files with nondeterministic ids or headers: entry ids
/// renamed `#k` by first appearance, a fresh header's id/time/cwd replaced by their shape,
/// and hashes of rewritten text dropped. `None` when the text is not JSON serde can read.
pub fn normalize(text: &str) -> Option<J> {
    let mut v: J = serde_json::from_str(text).ok()?;
    let mut map: HashMap<String, String> = HashMap::new();
    if let Some(ids) = v.get("entryIds").and_then(J::as_array) {
        for id in ids {
            if let Some(s) = id.as_str() {
                let n = map.len();
                map.entry(s.to_string()).or_insert_with(|| format!("#{n}"));
            }
        }
    }
    // A fresh header (zero-byte file): keep only the shape of id, timestamp and cwd.
    let mut header_subst: Vec<(String, String)> = Vec::new();
    if let Some(h) = v.get_mut("header").and_then(J::as_object_mut) {
        let fresh = v_is_fresh(h);
        if fresh {
            for (k, shape) in [("id", "<uuid>"), ("timestamp", "<time>"), ("cwd", "<cwd>")] {
                if let Some(J::String(s)) = h.get(k) {
                    let ok = match k {
                        "id" => s.len() == 36 && s.as_bytes()[14] == b'7',
                        "timestamp" => s.len() == 24 && s.ends_with('Z'),
                        _ => true,
                    };
                    header_subst.push((s.clone(), if ok { shape.to_string() } else { format!("<bad {k}>") }));
                }
            }
        }
    }
    rename(&mut v, &map, &header_subst);
    if (!map.is_empty() || !header_subst.is_empty())
        && let Some(fc) = v.get_mut("fileChange").and_then(J::as_object_mut)
    {
        fc.remove("sha256After");
        fc.remove("bytesAfter");
        if let Some(J::String(t)) = fc.get_mut("textAfter") {
            let mut s = t.clone();
            for (from, to) in map
                .iter()
                .map(|(a, b)| (a.as_str(), b.as_str()))
                .chain(header_subst.iter().map(|(a, b)| (a.as_str(), b.as_str())))
            {
                s = s.replace(from, to);
            }
            *t = s;
        }
    }
    Some(v)
}

fn v_is_fresh(h: &serde_json::Map<String, J>) -> bool {
    // A header pi creates: exactly these keys.
    let mut keys: Vec<&str> = h.keys().map(String::as_str).collect();
    keys.sort();
    keys == ["cwd", "id", "timestamp", "type", "version"]
        && h.get("id")
            .and_then(J::as_str)
            .is_some_and(|s| s.len() == 36 && s.as_bytes()[14] == b'7')
}

fn rename(v: &mut J, map: &HashMap<String, String>, subst: &[(String, String)]) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            J::String(s) => {
                if let Some(r) = map.get(s.as_str()) {
                    *s = r.clone();
                } else if let Some((_, r)) = subst.iter().find(|(a, _)| a == s) {
                    *s = r.clone();
                }
            }
            J::Array(a) => stack.extend(a.iter_mut()),
            J::Object(o) => stack.extend(o.values_mut()),
            _ => {}
        }
    }
}

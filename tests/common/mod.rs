//! Shared test helpers: one tester drives every reader path.
#![allow(dead_code)]

use pi_session::dump::{DumpOptions, LeafChoice, TreeMode};
use pi_session::{EntryPos, Migration, OpenOptions, ReadMode, Session};
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
    /// A prefix of the file opened (mmap), the rest appended in pieces of growing size
    /// with `refresh` after each; every answer must equal the whole file's, then the dump
    /// is the whole file's (see [`check_incremental`]).
    Incremental,
}

impl ReaderPath {
    pub const ALL: [ReaderPath; 5] = [
        ReaderPath::Mmap,
        ReaderPath::Read,
        ReaderPath::ReadTinyChunks,
        ReaderPath::MmapOddChunks,
        ReaderPath::Incremental,
    ];
    pub fn open_options(self) -> OpenOptions {
        match self {
            ReaderPath::Mmap => OpenOptions {
                read_mode: ReadMode::Mmap,
                chunk: None,
                release_pages: false,
                v1_ids: Default::default(),
            },
            // The incremental path's report is the whole file's, once its answers matched.
            ReaderPath::Read | ReaderPath::Incremental => OpenOptions {
                read_mode: ReadMode::Read,
                chunk: None,
                release_pages: false,
                v1_ids: Default::default(),
            },
            ReaderPath::ReadTinyChunks => OpenOptions {
                read_mode: ReadMode::Read,
                chunk: Some(7),
                release_pages: false,
                v1_ids: Default::default(),
            },
            ReaderPath::MmapOddChunks => OpenOptions {
                read_mode: ReadMode::Mmap,
                chunk: Some(1013),
                release_pages: true,
                v1_ids: Default::default(),
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
    if let ReaderPath::Incremental = path
        && let Err(reason) = check_incremental(file, &opts.leaf)
    {
        eprintln!("incremental path skips {}: {reason}", file.display());
    }
    let mut out = Vec::new();
    pi_session::dump::dump(file, &opts, &mut out).unwrap_or_else(|e| panic!("dump {}: {e}", file.display()));
    String::from_utf8(out).expect("dump output is UTF-8")
}

/// The incremental reader path: copy a prefix of `file` (the header line and about a
/// third of the rest, up to the end of a line but without its `\n`) to a temporary file, open it mapped,
/// append the rest in pieces of 1, 2, 3, 5, 8, ... bytes (Fibonacci, starting over after
/// 4,181) with `refresh` after each, and compare every answer with the whole file opened
/// at once, after the same navigation. Panics on a difference. `Err(reason)` when the
/// file cannot take this path:
/// - opening the whole file fails (not a session, pi throws in its migration): there is
///   no session to refresh;
/// - the file is empty (a fresh header) or migrated from v1/v2 on open: `refresh`
///   refuses such sessions by design (they differ from their bytes; a v1 migration also
///   draws fresh random ids).
///
/// A last line without `\n` is indexed by `refresh` as opening indexes it (and read again
/// when more arrives): the pending byte count must be its length.
pub fn check_incremental(file: &Path, leaf: &LeafChoice) -> Result<(), String> {
    let bytes = std::fs::read(file).map_err(|e| format!("unreadable: {e}"))?;
    let read = OpenOptions {
        read_mode: ReadMode::Read,
        chunk: None,
        release_pages: false,
        v1_ids: Default::default(),
    };
    let whole = Session::open_with(file, read).map_err(|e| format!("opening fails ({})", e.pi_text()))?;
    if bytes.is_empty() {
        return Err("a zero-byte file opens as a fresh header, which refresh refuses".into());
    }
    if matches!(whole.migration(), Migration::FromV1 | Migration::FromV2) {
        return Err(format!(
            "migrated on open ({:?}), which refresh refuses: the session differs from its bytes",
            whole.migration()
        ));
    }
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let header = &whole.index().get(whole.bytes(), 0);
    let header_end = (header.offset.0 + header.len + 1) as usize;
    if header_end > end {
        return Err("the header is the last line and has no newline: nothing to append".into());
    }
    // Refresh indexes a last line without `\n` as an open does: the grown session answers
    // as the whole file opened at once.
    let mut whole = whole;
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join(file.file_name().expect("a file name"));
    // Up to a line's end but not its `\n`: the prefix's last line is whole but unterminated,
    // so the first refresh drops and re-reads it (and, when it was an entry, folds pi's
    // state again from the start); later pieces end anywhere, inside lines too.
    let third = header_end + (bytes.len() - header_end) / 3;
    let prefix = memchr_from(&bytes, third).unwrap_or(third);
    std::fs::write(&copy, &bytes[..prefix]).expect("write the prefix");
    let mmap = OpenOptions {
        read_mode: ReadMode::Mmap,
        chunk: None,
        release_pages: false,
        v1_ids: Default::default(),
    };
    let mut grown =
        Session::open_with(&copy, mmap).unwrap_or_else(|e| panic!("{}: the prefix does not open: {e}", file.display()));
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .open(&copy)
        .expect("open the copy");
    let (mut at, mut piece, mut next) = (prefix, 1usize, 2usize);
    let mut pending = 0;
    while at < bytes.len() {
        let to = (at + piece).min(bytes.len());
        std::io::Write::write_all(&mut out, &bytes[at..to]).expect("append a piece");
        at = to;
        let r = grown
            .refresh()
            .unwrap_or_else(|e| panic!("{}: refresh at byte {at}: {e}", file.display()));
        pending = r.pending_bytes;
        (piece, next) = if next > 4181 { (1, 2) } else { (next, piece + next) };
    }
    assert_eq!(
        pending as usize,
        bytes.len() - end,
        "{}: pending bytes after the last piece",
        file.display()
    );
    assert!(
        grown.bytes() == &bytes[..],
        "{}: the grown session holds other bytes",
        file.display()
    );
    let (a, b) = (answers(&mut grown, leaf), answers(&mut whole, leaf));
    if a != b {
        let (i, (x, y)) = a
            .lines()
            .zip(b.lines())
            .enumerate()
            .find(|(_, (x, y))| x != y)
            .unwrap_or((0, ("<shorter>", "<longer>")));
        let cut = |s: &str| s.chars().take(300).collect::<String>();
        panic!(
            "{}: the incremental path differs from opening the whole file, line {}:\n  grown: {}\n  whole: {}",
            file.display(),
            i + 1,
            cut(x),
            cut(y)
        );
    }
    Ok(())
}

/// The first `\n` at or after `from`.
fn memchr_from(bytes: &[u8], from: usize) -> Option<usize> {
    bytes[from..].iter().position(|&b| b == b'\n').map(|i| from + i)
}

/// Every answer of a session (after navigating as `leaf` says), one per line: values in
/// the canonical form (written without recursion: some corpus values nest thousands
/// deep), errors by pi's text, so that paths do not matter.
fn answers(s: &mut Session, leaf: &LeafChoice) -> String {
    use pi_session::dump::canonical::{CanonOptions, canonical_string};
    fn r<T>(r: pi_session::Result<T>, f: impl FnOnce(T) -> String) -> String {
        match r {
            Ok(v) => f(v),
            Err(e) => format!("error: {}", e.pi_text()),
        }
    }
    let c = |v: &pi_session::Value<'_>| canonical_string(v, CanonOptions::default());
    let d = |v: Vec<EntryPos>| format!("{v:?}");
    let mut out = String::new();
    let nav = match leaf {
        LeafChoice::Current | LeafChoice::Raw(_) => Ok(()),
        LeafChoice::Navigate(None) => {
            s.reset_leaf();
            Ok(())
        }
        LeafChoice::Navigate(Some(id)) => s.branch(id),
    };
    let s: &Session = s;
    let leaf = s.leaf().clone();
    out += &format!("navigate {}\nleaf {leaf:?}\n", r(nav, |()| "ok".into()));
    out += &format!("header {}\ncount {}\n", r(s.header(), |v| c(&v)), s.entry_count());
    out += &format!("index {:?}\n", s.index());
    out += &format!("entries {:?}\n", s.entries());
    out += &format!("labels {:?}\n", s.label_order());
    let name = r(s.session_name(), |n| format!("{n:?}"));
    out += &format!(
        "name {name}\nchange {:?}\nmigration {:?}\n",
        s.file_change(),
        s.migration()
    );
    out += &format!("branch {}\n", r(s.branch_path(None), d));
    out += &format!("session path {}\n", r(s.session_path(&leaf), d));
    out += &format!("context entries {}\n", r(s.context_entries(&leaf), d));
    let context = r(
        s.context(&leaf).and_then(|x| Ok((s.context_values(&x)?, x))),
        |(v, x)| {
            let messages: Vec<String> = v.iter().map(c).collect();
            let thinking = x.thinking_level.as_ref().map(c);
            let model = x.model.map(|m| c(&pi_session::Value::Object(m)));
            let sources: Vec<_> = x.messages.iter().map(|m| m.entry).collect();
            format!("{messages:?} {thinking:?} {model:?} {sources:?}")
        },
    );
    out += &format!("context {context}\n");
    out += &format!("tree {}\n", r(s.tree_nested(), |v| c(&v)));
    out += &format!("flat {}\n", r(s.tree_flat(), |v| c(&v)));
    out += &format!("items {}\n", r(s.branch_items(), |v| format!("{v:?}")));
    for i in 0..s.index().len() {
        let p = EntryPos(i as u32);
        out += &format!("{p:?} {}\n", r(s.value(p), |v| c(&v)));
    }
    out
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

/// Nothing a terminal acts on: no control character but newline and tab, no bidi override
/// (U+202A–U+202E).
pub fn terminal_safe(text: &str) -> bool {
    text.chars()
        .all(|c| c == '\n' || c == '\t' || !(c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)))
}

/// `text` without its `ESC [ digits/semicolons m` (SGR colour) sequences; any other escape
/// sequence fails the test.
pub fn strip_sgr(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('\u{1b}') {
        out.push_str(&rest[..i]);
        let seq = &rest[i + 1..];
        let end = seq.find('m').expect("an SGR sequence ends with m");
        assert!(seq.starts_with('[') && seq[1..end].bytes().all(|b| b.is_ascii_digit() || b == b';'));
        rest = &seq[end + 1..];
    }
    out.push_str(rest);
    out
}

/// A test that needs `what` (outside this repository, or a tool) found it absent: under
/// `CI` that fails the test (a test must not pass without checking anything); elsewhere it
/// is skipped, with a note.
pub fn absent(what: &Path) {
    assert!(
        std::env::var_os("CI").is_none(),
        "CI is set and {} is missing: the test would check nothing",
        what.display()
    );
    eprintln!("skipped: no {}", what.display());
}

/// The real pi sessions of `../shared/corpus/real` (never copied here), sorted; `None`
/// when the folder is absent ([`absent`]: a failure under `CI`).
pub fn real_sessions() -> Option<Vec<std::path::PathBuf>> {
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/real");
    let Ok(dir) = std::fs::read_dir(&real) else {
        absent(&real);
        return None;
    };
    let mut files: Vec<std::path::PathBuf> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| f.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    Some(files)
}

/// `pi-session SUBCOMMAND ARGS...` as the command-line suites run it: UTC, no colour, no
/// terminal width, pi's folder variables unset, the shared scratch listing cache.
pub fn run_cli(subcommand: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_pi-session"))
        .arg(subcommand)
        .args(args)
        .env("TZ", "UTC")
        .env("NO_COLOR", "1")
        .env_remove("COLUMNS")
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .env_remove("PIG_CODING_AGENT_DIR")
        .env_remove("PIG_CODING_AGENT_SESSION_DIR")
        .env(
            "PI_SESSION_CACHE_DIR",
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/listing-cache"),
        )
        .output()
        .expect("run pi-session")
}

/// Make a FIFO at `path` (mode 0600).
pub fn mkfifo(path: &std::path::Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
}

/// A new pseudo-terminal of 120 columns and 40 rows, output post-processing off (`\n`
/// stays `\n`): its controlling end and the terminal's.
pub fn pty() -> (rustix::fd::OwnedFd, rustix::fd::OwnedFd) {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    use rustix::termios::{OptionalActions, OutputModes, Winsize, tcgetattr, tcsetattr, tcsetwinsize};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("openpt");
    grantpt(&master).expect("grantpt");
    unlockpt(&master).expect("unlockpt");
    let name = ptsname(&master, Vec::new()).expect("ptsname");
    let slave = rustix::fs::open(
        name.as_c_str(),
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .expect("open the terminal");
    let mut t = tcgetattr(&slave).expect("tcgetattr");
    t.output_modes.remove(OutputModes::OPOST);
    tcsetattr(&slave, OptionalActions::Now, &t).expect("tcsetattr");
    let size = Winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    tcsetwinsize(&slave, size).expect("winsize");
    (master, slave)
}

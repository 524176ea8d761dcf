//! The oracle's report: everything pi computes for a file, as one canonical JSON object,
//! key for key what `node ../shared/oracle/dump.mjs` prints.
//!
//! This is the conformance surface: `pi-session dump FILE` must equal the oracle on every
//! file. Error texts are pi's own (`TypeError: ...`), and the oracle's guards against
//! pi's endless loops (`non-terminating: ...`) are reproduced from cycle detection.

pub mod canonical;

use crate::dump::canonical::{self as canon, CanonOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::index::{EntryPos, Key};
use crate::js::string::JsStr;
use crate::json::{Object, Value};
pub use crate::session::migrate::rewrite_text;
use crate::session::{FileChange, OpenOptions, Session, key_to_value};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::Path;

/// How the tree is printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TreeMode {
    /// Nested `{id, type, label, labelTimestamp, children}`.
    #[default]
    Nested,
    /// Preorder `[{depth, id, type, label, labelTimestamp}]`.
    Flat,
    /// Not printed (`null`).
    None,
}

/// Which leaf the report is computed for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum LeafChoice {
    /// The file's own leaf.
    #[default]
    Current,
    /// Navigate first, as pi's `/tree` does: `branch(id)`, or `resetLeaf()` for `null`.
    Navigate(Option<String>),
    /// Call pi's free functions with this leaf (`None`: a null leaf); unknown ids fall back
    /// to the last entry.
    Raw(Option<String>),
}

/// Options of [`dump`].
#[derive(Clone, Debug, Default)]
pub struct DumpOptions {
    /// Which leaf.
    pub leaf: LeafChoice,
    /// How to print the tree.
    pub tree: TreeMode,
    /// Digest strings longer than this (UTF-16 units).
    pub digest: Option<usize>,
    /// One line instead of 2-space indentation.
    pub compact: bool,
    /// How to read the file.
    pub open: OpenOptions,
}

fn obj() -> Object<'static> {
    Object::new()
}

fn set<'a>(o: &mut Object<'a>, k: &'static str, v: Value<'a>) {
    o.set(JsStr::from_str(k), v);
}

/// Build the report for a file and hand it to `sink` (the report borrows from the open
/// session, so it is passed to a closure rather than returned).
///
/// # Errors
/// Only I/O errors on reading the file itself (and what `sink` returns); everything pi
/// would fail on is part of the report.
pub fn with_report<T>(path: &Path, opts: &DumpOptions, sink: impl FnOnce(&Value<'_>) -> Result<T>) -> Result<T> {
    let opened = Session::open_with(path, opts.open);
    let size = std::fs::metadata(path)
        .map_err(|e| Error::from(e).with_path(path))?
        .len();
    let mut out = obj();
    for k in [
        "header",
        "entryIds",
        "entryCount",
        "leafId",
        "branchIds",
        "contextEntryIds",
        "context",
        "tree",
        "sessionName",
        "error",
    ] {
        set(&mut out, k, Value::Null);
    }
    let mut s = match opened {
        Ok(s) => s,
        Err(e) => {
            if let ErrorKind::Io { .. } = e.kind() {
                return Err(e);
            }
            // pi appends the missing newline before its migration throws.
            let tail_fixed = matches!(e.kind(), ErrorKind::PiThrows { .. })
                && std::fs::read(path)
                    .map(|b| b.last().is_some_and(|&c| c != b'\n'))
                    .unwrap_or(false);
            set(&mut out, "error", Value::string(e.pi_text()));
            let change = if tail_fixed {
                FileChange::AppendedNewline
            } else {
                FileChange::None
            };
            set(
                &mut out,
                "fileChange",
                Value::Object(file_change_value(change, size, None)),
            );
            set(&mut out, "errors", Value::Object(obj()));
            return sink(&Value::Object(out));
        }
    };
    if let Some((partial, _line)) = pi_rewrite_overflows(&s)? {
        // pi's own open throws: its JSON.stringify runs out of stack while rewriting.
        set(
            &mut out,
            "error",
            Value::str("RangeError: Maximum call stack size exceeded"),
        );
        set(
            &mut out,
            "fileChange",
            Value::Object(file_change_value(FileChange::Rewritten, size, Some(partial))),
        );
        set(&mut out, "errors", Value::Object(obj()));
        return sink(&Value::Object(out));
    }
    let mut errors = obj();
    let mut out2 = obj();
    for (k, v) in std::mem::take(&mut out).members {
        out2.set(k, v);
    }
    report(&mut s, opts, &mut out2, &mut errors, size)?;
    set(&mut out2, "errors", Value::Object(errors));
    sink(&Value::Object(out2))
}

fn report<'s>(
    s: &'s mut Session,
    opts: &DumpOptions,
    out: &mut Object<'s>,
    errors: &mut Object<'s>,
    size: u64,
) -> Result<()> {
    // Navigation first (mutable), then everything else borrows the session.
    let mut nav_ok = true;
    let mut raw_leaf: Option<Key> = None;
    match &opts.leaf {
        LeafChoice::Current => {}
        LeafChoice::Navigate(None) => s.reset_leaf(),
        LeafChoice::Navigate(Some(id)) => {
            if let Err(e) = s.branch(id) {
                set(errors, "leaf", Value::string(e.pi_text()));
                nav_ok = false;
            }
        }
        LeafChoice::Raw(id) => raw_leaf = Some(id.as_deref().map_or(Key::Null, Key::str)),
    }
    let s: &'s Session = s;
    set(out, "header", s.header()?);
    let ids: Vec<Value<'s>> = s
        .entries()
        .iter()
        .map(|&p| s.id_value(p).unwrap_or(Value::Null))
        .collect();
    set(out, "entryIds", Value::Array(ids));
    set(out, "entryCount", Value::Number(s.entry_count() as f64));
    let leaf_value = match &raw_leaf {
        Some(k) => key_to_value(k),
        None => leaf_value(s),
    };
    set(out, "leafId", leaf_value);
    if nav_ok {
        let leaf = raw_leaf.clone().unwrap_or_else(|| s.leaf().clone());
        let ids =
            |v: Vec<EntryPos>| Value::Array(v.into_iter().map(|p| s.id_value(p).unwrap_or(Value::Null)).collect());
        match s.branch_path(raw_leaf.as_ref()) {
            Ok(b) => set(out, "branchIds", ids(b)),
            Err(e) => set(errors, "branch", Value::string(e.pi_text())),
        }
        match s.context_entries(&leaf) {
            Ok(c) => set(out, "contextEntryIds", ids(c)),
            Err(e) => set(errors, "contextEntries", Value::string(e.pi_text())),
        }
        match s.context(&leaf) {
            Ok(c) => {
                let mut o = obj();
                set(&mut o, "messages", Value::Array(c.messages));
                if let Some(t) = c.thinking_level {
                    set(&mut o, "thinkingLevel", t);
                }
                set(&mut o, "model", c.model.map_or(Value::Null, Value::Object));
                set(out, "context", Value::Object(o));
            }
            Err(e) => set(errors, "context", Value::string(e.pi_text())),
        }
    }
    let tree = match opts.tree {
        TreeMode::None => Ok(Value::Null),
        TreeMode::Nested => s.tree_nested(),
        TreeMode::Flat => s.tree_flat(),
    };
    match tree {
        Ok(t) => set(out, "tree", t),
        Err(e) => set(errors, "tree", Value::string(e.pi_text())),
    }
    match s.session_name() {
        Ok(n) => set(out, "sessionName", n.map_or(Value::Null, Value::String)),
        Err(e) => set(errors, "sessionName", Value::string(e.pi_text())),
    }
    let change = s.file_change();
    let mut rewritten = if change == FileChange::Rewritten {
        Some(rewrite_text(s)?)
    } else {
        None
    };
    // A rewrite that reproduces the same bytes changes nothing (the oracle compares hashes).
    let mut change = change;
    if rewritten.as_deref() == Some(s.bytes()) {
        change = FileChange::None;
        rewritten = None;
    }
    set(
        out,
        "fileChange",
        Value::Object(file_change_value(change, size, rewritten)),
    );
    Ok(())
}

/// `getLeafId() ?? null` as a value.
fn leaf_value(s: &Session) -> Value<'_> {
    match s.leaf() {
        Key::Unique(_) => s
            .entry_by_id(s.leaf())
            .and_then(|p| s.id_value(p))
            .unwrap_or(Value::Null),
        k => key_to_value(k),
    }
}

/// How deep a value pi's `JSON.stringify` can write before V8 (Node 20, default stack)
/// throws `RangeError: Maximum call stack size exceeded`, measured with the oracle: an
/// entry nested 4,115 levels deep (the entry object is level 1) is rewritten, 4,116 is not.
/// This models V8's stack, so it is an approximation near the limit.
pub const PI_STRINGIFY_DEPTH_LIMIT: usize = 4115;

/// When pi's open would rewrite the file and one entry is nested too deeply for V8's
/// `JSON.stringify`, pi throws after writing the lines before it: those bytes, and the
/// line that fails.
fn pi_rewrite_overflows(s: &Session) -> Result<Option<(Vec<u8>, crate::index::LineNo)>> {
    if s.file_change() != FileChange::Rewritten || s.index().is_empty() {
        return Ok(None);
    }
    // The raw text's depth is a cheap upper bound; pi stringifies the decoded value, in
    // which duplicate keys have collapsed, so measure that when the bound is exceeded.
    let too_deep = |i: usize| {
        let p = EntryPos(i as u32);
        crate::json::walk::max_depth(s.raw(p)) > PI_STRINGIFY_DEPTH_LIMIT
            && s.value(p).is_ok_and(|v| value_depth(&v) > PI_STRINGIFY_DEPTH_LIMIT)
    };
    let Some(bad) = (0..s.index().len()).find(|&i| too_deep(i)) else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for i in 0..bad {
        crate::json::stringify::stringify_into(&mut out, &s.value(EntryPos(i as u32))?);
        out.push(b'\n');
    }
    Ok(Some((out, s.record(EntryPos(bad as u32)).line)))
}

/// The nesting depth of a decoded value (an object or array is 1), iteratively.
fn value_depth(v: &Value<'_>) -> usize {
    let mut max = 0;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(a) => {
                max = max.max(d);
                stack.extend(a.iter().map(|x| (x, d + 1)));
            }
            Value::Object(o) => {
                max = max.max(d);
                stack.extend(o.iter().map(|(_, x)| (x, d + 1)));
            }
            _ => {}
        }
    }
    max
}

fn file_change_value(change: FileChange, before: u64, rewritten: Option<Vec<u8>>) -> Object<'static> {
    let mut o = obj();
    set(&mut o, "kind", Value::str(change.as_str()));
    set(&mut o, "bytesBefore", Value::Number(before as f64));
    let after = match (&rewritten, change) {
        (Some(t), _) => t.len() as u64,
        (None, FileChange::AppendedNewline) => before + 1,
        _ => before,
    };
    set(&mut o, "bytesAfter", Value::Number(after as f64));
    if let Some(t) = rewritten {
        let hex: String = Sha256::digest(&t).iter().map(|b| format!("{b:02x}")).collect();
        set(&mut o, "sha256After", Value::string(hex));
        if t.len() <= 65536 {
            set(
                &mut o,
                "textAfter",
                Value::string(String::from_utf8_lossy(&t).into_owned()),
            );
        }
    }
    o
}

/// Write the report for `path` to `w` in the oracle's canonical form.
///
/// # Errors
/// I/O errors reading the file or writing the report.
pub fn dump<W: Write>(path: &Path, opts: &DumpOptions, w: &mut W) -> Result<()> {
    let copts = CanonOptions {
        indent: if opts.compact { 0 } else { 2 },
        digest_over: opts.digest,
    };
    with_report(path, opts, |v| {
        canon::write_canonical(w, v, copts)?;
        w.write_all(b"\n")?;
        Ok(())
    })
}

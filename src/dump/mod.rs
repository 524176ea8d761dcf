//! The oracle's report: everything pi computes for a file, as one canonical JSON object,
//! key for key what `node ../shared/oracle/dump.mjs` prints.
//!
//! This is the conformance surface: `pi-session dump FILE` must equal the oracle on every
//! file. Error texts are pi's own (`TypeError: ...`), and the oracle's guards against
//! pi's endless loops (`non-terminating: ...`) are reproduced from cycle detection.

pub mod canonical;
pub mod stream;

use crate::dump::canonical::{self as canon, CanonOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::index::{EntryPos, Key};
use crate::js::string::JsStr;
use crate::json::{Object, Value};
pub use crate::session::migrate::rewrite_text;
use crate::session::tree::Tree;
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
/// session, so it is passed to a closure rather than returned). [`dump`] writes the same
/// report without building it.
///
/// # Errors
/// Only I/O errors on reading the file itself (and what `sink` returns); everything pi
/// would fail on is part of the report.
pub fn with_report<T>(path: &Path, opts: &DumpOptions, sink: impl FnOnce(&Value<'_>) -> Result<T>) -> Result<T> {
    let (opened, size) = open_for_report(path, opts)?;
    let mut s = match early_report(path, opts, opened, size)? {
        Ok(s) => s,
        Err(out) => return sink(&Value::Object(out)),
    };
    let mut out = obj();
    for k in REPORT_KEYS {
        set(&mut out, k, Value::Null);
    }
    set(&mut out, "error", Value::Null);
    let mut errors = obj();
    report(&mut s, opts, &mut out, &mut errors, size)?;
    set(&mut out, "errors", Value::Object(errors));
    sink(&Value::Object(out))
}

/// The report's members before `error`, in the oracle's order (`null` until computed, and
/// all of them `null` when pi's open fails).
const REPORT_KEYS: [&str; 9] = [
    "header",
    "entryIds",
    "entryCount",
    "leafId",
    "branchIds",
    "contextEntryIds",
    "context",
    "tree",
    "sessionName",
];

/// The leaf the options ask for: navigate there (pi's `branch`/`resetLeaf`), or return
/// the raw leaf to report as is (`--leaf-raw`); `Err(pi's text)` when navigation failed.
fn navigate(s: &mut Session, opts: &DumpOptions) -> std::result::Result<Option<Key>, String> {
    match &opts.leaf {
        LeafChoice::Current => {}
        LeafChoice::Navigate(None) => s.reset_leaf(),
        LeafChoice::Navigate(Some(id)) => s.branch(id).map_err(|e| e.pi_text())?,
        LeafChoice::Raw(id) => return Ok(Some(id.as_deref().map_or(Key::Null, Key::str))),
    }
    Ok(None)
}

fn open_for_report(path: &Path, opts: &DumpOptions) -> Result<(Result<Session>, u64)> {
    let opened = Session::open_with(path, opts.open);
    let size = std::fs::metadata(path)
        .map_err(|e| Error::from(e).with_path(path))?
        .len();
    Ok((opened, size))
}

/// The whole report when pi's open fails (it is small then: `error`, `fileChange`, the
/// rest `null`), else the open session.
fn early_report(
    path: &Path,
    opts: &DumpOptions,
    opened: Result<Session>,
    size: u64,
) -> Result<std::result::Result<Session, Object<'static>>> {
    let failed = |error: String, change: FileChange, partial: Option<Vec<u8>>| {
        let mut out = obj();
        for k in REPORT_KEYS {
            set(&mut out, k, Value::Null);
        }
        set(&mut out, "error", Value::string(error));
        set(
            &mut out,
            "fileChange",
            Value::Object(file_change_value(change, size, partial)),
        );
        set(&mut out, "errors", Value::Object(obj()));
        out
    };
    // pi reads the whole file into lines before anything else: a line too long for a
    // JavaScript string fails the open first, whatever the file holds.
    let too_long = match &opened {
        Ok(s) => s.index().pi_open_throws,
        Err(e) if matches!(e.kind(), ErrorKind::Io { .. }) => None,
        Err(_) if crate::index::v8::exceeds_bound(size) => {
            let src =
                crate::source::Source::open(path, opts.open.read_mode).map_err(|e| Error::from(e).with_path(path))?;
            crate::index::v8::scan(src.bytes())
        }
        Err(_) => None,
    };
    if too_long.is_some() {
        return Ok(Err(failed(crate::index::v8::PI_MESSAGE.into(), FileChange::None, None)));
    }
    let s = match opened {
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
            let change = if tail_fixed {
                FileChange::AppendedNewline
            } else {
                FileChange::None
            };
            return Ok(Err(failed(e.pi_text(), change, None)));
        }
    };
    if let Some((partial, _line)) = pi_rewrite_overflows(&s)? {
        // pi's own open throws: its JSON.stringify runs out of stack while rewriting.
        return Ok(Err(failed(
            "RangeError: Maximum call stack size exceeded".into(),
            FileChange::Rewritten,
            Some(partial),
        )));
    }
    Ok(Ok(s))
}

fn report<'s>(
    s: &'s mut Session,
    opts: &DumpOptions,
    out: &mut Object<'s>,
    errors: &mut Object<'s>,
    size: u64,
) -> Result<()> {
    // Navigation first (mutable), then everything else borrows the session.
    let (nav_ok, raw_leaf) = match navigate(s, opts) {
        Ok(raw_leaf) => (true, raw_leaf),
        Err(e) => {
            set(errors, "leaf", Value::string(e));
            (false, None)
        }
    };
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
        None => s.leaf_id_value(),
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
        match s.context(&leaf).and_then(|c| Ok((s.context_values(&c)?, c))) {
            Ok((messages, c)) => {
                let mut o = obj();
                set(&mut o, "messages", Value::Array(messages));
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

/// What [`dump`] noticed while writing, for the caller to tell the user.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpNotes {
    /// Nodes on the longest root-to-leaf path of the printed tree (0 when none was
    /// printed). The nested form indents every node by its depth, so its size grows with
    /// the square of this: `--tree flat` prints the same in linear size.
    pub tree_depth: usize,
    /// Why the file holds no session header, when it holds none: it is no session
    /// ([`crate::ErrorKind::NotASession`]'s text), or it is empty (pi's open starts a new
    /// session in it, which the report shows). A command says so and answers no.
    pub no_header: Option<String>,
}

/// Depth beyond which the nested tree is worth a warning (see [`DumpNotes::tree_depth`]).
pub const DEEP_TREE: usize = 10_000;

/// Write the report for `path` to `w` in the oracle's canonical form, byte for byte what
/// [`with_report`] and [`canonical::write_canonical`] give, but streamed: each part is
/// written as it is computed (ids, context messages and tree nodes one at a time), so
/// memory stays proportional to the index, not to the output (the nested tree of a deep
/// chain is quadratic in size by its format). The context is computed twice (once to
/// learn whether pi's step fails, since `errors` comes after it, once to write it).
///
/// # Errors
/// I/O errors reading the file or writing the report; [`ErrorKind::FileChanged`] when
/// the file changed under a mapping while the report was written.
pub fn dump<W: Write>(path: &Path, opts: &DumpOptions, w: &mut W) -> Result<DumpNotes> {
    let copts = CanonOptions {
        indent: if opts.compact { 0 } else { 2 },
        digest_over: opts.digest,
    };
    let (opened, size) = open_for_report(path, opts)?;
    let not_a_session = match &opened {
        Err(e) => match e.kind() {
            ErrorKind::NotASession { why, .. } => Some((*why).to_string()),
            _ => None,
        },
        Ok(_) => None,
    };
    let mut s = match early_report(path, opts, opened, size)? {
        Ok(s) => s,
        Err(out) => {
            canon::write_canonical(w, &Value::Object(out), copts)?;
            w.write_all(b"\n")?;
            return Ok(DumpNotes {
                no_header: not_a_session,
                ..DumpNotes::default()
            });
        }
    };
    let mut st = stream::Stream::new(w, copts);
    let mut notes = stream_report(&mut s, opts, size, &mut st)?;
    if s.is_empty_file() {
        notes.no_header = Some(crate::error::NotASessionWhy::EMPTY.into());
    }
    st.finish()?;
    w.write_all(b"\n")?;
    // What was written came from one version of the file, or the dump fails (after the
    // fact: a reader of the stream is told by the error and the exit status).
    s.verify()?;
    Ok(notes)
}

/// The report of an open session, written to `st` in key order.
fn stream_report<W: Write>(
    s: &mut Session,
    opts: &DumpOptions,
    size: u64,
    st: &mut stream::Stream<'_, W>,
) -> Result<DumpNotes> {
    let mut errors: Vec<(&'static str, String)> = Vec::new();
    let (nav_ok, raw_leaf) = match navigate(s, opts) {
        Ok(raw_leaf) => (true, raw_leaf),
        Err(e) => {
            errors.push(("leaf", e));
            (false, None)
        }
    };
    let s: &Session = s;
    let leaf = raw_leaf.clone().unwrap_or_else(|| s.leaf().clone());
    // Everything that can fail first (small results and position lists), since `errors`
    // is written before most of it.
    let mut step = |name: &'static str, r: Result<Vec<EntryPos>>| match r {
        Ok(v) => Some(v),
        Err(e) => {
            errors.push((name, e.pi_text()));
            None
        }
    };
    let (branch, context_entries) = if nav_ok {
        (
            step("branch", s.branch_path(raw_leaf.as_ref())),
            step("contextEntries", s.context_entries(&leaf)),
        )
    } else {
        (None, None)
    };
    let context = if nav_ok {
        match s.context(&leaf) {
            Ok(c) => Some(c),
            Err(e) => {
                errors.push(("context", e.pi_text()));
                None
            }
        }
    } else {
        None
    };
    let tree = match opts.tree {
        TreeMode::None => None,
        TreeMode::Nested | TreeMode::Flat => match s.tree() {
            Ok(t) => Some(t),
            Err(e) => {
                errors.push(("tree", e.pi_text()));
                None
            }
        },
    };
    let name = match s.session_name() {
        Ok(n) => n.map_or(Value::Null, Value::String),
        Err(e) => {
            errors.push(("sessionName", e.pi_text()));
            Value::Null
        }
    };
    let mut change = s.file_change();
    let mut rewritten = if change == FileChange::Rewritten {
        Some(rewrite_text(s)?)
    } else {
        None
    };
    // A rewrite that reproduces the same bytes changes nothing (the oracle compares hashes).
    if rewritten.as_deref() == Some(s.bytes()) {
        change = FileChange::None;
        rewritten = None;
    }
    let ids = |st: &mut stream::Stream<'_, W>, ps: Option<&[EntryPos]>| -> Result<()> {
        let Some(ps) = ps else {
            return Ok(st.value(&Value::Null)?);
        };
        st.open(b'[')?;
        for &p in ps {
            st.value_item(&s.id_value(p).unwrap_or(Value::Null))?;
        }
        Ok(st.close(b']')?)
    };
    st.open(b'{')?;
    st.key("branchIds")?;
    ids(st, branch.as_deref())?;
    st.key("context")?;
    match context {
        None => st.value(&Value::Null)?,
        Some(c) => {
            st.open(b'{')?;
            st.key("messages")?;
            st.open(b'[')?;
            s.for_each_message(&c, &mut |m| Ok(st.value_item(&m)?))?;
            st.close(b']')?;
            st.member("model", &c.model.map_or(Value::Null, Value::Object))?;
            if let Some(t) = c.thinking_level {
                st.member("thinkingLevel", &t)?;
            }
            st.close(b'}')?;
        }
    }
    st.key("contextEntryIds")?;
    ids(st, context_entries.as_deref())?;
    st.member("entryCount", &Value::Number(s.entry_count() as f64))?;
    st.key("entryIds")?;
    ids(st, Some(s.entries()))?;
    st.member("error", &Value::Null)?;
    errors.sort_by(|a, b| a.0.cmp(b.0));
    let mut e = obj();
    for (k, v) in errors {
        set(&mut e, k, Value::string(v));
    }
    st.member("errors", &Value::Object(e))?;
    st.member("fileChange", &Value::Object(file_change_value(change, size, rewritten)))?;
    st.member("header", &s.header()?)?;
    let leaf_v = match &raw_leaf {
        Some(k) => key_to_value(k),
        None => s.leaf_id_value(),
    };
    st.member("leafId", &leaf_v)?;
    st.member("sessionName", &name)?;
    st.key("tree")?;
    let mut notes = DumpNotes::default();
    match (&tree, opts.tree) {
        (Some(t), TreeMode::Nested) => notes.tree_depth = stream_tree_nested(s, t, st)?,
        (Some(t), TreeMode::Flat) => notes.tree_depth = stream_tree_flat(s, t, st)?,
        _ => st.value(&Value::Null)?,
    }
    st.close(b'}')?;
    Ok(notes)
}

/// A tree node's members other than `children`, in key order.
fn node_members<'s>(s: &'s Session, node: EntryPos) -> Result<Vec<(JsStr<'s>, Value<'s>)>> {
    let mut m = s.node_value(node)?.members;
    m.sort_by(|a, b| a.0.cmp_utf16(&b.0));
    Ok(m)
}

/// The nested tree, node by node (a node's `children` come first in key order, so its own
/// members are written when it closes); returns the depth reached.
fn stream_tree_nested<W: Write>(s: &Session, tree: &Tree, st: &mut stream::Stream<'_, W>) -> Result<usize> {
    let mut depth = 0;
    let open_node = |st: &mut stream::Stream<'_, W>| -> Result<()> {
        st.open_item(b'{')?;
        st.key("children")?;
        Ok(st.open(b'[')?)
    };
    st.open(b'[')?;
    let mut stack: Vec<(EntryPos, usize)> = Vec::new();
    for &root in &tree.roots {
        open_node(st)?;
        stack.push((root, 0));
        while let Some(top) = stack.last_mut() {
            let kids = tree.children(top.0);
            if top.1 < kids.len() {
                let c = kids[top.1];
                top.1 += 1;
                open_node(st)?;
                stack.push((c, 0));
                continue;
            }
            depth = depth.max(stack.len());
            let (node, _) = stack.pop().expect("non-empty");
            st.close(b']')?;
            for (k, v) in node_members(s, node)? {
                st.key(k.to_str_lossy().as_ref())?;
                st.value(&v)?;
            }
            st.close(b'}')?;
        }
    }
    st.close(b']')?;
    Ok(depth)
}

/// The flat preorder tree, node by node; returns the depth reached.
fn stream_tree_flat<W: Write>(s: &Session, tree: &Tree, st: &mut stream::Stream<'_, W>) -> Result<usize> {
    let mut depth = 0;
    st.open(b'[')?;
    let mut stack: Vec<(usize, EntryPos)> = tree.roots.iter().rev().map(|&r| (0, r)).collect();
    while let Some((d, n)) = stack.pop() {
        depth = depth.max(d + 1);
        let mut o = s.node_value(n)?;
        o.set(JsStr::from_str("depth"), Value::Number(d as f64));
        st.value_item(&Value::Object(o))?;
        stack.extend(tree.children(n).iter().rev().map(|&c| (d + 1, c)));
    }
    st.close(b']')?;
    Ok(depth)
}

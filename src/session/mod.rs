//! An open session: the index plus pi's in-memory state (header, migration, `byId`,
//! labels, leaf), with bodies decoded only on demand.

pub(crate) mod context;
pub(crate) mod entry;
pub(crate) mod tree;

use crate::error::{Error, ErrorKind, Result};
use crate::index::{self, ByteOffset, EntryPos, EntryRec, EntryType, Index, Key, LineNo, Skipped};
use crate::js::string::JsStr;
use crate::json::value::{self, Object, Value};
use crate::json::walk::for_each_member;
use crate::json::{Field, Kind};
use crate::source::{ReadMode, Source};
use ahash::AHashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How to open a session.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenOptions {
    /// mmap or read (same results either way).
    pub read_mode: ReadMode,
    /// Chunk size for parallel indexing (`None`: the default).
    pub chunk: Option<usize>,
}

/// What pi's `SessionManager.open` would do to the file. pi-session never writes while
/// reading; this says what pi would write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileChange {
    /// Nothing.
    None,
    /// A `\n` appended after a final line without one.
    AppendedNewline,
    /// The whole file rewritten: a migration from an older format version, or a header
    /// written into a zero-byte file.
    Rewritten,
}

impl FileChange {
    /// The oracle's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            FileChange::None => "none",
            FileChange::AppendedNewline => "appended-newline",
            FileChange::Rewritten => "rewritten",
        }
    }
}

/// Which in-memory migration pi applies on load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Migration {
    /// The header's version is 3 or more: nothing.
    None,
    /// Version 1 (or absent): fresh ids and parent links, then the v2 -> v3 step.
    FromV1,
    /// Version 2: `hookMessage` roles become `custom`.
    FromV2,
    /// The version is not comparable with numbers (`"abc"`, an object): pi applies no step
    /// but still rewrites the file.
    RewriteOnly,
}

#[derive(Clone, Debug, Default)]
struct Patch {
    /// For compactions migrated from v1: the new `firstKeptEntryId` (`Undefined` removes it).
    first_kept: Option<Key>,
    /// Remove `firstKeptEntryIndex` (it was a number).
    drop_first_kept_index: bool,
}

/// An open pi session file.
///
/// `Session` is `Send + Sync`: every query takes `&self`, and navigation (`branch`,
/// `reset_leaf`) is the only mutation.
#[derive(Debug)]
pub struct Session {
    pub(crate) path: Option<PathBuf>,
    pub(crate) source: Source,
    pub(crate) index: Index,
    pub(crate) migration: Migration,
    patches: AHashMap<u32, Patch>,
    /// pi's `getEntries()`: positions of kept lines whose type is not `session`.
    pub(crate) list: Vec<EntryPos>,
    pub(crate) by_id: crate::index::idmap::IdMap,
    /// Label target -> the label entry that set it, and when the target entered pi's label
    /// map (a JavaScript `Map` keeps first-insertion order).
    pub(crate) labels: AHashMap<Key, (EntryPos, u64)>,
    label_seq: u64,
    pub(crate) leaf: Key,
    /// A header pi would create for a zero-byte file.
    new_header: Option<Value<'static>>,
    decoded: AtomicU64,
    /// Parent links resolved through `byId`, built on first use and dropped whenever the
    /// entries change.
    links: std::sync::OnceLock<Links>,
    /// Bytes covered by whole indexed lines (refresh starts here).
    indexed_end: u64,
}

/// No parent (in [`Links`]).
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// Every entry's parent, looked up in `byId` once, by entry position ([`NO_PARENT`]: none).
/// pi looks `parentId` up at every step of a walk; these arrays give the same answers, so
/// walks and the tree chase positions instead of hashing ids (and touching each entry's
/// record) at every step.
#[derive(Debug)]
pub(crate) struct Links {
    /// For `getBranch` and `buildSessionPath`: a truthy `parentId`, looked up.
    walk: Vec<u32>,
    /// For `getTree`: a `parentId` that is not null and not the entry's own id, looked up.
    tree: Vec<u32>,
    /// No two entries share an id: each entry is its own `byId` node.
    pub(crate) unique: bool,
}

impl Links {
    /// The parent of `p` on pi's walks.
    #[inline]
    pub(crate) fn walk_parent(&self, p: EntryPos) -> Option<EntryPos> {
        Links::at(&self.walk, p)
    }

    /// The parent of `p` in pi's tree.
    #[inline]
    pub(crate) fn tree_parent(&self, p: EntryPos) -> Option<EntryPos> {
        Links::at(&self.tree, p)
    }

    fn at(arr: &[u32], p: EntryPos) -> Option<EntryPos> {
        let q = arr[p.0 as usize];
        (q != NO_PARENT).then_some(EntryPos(q))
    }
}

/// What [`Session::refresh`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refresh {
    /// Kept lines (entries or headers) added to the index.
    pub entries: usize,
    /// Bytes of a last line still waiting for its `\n`.
    pub pending_bytes: u64,
}

impl Session {
    /// Open a session file as pi's `SessionManager.open` would, without modifying it.
    ///
    /// # Errors
    /// I/O errors, and [`ErrorKind::NotASession`] when the file is not empty and its first
    /// parsed line is not a session header (pi throws then too). A zero-byte file opens as
    /// the new session pi would write into it.
    pub fn open(path: impl AsRef<Path>) -> Result<Session> {
        Session::open_with(path, OpenOptions::default())
    }

    /// [`Session::open`] with options.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn open_with(path: impl AsRef<Path>, opts: OpenOptions) -> Result<Session> {
        let path = path.as_ref();
        let source = Source::open(path, opts.read_mode).map_err(|e| Error::from(e).with_path(path))?;
        let mut s = Session::from_source(source, opts).map_err(|e| e.with_path(path))?;
        s.path = Some(path.to_path_buf());
        Ok(s)
    }

    /// Open session text held in memory.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Session> {
        Session::from_source(Source::from_bytes(bytes), OpenOptions::default())
    }

    /// Open from a [`Source`].
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn from_source(source: Source, opts: OpenOptions) -> Result<Session> {
        Session::from_source_with_ids(source, opts, &mut || uuid::Uuid::new_v4().hyphenated().to_string())
    }

    /// [`Session::from_source`], drawing the fresh ids of a v1 migration from `uuid4`
    /// (a random UUID v4 as text, as pi's `randomUUID()`), for reproducible results.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn from_source_with_ids(
        source: Source,
        opts: OpenOptions,
        uuid4: &mut dyn FnMut() -> String,
    ) -> Result<Session> {
        let index = match opts.chunk {
            Some(c) => index::build_with(source.bytes(), c),
            None => index::build(source.bytes()),
        };
        let mut s = Session {
            path: None,
            source,
            index,
            migration: Migration::None,
            patches: AHashMap::new(),
            list: Vec::new(),
            by_id: crate::index::idmap::IdMap::default(),
            labels: AHashMap::new(),
            label_seq: 0,
            leaf: Key::Null,
            new_header: None,
            decoded: AtomicU64::new(0),
            links: std::sync::OnceLock::new(),
            indexed_end: 0,
        };
        s.indexed_end = s.source.len();
        if s.index.entries.is_empty() {
            if s.source.is_empty() {
                s.new_header = Some(new_header_value());
                return Ok(s);
            }
            return Err(ErrorKind::NotASession { path: None }.into());
        }
        let first = &s.index.entries[0];
        if first.ty != EntryType::Session || !first.id_is_string {
            return Err(ErrorKind::NotASession { path: None }.into());
        }
        s.migrate(uuid4)?;
        s.build_state()?;
        Ok(s)
    }

    fn build_state(&mut self) -> Result<()> {
        self.list.clear();
        self.by_id.clear();
        self.labels.clear();
        self.leaf = Key::Null;
        self.add_state(0)
    }

    /// Fold kept lines `from..` into pi's state (`byId`, labels, leaf), as pi's
    /// `_buildIndex` and `_appendEntry` do.
    fn add_state(&mut self, from: usize) -> Result<()> {
        self.links = std::sync::OnceLock::new();
        let bytes = self.source.bytes();
        let start = self.list.len();
        self.list.extend(
            (from as u32..self.index.entries.len() as u32)
                .map(EntryPos)
                .filter(|p| self.index.entries[p.0 as usize].ty != EntryType::Session),
        );
        self.by_id.extend(&self.index.entries, &self.list[start..]);
        if let Some(&last) = self.list[start..].last() {
            self.leaf = self.index.entries[last.0 as usize].id.clone();
        }
        for &p in &self.list[start..] {
            let e = &self.index.entries[p.0 as usize];
            if e.ty == EntryType::Label {
                let line = line_of(bytes, e);
                let v = value::parse(line).map_err(|_| changed())?;
                let target = key_from_value(v.get("targetId"));
                if v.get("label").is_some_and(Value::truthy) {
                    let seq = self.label_seq;
                    self.label_seq += 1;
                    self.labels.entry(target).and_modify(|l| l.0 = p).or_insert((p, seq));
                } else {
                    self.labels.remove(&target);
                }
            }
        }
        Ok(())
    }

    /// The parent links of every entry (built on first use, in parallel).
    pub(crate) fn links(&self) -> &Links {
        self.links.get_or_init(|| {
            use rayon::prelude::*;
            let entries = &self.index.entries;
            let list = &self.list;
            let unique = self.by_id.len() == list.len();
            let resolved: Vec<(u32, u32)> = (0..list.len())
                .into_par_iter()
                .with_min_len(4096)
                .map(|k| {
                    let e = &entries[list[k].0 as usize];
                    // Nearly every entry's parent is the entry before it: with distinct
                    // ids that one is the `byId` answer, found without hashing.
                    let raw = || {
                        if unique && k > 0 && entries[list[k - 1].0 as usize].id == e.parent {
                            Some(list[k - 1])
                        } else {
                            self.by_id.get(entries, &e.parent)
                        }
                    };
                    let raw = if e.parent == Key::Null { None } else { raw() };
                    let pos = |r: Option<EntryPos>| r.map_or(NO_PARENT, |p| p.0);
                    let walk = if e.parent.truthy() { pos(raw) } else { NO_PARENT };
                    let tree = if e.parent == e.id { NO_PARENT } else { pos(raw) };
                    (walk, tree)
                })
                .collect();
            let mut walk = vec![NO_PARENT; entries.len()];
            let mut tree = vec![NO_PARENT; entries.len()];
            for (&p, (w, t)) in list.iter().zip(resolved) {
                walk[p.0 as usize] = w;
                tree[p.0 as usize] = t;
            }
            Links { walk, tree, unique }
        })
    }

    /// Pick up what was appended to the file since it was opened (or last refreshed),
    /// indexing only the new bytes. A last line without `\n` is pending: it is read again
    /// once the rest of it arrives. The leaf moves to the last entry, as on open.
    ///
    /// # Errors
    /// I/O errors; [`ErrorKind::FileChanged`] when the file became shorter (rewritten), was
    /// migrated in memory (reopen it instead), or changed under a mapping so that pi's
    /// state (labels) could not be brought up to date. After that last error the index
    /// holds the new lines but the state is incomplete: open the file again.
    pub fn refresh(&mut self) -> Result<Refresh> {
        // A migrated session differs from its bytes in memory; one pi only rewrites
        // (a version that is not a number) does not.
        if matches!(self.migration, Migration::FromV1 | Migration::FromV2) || self.new_header.is_some() {
            return Err(ErrorKind::FileChanged {
                path: self.path.clone(),
            }
            .into());
        }
        self.source.refresh().map_err(|e| {
            if e.kind() == std::io::ErrorKind::InvalidData {
                Error::from(ErrorKind::FileChanged {
                    path: self.path.clone(),
                })
            } else {
                Error::from(e)
            }
        })?;
        self.index_appended().map_err(|e| match &self.path {
            Some(p) => e.with_path(p),
            None => e,
        })
    }

    /// Index whole lines appended after the indexed part of the source, and fold them into
    /// pi's state.
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`] when a kept line no longer decodes (the bytes changed
    /// under a mapping): the index is extended, but the state fold stopped at that line.
    pub(crate) fn index_appended(&mut self) -> Result<Refresh> {
        let len = self.source.len();
        if len == self.indexed_end {
            return Ok(Refresh {
                entries: 0,
                pending_bytes: 0,
            });
        }
        let mut from = self.indexed_end as usize;
        let mut rebuild = false;
        if let Some((start, was_entry)) = self.index.drop_unterminated_tail() {
            from = start as usize;
            rebuild = was_entry;
        }
        // Only whole lines: a partial last line waits for its newline.
        let bytes = self.source.bytes();
        let end = match memchr::memrchr(b'\n', &bytes[from..]) {
            Some(i) => from + i + 1,
            None => from,
        };
        let before = self.index.entries.len();
        let view = &bytes[..end];
        let added = self.index.extend(view, from);
        let pending = (len as usize - end) as u64;
        self.index.unterminated_tail = false;
        self.indexed_end = end as u64;
        if rebuild {
            self.build_state()?;
        } else {
            self.add_state(before)?;
        }
        Ok(Refresh {
            entries: added,
            pending_bytes: pending,
        })
    }

    // ----- migration ------------------------------------------------------------------

    fn migrate(&mut self, uuid4: &mut dyn FnMut() -> String) -> Result<()> {
        let bytes = self.source.bytes();
        let header = value::parse(line_of(bytes, &self.index.entries[0])).map_err(|_| changed())?;
        let version = match header.get("version") {
            None | Some(Value::Null) => Some(1.0),
            Some(v) => Some(crate::json::value::js_to_number(v)),
        };
        let v = version.unwrap_or(f64::NAN);
        // `version >= 3` is false for NaN, and so are `< 2` and `< 3`.
        self.migration = if v >= 3.0 {
            Migration::None
        } else if v < 2.0 {
            Migration::FromV1
        } else if v < 3.0 {
            Migration::FromV2
        } else {
            Migration::RewriteOnly
        };
        if self.migration != Migration::FromV1 {
            return Ok(());
        }
        // v1 -> v2: fresh ids, each entry's parent is the previous entry.
        let mut ids: ahash::AHashSet<Key> = ahash::AHashSet::new();
        let mut prev = Key::Null;
        let n = self.index.entries.len();
        for i in 0..n {
            let e = &self.index.entries[i];
            if e.ty == EntryType::Session {
                continue;
            }
            if e.ty == EntryType::NonObject {
                let line = line_of(bytes, e);
                let first = line
                    .iter()
                    .copied()
                    .find(|&c| !<crate::json::ws::Json as crate::json::ws::WhiteSpace>::is_ws(c))
                    .unwrap_or(b'[');
                if first != b'[' {
                    let v = value::parse(line).map_err(|_| changed())?;
                    let pi_message = format!(
                        "TypeError: Cannot create property 'id' on {} '{}'",
                        v.type_of(),
                        v.to_js_string()
                    );
                    return Err(ErrorKind::PiThrows {
                        line: e.line,
                        what: "a v1 session holds a line that is not an object, which pi's migration cannot give an id"
                            .into(),
                        pi_message,
                    }
                    .into());
                }
            }
            let id = generate_id(&ids, uuid4);
            ids.insert(id.clone());
            let is_compaction = e.ty == EntryType::Compaction;
            let line = line_of(bytes, e);
            let e = &mut self.index.entries[i];
            e.id = id.clone();
            e.id_is_string = true;
            e.parent = std::mem::replace(&mut prev, id);
            if is_compaction {
                let v = value::parse(line).map_err(|_| changed())?;
                if let Some(Value::Number(idx)) = v.get("firstKeptEntryIndex") {
                    let target = if idx.fract() == 0.0 && *idx >= 0.0 && (*idx as usize) < n {
                        Some(&self.index.entries[*idx as usize])
                    } else {
                        None
                    };
                    let first_kept = match target {
                        Some(t) if t.ty != EntryType::Session => Some(t.id.clone()),
                        _ => None,
                    };
                    self.patches.insert(
                        i as u32,
                        Patch {
                            first_kept,
                            drop_first_kept_index: true,
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// The migration pi applies on load.
    pub fn migration(&self) -> Migration {
        self.migration
    }

    /// What pi's open would do to the file.
    pub fn file_change(&self) -> FileChange {
        if self.new_header.is_some() || self.migration != Migration::None {
            FileChange::Rewritten
        } else if self.index.unterminated_tail {
            FileChange::AppendedNewline
        } else {
            FileChange::None
        }
    }

    // ----- raw access -----------------------------------------------------------------

    /// The file, when opened from one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Whether the file is memory-mapped (rather than read into memory).
    pub fn is_mapped(&self) -> bool {
        self.source.is_mapped()
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.source.bytes()
    }

    /// Fail if a mapped file shrank since it was opened (see [`crate::source`]).
    pub(crate) fn check(&self) -> Result<&[u8]> {
        match self.source.check_unchanged() {
            Ok(true) => Ok(self.source.bytes()),
            Ok(false) => Err(ErrorKind::FileChanged {
                path: self.path.clone(),
            }
            .into()),
            Err(e) => Err(Error::from(e)),
        }
    }

    /// The index: every kept line and every skipped line.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Lines pi skips, with positions and reasons.
    pub fn skipped(&self) -> &[Skipped] {
        &self.index.skipped
    }

    /// The record of a kept line.
    pub fn record(&self, pos: EntryPos) -> &EntryRec {
        &self.index.entries[pos.0 as usize]
    }

    /// The exact bytes of a kept line (PiG's `GetEntries()` raw JSON), without `\n`.
    pub fn raw(&self, pos: EntryPos) -> &[u8] {
        line_of(self.source.bytes(), self.record(pos))
    }

    /// pi's `getEntries()`: every entry but headers, in file order.
    pub fn entries(&self) -> &[EntryPos] {
        &self.list
    }

    /// pi's `getEntryCount()`: the number of distinct ids.
    pub fn entry_count(&self) -> usize {
        self.by_id.len()
    }

    /// The entry with this id (the later one when ids repeat).
    pub fn entry_by_id(&self, id: &Key) -> Option<EntryPos> {
        self.by_id.get(&self.index.entries, id)
    }

    /// The entry with this string id.
    pub fn find(&self, id: &str) -> Option<EntryPos> {
        self.entry_by_id(&Key::str(id))
    }

    /// How many entry bodies have been decoded so far (proves laziness in tests).
    pub fn decoded_count(&self) -> u64 {
        self.decoded.load(Ordering::Relaxed)
    }

    /// Decode a kept line as pi holds it in memory (after migration).
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`] when the file changed under a mapping.
    pub fn value(&self, pos: EntryPos) -> Result<Value<'_>> {
        let bytes = self.check()?;
        self.value_in(bytes, pos)
    }

    pub(crate) fn value_in<'a>(&'a self, bytes: &'a [u8], pos: EntryPos) -> Result<Value<'a>> {
        self.decoded.fetch_add(1, Ordering::Relaxed);
        let e = self.record(pos);
        let mut v = value::parse(line_of(bytes, e)).map_err(|_| changed())?;
        self.patch(pos, &mut v);
        Ok(v)
    }

    /// Apply pi's in-memory migration to a decoded entry.
    fn patch(&self, pos: EntryPos, v: &mut Value<'_>) {
        if self.migration == Migration::None || self.migration == Migration::RewriteOnly {
            return;
        }
        let e = self.record(pos);
        let Value::Object(o) = v else { return };
        if e.ty == EntryType::Session {
            o.set(JsStr::from_str("version"), Value::Number(3.0));
            return;
        }
        if self.migration == Migration::FromV1 {
            o.set(JsStr::from_str("id"), key_to_value(&e.id));
            o.set(JsStr::from_str("parentId"), key_to_value(&e.parent));
            if let Some(p) = self.patches.get(&pos.0) {
                match &p.first_kept {
                    Some(k) if !k.is_undefined() => o.set(JsStr::from_str("firstKeptEntryId"), key_to_value(k)),
                    // Assigned `undefined`: the key exists but JSON output omits it.
                    Some(_) => {
                        o.remove("firstKeptEntryId");
                    }
                    None => {}
                }
                if p.drop_first_kept_index {
                    o.remove("firstKeptEntryIndex");
                }
            }
        }
        if e.ty == EntryType::Message
            && let Some(Value::Object(m)) = o.get_mut("message")
            && m.get("role").and_then(Value::as_str) == Some("hookMessage")
        {
            m.set(JsStr::from_str("role"), Value::str("custom"));
        }
    }

    /// The `message` value of a `message` entry, decoded alone (the rest of the line is
    /// not touched). `Ok(None)` when the entry has no `message` key.
    pub(crate) fn message_in<'a>(&'a self, bytes: &'a [u8], pos: EntryPos) -> Result<Option<Value<'a>>> {
        let e = self.record(pos);
        let line = line_of(bytes, e);
        let Some(f) = self.field(line, e.message, "message") else {
            return Ok(None);
        };
        self.decoded.fetch_add(1, Ordering::Relaxed);
        let mut v = value::parse(f.raw(line)).map_err(|_| changed())?;
        if matches!(self.migration, Migration::FromV1 | Migration::FromV2)
            && let Value::Object(m) = &mut v
            && m.get("role").and_then(Value::as_str) == Some("hookMessage")
        {
            m.set(JsStr::from_str("role"), Value::str("custom"));
        }
        Ok(Some(v))
    }

    /// Selected top-level members of a `message` value (`role`, `provider`, ...), without
    /// decoding the rest. `Ok(None)` when the entry has no `message`; `Some(Err(kind))` is
    /// not used: a present non-object message yields no members.
    pub(crate) fn message_members<'a>(
        &'a self,
        bytes: &'a [u8],
        pos: EntryPos,
        keys: &[&str],
    ) -> Result<Option<(Kind, Vec<Option<Value<'a>>>)>> {
        let e = self.record(pos);
        let line = line_of(bytes, e);
        let Some(f) = self.field(line, e.message, "message") else {
            return Ok(None);
        };
        let mut out: Vec<Option<Value<'a>>> = vec![None; keys.len()];
        if f.kind == Kind::Object {
            let mut spans: Vec<Option<Field>> = vec![None; keys.len()];
            for_each_member(line, f.start, |k, field| {
                if let Some(i) = keys.iter().position(|w| w.as_bytes() == k) {
                    spans[i] = Some(field);
                }
            })
            .map_err(|_| changed())?;
            for (slot, span) in out.iter_mut().zip(spans) {
                if let Some(s) = span {
                    *slot = Some(value::parse(s.raw(line)).map_err(|_| changed())?);
                }
            }
            if matches!(self.migration, Migration::FromV1 | Migration::FromV2)
                && let Some(i) = keys.iter().position(|k| *k == "role")
                && out[i].as_ref().and_then(Value::as_str) == Some("hookMessage")
            {
                out[i] = Some(Value::str("custom"));
            }
        }
        Ok(Some((f.kind, out)))
    }

    /// A top-level field of a line, from the index's span or by scanning again when the
    /// span did not fit (lines over 4 GiB).
    fn field(&self, line: &[u8], span: index::RelSpan, key: &str) -> Option<Field> {
        if let Some((s, e)) = span.get() {
            // The span is known; its first byte tells the kind well enough for the callers
            // (object or null), without scanning the value again.
            let kind = self.record_kind_hint(line, s)?;
            return Some(Field { start: s, end: e, kind });
        }
        let mut found = None;
        for_each_member(line, line.iter().position(|&c| c == b'{')?, |k, f| {
            if k == key.as_bytes() {
                found = Some(f);
            }
        })
        .ok()?;
        found
    }

    /// The kind of the value starting at `s`, when its first byte says it without
    /// scanning (everything but numbers and strings' escape flag, which callers here do
    /// not need).
    fn record_kind_hint(&self, line: &[u8], s: usize) -> Option<Kind> {
        Some(match line.get(s)? {
            b'{' => Kind::Object,
            b'[' => Kind::Array,
            b'n' => Kind::Null,
            b't' => Kind::True,
            b'f' => Kind::False,
            b'"' => Kind::String { escaped: true },
            _ => Kind::Number,
        })
    }

    /// The role of a `message` entry's message as pi reads it (`entry.message.role`):
    /// pi's `TypeError` when `message` is missing or null; the v2 -> v3 migration applied.
    pub(crate) fn message_role(&self, pos: EntryPos) -> Result<index::Role> {
        let e = self.record(pos);
        match e.message_kind {
            None => Err(self.no_message_error(pos, "undefined")),
            Some(Kind::Null) => Err(self.no_message_error(pos, "null")),
            Some(_) => Ok(match e.role {
                index::Role::HookMessage if matches!(self.migration, Migration::FromV1 | Migration::FromV2) => {
                    index::Role::Custom
                }
                r => r,
            }),
        }
    }

    pub(crate) fn no_message_error(&self, p: EntryPos, what: &str) -> Error {
        ErrorKind::PiThrows {
            line: self.record(p).line,
            what: format!("message entry whose `message` is {what}"),
            pi_message: format!("TypeError: Cannot read properties of {what} (reading 'role')"),
        }
        .into()
    }

    /// The `timestamp` value of an entry (`None`: missing).
    pub(crate) fn timestamp_in<'a>(&self, bytes: &'a [u8], pos: EntryPos) -> Option<Value<'a>> {
        let e = self.record(pos);
        if e.ty == EntryType::NonObject {
            return None;
        }
        let line = line_of(bytes, e);
        let f = self.field(line, e.timestamp, "timestamp")?;
        value::parse(f.raw(line)).ok()
    }

    /// The `id` of an entry as a JSON value (`None`: missing).
    pub(crate) fn id_value(&self, pos: EntryPos) -> Option<Value<'_>> {
        let e = self.record(pos);
        match &e.id {
            Key::Undefined => None,
            Key::Unique(_) => {
                let line = self.raw(pos);
                let mut found = None;
                let start = line.iter().position(|&c| c == b'{')?;
                for_each_member(line, start, |k, f| {
                    if k == b"id" {
                        found = Some(f);
                    }
                })
                .ok()?;
                value::parse(found?.raw(line)).ok()
            }
            k => Some(key_to_value(k)),
        }
    }

    /// The `type` of an entry as a JSON value (`None`: missing).
    pub(crate) fn type_value(&self, pos: EntryPos) -> Option<Value<'_>> {
        let e = self.record(pos);
        if let Some(s) = e.ty.as_str() {
            return Some(Value::str(s));
        }
        if e.ty == EntryType::NonObject {
            return None;
        }
        let line = self.raw(pos);
        let mut found = None;
        let start = line.iter().position(|&c| c == b'{')?;
        for_each_member(line, start, |k, f| {
            if k == b"type" {
                found = Some(f);
            }
        })
        .ok()?;
        value::parse(found?.raw(line)).ok()
    }

    // ----- pi's state -----------------------------------------------------------------

    /// pi's `getHeader()`, after migration.
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`].
    pub fn header(&self) -> Result<Value<'_>> {
        if let Some(h) = &self.new_header {
            return Ok(h.clone());
        }
        self.value(EntryPos(0))
    }

    /// pi's `getLeafId()`: the id of the last entry, or where navigation put it.
    pub fn leaf(&self) -> &Key {
        &self.leaf
    }

    /// pi's `branch(id)`: move the leaf to an existing entry.
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`] when no entry has that id.
    pub fn branch(&mut self, id: &str) -> Result<()> {
        let k = Key::str(id);
        if self.entry_by_id(&k).is_none() {
            return Err(ErrorKind::EntryNotFound { id: id.to_string() }.into());
        }
        self.leaf = k;
        Ok(())
    }

    /// pi's `resetLeaf()`: a null leaf (the next append starts a new root).
    pub fn reset_leaf(&mut self) {
        self.leaf = Key::Null;
    }

    /// Set the leaf to any key without checks (pi's free functions take any leaf id).
    pub fn set_leaf_raw(&mut self, leaf: Key) {
        self.leaf = leaf;
    }

    /// The label entry currently labelling `target`, if any.
    pub fn label_entry(&self, target: &Key) -> Option<EntryPos> {
        self.labels.get(target).map(|l| l.0)
    }

    /// Labelled targets and their label entries, in pi's label-map order.
    pub fn label_order(&self) -> Vec<(Key, EntryPos)> {
        let mut v: Vec<(&Key, &(EntryPos, u64))> = self.labels.iter().collect();
        v.sort_by_key(|(_, (_, seq))| *seq);
        v.into_iter().map(|(k, (p, _))| (k.clone(), *p)).collect()
    }

    /// pi's `getLabel(id)`: the label value of an entry.
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`].
    pub fn label(&self, id: &str) -> Result<Option<Value<'_>>> {
        let Some(p) = self.label_entry(&Key::str(id)) else {
            return Ok(None);
        };
        let mut v = self.value(p)?;
        Ok(match &mut v {
            Value::Object(o) => o.remove("label"),
            _ => None,
        })
    }

    /// pi's `getSessionName()`: the latest `session_info` entry's trimmed name (lone
    /// surrogates kept; see [`JsStr::to_str_lossy`] for text).
    ///
    /// # Errors
    /// [`ErrorKind::PiThrows`] when that name is neither a string nor null (pi throws a
    /// `TypeError`), [`ErrorKind::FileChanged`].
    pub fn session_name(&self) -> Result<Option<JsStr<'static>>> {
        let bytes = self.check()?;
        for (i, e) in self.index.entries.iter().enumerate().rev() {
            if e.ty != EntryType::SessionInfo {
                continue;
            }
            let v = self.value_in(bytes, EntryPos(i as u32))?;
            return match v.get("name") {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => {
                    let t = crate::js::string::js_trim_wtf8(s.as_bytes());
                    Ok(if t.is_empty() {
                        None
                    } else {
                        Some(JsStr(std::borrow::Cow::Owned(t.to_vec())))
                    })
                }
                Some(_) => Err(ErrorKind::PiThrows {
                    line: e.line,
                    what: "session_info name is not a string".into(),
                    pi_message: "TypeError: entry.name?.trim is not a function".into(),
                }
                .into()),
            };
        }
        Ok(None)
    }

    /// The line of an entry.
    pub fn line_of(&self, pos: EntryPos) -> LineNo {
        self.record(pos).line
    }

    /// The byte offset of an entry.
    pub fn offset_of(&self, pos: EntryPos) -> ByteOffset {
        self.record(pos).offset
    }
}

fn changed() -> Error {
    ErrorKind::FileChanged { path: None }.into()
}

pub(crate) fn line_of<'a>(bytes: &'a [u8], e: &EntryRec) -> &'a [u8] {
    let s = e.offset.0 as usize;
    &bytes[s..s + e.len as usize]
}

/// A key as the JSON value it came from (strings, numbers, literals).
pub(crate) fn key_to_value(k: &Key) -> Value<'static> {
    match k {
        Key::Undefined | Key::Null | Key::Unique(_) => Value::Null,
        Key::Bool(b) => Value::Bool(*b),
        Key::Num(bits) => Value::Number(f64::from_bits(*bits)),
        Key::Str(s) => Value::String(JsStr(std::borrow::Cow::Owned(s.to_vec()))),
    }
}

/// The key a decoded value makes (objects are unique, equal to nothing else).
pub(crate) fn key_from_value(v: Option<&Value<'_>>) -> Key {
    match v {
        None => Key::Undefined,
        Some(Value::Null) => Key::Null,
        Some(Value::Bool(b)) => Key::Bool(*b),
        Some(Value::Number(n)) => Key::Num(if *n == 0.0 { 0f64.to_bits() } else { n.to_bits() }),
        Some(Value::String(s)) => Key::Str(smallvec::SmallVec::from_slice(s.as_bytes())),
        Some(Value::Array(_) | Value::Object(_)) => Key::Unique(u64::MAX),
    }
}

/// pi's `generateId`: the first 8 characters of a random UUID, re-drawn on collision
/// (100 tries, then a whole UUID).
pub(crate) fn generate_id(taken: &ahash::AHashSet<Key>, uuid4: &mut dyn FnMut() -> String) -> Key {
    for _ in 0..100 {
        let u = uuid4();
        let k = Key::str(u.get(..8).unwrap_or(&u));
        if !taken.contains(&k) {
            return k;
        }
    }
    Key::str(&uuid4())
}

fn new_header_value() -> Value<'static> {
    let id = uuid::Uuid::now_v7().hyphenated().to_string();
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "/".into());
    let mut o = Object::new();
    o.set(JsStr::from_str("type"), Value::str("session"));
    o.set(JsStr::from_str("version"), Value::Number(3.0));
    o.set(JsStr::owned(String::from("id")), Value::string(id));
    o.set(JsStr::from_str("timestamp"), Value::string(crate::js::time::now_iso()));
    o.set(JsStr::from_str("cwd"), Value::string(cwd));
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pi's lookup at each step, by hashing, for comparison with [`Links`].
    fn naive(s: &Session, p: EntryPos) -> (Option<EntryPos>, Option<EntryPos>) {
        let e = s.record(p);
        let walk = if e.parent.truthy() {
            s.entry_by_id(&e.parent)
        } else {
            None
        };
        let tree = if e.parent == Key::Null || e.parent == e.id {
            None
        } else {
            s.entry_by_id(&e.parent)
        };
        (walk, tree)
    }

    #[test]
    fn links_give_the_lookups_pi_makes() {
        // Ids and parent ids from a small pool (duplicates, forward references, self
        // parents, falsy and non-string ids, missing members), the previous entry's id most
        // of the time.
        let pool = [
            r#""a""#, r#""b""#, r#""c""#, r#""""#, "0", "1", "null", "true", "false", "[]", "{}",
        ];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for round in 0..400 {
            let mut text = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n");
            let mut prev: Option<String> = None;
            let n = 1 + next(30);
            for k in 0..n {
                let id = if round % 2 == 0 {
                    format!("\"e{k}\"")
                } else {
                    pool[next(pool.len() as u64) as usize].to_string()
                };
                let parent = match (next(6), &prev) {
                    (0..=2, Some(p)) => Some(p.clone()),
                    (3, _) => None,
                    _ => Some(pool[next(pool.len() as u64) as usize].to_string()),
                };
                let id_member = if next(10) == 0 {
                    String::new()
                } else {
                    format!(",\"id\":{id}")
                };
                let parent_member = parent.map_or(String::new(), |p| format!(",\"parentId\":{p}"));
                text.push_str(&format!("{{\"type\":\"custom\"{id_member}{parent_member}}}\n"));
                prev = Some(id);
            }
            let s = Session::from_bytes(text.into_bytes()).expect("opens");
            let links = s.links();
            for &p in s.entries() {
                let want = naive(&s, p);
                assert_eq!(
                    (links.walk_parent(p), links.tree_parent(p)),
                    want,
                    "round {round}, entry {p:?}"
                );
                if links.unique {
                    assert_eq!(s.entry_by_id(&s.record(p).id), Some(p));
                }
            }
        }
    }
}

//! The native half of the Node package: one opened session, answering pi's
//! `SessionManager` questions with entry numbers (positions in `getEntries()`) and JSON
//! text. `index.js` turns those into pi's objects, each entry parsed only when asked for,
//! so that a session of any size crosses the boundary only as far as the caller looks.
//!
//! Files: `lib.rs` (the session: read, written, its context and tree), `listing.rs`
//! (`list`, `listAll`), `follow.rs` (`follow`, `followLatest`), `module.rs` (the module's
//! functions and pi's paths), `js.rs` (values made as JavaScript values), `error.rs`
//! (errors as JavaScript sees them).
#![deny(unsafe_code)]

mod error;
mod follow;
mod js;
mod listing;
mod module;

pub(crate) use error::js_error;

use js::{Js, MadeEntries};

use napi::bindgen_prelude::*;
use napi_derive::napi;
use pi_session::{EntryPos, Key, OpenOptions, Projection, Session, Value};
use std::path::PathBuf;
/// `buildSessionContext()` as the entries its messages come from: for message `i`, entry
/// `entries[i]` gives it by `projections[i]` (0 its `message`, 1 the custom message of a
/// `custom_message`, 2 the summary of a `branch_summary`, 3 a compaction's `systemMessage`,
/// 4 a compaction's summary), its content replaced by the `context_edit` entry
/// `edits[i]` (-1: none). `index.js` makes each message from the entry objects it holds,
/// as pi makes them from its own (so a stored message is the entry's own object).
/// `settings`: `{thinkingLevel, model}`.
#[napi(object, object_from_js = false)]
pub struct ContextValue<'a> {
    #[napi(ts_type = "{ thinkingLevel?: string; model: unknown }")]
    pub settings: Js<'a>,
    pub projections: Vec<u32>,
    pub entries: Vec<u32>,
    pub edits: Vec<i32>,
}

/// What an append or a new session made ([`NativeSession::append_call`],
/// [`NativeSession::new_session`]): its members in pi's order (`keys`), each with the
/// parameter whose argument it holds (`args`) or else the value the method made
/// (`values`; absent: `undefined`), the entry's number, whether every entry was numbered
/// anew, and the file a new session goes to. (Only what the method made crosses: the
/// caller's arguments, a message with its images, are the caller's already.)
#[napi(object, object_from_js = false)]
pub struct Made {
    pub keys: Vec<String>,
    pub args: Vec<Option<String>>,
    #[napi(ts_type = "unknown[]")]
    pub values: Vec<Option<Js<'static>>>,
    pub number: Option<u32>,
    pub anew: bool,
    pub file: Option<String>,
}

impl Made {
    fn of(object: &pi_session::Object<'_>, members: &[(&'static str, Option<&'static str>)]) -> Made {
        let mut made = Made {
            keys: Vec::with_capacity(members.len()),
            args: Vec::with_capacity(members.len()),
            values: Vec::with_capacity(members.len()),
            number: None,
            anew: false,
            file: None,
        };
        for &(key, arg) in members {
            made.keys.push(key.to_string());
            made.args.push(arg.map(str::to_string));
            made.values.push(match arg {
                Some(_) => None,
                None => object.get(key).map(|v| Js(v.clone().into_owned())),
            });
        }
        made
    }
}

/// What `createBranchedSession` made: the new file (`null`: in memory) and the entries kept.
#[napi(object, object_from_js = false)]
pub struct BranchedSession {
    pub file: Option<String>,
    pub kept: Vec<Kept>,
}

/// An entry a branched session kept: its place in the old path (`at`, labels included),
/// its new `parentId`, and for a compaction its `firstKeptEntryId` now (absent: undefined).
#[napi(object, object_from_js = false)]
pub struct Kept {
    pub at: u32,
    #[napi(ts_type = "unknown")]
    pub parent_id: Js<'static>,
    pub compaction: bool,
    #[napi(ts_type = "unknown")]
    pub first_kept_entry_id: Option<Js<'static>>,
}

/// A JSON object of a caller's arguments, by name.
fn args_of(json: &str) -> Result<pi_session::Object<'_>> {
    // (`Value` drops its members itself: they are taken out, not moved.)
    match &mut Value::parse(json.as_bytes()).map_err(|e| napi::Error::from_reason(e.to_string()))? {
        Value::Object(o) => Ok(std::mem::replace(o, pi_session::Object::new())),
        _ => Err(napi::Error::from_reason("Error: the arguments must be an object")),
    }
}

/// What `refresh()` found: how many entries came in, and whether the file was replaced
/// or rewritten (then every entry was read again: numbers may name other entries).
#[napi(object)]
pub struct Refreshed {
    pub added: u32,
    pub rebuilt: bool,
}

/// What a [`NativeSession`] stands on: a file opened read-only, or a [`Writer`] (a new
/// session, or an opened file after its first write).
// (One per session object, never in bulk: the size of the larger variant does not matter.)
#[allow(clippy::large_enum_variant)]
enum Store {
    Read(Session),
    Write(Writer),
}

/// A session: opened read-only (pi's open may rewrite an old-format file or append a
/// missing newline; this one writes nothing until the first append, and then as pi's
/// open would have), or new (in memory or for a file). Entries are added as lines that
/// `index.js` serialised with `JSON.stringify`, so files are byte for byte pi's.
#[napi]
pub struct NativeSession {
    store: Store,
    /// For each index position, its number in `getEntries()` (`u32::MAX`: a header).
    number: Vec<u32>,
    /// The session folder and working directory a first write opens the file with.
    dir: Option<PathBuf>,
    cwd: Option<String>,
    /// The file mapped anew for the long strings of the entries handed out
    /// ([`NativeSession::texts`]); dropped when entries are numbered anew.
    texts: Option<std::sync::Arc<pi_session::Source>>,
}

impl NativeSession {
    fn new(store: Store) -> NativeSession {
        let mut n = NativeSession {
            store,
            number: Vec::new(),
            dir: None,
            cwd: None,
            texts: None,
        };
        n.renumber(0);
        n
    }

    fn s(&self) -> &Session {
        match &self.store {
            Store::Read(s) => s,
            Store::Write(w) => w.session(),
        }
    }

    fn s_mut(&mut self) -> &mut Session {
        match &mut self.store {
            Store::Read(s) => s,
            Store::Write(w) => w.session_mut(),
        }
    }

    /// Number the entries from the `from`th on (entries before it are unchanged: only
    /// appends happened since).
    fn renumber(&mut self, from: usize) {
        let len = self.s().index().len();
        let mut number = std::mem::take(&mut self.number);
        if from == 0 {
            number.clear();
            self.texts = None;
        }
        number.resize(len, u32::MAX);
        let s = self.s();
        for k in from..s.entries_len() {
            if let Some(p) = s.entry_at(k) {
                number[p.0 as usize] = k as u32;
            }
        }
        self.number = number;
    }

    /// The writer a new session starts on: this one's, or (for a file opened read-only) a
    /// new one for the same folder and working directory.
    fn fresh_writer(&mut self) -> Result<&mut Writer> {
        if let Store::Read(_) = self.store {
            let cwd = self.cwd.clone().unwrap_or_default();
            let dir = self.dir.clone().unwrap_or_default();
            let w = Writer::create(&cwd, &dir, Entropy::default()).map_err(js_error)?;
            self.store = Store::Write(w);
        }
        match &mut self.store {
            Store::Write(w) => Ok(w),
            Store::Read(_) => unreachable!("made a writer above"),
        }
    }

    fn numbers(&self, pos: impl IntoIterator<Item = EntryPos>) -> Vec<u32> {
        pos.into_iter().map(|p| self.number[p.0 as usize]).collect()
    }

    /// The writer, made on the first write to a file opened read-only (opened again as
    /// pi's open does it: an old format migrated and rewritten, a missing newline
    /// appended). `true` when the entries were read again in another form (a rewrite):
    /// every entry number may then name another value.
    fn writer(&mut self) -> Result<(&mut Writer, bool)> {
        let mut reread = false;
        if let Store::Read(s) = &self.store {
            let path = s
                .path()
                .ok_or_else(|| napi::Error::from_reason("Error: this session has no file"))?
                .to_path_buf();
            let before = s.entries_len();
            // The ids a version-1 file's entries got when it was opened are the ones the
            // rewrite stores (`V1Ids::Stable` on both sides), so entries handed out stay.
            let options = pi_session::WriteOptions::default().with_v1_ids(pi_session::V1Ids::Stable);
            let mut w = Writer::open_with(&path, self.dir.as_deref(), Entropy::default(), options).map_err(js_error)?;
            if let Some(cwd) = &self.cwd {
                w.set_cwd(cwd);
            }
            // pi's leaf is held in memory, whatever the file holds now: the writer keeps
            // the one the reader had moved to. (An id that is an object or an array is
            // unique to the session that read it: the writer's own stays.)
            if !matches!(s.leaf(), Key::Unique(_)) {
                w.session_mut().set_leaf_raw(s.leaf().clone());
            }
            // A file cut short or replaced meanwhile is numbered anew.
            reread = w.session().entries_len() < before;
            self.store = Store::Write(w);
            self.renumber(if reread { 0 } else { before });
        }
        match &mut self.store {
            Store::Write(w) => Ok((w, reread)),
            Store::Read(_) => unreachable!("made a writer above"),
        }
    }
}

use pi_session::{Entropy, Writer};

/// A session file's bytes, mapped for the strings its entries read when first read.
#[napi]
pub struct LazyTexts {
    src: std::sync::Arc<pi_session::Source>,
}

#[napi]
impl LazyTexts {
    /// The string whose JSON text is `length` bytes at `offset`; an error when the file
    /// no longer holds it (it was cut short or rewritten in place).
    #[napi(ts_return_type = "string")]
    pub fn at(&self, offset: f64, length: f64) -> Result<js::MadeThenReleased<'_>> {
        let changed =
            || napi::Error::from_reason("Error: the session file changed: a string of it can no longer be read");
        let (o, n) = (offset as usize, length as usize);
        let raw = self.src.bytes().get(o..o.saturating_add(n)).ok_or_else(changed)?;
        let v = Value::parse(raw)
            .ok()
            .filter(|v| matches!(v, Value::String(_)))
            .ok_or_else(changed)?;
        if !self.src.current().map_err(|e| js_error(e.into()))? {
            return Err(changed());
        }
        // Its pages go once the string is made.
        Ok(js::MadeThenReleased {
            value: v,
            src: &self.src,
            range: o..o + n,
        })
    }
}

/// How files are opened: pi's reading, with a version-1 file's ids derived from the file
/// (pi draws random ones on every open; these stay the same across opens and through the
/// rewrite a first append makes), and pages let go once indexed.
fn read_options() -> OpenOptions {
    OpenOptions {
        v1_ids: pi_session::V1Ids::Stable,
        // A Node process holds sessions open and decodes what it is asked for: the
        // file's pages are not kept resident after indexing.
        release_pages: true,
        ..OpenOptions::default()
    }
}
use std::path::Path;

/// The JavaScript value of a JSON value made natively, or `null`.
fn js_or_null(v: Option<Value<'_>>) -> Js<'_> {
    Js(v.unwrap_or(Value::Null))
}

#[napi]
impl NativeSession {
    /// Open the file at `path` read-only; `session_dir` and `cwd` are what a first write
    /// opens it with (pi's `sessionDir` and `cwdOverride`).
    #[napi(factory)]
    pub fn open(path: String, session_dir: Option<String>, cwd: Option<String>) -> Result<NativeSession> {
        let s = Session::open_with(&path, read_options()).map_err(js_error)?;
        let mut n = NativeSession::new(Store::Read(s));
        n.dir = session_dir.map(PathBuf::from);
        n.cwd = cwd;
        Ok(n)
    }

    /// A new session for `cwd`: in memory (`persist` false), or to be written in
    /// `session_dir`. `index.js` then gives its header ([`NativeSession::start_session`]).
    #[napi(factory)]
    pub fn fresh(cwd: String, session_dir: String, persist: bool) -> Result<NativeSession> {
        let w = if persist {
            Writer::create(&cwd, Path::new(&session_dir), Entropy::default()).map_err(js_error)?
        } else {
            Writer::in_memory(&cwd, Entropy::default())
        };
        let mut n = NativeSession::new(Store::Write(w));
        n.dir = Some(PathBuf::from(session_dir));
        n.cwd = Some(cwd);
        Ok(n)
    }

    /// A session of entries held outside any file (`text`: JSON lines, a header first),
    /// for the module's functions over entry arrays; its leaf is the id whose JSON text is
    /// `leaf_json` (none: `undefined`, the last entry, as pi's `buildSessionPath`).
    #[napi(factory)]
    pub fn of_lines(text: String, leaf_json: Option<String>) -> Result<NativeSession> {
        let mut s = Session::from_bytes(text.into_bytes()).map_err(js_error)?;
        let leaf = match leaf_json {
            Some(j) => Some(
                pi_session::Value::parse(j.as_bytes())
                    .map_err(|e| napi::Error::from_reason(e.to_string()))?
                    .into_owned(),
            ),
            None => None,
        };
        s.set_leaf_raw(pi_session::key_from_value(leaf.as_ref()));
        Ok(NativeSession::new(Store::Read(s)))
    }

    /// pi's `forkFrom`: a new file in `session_dir` with every entry of `source`.
    #[napi(factory)]
    pub fn fork_from(
        source: String,
        target_cwd: String,
        session_dir: String,
        id: Option<String>,
    ) -> Result<NativeSession> {
        let w = Writer::fork_from(
            Path::new(&source),
            &target_cwd,
            Path::new(&session_dir),
            id.as_deref(),
            Entropy::default(),
        )
        .map_err(|e| match e.kind() {
            pi_session::ErrorKind::NotASession { .. } => napi::Error::from_reason(format!(
                "Error: Cannot fork: source session file is empty or invalid: {source}"
            )),
            _ => js_error(e),
        })?;
        let mut n = NativeSession::new(Store::Write(w));
        n.dir = Some(PathBuf::from(session_dir));
        n.cwd = Some(target_cwd);
        Ok(n)
    }

    /// Start a new session with this header line (pi's `newSession`), to be written to
    /// `file` (none: in memory) once it holds a user or assistant message.
    #[napi]
    pub fn start_session(&mut self, header_line: String, file: Option<String>) -> Result<()> {
        let w = self.fresh_writer()?;
        w.start_session(header_line.as_bytes(), file.map(PathBuf::from))
            .map_err(js_error)?;
        self.renumber(0);
        Ok(())
    }

    /// Write the session to its file now (pi's `_rewriteFile`, for an empty file opened).
    #[napi]
    pub fn write_now(&mut self) -> Result<()> {
        let (w, _) = self.writer()?;
        w.write_now().map_err(js_error)?;
        self.renumber(0);
        Ok(())
    }

    /// pi's append `method` (`appendMessage`, ..., `branchWithSummary`) with the arguments
    /// of `args_json` (`JSON.stringify` of an object of them by parameter name), the entry
    /// built, checked and written by the library as pi's method does; the leaf moves to it.
    #[napi]
    pub fn append_call(&mut self, method: String, args_json: String) -> Result<Made> {
        let call = pi_session::Append::from_method(&method)
            .ok_or_else(|| napi::Error::from_reason(format!("Error: no append method {method}")))?;
        let args = args_of(&args_json)?;
        let (_, reread) = self.writer()?;
        let before = self.s().entries_len();
        let Store::Write(w) = &mut self.store else {
            unreachable!("writer() made one")
        };
        let a = w.append_call(call, args).map_err(js_error)?;
        let anew = reread || a.reread || self.s().entries_len() < before;
        self.renumber(if anew { 0 } else { before });
        let mut made = Made::of(&a.entry, &a.members);
        made.number = self.s().find(&a.id).map(|p| self.number[p.0 as usize]);
        made.anew = anew;
        Ok(made)
    }

    /// pi's `newSession(options)` (`options_json`: `JSON.stringify` of `{ id, parentSession }`),
    /// to be written to `file` (none: a new name in the session folder) once it holds a user
    /// or assistant message; an in-memory session is written nowhere.
    #[napi]
    pub fn new_session(&mut self, options_json: String, file: Option<String>) -> Result<Made> {
        let options = args_of(&options_json)?;
        let w = self.fresh_writer()?;
        let n = w
            .new_session_call(&options, file.map(PathBuf::from))
            .map_err(js_error)?;
        self.renumber(0);
        let header = Value::parse(&n.line).map_err(|e| napi::Error::from_reason(e.to_string()))?;
        let mut made = Made::of(header.as_object().expect("a header is an object"), &n.members);
        made.file = n.file.map(|f| f.to_string_lossy().into_owned());
        made.anew = true;
        Ok(made)
    }

    /// Append one entry (`JSON.stringify` of the object `index.js` keeps): to memory
    /// before the file exists, else to the file. Returns whether the entries before it
    /// were read again in another form (see [`NativeSession::writer`]).
    #[napi]
    pub fn append(&mut self, line: String) -> Result<bool> {
        let (_, reread) = self.writer()?;
        let before = self.s().entries_len();
        let Store::Write(w) = &mut self.store else {
            unreachable!("writer() made one")
        };
        let rebuilt = w.append_line(line.as_bytes()).map_err(js_error)?;
        let anew = reread || rebuilt || self.s().entries_len() < before;
        self.renumber(if anew { 0 } else { before });
        Ok(anew)
    }

    /// Take in what another process appended to the file since (complete lines only).
    /// Returns how many entries came in.
    #[napi]
    pub fn refresh(&mut self) -> Result<Refreshed> {
        let before = self.s().entries_len();
        let r = self.s_mut().refresh().map_err(js_error)?;
        let after = self.s().entries_len();
        let rebuilt = r.rebuilt || after < before;
        self.renumber(if rebuilt { 0 } else { before });
        Ok(Refreshed {
            added: after.saturating_sub(before) as u32,
            rebuilt,
        })
    }

    /// Keep the file's session in memory only (pi's `setSessionFile` on a session that
    /// does not persist): migrated as pi migrates it in memory, never written.
    #[napi]
    pub fn keep_in_memory(&mut self) -> Result<()> {
        if let Store::Read(s) = &self.store {
            let cwd = self.cwd.clone().unwrap_or_default();
            let w = Writer::in_memory_of(&cwd, s, Entropy::default()).map_err(js_error)?;
            self.store = Store::Write(w);
            self.renumber(0);
        }
        Ok(())
    }

    /// The working directory new headers record (pi's resolved `cwd`).
    #[napi]
    pub fn set_cwd(&mut self, cwd: String) {
        if let Store::Write(w) = &mut self.store {
            w.set_cwd(&cwd);
        }
        self.cwd = Some(cwd);
    }

    /// pi's `createBranchedSession(leafId)`: the new file (`null` for an in-memory session)
    /// and, for each entry kept, its place in the path and its relinked members.
    #[napi]
    pub fn create_branched_session(&mut self, leaf: String) -> Result<BranchedSession> {
        let (w, _) = self.writer()?;
        let b = w.create_branched_session_relinked(&leaf).map_err(js_error)?;
        self.renumber(0);
        let kept = b
            .relinked
            .into_iter()
            .map(|r| Kept {
                at: r.at as u32,
                parent_id: Js(r.parent_id),
                compaction: r.first_kept_entry_id.is_some(),
                first_kept_entry_id: r.first_kept_entry_id.flatten().map(Js),
            })
            .collect();
        Ok(BranchedSession {
            file: b.file.map(|f| f.to_string_lossy().into_owned()),
            kept,
        })
    }

    /// The system message a compaction appended now records (pi's
    /// `getCurrentSystemMessage` of the context's messages), or `null`.
    #[napi]
    pub fn system_message(&self) -> Result<Js<'_>> {
        let s = self.s();
        let c = s.context(s.leaf()).map_err(js_error)?;
        let system = c
            .messages
            .iter()
            .filter(|m| m.role == pi_session::Role::System)
            .map(|m| s.message(m))
            .collect::<pi_session::Result<Vec<_>>>()
            .map_err(js_error)?;
        Ok(js_or_null(
            pi_session::current_system_message(&system).map(Value::Object),
        ))
    }

    /// The session file (`null`: in memory).
    #[napi]
    pub fn file(&self) -> Option<String> {
        let f = match &self.store {
            Store::Read(s) => s.path(),
            Store::Write(w) => w.file(),
        };
        f.map(|p| p.to_string_lossy().into_owned())
    }

    /// Whether a user or assistant message has been written to the file.
    #[napi]
    pub fn is_flushed(&self) -> bool {
        match &self.store {
            Store::Read(_) => true,
            Store::Write(w) => w.is_flushed(),
        }
    }

    /// pi's `loadEntriesFromFile(path)` (the library's `load_entries_from_file`): every
    /// line `JSON.parse` accepts, unmigrated; `[]` when the file is missing or no session;
    /// a line break appended after a last line without one.
    #[napi]
    pub fn load_entries(path: String) -> Result<Js<'static>> {
        let entries = pi_session::load_entries_from_file(Path::new(&path)).map_err(js_error)?;
        Ok(Js(Value::Array(entries)))
    }

    /// `getHeader()` (`null` when there is none).
    #[napi]
    pub fn header(&self) -> Result<Js<'_>> {
        Ok(Js(self.s().header().map_err(js_error)?))
    }

    /// `getEntries().length`.
    #[napi]
    pub fn entry_len(&self) -> u32 {
        self.s().entries().len() as u32
    }

    /// `getEntryCount()`: distinct ids.
    #[napi]
    pub fn entry_count(&self) -> u32 {
        self.s().entry_count() as u32
    }

    /// Entry `k` of `getEntries()` (after pi's migrations), made when asked for.
    #[napi(ts_return_type = "Record<string, unknown>")]
    pub fn entry(&self, k: u32) -> Result<Js<'_>> {
        let p = *self
            .s()
            .entries()
            .get(k as usize)
            .ok_or_else(|| napi::Error::from_reason(format!("no entry {k}")))?;
        Ok(Js(self.s().value(p).map_err(js_error)?))
    }

    /// Entries `numbers` of `getEntries()`, made in order on this thread while the ones
    /// after them are decoded on another (for the many entries a context or
    /// `getEntries()` hands out at once).
    /// With `define`, string values of [`js::DEFER_BYTES`] of JSON or more are not made:
    /// `define(object, key, offset, length)` is called in their place, to define a member
    /// that reads them from the file when first read (`index.js`, `deferString`).
    #[napi(ts_return_type = "Array<Record<string, unknown>>")]
    pub fn entries_made(
        &self,
        numbers: Vec<u32>,
        #[napi(ts_arg_type = "(object: object, key: string, offset: number, length: number) => void")] define: Option<
            Unknown<'_>,
        >,
    ) -> Result<MadeEntries<'_>> {
        let s = self.s();
        let pos = numbers
            .iter()
            .map(|&k| {
                s.entry_at(k as usize)
                    .ok_or_else(|| napi::Error::from_reason(format!("no entry {k}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(MadeEntries {
            s,
            pos,
            define: define.map(|f| f.raw()),
        })
    }

    /// Where the long strings of the entries made next are read from when first read:
    /// `null` when they cannot wait (the session is not a mapped file's bytes, or differs
    /// from them), and are made with their entries.
    #[napi]
    pub fn texts(&mut self) -> Result<Option<LazyTexts>> {
        let len = self.s().bytes().len() as u64;
        if self.texts.as_ref().is_none_or(|t| t.len() < len) {
            self.texts = self.s().reopen_bytes().map_err(js_error)?.map(std::sync::Arc::new);
        }
        Ok(self.texts.clone().map(|src| LazyTexts { src }))
    }

    /// The number of `getEntry(id)`'s entry (the later one when ids repeat).
    #[napi]
    pub fn entry_number(&self, id: String) -> Option<u32> {
        self.s().entry_by_id(&Key::str(&id)).map(|p| self.number[p.0 as usize])
    }

    /// `getLeafId()` (see [`NativeSession::leaf_id_is_undefined`]). An id that is an
    /// object or an array is read from the file: the file changed if it no longer holds it.
    #[napi]
    pub fn leaf_id(&self) -> Result<Js<'_>> {
        let v = self.s().leaf_id_value();
        if matches!(self.s().leaf(), Key::Unique(_)) {
            self.check_file()?;
        }
        Ok(Js(v))
    }

    /// Whether `getLeafId()` is `undefined` (the last entry has no id), not a value.
    #[napi]
    pub fn leaf_id_is_undefined(&self) -> bool {
        matches!(self.s().leaf(), Key::Undefined)
    }

    /// The number of `getLeafEntry()`'s entry, if any.
    #[napi]
    pub fn leaf_number(&self) -> Option<u32> {
        if !self.s().leaf().truthy() {
            return None;
        }
        self.s().entry_by_id(self.s().leaf()).map(|p| self.number[p.0 as usize])
    }

    /// `getChildren(parentId)` for a string or `null` parent: entries in `byId` order
    /// (first appearance of each id, its later entry) whose `parentId` is that.
    #[napi]
    pub fn children_numbers(&self, parent_id: Option<String>) -> Vec<u32> {
        let target = parent_id.as_deref().map_or(Key::Null, Key::str);
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for &p in self.s().entries() {
            let id = self.s().record(p).id;
            if !seen.insert(id) {
                continue;
            }
            if let Some(q) = self.s().entry_by_id(id)
                && self.s().record(q).parent == target
            {
                out.push(self.number[q.0 as usize]);
            }
        }
        out
    }

    /// `getLabel(id)` (`null`: unlabelled; `undefined` in pi).
    #[napi]
    pub fn label(&self, id: String) -> Result<Option<Js<'_>>> {
        Ok(self.s().label(&id).map_err(js_error)?.map(Js))
    }

    /// `getBranch(fromId)`: entry numbers from the root.
    #[napi]
    pub fn branch_numbers(&self, from_id: Option<String>) -> Result<Vec<u32>> {
        let from = from_id.as_deref().map(Key::str);
        let path = self.s().branch_path(from.as_ref()).map_err(js_error)?;
        Ok(self.numbers(path))
    }

    /// `buildContextEntries()`: entry numbers.
    #[napi]
    pub fn context_entry_numbers(&self) -> Result<Vec<u32>> {
        let path = self.s().context_entries(self.s().leaf()).map_err(js_error)?;
        Ok(self.numbers(path))
    }

    /// `buildSessionContext()`: which entry gives each message, and how (see
    /// [`ContextValue`]); nothing of the messages is decoded here.
    #[napi]
    pub fn context(&self) -> Result<ContextValue<'_>> {
        let s = self.s();
        let c = s.context(s.leaf()).map_err(js_error)?;
        let mut projections = Vec::with_capacity(c.messages.len());
        for m in &c.messages {
            projections.push(match m.projection {
                Projection::Message => 0,
                Projection::Custom => 1,
                Projection::BranchSummary => 2,
                Projection::CompactionSystem => 3,
                Projection::CompactionSummary => 4,
                // (Not asked for: the context is built with `RetainedTail::Ignore`, as pi's.)
                _ => return Err(napi::Error::from_reason("a projection pi's context does not make")),
            });
        }
        let entries = self.numbers(c.messages.iter().map(|m| m.entry));
        let edits = c
            .messages
            .iter()
            .map(|m| m.edit.map_or(-1, |e| self.number[e.0 as usize] as i32))
            .collect();
        let mut o = pi_session::Object::new();
        if let Some(t) = c.thinking_level {
            o.set(pi_session::JsStr::from_str("thinkingLevel"), t);
        }
        o.set(
            pi_session::JsStr::from_str("model"),
            c.model.map_or(Value::Null, Value::Object),
        );
        Ok(ContextValue {
            settings: Js(Value::Object(o)),
            projections,
            entries,
            edits,
        })
    }

    /// `getTree()`: its nodes in preorder, each `[number, parent, label,
    /// labelTimestamp]` (`parent`: the slot of the parent node in this list, -1 for a
    /// root; the label parts only when the entry is labelled, the time only when the
    /// label entry has one). Flat, so that no side recurses on a deep chain.
    #[napi]
    pub fn tree(&self) -> Result<Js<'_>> {
        let tree = self.s().tree().map_err(js_error)?;
        let mut out = Vec::new();
        // The slot of the last node seen at each depth.
        let mut at_depth: Vec<usize> = Vec::new();
        for (slot, (depth, node)) in tree.preorder().into_iter().enumerate() {
            at_depth.truncate(depth);
            let parent = at_depth.last().map_or(-1.0, |&p| p as f64);
            at_depth.push(slot);
            let mut n = vec![
                Value::Number(f64::from(self.number[node.0 as usize])),
                Value::Number(parent),
            ];
            if let Some(l) = self.s().label_entry(self.s().record(node).id) {
                let mut v = self.s().value(l).map_err(js_error)?;
                if let Value::Object(o) = &mut v {
                    // (A missing timestamp is left out: `undefined` in pi's node.)
                    n.extend(o.remove("label"));
                    n.extend(o.remove("timestamp"));
                }
            }
            out.push(Value::Array(n));
        }
        Ok(Js(Value::Array(out)))
    }

    /// `getSessionName()` (`null`: none; `undefined` in pi).
    #[napi]
    pub fn session_name(&self) -> Result<Option<Js<'static>>> {
        Ok(self.s().session_name().map_err(js_error)?.map(|n| Js(Value::String(n))))
    }

    /// PiG's `GetBranch()`: the current branch, root first, each entry flattened to its
    /// common fields (one JSON text each).
    #[napi]
    pub fn branch_view(&self) -> Result<Vec<String>> {
        let items = self.s().branch_items().map_err(js_error)?;
        Ok(items.iter().map(pi_session::BranchItem::to_json).collect())
    }

    /// PiG's `GetEntries()`: each entry's line exactly as written.
    #[napi]
    pub fn raw_entries(&self) -> Result<Vec<Buffer>> {
        let s = self.s();
        let out = s.entries().iter().map(|&p| Buffer::from(s.raw(p).to_vec())).collect();
        // The bytes were the file's only if it did not change meanwhile.
        s.verify().map_err(js_error)?;
        Ok(out)
    }

    /// For each entry number, the entry's line (1: the first line of the bytes).
    #[napi]
    pub fn entry_lines(&self) -> Vec<u32> {
        let s = self.s();
        (0..s.entries_len())
            .map(|k| s.entry_at(k).map_or(0, |p| s.record(p).line.0 as u32))
            .collect()
    }

    /// `branch(id)`: move the leaf (pi's error when no entry has that id).
    #[napi]
    pub fn branch(&mut self, id: String) -> Result<()> {
        self.s_mut().branch(&id).map_err(js_error)
    }

    /// `resetLeaf()`.
    #[napi]
    pub fn reset_leaf(&mut self) {
        self.s_mut().reset_leaf();
    }

    /// Put the leaf on the id whose JSON text is `leaf_json` (none: `undefined`), unchecked:
    /// for `index.js` keeping the leaf of a session whose answers it gives from the entries
    /// it holds (see [`NativeSession::check_file`]).
    #[napi]
    pub fn set_leaf(&mut self, leaf_json: Option<String>) -> Result<()> {
        let leaf = match &leaf_json {
            Some(j) => Some(Value::parse(j.as_bytes()).map_err(|e| napi::Error::from_reason(e.to_string()))?),
            None => None,
        };
        let key = pi_session::key_from_value(leaf.as_ref());
        self.s_mut().set_leaf_raw(key);
        Ok(())
    }

    /// The number of the entry whose id is the leaf, when that id is an object or an
    /// array (unique, as pi's `Map` keys by identity), which JSON cannot carry over.
    /// (Such keys are held in memory, not read from the file: found by comparing them.)
    #[napi]
    pub fn leaf_number_if_unique(&self) -> Option<u32> {
        let s = self.s();
        let leaf = s.leaf();
        if !matches!(leaf, Key::Unique(_)) {
            return None;
        }
        (0..s.entries_len())
            .rev()
            .find(|&k| s.entry_at(k).is_some_and(|p| s.record(p).id.to_key() == *leaf))
            .map(|k| k as u32)
    }

    /// Whether the entries were migrated in memory from version 1, which gave each an id:
    /// an array on a line of its own too, which its JSON cannot carry.
    #[napi]
    pub fn migrated_from_v1(&self) -> bool {
        self.s().migration() == pi_session::Migration::FromV1
    }

    /// Put the leaf on the id of entry `k` (whatever kind of value that id is).
    #[napi]
    pub fn set_leaf_to_id_of(&mut self, k: u32) -> Result<()> {
        let p = self
            .s()
            .entry_at(k as usize)
            .ok_or_else(|| napi::Error::from_reason(format!("no entry {k}")))?;
        let key = self.s().record(p).id.to_key();
        self.s_mut().set_leaf_raw(key);
        Ok(())
    }

    /// Fails with the library's "the file changed" error (naming the file) when the
    /// session's bytes are a mapping of its file and the file is now shorter than they
    /// are (another process cut it short), or a read of the mapping met the cut. Every
    /// answer read from the mapping would then fail, or, for the ids of lines indexed after
    /// the open (whose keys are read from the file), be wrong. One `fstat` and the header's
    /// line; nothing to check for bytes held in memory. (A rewrite in place that leaves
    /// the file as long shows only in its bytes: see `Session::verify`.)
    #[napi]
    pub fn check_file(&self) -> Result<()> {
        let s = self.s();
        if !s.is_mapped() {
            return Ok(());
        }
        s.header().map(drop).map_err(js_error)
    }
}

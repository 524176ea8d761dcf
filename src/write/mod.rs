//! The write side: everything pi's `SessionManager` writes, byte-compatible, losing nothing.
//!
//! A [`Writer`] holds a [`Session`] whose bytes are always exactly what is (or, before the
//! first user or assistant message, what will be) on disk. Every append serialises one
//! entry the way pi's `JSON.stringify` does ([`crate::json::stringify::stringify`]), writes it as one
//! `O_APPEND` write, and then indexes only the new bytes. Nothing before the append is ever
//! rewritten; when pi would rewrite a file on open (a v1/v2 migration, a header for a
//! zero-byte file) pi-session does it atomically (temporary file, fsync, rename), keeping
//! every unknown field. A failed write leaves memory as it was and the file as it was
//! (a partial line is truncated away). One error comes after a write that succeeded:
//! [`crate::ErrorKind::FileChanged`] when the file changed under the session so that it
//! cannot take the new line in ([`Session::refresh`]); the line is then in the file, and
//! the file should be opened again. In memory, the session's bytes grow in place and only
//! the new line is indexed, as after a write to the file.
//!
//! Files: `mod.rs` (the writer, construction, open, [`migrate_file`]), `call.rs` (every
//! entry pi appends, built as pi builds it, from a host's arguments), `append.rs` (the
//! appends with Rust arguments, and the one path a line takes), `branch.rs` (fork and branch), `fs.rs` (whole files through a temporary file,
//! appended lines through `journal.rs`).
//!
//! Hostile folders: a sessions folder may be writable by others (shared, group-writable,
//! a sandboxed tool's). Nothing pi-session creates there follows or reuses a name someone
//! planted: the journal and temporary files are created `O_EXCL | O_NOFOLLOW`, an existing
//! journal is inspected without following it and read only up to its maximum size
//! (`journal.rs`); a rewrite goes through a symlinked session to its target and keeps the
//! owner, group and mode, and temporary files never end in `.jsonl` (`fs.rs`). Waiting for
//! the append lock is bounded ([`WriteOptions`]).
//!
//! Crashes: `kill -9` at any moment leaves the old file or the new one. Rewrites and new
//! files get that from rename/link. An append can be cut between pages by the kernel when
//! the process is killed inside its `write()`, so appends run under an advisory lock and,
//! when they could tear, behind a roll-back journal (`.<file name>.append`); the next
//! writer ([`Writer::open`], [`migrate_file`], any append, or [`crate::recover`]) cuts a
//! torn line back to the old file before it reads. Power loss is out of scope (appends are
//! not fsynced, as pi's are not). Details, and what is not protected (a pi process
//! appending at the same time), in [`crate::recover`]'s module (`src/write/journal.rs`).
//!
//! Rules follow pi 1.6.0 (SPEC.md "Writing"): a new session stays in memory until it holds
//! a user or assistant message, then the whole file is created exclusively; entry ids are
//! 8 hex digits re-drawn on collision; session ids are UUIDv7; file names are
//! `<ISO time with : and . as ->_<id>.jsonl`.

mod append;
mod branch;
mod call;
mod fs;
pub(crate) mod journal;
mod load;
pub mod message;

pub use branch::{Branched, Relinked};
pub use call::{Append, Appended, Members};
pub use load::load_entries_from_file;

use crate::error::{Error, InvalidInput, Result};
use crate::index::{EntryType, Role};
use crate::js::string::JsStr;
use crate::json::value::{Object, Value};
use crate::session::{FileChange, OpenOptions, Session};
use crate::source::ReadMode;
use crate::write::fs::{io_at, write_atomic};
use crate::write::journal::{JournalUse, Recovery, WriteOptions, append_locked, with_lock};
use std::path::{Path, PathBuf};

/// Where time and ids come from (tests make them deterministic).
pub struct Entropy {
    /// `new Date().toISOString()`.
    pub now: Box<dyn FnMut() -> String + Send + Sync>,
    /// A random UUID v4 as text (pi takes entry ids from its first 8 characters).
    pub uuid4: Box<dyn FnMut() -> String + Send + Sync>,
    /// A new UUIDv7 session id.
    pub uuid7: Box<dyn FnMut() -> String + Send + Sync>,
}

impl Default for Entropy {
    fn default() -> Self {
        Entropy {
            now: Box::new(crate::js::time::now_iso),
            uuid4: Box::new(|| uuid::Uuid::new_v4().hyphenated().to_string()),
            uuid7: Box::new(|| uuid::Uuid::now_v7().hyphenated().to_string()),
        }
    }
}

impl Entropy {
    /// Deterministic time and ids from a seed (for tests and reproducible fixtures): the
    /// clock starts at `start_ms` and advances one second per call.
    pub fn seeded(seed: u64, start_ms: i64) -> Entropy {
        let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
        let next = move || crate::session::migrate::splitmix64(&mut state);
        let rng = std::sync::Arc::new(std::sync::Mutex::new(next));
        let r4 = rng.clone();
        let r7 = rng;
        let mut t = start_ms;
        let mut t7 = start_ms;
        Entropy {
            now: Box::new(move || {
                t += 1000;
                crate::js::time::iso_from_ms(t as f64).unwrap_or_default()
            }),
            uuid4: Box::new(move || {
                let a = (r4.lock().expect("rng lock"))();
                let b = (r4.lock().expect("rng lock"))();
                uuid::Uuid::from_u64_pair(a, b).hyphenated().to_string()
            }),
            uuid7: Box::new(move || {
                t7 += 1;
                let r = (r7.lock().expect("rng lock"))();
                let mut b = [0u8; 16];
                b[..6].copy_from_slice(&(t7 as u64).to_be_bytes()[2..]);
                b[6..14].copy_from_slice(&r.to_be_bytes());
                b[14..].copy_from_slice(&(r as u16).wrapping_mul(31).to_be_bytes());
                b[6] = 0x70 | (b[6] & 0x0F);
                b[8] = 0x80 | (b[8] & 0x3F);
                uuid::Uuid::from_bytes(b).hyphenated().to_string()
            }),
        }
    }
}

/// pi's `assertValidSessionId`: `^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$`.
pub fn valid_session_id(id: &str) -> bool {
    let b = id.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-');
    !b.is_empty() && b[0].is_ascii_alphanumeric() && b[b.len() - 1].is_ascii_alphanumeric() && b.iter().all(inner)
}

/// A pi session open for writing (pi's `SessionManager`).
pub struct Writer {
    session: Session,
    /// The session file (None: in memory only).
    file: Option<PathBuf>,
    persist: bool,
    flushed: bool,
    cwd: String,
    session_dir: PathBuf,
    entropy: Entropy,
    /// What opening the file found of an interrupted append.
    recovery: Recovery,
    /// How to wait for the append lock.
    options: WriteOptions,
    /// How the last append to the file used the journal.
    last_journal: JournalUse,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("file", &self.file)
            .field("flushed", &self.flushed)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

fn set<'a>(o: &mut Object<'a>, k: &'static str, v: Value<'a>) {
    o.set(JsStr::from_str(k), v);
}

fn put<'a>(o: &mut Object<'a>, k: &'static str, v: Option<Value<'a>>) {
    if let Some(v) = v {
        set(o, k, v);
    }
}

/// `line` (its final `\n` optional) ended with `\n`, when it is exactly one line that
/// the reader keeps as a JSON object (pi's line test, without decoding it) and holds no
/// `\r` (which `JSON.stringify` never writes); else `None`.
fn object_line(line: &[u8]) -> Option<Vec<u8>> {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    if memchr::memchr2(b'\n', b'\r', body).is_some()
        || !matches!(crate::index::line::scan_line(body), crate::index::line::Line::Object(_))
    {
        return None;
    }
    let mut owned = Vec::with_capacity(body.len() + 1);
    owned.extend_from_slice(body);
    owned.push(b'\n');
    Some(owned)
}

fn line_of(v: &Value<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    crate::json::stringify::stringify_into(&mut out, v);
    out.push(b'\n');
    out
}

/// What [`Writer::new_session_call`] made.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// The header's line.
    pub line: Vec<u8>,
    /// The header's members in pi's order, each with the option whose value it holds
    /// (`None`: read it from the line), as [`Appended::members`].
    pub members: call::Members,
    /// The file the session will be written to (`None`: in memory).
    pub file: Option<PathBuf>,
}

/// A version-3 header as pi writes it: `type, version, id, timestamp, cwd[, parentSession]`.
fn header_object(id: String, timestamp: String, cwd: String, parent_session: Option<String>) -> Object<'static> {
    let mut h = Object::new();
    set(&mut h, "type", Value::str("session"));
    set(&mut h, "version", Value::Number(3.0));
    set(&mut h, "id", Value::string(id));
    set(&mut h, "timestamp", Value::string(timestamp));
    set(&mut h, "cwd", Value::string(cwd));
    put(&mut h, "parentSession", parent_session.map(Value::string));
    h
}

impl Writer {
    // ----- construction ---------------------------------------------------------------

    fn blank(cwd: &str, session_dir: PathBuf, persist: bool, entropy: Entropy) -> Writer {
        Writer {
            session: Session::from_bytes(Vec::new()).expect("an empty buffer opens as a new session"),
            file: None,
            persist,
            flushed: false,
            cwd: cwd.to_string(),
            session_dir,
            entropy,
            recovery: Recovery::Clean,
            options: WriteOptions::default(),
            last_journal: JournalUse::NotNeeded,
        }
    }

    /// pi's `SessionManager.create(cwd, sessionDir)`: a new session (in memory until its
    /// first user or assistant message) in `session_dir`.
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) when the folder cannot be created.
    pub fn create(cwd: &str, session_dir: &Path, entropy: Entropy) -> Result<Writer> {
        std::fs::create_dir_all(session_dir).map_err(io_at(session_dir))?;
        let mut w = Writer::blank(cwd, session_dir.to_path_buf(), true, entropy);
        w.new_session(None, None)?;
        Ok(w)
    }

    /// pi's `SessionManager.inMemory(cwd)`: never written to disk.
    pub fn in_memory(cwd: &str, entropy: Entropy) -> Writer {
        let mut w = Writer::blank(cwd, PathBuf::new(), false, entropy);
        w.new_session(None, None).expect("an in-memory session needs no I/O");
        w
    }

    /// pi's `SessionManager.continueRecent(cwd, sessionDir)`: the most recent session of the
    /// folder (by mtime, with a header; when `session_dir` is a custom folder, only
    /// sessions of `cwd`), or a new one. `session_dir` defaults to the project folder of
    /// `cwd` under the agent dir.
    ///
    /// # Errors
    /// I/O errors; [`ErrorKind::NotASession`](crate::ErrorKind::NotASession) is impossible here (only headers are chosen).
    pub fn continue_recent(
        env: &crate::listing::dirs::Env,
        cwd: &Path,
        session_dir: Option<&Path>,
        entropy: Entropy,
    ) -> Result<Writer> {
        let agent = env.agent_dir(None);
        let default_dir = env.default_session_dir(cwd, &agent);
        let dir = session_dir.map_or_else(|| default_dir.clone(), |d| env.normalize_path(d));
        let filter = session_dir.is_some() && !env.paths_equal(&dir, &default_dir);
        let cwd_text = env.resolve_path(cwd).display().to_string();
        match crate::listing::find_most_recent(env, &dir, filter.then_some(cwd)) {
            Some(path) => {
                let mut w = Writer::open(&path, Some(&dir), entropy)?;
                w.cwd = cwd_text;
                Ok(w)
            }
            None => Writer::create(&cwd_text, &dir, entropy),
        }
    }

    /// pi's `setSessionFile(path)`: switch to another file (opened as [`Writer::open`]
    /// does), keeping this writer's session folder and clock.
    ///
    /// # Errors
    /// As [`Writer::open`].
    pub fn set_session_file(&mut self, path: &Path) -> Result<()> {
        let entropy = std::mem::take(&mut self.entropy);
        let dir = self.session_dir.clone();
        let next = Writer::open_with(path, Some(&dir), entropy, self.options)?;
        *self = next;
        Ok(())
    }

    /// pi's `SessionManager.open(path, sessionDir)`, made safe: first an append that a crash
    /// interrupted is finished or undone ([`crate::recover`]; see [`Writer::recovery`]),
    /// then a missing final newline is appended (as pi does) and a v1/v2 file is migrated
    /// and rewritten atomically (pi rewrites in place); a zero-byte file gets a header.
    /// `session_dir` defaults to the file's folder. All of it runs under the append lock
    /// (waiting as [`WriteOptions::default`] says), so no pi-session append lands between
    /// the read and a rewrite.
    ///
    /// # Errors
    /// [`ErrorKind::NotASession`](crate::ErrorKind::NotASession) (the file is left untouched), I/O errors (including a
    /// pending append journal on a file this process cannot write, a journal name holding
    /// something pi-session never writes, and a lock held past the timeout).
    pub fn open(path: &Path, session_dir: Option<&Path>, entropy: Entropy) -> Result<Writer> {
        Writer::open_with(path, session_dir, entropy, WriteOptions::default())
    }

    /// [`Writer::open`] with these write options (kept for the writer's appends).
    ///
    /// # Errors
    /// As [`Writer::open`].
    pub fn open_with(
        path: &Path,
        session_dir: Option<&Path>,
        entropy: Entropy,
        options: WriteOptions,
    ) -> Result<Writer> {
        // pi's open: `resolvePath(path)`, so that the file, its folder and a branched
        // session's `parentSession` are absolute whatever the working directory.
        let resolved = resolve_path(path);
        let path = resolved.as_path();
        let dir = session_dir.map(Path::to_path_buf).unwrap_or_else(|| {
            path.parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from("."))
        });
        let opts = OpenOptions {
            read_mode: ReadMode::Auto,
            chunk: None,
            release_pages: false,
            v1_ids: options.v1_ids,
        };
        let mut entropy = entropy;
        let (session, recovery, cwd) = if path.exists() {
            // An append that a crash interrupted is finished or undone before reading.
            with_lock(path, &options, |file, recovery| {
                let source = crate::source::Source::open(path, opts.read_mode).map_err(io_at(path))?;
                let session =
                    Session::from_source_with_ids(source, opts, &mut entropy.uuid4).map_err(|e| e.with_path(path))?;
                let cwd = match session.header() {
                    Ok(h) => h.get("cwd").and_then(Value::as_str).map(str::to_owned),
                    Err(_) => None,
                };
                let session = match session.file_change() {
                    FileChange::None => session,
                    FileChange::AppendedNewline => {
                        drop(session);
                        append_locked(file, path, b"\n", true)?;
                        Session::open_with(path, opts)?
                    }
                    FileChange::Rewritten => {
                        let text = crate::session::migrate::rewrite_text(&session)?;
                        drop(session);
                        write_atomic(path, &text)?;
                        Session::open_with(path, opts)?
                    }
                };
                Ok((session, recovery, cwd))
            })?
        } else {
            // pi: a missing file is a new session that will be written at this path.
            let mut w = Writer::blank(
                &std::env::current_dir()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                dir,
                true,
                entropy,
            );
            w.new_session(None, None)?;
            w.file = Some(path.to_path_buf());
            w.options = options;
            return Ok(w);
        };
        let cwd = cwd.unwrap_or_else(|| {
            std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        });
        Ok(Writer {
            session,
            file: Some(path.to_path_buf()),
            persist: true,
            flushed: true,
            cwd,
            session_dir: dir,
            entropy,
            recovery,
            options,
            last_journal: JournalUse::NotNeeded,
        })
    }

    /// pi's `newSession({id, parentSession})`: start a fresh session (in memory until its
    /// first user or assistant message). Returns the file it will be written to.
    ///
    /// # Errors
    /// An invalid `id` (pi's `assertValidSessionId`).
    pub fn new_session(&mut self, id: Option<&str>, parent_session: Option<&str>) -> Result<Option<PathBuf>> {
        let options = call::args([
            ("id", id.map(Value::str)),
            ("parentSession", parent_session.map(Value::str)),
        ]);
        self.new_session_call(&options, None).map(|n| n.file)
    }

    /// pi's `newSession(options)` as a host language calls it: `options` holds the
    /// caller's `id` and `parentSession` as JSON values (missing: `undefined`); `file`, when
    /// given, is the file the session will be written to (pi's `setSessionFile` of a file
    /// that does not exist yet) instead of a new name in the session folder. Returns the
    /// header's line and members, as [`Writer::append_call`] returns an entry's.
    ///
    /// # Errors
    /// An invalid `id` (pi's `assertValidSessionId`, on `String(id)`).
    pub fn new_session_call(&mut self, options: &Object<'_>, file: Option<PathBuf>) -> Result<NewSession> {
        // `options?.id ?? uuidv7()`, after `assertValidSessionId(options.id)` when it is not
        // `undefined` (`null` passes: its text "null" is a valid id).
        if let Some(Value::Null) = options.get("id") {
            debug_assert!(valid_session_id("null"));
        }
        let id = options.get("id").filter(|v| !matches!(v, Value::Null));
        let sid = match id {
            Some(v) => {
                let text = v.to_js_string();
                if !valid_session_id(&text) {
                    return Err(invalid_id(&text));
                }
                text
            }
            None => (self.entropy.uuid7)(),
        };
        let ts = (self.entropy.now)();
        let mut h = Object::new();
        set(&mut h, "type", Value::str("session"));
        set(&mut h, "version", Value::Number(3.0));
        set(&mut h, "id", id.cloned().unwrap_or_else(|| Value::string(sid.clone())));
        set(&mut h, "timestamp", Value::string(ts.clone()));
        set(&mut h, "cwd", Value::string(self.cwd.clone()));
        put(&mut h, "parentSession", options.get("parentSession").cloned());
        let line = line_of(&Value::Object(h));
        self.session = Session::from_bytes(line.clone())?;
        self.flushed = false;
        if self.persist {
            self.file = Some(file.unwrap_or_else(|| {
                self.session_dir
                    .join(format!("{}_{sid}.jsonl", ts.replace([':', '.'], "-")))
            }));
        }
        Ok(NewSession {
            line,
            members: vec![
                ("type", None),
                ("version", None),
                ("id", id.map(|_| "id")),
                ("timestamp", None),
                ("cwd", None),
                ("parentSession", Some("parentSession")),
            ],
            file: self.file.clone(),
        })
    }

    /// [`Writer::new_session`] with a header another serialiser made (a JavaScript host
    /// keeping pi's header object): `header_line` must be one JSON object with
    /// `"type":"session"` on one line. The session is in memory until its first user or
    /// assistant message; it will be written to `file` (`None`: nowhere, as an in-memory
    /// session).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) when the line is no
    /// session header.
    pub fn start_session(&mut self, header_line: &[u8], file: Option<PathBuf>) -> Result<()> {
        let header = object_line(header_line).filter(|line| {
            let index = crate::index::build(line);
            index.iter(line).next().is_some_and(|r| r.ty == EntryType::Session)
        });
        let Some(line) = header else {
            return Err(InvalidInput::Entry {
                message: "a session header must be one JSON object with \"type\":\"session\" on one line".into(),
            }
            .into());
        };
        self.session = Session::from_bytes(line)?;
        self.flushed = false;
        self.file = if self.persist { file } else { None };
        Ok(())
    }

    /// pi's `_rewriteFile()` for a session not yet written: the file is created (replaced
    /// atomically if it exists) with the session as it stands, and appends go to it from
    /// now on. pi does this when it opens a zero-byte file.
    ///
    /// # Errors
    /// I/O errors; nothing to write to for an in-memory session.
    pub fn write_now(&mut self) -> Result<()> {
        let Some(path) = self.file.clone().filter(|_| self.persist) else {
            return Err(InvalidInput::Entry {
                message: "an in-memory session has no file to write".into(),
            }
            .into());
        };
        write_atomic(&path, self.session.bytes())?;
        self.session = Session::open(&path)?;
        self.flushed = true;
        Ok(())
    }

    /// pi's `setSessionFile` on a session that does not persist: an in-memory writer
    /// holding `session` as pi holds a file it loaded (a version 1 or 2 file migrated, a
    /// torn last line ended), never written anywhere.
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`](crate::ErrorKind::FileChanged) when the file changed
    /// under the session's mapping; an entry too deep to migrate.
    pub fn in_memory_of(cwd: &str, session: &Session, entropy: Entropy) -> Result<Writer> {
        let mut bytes = match session.file_change() {
            FileChange::Rewritten => crate::session::migrate::rewrite_text(session)?,
            _ => session.bytes().to_vec(),
        };
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        let mut w = Writer::blank(cwd, PathBuf::new(), false, entropy);
        w.session = Session::from_bytes(bytes)?;
        w.flushed = true;
        Ok(w)
    }

    /// Record `cwd` in the headers this writer makes from now on (pi's `cwdOverride`).
    pub fn set_cwd(&mut self, cwd: &str) {
        self.cwd = cwd.to_string();
    }

    // ----- state ----------------------------------------------------------------------

    /// The session as it stands (all of pi's read-side answers).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Mutable access for navigation (`branch`, `reset_leaf`).
    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }

    /// The session file (it may not exist yet: see [`Writer::is_flushed`]).
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// What opening the file did about an append that a crash interrupted (see
    /// [`crate::recover`]): [`Recovery::Clean`] when there was none.
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// How this writer waits for the append lock.
    pub fn write_options(&self) -> &WriteOptions {
        &self.options
    }

    /// Wait for the append lock as `options` say from now on.
    pub fn set_write_options(&mut self, options: WriteOptions) {
        self.options = options;
    }

    /// How the last append to the file used the journal: [`JournalUse::Unavailable`] when
    /// it could not be created (a folder the caller cannot write to) and the line went in
    /// unjournaled, as pi appends (see [`crate::recover`]'s module).
    pub fn last_append_journal(&self) -> &JournalUse {
        &self.last_journal
    }

    /// Whether the file has been created.
    pub fn is_flushed(&self) -> bool {
        self.flushed
    }

    /// The working directory recorded in new headers.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// pi's `branch(id)`.
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`](crate::ErrorKind::EntryNotFound).
    pub fn branch(&mut self, id: &str) -> Result<()> {
        self.session.branch(id)
    }

    /// pi's `resetLeaf()`.
    pub fn reset_leaf(&mut self) {
        self.session.reset_leaf();
    }

    /// pi's `_hasConversation()`: a user or assistant message exists.
    fn has_conversation(s: &Session) -> bool {
        s.entries().iter().any(|&p| {
            let r = s.record(p);
            r.ty == EntryType::Message && matches!(r.role, Role::User | Role::Assistant)
        })
    }
}

/// node's `path.resolve(p)` (the part of pi's `resolvePath` that concerns a path a
/// program passes, no `~` expansion): absolute against the working directory, `.` and
/// `..` folded, no file system access. When the working directory cannot be read, `p`.
pub(crate) fn resolve_path(p: &Path) -> PathBuf {
    if p.is_absolute() {
        return crate::listing::dirs::lexical_normalize(p);
    }
    match std::env::current_dir() {
        Ok(cwd) => crate::listing::dirs::lexical_normalize(&cwd.join(p)),
        Err(_) => p.to_path_buf(),
    }
}

fn invalid_id(id: &str) -> Error {
    InvalidInput::SessionId { id: id.to_string() }.into()
}

/// Migrate a file in place, atomically, as pi's open would (v1/v2 to v3, header for a
/// zero-byte file, newline after a torn last line), after [`crate::recover`] has undone a
/// torn append of pi-session's own, all under the append lock. A symlinked file is
/// migrated through the link (the link stays); the owner, group and mode are kept.
/// Returns what was done.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let f = dir.path().join("s.jsonl");
/// std::fs::write(&f, "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}").unwrap();
/// assert_eq!(pi_session::migrate_file(&f).unwrap(), pi_session::FileChange::AppendedNewline);
/// assert!(std::fs::read(&f).unwrap().ends_with(b"}\n"));
/// ```
///
/// # Errors
/// [`ErrorKind::NotASession`](crate::ErrorKind::NotASession) (the file is left untouched); I/O errors, including a
/// lock held past [`WriteOptions::default`]'s timeout.
pub fn migrate_file(path: &Path) -> Result<FileChange> {
    migrate_file_with(path, &WriteOptions::default())
}

/// [`migrate_file`], waiting for the lock as `options` say.
///
/// # Errors
/// As [`migrate_file`].
pub fn migrate_file_with(path: &Path, options: &WriteOptions) -> Result<FileChange> {
    if !path.exists() {
        // A missing file: the error Session::open gives.
        return Session::open(path).map(|s| s.file_change());
    }
    with_lock(path, options, |file, _| {
        let s = Session::open(path)?;
        let change = s.file_change();
        match change {
            FileChange::None => {}
            FileChange::AppendedNewline => {
                drop(s);
                append_locked(file, path, b"\n", true)?;
            }
            FileChange::Rewritten => {
                let text = crate::session::migrate::rewrite_text(&s)?;
                drop(s);
                write_atomic(path, &text)?;
            }
        }
        Ok(change)
    })
}

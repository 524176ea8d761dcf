//! The write side: everything pi's `SessionManager` writes, byte-compatible, losing nothing.
//!
//! A [`Writer`] holds a [`Session`] whose bytes are always exactly what is (or, before the
//! first user or assistant message, what will be) on disk. Every append serialises one
//! entry the way pi's `JSON.stringify` does ([`crate::json::stringify::stringify`]), writes it as one
//! `O_APPEND` write, and then indexes only the new bytes. Nothing before the append is ever
//! rewritten; when pi would rewrite a file on open (a v1/v2 migration, a header for a
//! zero-byte file) pi-session does it atomically (temporary file, fsync, rename), keeping
//! every unknown field. A failed write leaves memory as it was and the file as it was
//! (a partial line is truncated away).
//!
//! Crashes: `kill -9` at any moment leaves the old file or the new one. Rewrites and new
//! files get that from rename/link. An append can be cut between pages by the kernel when
//! the process is killed inside its `write()`, so appends run under an advisory lock and,
//! when they could tear, behind a roll-back journal (`.<file name>.append`); the next
//! writer ([`Writer::open`], [`migrate_file`], any append, or [`crate::recover`]) cuts a
//! torn line back to the old file before it reads. Power loss is out of scope (appends are
//! not fsynced, as pi's are not). Details, and what is not protected (a pi process
//! appending at the same time), in [`crate::recover`]'s module (`src/journal.rs`).
//!
//! Rules follow pi 1.6.0 (SPEC.md "Writing"): a new session stays in memory until it holds
//! a user or assistant message, then the whole file is created exclusively; entry ids are
//! 8 hex digits re-drawn on collision; session ids are UUIDv7; file names are
//! `<ISO time with : and . as ->_<id>.jsonl`.

pub(crate) mod journal;

use crate::error::{Error, ErrorKind, Result};
use crate::index::{EntryPos, EntryType, Key, Role};
use crate::js::string::JsStr;
use crate::json::value::{self, Object, Value};
use crate::session::context::current_system_message;
use crate::session::{FileChange, OpenOptions, Session, key_to_value};
use crate::source::ReadMode;
use crate::write::journal::Recovery;
use std::io::Write as _;
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
        let next = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
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

fn io_at(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::from(e).with_path(path)
}

fn set<'a>(o: &mut Object<'a>, k: &'static str, v: Value<'a>) {
    o.set(JsStr::from_str(k), v);
}

fn put<'a>(o: &mut Object<'a>, k: &'static str, v: Option<Value<'a>>) {
    if let Some(v) = v {
        set(o, k, v);
    }
}

fn line_of(v: &Value<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    crate::json::stringify::stringify_into(&mut out, v);
    out.push(b'\n');
    out
}

/// Write `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename.
/// A crash at any point leaves either the old file or the new one (and perhaps a stray
/// `.pi-session-tmp-*` file).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".pi-session-tmp-{}-{}-{name}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        if let Ok(meta) = std::fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io_at(path))
}

/// Append one line with one `O_APPEND` write under the append lock, journaled when it
/// could tear, so that a crash leaves the old file or the new one once recovered (see
/// [`crate::write::journal`]); on failure, our partial line is cut back.
fn append_line(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::write::journal::append(path, bytes, false)
        .map(drop)
        .map_err(io_at(path))
}

/// pi's newline after an unterminated last line, unless the file has one by now (another
/// pi-session was finishing an append when the file was read).
fn terminate_last_line(path: &Path) -> Result<()> {
    crate::write::journal::append(path, b"\n", true)
        .map(drop)
        .map_err(io_at(path))
}

/// Create `path` exclusively (pi's `wx`) with `bytes`, atomically: the bytes go to a
/// temporary file first (fsync), which is then hard-linked to `path` (failing, like `wx`,
/// when `path` exists) and removed. A crash leaves no half-written session file.
fn create_exclusive(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io_at(path))?;
    if path.exists() {
        return Err(Error::from(std::io::Error::from(std::io::ErrorKind::AlreadyExists)).with_path(path));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".pi-session-tmp-{}-{}-{name}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::hard_link(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&tmp);
    result.map_err(io_at(path))
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
        }
    }

    /// pi's `SessionManager.create(cwd, sessionDir)`: a new session (in memory until its
    /// first user or assistant message) in `session_dir`.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when the folder cannot be created.
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
    /// I/O errors; [`ErrorKind::NotASession`] is impossible here (only headers are chosen).
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
        let next = Writer::open(path, Some(&dir), entropy)?;
        *self = next;
        Ok(())
    }

    /// pi's `SessionManager.open(path, sessionDir)`, made safe: first an append that a crash
    /// interrupted is finished or undone ([`crate::recover`]; see [`Writer::recovery`]),
    /// then a missing final newline is appended (as pi does) and a v1/v2 file is migrated
    /// and rewritten atomically (pi rewrites in place); a zero-byte file gets a header.
    /// `session_dir` defaults to the file's folder.
    ///
    /// # Errors
    /// [`ErrorKind::NotASession`] (the file is left untouched), I/O errors (including a
    /// pending append journal on a file this process cannot write).
    pub fn open(path: &Path, session_dir: Option<&Path>, entropy: Entropy) -> Result<Writer> {
        let dir = session_dir.map(Path::to_path_buf).unwrap_or_else(|| {
            path.parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from("."))
        });
        let opts = OpenOptions {
            read_mode: ReadMode::Auto,
            chunk: None,
        };
        let mut entropy = entropy;
        let (session, recovery) = if path.exists() {
            // An append that a crash interrupted is finished or undone before reading.
            let recovery = crate::write::journal::recover(path)?;
            let source = crate::source::Source::open(path, opts.read_mode).map_err(io_at(path))?;
            let session =
                Session::from_source_with_ids(source, opts, &mut entropy.uuid4).map_err(|e| e.with_path(path))?;
            (session, recovery)
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
            return Ok(w);
        };
        let cwd = match session.header() {
            Ok(h) => h.get("cwd").and_then(Value::as_str).map(str::to_owned),
            Err(_) => None,
        }
        .unwrap_or_else(|| {
            std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        });
        let session = match session.file_change() {
            FileChange::None => session,
            FileChange::AppendedNewline => {
                drop(session);
                terminate_last_line(path)?;
                Session::open_with(path, opts)?
            }
            FileChange::Rewritten => {
                let text = crate::session::migrate::rewrite_text(&session)?;
                drop(session);
                write_atomic(path, &text)?;
                Session::open_with(path, opts)?
            }
        };
        Ok(Writer {
            session,
            file: Some(path.to_path_buf()),
            persist: true,
            flushed: true,
            cwd,
            session_dir: dir,
            entropy,
            recovery,
        })
    }

    /// pi's `SessionManager.forkFrom(source, targetCwd, sessionDir)`: a new file in the
    /// target's session folder with a new header (`parentSession` = the source) and every
    /// entry of the source as pi parsed it (not migrated, as pi).
    ///
    /// # Errors
    /// [`ErrorKind::NotASession`] for an empty or invalid source, an invalid `id`, I/O.
    pub fn fork_from(
        source: &Path,
        target_cwd: &str,
        session_dir: &Path,
        id: Option<&str>,
        mut entropy: Entropy,
    ) -> Result<Writer> {
        let src = Session::open(source)?;
        if src.index().entries.is_empty() {
            return Err(ErrorKind::NotASession {
                path: Some(source.to_path_buf()),
            }
            .into());
        }
        if let Some(id) = id
            && !valid_session_id(id)
        {
            return Err(invalid_id(id));
        }
        std::fs::create_dir_all(session_dir).map_err(io_at(session_dir))?;
        let new_id = id.map(str::to_owned).unwrap_or_else(|| (entropy.uuid7)());
        let ts = (entropy.now)();
        let path = session_dir.join(format!("{}_{new_id}.jsonl", ts.replace([':', '.'], "-")));
        let abs_source = std::path::absolute(source).unwrap_or_else(|_| source.to_path_buf());
        let h = header_object(
            new_id,
            ts,
            target_cwd.to_string(),
            Some(abs_source.display().to_string()),
        );
        let mut bytes = line_of(&Value::Object(h));
        for i in 0..src.index().entries.len() {
            let p = EntryPos(i as u32);
            if src.record(p).ty == EntryType::Session {
                continue;
            }
            let v = value::parse(src.raw(p)).map_err(|_| Error::from(ErrorKind::FileChanged { path: None }))?;
            bytes.extend_from_slice(&line_of(&v));
        }
        create_exclusive(&path, &bytes)?;
        Writer::open(&path, Some(session_dir), entropy)
    }

    /// pi's `newSession({id, parentSession})`: start a fresh session (in memory until its
    /// first user or assistant message). Returns the file it will be written to.
    ///
    /// # Errors
    /// An invalid `id` (pi's `assertValidSessionId`).
    pub fn new_session(&mut self, id: Option<&str>, parent_session: Option<&str>) -> Result<Option<PathBuf>> {
        if let Some(id) = id
            && !valid_session_id(id)
        {
            return Err(invalid_id(id));
        }
        let sid = id.map(str::to_owned).unwrap_or_else(|| (self.entropy.uuid7)());
        let ts = (self.entropy.now)();
        let h = header_object(
            sid.clone(),
            ts.clone(),
            self.cwd.clone(),
            parent_session.map(str::to_owned),
        );
        self.session = Session::from_bytes(line_of(&Value::Object(h)))?;
        self.flushed = false;
        if self.persist {
            self.file = Some(
                self.session_dir
                    .join(format!("{}_{sid}.jsonl", ts.replace([':', '.'], "-"))),
            );
        }
        Ok(self.file.clone())
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
    /// [`ErrorKind::EntryNotFound`].
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

    fn new_id(&mut self) -> String {
        for _ in 0..100 {
            let u = (self.entropy.uuid4)();
            let id = u[..8].to_string();
            if self.session.entry_by_id(&Key::str(&id)).is_none() {
                return id;
            }
        }
        (self.entropy.uuid4)()
    }

    /// `this.leafId` as the JSON value a new entry's `parentId` gets (`None`: undefined).
    fn parent_value(&self) -> Option<Value<'static>> {
        match self.session.leaf() {
            Key::Undefined => None,
            Key::Unique(_) => self
                .session
                .entry_by_id(self.session.leaf())
                .and_then(|p| self.session.id_value(p))
                .map(Value::into_owned),
            k => Some(key_to_value(k)),
        }
    }

    /// The common head of an entry: `type, id, parentId, timestamp`.
    fn head(&mut self, ty: &'static str) -> (Object<'static>, String, String) {
        let id = self.new_id();
        let ts = (self.entropy.now)();
        let mut o = Object::new();
        set(&mut o, "type", Value::str(ty));
        set(&mut o, "id", Value::string(id.clone()));
        put(&mut o, "parentId", self.parent_value());
        set(&mut o, "timestamp", Value::string(ts.clone()));
        (o, id, ts)
    }

    /// `id, parentId, timestamp` at the end of an entry, where pi's custom entries put
    /// them (same id-then-clock order as [`Writer::head`]).
    fn stamp_tail(&mut self, o: &mut Object<'_>) -> String {
        let id = self.new_id();
        let ts = (self.entropy.now)();
        set(o, "id", Value::string(id.clone()));
        put(o, "parentId", self.parent_value());
        set(o, "timestamp", Value::string(ts));
        id
    }

    /// pi's `_appendEntry` + `_persist`: serialise, write (or keep in memory), index.
    fn append(&mut self, entry: Object<'_>) -> Result<()> {
        let line = line_of(&Value::Object(entry));
        match (&self.file, self.persist, self.flushed) {
            (Some(path), true, true) => {
                let path = path.clone();
                append_line(&path, &line)?;
                // Whatever else was appended meanwhile is indexed too; nothing is lost.
                self.session.refresh()?;
            }
            _ => {
                let mut bytes = self.session.bytes().to_vec();
                bytes.extend_from_slice(&line);
                let next = Session::from_bytes(bytes)?;
                if self.persist
                    && Writer::has_conversation(&next)
                    && let Some(path) = &self.file
                {
                    create_exclusive(path, next.bytes())?;
                    let path = path.clone();
                    let leaf = next.leaf().clone();
                    self.session = Session::open(&path)?;
                    self.session.set_leaf_raw(leaf);
                    self.flushed = true;
                    return Ok(());
                }
                let leaf = next.leaf().clone();
                self.session = next;
                self.session.set_leaf_raw(leaf);
            }
        }
        Ok(())
    }

    // ----- appends --------------------------------------------------------------------

    /// pi's `appendMessage(message)`: returns the new entry's id.
    ///
    /// # Errors
    /// I/O errors (memory and file are then as before).
    pub fn append_message(&mut self, message: Value<'_>) -> Result<String> {
        let (mut o, id, _) = self.head("message");
        set(&mut o, "message", message);
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendThinkingLevelChange(level)`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<String> {
        let (mut o, id, _) = self.head("thinking_level_change");
        set(&mut o, "thinkingLevel", Value::str(level));
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendModelChange(provider, modelId)`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> Result<String> {
        let (mut o, id, _) = self.head("model_change");
        set(&mut o, "provider", Value::str(provider));
        set(&mut o, "modelId", Value::str(model_id));
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendUsage(kind, provider, model, usage, note?)`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_usage(
        &mut self,
        kind: &str,
        provider: &str,
        model: &str,
        usage: Value<'_>,
        note: Option<&str>,
    ) -> Result<String> {
        let (mut o, id, _) = self.head("usage");
        set(&mut o, "kind", Value::str(kind));
        set(&mut o, "provider", Value::str(provider));
        set(&mut o, "model", Value::str(model));
        set(&mut o, "usage", usage);
        if let Some(n) = note.filter(|n| !n.is_empty()) {
            set(&mut o, "note", Value::str(n));
        }
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendCompaction(summary, firstKeptEntryId, tokensBefore, details, fromHook,
    /// usage)`: `systemMessage` is the system prompt in force in the current context.
    ///
    /// # Errors
    /// The context cannot be built (pi throws too), I/O errors.
    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept_entry_id: Option<&str>,
        tokens_before: f64,
        details: Option<Value<'_>>,
        from_hook: Option<bool>,
        usage: Option<Value<'_>>,
    ) -> Result<String> {
        let ts = (self.entropy.now)();
        let system = {
            let leaf = self.session.leaf().clone();
            let ctx = self.session.context(&leaf)?;
            current_system_message(&ctx.messages).map(Object::into_owned)
        };
        let id = self.new_id();
        let mut o = Object::new();
        set(&mut o, "type", Value::str("compaction"));
        set(&mut o, "id", Value::string(id.clone()));
        put(&mut o, "parentId", self.parent_value());
        set(&mut o, "timestamp", Value::string(ts.clone()));
        set(&mut o, "summary", Value::str(summary));
        set(
            &mut o,
            "firstKeptEntryId",
            Value::string(first_kept_entry_id.unwrap_or(&id).to_string()),
        );
        set(&mut o, "tokensBefore", Value::Number(tokens_before));
        put(&mut o, "details", details);
        put(&mut o, "usage", usage);
        put(&mut o, "fromHook", from_hook.map(Value::Bool));
        if let Some(mut sm) = system {
            sm.set(
                JsStr::from_str("timestamp"),
                Value::Number(crate::js::date::parse_date(&ts)),
            );
            set(&mut o, "systemMessage", Value::Object(sm));
        }
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendCustomEntry(customType, data)`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_custom_entry(&mut self, custom_type: &str, data: Option<Value<'_>>) -> Result<String> {
        let mut o = Object::new();
        set(&mut o, "type", Value::str("custom"));
        set(&mut o, "customType", Value::str(custom_type));
        put(&mut o, "data", data);
        let id = self.stamp_tail(&mut o);
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendCustomMessageEntry(customType, content, display, details)`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_custom_message_entry(
        &mut self,
        custom_type: &str,
        content: Value<'_>,
        display: bool,
        details: Option<Value<'_>>,
    ) -> Result<String> {
        let mut o = Object::new();
        set(&mut o, "type", Value::str("custom_message"));
        set(&mut o, "customType", Value::str(custom_type));
        set(&mut o, "content", content);
        set(&mut o, "display", Value::Bool(display));
        put(&mut o, "details", details);
        let id = self.stamp_tail(&mut o);
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendSessionInfo(name)`: runs of `\r`/`\n` become one space, then trimmed.
    ///
    /// # Errors
    /// I/O errors.
    pub fn append_session_info(&mut self, name: &str) -> Result<String> {
        let mut folded = String::with_capacity(name.len());
        let mut in_break = false;
        for c in name.chars() {
            if c == '\r' || c == '\n' {
                if !in_break {
                    folded.push(' ');
                }
                in_break = true;
            } else {
                folded.push(c);
                in_break = false;
            }
        }
        let (mut o, id, _) = self.head("session_info");
        set(
            &mut o,
            "name",
            Value::string(crate::js::string::js_trim(&folded).to_string()),
        );
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendLabelChange(targetId, label)`: an empty or absent label clears.
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`] when the target does not exist; I/O errors.
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String> {
        if self.session.find(target_id).is_none() {
            return Err(ErrorKind::EntryNotFound {
                id: target_id.to_string(),
            }
            .into());
        }
        let (mut o, id, _) = self.head("label");
        set(&mut o, "targetId", Value::str(target_id));
        put(&mut o, "label", label.map(Value::str));
        self.append(o)?;
        Ok(id)
    }

    /// pi's `appendContextEdit(targetId, replacement)`: `None` drops the target's messages,
    /// `Some(content)` (a string or an array) replaces its content; the target must be on
    /// the active branch and model-visible.
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`], [`ErrorKind::InvalidEdit`]; I/O errors.
    pub fn append_context_edit(&mut self, target_id: &str, replacement: Option<Value<'_>>) -> Result<String> {
        if let Some(c) = &replacement
            && !matches!(c, Value::String(_) | Value::Array(_))
        {
            return Err(invalid_edit(
                "Context edit replacement must be null or contain string/array content",
            ));
        }
        let Some(target) = self.session.find(target_id) else {
            return Err(ErrorKind::EntryNotFound {
                id: target_id.to_string(),
            }
            .into());
        };
        let on_branch = self
            .session
            .branch_path(None)?
            .iter()
            .any(|&p| self.session.record(p).id == Key::str(target_id));
        if !on_branch {
            return Err(invalid_edit(&format!("Entry {target_id} is not on the active branch")));
        }
        let rec = self.session.record(target);
        let role = if rec.ty == EntryType::Message {
            Some(self.session.message_role(target)?)
        } else {
            None
        };
        let editable =
            rec.ty == EntryType::CustomMessage || matches!(role, Some(Role::User | Role::Assistant | Role::ToolResult));
        if !editable {
            return Err(invalid_edit(&format!(
                "Entry {target_id} does not contribute editable model content"
            )));
        }
        let wrap = matches!(role, Some(Role::Assistant | Role::ToolResult));
        let replacement = match replacement {
            None => Value::Null,
            Some(Value::String(ref s)) if wrap => {
                let mut block = Object::new();
                set(&mut block, "type", Value::str("text"));
                block.set(JsStr::from_str("text"), Value::String(s.clone().into_owned()));
                let mut r = Object::new();
                set(&mut r, "content", Value::Array(vec![Value::Object(block)]));
                Value::Object(r)
            }
            Some(c) => {
                let mut r = Object::new();
                r.set(JsStr::from_str("content"), c);
                Value::Object(r)
            }
        };
        let (mut o, id, _) = self.head("context_edit");
        set(&mut o, "targetId", Value::str(target_id));
        o.set(JsStr::from_str("replacement"), replacement);
        self.append(o)?;
        Ok(id)
    }

    /// pi's `branchWithSummary(branchFromId, summary, details, fromHook, usage)`: move the
    /// leaf to `branch_from` (`None`: before the first entry) and record a summary of the
    /// abandoned branch there.
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`]; I/O errors.
    pub fn branch_with_summary(
        &mut self,
        branch_from: Option<&str>,
        summary: &str,
        details: Option<Value<'_>>,
        from_hook: Option<bool>,
        usage: Option<Value<'_>>,
    ) -> Result<String> {
        if let Some(b) = branch_from
            && self.session.find(b).is_none()
        {
            return Err(ErrorKind::EntryNotFound { id: b.to_string() }.into());
        }
        let from_id = match self.session.leaf() {
            Key::Null | Key::Undefined => Value::str("root"),
            k => key_to_value(k),
        };
        match branch_from {
            Some(b) => self.session.branch(b)?,
            None => self.session.reset_leaf(),
        }
        let id = self.new_id();
        let ts = (self.entropy.now)();
        let mut o = Object::new();
        set(&mut o, "type", Value::str("branch_summary"));
        set(&mut o, "id", Value::string(id.clone()));
        set(
            &mut o,
            "parentId",
            branch_from.map_or(Value::Null, |b| Value::string(b.to_string())),
        );
        set(&mut o, "timestamp", Value::string(ts));
        set(&mut o, "fromId", from_id);
        set(&mut o, "summary", Value::str(summary));
        put(&mut o, "details", details);
        put(&mut o, "usage", usage);
        put(&mut o, "fromHook", from_hook.map(Value::Bool));
        self.append(o)?;
        Ok(id)
    }

    /// pi's `createBranchedSession(leafId)`: a new session file holding only the path to
    /// `leaf`, labels removed from the path and re-chained, then re-added at the end;
    /// `parentSession` names the old file. Returns the new file (created now when the path
    /// has a conversation, else on the first message).
    ///
    /// # Errors
    /// [`ErrorKind::EntryNotFound`] for an unknown leaf; I/O errors.
    pub fn create_branched_session(&mut self, leaf: &str) -> Result<Option<PathBuf>> {
        let previous = self.file.clone();
        let path = self.session.branch_path(Some(&Key::str(leaf)))?;
        if path.is_empty() {
            return Err(ErrorKind::EntryNotFound { id: leaf.to_string() }.into());
        }
        let s = &self.session;
        let mut kept: Vec<Value<'static>> = Vec::new();
        let mut kept_ids: Vec<Key> = Vec::new();
        let mut pending_labels: Vec<Key> = Vec::new();
        let mut replacement: ahash::AHashMap<Key, Key> = ahash::AHashMap::new();
        let mut parent: Option<Key> = None;
        for &p in &path {
            let rec = s.record(p);
            if rec.ty == EntryType::Label {
                pending_labels.push(rec.id.clone());
                continue;
            }
            for l in pending_labels.drain(..) {
                replacement.insert(l, rec.id.clone());
            }
            let mut v = s.value(p)?.into_owned();
            if let Value::Object(o) = &mut v {
                let pv = parent.as_ref().map_or(Value::Null, key_to_value);
                o.set(JsStr::from_str("parentId"), pv);
                if rec.ty == EntryType::Compaction {
                    let fk = crate::session::key_from_value(o.get("firstKeptEntryId"));
                    if fk != rec.id
                        && let Some(r) = replacement.get(&fk)
                    {
                        o.set(JsStr::from_str("firstKeptEntryId"), key_to_value(r));
                    }
                }
            }
            parent = Some(rec.id.clone());
            kept_ids.push(rec.id.clone());
            kept.push(v);
        }
        // Labels of kept entries, in the order pi's label map holds them (first set).
        let mut labels: Vec<(Key, Value<'static>, Option<Value<'static>>)> = Vec::new();
        for (target, label_pos) in s.label_order() {
            if kept_ids.contains(&target) {
                let mut lv = s.value(label_pos)?.into_owned();
                if let Value::Object(o) = &mut lv {
                    let label = o.remove("label").unwrap_or(Value::Null);
                    let ts = o.remove("timestamp");
                    labels.push((target, label, ts));
                }
            }
        }
        let new_id = (self.entropy.uuid7)();
        let ts = (self.entropy.now)();
        let file = self
            .session_dir
            .join(format!("{}_{new_id}.jsonl", ts.replace([':', '.'], "-")));
        let parent = if self.persist {
            previous.map(|p| p.display().to_string())
        } else {
            None
        };
        let h = header_object(new_id, ts, self.cwd.clone(), parent);
        let mut bytes = line_of(&Value::Object(h));
        for v in &kept {
            bytes.extend_from_slice(&line_of(v));
        }
        let mut taken: Vec<String> = kept_ids.iter().filter_map(|k| k.as_str().map(str::to_owned)).collect();
        let mut label_parent = kept_ids.last().map_or(Value::Null, key_to_value);
        if !label_parent.truthy() {
            label_parent = Value::Null;
        }
        for (target, label, lts) in labels {
            let id = loop {
                let u = (self.entropy.uuid4)();
                let c = u[..8].to_string();
                if !taken.contains(&c) {
                    break c;
                }
            };
            taken.push(id.clone());
            let mut o = Object::new();
            set(&mut o, "type", Value::str("label"));
            set(&mut o, "id", Value::string(id.clone()));
            set(&mut o, "parentId", label_parent);
            put(&mut o, "timestamp", lts);
            set(&mut o, "targetId", key_to_value(&target));
            set(&mut o, "label", label);
            bytes.extend_from_slice(&line_of(&Value::Object(o)));
            label_parent = Value::string(id);
        }
        let next = Session::from_bytes(bytes)?;
        if self.persist {
            if Writer::has_conversation(&next) {
                create_exclusive(&file, next.bytes())?;
                self.session = Session::open(&file)?;
                self.flushed = true;
            } else {
                self.session = next;
                self.flushed = false;
            }
            self.file = Some(file.clone());
            return Ok(Some(file));
        }
        self.session = next;
        Ok(None)
    }
}

fn invalid_id(id: &str) -> Error {
    ErrorKind::InvalidInput {
        what: format!(
            "session id {id:?} must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character"
        ),
    }
    .into()
}

fn invalid_edit(what: &str) -> Error {
    ErrorKind::InvalidInput { what: what.to_string() }.into()
}

/// zero-byte file, newline after a torn last line), after [`crate::recover`] has undone a
/// torn append of pi-session's own. Returns what was done.
///
/// # Errors
/// [`ErrorKind::NotASession`] (the file is left untouched); I/O errors.
pub fn migrate_file(path: &Path) -> Result<FileChange> {
    if path.exists() {
        crate::write::journal::recover(path)?;
    }
    let s = Session::open(path)?;
    let change = s.file_change();
    match change {
        FileChange::None => {}
        FileChange::AppendedNewline => {
            drop(s);
            terminate_last_line(path)?;
        }
        FileChange::Rewritten => {
            let text = crate::session::migrate::rewrite_text(&s)?;
            drop(s);
            write_atomic(path, &text)?;
        }
    }
    Ok(change)
}

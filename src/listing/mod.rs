//! Listing sessions: pi's `SessionManager.list`, `listAll`, `findById` and the most-recent
//! lookup, with identical results, in parallel, with progress and cancellation.
//!
//! # Design note
//! pi builds a [`SessionInfo`] per file by reading every line with `readline` (which splits
//! on `\n`, `\r\n` and a lone `\r`), `JSON.parse`-ing each one and looking at `session_info`
//! names and `message` entries. pi-session makes one pass over each file's bytes: lines are
//! cut with `memchr2(b'\n', b'\r')` (an empty piece between `\r` and `\n` is a blank line,
//! which pi skips as well), and each line is validated by a recursive-descent walk that
//! records only what the listing needs as byte spans (top-level `type`, `timestamp`, `name`,
//! and inside `message` the `role`, `timestamp` and `content` with, for a content array, the
//! `type` and `text` of every block). Everything else (tool results, image data) is skipped
//! by the string skipper without building values. Text is decoded only for user and
//! assistant messages, after the whole line has been found valid.
//!
//! Files under 32 KiB are read with `read()` into a per-thread buffer that is reused;
//! larger ones are memory-mapped (into a per-thread arena on Linux), unless
//! [`ListOptions::read_mode`] says otherwise. Bytes that change between the walk and the
//! decode (a mapped file rewritten by pi) drop the file as [`SkipFileReason::Changed`]; a
//! mapped file truncated under the walk can still end the process with SIGBUS (see
//! [`ReadMode::Read`](crate::source::ReadMode::Read)). Folders and files are processed with rayon; results
//! are collected in candidate order and then sorted with V8's sort algorithm
//! (`crate::js::sort::v8_sort_by`), so the output never depends on scheduling. Only the
//! progress partials (which pi, too, publishes in I/O completion order) do.
//!
//! # Where pi throws
//! A `message` entry whose `message` is missing or `null`, a user or assistant message whose
//! `content` is `null`, not a string and not an array, or holds a `null` block, and a
//! `session_info` whose `name` is neither a string nor null make pi's `buildSessionInfo`
//! throw; pi then drops the file from the list. pi-session drops it too and reports it as a
//! [`SkippedFile`] with [`SkipFileReason::PiThrows`].
//!
//! # Differences from pi, on purpose
//! - pi's `list(cwd)` without a custom dir creates the project folder when it is missing;
//!   pi-session only reads, and reports the missing folder in [`Listing::problems`].
//! - Candidate names are ordered by an ICU root collation for ASCII names (what pi's file
//!   names are, `crate::js::collate`); other characters are ordered after ASCII by code
//!   point.
//!
//! # Files
//! `line.rs` the recording walk over one line, `info.rs` a [`SessionInfo`] from bytes,
//! `read.rs` one file (open, stat, read or map), `run.rs` the listings (candidates,
//! rayon, progress, sort), `find.rs` the header-only lookups, `dirs.rs` pi's folders, `place.rs` a run's folders
//! resolved once ([`Place`]).

pub(crate) mod cache;
#[cfg(any(test, feature = "internals"))]
pub(crate) mod checks;
pub mod dirs;
mod find;
mod info;
pub(crate) mod line;
mod place;
mod read;
mod run;
pub(crate) mod store;
#[cfg(test)]
mod twins;

pub use cache::{CacheReport, ListingCache};
pub use find::{
    IdMatch, find_by_id, find_by_id_in, find_by_id_prefix, find_most_recent, header_session_info, read_session_header,
};
pub use place::Place;
pub use read::{Scratch, read_session_info, session_info_from_bytes};
pub use run::{list, list_all, list_dir, list_project, project_dir};

use crate::js::string::JsStr;
use crate::json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtOrd};

/// pi's `SessionInfo` for one session file.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    /// The file, as found (folder path joined with the file name; symlinks not resolved).
    pub path: PathBuf,
    /// The header's `id` (any JSON value; `None` when missing).
    pub id: Option<Value<'static>>,
    /// The header's `cwd` when it is a string, else `""`.
    pub cwd: JsStr<'static>,
    /// The latest `session_info` name, trimmed; `None` when unset or cleared.
    pub name: Option<JsStr<'static>>,
    /// The header's `parentSession` (any JSON value; `None` when missing).
    pub parent_session_path: Option<Value<'static>>,
    /// `new Date(header.timestamp).getTime()`: Unix ms, NaN for an invalid date.
    pub created: f64,
    /// Latest user/assistant activity, else header time, else file mtime: Unix ms, NaN
    /// for an invalid date.
    pub modified: f64,
    /// Number of `message` entries.
    pub message_count: u64,
    /// Text of the first user message with text, or `(no messages)`.
    pub first_message: JsStr<'static>,
    /// Text of every user and assistant message, joined by a space.
    pub all_messages_text: JsStr<'static>,
    /// The bytes read: the file's size when it was listed (not one of pi's fields).
    pub bytes: u64,
    /// With [`ListOptions::lazy_text`]: where `allMessagesText` is, left unread, in the
    /// listing cache's text log (`all_messages_text` is then empty). See
    /// [`SessionInfo::text`].
    pub text_ref: Option<TextRef>,
}

/// A session's `allMessagesText` in the listing cache's text log, not read yet: the log
/// as the listing mapped it (a later listing that rewrites the log renames a new one
/// over it; this one stays as it was), where the text is, and its XXH3-64 hash.
#[derive(Clone)]
pub struct TextRef {
    log: Arc<crate::source::Source>,
    at: u64,
    len: u64,
    hash: u64,
}

impl TextRef {
    pub(crate) fn new(log: Arc<crate::source::Source>, at: u64, len: u64, hash: u64) -> TextRef {
        TextRef { log, at, len, hash }
    }

    /// The text's length in bytes (UTF-8 / WTF-8).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The text, read now and checked against its hash (`None`: the log no longer holds
    /// it; the session's file must be read again for it).
    pub fn bytes(&self) -> Option<&[u8]> {
        let at = usize::try_from(self.at).ok()?;
        let end = at.checked_add(usize::try_from(self.len).ok()?)?;
        let t = self.log.bytes().get(at..end)?;
        (xxhash_rust::xxh3::xxh3_64(t) == self.hash).then_some(t)
    }
}

impl PartialEq for TextRef {
    fn eq(&self, o: &TextRef) -> bool {
        Arc::ptr_eq(&self.log, &o.log) && (self.at, self.len, self.hash) == (o.at, o.len, o.hash)
    }
}

impl std::fmt::Debug for TextRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextRef")
            .field("at", &self.at)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl SessionInfo {
    /// `allMessagesText`: [`SessionInfo::all_messages_text`], or read through
    /// [`SessionInfo::text_ref`] when the listing left it in the cache (`None`: the cache's
    /// log no longer holds it; read the file again for it).
    pub fn text(&self) -> Option<JsStr<'_>> {
        let bytes = match &self.text_ref {
            None => self.all_messages_text.as_bytes(),
            Some(r) => r.bytes()?,
        };
        Some(JsStr(std::borrow::Cow::Borrowed(bytes)))
    }

    /// `modified` as `toISOString()` prints it (`None` for an invalid date).
    pub fn modified_iso(&self) -> Option<String> {
        crate::js::time::iso_from_ms(self.modified)
    }

    /// The session as pi's field names and values, in pi's order, dates as
    /// `toISOString()` strings (`null` for an invalid date), missing values as `null`,
    /// `path` as given by `path_text`; `allMessagesText` only when `with_text`.
    pub fn to_value(&self, path_text: &str, with_text: bool) -> Value<'static> {
        let date = |ms: f64| match crate::js::time::iso_from_ms(ms) {
            Some(s) => Value::string(s),
            None => Value::Null,
        };
        let mut o = crate::json::Object::new();
        let mut put = |k: &'static str, v: Value<'static>| o.set(JsStr::from_str(k), v);
        put("path", Value::string(path_text.to_owned()));
        put("id", self.id.clone().unwrap_or(Value::Null));
        put("cwd", Value::String(self.cwd.clone()));
        put("name", self.name.clone().map_or(Value::Null, Value::String));
        put(
            "parentSessionPath",
            self.parent_session_path.clone().unwrap_or(Value::Null),
        );
        put("created", date(self.created));
        put("modified", date(self.modified));
        put("messageCount", Value::Number(self.message_count as f64));
        put("firstMessage", Value::String(self.first_message.clone()));
        if with_text {
            put("allMessagesText", Value::String(self.all_messages_text.clone()));
        }
        Value::Object(o)
    }

    /// One line of `pi-session ls --json`: [`SessionInfo::to_value`] as `JSON.stringify`
    /// writes it, with the path as is. A path that is not UTF-8 is in `path` as pi has it
    /// (lossy: U+FFFD for each bad sequence), and exactly in one more field after it,
    /// `pathBytes`, its bytes as an array of numbers (`[99,97,102,233]` for `caf\xe9`;
    /// `bytes(v["pathBytes"])` in Python, `Buffer.from(v.pathBytes)` in Node). Other paths
    /// have no `pathBytes`.
    pub fn write_json_line(&self, with_text: bool, out: &mut Vec<u8>) {
        // What `to_value` builds (with `pathBytes`) and `JSON.stringify` writes, field by field
        // (a listing of 10,000 sessions spent a tenth of its time building the values).
        use crate::json::stringify::{push_json_string, stringify_into};
        let value = |out: &mut Vec<u8>, v: &Option<Value<'static>>| match v {
            Some(v) => stringify_into(out, v),
            None => out.extend_from_slice(b"null"),
        };
        let date = |out: &mut Vec<u8>, ms: f64| match crate::js::time::iso_from_ms(ms) {
            Some(s) => push_json_string(out, s.as_bytes()),
            None => out.extend_from_slice(b"null"),
        };
        out.extend_from_slice(b"{\"path\":");
        push_json_string(out, self.path.to_string_lossy().as_bytes());
        if self.path.to_str().is_none() {
            out.extend_from_slice(b",\"pathBytes\":[");
            for (i, b) in self.path.as_os_str().as_encoded_bytes().iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b.to_string().as_bytes());
            }
            out.push(b']');
        }
        out.extend_from_slice(b",\"id\":");
        value(out, &self.id);
        out.extend_from_slice(b",\"cwd\":");
        push_json_string(out, self.cwd.as_bytes());
        out.extend_from_slice(b",\"name\":");
        match &self.name {
            Some(n) => push_json_string(out, n.as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"parentSessionPath\":");
        value(out, &self.parent_session_path);
        out.extend_from_slice(b",\"created\":");
        date(out, self.created);
        out.extend_from_slice(b",\"modified\":");
        date(out, self.modified);
        out.extend_from_slice(b",\"messageCount\":");
        let mut n = String::new();
        crate::js::number::json_number(self.message_count as f64, &mut n);
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(b",\"firstMessage\":");
        push_json_string(out, self.first_message.as_bytes());
        if with_text {
            out.extend_from_slice(b",\"allMessagesText\":");
            push_json_string(out, self.all_messages_text.as_bytes());
        }
        out.extend_from_slice(b"}\n");
    }
}

/// Why a file found in a folder is not in the list.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipFileReason {
    /// It could not be stat'ed, opened or read (dangling symlink, symlink loop, a folder
    /// named `*.jsonl`, permissions): the OS error's kind and text.
    Unreadable {
        /// What kind of error (`NotFound`, `PermissionDenied`, `IsADirectory`, ...).
        kind: std::io::ErrorKind,
        /// The OS error's text.
        text: String,
    },
    /// Its first parsed line is not a `{"type":"session"}` header (or it has none).
    NotSession,
    /// pi's `buildSessionInfo` throws on it (see the module docs), so pi drops it.
    PiThrows(&'static str),
    /// It was rewritten while it was read (its `fstat` or its ends differ afterwards, or
    /// its mapping faulted), on each of three reads: pi would have read one version or the
    /// other; list again for the new one.
    Changed,
    /// pi-session itself failed on it (a bug, caught so that the other files are listed).
    Failed(String),
    /// The listing was cancelled before this file was read.
    Cancelled,
}

impl SkipFileReason {
    /// The reason for a file that an I/O error kept from being read.
    pub fn io(e: &std::io::Error) -> SkipFileReason {
        SkipFileReason::Unreadable {
            kind: e.kind(),
            text: e.to_string(),
        }
    }
}

impl std::fmt::Display for SkipFileReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipFileReason::Unreadable { text, .. } => write!(f, "unreadable: {text}"),
            SkipFileReason::Failed(what) => write!(f, "pi-session failed on it (a bug): {what}"),
            SkipFileReason::Cancelled => f.write_str("cancelled"),
            SkipFileReason::NotSession => f.write_str("not a session (no header first)"),
            SkipFileReason::PiThrows(why) => write!(f, "pi drops it: {why}"),
            SkipFileReason::Changed => {
                f.write_str("rewritten by another process while it was read, three times: list again")
            }
        }
    }
}

/// A file left out of a listing, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedFile {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub reason: SkipFileReason,
}

/// A folder that could not be listed (the listing goes on without it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirProblem {
    /// The folder.
    pub path: PathBuf,
    /// What is wrong, e.g. `no such folder`.
    pub what: String,
}

/// The result of a listing.
#[derive(Debug, Default)]
pub struct Listing {
    /// The sessions, newest `modified` first, as pi sorts them.
    pub sessions: Vec<SessionInfo>,
    /// Candidate files that are not in `sessions`, in candidate order.
    pub skipped: Vec<SkippedFile>,
    /// Folders that could not be read (missing, unreadable). A missing sessions folder gives
    /// an empty list and one problem here, never an error.
    pub problems: Vec<DirProblem>,
    /// Candidate files considered (pi's progress `total`).
    pub total: usize,
    /// What the cache did, when the listing used one ([`ListOptions::cache`]).
    pub cache: Option<CacheReport>,
}

/// What the progress callback is given after every file.
#[derive(Debug)]
pub struct Progress<'a> {
    /// Files done so far.
    pub loaded: usize,
    /// Files to do.
    pub total: usize,
    /// The sessions found so far, sorted as pi sorts them, when pi would publish them
    /// (and [`ListOptions::partials`] is set).
    pub partial: Option<&'a [Arc<SessionInfo>]>,
    /// The file just done, when it was skipped.
    pub skipped: Option<&'a SkippedFile>,
}

/// The listing was cancelled through its [`CancelToken`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("listing cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// A cancelled listing as the crate's error ([`ErrorKind::Cancelled`](crate::ErrorKind)):
///
/// ```no_run
/// fn newest_context_len() -> Result<usize, pi_session::Error> {
///     let env = pi_session::dirs::Env::from_process(pi_session::dirs::Flavor::Pi)?;
///     let root = pi_session::dirs::sessions_root(&env.agent_dir(None));
///     let listing = pi_session::listing::list_all(&root, &mut Default::default())?;
///     let Some(newest) = listing.sessions.first() else { return Ok(0) };
///     let s = pi_session::Session::open(&newest.path)?;
///     Ok(s.context(s.leaf())?.messages.len())
/// }
/// ```
impl From<Cancelled> for crate::error::Error {
    fn from(_: Cancelled) -> Self {
        crate::error::ErrorKind::Cancelled.into()
    }
}

/// A cancellation flag shared with a running listing; checked between files.
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }
    /// Ask the listing to stop; it returns [`Cancelled`] soon after.
    pub fn cancel(&self) {
        self.0.store(true, AtOrd::Relaxed);
    }
    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(AtOrd::Relaxed)
    }
}

/// The progress callback type.
pub type ProgressFn<'a> = dyn FnMut(&Progress<'_>) + Send + 'a;

/// Options of a listing.
#[derive(Default)]
pub struct ListOptions<'a> {
    /// Called after every file, one call at a time, `loaded` counting up to `total`.
    pub on_progress: Option<&'a mut ProgressFn<'a>>,
    /// Whether to build the sorted partial lists pi publishes with progress.
    pub partials: bool,
    /// Checked between files.
    pub cancel: Option<CancelToken>,
    /// How files are read: [`ReadMode::Auto`](crate::source::ReadMode::Auto) maps files of 32 KiB
    /// and more (the listing's threshold: mapping is cheaper than copying for a file read
    /// once, front to back). A mapped file that another process truncates while it is read
    /// can crash the reader (SIGBUS); [`ReadMode::Read`](crate::source::ReadMode::Read) never maps,
    /// at some cost in speed.
    pub read_mode: crate::source::ReadMode,
    /// Leave [`SessionInfo::all_messages_text`] empty (faster when it is not shown).
    pub skip_text: bool,
    /// With a [`cache`](ListOptions::cache): a text the cache holds for an unchanged file
    /// is not read; [`SessionInfo::text_ref`] says where it is (and
    /// [`SessionInfo::text`] reads it when wanted). Texts of files read are as always.
    pub lazy_text: bool,
    /// Keep what is found in each file in this cache, and take from it what is provably
    /// still true (see [`ListingCache`]); `None` (the default) reads every file.
    pub cache: Option<ListingCache>,
}

impl std::fmt::Debug for ListOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListOptions")
            .field("on_progress", &self.on_progress.is_some())
            .field("partials", &self.partials)
            .field("cancel", &self.cancel)
            .field("read_mode", &self.read_mode)
            .field("skip_text", &self.skip_text)
            .field("lazy_text", &self.lazy_text)
            .field("cache", &self.cache)
            .finish()
    }
}

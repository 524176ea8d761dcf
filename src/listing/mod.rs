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
//! Files are read with `read()` into a per-thread buffer that is reused (no mmap: for the
//! sizes sessions have, a warm `read()` into a reused buffer is as fast and cannot SIGBUS
//! when pi rewrites a file under us). Folders and files are processed with rayon; results
//! are collected in candidate order and then sorted with V8's sort algorithm
//! ([`crate::js::sort::v8_sort_by`]), so the output never depends on scheduling. Only the
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
//! - [`locale_compare`] implements ICU root collation for ASCII names (what pi's file names
//!   are); other characters are ordered after ASCII by code point (see its docs).

pub mod dirs;

use crate::js::collate::locale_compare_bytes;
use crate::js::number::parse_json_number;
use crate::js::sort::v8_sort_by;
use crate::js::string::{JsStr, js_trim_wtf8};
use crate::json::string::decode_string;
use crate::json::value::js_date_time;
use crate::json::walk::{skip_value, skip_ws, walk_elements, walk_members};
use crate::json::ws::Blank;
use crate::json::{Kind, SyntaxError, Value};
use rayon::prelude::*;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering as AtOrd};
use std::sync::{Arc, Mutex};
use std::time::UNIX_EPOCH;

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
}

impl SessionInfo {
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
    /// writes it, with the path as is.
    pub fn write_json_line(&self, with_text: bool, out: &mut Vec<u8>) {
        let p = self.path.to_string_lossy();
        crate::json::stringify::stringify_into(out, &self.to_value(&p, with_text));
        out.push(b'\n');
    }
}

/// Why a file found in a folder is not in the list.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipFileReason {
    /// It could not be stat'ed, opened or read (dangling symlink, symlink loop, a folder
    /// named `*.jsonl`, permissions).
    Unreadable(String),
    /// Its first parsed line is not a `{"type":"session"}` header (or it has none).
    NotSession,
    /// pi's `buildSessionInfo` throws on it (see the module docs), so pi drops it.
    PiThrows(&'static str),
}

impl std::fmt::Display for SkipFileReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipFileReason::Unreadable(e) => write!(f, "unreadable: {e}"),
            SkipFileReason::NotSession => f.write_str("not a session (no header first)"),
            SkipFileReason::PiThrows(why) => write!(f, "pi drops it: {why}"),
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
    /// How files are read: [`crate::source::ReadMode::Auto`] maps files of 1 MiB and more. A mapped
    /// file that another process truncates while it is read can crash the reader (SIGBUS);
    /// [`crate::source::ReadMode::Read`] never maps, at some cost in speed.
    pub read_mode: crate::source::ReadMode,
    /// Leave [`SessionInfo::all_messages_text`] empty (faster when it is not shown).
    pub skip_text: bool,
}

impl std::fmt::Debug for ListOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListOptions")
            .field("on_progress", &self.on_progress.is_some())
            .field("partials", &self.partials)
            .field("cancel", &self.cancel)
            .field("read_mode", &self.read_mode)
            .field("skip_text", &self.skip_text)
            .finish()
    }
}

// ---------------------------------------------------------------------------------------
// One file

/// Reusable per-thread scratch for [`session_info_from_bytes`].
#[derive(Debug, Default)]
pub struct Scratch {
    buf: Vec<u8>,
    blocks: Vec<Block>,
    all: Vec<u8>,
    skip_text: bool,
    /// Where this thread maps files ([`crate::source::MapArena`]), made on first use.
    #[cfg(unix)]
    arena: Option<crate::source::MapArena>,
}

/// Address space per listing thread for mapping files side by side. 16, 64 and 256 MiB
/// arenas listed 10,000 sessions equally fast; the mapped pages count in the process's
/// RSS until the arena starts over (max RSS 114 MB at 16 MiB, 523 MB at 256 MiB).
#[cfg(unix)]
const ARENA: usize = 32 << 20;

impl Scratch {
    /// Empty scratch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether to collect `allMessagesText` (the default) or leave it empty, which saves
    /// copying every message's text when only the other fields are wanted.
    pub fn set_collect_text(&mut self, collect: bool) {
        self.skip_text = !collect;
    }

    /// Drop the file mappings this scratch still holds (they are otherwise kept until its
    /// arena fills up or the scratch is dropped).
    pub fn release_mappings(&mut self) {
        #[cfg(unix)]
        if let Some(a) = self.arena.as_mut() {
            let _ = a.release();
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Span {
    start: usize,
    end: usize,
    kind: Option<Kind>,
}

impl Span {
    fn new(start: usize, end: usize, kind: Kind) -> Self {
        Span {
            start,
            end,
            kind: Some(kind),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Block {
    /// A `null` element: `block.type` throws.
    Null,
    /// Not an object and not null: no `type`, filtered out.
    Other,
    /// An object with its `type` and `text` (missing: kind None).
    Obj { ty: Span, text: Span },
}

#[derive(Clone, Copy, Debug, Default)]
struct Msg {
    /// The `message` member (None when missing).
    present: Option<Kind>,
    role: Span,
    timestamp: Span,
    content: Span,
    /// Blocks of the content array are `blocks[blocks_from..]`.
    blocks_from: usize,
}

#[derive(Clone, Copy, Debug, Default)]
struct Line {
    ty: Span,
    timestamp: Span,
    name: Span,
    msg: Msg,
}

/// Build pi's [`SessionInfo`] for a file whose bytes are `bytes` and whose mtime is
/// `mtime_ms` (Unix ms, used when no other time is known).
///
/// # Errors
/// [`SkipFileReason::NotSession`] or [`SkipFileReason::PiThrows`] where pi's
/// `buildSessionInfo` returns `null`.
pub fn session_info_from_bytes(
    path: &Path,
    bytes: &[u8],
    mtime_ms: f64,
    scratch: &mut Scratch,
) -> Result<SessionInfo, SkipFileReason> {
    // The walker is compiled a second time for AVX2 and BMI, used when the CPU has them.
    crate::json::with_avx2_bmi(|| info_impl(path, bytes, mtime_ms, scratch))
}

#[inline(always)]
fn info_impl(path: &Path, bytes: &[u8], mtime_ms: f64, scratch: &mut Scratch) -> Result<SessionInfo, SkipFileReason> {
    let mut header: Option<Value<'static>> = None;
    let mut message_count = 0u64;
    let mut first_message: Option<JsStr<'static>> = None;
    let mut name: Option<JsStr<'static>> = None;
    let mut last_activity: Option<f64> = None;
    let skip_text = scratch.skip_text;
    let all = &mut scratch.all;
    all.clear();
    let mut any_text = false;
    let blocks = &mut scratch.blocks;
    let mut pos = 0usize;
    let n = bytes.len();
    // The end of the line starting at or before `from` (pi's readline ends a line at
    // `\n`, `\r\n` or a lone `\r`; an empty piece between `\r` and `\n` is a blank line).
    let line_end = |from: usize| memchr::memchr2(b'\n', b'\r', &bytes[from..]).map_or(n, |o| from + o);
    while pos < n {
        let first = skip_ws::<Blank>(bytes, pos);
        if first == n {
            break;
        }
        if matches!(bytes[first], b'\n' | b'\r') {
            // Blank lines are skipped.
            pos = first + 1;
            continue;
        }
        if header.is_none() || bytes[first] != b'{' {
            let end = line_end(first);
            let line = &bytes[pos..end];
            pos = end + 1;
            if header.is_some() {
                // After the header, an entry that is not an object has no type.
                continue;
            }
            // The first kept line decides: it must be a session header.
            let Ok(v) = crate::json::value::parse(line) else {
                continue;
            };
            if !v.truthy() {
                continue;
            }
            let is_session = v
                .get("type")
                .and_then(|t| t.as_js_str())
                .is_some_and(|t| t.as_bytes() == b"session");
            if !is_session {
                return Err(SkipFileReason::NotSession);
            }
            header = Some(v.into_owned());
            continue;
        }
        // An object line: validated and its spans recorded in one pass; the walk finds the
        // line's end itself, so memchr is needed only to resynchronise after a bad line.
        blocks.clear();
        let l = match scan_entry(bytes, first, blocks) {
            Ok((l, term)) => {
                pos = term + 1;
                l
            }
            Err(_) => {
                pos = line_end(first) + 1;
                continue;
            }
        };
        // Spans are offsets into the whole buffer.
        let line = bytes;
        let ty = str_bytes(line, l.ty);
        match ty.as_deref() {
            Some(b"session_info") => {
                name = match l.name.kind {
                    None | Some(Kind::Null) => None,
                    Some(Kind::String { .. }) => {
                        let s = decode_at(line, l.name);
                        let t = js_trim_wtf8(s.as_bytes());
                        if t.is_empty() {
                            None
                        } else {
                            Some(JsStr(t.to_vec().into()))
                        }
                    }
                    Some(_) => {
                        return Err(SkipFileReason::PiThrows("session name is not a string"));
                    }
                };
                continue;
            }
            Some(b"message") => {}
            _ => continue,
        }
        message_count += 1;
        let m = l.msg;
        match m.present {
            None | Some(Kind::Null) => {
                return Err(SkipFileReason::PiThrows("message entry without message"));
            }
            Some(Kind::Object) => {}
            Some(_) => continue,
        }
        if !matches!(m.role.kind, Some(Kind::String { .. })) || m.content.kind.is_none() {
            continue;
        }
        let role = str_bytes(line, m.role).expect("role is a string");
        let is_user = &*role == b"user";
        if !is_user && &*role != b"assistant" {
            continue;
        }
        // Activity time.
        let activity = if m.timestamp.kind == Some(Kind::Number) {
            Some(number_at(line, m.timestamp))
        } else {
            let v = (l.timestamp.kind.is_some())
                .then(|| crate::json::value::parse(&line[l.timestamp.start..l.timestamp.end]).ok())
                .flatten();
            let t = js_date_time(v.as_ref());
            (!t.is_nan()).then_some(t)
        };
        if let Some(t) = activity {
            last_activity = Some(last_activity.unwrap_or(0.0).max(t));
        }
        // Text, decoded straight into the joined text: a space, then this message's text
        // (taken back out when it is empty, which pi skips). When only the first user
        // text is wanted and this message cannot supply it, nothing is decoded (nothing is
        // added, so it is taken back out), but the checks where pi throws still run.
        let want_text = !skip_text || (is_user && first_message.is_none());
        let mark = all.len();
        if any_text {
            all.push(b' ');
        }
        let start = all.len();
        match m.content.kind {
            Some(Kind::String { .. }) => {
                if want_text {
                    push_js_string_of(line, m.content, all);
                }
            }
            Some(Kind::Array) => {
                let mut first_block = true;
                for b in &blocks[m.blocks_from..] {
                    match *b {
                        Block::Null => {
                            return Err(SkipFileReason::PiThrows("null content block"));
                        }
                        Block::Other => {}
                        Block::Obj { ty, text } => {
                            if !want_text || str_bytes(line, ty).as_deref() != Some(b"text") {
                                continue;
                            }
                            if !first_block {
                                all.push(b' ');
                            }
                            first_block = false;
                            push_js_string_of(line, text, all);
                        }
                    }
                }
            }
            _ => {
                return Err(SkipFileReason::PiThrows("message content is not a string or array"));
            }
        }
        if all.len() == start {
            all.truncate(mark);
            continue;
        }
        if first_message.is_none() && is_user {
            first_message = Some(JsStr(all[start..].to_vec().into()));
        }
        if skip_text {
            // Only the first user text is wanted: keep nothing else.
            all.truncate(0);
        } else {
            any_text = true;
        }
    }
    let Some(header) = header else {
        return Err(SkipFileReason::NotSession);
    };
    let cwd = match header.get("cwd") {
        Some(Value::String(s)) => s.clone().into_owned(),
        _ => JsStr::from_str("").into_owned(),
    };
    let header_time = match header.get("timestamp") {
        Some(v @ Value::String(_)) => js_date_time(Some(v)),
        _ => f64::NAN,
    };
    let modified = match last_activity {
        Some(t) if t > 0.0 => crate::js::date::time_clip(t),
        _ if !header_time.is_nan() => header_time,
        _ => crate::js::date::time_clip(mtime_ms.round()),
    };
    Ok(SessionInfo {
        path: path.to_path_buf(),
        id: header.get("id").map(|v| v.clone().into_owned()),
        cwd,
        name,
        parent_session_path: header.get("parentSession").map(|v| v.clone().into_owned()),
        created: js_date_time(header.get("timestamp")),
        modified,
        message_count,
        first_message: first_message.unwrap_or_else(|| JsStr::from_str("(no messages)").into_owned()),
        all_messages_text: JsStr(all.as_slice().to_vec().into()),
    })
}

fn str_bytes<'l>(line: &'l [u8], s: Span) -> Option<std::borrow::Cow<'l, [u8]>> {
    match s.kind {
        Some(Kind::String { escaped: false }) => Some(line[s.start + 1..s.end - 1].into()),
        Some(Kind::String { escaped: true }) => Some(decode_at(line, s).0.into_owned().into()),
        _ => None,
    }
}

fn decode_at(line: &[u8], s: Span) -> JsStr<'static> {
    decode_string(line, s.start)
        .expect("the line was validated")
        .0
        .into_owned()
}

fn number_at(line: &[u8], s: Span) -> f64 {
    let t = std::str::from_utf8(&line[s.start..s.end]).expect("number tokens are ASCII");
    parse_json_number(t)
}

/// `String(block.text)` as `Array.prototype.join` writes it (undefined and null: nothing).
fn push_js_string_of(line: &[u8], s: Span, out: &mut Vec<u8>) {
    match s.kind {
        None | Some(Kind::Null) => {}
        Some(Kind::String { escaped: false }) => {
            // No escapes: the raw bytes, with invalid UTF-8 replaced as pi's decoder does.
            let raw = &line[s.start + 1..s.end - 1];
            match std::str::from_utf8(raw) {
                Ok(_) => out.extend_from_slice(raw),
                Err(_) => out.extend_from_slice(String::from_utf8_lossy(raw).as_bytes()),
            }
        }
        Some(Kind::String { escaped: true }) => {
            let (d, _) = decode_string(line, s.start).expect("the line was validated");
            out.extend_from_slice(d.as_bytes());
        }
        Some(_) => {
            let v = crate::json::value::parse(&line[s.start..s.end]).expect("the line was validated");
            out.extend_from_slice(v.to_js_string().as_bytes());
        }
    }
}

// The line walker: validates like JSON.parse and records spans, over the crate's one exact
// walker with white space `Blank` (`\n` and `\r` end lines here, as pi's readline).

#[inline(always)]
fn skip_any(b: &[u8], i: usize) -> Result<(usize, Kind), SyntaxError> {
    skip_value::<Blank>(b, i)
}

/// Walk the object at `first` and what follows it up to the end of its line; returns the
/// spans and the offset of the line's terminator (`\n`, `\r` or the end of `line`).
#[inline(always)]
fn scan_entry(line: &[u8], first: usize, blocks: &mut Vec<Block>) -> Result<(Line, usize), SyntaxError> {
    let mut l = Line::default();
    let end = walk_members::<Blank>(line, first, |key, i| {
        let span = match key {
            b"type" => &mut l.ty,
            b"timestamp" => &mut l.timestamp,
            b"name" => &mut l.name,
            b"message" if line.get(i) == Some(&b'{') => {
                let mut m = Msg {
                    present: Some(Kind::Object),
                    blocks_from: blocks.len(),
                    ..Msg::default()
                };
                let e = scan_message(line, i, blocks, &mut m)?;
                l.msg = m;
                return Ok(e);
            }
            b"message" => {
                let (e, k) = skip_any(line, i)?;
                l.msg = Msg {
                    present: Some(k),
                    ..Msg::default()
                };
                return Ok(e);
            }
            _ => return skip_any(line, i).map(|(e, _)| e),
        };
        let (e, k) = skip_any(line, i)?;
        *span = Span::new(i, e, k);
        Ok(e)
    })?;
    let term = skip_ws::<Blank>(line, end);
    if term != line.len() && !matches!(line[term], b'\n' | b'\r') {
        return Err(SyntaxError::new(end, "unexpected data after the JSON value"));
    }
    Ok((l, term))
}

#[inline(always)]
fn scan_message(b: &[u8], start: usize, blocks: &mut Vec<Block>, m: &mut Msg) -> Result<usize, SyntaxError> {
    walk_members::<Blank>(b, start, |key, i| {
        let span = match key {
            b"role" => &mut m.role,
            b"timestamp" => &mut m.timestamp,
            b"content" => {
                m.blocks_from = blocks.len();
                if b.get(i) == Some(&b'[') {
                    let e = scan_blocks(b, i, blocks)?;
                    m.content = Span::new(i, e, Kind::Array);
                    return Ok(e);
                }
                &mut m.content
            }
            _ => return skip_any(b, i).map(|(e, _)| e),
        };
        let (e, k) = skip_any(b, i)?;
        *span = Span::new(i, e, k);
        Ok(e)
    })
}

#[inline(always)]
fn scan_blocks(b: &[u8], start: usize, blocks: &mut Vec<Block>) -> Result<usize, SyntaxError> {
    walk_elements::<Blank>(b, start, |i| {
        if b.get(i) == Some(&b'{') {
            let mut ty = Span::default();
            let mut text = Span::default();
            let e = walk_members::<Blank>(b, i, |key, j| {
                let (e, k) = skip_any(b, j)?;
                match key {
                    b"type" => ty = Span::new(j, e, k),
                    b"text" => text = Span::new(j, e, k),
                    _ => {}
                }
                Ok(e)
            })?;
            blocks.push(Block::Obj { ty, text });
            Ok(e)
        } else {
            let (e, k) = skip_any(b, i)?;
            blocks.push(if k == Kind::Null { Block::Null } else { Block::Other });
            Ok(e)
        }
    })
}

/// Files of at least this many bytes are memory-mapped by the listing in
/// [`crate::source::ReadMode::Auto`]. Listing reads each byte once, front to back, so the choice is
/// about kernel work only: copying with `read()` cost about 1.75 times what mapping (page
/// faults with fault-around, then `munmap`) cost per byte, while mapping has a fixed cost
/// per file. Over 10,000 generated sessions (2.9 GB), 16-64 KiB thresholds without
/// pre-faulting were best, 7-8% faster whole-process than 1 MiB with `MADV_POPULATE_READ`.
pub const LIST_MMAP_THRESHOLD: u64 = 32 << 10;

/// Read `path` (following symlinks) and build its [`SessionInfo`], as pi's
/// `buildSessionInfo` does. Files of at least [`LIST_MMAP_THRESHOLD`] bytes are
/// memory-mapped when `mode` allows it ([`crate::source::ReadMode::Auto`]); smaller ones are read
/// into the scratch buffer, which is reused.
///
/// # Errors
/// Why the file is not listed.
pub fn read_session_info(
    path: &Path,
    mode: crate::source::ReadMode,
    scratch: &mut Scratch,
) -> Result<SessionInfo, SkipFileReason> {
    let file = File::open(path).map_err(|e| SkipFileReason::Unreadable(e.to_string()))?;
    read_opened_session_info(path, file, mode, scratch)
}

/// [`read_session_info`] of a file already opened.
fn read_opened_session_info(
    path: &Path,
    mut file: File,
    mode: crate::source::ReadMode,
    scratch: &mut Scratch,
) -> Result<SessionInfo, SkipFileReason> {
    let unreadable = |e: std::io::Error| SkipFileReason::Unreadable(e.to_string());
    let meta = file.metadata().map_err(unreadable)?;
    if meta.is_dir() {
        return Err(SkipFileReason::Unreadable("is a directory".into()));
    }
    let mtime = mtime_ms(&meta).unwrap_or(f64::NAN);
    let map = match mode {
        crate::source::ReadMode::Read => false,
        crate::source::ReadMode::Mmap => meta.len() > 0,
        crate::source::ReadMode::Auto => meta.len() >= LIST_MMAP_THRESHOLD,
    };
    if map {
        #[cfg(unix)]
        if let Some(r) = info_in_arena(path, &file, meta.len(), mtime, scratch) {
            return r;
        }
        let src = crate::source::Source::from_file(file, crate::source::ReadMode::Mmap).map_err(unreadable)?;
        return session_info_from_bytes(path, src.bytes(), mtime, scratch);
    }
    let mut buf = std::mem::take(&mut scratch.buf);
    buf.clear();
    let res = file
        .read_to_end(&mut buf)
        .map_err(unreadable)
        .and_then(|_| session_info_from_bytes(path, &buf, mtime, scratch));
    if buf.capacity() > (64 << 20) {
        buf = Vec::new();
    }
    scratch.buf = buf;
    res
}

/// [`session_info_from_bytes`] over the file mapped into the scratch's arena; `None` when
/// it cannot be mapped there (too big, or mapping failed: the caller maps it alone).
#[cfg(unix)]
fn info_in_arena(
    path: &Path,
    file: &File,
    len: u64,
    mtime: f64,
    scratch: &mut Scratch,
) -> Option<Result<SessionInfo, SkipFileReason>> {
    let len = usize::try_from(len).ok()?;
    let mut arena = match scratch.arena.take() {
        Some(a) => a,
        None => crate::source::MapArena::new(ARENA).ok()?,
    };
    let res = match arena.map(file, len) {
        Ok(Some(bytes)) => Some(session_info_from_bytes(path, bytes, mtime, scratch)),
        _ => None,
    };
    scratch.arena = Some(arena);
    res
}

/// Node's `stats.mtimeMs`: seconds * 1e3 + nanoseconds / 1e6.
fn mtime_ms(meta: &std::fs::Metadata) -> Option<f64> {
    meta.modified().ok().map(system_time_ms)
}

/// [`mtime_ms`] of a `stat` result.
fn stat_mtime_ms(st: &rustix::fs::Stat) -> Option<f64> {
    let nanos = u32::try_from(st.st_mtime_nsec).ok().filter(|&n| n < 1_000_000_000)?;
    let t = if st.st_mtime >= 0 {
        UNIX_EPOCH.checked_add(std::time::Duration::new(u64::try_from(st.st_mtime).ok()?, nanos))?
    } else {
        UNIX_EPOCH
            .checked_sub(std::time::Duration::from_secs(st.st_mtime.unsigned_abs()))?
            .checked_add(std::time::Duration::from_nanos(u64::from(nanos)))?
    };
    Some(system_time_ms(t))
}

/// Milliseconds since the epoch, as node computes them.
fn system_time_ms(t: std::time::SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as f64 * 1e3 + f64::from(d.subsec_nanos()) / 1e6,
        Err(e) => {
            let d = e.duration();
            -(d.as_secs() as f64 * 1e3 + f64::from(d.subsec_nanos()) / 1e6)
        }
    }
}

/// The folder opened for `openat`/`statat` (`O_PATH`: nothing is read through it).
fn open_folder(d: &Path) -> Option<Arc<std::os::fd::OwnedFd>> {
    use rustix::fs::{Mode, OFlags, open};
    open(d, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .ok()
        .map(Arc::new)
}

// ---------------------------------------------------------------------------------------
// Folders

struct Candidate {
    path: PathBuf,
    name: Vec<u8>,
    /// The folder, opened, when it could be: the file is then opened and stat'ed relative
    /// to it (one path step instead of the whole path, twice per file).
    dir: Option<Arc<std::os::fd::OwnedFd>>,
    mtime: Option<f64>,
    /// Bytes, when known (0 otherwise): the largest files are started first.
    size: u64,
}

impl Candidate {
    /// Open the file (relative to its folder when that is open).
    fn open(&self) -> std::io::Result<File> {
        use rustix::fs::{Mode, OFlags, openat};
        match &self.dir {
            Some(fd) => Ok(File::from(openat(
                fd,
                self.name.as_slice(),
                OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )?)),
            None => File::open(&self.path),
        }
    }

    /// Its mtime (node's `mtimeMs`) and size; `(None, 0)` when it cannot be stat'ed.
    fn stat(&self) -> (Option<f64>, u64) {
        match &self.dir {
            Some(fd) => rustix::fs::statat(fd, self.name.as_slice(), rustix::fs::AtFlags::empty())
                .ok()
                .map_or((None, 0), |st| {
                    (stat_mtime_ms(&st), u64::try_from(st.st_size).unwrap_or(0))
                }),
            None => std::fs::metadata(&self.path)
                .ok()
                .map_or((None, 0), |m| (mtime_ms(&m), m.len())),
        }
    }
}

/// Names in a folder, sorted by bytes as libuv's `scandir` returns them to node.
fn read_dir_sorted(dir: &Path) -> std::io::Result<Vec<(Vec<u8>, std::fs::DirEntry)>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        v.push((e.file_name().as_encoded_bytes().to_vec(), e));
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(v)
}

fn jsonl_names(dir: &Path) -> std::io::Result<Vec<Vec<u8>>> {
    Ok(read_dir_sorted(dir)?
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| n.ends_with(b".jsonl"))
        .collect())
}

fn join_name(dir: &Path, name: &[u8]) -> PathBuf {
    // Names come from read_dir; non-UTF-8 names are read lossily, as node does.
    dir.join(std::ffi::OsStr::new(&*String::from_utf8_lossy(name)))
}

thread_local! {
    /// Per-thread scratch: the read buffer and span lists stay allocated between files.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::new());
}

/// When pi publishes a partial list.
#[derive(Clone, Copy)]
enum Publish {
    /// `listSessionsFromDir`: first file, every 10th, last.
    Dir,
    /// `listAll()`: once candidate 0 is done, at it, every 100th, last.
    All,
}

/// Per candidate its info (`None`: skipped), and the skipped files.
type Built = (Vec<Option<Arc<SessionInfo>>>, Vec<SkippedFile>);

/// Process candidates in parallel; results in candidate order.
fn build_all<'a>(
    cands: &[Candidate],
    publish: Publish,
    filter: &(dyn Fn(&SessionInfo) -> bool + Sync),
    opts: &mut ListOptions<'a>,
) -> Result<Built, Cancelled> {
    struct Shared<'o, 'a> {
        loaded: usize,
        first_done: bool,
        partial: Vec<Arc<SessionInfo>>,
        cb: Option<&'o mut &'a mut ProgressFn<'a>>,
    }
    let total = cands.len();
    let want_partials = opts.partials && opts.on_progress.is_some();
    let cancel = opts.cancel.clone();
    let read_mode = opts.read_mode;
    let skip_text = opts.skip_text;
    let shared = Mutex::new(Shared {
        loaded: 0,
        first_done: false,
        partial: Vec::new(),
        cb: opts.on_progress.as_mut(),
    });
    // Largest files first, one file per task: two threads then finish together instead
    // of one of them ending the run alone on a big file. Results keep candidate order.
    let mut order: Vec<usize> = (0..total).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cands[i].size));
    let mut done: Vec<(usize, Result<Arc<SessionInfo>, SkipFileReason>)> = order
        .par_iter()
        .with_max_len(1)
        .map(|&index| {
            let c = &cands[index];
            if cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
                return (index, Err(SkipFileReason::Unreadable("cancelled".into())));
            }
            let res = SCRATCH
                .with(|s| {
                    let mut s = s.borrow_mut();
                    s.set_collect_text(!skip_text);
                    c.open()
                        .map_err(|e| SkipFileReason::Unreadable(e.to_string()))
                        .and_then(|f| read_opened_session_info(&c.path, f, read_mode, &mut s))
                })
                .map(Arc::new);
            let mut sh = shared.lock().expect("progress lock is not poisoned");
            sh.loaded += 1;
            if index == 0 {
                sh.first_done = true;
            }
            if let Ok(info) = &res
                && want_partials
            {
                sh.partial.push(info.clone());
            }
            let loaded = sh.loaded;
            let publish_now = want_partials
                && match publish {
                    Publish::Dir => loaded == 1 || loaded.is_multiple_of(10) || loaded == total,
                    Publish::All => sh.first_done && (index == 0 || loaded.is_multiple_of(100) || loaded == total),
                };
            let partial = publish_now.then(|| {
                let mut p: Vec<Arc<SessionInfo>> = sh.partial.iter().filter(|s| filter(s)).cloned().collect();
                sort_by_modified(&mut p);
                p
            });
            if let Some(cb) = sh.cb.as_mut() {
                let skipped = res.as_ref().err().map(|r| SkippedFile {
                    path: c.path.clone(),
                    reason: r.clone(),
                });
                cb(&Progress {
                    loaded,
                    total,
                    partial: partial.as_deref(),
                    skipped: skipped.as_ref(),
                });
            }
            (index, res)
        })
        .collect();
    // Every thread lets go of the files it still has mapped.
    rayon::broadcast(|_| SCRATCH.with(|s| s.borrow_mut().release_mappings()));
    if cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
        return Err(Cancelled);
    }
    done.sort_unstable_by_key(|d| d.0);
    let out = done.into_iter().map(|(_, r)| r);
    let mut skipped = Vec::new();
    let infos = out
        .zip(cands)
        .map(|(r, c)| match r {
            Ok(i) => Some(i),
            Err(reason) => {
                skipped.push(SkippedFile {
                    path: c.path.clone(),
                    reason,
                });
                None
            }
        })
        .collect();
    Ok((infos, skipped))
}

fn sort_by_modified<T: std::ops::Deref<Target = SessionInfo>>(v: &mut Vec<T>) {
    v8_sort_by(v, |a, b| b.modified - a.modified);
}

fn finish(infos: Vec<Option<Arc<SessionInfo>>>, filter: impl Fn(&SessionInfo) -> bool) -> Vec<SessionInfo> {
    let mut v: Vec<Arc<SessionInfo>> = infos.into_iter().flatten().filter(|s| filter(s)).collect();
    sort_by_modified(&mut v);
    v.into_iter()
        .map(|a| Arc::try_unwrap(a).unwrap_or_else(|a| (*a).clone()))
        .collect()
}

fn check(opts: &ListOptions<'_>) -> Result<(), Cancelled> {
    if opts.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
        Err(Cancelled)
    } else {
        Ok(())
    }
}

/// pi's `listSessionsFromDir` followed by its sort: every `*.jsonl` directly in `dir`
/// (candidates ordered by `localeCompare` of the names, descending), `filter` applied to
/// the result and to the partials.
fn list_dir_filtered(
    dir: &Path,
    filter: &(dyn Fn(&SessionInfo) -> bool + Sync),
    opts: &mut ListOptions<'_>,
) -> Result<Listing, Cancelled> {
    check(opts)?;
    let mut listing = Listing::default();
    let names = match jsonl_names(dir) {
        Ok(n) => n,
        Err(e) => {
            listing.problems.push(DirProblem {
                path: dir.to_path_buf(),
                what: dir_error_text(&e),
            });
            return Ok(listing);
        }
    };
    let mut names = names;
    v8_sort_by(&mut names, |a, b| locale_compare_bytes(b, a) as i32 as f64);
    let cands: Vec<Candidate> = names
        .into_iter()
        .map(|name| Candidate {
            path: join_name(dir, &name),
            name,
            dir: None,
            mtime: Some(0.0),
            size: 0,
        })
        .collect();
    listing.total = cands.len();
    let (infos, skipped) = build_all(&cands, Publish::Dir, filter, opts)?;
    listing.skipped = skipped;
    listing.sessions = finish(infos, filter);
    Ok(listing)
}

fn dir_error_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such folder".into(),
        _ => format!("cannot read folder: {e}"),
    }
}

/// pi's `listAll("dir")` (a custom flat session dir): every `*.jsonl` directly in `dir`,
/// newest first.
///
/// # Errors
/// Only [`Cancelled`]; a missing or unreadable folder gives an empty list and a problem.
pub fn list_dir(dir: &Path, opts: &mut ListOptions<'_>) -> Result<Listing, Cancelled> {
    list_dir_filtered(dir, &|_| true, opts)
}

/// pi's `list(cwd, sessionDir)`: the sessions of one project. `dir` is the folder pi uses
/// (`sessionDir` when given, else the project's default folder); when `filter_cwd` is
/// `Some(resolved cwd)` (a custom dir other than the default folder), only sessions whose
/// header `cwd` resolves to it are kept. [`list_project`] computes both from an
/// [`crate::listing::dirs::Env`].
///
/// # Errors
/// Only [`Cancelled`].
pub fn list(
    dir: &Path,
    filter_cwd: Option<(&crate::listing::dirs::Env, &Path)>,
    opts: &mut ListOptions<'_>,
) -> Result<Listing, Cancelled> {
    match filter_cwd {
        None => list_dir_filtered(dir, &|_| true, opts),
        Some((env, cwd)) => {
            let f = |s: &SessionInfo| cwd_matches(env, &s.cwd, cwd);
            list_dir_filtered(dir, &f, opts)
        }
    }
}

/// pi's `sessionCwdMatches`: a non-empty header cwd that resolves to `resolved_cwd`.
fn cwd_matches(env: &crate::listing::dirs::Env, cwd: &JsStr<'_>, resolved_cwd: &Path) -> bool {
    !cwd.is_empty() && env.resolve_path(Path::new(&*cwd.to_str_lossy())) == resolved_cwd
}

/// Which folder `list(cwd, session_dir)` reads and which cwd it filters on, as pi decides.
pub fn project_dir(
    env: &crate::listing::dirs::Env,
    cwd: &Path,
    session_dir: Option<&Path>,
    agent_dir: &Path,
) -> (PathBuf, Option<PathBuf>) {
    let default = env.default_session_dir(cwd, agent_dir);
    match session_dir {
        Some(d) => {
            let d = env.normalize_path(d);
            let filter = (!env.paths_equal(&d, &default)).then(|| env.resolve_path(cwd));
            (d, filter)
        }
        None => (default, None),
    }
}

/// pi's `list(cwd, sessionDir)` with directories resolved from `env`.
///
/// # Errors
/// Only [`Cancelled`].
pub fn list_project(
    env: &crate::listing::dirs::Env,
    cwd: &Path,
    session_dir: Option<&Path>,
    agent_dir: &Path,
    opts: &mut ListOptions<'_>,
) -> Result<Listing, Cancelled> {
    let (dir, filter) = project_dir(env, cwd, session_dir, agent_dir);
    list(&dir, filter.as_deref().map(|c| (env, c)), opts)
}

/// pi's `listAll()`: every `*.jsonl` in every folder (or symlink to one) directly under
/// `sessions_root` (`<agent dir>/sessions`), newest first.
///
/// # Errors
/// Only [`Cancelled`]; missing or unreadable folders are reported in
/// [`Listing::problems`].
pub fn list_all(sessions_root: &Path, opts: &mut ListOptions<'_>) -> Result<Listing, Cancelled> {
    check(opts)?;
    let mut listing = Listing::default();
    let entries = match read_dir_sorted(sessions_root) {
        Ok(e) => e,
        Err(e) => {
            listing.problems.push(DirProblem {
                path: sessions_root.to_path_buf(),
                what: dir_error_text(&e),
            });
            return Ok(listing);
        }
    };
    let dirs: Vec<PathBuf> = entries
        .iter()
        .filter(|(_, e)| e.file_type().is_ok_and(|t| t.is_dir() || t.is_symlink()))
        .map(|(n, _)| join_name(sessions_root, n))
        .collect();
    type Folder = (
        PathBuf,
        Option<Arc<std::os::fd::OwnedFd>>,
        std::io::Result<Vec<Vec<u8>>>,
    );
    let per_dir: Vec<Folder> = dirs
        .into_par_iter()
        .map(|d| {
            let r = jsonl_names(&d);
            // Without a descriptor (say the process is out of them) files go by path.
            let fd = r.is_ok().then(|| open_folder(&d)).flatten();
            (d, fd, r)
        })
        .collect();
    let mut files: Vec<(PathBuf, Vec<u8>, Option<Arc<std::os::fd::OwnedFd>>)> = Vec::new();
    for (d, fd, r) in per_dir {
        match r {
            Ok(names) => files.extend(names.into_iter().map(|n| (join_name(&d, &n), n, fd.clone()))),
            Err(e) => {
                // A symlink to a file is not a folder; pi passes over it silently.
                if e.kind() != std::io::ErrorKind::NotADirectory {
                    listing.problems.push(DirProblem {
                        path: d,
                        what: dir_error_text(&e),
                    });
                }
            }
        }
    }
    check(opts)?;
    let mut cands: Vec<Candidate> = files
        .into_par_iter()
        .map(|(path, name, dir)| {
            let mut c = Candidate {
                path,
                name,
                dir,
                mtime: None,
                size: 0,
            };
            (c.mtime, c.size) = c.stat();
            c
        })
        .collect();
    v8_sort_by(&mut cands, |a, b| {
        let d = b.mtime.unwrap_or(f64::NEG_INFINITY) - a.mtime.unwrap_or(f64::NEG_INFINITY);
        if d != 0.0 && !d.is_nan() {
            d
        } else {
            locale_compare_bytes(&b.name, &a.name) as i32 as f64
        }
    });
    listing.total = cands.len();
    let (infos, skipped) = build_all(&cands, Publish::All, &|_| true, opts)?;
    listing.skipped = skipped;
    listing.sessions = finish(infos, |_| true);
    Ok(listing)
}

// ---------------------------------------------------------------------------------------
// Headers only

/// pi's `readSessionHeader` for discovery: the first parsed line of the first MiB, when it
/// is a header (`type` "session" and a string `id`); `None` otherwise or when unreadable.
pub fn read_session_header(path: &Path) -> Option<Value<'static>> {
    const LIMIT: usize = 1 << 20;
    let file = File::open(path).ok()?;
    let mut buf = Vec::with_capacity(4096);
    file.take(LIMIT as u64 + 1).read_to_end(&mut buf).ok()?;
    let over = buf.len() > LIMIT;
    buf.truncate(LIMIT);
    let mut pos = 0;
    loop {
        let (line, next) = match memchr::memchr(b'\n', &buf[pos..]) {
            Some(o) => (&buf[pos..pos + o], Some(pos + o + 1)),
            None if over => return None,
            None => (&buf[pos..], None),
        };
        if let Ok(v) = crate::json::value::parse(line)
            && v.truthy()
        {
            let ok = v
                .get("type")
                .and_then(Value::as_js_str)
                .is_some_and(|t| t.as_bytes() == b"session")
                && matches!(v.get("id"), Some(Value::String(_)));
            return ok.then(|| v.into_owned());
        }
        pos = next?;
    }
}

fn header_cwd_matches(env: &crate::listing::dirs::Env, h: &Value<'_>, resolved_cwd: &Path) -> bool {
    match h.get("cwd") {
        Some(Value::String(s)) => cwd_matches(env, s, resolved_cwd),
        _ => false,
    }
}

/// pi's `findById(cwd, id, sessionDir)`: the first file (in name order) of the project's
/// folder whose header has this `id` (and, with a custom dir, this cwd). Headers only.
pub fn find_by_id(
    env: &crate::listing::dirs::Env,
    cwd: &Path,
    id: &str,
    session_dir: Option<&Path>,
    agent_dir: &Path,
) -> Option<PathBuf> {
    let (dir, filter) = project_dir(env, cwd, session_dir, agent_dir);
    find_by_id_in(env, &dir, id, filter.as_deref())
}

/// [`find_by_id`] in one folder, with an optional resolved-cwd filter.
pub fn find_by_id_in(
    env: &crate::listing::dirs::Env,
    dir: &Path,
    id: &str,
    filter_cwd: Option<&Path>,
) -> Option<PathBuf> {
    for name in jsonl_names(dir).ok()? {
        let path = join_name(dir, &name);
        let Some(h) = read_session_header(&path) else {
            continue;
        };
        if h.get("id").and_then(Value::as_js_str).map(JsStr::as_bytes) != Some(id.as_bytes()) {
            continue;
        }
        if let Some(c) = filter_cwd
            && !header_cwd_matches(env, &h, c)
        {
            continue;
        }
        return Some(path);
    }
    None
}

/// pi's `findMostRecentSession(dir, cwd?)`: the newest file (by mtime) in `dir` with a
/// header (and, when `filter_cwd` is given, that cwd). `None` when a file cannot be stat'ed,
/// as in pi.
pub fn find_most_recent(env: &crate::listing::dirs::Env, dir: &Path, filter_cwd: Option<&Path>) -> Option<PathBuf> {
    let mut files: Vec<(PathBuf, f64)> = Vec::new();
    for name in jsonl_names(dir).ok()? {
        let path = join_name(dir, &name);
        let m = std::fs::metadata(&path).ok().and_then(|m| mtime_ms(&m))?;
        files.push((path, m));
    }
    v8_sort_by(&mut files, |a, b| b.1 - a.1);
    files
        .into_iter()
        .map(|(p, _)| p)
        .find(|p| read_session_header(p).is_some_and(|h| filter_cwd.is_none_or(|c| header_cwd_matches(env, &h, c))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(text: &str) -> Result<SessionInfo, SkipFileReason> {
        session_info_from_bytes(Path::new("x.jsonl"), text.as_bytes(), 5.0, &mut Scratch::new())
    }

    #[test]
    fn basic_info() {
        let s = info(concat!(
            "{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n",
            "{\"type\":\"message\",\"timestamp\":\"2025-01-02T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"},{\"type\":\"image\",\"data\":\"AAA\"},{\"type\":\"text\",\"text\":\"there\"}]}}\r",
            "{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":\"yo\",\"timestamp\":1}}\n",
            "{\"type\":\"session_info\",\"name\":\"  n  \"}\n",
        ))
        .expect("a session");
        assert_eq!(s.message_count, 2);
        assert_eq!(s.first_message.as_bytes(), b"hi there");
        assert_eq!(s.all_messages_text.as_bytes(), b"hi there yo");
        assert_eq!(s.name.expect("named").as_bytes(), b"n");
        assert_eq!(s.modified, 1_735_776_000_000.0);
    }

    #[test]
    fn throws_and_not_session() {
        let h = "{\"type\":\"session\",\"id\":\"s\"}\n";
        assert_eq!(info("{\"type\":\"message\"}\n"), Err(SkipFileReason::NotSession));
        assert!(matches!(
            info(&format!("{h}{{\"type\":\"message\"}}")),
            Err(SkipFileReason::PiThrows(_))
        ));
        assert!(matches!(
            info(&format!("{h}{{\"type\":\"session_info\",\"name\":3}}")),
            Err(SkipFileReason::PiThrows(_))
        ));
        let s = info(&format!("{h}{{\"type\":\"message\"")).expect("torn line skipped");
        assert_eq!(s.message_count, 0);
        assert!(s.modified == 5.0);
    }
}

//! Search what was said in sessions: a regex over the *decoded* text of the strings a
//! conversation holds (user and assistant text, summaries, custom messages, bash commands,
//! session names and labels; thinking, tool-call arguments and tool output on request),
//! never over JSON keys, ids, signatures, extension state or image data.
//!
//! ```
//! use pi_session::search::{Pattern, Query};
//! let query = Query::new(Pattern::new("parser").compile()?);
//! let hits = pi_session::search::search_path("corpus/valid/branches.jsonl".as_ref(), &query, Default::default())?;
//! assert!(hits.iter().any(|h| h.lines[0].text.contains("parser")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## How it is fast and exact
//! A file is first scanned whole, raw, for the pattern's literal *pieces* and for `\u`
//! escapes ([`pattern`]'s module docs say why that misses no match); a file without one
//! is done without being indexed. Otherwise the session is opened (the index: one pass),
//! and only the entries whose line holds a piece are walked, structurally, to the strings
//! that are searched (`fields.rs`: images and unsearched members are skipped, not
//! decoded); only strings whose raw bytes hold a piece are decoded and matched
//! (`lines.rs`). [`search_paths`] runs files in parallel and hands results over in the
//! order given, with progress and cancellation.
//!
//! The slow twin, `twin::search_source_slow` (feature `internals`), decodes every entry
//! with the full decoder and runs the regex on every searched string, line by line; tests,
//! a property test and the `search` fuzz target hold [`search_source`] to it.

mod fields;
mod lines;
mod map;
pub mod pattern;
mod run;
mod sketch;
pub(crate) mod store;
#[cfg(any(test, feature = "internals"))]
pub mod twin;

pub use lines::{MATCHES_KEPT, TextLine};
pub use pattern::{Case, Matcher, Pattern, PatternError};
pub(crate) use run::stored_stamps;
pub use run::{
    FileHits, SearchOptions, SearchReport, Sessions, cwd_within, refresh_maps, search, search_paths, sessions_in,
    sort_newest_first,
};

use crate::error::{Error, Result};
use crate::index::{ByteOffset, EntryPos, EntryType, LineNo, Role};
use crate::js::string::JsStr;
use crate::json::Value;
use crate::session::{OpenOptions, Session};
use crate::source::{ReadMode, Source, Stamp};
use std::path::Path;

/// Which string of an entry a hit is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldKind {
    /// A user, assistant or custom message's text (and a custom_message entry's).
    Text,
    /// An assistant's thinking block (searched with [`Fields::thinking`]).
    Thinking,
    /// A string in an assistant's tool-call arguments ([`Fields::tool_calls`]).
    ToolCall,
    /// A tool result's text ([`Fields::tool_results`]).
    ToolResult,
    /// A bash execution's command.
    Command,
    /// A bash execution's output ([`Fields::tool_results`]).
    Output,
    /// A compaction's or branch summary's summary.
    Summary,
    /// A session_info entry's name.
    Name,
    /// A label entry's label.
    Label,
}

impl FieldKind {
    /// The name in `--json` output.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldKind::Text => "text",
            FieldKind::Thinking => "thinking",
            FieldKind::ToolCall => "toolCall",
            FieldKind::ToolResult => "toolResult",
            FieldKind::Command => "command",
            FieldKind::Output => "output",
            FieldKind::Summary => "summary",
            FieldKind::Name => "name",
            FieldKind::Label => "label",
        }
    }
}

/// The fields searched besides the default ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    /// Assistants' thinking blocks.
    pub thinking: bool,
    /// Strings in assistants' tool-call arguments.
    pub tool_calls: bool,
    /// Tool results' text and bash executions' output.
    pub tool_results: bool,
}

/// The roles a hit can have: a message's role, or for other entries the role pi's context
/// gives them (`compactionSummary`, `branchSummary`, `custom`), or `name` and `label`.
pub const ROLES: &[&str] = &[
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
    "name",
    "label",
];

/// The role of an entry for search, `None` when nothing in it is searched.
pub(crate) fn role_of(ty: EntryType, role: Role) -> Option<&'static str> {
    Some(match ty {
        EntryType::Message => match role {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::ToolResult => "toolResult",
            Role::BashExecution => "bashExecution",
            Role::Custom | Role::HookMessage => "custom",
            Role::BranchSummary => "branchSummary",
            Role::CompactionSummary => "compactionSummary",
            _ => return None,
        },
        EntryType::Compaction => "compactionSummary",
        EntryType::BranchSummary => "branchSummary",
        EntryType::CustomMessage => "custom",
        EntryType::SessionInfo => "name",
        EntryType::Label => "label",
        _ => return None,
    })
}

/// A search: the compiled pattern, what is searched, and the filters.
#[derive(Clone, Debug)]
pub struct Query {
    /// The pattern.
    pub matcher: Matcher,
    /// Opt-in fields.
    pub fields: Fields,
    /// Only hits of these roles ([`ROLES`]); `None`: all.
    pub roles: Option<Vec<String>>,
    /// Only entries whose `timestamp` is at or after this (Unix ms).
    pub since: Option<f64>,
    /// Only entries whose `timestamp` is before this (Unix ms).
    pub until: Option<f64>,
    /// Only entries on the current branch (the leaf's path).
    pub branch_only: bool,
    /// At most this many matching lines per session.
    pub max_per_session: Option<usize>,
    /// Lines of context before each matching line, within its text (ripgrep's `-B`).
    pub before: usize,
    /// Lines of context after each matching line, within its text (ripgrep's `-A`).
    pub after: usize,
}

impl Query {
    /// Search the default fields of every entry, no filter.
    pub fn new(matcher: Matcher) -> Query {
        Query {
            matcher,
            fields: Fields::default(),
            roles: None,
            since: None,
            until: None,
            branch_only: false,
            max_per_session: None,
            before: 0,
            after: 0,
        }
    }

    fn role_wanted(&self, role: &str) -> bool {
        self.roles.as_ref().is_none_or(|r| r.iter().any(|x| x == role))
    }

    /// Whether the role and branch filters take an entry.
    fn head_wanted(&self, h: &EntryHead<'_>) -> bool {
        self.role_wanted(h.role) && (h.on_branch || !self.branch_only)
    }

    /// Whether an entry time passes `since` and `until` (an entry without a valid time
    /// passes only when neither is set).
    fn time_wanted(&self, ms: f64) -> bool {
        if self.since.is_none() && self.until.is_none() {
            return true;
        }
        ms.is_finite() && self.since.is_none_or(|s| ms >= s) && self.until.is_none_or(|u| ms < u)
    }
}

/// A line of a hit: a matching line, or a context line.
#[derive(Clone, Debug, PartialEq)]
pub struct HitLine {
    /// Where the line starts in the field's decoded text (bytes of its UTF-8, where a
    /// lone surrogate or a byte that is not UTF-8 counts as U+FFFD).
    pub offset: usize,
    /// The line (with `-U`, the lines a match spans), without its `\n`.
    pub text: String,
    /// The matches, as offsets in the field's decoded text (the line's first
    /// [`MATCHES_KEPT`]); empty for a context line.
    pub matches: Vec<(usize, usize)>,
    /// Whether the line holds more matches than `matches` keeps.
    pub more_matches: bool,
}

impl HitLine {
    /// Whether this line matches (not context).
    pub fn is_match(&self) -> bool {
        !self.matches.is_empty()
    }
}

/// The matching lines of one searched string of one entry.
#[derive(Clone, Debug)]
pub struct Hit {
    /// The entry.
    pub entry: EntryPos,
    /// The entry's id when it is a string (U+FFFD for what is not UTF-8).
    pub entry_id: Option<String>,
    /// For a hit on a label ([`FieldKind::Label`]): the labelled entry's id (the label
    /// entry's `targetId`, when it is a string), which a face shows as the entry found.
    pub target_id: Option<String>,
    /// The entry's line number in the file.
    pub line: LineNo,
    /// Where the entry's line starts in the file.
    pub offset: ByteOffset,
    /// The role ([`ROLES`]).
    pub role: &'static str,
    /// Which string.
    pub field: FieldKind,
    /// The index of the content block the string is in.
    pub block: Option<u32>,
    /// The entry's `timestamp` as written, when it is a string.
    pub timestamp: Option<String>,
    /// That timestamp as Unix ms (`Date.parse`; NaN when missing or invalid).
    pub time_ms: f64,
    /// Whether the entry is on the current branch.
    pub on_branch: bool,
    /// The matching lines and their context, in order.
    pub lines: Vec<HitLine>,
}

/// Equal field by field, times by their bits (NaN equals NaN: a hit without a time).
impl PartialEq for Hit {
    fn eq(&self, o: &Hit) -> bool {
        self.entry == o.entry
            && self.entry_id == o.entry_id
            && self.target_id == o.target_id
            && self.line == o.line
            && self.offset == o.offset
            && self.role == o.role
            && self.field == o.field
            && self.block == o.block
            && self.timestamp == o.timestamp
            && self.time_ms.to_bits() == o.time_ms.to_bits()
            && self.on_branch == o.on_branch
            && self.lines == o.lines
    }
}

impl Hit {
    /// The number of matching lines (not context).
    pub fn match_count(&self) -> usize {
        self.lines.iter().filter(|l| l.is_match()).count()
    }
}

/// What is known of an entry before its strings are searched: shared by the fast path
/// and the twin, which differ in how they find and match the strings, and by the search
/// map (`map.rs`), which keeps it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EntryHead<'a> {
    pub(crate) pos: EntryPos,
    pub(crate) role: &'static str,
    pub(crate) on_branch: bool,
    /// The id's bytes when it is a string (`KeyRef::str_bytes`).
    pub(crate) id: Option<&'a [u8]>,
    pub(crate) line: LineNo,
    pub(crate) offset: ByteOffset,
}

/// The current branch's entries, sorted, for lookups (empty on a parent cycle: then no
/// entry is taken as on the branch).
pub(crate) struct Branch(Vec<EntryPos>);

impl Branch {
    pub(crate) fn of(s: &Session) -> Branch {
        let mut v = s.branch_path(None).unwrap_or_default();
        v.sort_unstable_by_key(|p| p.0);
        Branch(v)
    }
    pub(crate) fn has(&self, p: EntryPos) -> bool {
        self.0.binary_search_by_key(&p.0, |x| x.0).is_ok()
    }
}

/// The head of the entry at `pos` when its type and role have searched strings (the
/// filters are not applied: see [`Query::head_wanted`]).
pub(crate) fn entry_head<'s>(s: &'s Session, branch: &Branch, pos: EntryPos) -> Option<EntryHead<'s>> {
    let rec = s.record(pos);
    Some(EntryHead {
        pos,
        role: role_of(rec.ty, rec.role)?,
        on_branch: branch.has(pos),
        id: rec.id.str_bytes(),
        line: rec.line,
        offset: rec.offset,
    })
}

/// The entry's head when the query may find something in it (its type and role have
/// searched strings, the role and branch filters pass).
pub(crate) fn head<'s>(s: &'s Session, q: &Query, branch: &Branch, pos: EntryPos) -> Option<EntryHead<'s>> {
    entry_head(s, branch, pos).filter(|h| q.head_wanted(h))
}

/// A hit's entry fields, its time from the entry's `timestamp` (`None` when the time
/// filter drops the entry).
pub(crate) fn hit_of(q: &Query, h: &EntryHead<'_>, timestamp: Option<&Value<'_>>) -> Option<Hit> {
    let (ts, ms) = match timestamp {
        Some(Value::String(t)) => (
            Some(t.to_str_lossy().into_owned()),
            crate::json::value::js_date_time(timestamp),
        ),
        _ => (None, f64::NAN),
    };
    if !q.time_wanted(ms) {
        return None;
    }
    Some(Hit {
        entry: h.pos,
        entry_id: h.id.map(id_text),
        target_id: None,
        line: h.line,
        offset: h.offset,
        role: h.role,
        field: FieldKind::Text,
        block: None,
        timestamp: ts,
        time_ms: ms,
        on_branch: h.on_branch,
        lines: Vec::new(),
    })
}

/// Search the strings `found` of one entry (its head `h`, its `line`, the raw value of its
/// `timestamp`): hits are pushed to `hits`, and `left` (matching lines still wanted) counts
/// down. The fast path and the search map share it. `None`: a string lies outside the line
/// (a map that does not fit its file).
pub(crate) fn entry_hits(
    q: &Query,
    h: &EntryHead<'_>,
    line: &[u8],
    found: &[fields::Found],
    timestamp: Option<&[u8]>,
    left: &mut usize,
    hits: &mut Vec<Hit>,
) -> Option<()> {
    let mut base: Option<Option<Hit>> = None;
    for f in found {
        let raw = line.get(f.at.start..f.at.end)?;
        if !q.matcher.may_match_raw(raw) {
            continue;
        }
        let Ok(value) = crate::json::value::parse(raw) else {
            continue;
        };
        let mut strs = Vec::new();
        strings_in(&value, &mut strs);
        for text in &strs {
            let text = text.to_str_lossy();
            let lines = text_lines(&q.matcher, &text, *left, (q.before, q.after));
            if lines.is_empty() {
                continue;
            }
            let b = base.get_or_insert_with(|| {
                let t = timestamp.and_then(|t| crate::json::value::parse(t).ok());
                hit_of(q, h, t.as_ref())
            });
            let Some(b) = b else { return Some(()) };
            let hit = Hit {
                field: f.field,
                block: f.block,
                lines,
                ..b.clone()
            };
            *left -= hit.match_count();
            hits.push(hit);
            if *left == 0 {
                return Some(());
            }
        }
    }
    Some(())
}

/// A label entry's `targetId`, from its line (a label line is short).
fn label_target(line: &[u8]) -> Option<String> {
    let v = crate::json::value::parse(line).ok()?;
    v.get("targetId")
        .and_then(Value::as_js_str)
        .map(|s| s.to_str_lossy().into_owned())
}

/// The labelled entry of each label hit ([`Hit::target_id`]), from the label's line that
/// `line_of` gives (the map path holds only the searched strings: it reads the line then).
pub(crate) fn fill_label_targets<'b>(
    hits: &mut [Hit],
    mut line_of: impl FnMut(&Hit) -> Option<std::borrow::Cow<'b, [u8]>>,
) {
    for h in hits.iter_mut().filter(|h| h.field == FieldKind::Label) {
        h.target_id = line_of(h).and_then(|l| label_target(&l));
    }
}

/// The line that starts at `offset` in `bytes` (without its line break).
pub(crate) fn line_in(bytes: &[u8], offset: u64) -> Option<std::borrow::Cow<'_, [u8]>> {
    let rest = bytes.get(usize::try_from(offset).ok()?..)?;
    Some(std::borrow::Cow::Borrowed(
        &rest[..memchr::memchr(b'\n', rest).unwrap_or(rest.len())],
    ))
}

fn id_text(b: &[u8]) -> String {
    JsStr(std::borrow::Cow::Borrowed(b)).to_str_lossy().into_owned()
}

/// The hit lines of one decoded text: matching lines (at most `at_most`) with their context.
pub(crate) fn text_lines(m: &Matcher, text: &str, at_most: usize, context: (usize, usize)) -> Vec<HitLine> {
    let mut found = Vec::new();
    lines::matching_lines(m, text, at_most, &mut found);
    lines::with_context(text, found, context)
        .into_iter()
        .map(|l| HitLine {
            offset: l.span.start,
            text: text[l.span.clone()].to_owned(),
            matches: l.matches.iter().map(|r| (r.start, r.end)).collect(),
            more_matches: l.more_matches,
        })
        .collect()
}

/// Every string in a JSON value, in order (members in their object order), iteratively.
pub(crate) fn strings_in<'v, 'a>(v: &'v Value<'a>, out: &mut Vec<&'v JsStr<'a>>) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => out.push(s),
            Value::Array(a) => stack.extend(a.iter().rev()),
            Value::Object(o) => stack.extend(o.members.iter().rev().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// Options of a one-file search.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileOptions {
    /// mmap or read.
    pub read_mode: ReadMode,
}

fn open_options(o: FileOptions) -> OpenOptions {
    OpenOptions {
        read_mode: o.read_mode,
        chunk: None,
        release_pages: false,
        // The ids of an old-format file are derived from it, the same on every run, so
        // that an id a hit shows names the same entry in `show` and `tree`.
        v1_ids: crate::session::V1Ids::Stable,
    }
}

/// Search one session file (the fast path).
///
/// # Errors
/// The file cannot be read or is not a session ([`Session::open`]'s errors); it changed
/// while it was read.
pub fn search_path(path: &Path, q: &Query, o: FileOptions) -> Result<Vec<Hit>> {
    search_path_with_id(path, q, o).map(|(hits, _)| hits)
}

/// [`search_path`], with the `id` of the header of the bytes searched (`None` when there
/// are no hits): a file replaced after it was listed is another session.
pub(crate) fn search_path_with_id(path: &Path, q: &Query, o: FileOptions) -> Result<(Vec<Hit>, Option<String>)> {
    with_source(path, o.read_mode, |source| search_in(source, q, o))?
}

/// A header's `id` as a search shows it: a string (U+FFFD for what is not UTF-8), else
/// `None`.
fn header_id(header: &Value<'_>) -> Option<String> {
    match header.get("id") {
        Some(Value::String(s)) => Some(s.to_str_lossy().into_owned()),
        _ => None,
    }
}

/// The `id` of the header line of `file`, read from its start (a header line is small:
/// past 1 MiB it is not looked for).
fn header_id_in(file: &std::fs::File) -> Option<String> {
    let mut line = vec![0u8; 4096];
    loop {
        let n = crate::source::read_at_most(file, 0, &mut line).ok()?;
        if let Some(end) = memchr::memchr(b'\n', &line[..n]) {
            return header_id(&crate::json::value::parse(&line[..end]).ok()?);
        }
        if n < line.len() || line.len() >= 1 << 20 {
            return None;
        }
        line.resize(line.len() * 4, 0);
    }
}

/// Take this thread's read buffer (empty).
fn take_buf() -> Vec<u8> {
    let mut b = crate::source::thread_buffer();
    b.clear();
    b
}

/// Run `f` on the bytes of the file at `path`, read into this thread's buffer.
fn with_source<R>(path: &Path, mode: ReadMode, f: impl FnOnce(&mut Source) -> R) -> Result<R> {
    let io = |source| {
        Error::from(crate::error::ErrorKind::Io {
            path: Some(path.to_path_buf()),
            source,
        })
    };
    let file = crate::source::open_for_reading(path).map_err(io)?;
    let mut source = Source::from_file_into(file, mode, take_buf()).map_err(io)?;
    let r = f(&mut source);
    crate::source::give_thread_buffer(source.take_buffer());
    Ok(r)
}

/// Ranges of a file closer than this are read with one `pread` (below it, copying the
/// bytes between costs less than another call).
const READ_GAP: usize = 8 << 10;

/// Search a file through its stored map, reading only the bytes the query looks at (its
/// searched strings and timestamps, nearby ones in one `pread`). `None` when the map does
/// not hold for the file as it is now (another stamp, before or after the reads; a map
/// that does not fit): then one is built.
fn search_stored(path: &Path, q: &Query, stamp: Stamp, m: &[u8]) -> Option<(Vec<Hit>, Option<String>)> {
    let file = crate::source::open_for_reading(path).ok()?;
    let same = |f: &std::fs::File| f.metadata().is_ok_and(|meta| Stamp::of(&meta) == stamp);
    if !same(&file) {
        return None;
    }
    let plan = map::Plan::of(m, q)?;
    let ranges = plan.ranges(READ_GAP);
    // The buffer is filled from its start, never cleared: only its growth is zeroed.
    let total: usize = ranges.iter().map(ExactSizeIterator::len).sum();
    let mut buf = crate::source::thread_buffer();
    if buf.len() < total {
        buf.resize(total, 0);
    }
    let hits = (|| {
        let mut chunks: Vec<(usize, &[u8])> = Vec::with_capacity(ranges.len());
        let mut rest = &mut buf[..total];
        for r in &ranges {
            let (chunk, more) = rest.split_at_mut(r.len());
            if crate::source::read_at_most(&file, r.start as u64, chunk).ok()? != r.len() {
                return None;
            }
            chunks.push((r.start, chunk));
            rest = more;
        }
        let mut hits = plan.search(q, &chunks)?;
        fill_label_targets(&mut hits, |h| {
            read_line_at(&file, h.offset.0).map(std::borrow::Cow::Owned)
        });
        let id = if hits.is_empty() { None } else { header_id_in(&file) };
        same(&file).then_some((hits, id))
    })();
    crate::source::give_thread_buffer(buf);
    hits
}

/// The line of `file` that starts at `offset` (up to 1 MiB; a label's line is short).
fn read_line_at(file: &std::fs::File, offset: u64) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 4096];
    loop {
        let n = crate::source::read_at_most(file, offset, &mut buf).ok()?;
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            buf.truncate(i);
            return Some(buf);
        }
        if n < buf.len() || buf.len() >= 1 << 20 {
            buf.truncate(n);
            return Some(buf);
        }
        buf.resize(buf.len() * 2, 0);
    }
}

/// A file's hits and the id of the session they were found in (its header's, as read).
pub(crate) type FileHitsWithId = (Vec<Hit>, Option<String>);

/// Search one file through its search map (`map.rs`): the `stored` one when the file's
/// stamp is the one it was built under (not even read when its sketch holds none of the
/// pattern's pieces; else [`search_stored`]), else one built now from a full open, which
/// the outcome carries for the cache.
pub(crate) fn search_path_mapped(
    path: &Path,
    q: &Query,
    o: FileOptions,
    stored: Option<(Stamp, &[u8])>,
) -> (Result<FileHitsWithId>, store::Outcome) {
    if let Some((stamp, m)) = stored
        && map::may_match(m, q) == Some(false)
        && std::fs::metadata(path).is_ok_and(|meta| Stamp::of(&meta) == stamp)
    {
        return (Ok((Vec::new(), None)), store::Outcome::Reused);
    }
    if let Some((stamp, m)) = stored
        && let Some(found) = search_stored(path, q, stamp, m)
    {
        return (Ok(found), store::Outcome::Reused);
    }
    with_built_map(path, o, |s, m| {
        let hits = map::search_map(s.bytes(), m, q).ok_or_else(|| changed(s))?;
        Ok((hits, s.header().ok().as_ref().and_then(header_id)))
    })
}

/// The map of the file at `path`, built from a full open (as a search builds it) for the
/// cache; `Dropped` when the file cannot be opened or changed while it was read.
pub(crate) fn map_path(path: &Path, o: FileOptions) -> store::Outcome {
    with_built_map(path, o, |_, _| Ok(())).1
}

/// Open the file at `path` whole, build its map and run `then` on the session and the
/// map: what `then` gave, and the map for the cache (`Built` with the stamp the bytes were
/// read under, when the file did not change while it was read; else `Dropped`).
fn with_built_map<R>(
    path: &Path,
    o: FileOptions,
    then: impl FnOnce(&Session, &[u8]) -> Result<R>,
) -> (Result<R>, store::Outcome) {
    let r = with_source(path, o.read_mode, |source| {
        let placeholder = Source::from_bytes(Vec::new());
        let opened = Session::from_source(std::mem::replace(source, placeholder), open_options(o));
        let mut s = match opened {
            Ok(s) => s,
            Err(e) => return (Err(e.with_path(path)), store::Outcome::Dropped),
        };
        let stamp = s.source.stamp().copied();
        let r = map::build(&s).and_then(|m| {
            let r = then(&s, &m)?;
            s.verify()?;
            Ok((r, m))
        });
        *source = std::mem::replace(&mut s.source, Source::from_bytes(Vec::new()));
        match (r, stamp) {
            (Ok((r, m)), Some(stamp)) => (Ok(r), store::Outcome::Built(stamp, m)),
            (Ok((r, _)), None) => (Ok(r), store::Outcome::Dropped),
            (Err(e), _) => (Err(e.with_path(path)), store::Outcome::Dropped),
        }
    });
    r.unwrap_or_else(|e| (Err(e), store::Outcome::Dropped))
}

/// Search a session's bytes (the fast path): see the module docs.
///
/// # Errors
/// As [`search_path`].
pub fn search_source(mut source: Source, q: &Query, o: FileOptions) -> Result<Vec<Hit>> {
    search_in(&mut source, q, o).map(|(hits, _)| hits)
}

/// [`search_source`], leaving the source's buffer to the caller; with the header's id
/// when there are hits.
fn search_in(source: &mut Source, q: &Query, o: FileOptions) -> Result<(Vec<Hit>, Option<String>)> {
    let candidates = q.matcher.candidate_lines(source.bytes());
    if candidates.as_ref().is_some_and(Vec::is_empty) {
        // Nothing can match: the file is not even indexed (nor checked to be a session:
        // the listing that named it did that).
        return Ok((Vec::new(), None));
    }
    let placeholder = Source::from_bytes(Vec::new());
    let mut s = Session::from_source(std::mem::replace(source, placeholder), open_options(o))?;
    let hits = hits_in(&s, q, candidates.as_deref());
    let id = match &hits {
        Ok(h) if !h.is_empty() => s.header().ok().as_ref().and_then(header_id),
        _ => None,
    };
    *source = std::mem::replace(&mut s.source, Source::from_bytes(Vec::new()));
    hits.map(|h| (h, id))
}

fn hits_in(s: &Session, q: &Query, candidates: Option<&[u64]>) -> Result<Vec<Hit>> {
    let all = s.entries();
    let positions: Vec<EntryPos> = match candidates {
        None => all.to_vec(),
        Some(c) => {
            // Entries are in file order, and so are the candidate lines: each is looked
            // up from where the last one was found. A line that is no entry (the header, a
            // skipped line) is passed over.
            let mut v = Vec::with_capacity(c.len());
            let mut lo = 0;
            for &off in c {
                lo += all[lo..].partition_point(|p| s.record(*p).offset.0 < off);
                if let Some(&p) = all.get(lo)
                    && s.record(p).offset.0 == off
                {
                    v.push(p);
                    lo += 1;
                }
            }
            v
        }
    };
    let hits = search_entries(s, q, &positions)?;
    s.verify()?;
    Ok(hits)
}

fn search_entries(s: &Session, q: &Query, positions: &[EntryPos]) -> Result<Vec<Hit>> {
    let mut hits = Vec::new();
    if positions.is_empty() {
        return Ok(hits);
    }
    let branch = Branch::of(s);
    let mut left = q.max_per_session.unwrap_or(usize::MAX);
    let mut found = Vec::new();
    for &pos in positions {
        if left == 0 {
            break;
        }
        let Some(h) = head(s, q, &branch, pos) else { continue };
        let rec = s.record(pos);
        let line = s.raw(pos);
        found.clear();
        let walked = fields::walk_entry(line, rec.ty, rec.role, rec.message.get(), q.fields, &mut found);
        // The index vouched for the line: a walk that fails (or a string outside it) means
        // the file changed under the mapping.
        let done = walked.ok().and_then(|ts| {
            let ts = ts.kind.map(|_| &line[ts.start..ts.end]);
            entry_hits(q, &h, line, &found, ts, &mut left, &mut hits)
        });
        if done.is_none() {
            return Err(changed(s));
        }
    }
    fill_label_targets(&mut hits, |h| Some(std::borrow::Cow::Borrowed(s.raw(h.entry))));
    Ok(hits)
}

/// The error for a file that no longer holds what was read.
fn changed(s: &Session) -> Error {
    s.verify().err().unwrap_or_else(|| {
        crate::error::ErrorKind::FileChanged {
            path: s.path().map(Path::to_path_buf),
        }
        .into()
    })
}

#[cfg(test)]
mod tests;

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
pub mod pattern;
mod run;
#[cfg(any(test, feature = "internals"))]
pub mod twin;

pub use lines::TextLine;
pub use pattern::{Case, Matcher, Pattern, PatternError};
pub use run::{FileHits, SearchOptions, Sessions, cwd_within, search, search_paths, sessions_in, sort_newest_first};

use crate::error::{Error, Result};
use crate::index::{ByteOffset, EntryPos, EntryType, KeyRef, LineNo, Role};
use crate::js::string::JsStr;
use crate::json::Value;
use crate::session::{OpenOptions, Session};
use crate::source::{ReadMode, Source};
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
    /// Lines of context before and after each matching line, within its text.
    pub context: usize,
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
            context: 0,
        }
    }

    fn role_wanted(&self, role: &str) -> bool {
        self.roles.as_ref().is_none_or(|r| r.iter().any(|x| x == role))
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
    /// The matches, as offsets in the field's decoded text; empty for a context line.
    pub matches: Vec<(usize, usize)>,
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
/// and the twin, which differ in how they find and match the strings.
pub(crate) struct EntryHead {
    pub(crate) pos: EntryPos,
    pub(crate) role: &'static str,
    pub(crate) on_branch: bool,
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

/// The entry's head when the query may find something in it (its type and role have
/// searched strings, the role and branch filters pass).
pub(crate) fn head(s: &Session, q: &Query, branch: &Branch, pos: EntryPos) -> Option<EntryHead> {
    let rec = s.record(pos);
    let role = role_of(rec.ty, rec.role)?;
    if !q.role_wanted(role) {
        return None;
    }
    let on_branch = branch.has(pos);
    if q.branch_only && !on_branch {
        return None;
    }
    Some(EntryHead { pos, role, on_branch })
}

/// A hit's entry fields, its time from the entry's `timestamp` (`None` when the time
/// filter drops the entry).
pub(crate) fn hit_of(s: &Session, q: &Query, h: &EntryHead, timestamp: Option<&Value<'_>>) -> Option<Hit> {
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
    let rec = s.record(h.pos);
    Some(Hit {
        entry: h.pos,
        entry_id: id_text(rec.id),
        line: rec.line,
        offset: rec.offset,
        role: h.role,
        field: FieldKind::Text,
        block: None,
        timestamp: ts,
        time_ms: ms,
        on_branch: h.on_branch,
        lines: Vec::new(),
    })
}

fn id_text(k: KeyRef<'_>) -> Option<String> {
    k.str_bytes()
        .map(|b| JsStr(std::borrow::Cow::Borrowed(b)).to_str_lossy().into_owned())
}

/// The hit lines of one decoded text: matching lines (at most `at_most`) with their context.
pub(crate) fn text_lines(m: &Matcher, text: &str, at_most: usize, context: usize) -> Vec<HitLine> {
    let mut found = Vec::new();
    lines::matching_lines(m, text, at_most, &mut found);
    lines::with_context(text, found, context)
        .into_iter()
        .map(|l| HitLine {
            offset: l.span.start,
            text: text[l.span.clone()].to_owned(),
            matches: l.matches.iter().map(|r| (r.start, r.end)).collect(),
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
    thread_local! {
        /// The buffer this thread reads files into, kept from one file to the next.
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let io = |source| {
        Error::from(crate::error::ErrorKind::Io {
            path: Some(path.to_path_buf()),
            source,
        })
    };
    let file = crate::source::open_for_reading(path).map_err(io)?;
    let buf = BUF.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let mut source = Source::from_file_into(file, o.read_mode, buf).map_err(io)?;
    let hits = search_in(&mut source, q, o).map_err(|e| e.with_path(path));
    let buf = source.take_buffer();
    // (A buffer is kept up to 64 MiB: a larger file is mapped anyway.)
    if buf.capacity() <= 64 << 20 {
        BUF.with(|b| *b.borrow_mut() = buf);
    }
    hits
}

/// Search a session's bytes (the fast path): see the module docs.
///
/// # Errors
/// As [`search_path`].
pub fn search_source(mut source: Source, q: &Query, o: FileOptions) -> Result<Vec<Hit>> {
    search_in(&mut source, q, o)
}

/// [`search_source`], leaving the source's buffer to the caller.
fn search_in(source: &mut Source, q: &Query, o: FileOptions) -> Result<Vec<Hit>> {
    let candidates = q.matcher.candidate_lines(source.bytes());
    if candidates.as_ref().is_some_and(Vec::is_empty) {
        // Nothing can match: the file is not even indexed (nor checked to be a session:
        // the listing that named it did that).
        return Ok(Vec::new());
    }
    let placeholder = Source::from_bytes(Vec::new());
    let mut s = Session::from_source(std::mem::replace(source, placeholder), open_options(o))?;
    let hits = hits_in(&s, q, candidates.as_deref());
    *source = std::mem::replace(&mut s.source, Source::from_bytes(Vec::new()));
    hits
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
        let Ok(ts) = fields::walk_entry(line, rec.ty, rec.role, rec.message.get(), q.fields, &mut found) else {
            // The index vouched for the line: the file changed under the mapping.
            return Err(s.verify().err().unwrap_or_else(|| {
                crate::error::ErrorKind::FileChanged {
                    path: s.path().map(Path::to_path_buf),
                }
                .into()
            }));
        };
        let mut base: Option<Option<Hit>> = None;
        for f in &found {
            let raw = &line[f.at.start..f.at.end];
            if !q.matcher.may_match_raw(raw) {
                continue;
            }
            let value = match crate::json::value::parse(raw) {
                Ok(v) => v,
                Err(_) => continue,
            };
            let mut strs = Vec::new();
            strings_in(&value, &mut strs);
            for text in &strs {
                let text = text.to_str_lossy();
                let lines = text_lines(&q.matcher, &text, left, q.context);
                if lines.is_empty() {
                    continue;
                }
                let b = base.get_or_insert_with(|| {
                    let t = ts
                        .kind
                        .and_then(|_| crate::json::value::parse(&line[ts.start..ts.end]).ok());
                    hit_of(s, q, &h, t.as_ref())
                });
                let Some(b) = b else { break };
                let hit = Hit {
                    field: f.field,
                    block: f.block,
                    lines,
                    ..b.clone()
                };
                left -= hit.match_count();
                hits.push(hit);
                if left == 0 {
                    break;
                }
            }
            if left == 0 || matches!(base, Some(None)) {
                break;
            }
        }
    }
    Ok(hits)
}

#[cfg(test)]
mod tests;

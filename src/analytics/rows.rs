//! The rows of the three tables, from an open session: what `export-parquet` writes,
//! without any Parquet (so that the default build tests them). The fast path
//! ([`session_rows`]) walks each entry's line once, as the usage scan does: it notes where
//! the members a row reads are, decodes only the short strings a row holds, measures a
//! text on its JSON without decoding it (unless the text is kept), skips images and tool
//! arguments structurally, and makes the entry's usage record in the same walk. The slow
//! twin ([`entry_rows_twin`]) decodes every entry whole; tests hold the two equal (and the
//! usage records equal [`crate::usage::records_of`]).

use crate::index::EntryPos;
use crate::js::string::JsStr;
use crate::json::SyntaxError;
use crate::json::Value;
use crate::json::walk::{skip_ws, walk_elements, walk_members};
use crate::json::ws::Line;
use crate::session::{Migration, Session};
use crate::usage::extract::{Members, Span, push_record, record as note, skip, string_bytes, text};
use crate::usage::{FileUsage, Source};
use smallvec::SmallVec;

/// One row of the `entries` table.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryRow {
    /// `id`: a string as it is, any other JSON value as its JSON text; `None` if absent.
    pub id: Option<String>,
    /// `parentId`, likewise (JSON `null` is `None`).
    pub parent_id: Option<String>,
    /// `type`, when it is a string.
    pub ty: Option<String>,
    /// The message's `role` (`message` entries).
    pub role: Option<String>,
    /// The entry's `timestamp` as Unix ms (`Date.parse`), `None` when not a valid time.
    pub timestamp_ms: Option<i64>,
    /// Whether the entry is on the current branch (root to leaf).
    pub on_branch: bool,
    /// An assistant message's `provider`, a `model_change`'s `provider`.
    pub provider: Option<String>,
    /// An assistant message's `model`, a `model_change`'s `modelId`.
    pub model: Option<String>,
    /// A tool result's `toolName`; an assistant message's tool calls' names, joined by `,`.
    pub tool_name: Option<String>,
    /// A tool result's `isError` (`true` only when it is `true`).
    pub is_error: Option<bool>,
    /// The length in UTF-16 code units (JavaScript's `length`) of [`EntryRow::text`].
    pub text_len: Option<u64>,
    /// The entry's text: a message's or custom message's string content or its `text`
    /// blocks joined by `\n`; a compaction's or branch summary's `summary`. Thinking, tool
    /// calls and images are no text. Kept only when asked for.
    pub text: Option<String>,
    /// Where the line starts in the file (bytes).
    pub offset: u64,
    /// The line's length in bytes, without its `\n`.
    pub length: u64,
    /// The line's number (from 1).
    pub line: u64,
}

/// One row of the `usage` table: a usage record ([`crate::usage`]).
#[derive(Clone, Debug, PartialEq)]
pub struct UsageRow {
    /// The record's dedup key: 32 hex digits of the XXH3-128 of its key (the provider's
    /// `responseId`, else the entry's id and `timestamp`). Copies of one record (forks,
    /// branched sessions) share it.
    pub dedup_key: String,
    /// `assistant`, `tool`, `summary` or `entry`.
    pub source: &'static str,
    /// Its provider (`""` where pi records none).
    pub provider: String,
    /// Its model (`""` where pi records none).
    pub model: String,
    /// When (Unix ms), `None` when the record has no valid time (`usage` leaves it out).
    pub time_ms: Option<i64>,
    /// `input` tokens.
    pub input: u64,
    /// `output` tokens.
    pub output: u64,
    /// `cacheRead` tokens.
    pub cache_read: u64,
    /// `cacheWrite` tokens.
    pub cache_write: u64,
    /// `cost.total`, in dollars.
    pub cost: f64,
}

/// One row of the `sessions` table.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRow {
    /// The file (pi's `SessionInfo`, as `pi-session ls --json` gives it, down to
    /// `first_message`).
    pub path: String,
    /// The header's `id`: a string as it is, another JSON value as its JSON text.
    pub id: Option<String>,
    /// The working directory.
    pub cwd: String,
    /// The session's name (`/name`).
    pub name: Option<String>,
    /// The session it was forked or branched from.
    pub parent_session_path: Option<String>,
    /// `created` (the header's time) as Unix ms.
    pub created_ms: Option<i64>,
    /// `modified` (the last message's time, else the file's) as Unix ms.
    pub modified_ms: Option<i64>,
    /// Messages.
    pub message_count: u64,
    /// The first user message's text.
    pub first_message: String,
    /// The header's `version` (`None`: absent or not a number).
    pub version: Option<f64>,
    /// The header's `timestamp` as written.
    pub header_timestamp: Option<String>,
    /// The file's size in bytes.
    pub file_bytes: u64,
    /// Its lines.
    pub lines: u64,
    /// Its entries (pi's `getEntries()`).
    pub entries: u64,
    /// The lines pi skips (`pi-session check` lists them).
    pub skipped_lines: u64,
    /// The leaf id pi opens at (`None`: no entry, or an id that is no string).
    pub leaf_id: Option<String>,
}

/// The `sessions` row of `s`, whose listing says `info`.
pub fn session_row(s: &Session, info: &crate::listing::SessionInfo) -> SessionRow {
    let header = s.header().ok();
    SessionRow {
        path: info.path.to_string_lossy().into_owned(),
        id: info.id.as_ref().and_then(|v| key_text(Some(v))),
        cwd: info.cwd.to_str_lossy().into_owned(),
        name: info.name.as_ref().map(|n| n.to_str_lossy().into_owned()),
        parent_session_path: info.parent_session_path.as_ref().and_then(|v| key_text(Some(v))),
        created_ms: ms(info.created),
        modified_ms: ms(info.modified),
        message_count: info.message_count,
        first_message: info.first_message.to_str_lossy().into_owned(),
        version: header.as_ref().and_then(|h| match h.get("version") {
            Some(Value::Number(n)) => Some(*n),
            _ => None,
        }),
        header_timestamp: header
            .as_ref()
            .and_then(|h| h.get("timestamp"))
            .and_then(Value::as_str)
            .map(str::to_string),
        file_bytes: s.bytes().len() as u64,
        lines: s.index().lines,
        entries: s.entries_len() as u64,
        skipped_lines: s.skipped().len() as u64,
        leaf_id: s.leaf().as_str().map(str::to_string),
    }
}

/// The usage rows of `u`.
pub fn usage_rows(u: &FileUsage) -> Vec<UsageRow> {
    u.records
        .iter()
        .map(|r| {
            let (provider, model) = u.models.get(r.model as usize).cloned().unwrap_or_default();
            let k = (u128::from(r.key[1]) << 64) | u128::from(r.key[0]);
            UsageRow {
                dedup_key: format!("{k:032x}"),
                source: source_name(r.source),
                provider,
                model,
                time_ms: crate::usage::Time::valid(r.time.ms).then_some(r.time.ms as i64),
                input: r.tokens.input,
                output: r.tokens.output,
                cache_read: r.tokens.cache_read,
                cache_write: r.tokens.cache_write,
                cost: r.cost,
            }
        })
        .collect()
}

fn source_name(s: Source) -> &'static str {
    s.as_str()
}

/// The positions on the current branch, sorted (none when the branch cannot be walked:
/// a parent cycle).
fn branch_set(s: &Session) -> Vec<EntryPos> {
    let mut b = s.branch_path(None).unwrap_or_default();
    b.sort_unstable_by_key(|p| p.0);
    b
}

impl EntryRow {
    /// The row of the entry at `rec` with only what the index knows (where its line is)
    /// and its branch flag; every other column empty.
    fn at(rec: &crate::index::EntryRec<'_>, on_branch: bool) -> EntryRow {
        EntryRow {
            id: None,
            parent_id: None,
            ty: None,
            role: None,
            timestamp_ms: None,
            on_branch,
            provider: None,
            model: None,
            tool_name: None,
            is_error: None,
            text_len: None,
            text: None,
            offset: rec.offset.0,
            length: rec.len,
            line: rec.line.0,
        }
    }
}

/// Unix ms as a column holds it: `None` for an invalid date.
fn ms(t: f64) -> Option<i64> {
    t.is_finite().then_some(t as i64)
}

/// A fingerprint of which entries that start before byte `below` are on the current
/// branch: an append that leaves it as it was leaves every older row as it was (the
/// branch flag is the only column one line does not decide alone).
#[cfg(feature = "parquet")]
pub(crate) fn branch_print(s: &Session, below: u64) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for p in branch_set(s) {
        let offset = s.record(p).offset.0;
        if offset < below {
            h.update(&offset.to_le_bytes());
        }
    }
    h.digest128()
}

/// Call `each` with the row of every entry of `s` (pi's `getEntries()` order), the text
/// kept when `with_text`, and return the session's usage records (as
/// [`crate::usage::records_of`] finds them), all in one walk of each line.
///
/// A session pi migrates on load (versions 1 and 2: fresh ids, renamed roles) has its
/// entries decoded whole, as pi holds them.
///
/// # Errors
/// The file changed while it was read; or what `each` returns.
pub fn session_rows<E: From<crate::Error>>(
    s: &Session,
    with_text: bool,
    each: impl FnMut(EntryRow) -> Result<(), E>,
) -> Result<FileUsage, E> {
    session_rows_since(s, with_text, 0, each)
}

/// [`session_rows`] for the entries that start at byte `since` or later (those an append
/// added), and their usage records. A session pi migrates on load has no appends: it gets
/// all its rows whatever `since` is (callers give it 0).
pub(crate) fn session_rows_since<E: From<crate::Error>>(
    s: &Session,
    with_text: bool,
    since: u64,
    mut each: impl FnMut(EntryRow) -> Result<(), E>,
) -> Result<FileUsage, E> {
    let header_ms = crate::usage::header_ms(s);
    if matches!(s.migration(), Migration::FromV1 | Migration::FromV2) {
        for row in entry_rows_twin(s, with_text)? {
            each(row)?;
        }
        return Ok(crate::usage::records_of(s, header_ms)?);
    }
    let branch = branch_set(s);
    let mut usage = FileUsage::default();
    let changed = || s.changed();
    for &p in s.entries() {
        let rec = s.record(p);
        if rec.offset.0 < since {
            continue;
        }
        let line = s.raw(p);
        let w = walk_entry(line).map_err(|_| changed())?;
        let on_branch = branch.binary_search_by_key(&p.0, |q| q.0).is_ok();
        let row = row_of_walk(line, &w, &rec, on_branch, with_text).ok_or_else(changed)?;
        let id = rec.id.str_bytes().map(String::from_utf8_lossy);
        push_record(
            line,
            rec.ty,
            rec.role,
            &w.top,
            w.message.as_ref().map(|m| &m.usage),
            id.as_deref(),
            header_ms,
            &mut usage,
        );
        each(row)?;
    }
    // (Rows made from bytes another process changed meanwhile are not the file's: the
    // caller throws them away on this error.)
    s.verify()?;
    Ok(usage)
}

/// [`session_rows`] without the usage records.
///
/// # Errors
/// As [`session_rows`].
pub fn entry_rows<E: From<crate::Error>>(
    s: &Session,
    with_text: bool,
    each: impl FnMut(EntryRow) -> Result<(), E>,
) -> Result<(), E> {
    session_rows(s, with_text, each).map(|_| ())
}

/// Where an entry's members are: those of its usage record (`top`), those only a row
/// reads, and its `message` object's, when the last `message` member is an object.
#[derive(Default)]
struct Walked {
    top: Members,
    id: Span,
    parent: Span,
    ty: Span,
    model_id: Span,
    summary: Span,
    content: Blocks,
    message: Option<Message>,
}

/// Where a message object's members are.
#[derive(Default)]
struct Message {
    usage: Members,
    content: Blocks,
    tool_name: Span,
    is_error: Span,
}

/// One walk of an entry line: every member skipped structurally but the ones noted. (An
/// entry that is no object, such as `42`, which pi keeps too, has no member.)
fn walk_entry(line: &[u8]) -> Result<Walked, SyntaxError> {
    let first = skip_ws::<Line>(line, 0);
    let mut w = Walked::default();
    if line.get(first) != Some(&b'{') {
        return Ok(w);
    }
    walk_members::<Line>(line, first, |key, i| match key {
        b"id" => note(line, i, &mut w.id),
        b"parentId" => note(line, i, &mut w.parent),
        b"type" => note(line, i, &mut w.ty),
        b"timestamp" => note(line, i, &mut w.top.timestamp),
        b"usage" => note(line, i, &mut w.top.usage),
        b"responseId" => note(line, i, &mut w.top.response_id),
        b"provider" => note(line, i, &mut w.top.provider),
        b"model" => note(line, i, &mut w.top.model),
        b"modelId" => note(line, i, &mut w.model_id),
        b"summary" => note(line, i, &mut w.summary),
        b"content" => content_at(line, i, &mut w.content),
        b"message" if line[i] == b'{' => {
            let mut m = Message::default();
            let end = walk_members::<Line>(line, i, |key, j| match key {
                b"role" => note(line, j, &mut m.usage.role),
                b"content" => content_at(line, j, &mut m.content),
                b"toolName" => note(line, j, &mut m.tool_name),
                b"isError" => note(line, j, &mut m.is_error),
                b"usage" => note(line, j, &mut m.usage.usage),
                b"timestamp" => note(line, j, &mut m.usage.timestamp),
                b"responseId" => note(line, j, &mut m.usage.response_id),
                b"provider" => note(line, j, &mut m.usage.provider),
                b"model" => note(line, j, &mut m.usage.model),
                _ => skip(line, j),
            })?;
            w.message = Some(m);
            Ok(end)
        }
        b"message" => {
            w.message = None;
            skip(line, i)
        }
        _ => skip(line, i),
    })?;
    Ok(w)
}

/// A string member as an owned text (`None`: missing or no string).
fn string(line: &[u8], s: &Span) -> Option<String> {
    text(line, s).map(std::borrow::Cow::into_owned)
}

/// A key (`id`, `parentId`) as the table holds it: a string as it is, `null` or missing
/// as `None`, another value as its JSON text.
fn key_of(line: &[u8], s: &Span) -> Option<String> {
    match s.get(line)? {
        b"null" => None,
        [b'"', ..] => string(line, s),
        _ => crate::usage::extract::value(line, s).map(|v| v.stringify()),
    }
}

/// `Date.parse`-like time of a `timestamp` member (as [`crate::json::value::js_date_time`]).
fn date_ms(line: &[u8], s: &Span) -> f64 {
    match s.get(line) {
        None => f64::NAN,
        Some(raw) => {
            if raw.first() == Some(&b'"')
                && let Some(inner) = raw.get(1..raw.len() - 1)
                && memchr::memchr(b'\\', inner).is_none()
                && let Ok(t) = std::str::from_utf8(inner)
            {
                return crate::js::date::parse_date(t);
            }
            crate::json::value::js_date_time(crate::usage::extract::value(line, s).as_ref())
        }
    }
}

/// What a row reads of a content value: the `text` strings of its `text` blocks (or the
/// content itself when a string) and the `name` strings of its `toolCall` blocks.
#[derive(Default)]
struct Blocks {
    texts: SmallVec<[Span; 4]>,
    names: SmallVec<[Span; 2]>,
}

/// Walk the content value at `i` into `out` (a later `content` member replaces an earlier
/// one); returns where it ends. One pass: the blocks are walked as the value is skipped.
fn content_at(line: &[u8], i: usize, out: &mut Blocks) -> Result<usize, SyntaxError> {
    *out = Blocks::default();
    match line[i] {
        b'"' => {
            let end = skip(line, i)?;
            out.texts.push(Span {
                start: i,
                end,
                object: false,
            });
            Ok(end)
        }
        b'[' => walk_elements::<Line>(line, i, |k| {
            if line[k] != b'{' {
                return skip(line, k);
            }
            let (mut ty, mut txt, mut name) = (Span::default(), Span::default(), Span::default());
            let end = walk_members::<Line>(line, k, |key, j| match key {
                b"type" => note(line, j, &mut ty),
                b"text" => note(line, j, &mut txt),
                b"name" => note(line, j, &mut name),
                _ => skip(line, j),
            })?;
            let is_string = |s: &Span| s.get(line).and_then(<[u8]>::first) == Some(&b'"');
            match string_bytes(line, &ty).as_deref() {
                Some(b"text") if is_string(&txt) => out.texts.push(txt),
                // pi's `toolCall` and PiG's `tool_use`.
                Some(b"toolCall" | b"tool_use") if is_string(&name) => out.names.push(name),
                _ => {}
            }
            Ok(end)
        }),
        _ => skip(line, i),
    }
}

/// The text made of the strings at `pieces` (joined by `\n`): its length in UTF-16 code
/// units, and itself when `keep`.
fn text_at(line: &[u8], pieces: &[Span], keep: bool) -> Option<(usize, Option<String>)> {
    if !keep {
        let mut n = pieces.len().saturating_sub(1);
        for p in pieces {
            n += match crate::json::utf16::utf16_len_json(p.get(line)?) {
                Some(k) => k,
                None => crate::json::string::decode_string(line, p.start).ok()?.0.utf16_len(),
            };
        }
        return Some((n, None));
    }
    let mut out: Vec<u8> = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(crate::json::string::decode_string(line, p.start).ok()?.0.as_bytes());
    }
    // (WTF-8 joined at whole strings is WTF-8.)
    let t = JsStr(std::borrow::Cow::Owned(out));
    Some((t.utf16_len(), Some(t.to_str_lossy().into_owned())))
}

/// The row of an entry walked into `w` (`None`: a string no longer decodes).
fn row_of_walk(
    line: &[u8],
    w: &Walked,
    rec: &crate::index::EntryRec<'_>,
    on_branch: bool,
    with_text: bool,
) -> Option<EntryRow> {
    let ty = string(line, &w.ty);
    let mut row = EntryRow {
        id: key_of(line, &w.id),
        parent_id: key_of(line, &w.parent),
        timestamp_ms: ms(date_ms(line, &w.top.timestamp)),
        ..EntryRow::at(rec, on_branch)
    };
    let pieces: &[Span] = match ty.as_deref() {
        Some("message") => match &w.message {
            Some(m) => {
                row.role = string(line, &m.usage.role);
                let (texts, names) = (&m.content.texts, &m.content.names);
                match row.role.as_deref() {
                    Some("assistant") => {
                        row.provider = string(line, &m.usage.provider);
                        row.model = string(line, &m.usage.model);
                        if !names.is_empty() {
                            let names: Vec<String> = names.iter().filter_map(|n| string(line, n)).collect();
                            row.tool_name = Some(names.join(","));
                        }
                    }
                    Some("toolResult") => {
                        row.tool_name = string(line, &m.tool_name);
                        row.is_error = Some(m.is_error.get(line) == Some(b"true"));
                    }
                    _ => {}
                }
                texts
            }
            None => &[],
        },
        Some("custom_message") => &w.content.texts,
        Some("compaction" | "branch_summary") => match w.summary.get(line) {
            Some([b'"', ..]) => std::slice::from_ref(&w.summary),
            _ => &[],
        },
        Some("model_change") => {
            row.provider = string(line, &w.top.provider);
            row.model = string(line, &w.model_id);
            &[]
        }
        _ => &[],
    };
    if !pieces.is_empty() {
        let (n, t) = text_at(line, pieces, with_text)?;
        row.text_len = Some(n as u64);
        row.text = t;
    }
    row.ty = ty;
    Some(row)
}

/// [`entry_rows`]' slow twin: every entry decoded whole (as pi holds it, migrated).
///
/// # Errors
/// The file changed while it was read.
#[doc(hidden)] // (the slow twin the tests hold `entry_rows` to; also its path for migrated files)
pub fn entry_rows_twin(s: &Session, with_text: bool) -> crate::Result<Vec<EntryRow>> {
    let branch = branch_set(s);
    let mut out = Vec::new();
    for &p in s.entries() {
        let v = s.value(p)?;
        out.push(row_of(s, p, &v, branch.contains(&p), with_text));
    }
    s.verify()?;
    Ok(out)
}

fn str_of(v: Option<&Value<'_>>) -> Option<String> {
    match v {
        Some(Value::String(s)) => Some(s.to_str_lossy().into_owned()),
        _ => None,
    }
}

/// A key (`id`, `parentId`) as the table holds it.
fn key_text(v: Option<&Value<'_>>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.to_str_lossy().into_owned()),
        Some(other) => Some(other.stringify()),
    }
}

/// The strings a text is made of: a content string, or the `text` of the `text` blocks of
/// a content array (joined by `\n`); `None` when it holds no text.
fn content_pieces<'v, 'a>(c: Option<&'v Value<'a>>) -> Option<Vec<&'v JsStr<'a>>> {
    match c {
        Some(Value::String(s)) => Some(vec![s]),
        Some(Value::Array(blocks)) => {
            let pieces: Vec<&JsStr<'a>> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| match b.get("text") {
                    Some(Value::String(t)) => Some(t),
                    _ => None,
                })
                .collect();
            (!pieces.is_empty()).then_some(pieces)
        }
        _ => None,
    }
}

/// The text of `pieces` (joined by `\n`): its length, and itself when `keep`.
fn text_of(pieces: &[&JsStr<'_>], keep: bool) -> (usize, Option<String>) {
    let mut out: Vec<u8> = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(p.as_bytes());
    }
    let t = JsStr(std::borrow::Cow::Owned(out));
    (t.utf16_len(), keep.then(|| t.to_str_lossy().into_owned()))
}

fn row_of(s: &Session, p: EntryPos, v: &Value<'_>, on_branch: bool, with_text: bool) -> EntryRow {
    let rec = s.record(p);
    let ty = str_of(v.get("type"));
    let message = v.get("message").filter(|m| matches!(m, Value::Object(_)));
    let mut row = EntryRow {
        id: key_text(v.get("id")),
        parent_id: key_text(v.get("parentId")),
        ty: ty.clone(),
        timestamp_ms: ms(crate::json::value::js_date_time(v.get("timestamp"))),
        ..EntryRow::at(&rec, on_branch)
    };
    let text = match ty.as_deref() {
        Some("message") => message.and_then(|m| {
            row.role = str_of(m.get("role"));
            match row.role.as_deref() {
                Some("assistant") => {
                    row.provider = str_of(m.get("provider"));
                    row.model = str_of(m.get("model"));
                    if let Some(Value::Array(blocks)) = m.get("content") {
                        let names: Vec<String> = blocks
                            .iter()
                            .filter_map(|b| match crate::block(b) {
                                crate::Block::Call { name, .. } => str_of(name),
                                _ => None,
                            })
                            .collect();
                        row.tool_name = (!names.is_empty()).then(|| names.join(","));
                    }
                }
                Some("toolResult") => {
                    row.tool_name = str_of(m.get("toolName"));
                    row.is_error = Some(matches!(m.get("isError"), Some(Value::Bool(true))));
                }
                _ => {}
            }
            content_pieces(m.get("content"))
        }),
        Some("custom_message") => content_pieces(v.get("content")),
        Some("compaction" | "branch_summary") => match v.get("summary") {
            Some(Value::String(t)) => Some(vec![t]),
            _ => None,
        },
        Some("model_change") => {
            row.provider = str_of(v.get("provider"));
            row.model = str_of(v.get("modelId"));
            None
        }
        _ => None,
    };
    if let Some((n, t)) = text.map(|pieces| text_of(&pieces, with_text)) {
        row.text_len = Some(n as u64);
        row.text = t;
    }
    row
}

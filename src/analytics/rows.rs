//! The rows of the three tables, from an open session: what `export-parquet` writes,
//! without any Parquet (so that the default build tests them). Each entry is decoded with
//! its long strings left in the file (`Value::parse_deferring`): an image's base64 is
//! never decoded, a long text only when the row needs its text. The slow twin
//! ([`entry_rows_twin`]) decodes every entry whole; tests hold the two equal.

use crate::index::EntryPos;
use crate::js::string::JsStr;
use crate::json::Value;
use crate::session::Session;
use crate::usage::{FileUsage, Source};

/// Strings of this many bytes of JSON or more are left undecoded until a row needs them.
const DEFER: usize = 64 << 10;

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
    let ms = |t: f64| t.is_finite().then_some(t as i64);
    SessionRow {
        path: info.path.to_string_lossy().into_owned(),
        id: info
            .id
            .as_ref()
            .and_then(|v| key_text(Some(v), &|s| Some(s.clone().into_owned()))),
        cwd: info.cwd.to_str_lossy().into_owned(),
        name: info.name.as_ref().map(|n| n.to_str_lossy().into_owned()),
        parent_session_path: info
            .parent_session_path
            .as_ref()
            .and_then(|v| key_text(Some(v), &|s| Some(s.clone().into_owned()))),
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

/// Call `each` with the row of every entry of `s` (pi's `getEntries()` order), the text
/// kept when `with_text`.
///
/// # Errors
/// The file changed while it was read; or what `each` returns.
pub fn entry_rows<E: From<crate::Error>>(
    s: &Session,
    with_text: bool,
    mut each: impl FnMut(EntryRow) -> Result<(), E>,
) -> Result<(), E> {
    let branch = branch_set(s);
    for &p in s.entries() {
        let v = s.value_deferring(p, DEFER)?;
        let bytes = s.bytes();
        // A deferred string's value, decoded now.
        let decode = |st: &JsStr<'_>| -> Option<JsStr<'static>> {
            match Value::deferred_json(bytes, st) {
                Some(raw) => match &Value::parse(raw) {
                    Ok(Value::String(d)) => Some(d.clone().into_owned()),
                    _ => None,
                },
                None => Some(st.clone().into_owned()),
            }
        };
        let row = row_of(
            s,
            p,
            &v,
            branch.binary_search_by_key(&p.0, |q| q.0).is_ok(),
            with_text,
            &decode,
        );
        each(row)?;
    }
    // (Rows made from bytes another process changed meanwhile are not the file's: the
    // caller throws them away on this error.)
    s.verify()?;
    Ok(())
}

/// [`entry_rows`]' slow twin: every entry decoded whole, no string left in the file.
///
/// # Errors
/// The file changed while it was read.
pub fn entry_rows_twin(s: &Session, with_text: bool) -> crate::Result<Vec<EntryRow>> {
    let branch = branch_set(s);
    let mut out = Vec::new();
    for &p in s.entries() {
        let v = s.value(p)?;
        let plain = |st: &JsStr<'_>| Some(st.clone().into_owned());
        out.push(row_of(s, p, &v, branch.contains(&p), with_text, &plain));
    }
    s.verify()?;
    Ok(out)
}

/// A string member as text; a string left undecoded goes through `decode`.
type Decode<'d> = dyn Fn(&JsStr<'_>) -> Option<JsStr<'static>> + 'd;

fn str_of(v: Option<&Value<'_>>, decode: &Decode<'_>) -> Option<String> {
    match v {
        Some(Value::String(s)) => decode(s).map(|d| d.to_str_lossy().into_owned()),
        _ => None,
    }
}

/// A key (`id`, `parentId`) as the table holds it.
fn key_text(v: Option<&Value<'_>>, decode: &Decode<'_>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => decode(s).map(|d| d.to_str_lossy().into_owned()),
        Some(other) => Some(other.stringify()),
    }
}

/// The text of a content value: a string, or the `text` of its `text` blocks joined by
/// `\n`; `None` when it holds no text.
fn content_text(c: Option<&Value<'_>>, decode: &Decode<'_>) -> Option<JsStr<'static>> {
    match c {
        Some(Value::String(s)) => decode(s),
        Some(Value::Array(blocks)) => {
            let mut out: Vec<u8> = Vec::new();
            let mut any = false;
            for b in blocks {
                if b.get("type").and_then(Value::as_str) == Some("text")
                    && let Some(Value::String(t)) = b.get("text")
                    && let Some(t) = decode(t)
                {
                    if any {
                        out.push(b'\n');
                    }
                    out.extend_from_slice(t.as_bytes());
                    any = true;
                }
            }
            // (The bytes are WTF-8 joined at whole strings: still WTF-8.)
            any.then_some(JsStr(std::borrow::Cow::Owned(out)))
        }
        _ => None,
    }
}

fn row_of(s: &Session, p: EntryPos, v: &Value<'_>, on_branch: bool, with_text: bool, decode: &Decode<'_>) -> EntryRow {
    let rec = s.record(p);
    let ty = str_of(v.get("type"), decode);
    let message = v.get("message").filter(|m| matches!(m, Value::Object(_)));
    let mut row = EntryRow {
        id: key_text(v.get("id"), decode),
        parent_id: key_text(v.get("parentId"), decode),
        ty: ty.clone(),
        role: None,
        timestamp_ms: {
            let t = crate::json::value::js_date_time(v.get("timestamp"));
            t.is_finite().then_some(t as i64)
        },
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
    };
    let text = match ty.as_deref() {
        Some("message") => message.and_then(|m| {
            row.role = str_of(m.get("role"), decode);
            match row.role.as_deref() {
                Some("assistant") => {
                    row.provider = str_of(m.get("provider"), decode);
                    row.model = str_of(m.get("model"), decode);
                    if let Some(Value::Array(blocks)) = m.get("content") {
                        let names: Vec<String> = blocks
                            .iter()
                            .filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
                            .filter_map(|b| str_of(b.get("name"), decode))
                            .collect();
                        row.tool_name = (!names.is_empty()).then(|| names.join(","));
                    }
                }
                Some("toolResult") => {
                    row.tool_name = str_of(m.get("toolName"), decode);
                    row.is_error = Some(matches!(m.get("isError"), Some(Value::Bool(true))));
                }
                _ => {}
            }
            content_text(m.get("content"), decode)
        }),
        Some("custom_message") => content_text(v.get("content"), decode),
        Some("compaction" | "branch_summary") => match v.get("summary") {
            Some(Value::String(t)) => decode(t),
            _ => None,
        },
        Some("model_change") => {
            row.provider = str_of(v.get("provider"), decode);
            row.model = str_of(v.get("modelId"), decode);
            None
        }
        _ => None,
    };
    if let Some(t) = text {
        row.text_len = Some(t.utf16_len() as u64);
        if with_text {
            row.text = Some(t.to_str_lossy().into_owned());
        }
    }
    row
}

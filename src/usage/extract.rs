//! The usage records of one session, found by walking the structure of the entries that
//! can carry one (the index knows their types and roles) and decoding only the `usage`
//! objects and the few strings around them: message bodies, tool output and images are
//! skipped by the structural skippers. The slow twin (`twin.rs`) finds the same records
//! in a full decode of every entry.

use super::{FileUsage, Record, Source, Time, Tokens, record_key};
use crate::index::{EntryType, Role};
use crate::json::walk::{skip_value, skip_ws, walk_members};
use crate::json::ws::Line;
use crate::json::{Kind, SyntaxError, Value};
use crate::session::Session;

/// A member's span in the line (`start..end`, empty when missing).
#[derive(Clone, Copy, Default)]
pub(crate) struct Span {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) object: bool,
}

impl Span {
    pub(crate) fn get<'a>(&self, line: &'a [u8]) -> Option<&'a [u8]> {
        (self.end > self.start).then(|| &line[self.start..self.end])
    }
}

pub(crate) fn record(b: &[u8], i: usize, slot: &mut Span) -> Result<usize, SyntaxError> {
    let (end, kind) = skip_value::<Line>(b, i)?;
    *slot = Span {
        start: i,
        end,
        object: kind == Kind::Object,
    };
    Ok(end)
}

pub(crate) fn skip(b: &[u8], i: usize) -> Result<usize, SyntaxError> {
    skip_value::<Line>(b, i).map(|(e, _)| e)
}

/// The value at `s`, decoded (a small scalar or the `usage` object).
pub(crate) fn value<'a>(line: &'a [u8], s: &Span) -> Option<Value<'a>> {
    crate::json::value::parse(s.get(line)?).ok()
}

/// A string member's decoded bytes, borrowed when it has no escape (`None` when missing
/// or not a string): `type` and `role` of every candidate line, compared, not kept.
pub(crate) fn string_bytes<'a>(line: &'a [u8], s: &Span) -> Option<std::borrow::Cow<'a, [u8]>> {
    let raw = s.get(line)?;
    if raw.first() != Some(&b'"') {
        return None;
    }
    let inner = &raw[1..raw.len() - 1];
    if memchr::memchr(b'\\', inner).is_none() {
        return Some(std::borrow::Cow::Borrowed(inner));
    }
    let (t, _) = crate::json::string::decode_string(line, s.start).ok()?;
    Some(std::borrow::Cow::Owned(t.as_bytes().to_vec()))
}

/// A string member as text (`None` when missing or not a string), borrowed from the
/// line when it is valid UTF-8 without an escape (ids, models and times nearly always).
pub(crate) fn text<'a>(line: &'a [u8], s: &Span) -> Option<std::borrow::Cow<'a, str>> {
    let raw = s.get(line)?;
    if raw.first() == Some(&b'"')
        && let Some(inner) = raw.get(1..raw.len() - 1)
        && memchr::memchr(b'\\', inner).is_none()
        && let Ok(t) = simdutf8::basic::from_utf8(inner)
    {
        return Some(std::borrow::Cow::Borrowed(t));
    }
    match &value(line, s)? {
        Value::String(t) => Some(std::borrow::Cow::Owned(t.to_str_lossy().into_owned())),
        _ => None,
    }
}

/// The members of an entry or a message that a record is made of.
#[derive(Default)]
pub(crate) struct Members {
    pub(crate) usage: Span,
    pub(crate) timestamp: Span,
    pub(crate) response_id: Span,
    pub(crate) provider: Span,
    pub(crate) model: Span,
    message: Span,
    /// (Top level:) `type` and `id`; (in a message:) `role`.
    ty: Span,
    id: Span,
    pub(crate) role: Span,
}

/// The members of the object at `start` that a record is made of (and, when `message`,
/// where its `message` is), and where the object ends.
fn members(b: &[u8], start: usize, message: bool) -> Result<(Members, usize), SyntaxError> {
    let mut m = Members::default();
    let end = walk_members::<Line>(b, start, |key, i| match key {
        b"usage" => record(b, i, &mut m.usage),
        b"timestamp" => record(b, i, &mut m.timestamp),
        b"responseId" => record(b, i, &mut m.response_id),
        b"provider" => record(b, i, &mut m.provider),
        b"model" => record(b, i, &mut m.model),
        b"role" => record(b, i, &mut m.role),
        b"message" if message => record(b, i, &mut m.message),
        _ => skip(b, i),
    })?;
    Ok((m, end))
}

/// What the index knows of an entry line that can carry usage.
pub(crate) struct Head {
    pub(crate) ty: EntryType,
    pub(crate) role: Role,
    /// Its `id` when it is a string.
    pub(crate) id: Option<String>,
    /// Where its `message` object is, when the index found one.
    pub(crate) message: Option<(usize, usize)>,
}

/// The source of a record an entry of this type and role can hold.
pub(crate) fn source_of(ty: EntryType, role: Role) -> Option<Source> {
    match (ty, role) {
        (EntryType::Message, Role::Assistant) => Some(Source::Assistant),
        (EntryType::Message, Role::ToolResult) => Some(Source::Tool),
        (EntryType::Compaction | EntryType::BranchSummary, _) => Some(Source::Summary),
        (EntryType::Usage, _) => Some(Source::Entry),
        _ => None,
    }
}

/// The record of one entry line, pushed to `out` when it has one.
///
/// # Errors
/// The line does not walk (a line the index vouched for: the file changed).
pub(crate) fn record_of_line(line: &[u8], head: &Head, header_ms: f64, out: &mut FileUsage) -> Result<(), SyntaxError> {
    if source_of(head.ty, head.role).is_none() {
        return Ok(());
    }
    let first = skip_ws::<Line>(line, 0);
    if line.get(first) != Some(&b'{') {
        return Ok(());
    }
    let is_message = head.ty == EntryType::Message;
    let (top, _) = members(line, first, is_message && head.message.is_none())?;
    let inner = if is_message {
        let (start, end) = match head.message {
            Some(m) => m,
            None if top.message.object => (top.message.start, top.message.end),
            None => return Ok(()),
        };
        if line.get(start) != Some(&b'{') || end > line.len() {
            return Ok(());
        }
        Some(members(line, start, false)?.0)
    } else {
        None
    };
    push_record(
        line,
        head.ty,
        head.role,
        &top,
        inner.as_ref(),
        head.id.as_deref(),
        header_ms,
        out,
    );
    Ok(())
}

/// The record of an entry of type `ty` and role `role` whose members are `top` (and, for
/// a message, `inner`: its message object's), pushed to `out` when it holds one. A message
/// without a message object holds none; other entries read only their own members.
#[allow(clippy::too_many_arguments)]
pub(crate) fn push_record(
    line: &[u8],
    ty: EntryType,
    role: Role,
    top: &Members,
    inner: Option<&Members>,
    id: Option<&str>,
    header_ms: f64,
    out: &mut FileUsage,
) {
    let Some(source) = source_of(ty, role) else { return };
    let inner = match (ty == EntryType::Message, inner) {
        (true, None) => return,
        (true, inner) => inner,
        (false, _) => None,
    };
    record_from(line, source, top, inner, id, header_ms, out);
}

/// The record of an entry of `source` whose members are `top` (and, for a message,
/// `inner`), pushed to `out` when its `usage` is an object.
fn record_from(
    line: &[u8],
    source: Source,
    top: &Members,
    inner: Option<&Members>,
    id: Option<&str>,
    header_ms: f64,
    out: &mut FileUsage,
) {
    // Where the usage, the record's own time and its model are.
    let m = inner.unwrap_or(top);
    if !m.usage.object {
        return;
    }
    let Some((tokens, cost)) = usage_numbers(line, &m.usage) else {
        return;
    };
    let response_id = if source == Source::Assistant {
        text(line, &m.response_id)
    } else {
        None
    };
    let own = inner.and_then(|i| number(line, &i.timestamp)).unwrap_or(f64::NAN);
    let entry_ts = || value(line, &top.timestamp);
    // The entry's time is parsed only when the record has none of its own.
    let entry_ms = if Time::valid(own) {
        f64::NAN
    } else {
        crate::json::value::js_date_time(entry_ts().as_ref())
    };
    let time = Time::pick(own, entry_ms, header_ms);
    let key = match response_id.as_deref() {
        Some(r) if !r.is_empty() => record_key(Some(r), id, ""),
        _ => {
            let ts = text(line, &top.timestamp).unwrap_or_default();
            record_key(None, id, &ts)
        }
    };
    let (provider, model) = match source {
        Source::Assistant | Source::Entry => (text(line, &m.provider), text(line, &m.model)),
        Source::Tool | Source::Summary => (None, None),
    };
    let model = out.model_index(&provider.unwrap_or_default(), &model.unwrap_or_default());
    out.push(Record {
        key,
        time,
        source,
        model,
        tokens,
        cost,
    });
}

/// A token count or cost member's number (`None` when it is no number).
fn number(line: &[u8], s: &Span) -> Option<f64> {
    let raw = s.get(line)?;
    // A count: digits only (no leading zero in JSON), exact in an f64 up to 15 of them.
    if raw.len() <= 15 && raw.iter().all(u8::is_ascii_digit) {
        return Some(raw.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0')) as f64);
    }
    // A JSON number (the walker validated it) is also Rust's float syntax.
    if let Some(&c) = raw.first()
        && (c == b'-' || c.is_ascii_digit())
    {
        return std::str::from_utf8(raw).ok()?.parse().ok();
    }
    None
}

/// The tokens and `cost.total` of the `usage` object at `s`, walked rather than decoded
/// (as [`Tokens::of`] and `cost_of` read the decoded object: the last of duplicate
/// members counts, as in `JSON.parse`).
fn usage_numbers(line: &[u8], s: &Span) -> Option<(Tokens, f64)> {
    let (mut input, mut output, mut cache_read, mut cache_write, mut cost) = (
        Span::default(),
        Span::default(),
        Span::default(),
        Span::default(),
        Span::default(),
    );
    walk_members::<Line>(line, s.start, |key, i| match key {
        b"input" => record(line, i, &mut input),
        b"output" => record(line, i, &mut output),
        b"cacheRead" => record(line, i, &mut cache_read),
        b"cacheWrite" => record(line, i, &mut cache_write),
        b"cost" => record(line, i, &mut cost),
        _ => skip(line, i),
    })
    .ok()?;
    let count = |x: &Span| super::token_of(number(line, x));
    let tokens = Tokens {
        input: count(&input),
        output: count(&output),
        cache_read: count(&cache_read),
        cache_write: count(&cache_write),
    };
    let mut total = Span::default();
    if cost.object {
        walk_members::<Line>(line, cost.start, |key, i| match key {
            b"total" => record(line, i, &mut total),
            _ => skip(line, i),
        })
        .ok()?;
    }
    let cost = number(line, &total).filter(|c| c.is_finite()).unwrap_or(0.0);
    Some((tokens, cost))
}

/// One line of a file in one pass: pi's line test (the line must be a JSON object, with
/// nothing after it) and the members a record is made of, a `message` object walked as
/// it is met (so its content is skipped once). Pushes the line's record to `out`, if it
/// has one; `false` when the line is not an object pi keeps (it is no entry).
pub(crate) fn record_of_raw_line(line: &[u8], header_ms: f64, out: &mut FileUsage) -> bool {
    let first = skip_ws::<Line>(line, 0);
    if line.get(first) != Some(&b'{') {
        return false;
    }
    let mut top = Members::default();
    let mut inner: Option<Members> = None;
    // (A line holds no `\n`: the index's white space is JSON's here.)
    let walked = walk_members::<Line>(line, first, |key, i| match key {
        b"type" => record(line, i, &mut top.ty),
        b"id" => record(line, i, &mut top.id),
        b"timestamp" => record(line, i, &mut top.timestamp),
        b"usage" => record(line, i, &mut top.usage),
        b"provider" => record(line, i, &mut top.provider),
        b"model" => record(line, i, &mut top.model),
        b"message" if line[i] == b'{' => {
            let (m, end) = members(line, i, false)?;
            inner = Some(m);
            Ok(end)
        }
        b"message" => {
            inner = None;
            skip(line, i)
        }
        _ => skip(line, i),
    });
    let Ok(end) = walked else { return false };
    if skip_ws::<Line>(line, end) != line.len() {
        return false;
    }
    let ty = string_bytes(line, &top.ty).map_or(EntryType::Other, |t| EntryType::from_type_str(&t));
    let role = match &inner {
        Some(m) if m.role.end > m.role.start => {
            string_bytes(line, &m.role).map_or(Role::NotString, |r| Role::from_name(&r))
        }
        _ => Role::Missing,
    };
    let Some(source) = source_of(ty, role) else { return true };
    if ty == EntryType::Message && inner.is_none() {
        return true;
    }
    let id = text(line, &top.id);
    record_from(line, source, &top, inner.as_ref(), id.as_deref(), header_ms, out);
    true
}

/// The usage records of `s`, in file order; `header_ms` is the header's time (Unix ms,
/// NaN when it has none), the last fallback for a record's time.
///
/// # Errors
/// A line the index vouched for no longer walks: the file changed under the reader.
pub(crate) fn records(s: &Session, header_ms: f64) -> Result<FileUsage, SyntaxError> {
    let mut out = FileUsage::default();
    for &pos in s.entries() {
        let rec = s.record(pos);
        if source_of(rec.ty, rec.role).is_none() {
            continue;
        }
        let head = Head {
            ty: rec.ty,
            role: rec.role,
            id: rec.id.str_bytes().map(|b| String::from_utf8_lossy(b).into_owned()),
            message: rec.message.get(),
        };
        record_of_line(s.raw(pos), &head, header_ms, &mut out)?;
    }
    Ok(out)
}

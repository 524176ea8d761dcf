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
struct Span {
    start: usize,
    end: usize,
    object: bool,
}

impl Span {
    fn get<'a>(&self, line: &'a [u8]) -> Option<&'a [u8]> {
        (self.end > self.start).then(|| &line[self.start..self.end])
    }
}

fn record(b: &[u8], i: usize, slot: &mut Span) -> Result<usize, SyntaxError> {
    let (end, kind) = skip_value::<Line>(b, i)?;
    *slot = Span {
        start: i,
        end,
        object: kind == Kind::Object,
    };
    Ok(end)
}

fn skip(b: &[u8], i: usize) -> Result<usize, SyntaxError> {
    skip_value::<Line>(b, i).map(|(e, _)| e)
}

/// The value at `s`, decoded (a small scalar or the `usage` object).
fn value<'a>(line: &'a [u8], s: &Span) -> Option<Value<'a>> {
    crate::json::value::parse(s.get(line)?).ok()
}

/// A string member as text (`None` when missing or not a string).
fn text(line: &[u8], s: &Span) -> Option<String> {
    match &value(line, s)? {
        Value::String(t) => Some(t.to_str_lossy().into_owned()),
        _ => None,
    }
}

/// The members of an entry or a message that a record is made of.
#[derive(Default)]
struct Members {
    usage: Span,
    timestamp: Span,
    response_id: Span,
    provider: Span,
    model: Span,
    message: Span,
}

fn members(b: &[u8], start: usize, message: bool) -> Result<Members, SyntaxError> {
    let mut m = Members::default();
    walk_members::<Line>(b, start, |key, i| match key {
        b"usage" => record(b, i, &mut m.usage),
        b"timestamp" => record(b, i, &mut m.timestamp),
        b"responseId" => record(b, i, &mut m.response_id),
        b"provider" => record(b, i, &mut m.provider),
        b"model" => record(b, i, &mut m.model),
        b"message" if message => record(b, i, &mut m.message),
        _ => skip(b, i),
    })?;
    Ok(m)
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
        let source = match (rec.ty, rec.role) {
            (EntryType::Message, Role::Assistant) => Source::Assistant,
            (EntryType::Message, Role::ToolResult) => Source::Tool,
            (EntryType::Compaction | EntryType::BranchSummary, _) => Source::Summary,
            (EntryType::Usage, _) => Source::Entry,
            _ => continue,
        };
        let line = s.raw(pos);
        let first = skip_ws::<Line>(line, 0);
        if line.get(first) != Some(&b'{') {
            continue;
        }
        let top = members(line, first, rec.ty == EntryType::Message)?;
        let inner = if rec.ty == EntryType::Message {
            if !top.message.object {
                continue;
            }
            Some(members(line, top.message.start, false)?)
        } else {
            None
        };
        // Where the usage, the record's own time and its model are.
        let m = inner.as_ref().unwrap_or(&top);
        if !m.usage.object {
            continue;
        }
        let Some(usage) = value(line, &m.usage) else { continue };
        let entry_ts = value(line, &top.timestamp);
        let entry_ts_text = match &entry_ts {
            Some(Value::String(t)) => t.to_str_lossy().into_owned(),
            _ => String::new(),
        };
        let id = rec.id.str_bytes().map(|b| String::from_utf8_lossy(b).into_owned());
        let response_id = if source == Source::Assistant {
            text(line, &m.response_id)
        } else {
            None
        };
        let own = match (&inner, value(line, &m.timestamp)) {
            (Some(_), Some(Value::Number(n))) => n,
            _ => f64::NAN,
        };
        let time = Time::pick(own, crate::json::value::js_date_time(entry_ts.as_ref()), header_ms);
        let (provider, model) = match source {
            Source::Assistant | Source::Entry => (text(line, &m.provider), text(line, &m.model)),
            Source::Tool | Source::Summary => (None, None),
        };
        let model = out.model_index(provider.unwrap_or_default(), model.unwrap_or_default());
        out.push(Record {
            key: record_key(response_id.as_deref(), id.as_deref(), &entry_ts_text),
            time,
            source,
            model,
            tokens: Tokens::of(&usage),
            cost: super::cost_of(&usage),
        });
    }
    Ok(out)
}

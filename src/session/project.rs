//! Context messages decoded, or written as `JSON.stringify` would write them: one at a
//! time ([`Session::message`]), all of them ([`Session::context_values`], in parallel for
//! big contexts), or streamed as `pi-session context --json` prints them
//! ([`Session::write_context_json`], in windows of bounded size, in parallel).
//!
//! Decoding follows pi's `sessionEntryToContextMessages` and `projectContextEntry` for the
//! message's projection and edit (see [`crate::session::context`]); strings are borrowed
//! from the file where they hold no escapes.

use crate::error::Result;
use crate::index::{EntryPos, Role};
use crate::js::string::JsStr;
use crate::json::value::{self, Object, Value, js_date_time};
use crate::json::verbatim::stringify_form_member;
use crate::session::context::{Context, ContextMessage, Projection, put, set, take};
use crate::session::{Migration, Session, line_of};
use rayon::prelude::*;
use std::io::Write;

/// Messages are written (and decoded) in parallel in windows of about this many source
/// bytes: the memory a streamed context needs, whatever its size.
const WINDOW: u64 = 32 << 20;

/// ... and of at most this many messages (decoded small messages cost several times their
/// source bytes).
const WINDOW_MESSAGES: usize = 1024;

impl Session {
    /// Decode one message of a context (see [`Context`]).
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`](crate::ErrorKind::FileChanged) when the file changed under a mapping.
    pub fn message(&self, m: &ContextMessage) -> Result<Value<'_>> {
        let bytes = self.check()?;
        let v = self.decode_message(bytes, m)?;
        self.check()?;
        Ok(v)
    }

    /// Every message of a context, decoded (in parallel when there is much to decode):
    /// what pi's `buildSessionContext().messages` holds.
    ///
    /// # Errors
    /// As [`Session::message`].
    pub fn context_values<'a>(&'a self, ctx: &Context<'_>) -> Result<Vec<Value<'a>>> {
        let bytes = self.check()?;
        let mut out = Vec::with_capacity(ctx.messages.len());
        for window in windows(&ctx.messages) {
            out.extend(map_window(window, |m| self.decode_message(bytes, m))?);
        }
        self.check()?;
        Ok(out)
    }

    /// Every message of a context, decoded in parallel a window of bounded size at a time
    /// and handed to `each` in order: all of a context of any size, in little memory.
    ///
    /// # Errors
    /// As [`Session::message`], and what `each` returns.
    pub fn for_each_message(&self, ctx: &Context<'_>, each: &mut dyn FnMut(Value<'_>) -> Result<()>) -> Result<()> {
        let bytes = self.check()?;
        for window in windows(&ctx.messages) {
            for v in map_window(window, |m| self.decode_message(bytes, m))? {
                each(v)?;
            }
        }
        self.check()?;
        Ok(())
    }

    /// Append `JSON.stringify(message)` to `out`.
    ///
    /// # Errors
    /// As [`Session::message`].
    /// A stored message whose bytes are already what `JSON.stringify` writes for them (pi
    /// writes every line with it, so nearly all are) is copied as it is: no decoding, no
    /// re-encoding. The rest are decoded and stringified.
    pub fn write_message_json(&self, m: &ContextMessage, out: &mut Vec<u8>) -> Result<()> {
        let bytes = self.check()?;
        match self.stored_json(bytes, m) {
            Some(raw) => out.extend_from_slice(raw),
            None => self.decode_message(bytes, m)?.stringify_into(out),
        }
        Ok(())
    }

    /// Write `JSON.stringify({messages, thinkingLevel, model})` of a context (what
    /// `pi-session context --json` prints, without the final newline), streamed: messages
    /// are produced in parallel in windows of bounded size and written in order, so a
    /// context of any size needs little memory.
    ///
    /// # Errors
    /// As [`Session::message`], and the writer's errors.
    pub fn write_context_json(&self, ctx: &Context<'_>, w: &mut dyn Write) -> Result<()> {
        let bytes = self.check()?;
        w.write_all(b"{\"messages\":[")?;
        let mut first = true;
        for window in windows(&ctx.messages) {
            // Each message as a slice of the file (when its bytes are what stringify
            // writes) or as bytes made for it; found in parallel, written in order.
            for part in &map_window(window, |m| self.json_of(bytes, m))? {
                if !first {
                    w.write_all(b",")?;
                }
                first = false;
                w.write_all(match part {
                    Json::Stored(b) => b,
                    Json::Made(b) => b,
                })?;
            }
        }
        w.write_all(b"]")?;
        let mut tail = Vec::new();
        if let Some(t) = &ctx.thinking_level {
            tail.extend_from_slice(b",\"thinkingLevel\":");
            t.stringify_into(&mut tail);
        }
        tail.extend_from_slice(b",\"model\":");
        match &ctx.model {
            None => tail.extend_from_slice(b"null"),
            Some(m) => Value::Object(m.clone()).stringify_into(&mut tail),
        }
        tail.push(b'}');
        w.write_all(&tail)?;
        // What was written came from the file only if it did not change meanwhile.
        self.check()?;
        Ok(())
    }

    /// A message's JSON: its stored bytes when they are what `JSON.stringify` writes,
    /// else made.
    fn json_of<'a>(&self, bytes: &'a [u8], m: &ContextMessage) -> Result<Json<'a>> {
        if let Some(raw) = self.stored_json(bytes, m) {
            return Ok(Json::Stored(raw));
        }
        let mut buf = Vec::new();
        self.decode_message(bytes, m)?.stringify_into(&mut buf);
        Ok(Json::Made(buf))
    }

    /// The file's bytes of a message when they are its `JSON.stringify`.
    fn stored_json<'a>(&self, bytes: &'a [u8], m: &ContextMessage) -> Option<&'a [u8]> {
        let raw = self.stored_bytes(bytes, m)?;
        // Whether pi fills in `content` is learnt in the same pass.
        let content = stringify_form_member(raw, b"content")?;
        (!self.fills_content(m) || !matches!(content, None | Some(b'n'))).then_some(raw)
    }

    /// The bytes of the file that this message is decoded from, when no projection step
    /// changes them but pi's filling in of an absent or `null` `content` (see
    /// [`Session::fills_content`]): then, if they are what `JSON.stringify` writes, they
    /// are the message's JSON.
    fn stored_bytes<'a>(&self, bytes: &'a [u8], m: &ContextMessage) -> Option<&'a [u8]> {
        if m.edit.is_some() {
            return None;
        }
        match m.projection {
            Projection::CompactionSystem | Projection::RetainedTail(_) => Some(&bytes[m.span.range()]),
            // Perhaps a `hookMessage` the migration renamed.
            Projection::Message
                if matches!(self.migration, Migration::FromV1 | Migration::FromV2) && m.role == Role::Custom =>
            {
                None
            }
            Projection::Message => Some(&bytes[m.span.range()]),
            _ => None,
        }
    }

    /// Whether pi fills in this message's `content` when it is absent or `null`: stored
    /// messages of the roles `system`, `user`, `assistant` and `toolResult`.
    fn fills_content(&self, m: &ContextMessage) -> bool {
        m.projection == Projection::Message
            && matches!(m.role, Role::System | Role::User | Role::Assistant | Role::ToolResult)
    }

    /// Decode one message of a context from bytes already checked.
    pub(crate) fn decode_message<'a>(&'a self, bytes: &'a [u8], m: &ContextMessage) -> Result<Value<'a>> {
        let p = m.entry;
        let mut v = match m.projection {
            Projection::Message => {
                let Some(mut v) = self.message_in(bytes, p)? else {
                    return Err(self.changed());
                };
                if let Value::Object(o) = &mut v {
                    let content_nullish = matches!(o.get("content"), None | Some(Value::Null));
                    match m.role {
                        Role::System if content_nullish => {
                            o.set(JsStr::from_str("content"), Value::str(""));
                        }
                        Role::User | Role::Assistant | Role::ToolResult if content_nullish => {
                            o.set(JsStr::from_str("content"), Value::Array(Vec::new()));
                        }
                        _ => {}
                    }
                }
                v
            }
            Projection::CompactionSystem | Projection::RetainedTail(_) => {
                self.decoded.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                value::parse(&bytes[m.span.range()]).map_err(|_| self.changed())?
            }
            Projection::Custom => {
                let mut v = self.value_in(bytes, p)?;
                let content = match take(&mut v, "content") {
                    None | Some(Value::Null) => Value::Array(Vec::new()),
                    Some(c) => c,
                };
                let mut o = Object::new();
                set(&mut o, "role", Value::str("custom"));
                put(&mut o, "customType", take(&mut v, "customType"));
                set(&mut o, "content", content);
                put(&mut o, "display", take(&mut v, "display"));
                put(&mut o, "details", take(&mut v, "details"));
                set(&mut o, "timestamp", Value::Number(js_date_time(v.get("timestamp"))));
                Value::Object(o)
            }
            Projection::BranchSummary => summary(self.value_in(bytes, p)?, "branchSummary", "fromId"),
            Projection::CompactionSummary => summary(self.value_in(bytes, p)?, "compactionSummary", "tokensBefore"),
        };
        if let Some(edit) = m.edit {
            self.apply_edit(bytes, edit, m.role, &mut v)?;
        }
        Ok(v)
    }

    /// pi's `projectContextEntry(entry, edit)` for one message whose role the edit
    /// replaces the content of.
    fn apply_edit<'a>(&self, bytes: &'a [u8], edit: EntryPos, role: Role, m: &mut Value<'a>) -> Result<()> {
        let line = line_of(bytes, &self.record(edit));
        let Some(f) = self.entry_fields(bytes, edit, &["replacement"])?[0] else {
            // Building the context found a replacement: the file changed since.
            return Err(self.changed());
        };
        let rep = value::parse(f.raw(line)).map_err(|_| self.changed())?;
        let content = match rep.get("content") {
            Some(Value::String(s)) if matches!(role, Role::Assistant | Role::ToolResult) => {
                let mut block = Object::new();
                set(&mut block, "type", Value::str("text"));
                set(&mut block, "text", Value::String(s.clone()));
                Some(Value::Array(vec![Value::Object(block)]))
            }
            c => c.cloned(),
        };
        if let Value::Object(o) = m {
            match content {
                Some(c) => o.set(JsStr::from_str("content"), c),
                None => {
                    o.remove("content");
                }
            }
        }
        Ok(())
    }
}

/// One message's `JSON.stringify`.
enum Json<'a> {
    /// The file's own bytes.
    Stored(&'a [u8]),
    /// Decoded and stringified.
    Made(Vec<u8>),
}

/// The messages cut into windows of up to [`WINDOW`] source bytes and
/// [`WINDOW_MESSAGES`] messages (at least one message each).
fn windows(mut rest: &[ContextMessage]) -> impl Iterator<Item = &[ContextMessage]> {
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (mut n, mut total) = (0, 0u64);
        while n < rest.len() && n < WINDOW_MESSAGES && (n == 0 || total + rest[n].span.len <= WINDOW) {
            total += rest[n].span.len;
            n += 1;
        }
        let (window, next) = rest.split_at(n);
        rest = next;
        Some(window)
    })
}

/// pi's summary messages: `{role, summary, <extra>, timestamp}` from the entry `v`.
fn summary<'a>(mut v: Value<'a>, role: &'static str, extra: &'static str) -> Value<'a> {
    let mut o = Object::new();
    set(&mut o, "role", Value::str(role));
    put(&mut o, "summary", take(&mut v, "summary"));
    put(&mut o, extra, take(&mut v, extra));
    set(&mut o, "timestamp", Value::Number(js_date_time(v.get("timestamp"))));
    Value::Object(o)
}

/// `f` of each message of a window, in order: in parallel when there is much to do.
fn map_window<T: Send>(
    window: &[ContextMessage],
    f: impl Fn(&ContextMessage) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    if window.len() > 1 && size(window) > WINDOW / 8 {
        window.par_iter().map(f).collect()
    } else {
        window.iter().map(f).collect()
    }
}

/// The source bytes of some messages.
fn size(ms: &[ContextMessage]) -> u64 {
    ms.iter().map(|m| m.span.len).sum()
}

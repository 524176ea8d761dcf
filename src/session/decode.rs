//! Decoding what an entry's line holds, on demand: the whole line as pi holds it, or only
//! the members asked for (`message`'s, a timestamp, an id), without the rest.

use super::{Migration, Session, key_to_value, line_of};
use crate::error::{Error, ErrorKind, Result};
use crate::index::{self, EntryPos, EntryType, Key};
use crate::js::string::JsStr;
use crate::json::value::{self, Value};
use crate::json::walk::for_each_member;
use crate::json::{Field, Kind};
use std::sync::atomic::Ordering;

impl Session {
    /// Decode a kept line as pi holds it in memory (after migration).
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`] when the file changed under a mapping.
    pub fn value(&self, pos: EntryPos) -> Result<Value<'_>> {
        let bytes = self.check()?;
        self.value_in(bytes, pos)
    }

    /// [`Session::value`], leaving string values of `min` bytes of JSON or more
    /// undecoded (see [`Value::parse_deferring`]): each is a slice of
    /// [`Session::bytes`], quotes included, that [`Value::deferred_json`] finds.
    ///
    /// # Errors
    /// As [`Session::value`].
    #[doc(hidden)] // (plumbing for the Node binding, not an API)
    pub fn value_deferring(&self, pos: EntryPos, min: usize) -> Result<Value<'_>> {
        let bytes = self.check()?;
        self.decoded.fetch_add(1, Ordering::Relaxed);
        let mut v = value::parse_deferring(line_of(bytes, &self.record(pos)), min).map_err(|_| self.changed())?;
        self.patch(pos, &mut v);
        Ok(v)
    }

    /// Decode a kept line as `JSON.parse` gives it, before any migration (pi's
    /// `loadEntriesFromFile`; the header is a kept line too).
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`] when the file changed under a mapping.
    pub fn parsed(&self, pos: EntryPos) -> Result<Value<'_>> {
        let bytes = self.check()?;
        let line = line_of(bytes, &self.record(pos));
        crate::json::value::parse(line).map_err(|_| {
            Error::from(ErrorKind::FileChanged {
                path: self.path.clone(),
            })
        })
    }

    /// Selected members of a `message` entry's `message` object, each decoded alone:
    /// the other members (a tool result's output, an image's data) are skipped, not
    /// decoded. `Ok(None)` when the entry has no `message`; a `message` that is not an
    /// object gives no members. `hookMessage` reads as `custom` after migration, as in
    /// [`Session::value`].
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`].
    ///
    /// ```
    /// # let text = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n\
    /// # {\"type\":\"message\",\"id\":\"4bd0512f\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"content\":[{\"type\":\"text\",\"text\":\"big\"}]}}\n";
    /// let s = pi_session::Session::from_bytes(text.as_bytes().to_vec()).unwrap();
    /// let m = s.message_members_of(s.find("4bd0512f").unwrap(), &["toolCallId", "isError"]).unwrap().unwrap();
    /// assert_eq!(m[0].as_ref().and_then(pi_session::Value::as_str), Some("c1"));
    /// assert!(m[1].is_none());
    /// ```
    pub fn message_members_of(&self, pos: EntryPos, keys: &[&str]) -> Result<Option<Vec<Option<Value<'_>>>>> {
        let bytes = self.check()?;
        Ok(self.message_members(bytes, pos, keys)?.map(|(_, v)| v))
    }

    /// An entry's `timestamp` member, decoded alone (`None`: missing).
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`].
    ///
    /// ```
    /// # let text = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n\
    /// # {\"type\":\"label\",\"id\":\"4bd0512f\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\"}\n";
    /// let s = pi_session::Session::from_bytes(text.as_bytes().to_vec()).unwrap();
    /// let t = s.entry_timestamp(s.find("4bd0512f").unwrap()).unwrap();
    /// assert_eq!(t.as_ref().and_then(pi_session::Value::as_str), Some("2025-01-01T00:00:01.000Z"));
    /// ```
    pub fn entry_timestamp(&self, pos: EntryPos) -> Result<Option<Value<'_>>> {
        let bytes = self.check()?;
        let e = self.record(pos);
        // A message entry's line is mostly its `message`, whose span the index knows: the
        // members are read from a copy of the line with that value replaced by `null`
        // (same members, same order), so a tool's output or an image is not walked.
        // `timestamp_in`, which walks the whole line, is its twin (tests/it/tree.rs,
        // fuzz target `member_reads`).
        if e.ty == EntryType::Message
            && let Some((s, end)) = e.message.get()
            && end - s > 64
        {
            let line = line_of(bytes, &e);
            let (Some(head), Some(tail)) = (line.get(..s), line.get(end..)) else {
                return Err(self.changed());
            };
            let short = [head, b"null", tail].concat();
            let Some(f) = self.field(&short, index::RelSpan::NONE, "timestamp") else {
                return Ok(None);
            };
            return Ok(value::parse(f.raw(&short)).ok().map(Value::into_owned));
        }
        Ok(self.timestamp_in(bytes, pos))
    }

    pub(crate) fn value_in<'a>(&'a self, bytes: &'a [u8], pos: EntryPos) -> Result<Value<'a>> {
        self.decoded.fetch_add(1, Ordering::Relaxed);
        let e = self.record(pos);
        let mut v = value::parse(line_of(bytes, &e)).map_err(|_| self.changed())?;
        self.patch(pos, &mut v);
        Ok(v)
    }

    /// The `message` value of a `message` entry, decoded alone (the rest of the line is
    /// not touched). `Ok(None)` when the entry has no `message` key.
    pub(crate) fn message_in<'a>(&'a self, bytes: &'a [u8], pos: EntryPos) -> Result<Option<Value<'a>>> {
        let e = self.record(pos);
        let line = line_of(bytes, &e);
        let Some(f) = self.field(line, e.message, "message") else {
            return Ok(None);
        };
        self.decoded.fetch_add(1, Ordering::Relaxed);
        let mut v = value::parse(f.raw(line)).map_err(|_| self.changed())?;
        if matches!(self.migration, Migration::FromV1 | Migration::FromV2)
            && let Value::Object(m) = &mut v
            && m.get("role").and_then(Value::as_str) == Some("hookMessage")
        {
            m.set(JsStr::from_str("role"), Value::str("custom"));
        }
        Ok(Some(v))
    }

    /// Selected top-level members of a `message` value (`role`, `provider`, ...), without
    /// decoding the rest. `Ok(None)` when the entry has no `message`; `Some(Err(kind))` is
    /// not used: a present non-object message yields no members.
    pub(crate) fn message_members<'a>(
        &'a self,
        bytes: &'a [u8],
        pos: EntryPos,
        keys: &[&str],
    ) -> Result<Option<(Kind, Vec<Option<Value<'a>>>)>> {
        let e = self.record(pos);
        let line = line_of(bytes, &e);
        let Some(f) = self.field(line, e.message, "message") else {
            return Ok(None);
        };
        let mut out: Vec<Option<Value<'a>>> = vec![None; keys.len()];
        if f.kind == Kind::Object {
            let mut spans: Vec<Option<Field>> = vec![None; keys.len()];
            for_each_member(line, f.start, |k, field| {
                if let Some(i) = keys.iter().position(|w| w.as_bytes() == k) {
                    spans[i] = Some(field);
                }
            })
            .map_err(|_| self.changed())?;
            for (slot, span) in out.iter_mut().zip(spans) {
                if let Some(s) = span {
                    *slot = Some(value::parse(s.raw(line)).map_err(|_| self.changed())?);
                }
            }
            if matches!(self.migration, Migration::FromV1 | Migration::FromV2)
                && let Some(i) = keys.iter().position(|k| *k == "role")
                && out[i].as_ref().and_then(Value::as_str) == Some("hookMessage")
            {
                out[i] = Some(Value::str("custom"));
            }
        }
        Ok(Some((f.kind, out)))
    }

    /// The `message` member of a `message` entry's line.
    pub(crate) fn message_field(&self, line: &[u8], p: EntryPos) -> Option<Field> {
        self.field(line, self.record(p).message, "message")
    }

    /// A top-level field of a line, from the index's span or by scanning again when the
    /// span did not fit (lines over 4 GiB).
    fn field(&self, line: &[u8], span: index::RelSpan, key: &str) -> Option<Field> {
        if let Some((s, e)) = span.get() {
            // The span is known; its first byte tells the kind well enough for the callers
            // (object or null), without scanning the value again.
            let kind = self.record_kind_hint(line, s)?;
            return Some(Field { start: s, end: e, kind });
        }
        let mut found = None;
        for_each_member(line, line.iter().position(|&c| c == b'{')?, |k, f| {
            if k == key.as_bytes() {
                found = Some(f);
            }
        })
        .ok()?;
        found
    }

    /// The kind of the value starting at `s`, when its first byte says it without
    /// scanning (everything but numbers and strings' escape flag, which callers here do
    /// not need).
    fn record_kind_hint(&self, line: &[u8], s: usize) -> Option<Kind> {
        Some(match line.get(s)? {
            b'{' => Kind::Object,
            b'[' => Kind::Array,
            b'n' => Kind::Null,
            b't' => Kind::True,
            b'f' => Kind::False,
            b'"' => Kind::String { escaped: true },
            _ => Kind::Number,
        })
    }

    /// The role of a `message` entry's message as pi reads it (`entry.message.role`):
    /// pi's `TypeError` when `message` is missing or null; the v2 -> v3 migration applied.
    pub(crate) fn message_role(&self, pos: EntryPos) -> Result<index::Role> {
        let e = self.record(pos);
        match e.message_kind {
            None => Err(self.no_message_error(pos, "undefined")),
            Some(Kind::Null) => Err(self.no_message_error(pos, "null")),
            Some(_) => Ok(match e.role {
                index::Role::HookMessage if matches!(self.migration, Migration::FromV1 | Migration::FromV2) => {
                    index::Role::Custom
                }
                r => r,
            }),
        }
    }

    pub(crate) fn no_message_error(&self, p: EntryPos, what: &str) -> Error {
        ErrorKind::PiThrows {
            line: self.record(p).line,
            what: format!("message entry whose `message` is {what}"),
            pi_message: format!("TypeError: Cannot read properties of {what} (reading 'role')"),
        }
        .into()
    }

    /// The `timestamp` value of an entry (`None`: missing).
    pub(crate) fn timestamp_in<'a>(&self, bytes: &'a [u8], pos: EntryPos) -> Option<Value<'a>> {
        let e = self.record(pos);
        if e.ty == EntryType::NonObject {
            return None;
        }
        let line = line_of(bytes, &e);
        let f = self.field(line, index::RelSpan::NONE, "timestamp")?;
        value::parse(f.raw(line)).ok()
    }

    /// The `id` of an entry as a JSON value (`None`: missing).
    pub fn id_value(&self, pos: EntryPos) -> Option<Value<'_>> {
        let e = self.record(pos);
        match e.id.non_string() {
            Some(Key::Undefined) => None,
            Some(Key::Unique(_)) => {
                let line = self.raw(pos);
                let mut found = None;
                let start = line.iter().position(|&c| c == b'{')?;
                for_each_member(line, start, |k, f| {
                    if k == b"id" {
                        found = Some(f);
                    }
                })
                .ok()?;
                value::parse(found?.raw(line)).ok()
            }
            _ => Some(key_to_value(e.id)),
        }
    }

    /// The `type` of an entry as a JSON value (`None`: missing).
    pub(crate) fn type_value(&self, pos: EntryPos) -> Option<Value<'_>> {
        let e = self.record(pos);
        if let Some(s) = e.ty.as_str() {
            return Some(Value::str(s));
        }
        if e.ty == EntryType::NonObject {
            return None;
        }
        let line = self.raw(pos);
        let mut found = None;
        let start = line.iter().position(|&c| c == b'{')?;
        for_each_member(line, start, |k, f| {
            if k == b"type" {
                found = Some(f);
            }
        })
        .ok()?;
        value::parse(found?.raw(line)).ok()
    }
}

//! Paths and the model context: pi's `getBranch`, `buildSessionPath`,
//! `buildContextEntries`, `buildSessionProjection` and `buildSessionContext`.
//!
//! Walks use only the index (ids and parent keys). Bodies are decoded only for what the
//! context needs: a `message` entry on the path yields just its `role`, `provider` and
//! `model` members (for the settings); entries that end up in the context are decoded
//! fully, with strings borrowed from the file. Entries off the path are never decoded.
//!
//! Where pi throws (a `message` entry without `message`, a `context_edit` without
//! `replacement`), the step fails with [`ErrorKind::PiThrows`], naming the line. A parent
//! cycle, on which pi never returns, fails with [`ErrorKind::ParentCycle`].

use crate::error::{ErrorKind, Result, Walk};
use crate::index::{EntryPos, EntryType, Key, Role};
use crate::js::string::JsStr;
use crate::json::value::{Object, Value, js_date_time};
use crate::session::{Session, key_from_value};
use ahash::AHashMap;

/// How the context treats a compaction's `retainedTail`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RetainedTail {
    /// As pi 1.6.0: the field is ignored and the kept range is walked.
    #[default]
    Ignore,
    /// As the format documents this project follows (**seed** in SPEC.md): when the latest
    /// compaction carries a `retainedTail` array, those messages stand in for the kept
    /// range.
    Honor,
}

/// The model context (pi's `SessionContext`).
#[derive(Debug)]
pub struct Context<'a> {
    /// The messages, in order.
    pub messages: Vec<Value<'a>>,
    /// The thinking level (`None`: a `thinking_level_change` without `thinkingLevel`,
    /// which pi carries as `undefined`).
    pub thinking_level: Option<Value<'a>>,
    /// `{provider, modelId}` (members absent when undefined), or `None` for `null`.
    pub model: Option<Object<'a>>,
    /// For each message, the entry it came from (the projection's provenance).
    pub sources: Vec<EntryPos>,
}

impl Session {
    /// Follow `parentId` links from `start`; root first.
    fn walk(&self, start: Option<EntryPos>, walk: Walk) -> Result<Vec<EntryPos>> {
        let n = self.index.len();
        let links = self.links();
        let mut seen = vec![0u64; n.div_ceil(64)];
        let mut path = Vec::new();
        let mut cur = start;
        while let Some(p) = cur {
            let i = p.0 as usize;
            if seen[i / 64] & (1 << (i % 64)) != 0 {
                return Err(ErrorKind::ParentCycle {
                    walk,
                    entry: p,
                    line: self.record(p).line,
                    byte: self.record(p).offset,
                    id_json: self.id_json(p),
                }
                .into());
            }
            seen[i / 64] |= 1 << (i % 64);
            path.push(p);
            cur = links.walk_parent(p);
        }
        path.reverse();
        Ok(path)
    }

    /// `JSON.stringify(id)` as the oracle prints it in messages.
    pub(crate) fn id_json(&self, p: EntryPos) -> String {
        match self.id_value(p) {
            None => "undefined".into(),
            Some(v) => crate::json::stringify::stringify(&v),
        }
    }

    /// pi's `getBranch(fromId)`: the path from the root to `from` (default: the leaf).
    ///
    /// # Errors
    /// [`ErrorKind::ParentCycle`].
    pub fn branch_path(&self, from: Option<&Key>) -> Result<Vec<EntryPos>> {
        let start = match from {
            Some(k) if !matches!(k, Key::Null | Key::Undefined) => k,
            _ => &self.leaf,
        };
        let first = if start.truthy() { self.entry_by_id(start) } else { None };
        self.walk(first, Walk::GetBranch)
    }

    /// pi's `buildSessionPath(entries, leafId, byId)`: like [`Session::branch_path`], but
    /// a null leaf gives an empty path and an unknown or falsy one falls back to the last
    /// entry.
    ///
    /// # Errors
    /// [`ErrorKind::ParentCycle`].
    pub fn session_path(&self, leaf: &Key) -> Result<Vec<EntryPos>> {
        if *leaf == Key::Null {
            return Ok(Vec::new());
        }
        let start = if leaf.truthy() { self.entry_by_id(leaf) } else { None };
        let start = start.or_else(|| self.list.last().copied());
        self.walk(start, Walk::BuildSessionPath)
    }

    /// Members of a message entry's message; pi's TypeError when `message` is missing or
    /// null (pi reads `entry.message.role` unconditionally).
    fn message_fields<'a>(&'a self, bytes: &'a [u8], p: EntryPos, keys: &[&str]) -> Result<Vec<Option<Value<'a>>>> {
        match self.message_members(bytes, p, keys)? {
            None => Err(self.no_message_error(p, "undefined")),
            Some((crate::json::Kind::Null, _)) => Err(self.no_message_error(p, "null")),
            Some((_, vals)) => Ok(vals),
        }
    }

    /// pi's `buildContextEntries()` for a leaf: the compaction-aware entry list.
    ///
    /// # Errors
    /// [`ErrorKind::ParentCycle`], [`ErrorKind::PiThrows`], [`ErrorKind::FileChanged`].
    pub fn context_entries(&self, leaf: &Key) -> Result<Vec<EntryPos>> {
        self.context_entries_with(leaf, RetainedTail::Ignore).map(|(e, _)| e)
    }

    /// The context entries, and the `retainedTail` messages that replace the kept range
    /// when `tail` is [`RetainedTail::Honor`] and the latest compaction has one.
    fn context_entries_with(&self, leaf: &Key, tail: RetainedTail) -> Result<(Vec<EntryPos>, Option<EntryPos>)> {
        let bytes = self.check()?;
        let path = self.session_path(leaf)?;
        let Some(&compaction) = path.iter().rev().find(|&&p| self.record(p).ty == EntryType::Compaction) else {
            return Ok((path, None));
        };
        let cid = &self.record(compaction).id;
        let Some(cidx) = path.iter().position(|&p| self.record(p).id == *cid) else {
            return Ok((path, None));
        };
        let cval = self.value_in(bytes, compaction)?;
        let mut out = vec![compaction];
        let retained = tail == RetainedTail::Honor && matches!(cval.get("retainedTail"), Some(Value::Array(_)));
        if !retained {
            let first_kept = key_from_value(cval.get("firstKeptEntryId"));
            let mut found = false;
            for &p in &path[..cidx] {
                if *self.record(p).id == first_kept {
                    found = true;
                }
                if found {
                    let is_system = self.record(p).ty == EntryType::Message && self.message_role(p)? == Role::System;
                    if !is_system {
                        out.push(p);
                    }
                }
            }
        }
        out.extend_from_slice(&path[cidx + 1..]);
        Ok((out, retained.then_some(compaction)))
    }

    /// pi's `buildSessionContext()` for a leaf (pi 1.6.0 semantics).
    ///
    /// # Errors
    /// [`ErrorKind::ParentCycle`], [`ErrorKind::PiThrows`], [`ErrorKind::FileChanged`].
    pub fn context(&self, leaf: &Key) -> Result<Context<'_>> {
        self.context_with(leaf, RetainedTail::Ignore)
    }

    /// [`Session::context`] with a choice for `retainedTail`.
    ///
    /// # Errors
    /// As [`Session::context`].
    pub fn context_with(&self, leaf: &Key, tail: RetainedTail) -> Result<Context<'_>> {
        let mut messages = Vec::new();
        let mut sources = Vec::new();
        let (thinking_level, model) = self.context_visit(leaf, tail, &mut |p, m| {
            sources.push(p);
            messages.push(m);
            Ok(())
        })?;
        // Fields read leniently (a timestamp, a role) could have come from zeros of a
        // mapping the file was cut under: only an unchanged file makes this an answer.
        self.check()?;
        Ok(Context {
            messages,
            thinking_level,
            model,
            sources,
        })
    }

    /// The context's messages handed to `visit` one at a time (with the entry each came
    /// from) instead of collected, so a writer can stream them; returns the thinking level
    /// and the model, which are known before the first message.
    ///
    /// ```
    /// let text = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n";
    /// let s = pi_session::Session::from_bytes(text.to_vec()).unwrap();
    /// let mut n = 0;
    /// s.context_visit(s.leaf(), pi_session::RetainedTail::Ignore, &mut |_, _| {
    ///     n += 1;
    ///     Ok(())
    /// })
    /// .unwrap();
    /// assert_eq!(n, 1);
    /// ```
    ///
    /// # Errors
    /// As [`Session::context`], and what `visit` returns.
    #[allow(clippy::type_complexity)]
    pub fn context_visit<'a>(
        &'a self,
        leaf: &Key,
        tail: RetainedTail,
        visit: &mut dyn FnMut(EntryPos, Value<'a>) -> Result<()>,
    ) -> Result<(Option<Value<'a>>, Option<Object<'a>>)> {
        let bytes = self.check()?;
        let path = self.session_path(leaf)?;
        // Settings over the whole path: the last thinking level and the last model source
        // win, and pi reads `message.role` of every message entry (throwing where there is
        // no message), all of which the index answers without decoding.
        let mut last_thinking = None;
        let mut last_model = None;
        for &p in &path {
            match self.record(p).ty {
                EntryType::ThinkingLevelChange => last_thinking = Some(p),
                EntryType::ModelChange => last_model = Some(p),
                EntryType::Message if self.message_role(p)? == Role::Assistant => {
                    last_model = Some(p);
                }
                _ => {}
            }
        }
        let thinking_level = match last_thinking {
            None => Some(Value::str("off")),
            Some(p) => take(&mut self.value_in(bytes, p)?, "thinkingLevel"),
        };
        let model = match last_model {
            None => None,
            Some(p) if self.record(p).ty == EntryType::ModelChange => {
                let mut v = self.value_in(bytes, p)?;
                Some(model_object(take(&mut v, "provider"), take(&mut v, "modelId")))
            }
            Some(p) => {
                let mut f = self.message_fields(bytes, p, &["provider", "model"])?;
                let m = f.pop().flatten();
                let pr = f.pop().flatten();
                Some(model_object(pr, m))
            }
        };
        let (entries, retained_from) = self.context_entries_with(leaf, tail)?;
        // The latest edit per target among the context entries.
        let mut edits: AHashMap<Key, EntryPos> = AHashMap::new();
        for &p in &entries {
            if self.record(p).ty == EntryType::ContextEdit {
                let v = self.value_in(bytes, p)?;
                edits.insert(key_from_value(v.get("targetId")), p);
            }
        }
        for (i, &p) in entries.iter().enumerate() {
            let rec = self.record(p);
            if rec.ty == EntryType::Compaction && i > 0 {
                continue;
            }
            let mut msgs = self.entry_messages(bytes, p)?;
            if let Some(&edit) = edits.get(rec.id) {
                msgs = self.apply_edit(bytes, edit, msgs)?;
            }
            if i == 0 && retained_from == Some(p) {
                // seed: the retained tail stands in for the kept range, after the summary.
                let mut c = self.value_in(bytes, p)?;
                if let Some(Value::Array(tail)) = take(&mut c, "retainedTail").as_mut() {
                    msgs.append(tail);
                }
            }
            for m in msgs {
                visit(p, m)?;
            }
        }
        Ok((thinking_level, model))
    }

    /// pi's `sessionEntryToContextMessages(entry)`.
    fn entry_messages<'a>(&'a self, bytes: &'a [u8], p: EntryPos) -> Result<Vec<Value<'a>>> {
        let rec = self.record(p);
        Ok(match rec.ty {
            EntryType::Message => {
                let Some(mut m) = self.message_in(bytes, p)? else {
                    return Err(self.no_message_error(p, "undefined"));
                };
                if let Value::Object(o) = &mut m {
                    let role = o.get("role").and_then(Value::as_str).map(str::to_owned);
                    let content_nullish = matches!(o.get("content"), None | Some(Value::Null));
                    match role.as_deref() {
                        Some("system") if content_nullish => {
                            o.set(JsStr::from_str("content"), Value::str(""));
                        }
                        Some("user" | "assistant" | "toolResult") if content_nullish => {
                            o.set(JsStr::from_str("content"), Value::Array(Vec::new()));
                        }
                        _ => {}
                    }
                } else if matches!(m, Value::Null) {
                    return Err(self.no_message_error(p, "null"));
                }
                vec![m]
            }
            EntryType::CustomMessage => {
                let mut v = self.value_in(bytes, p)?;
                let content = match take(&mut v, "content") {
                    None | Some(Value::Null) => Value::Array(Vec::new()),
                    Some(c) => c,
                };
                let mut o = Object::new();
                o.set(JsStr::from_str("role"), Value::str("custom"));
                put(&mut o, "customType", take(&mut v, "customType"));
                o.set(JsStr::from_str("content"), content);
                put(&mut o, "display", take(&mut v, "display"));
                put(&mut o, "details", take(&mut v, "details"));
                o.set(
                    JsStr::from_str("timestamp"),
                    Value::Number(js_date_time(v.get("timestamp"))),
                );
                vec![Value::Object(o)]
            }
            EntryType::BranchSummary => {
                let mut v = self.value_in(bytes, p)?;
                if !v.get("summary").is_some_and(Value::truthy) {
                    return Ok(Vec::new());
                }
                let mut o = Object::new();
                o.set(JsStr::from_str("role"), Value::str("branchSummary"));
                put(&mut o, "summary", take(&mut v, "summary"));
                put(&mut o, "fromId", take(&mut v, "fromId"));
                o.set(
                    JsStr::from_str("timestamp"),
                    Value::Number(js_date_time(v.get("timestamp"))),
                );
                vec![Value::Object(o)]
            }
            EntryType::Compaction => {
                let mut v = self.value_in(bytes, p)?;
                let mut o = Object::new();
                o.set(JsStr::from_str("role"), Value::str("compactionSummary"));
                put(&mut o, "summary", take(&mut v, "summary"));
                put(&mut o, "tokensBefore", take(&mut v, "tokensBefore"));
                o.set(
                    JsStr::from_str("timestamp"),
                    Value::Number(js_date_time(v.get("timestamp"))),
                );
                match take(&mut v, "systemMessage") {
                    Some(sm) if sm.truthy() => vec![sm, Value::Object(o)],
                    _ => vec![Value::Object(o)],
                }
            }
            _ => Vec::new(),
        })
    }

    /// pi's `projectContextEntry(entry, edit)` for the messages of one entry.
    fn apply_edit<'a>(&'a self, bytes: &'a [u8], edit: EntryPos, msgs: Vec<Value<'a>>) -> Result<Vec<Value<'a>>> {
        let mut ev = self.value_in(bytes, edit)?;
        let replacement = take(&mut ev, "replacement");
        if matches!(replacement, Some(Value::Null)) {
            return Ok(Vec::new());
        }
        let mut out = Vec::with_capacity(msgs.len());
        for mut m in msgs {
            let role = m.get("role").and_then(Value::as_str).map(str::to_owned);
            let Some(role @ ("user" | "assistant" | "toolResult" | "custom")) = role.as_deref() else {
                out.push(m);
                continue;
            };
            let Some(rep) = &replacement else {
                return Err(ErrorKind::PiThrows {
                    line: self.record(edit).line,
                    what: "context_edit without `replacement`".into(),
                    pi_message: "TypeError: Cannot read properties of undefined (reading 'content')".into(),
                }
                .into());
            };
            let content = match rep.get("content") {
                Some(Value::String(s)) if matches!(role, "assistant" | "toolResult") => {
                    let mut block = Object::new();
                    block.set(JsStr::from_str("type"), Value::str("text"));
                    block.set(JsStr::from_str("text"), Value::String(s.clone()));
                    Some(Value::Array(vec![Value::Object(block)]))
                }
                c => c.cloned(),
            };
            if let Value::Object(o) = &mut m {
                match content {
                    Some(c) => o.set(JsStr::from_str("content"), c),
                    None => {
                        o.remove("content");
                    }
                }
            }
            out.push(m);
        }
        Ok(out)
    }
}

fn take<'a>(v: &mut Value<'a>, key: &str) -> Option<Value<'a>> {
    match v {
        Value::Object(o) => o.remove(key),
        _ => None,
    }
}

fn put<'a>(o: &mut Object<'a>, key: &'static str, v: Option<Value<'a>>) {
    if let Some(v) = v {
        o.set(JsStr::from_str(key), v);
    }
}

fn model_object<'a>(provider: Option<Value<'a>>, model_id: Option<Value<'a>>) -> Object<'a> {
    let mut o = Object::new();
    put(&mut o, "provider", provider);
    put(&mut o, "modelId", model_id);
    o
}

/// pi-ai's `getCurrentSystemMessage(messages)`: every system message replayed into one
/// (content joined by blank lines, sections patched by name, tools resolved).
pub fn current_system_message<'a>(messages: &[Value<'a>]) -> Option<Object<'a>> {
    let mut content: Vec<String> = Vec::new();
    let mut sections: Vec<(JsStr<'a>, Value<'a>)> = Vec::new();
    let mut timestamp: Option<Value<'a>> = None;
    let mut tools: Vec<(Value<'a>, Value<'a>)> = Vec::new();
    let tool_key = |t: &Value<'a>| t.get("name").cloned().unwrap_or(Value::Null);
    for m in messages {
        if m.get("role").and_then(Value::as_str) != Some("system") {
            continue;
        }
        if timestamp.as_ref().is_none_or(|t| matches!(t, Value::Null)) {
            timestamp = m.get("timestamp").cloned();
        }
        let text = match m.get("content") {
            Some(Value::String(s)) => s.to_str_lossy().into_owned(),
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .map(|b| {
                    b.get("text")
                        .map(Value::to_js_string)
                        .unwrap_or_else(|| "undefined".into())
                })
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        if !text.is_empty() {
            content.push(text);
        }
        if let Some(Value::Object(secs)) = m.get("sections") {
            for (k, v) in secs.iter() {
                if matches!(v, Value::Null) {
                    sections.retain(|(x, _)| x != k);
                } else if let Some(slot) = sections.iter_mut().find(|(x, _)| x == k) {
                    slot.1 = v.clone();
                } else {
                    sections.push((k.clone(), v.clone()));
                }
            }
        }
        if let Some(Value::Array(removed)) = m.get("toolsRemoved") {
            for t in removed {
                let k = tool_key(t);
                tools.retain(|(x, _)| *x != k);
            }
        }
        if let Some(Value::Array(added)) = m.get("toolsAdded") {
            for t in added {
                let k = tool_key(t);
                if let Some(slot) = tools.iter_mut().find(|(x, _)| *x == k) {
                    slot.1 = t.clone();
                } else {
                    tools.push((k, t.clone()));
                }
            }
        }
    }
    if timestamp.as_ref().is_none_or(|t| matches!(t, Value::Null)) && tools.is_empty() {
        return None;
    }
    let mut o = Object::new();
    set(&mut o, "role", Value::str("system"));
    set(&mut o, "content", Value::string(content.join("\n\n")));
    if !sections.is_empty() {
        let mut s = Object::new();
        for (k, v) in sections {
            s.set(k, v);
        }
        set(&mut o, "sections", Value::Object(s));
    }
    if !tools.is_empty() {
        set(
            &mut o,
            "toolsAdded",
            Value::Array(tools.into_iter().map(|(_, t)| t).collect()),
        );
    }
    set(
        &mut o,
        "timestamp",
        timestamp
            .filter(|t| !matches!(t, Value::Null))
            .unwrap_or(Value::Number(0.0)),
    );
    Some(o)
}

fn set<'a>(o: &mut Object<'a>, k: &'static str, v: Value<'a>) {
    o.set(JsStr::from_str(k), v);
}

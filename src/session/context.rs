//! Paths and the model context: pi's `getBranch`, `buildSessionPath`,
//! `buildContextEntries`, `buildSessionProjection` and `buildSessionContext`.
//!
//! Walks use only the index (ids and parent keys). The context is built as message
//! *handles* ([`ContextMessage`]: which entry, which projection of it, role, the edit that
//! applies, where its bytes are), at the cost of the walk: no message body is decoded.
//! What decides the count and pi's errors is read from small members only (a
//! `context_edit`'s `targetId` and the kind of its `replacement`, a compaction's
//! `firstKeptEntryId`, whether a branch summary's `summary` is truthy, read from its raw
//! bytes). A message is decoded when a caller asks ([`Session::message`]), with strings
//! borrowed from the file; `session/project.rs` decodes or writes whole contexts.
//!
//! Where pi throws (a `message` entry without `message`, a `context_edit` without
//! `replacement`), building fails with [`ErrorKind::PiThrows`], naming the line, exactly
//! where pi's build throws. A parent cycle, on which pi never returns, fails with
//! [`ErrorKind::ParentCycle`].

use crate::error::{ErrorKind, Result, Walk};
use crate::flavor::Flavor;
use crate::index::{ByteOffset, EntryPos, EntryType, Key, KeyRef, Role};
use crate::js::string::JsStr;
use crate::json::value::{self, Object, Value};
use crate::json::walk::{for_each_member, skip_value, walk_elements};
use crate::json::{Field, Kind, ws};
use crate::session::{Session, key_from_value, line_of};
use ahash::AHashMap;
use smallvec::SmallVec;

/// Where PiG's context differs from pi's ([`Session::pig_differences`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PigDifferences {
    /// The `context_edit` entries pi applies (changing or dropping a message) and PiG does
    /// not, in the order pi meets them.
    pub edits: Vec<EntryPos>,
    /// The `bashExecution` messages marked `excludeFromContext` that PiG leaves out.
    pub left_out: Vec<EntryPos>,
}

impl PigDifferences {
    /// Whether the two contexts are the same.
    pub fn is_empty(&self) -> bool {
        self.edits.is_empty() && self.left_out.is_empty()
    }
}

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

/// The model context (pi's `SessionContext`), its messages as handles.
///
/// ```
/// let text = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n";
/// let s = pi_session::Session::from_bytes(text.to_vec()).unwrap();
/// let ctx = s.context(s.leaf()).unwrap();
/// assert_eq!(ctx.messages.len(), 1);
/// assert_eq!(ctx.messages[0].role, pi_session::Role::User);
/// // Nothing was decoded to build it; a message is decoded when asked for.
/// let m = s.message(&ctx.messages[0]).unwrap();
/// assert_eq!(m.get("content").and_then(|c| c.as_str()), Some("hi"));
/// ```
#[derive(Debug)]
pub struct Context<'a> {
    /// The messages, in order, not decoded.
    pub messages: Vec<ContextMessage>,
    /// The thinking level (`None`: a `thinking_level_change` without `thinkingLevel`,
    /// which pi carries as `undefined`).
    pub thinking_level: Option<Value<'a>>,
    /// `{provider, modelId}` (members absent when undefined), or `None` for `null`.
    pub model: Option<Object<'a>>,
}

/// Which projection of its entry a context message is (pi's
/// `sessionEntryToContextMessages` and `projectContextEntry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Projection {
    /// A `message` entry's `message`, as stored (an absent or `null` `content` filled in
    /// as pi does: `""` for `system`, `[]` for `user`, `assistant` and `toolResult`).
    Message,
    /// A `custom_message` entry as `{role: "custom", customType, content, display,
    /// details, timestamp}`.
    Custom,
    /// A `branch_summary` entry as `{role: "branchSummary", summary, fromId, timestamp}`.
    BranchSummary,
    /// A compaction's `systemMessage`, as stored (it comes before the summary).
    CompactionSystem,
    /// A compaction as `{role: "compactionSummary", summary, tokensBefore, timestamp}`.
    CompactionSummary,
    /// Element `n` of the latest compaction's `retainedTail` ([`RetainedTail::Honor`]).
    RetainedTail(u32),
}

/// One message of the context, not decoded: [`Session::message`] decodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextMessage {
    /// The entry it comes from (the projection's provenance).
    pub entry: EntryPos,
    /// What part of the entry it is.
    pub projection: Projection,
    /// Its `role`: the index's for a stored message, the projection's own for the
    /// summaries and custom messages; for a compaction's `systemMessage` and a retained
    /// tail message, read from the stored value ([`Role::Missing`] if it is no object).
    pub role: Role,
    /// The `context_edit` whose `replacement` gives this message's `content`.
    pub edit: Option<EntryPos>,
    /// Where the stored value it is made from sits in the file: the `message` member, the
    /// `systemMessage`, the retained tail element, or for the summaries and custom
    /// messages the entry's whole line.
    pub span: Span,
}

/// A byte range of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Its first byte.
    pub offset: ByteOffset,
    /// Its length.
    pub len: u64,
}

impl Span {
    /// The range as `usize` bounds into [`Session::bytes`].
    pub fn range(self) -> std::ops::Range<usize> {
        self.offset.0 as usize..(self.offset.0 + self.len) as usize
    }
}

impl Session {
    /// Follow `parentId` links from `start`; root first.
    fn walk(&self, start: Option<EntryPos>, walk: Walk) -> Result<Vec<EntryPos>> {
        let n = self.index.len();
        let links = self.links();
        // Up once to find the length (and a cycle), then again to fill the path from its
        // end: a path grown by doubling held 1.5x to 3x its length at its peak.
        let mut seen = vec![0u64; n.div_ceil(64)];
        let mut len = 0usize;
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
            len += 1;
            cur = links.walk_parent(p);
        }
        drop(seen);
        let mut path = vec![EntryPos(0); len];
        let mut cur = start;
        for slot in path.iter_mut().rev() {
            let Some(p) = cur else { break };
            *slot = p;
            cur = links.walk_parent(p);
        }
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
        let start = start.or_else(|| self.list.last());
        self.walk(start, Walk::BuildSessionPath)
    }

    /// Members of a message entry's message; pi's TypeError when `message` is missing or
    /// null (pi reads `entry.message.role` unconditionally).
    pub(crate) fn message_fields<'a>(
        &'a self,
        bytes: &'a [u8],
        p: EntryPos,
        keys: &[&str],
    ) -> Result<Vec<Option<Value<'a>>>> {
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

    /// The context entries, and the compaction whose `retainedTail` messages replace the
    /// kept range when `tail` is [`RetainedTail::Honor`] and the latest compaction has one.
    fn context_entries_with(&self, leaf: &Key, tail: RetainedTail) -> Result<(Vec<EntryPos>, Option<EntryPos>)> {
        let bytes = self.check()?;
        let path = self.session_path(leaf)?;
        self.context_entries_of(bytes, path, tail)
    }

    /// [`Session::context_entries_with`] of a session path already walked.
    fn context_entries_of(
        &self,
        bytes: &[u8],
        path: Vec<EntryPos>,
        tail: RetainedTail,
    ) -> Result<(Vec<EntryPos>, Option<EntryPos>)> {
        let Some(&compaction) = path
            .iter()
            .rev()
            .find(|&&p| self.index.ty(p.0 as usize) == EntryType::Compaction)
        else {
            return Ok((path, None));
        };
        // pi compares ids along the path; when no two entries share one, the entry with an
        // id is the one `byId` gives, so positions are compared instead (the ids of a long
        // path are a read of each entry's line).
        let unique = self.links().unique;
        let ids = self.index.ids(bytes);
        let has_id = |p: EntryPos, key: KeyRef<'_>, holder: Option<EntryPos>| {
            if unique {
                Some(p) == holder
            } else {
                ids.id(p.0 as usize) == key
            }
        };
        let cid = ids.id(compaction.0 as usize);
        let Some(cidx) = path.iter().position(|&p| has_id(p, cid, Some(compaction))) else {
            return Ok((path, None));
        };
        let mut out = vec![compaction];
        let retained = tail == RetainedTail::Honor
            && self.entry_fields(bytes, compaction, &["retainedTail"])?[0].is_some_and(|f| f.kind == Kind::Array);
        if !retained {
            let first_kept = key_from_value(self.member_value(bytes, compaction, "firstKeptEntryId")?.as_ref());
            let holder = if unique { self.entry_by_id(&first_kept) } else { None };
            let mut found = false;
            for &p in &path[..cidx] {
                if has_id(p, KeyRef::from(&first_kept), holder) {
                    found = true;
                }
                if found {
                    let is_system =
                        self.index.ty(p.0 as usize) == EntryType::Message && self.message_role(p)? == Role::System;
                    if !is_system {
                        out.push(p);
                    }
                }
            }
        }
        out.extend_from_slice(&path[cidx + 1..]);
        Ok((out, retained.then_some(compaction)))
    }

    /// Where the top-level members `keys` of an entry's line sit (relative to the line),
    /// without decoding them; the last one wins when a key repeats (as `JSON.parse`).
    /// A line that is no object has none.
    pub(crate) fn entry_fields(
        &self,
        bytes: &[u8],
        p: EntryPos,
        keys: &[&str],
    ) -> Result<SmallVec<[Option<Field>; 4]>> {
        let mut out: SmallVec<[Option<Field>; 4]> = smallvec::smallvec![None; keys.len()];
        if self.record(p).ty == EntryType::NonObject {
            return Ok(out);
        }
        let line = line_of(bytes, &self.record(p));
        let Some(start) = line.iter().position(|&c| c == b'{') else {
            return Err(self.changed());
        };
        for_each_member(line, start, |k, f| {
            if let Some(i) = keys.iter().position(|w| w.as_bytes() == k) {
                out[i] = Some(f);
            }
        })
        .map_err(|_| self.changed())?;
        Ok(out)
    }

    /// One top-level member of an entry, decoded (after pi's in-memory migration, which
    /// can rewrite `firstKeptEntryId`).
    fn member_value<'a>(&'a self, bytes: &'a [u8], p: EntryPos, key: &str) -> Result<Option<Value<'a>>> {
        if self.migration == crate::session::Migration::FromV1 {
            return Ok(take(&mut self.value_in(bytes, p)?, key));
        }
        let Some(f) = self.entry_fields(bytes, p, &[key])?[0] else {
            return Ok(None);
        };
        let line = line_of(bytes, &self.record(p));
        Ok(Some(value::parse(f.raw(line)).map_err(|_| self.changed())?))
    }

    /// The role of a stored value that is not a `message` entry's (a compaction's
    /// `systemMessage`, a retained tail message), read from its `role` member alone.
    fn role_of(&self, raw: &[u8]) -> Result<Role> {
        if raw.first() != Some(&b'{') {
            return Ok(Role::Missing);
        }
        let mut role = None;
        for_each_member(raw, 0, |k, f| {
            if k == b"role" {
                role = Some(f);
            }
        })
        .map_err(|_| self.changed())?;
        Ok(match role {
            None => Role::Missing,
            Some(f) => match &value::parse(f.raw(raw)).map_err(|_| self.changed())? {
                Value::String(s) => Role::from_name(s.as_bytes()),
                _ => Role::NotString,
            },
        })
    }

    /// pi's `buildSessionContext()` for a leaf (pi 1.6.0 semantics), as message handles:
    /// see [`Context`]. [`Session::context_values`] decodes them all.
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
        self.build_context(leaf, tail, Flavor::Pi, &mut Vec::new(), &mut Vec::new())
    }

    /// The context as pi 1.6.0 builds it, or as PiG's document says PiG does: the same
    /// walk, compaction (at `firstKeptEntryId`; there is no `retainedTail`) and
    /// projections, but no `context_edit` applied, and `bashExecution` messages marked
    /// `excludeFromContext` left out (pi leaves those out only when it sends the context
    /// to the model). [`Session::pig_differences`] says what differs.
    ///
    /// ```
    /// use pi_session::{Flavor, Session};
    /// let text = br#"{"type":"session","version":3,"id":"s"}
    /// {"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}
    /// {"type":"context_edit","id":"e","parentId":"a","targetId":"a","replacement":null}
    /// "#;
    /// let s = Session::from_bytes(text.to_vec()).unwrap();
    /// assert_eq!(s.context_as(s.leaf(), Flavor::Pi).unwrap().messages.len(), 0);
    /// assert_eq!(s.context_as(s.leaf(), Flavor::Pig).unwrap().messages.len(), 1);
    /// ```
    ///
    /// # Errors
    /// As [`Session::context`] (PiG never throws for a `context_edit`).
    pub fn context_as(&self, leaf: &Key, flavor: Flavor) -> Result<Context<'_>> {
        self.build_context(leaf, RetainedTail::Ignore, flavor, &mut Vec::new(), &mut Vec::new())
    }

    /// Where PiG's context for `leaf` differs from pi's ([`Session::context_as`]). When
    /// pi's build throws (a `context_edit` without `replacement`), the error is pi's.
    ///
    /// # Errors
    /// As [`Session::context`].
    pub fn pig_differences(&self, leaf: &Key) -> Result<PigDifferences> {
        let mut d = PigDifferences::default();
        self.build_context(leaf, RetainedTail::Ignore, Flavor::Pi, &mut d.edits, &mut Vec::new())?;
        self.build_context(
            leaf,
            RetainedTail::Ignore,
            Flavor::Pig,
            &mut Vec::new(),
            &mut d.left_out,
        )?;
        Ok(d)
    }

    /// The context under `flavor`'s rules; the edits applied (pi) and the bash messages
    /// left out (PiG) are pushed to `applied` and `left_out`.
    fn build_context(
        &self,
        leaf: &Key,
        tail: RetainedTail,
        flavor: Flavor,
        applied: &mut Vec<EntryPos>,
        left_out: &mut Vec<EntryPos>,
    ) -> Result<Context<'_>> {
        let bytes = self.check()?;
        let path = self.session_path(leaf)?;
        let (thinking_level, model) = self.context_settings(bytes, &path)?;
        let (entries, retained_from) = self.context_entries_of(bytes, path, tail)?;
        // The latest edit per target among the context entries, with what its
        // `replacement` is (PiG applies none).
        let mut edits: AHashMap<Key, (EntryPos, Replacement)> = AHashMap::new();
        for &p in entries.iter().filter(|_| flavor == Flavor::Pi) {
            if self.record(p).ty == EntryType::ContextEdit {
                let rep = match self.entry_fields(bytes, p, &["replacement"])?[0] {
                    None => Replacement::Missing,
                    Some(f) if f.kind == Kind::Null => Replacement::Null,
                    Some(_) => Replacement::Present,
                };
                let target = key_from_value(self.member_value(bytes, p, "targetId")?.as_ref());
                edits.insert(target, (p, rep));
            }
        }
        let mut messages = Vec::new();
        let mut behind = super::Behind::new(&self.source, &self.opts);
        for (i, &p) in entries.iter().enumerate() {
            let rec = self.record(p);
            behind.at(rec.offset.0);
            if rec.ty == EntryType::Compaction && i > 0 {
                continue;
            }
            let first = messages.len();
            self.entry_messages(bytes, p, &mut messages)?;
            if flavor == Flavor::Pig && rec.ty == EntryType::Message && rec.role == Role::BashExecution {
                let exclude = self.message_members(bytes, p, &["excludeFromContext"])?;
                if exclude.is_some_and(|(_, v)| v[0].as_ref().is_some_and(Value::truthy)) {
                    messages.truncate(first);
                    left_out.push(p);
                }
            }
            if !edits.is_empty()
                && let Some(&(edit, rep)) = edits.get(&rec.id.to_key())
            {
                if messages.len() > first && !applied.contains(&edit) {
                    let changes = rep == Replacement::Null
                        || messages[first..]
                            .iter()
                            .any(|m| matches!(m.role, Role::User | Role::Assistant | Role::ToolResult | Role::Custom));
                    if changes {
                        applied.push(edit);
                    }
                }
                if rep == Replacement::Null {
                    messages.truncate(first);
                }
                for m in &mut messages[first..] {
                    if matches!(m.role, Role::User | Role::Assistant | Role::ToolResult | Role::Custom) {
                        if rep == Replacement::Missing {
                            return Err(ErrorKind::PiThrows {
                                line: self.record(edit).line,
                                what: "context_edit without `replacement`".into(),
                                pi_message: "TypeError: Cannot read properties of undefined (reading 'content')".into(),
                            }
                            .into());
                        }
                        m.edit = Some(edit);
                    }
                }
            }
            if i == 0 && retained_from == Some(p) {
                // seed: the retained tail stands in for the kept range, after the summary.
                self.retained_messages(bytes, p, &mut messages)?;
            }
        }
        // Fields read leniently (a timestamp, a role) could have come from zeros of a
        // mapping the file was cut under: only an unchanged file makes this an answer.
        self.check()?;
        Ok(Context {
            messages,
            thinking_level,
            model,
        })
    }

    /// The thinking level and the model over the whole path: the last thinking level and
    /// the last model source win, and pi reads `message.role` of every message entry
    /// (throwing where there is no message), all of which the index answers without
    /// decoding.
    #[allow(clippy::type_complexity)]
    fn context_settings<'a>(
        &'a self,
        bytes: &'a [u8],
        path: &[EntryPos],
    ) -> Result<(Option<Value<'a>>, Option<Object<'a>>)> {
        let mut last_thinking = None;
        let mut last_model = None;
        for &p in path {
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
            Some(p) => self.member_value(bytes, p, "thinkingLevel")?,
        };
        let model = match last_model {
            None => None,
            Some(p) if self.record(p).ty == EntryType::ModelChange => Some(model_object(
                self.member_value(bytes, p, "provider")?,
                self.member_value(bytes, p, "modelId")?,
            )),
            Some(p) => {
                let mut f = self.message_fields(bytes, p, &["provider", "model"])?;
                let m = f.pop().flatten();
                let pr = f.pop().flatten();
                Some(model_object(pr, m))
            }
        };
        Ok((thinking_level, model))
    }

    /// pi's `sessionEntryToContextMessages(entry)`, as handles.
    fn entry_messages(&self, bytes: &[u8], p: EntryPos, out: &mut Vec<ContextMessage>) -> Result<()> {
        let rec = self.record(p);
        let line = Span {
            offset: rec.offset,
            len: rec.len,
        };
        let at = |f: Field| Span {
            offset: ByteOffset(rec.offset.0 + f.start as u64),
            len: (f.end - f.start) as u64,
        };
        let mut push = |projection, role, span| {
            out.push(ContextMessage {
                entry: p,
                projection,
                role,
                edit: None,
                span,
            })
        };
        match rec.ty {
            EntryType::Message => {
                let role = self.message_role(p)?;
                let l = line_of(bytes, &rec);
                let f = self
                    .message_field(l, p)
                    .ok_or_else(|| self.no_message_error(p, "undefined"))?;
                push(Projection::Message, role, at(f));
            }
            EntryType::CustomMessage => push(Projection::Custom, Role::Custom, line),
            EntryType::BranchSummary => {
                let summary = self.entry_fields(bytes, p, &["summary"])?[0];
                let l = line_of(bytes, &rec);
                if summary.is_some_and(|f| raw_truthy(f.raw(l))) {
                    push(Projection::BranchSummary, Role::BranchSummary, line);
                }
            }
            EntryType::Compaction => {
                let l = line_of(bytes, &rec);
                if let Some(f) = self.entry_fields(bytes, p, &["systemMessage"])?[0]
                    && raw_truthy(f.raw(l))
                {
                    push(Projection::CompactionSystem, self.role_of(f.raw(l))?, at(f));
                }
                push(Projection::CompactionSummary, Role::CompactionSummary, line);
            }
            _ => {}
        }
        Ok(())
    }

    /// The messages of a compaction's `retainedTail` array, as handles.
    fn retained_messages(&self, bytes: &[u8], p: EntryPos, out: &mut Vec<ContextMessage>) -> Result<()> {
        let rec = self.record(p);
        let line = line_of(bytes, &rec);
        let Some(f) = self.entry_fields(bytes, p, &["retainedTail"])?[0] else {
            return Ok(());
        };
        let mut elements = Vec::new();
        walk_elements::<ws::Json>(line, f.start, |s| {
            let (end, _) = skip_value::<ws::Json>(line, s)?;
            elements.push((s, end));
            Ok(end)
        })
        .map_err(|_| self.changed())?;
        for (n, (s, e)) in (0u32..).zip(elements) {
            out.push(ContextMessage {
                entry: p,
                projection: Projection::RetainedTail(n),
                role: self.role_of(&line[s..e])?,
                edit: None,
                span: Span {
                    offset: ByteOffset(rec.offset.0 + s as u64),
                    len: (e - s) as u64,
                },
            });
        }
        Ok(())
    }
}

/// What a `context_edit`'s `replacement` is, as far as building the context cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Replacement {
    /// No such member: pi throws when it applies to a model-visible role.
    Missing,
    /// `null`: the target's messages are dropped.
    Null,
    /// Anything else: its `content` replaces the target's.
    Present,
}

/// JavaScript truthiness of a JSON value from its bytes: a string is truthy when it is not
/// `""` (an escape always decodes to at least one unit), containers and `true` always;
/// numbers are parsed.
fn raw_truthy(raw: &[u8]) -> bool {
    match raw.first() {
        Some(b'"') => raw.len() > 2,
        Some(b't' | b'{' | b'[') => true,
        Some(b'f' | b'n') | None => false,
        Some(_) => value::parse(raw).is_ok_and(|v| v.truthy()),
    }
}

pub(crate) fn take<'a>(v: &mut Value<'a>, key: &str) -> Option<Value<'a>> {
    match v {
        Value::Object(o) => o.remove(key),
        _ => None,
    }
}

pub(crate) fn put<'a>(o: &mut Object<'a>, key: &'static str, v: Option<Value<'a>>) {
    if let Some(v) = v {
        o.set(JsStr::from_str(key), v);
    }
}

pub(crate) fn model_object<'a>(provider: Option<Value<'a>>, model_id: Option<Value<'a>>) -> Object<'a> {
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

pub(crate) fn set<'a>(o: &mut Object<'a>, k: &'static str, v: Value<'a>) {
    o.set(JsStr::from_str(k), v);
}

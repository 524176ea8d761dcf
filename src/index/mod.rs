//! The offset index: one pass over the bytes, one record per line pi keeps.
//!
//! Lines are split at `\n` (pi splits its decoded text there, and `\n` is never part of a
//! multi-byte sequence, so splitting bytes is the same), each line is classified by
//! [`line::scan_line`], and a kept line becomes an [`EntryRec`]: its byte span, line
//! number, entry type and the `id` / `parentId` keys. Skipped lines become [`Skipped`]
//! records with their position and reason. Big inputs are split into newline-aligned chunks
//! indexed in parallel with rayon; the result does not depend on the split.

pub(crate) mod idmap;
pub(crate) mod line;
mod pos;
#[cfg(test)]
mod props;

pub use pos::{ByteOffset, EntryPos, LineNo, Position};

use crate::js::string::JsStr;
use crate::json::string::decode_string;
use crate::json::{Field, Kind};
use line::{Fields, Line, scan_line, scan_object_line};
use rayon::prelude::*;
use smallvec::SmallVec;
use std::fmt;

/// An entry `id` or `parentId` as a JavaScript `Map` key / `===` operand.
///
/// pi keys its `byId` map by whatever JSON value `id` holds, so a faithful index must too:
/// a missing id is `undefined`, objects and arrays are unique (never equal to anything
/// but themselves), numbers compare by value with `-0 == 0`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Key {
    /// The key is missing (`undefined`).
    Undefined,
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number, by its bits (with `-0` folded into `0`).
    Num(u64),
    /// A string (WTF-8 bytes).
    Str(SmallVec<[u8; 8]>),
    /// An object or array, unique per occurrence.
    Unique(u64),
}

impl Key {
    /// A string key.
    pub fn str(s: &str) -> Key {
        Key::Str(SmallVec::from_slice(s.as_bytes()))
    }
    /// JavaScript truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Key::Undefined | Key::Null | Key::Bool(false) => false,
            Key::Num(bits) => {
                let n = f64::from_bits(*bits);
                n != 0.0 && !n.is_nan()
            }
            Key::Str(s) => !s.is_empty(),
            Key::Bool(true) | Key::Unique(_) => true,
        }
    }
    /// The string, if this key is one without lone surrogates.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Key::Str(s) => std::str::from_utf8(s).ok(),
            _ => None,
        }
    }
    /// True for `undefined`.
    pub fn is_undefined(&self) -> bool {
        matches!(self, Key::Undefined)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Undefined => f.write_str("undefined"),
            Key::Null => f.write_str("null"),
            Key::Bool(b) => write!(f, "{b}"),
            Key::Num(bits) => write!(f, "{}", f64::from_bits(*bits)),
            Key::Str(s) => write!(f, "{:?}", String::from_utf8_lossy(s)),
            Key::Unique(n) => write!(f, "<object #{n}>"),
        }
    }
}

/// The entry types pi knows; everything else is [`EntryType::Other`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryType {
    /// `session` (the header, or a later header-like line pi ignores)
    Session,
    /// `message`
    Message,
    /// `model_change`
    ModelChange,
    /// `thinking_level_change`
    ThinkingLevelChange,
    /// `compaction`
    Compaction,
    /// `branch_summary`
    BranchSummary,
    /// `custom`
    Custom,
    /// `custom_message`
    CustomMessage,
    /// `label`
    Label,
    /// `session_info`
    SessionInfo,
    /// `context_edit`
    ContextEdit,
    /// `usage`
    Usage,
    /// An object with another (or no, or a non-string) `type`.
    Other,
    /// A kept line that is not an object (`42`, `true`, `"x"`, `[1]`).
    NonObject,
}

impl EntryType {
    fn from_type_str(s: &[u8]) -> EntryType {
        match s {
            b"session" => EntryType::Session,
            b"message" => EntryType::Message,
            b"model_change" => EntryType::ModelChange,
            b"thinking_level_change" => EntryType::ThinkingLevelChange,
            b"compaction" => EntryType::Compaction,
            b"branch_summary" => EntryType::BranchSummary,
            b"custom" => EntryType::Custom,
            b"custom_message" => EntryType::CustomMessage,
            b"label" => EntryType::Label,
            b"session_info" => EntryType::SessionInfo,
            b"context_edit" => EntryType::ContextEdit,
            b"usage" => EntryType::Usage,
            _ => EntryType::Other,
        }
    }
    /// The `type` string, for the known types.
    pub fn as_str(self) -> Option<&'static str> {
        Some(match self {
            EntryType::Session => "session",
            EntryType::Message => "message",
            EntryType::ModelChange => "model_change",
            EntryType::ThinkingLevelChange => "thinking_level_change",
            EntryType::Compaction => "compaction",
            EntryType::BranchSummary => "branch_summary",
            EntryType::Custom => "custom",
            EntryType::CustomMessage => "custom_message",
            EntryType::Label => "label",
            EntryType::SessionInfo => "session_info",
            EntryType::ContextEdit => "context_edit",
            EntryType::Usage => "usage",
            EntryType::Other | EntryType::NonObject => return None,
        })
    }
}

/// A message's `role`, classified while indexing (so walks need not decode messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// No `role` member, or the message is not an object.
    Missing,
    /// `role` is not a string.
    NotString,
    /// `user`
    User,
    /// `assistant`
    Assistant,
    /// `toolResult`
    ToolResult,
    /// `system`
    System,
    /// `custom`
    Custom,
    /// `bashExecution`
    BashExecution,
    /// `branchSummary`
    BranchSummary,
    /// `compactionSummary`
    CompactionSummary,
    /// `hookMessage` (format v2; migrated to `custom`)
    HookMessage,
    /// Any other string.
    Other,
}

impl Role {
    fn classify(line: &[u8], f: Option<Field>) -> Result<Role, Changed> {
        let Some(f) = f else { return Ok(Role::Missing) };
        if !matches!(f.kind, Kind::String { .. }) {
            return Ok(Role::NotString);
        }
        Ok(match string_bytes(line, &f)?.as_bytes() {
            b"user" => Role::User,
            b"assistant" => Role::Assistant,
            b"toolResult" => Role::ToolResult,
            b"system" => Role::System,
            b"custom" => Role::Custom,
            b"bashExecution" => Role::BashExecution,
            b"branchSummary" => Role::BranchSummary,
            b"compactionSummary" => Role::CompactionSummary,
            b"hookMessage" => Role::HookMessage,
            _ => Role::Other,
        })
    }
}

/// A span relative to the start of its line; `NONE` when absent or too large to store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RelSpan {
    start: u32,
    len: u32,
}

impl RelSpan {
    pub(crate) const NONE: RelSpan = RelSpan {
        start: u32::MAX,
        len: u32::MAX,
    };
    fn of(f: Option<Field>) -> RelSpan {
        match f {
            Some(f) if f.start < u32::MAX as usize && f.end - f.start < u32::MAX as usize => RelSpan {
                start: f.start as u32,
                len: (f.end - f.start) as u32,
            },
            _ => RelSpan::NONE,
        }
    }
    pub(crate) fn get(self) -> Option<(usize, usize)> {
        (self != RelSpan::NONE).then(|| (self.start as usize, self.start as usize + self.len as usize))
    }
}

/// One kept line.
#[derive(Clone, Debug)]
pub struct EntryRec {
    /// Where the line starts.
    pub offset: ByteOffset,
    /// Its length, without the `\n`.
    pub len: u64,
    /// Its line number.
    pub line: LineNo,
    /// Its `type`.
    pub ty: EntryType,
    /// Its `id`.
    pub id: Key,
    /// Its `parentId`.
    pub parent: Key,
    pub(crate) timestamp: RelSpan,
    pub(crate) message: RelSpan,
    /// The JSON kind of `message` (`None`: no `message` member).
    pub message_kind: Option<Kind>,
    /// The message's role (for `message` entries).
    pub role: Role,
    /// Whether `id` is a string (pi's header test: `typeof id === "string"`).
    pub id_is_string: bool,
}

impl EntryRec {
    /// The record of a line that is JSON but not an object: no type, id or parent.
    fn non_object(offset: u64, len: u64, line_no: u64) -> EntryRec {
        EntryRec {
            offset: ByteOffset(offset),
            len,
            line: LineNo(line_no),
            ty: EntryType::NonObject,
            id: Key::Undefined,
            parent: Key::Undefined,
            timestamp: RelSpan::NONE,
            message: RelSpan::NONE,
            message_kind: None,
            role: Role::Missing,
            id_is_string: false,
        }
    }

    /// A record holding `id` (tests of id lookups).
    #[cfg(test)]
    pub(crate) fn test_with_id(id: Key) -> EntryRec {
        EntryRec {
            id,
            ty: EntryType::Other,
            ..EntryRec::non_object(0, 0, 0)
        }
    }
}

/// Why a line was skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// Empty or white space only.
    Blank,
    /// Not JSON: the reason and the byte offset within the line where parsing stopped.
    Malformed {
        /// Offset within the line.
        at: u64,
        /// What was wrong.
        reason: &'static str,
    },
    /// Valid JSON, but `null`, `false`, `0` or `""`, which pi drops.
    Falsy,
    /// Its bytes changed while they were indexed (another process rewrote a mapped file):
    /// what was checked no longer decodes. Open the file again for what it holds now.
    Changed,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Blank => f.write_str("blank line"),
            SkipReason::Malformed { at, reason } => {
                write!(f, "invalid JSON: {reason} (at byte {at} of the line)")
            }
            SkipReason::Falsy => f.write_str("JSON value that is null, false, 0 or \"\""),
            SkipReason::Changed => f.write_str("the line changed while it was read (another process rewrote the file)"),
        }
    }
}

/// A line pi skips.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Its line number.
    pub line: LineNo,
    /// Where it starts.
    pub offset: ByteOffset,
    /// Its length without `\n`.
    pub len: u64,
    /// Why.
    pub reason: SkipReason,
}

impl Skipped {
    /// Where the skipped line is (it is no entry, so `entry` is `None`).
    pub fn position(&self) -> Position {
        Position {
            byte: Some(self.offset),
            line: Some(self.line),
            entry: None,
        }
    }
}

/// The index of a whole file.
#[derive(Clone, Debug, Default)]
pub struct Index {
    /// Every kept line, in file order (pi's `fileEntries` before filtering headers).
    pub entries: Vec<EntryRec>,
    /// Every skipped line, in file order.
    pub skipped: Vec<Skipped>,
    /// Number of lines (a final line without `\n` counts).
    pub lines: u64,
    /// Bytes follow the last `\n` (pi appends a `\n` on open when this is a session).
    pub unterminated_tail: bool,
}

/// A field the scanner found valid no longer decodes: the bytes changed in between (a
/// mapped file rewritten by another process). The line is then recorded as skipped with
/// [`CHANGED`], never a panic inside a rayon worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Changed;

/// Why a line whose bytes changed while it was indexed is skipped.
const CHANGED: SkipReason = SkipReason::Changed;

/// Kinds of string data a key or type may carry, decoded.
fn string_bytes<'a>(line: &'a [u8], f: &Field) -> Result<JsStr<'a>, Changed> {
    match f.kind {
        Kind::String { escaped: false } => {
            let raw = line.get(f.start + 1..f.end.wrapping_sub(1)).ok_or(Changed)?;
            // Types, ids and roles are ASCII: a word-wise look instead of a UTF-8 check.
            Ok(if raw.is_ascii() || std::str::from_utf8(raw).is_ok() {
                JsStr(std::borrow::Cow::Borrowed(raw))
            } else {
                JsStr(std::borrow::Cow::Owned(
                    String::from_utf8_lossy(raw).into_owned().into_bytes(),
                ))
            })
        }
        _ => {
            if line.get(f.start) != Some(&b'"') {
                return Err(Changed);
            }
            match decode_string(line, f.start) {
                Ok((s, end)) if end == f.end => Ok(s),
                _ => Err(Changed),
            }
        }
    }
}

pub(crate) fn key_of(line: &[u8], f: Option<Field>, unique: u64) -> Result<Key, Changed> {
    let Some(f) = f else { return Ok(Key::Undefined) };
    Ok(match f.kind {
        Kind::Null => Key::Null,
        Kind::True => Key::Bool(true),
        Kind::False => Key::Bool(false),
        Kind::Number => {
            let raw = line.get(f.start..f.end).ok_or(Changed)?;
            let text = std::str::from_utf8(raw).map_err(|_| Changed)?;
            let n: f64 = text.parse().map_err(|_| Changed)?;
            Key::Num(if n == 0.0 { 0f64.to_bits() } else { n.to_bits() })
        }
        Kind::String { .. } => Key::Str(SmallVec::from_slice(string_bytes(line, &f)?.as_bytes())),
        Kind::Object | Kind::Array => Key::Unique(unique),
    })
}

fn entry_type(line: &[u8], f: Option<Field>) -> Result<EntryType, Changed> {
    Ok(match f {
        Some(f) if matches!(f.kind, Kind::String { .. }) => {
            EntryType::from_type_str(string_bytes(line, &f)?.as_bytes())
        }
        _ => EntryType::Other,
    })
}

enum Out {
    Entry(EntryRec),
    Skip(Skipped),
}

/// Index one line at `offset` with (chunk-relative) line number `line`.
fn index_line(bytes: &[u8], offset: u64, line_no: u64) -> Out {
    let line = bytes;
    let len = line.len() as u64;
    let skip = |reason| {
        Out::Skip(Skipped {
            line: LineNo(line_no),
            offset: ByteOffset(offset),
            len,
            reason,
        })
    };
    match scan_line(line) {
        Line::Blank => skip(SkipReason::Blank),
        Line::Falsy => skip(SkipReason::Falsy),
        Line::Malformed(e) => skip(SkipReason::Malformed {
            at: e.offset as u64,
            reason: e.reason,
        }),
        Line::NonObject => Out::Entry(EntryRec::non_object(offset, len, line_no)),
        Line::Object(f) => match object_entry(line, f, offset, line_no) {
            Ok(e) => Out::Entry(e),
            Err(Changed) => skip(CHANGED),
        },
    }
}

/// The record of an object line at `offset` whose fields are `f`.
#[inline(always)]
fn object_entry(line: &[u8], f: Fields, offset: u64, line_no: u64) -> Result<EntryRec, Changed> {
    Ok(EntryRec {
        offset: ByteOffset(offset),
        len: line.len() as u64,
        line: LineNo(line_no),
        ty: entry_type(line, f.ty)?,
        id: key_of(line, f.id, offset * 2)?,
        parent: key_of(line, f.parent_id, offset * 2 + 1)?,
        timestamp: RelSpan::of(f.timestamp),
        message: RelSpan::of(f.message),
        message_kind: f.message.map(|m| m.kind),
        role: Role::classify(line, f.role)?,
        id_is_string: matches!(
            f.id,
            Some(Field {
                kind: Kind::String { .. },
                ..
            })
        ),
    })
}

/// Index a chunk of whole lines starting at file offset `base`; line numbers are relative
/// to the chunk (first line = 1).
fn index_chunk(bytes: &[u8], base: u64, limit: usize) -> (Vec<EntryRec>, Vec<Skipped>, u64) {
    // The scanner is compiled a second time for AVX2 and BMI, used when the CPU has them.
    crate::json::with_avx2_bmi(|| index_chunk_impl(bytes, base, limit))
}

/// Index the lines of `bytes` (which starts a line, at file offset `base`) that start
/// before `limit` (at most `bytes.len()`).
#[inline(always)]
fn index_chunk_impl(bytes: &[u8], base: u64, limit: usize) -> (Vec<EntryRec>, Vec<Skipped>, u64) {
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    let mut pos = 0usize;
    let mut line_no = 0u64;
    debug_assert!(limit <= bytes.len());
    while pos < limit {
        line_no += 1;
        // Nearly every line is a valid object: scanning it finds its end too.
        if let Some((f, len)) = scan_object_line(&bytes[pos..]) {
            match object_entry(&bytes[pos..pos + len], f, base + pos as u64, line_no) {
                Ok(e) => entries.push(e),
                Err(Changed) => skipped.push(Skipped {
                    line: LineNo(line_no),
                    offset: ByteOffset(base + pos as u64),
                    len: len as u64,
                    reason: CHANGED,
                }),
            }
            pos += len + 1;
            continue;
        }
        let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |o| pos + o);
        match index_line(&bytes[pos..end], base + pos as u64, line_no) {
            Out::Entry(e) => entries.push(e),
            Out::Skip(s) => skipped.push(s),
        }
        pos = end + 1;
    }
    // Chunks are small: trimming them keeps the peak at about twice the final index.
    entries.shrink_to_fit();
    skipped.shrink_to_fit();
    (entries, skipped, line_no)
}

impl Index {
    /// Index `bytes[from..]` (which starts at a line boundary) and append the records;
    /// line numbers continue from the lines already counted. Returns how many entries
    /// were added.
    pub(crate) fn extend(&mut self, bytes: &[u8], from: usize) -> usize {
        let part = build(&bytes[from..]);
        let before = self.entries.len();
        let base = self.lines;
        for mut e in part.entries {
            e.offset.0 += from as u64;
            e.line.0 += base;
            // Object ids are unique per byte offset: keep them unique file-wide.
            if let Key::Unique(u) = &mut e.id {
                *u += 2 * from as u64;
            }
            if let Key::Unique(u) = &mut e.parent {
                *u += 2 * from as u64;
            }
            self.entries.push(e);
        }
        for mut k in part.skipped {
            k.offset.0 += from as u64;
            k.line.0 += base;
            self.skipped.push(k);
        }
        self.lines += part.lines;
        self.unterminated_tail = part.unterminated_tail;
        self.entries.len() - before
    }

    /// Forget the last line if it has no `\n` yet (it is re-read when the rest of it
    /// arrives). Returns its start offset and whether it was an entry.
    pub(crate) fn drop_unterminated_tail(&mut self) -> Option<(u64, bool)> {
        if !self.unterminated_tail {
            return None;
        }
        self.unterminated_tail = false;
        let last_line = LineNo(self.lines);
        self.lines -= 1;
        if self.entries.last().is_some_and(|e| e.line == last_line) {
            let e = self.entries.pop().expect("checked");
            return Some((e.offset.0, true));
        }
        if self.skipped.last().is_some_and(|k| k.line == last_line) {
            let k = self.skipped.pop().expect("checked");
            return Some((k.offset.0, false));
        }
        None
    }
}

/// Chunks of about this many bytes are indexed in parallel.
const CHUNK: usize = 4 << 20;

/// Build the index of `bytes`.
pub fn build(bytes: &[u8]) -> Index {
    build_with(bytes, CHUNK)
}

/// Build the index with a given chunk size (tests use tiny chunks to exercise the split).
pub fn build_with(bytes: &[u8], chunk: usize) -> Index {
    let chunk = chunk.max(1);
    // Chunk k indexes the lines that start in `k * chunk .. (k + 1) * chunk`; each worker
    // finds its own first line start (the last line it indexes may run past its range),
    // so no thread walks the file alone to cut it first.
    let n = bytes.len();
    let parts: Vec<(Vec<EntryRec>, Vec<Skipped>, u64)> = (0..n.div_ceil(chunk))
        .into_par_iter()
        .map(|k| {
            let lo = k * chunk;
            let hi = (lo + chunk).min(n);
            let start = if lo == 0 {
                Some(0)
            } else {
                memchr::memchr(b'\n', &bytes[lo - 1..hi]).map(|o| lo + o)
            };
            match start {
                Some(start) if start < hi => index_chunk(&bytes[start..], start as u64, hi - start),
                // A line that started before `lo` covers the whole range.
                _ => (Vec::new(), Vec::new(), 0),
            }
        })
        .collect();
    let mut entries = Vec::with_capacity(parts.iter().map(|p| p.0.len()).sum());
    crate::source::prefer_huge_pages(entries.spare_capacity_mut());
    let mut index = Index {
        entries,
        skipped: Vec::new(),
        lines: 0,
        unterminated_tail: bytes.last().is_some_and(|&b| b != b'\n'),
    };
    for (mut entries, mut skipped, lines) in parts {
        let base = index.lines;
        for e in &mut entries {
            e.line.0 += base;
        }
        for s in &mut skipped {
            s.line.0 += base;
        }
        index.entries.append(&mut entries);
        index.skipped.append(&mut skipped);
        index.lines += lines;
    }
    // `a\n` has one line; `a\nb` two; a trailing `\n` does not start a line.
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_positions() {
        let text = b"{\"type\":\"session\",\"id\":\"s\"}\n\nnot json\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n42\nnull";
        let idx = build(text);
        assert_eq!(idx.lines, 6);
        assert_eq!(idx.entries.len(), 3);
        assert_eq!(idx.entries[0].ty, EntryType::Session);
        assert_eq!(idx.entries[1].id, Key::str("a"));
        assert_eq!(idx.entries[1].parent, Key::Null);
        assert_eq!(idx.entries[1].line, LineNo(4));
        assert_eq!(idx.entries[2].ty, EntryType::NonObject);
        assert_eq!(idx.skipped.len(), 3);
        assert_eq!(
            idx.skipped[1].reason,
            SkipReason::Malformed {
                at: 0,
                reason: "invalid literal"
            }
        );
        assert_eq!(idx.skipped[2].reason, SkipReason::Falsy);
        assert!(idx.unterminated_tail);
    }

    /// The obvious indexer: split at every `\n`, classify each line on its own.
    fn line_by_line(bytes: &[u8]) -> (Vec<EntryRec>, Vec<Skipped>, u64) {
        let mut entries = Vec::new();
        let mut skipped = Vec::new();
        let mut pos = 0;
        let mut line_no = 0;
        while pos < bytes.len() {
            let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |o| pos + o);
            line_no += 1;
            match index_line(&bytes[pos..end], pos as u64, line_no) {
                Out::Entry(e) => entries.push(e),
                Out::Skip(k) => skipped.push(k),
            }
            pos = end + 1;
        }
        (entries, skipped, line_no)
    }

    fn same_as_line_by_line(text: &[u8]) {
        let (entries, skipped, lines) = index_chunk(text, 0, text.len());
        let (e2, s2, l2) = line_by_line(text);
        let show = String::from_utf8_lossy(text);
        assert_eq!(lines, l2, "{show:?}");
        assert_eq!(skipped, s2, "{show:?}");
        assert_eq!(format!("{entries:?}"), format!("{e2:?}"), "{show:?}");
        // Cut into chunks of every size up to a few lines: the same index.
        for chunk in [1, 2, 3, 5, 8, 13, 40, 100] {
            let idx = build_with(text, chunk);
            assert_eq!(idx.lines, l2, "chunk {chunk}: {show:?}");
            assert_eq!(idx.skipped, s2, "chunk {chunk}: {show:?}");
            assert_eq!(
                format!("{:?}", idx.entries),
                format!("{e2:?}"),
                "chunk {chunk}: {show:?}"
            );
        }
    }

    #[test]
    fn finding_line_ends_while_scanning_changes_nothing() {
        // Lines where the fused scan must stop at `\n`, hand over, or agree exactly.
        let pieces: [&[u8]; 24] = [
            b"{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}",
            b"{\"id\":\"b\"}\r",
            b"  {\"id\":\"c\"} \t\r ",
            b"{\"id\":",
            b"1}",
            b"{\"id\":\"x",
            b"y\"}",
            b"{\"a\":[1,",
            b"2]}",
            b"{\"a\":{\"b\":",
            b"{}}}",
            b"{}",
            b"{} x",
            b"{}}",
            b"",
            b"   ",
            b"\r",
            b"null",
            b"[1]",
            b"{\"message\":{\"role\":\"user\",\"content\":\"hi\\n\"}}",
            b"{\"id\":\"\\u0041\",\"\\u0069d\":7}",
            b"\xc2\xa0{\"id\":\"nbsp\"}",
            b"{\"id\":\"t\",\"s\":\"\t\"}",
            b"{\"id\":1e400,\"parentId\":-0}",
        ];
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..3000 {
            let mut text = Vec::new();
            for _ in 0..(seed % 7) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.extend_from_slice(pieces[(seed % pieces.len() as u64) as usize]);
                if seed >> 40 & 3 != 0 {
                    text.push(b'\n');
                }
            }
            seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
            same_as_line_by_line(&text);
        }
        for p in pieces {
            same_as_line_by_line(p);
            let mut t = p.to_vec();
            t.push(b'\n');
            same_as_line_by_line(&t);
        }
    }

    #[test]
    fn chunking_does_not_change_the_result() {
        let mut text = Vec::new();
        for i in 0..500 {
            text.extend_from_slice(
                format!("{{\"type\":\"message\",\"id\":\"{i:08x}\",\"parentId\":null}}\n").as_bytes(),
            );
            if i % 7 == 0 {
                text.extend_from_slice(b"garbage\n\n");
            }
        }
        let a = build_with(&text, 1 << 30);
        for chunk in [1, 10, 100, 4096] {
            let b = build_with(&text, chunk);
            assert_eq!(a.lines, b.lines);
            assert_eq!(a.skipped, b.skipped);
            assert_eq!(a.entries.len(), b.entries.len());
            for (x, y) in a.entries.iter().zip(&b.entries) {
                assert_eq!((x.offset, x.line, &x.id), (y.offset, y.line, &y.id));
            }
        }
    }

    #[test]
    fn fields_that_no_longer_decode_are_changed_not_a_panic() {
        let f = |start, end, kind| Some(Field { start, end, kind });
        let esc = Kind::String { escaped: true };
        // Was a string with an escape; now the quote is gone, the escape is bad, the end
        // moved, or the line is shorter than the field.
        assert_eq!(key_of(b"x\\u0061\"", f(0, 8, esc), 0), Err(Changed));
        assert_eq!(key_of(b"\"\\q\"", f(0, 4, esc), 0), Err(Changed));
        assert_eq!(key_of(b"\"\\n\"x\"", f(0, 6, esc), 0), Err(Changed));
        assert_eq!(
            key_of(b"\"a", f(0, 9, Kind::String { escaped: false }), 0),
            Err(Changed)
        );
        assert_eq!(key_of(b"1\xff", f(0, 2, Kind::Number), 0), Err(Changed));
        assert_eq!(key_of(b"1-", f(0, 2, Kind::Number), 0), Err(Changed));
        assert_eq!(entry_type(b"\"\\", f(0, 3, esc)), Err(Changed));
        assert_eq!(Role::classify(b"", f(0, 6, esc)), Err(Changed));
        assert_eq!(key_of(b"\"\\u0061\"", f(0, 8, esc), 0), Ok(Key::str("a")));
    }

    #[test]
    fn a_line_whose_fields_changed_is_skipped_as_changed() {
        // Scanned fields of one line applied to other bytes of the same length, as when a
        // mapped file is rewritten between the scan and the decode.
        let walked = b"{\"type\":\"message\",\"id\":\"\\u0061\",\"parentId\":null}";
        let Line::Object(fields) = scan_line(walked) else {
            panic!("an object line")
        };
        assert_eq!(object_entry(walked, fields, 0, 1).map(|e| e.id), Ok(Key::str("a")));
        // The opening quote gone, `\q` for `\u`, a `\u` escape cut short.
        for (at, to) in [(23, b'x'), (25, b'q'), (29, b'"')] {
            let mut read = walked.to_vec();
            read[at] = to;
            assert_eq!(object_entry(&read, fields, 0, 1).map(|e| e.id), Err(Changed), "{at}");
        }
    }
}

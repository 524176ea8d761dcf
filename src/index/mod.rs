//! The offset index: one pass over the bytes, one record per line pi keeps.
//!
//! Lines are split at `\n` (pi splits its decoded text there, and `\n` is never part of a
//! multi-byte sequence, so splitting bytes is the same), each line is classified by
//! [`line::scan_line`], and a kept line becomes an [`EntryRec`]: its byte span, line
//! number, entry type and the `id` / `parentId` keys. Skipped lines become [`Skipped`]
//! records with their position and reason. Big inputs are split into newline-aligned chunks
//! indexed in parallel with rayon; the result does not depend on the split.
//!
//! Memory: a kept line costs a 12-byte record (offset, the places of `id` and `parentId`
//! in the line, where `message` starts, type, role, flags; no heap allocation of its
//! own). A plain string key (no escapes, ASCII, in the line's first 255 bytes: every id
//! pi writes) is read from the file's bytes when asked for; other keys, and what else
//! does not fit (a line not followed directly by the next record's, a `message` that is
//! not the line's last member), go into side tables. A 1 GiB session of 100-600 byte
//! lines (2.5 million entries) indexes in 30 MB of records. Line numbers are not stored:
//! the kept lines before an entry and the skipped lines before it give it. The index also
//! answers whether pi can read the file at all ([`v8`]).

pub(crate) mod idmap;
pub(crate) mod line;
mod pos;
#[cfg(test)]
mod props;
pub mod v8;

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
#[derive(Clone, PartialEq, Eq)]
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
        KeyRef::from(self).truthy()
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

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        KeyRef::from(self).hash(h);
    }
}

/// A key as the index hands it out: the bytes of a plain string id in the file (no
/// escapes, ASCII: the bytes are the string), or a [`Key`] the index holds.
///
/// Equal keys are equal and hash alike whichever way they are held.
#[derive(Clone, Copy)]
pub struct KeyRef<'a>(KeyRepr<'a>);

#[derive(Clone, Copy)]
enum KeyRepr<'a> {
    Str(&'a [u8]),
    Key(&'a Key),
}

impl<'a> From<&'a Key> for KeyRef<'a> {
    fn from(k: &'a Key) -> KeyRef<'a> {
        KeyRef(KeyRepr::Key(k))
    }
}

impl<'a> KeyRef<'a> {
    /// `undefined`
    pub const UNDEFINED: KeyRef<'static> = KeyRef(KeyRepr::Key(&UNDEFINED));
    /// `null`
    pub const NULL: KeyRef<'static> = KeyRef(KeyRepr::Key(&NULL));

    /// The string's bytes (WTF-8), when the key is a string.
    pub fn str_bytes(self) -> Option<&'a [u8]> {
        match self.0 {
            KeyRepr::Str(b) => Some(b),
            KeyRepr::Key(Key::Str(s)) => Some(s),
            KeyRepr::Key(_) => None,
        }
    }
    /// The string, if this key is one without lone surrogates.
    pub fn as_str(self) -> Option<&'a str> {
        self.str_bytes().and_then(|b| std::str::from_utf8(b).ok())
    }
    /// The key itself, when it is not a string (`None` for strings: see [`KeyRef::str_bytes`]).
    pub fn non_string(self) -> Option<&'a Key> {
        match self.0 {
            KeyRepr::Key(k) if !matches!(k, Key::Str(_)) => Some(k),
            _ => None,
        }
    }
    /// An owned copy.
    pub fn to_key(self) -> Key {
        match self.0 {
            KeyRepr::Str(b) => Key::Str(SmallVec::from_slice(b)),
            KeyRepr::Key(k) => k.clone(),
        }
    }
    /// JavaScript truthiness.
    pub fn truthy(self) -> bool {
        match self.0 {
            KeyRepr::Str(b) => !b.is_empty(),
            KeyRepr::Key(k) => match k {
                Key::Undefined | Key::Null | Key::Bool(false) => false,
                Key::Num(bits) => {
                    let n = f64::from_bits(*bits);
                    n != 0.0 && !n.is_nan()
                }
                Key::Str(s) => !s.is_empty(),
                Key::Bool(true) | Key::Unique(_) => true,
            },
        }
    }
    /// True for `undefined`.
    pub fn is_undefined(self) -> bool {
        matches!(self.0, KeyRepr::Key(Key::Undefined))
    }
    /// True for `null`.
    pub fn is_null(self) -> bool {
        matches!(self.0, KeyRepr::Key(Key::Null))
    }
}

impl PartialEq for KeyRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self.str_bytes(), other.str_bytes()) {
            (Some(a), Some(b)) => a == b,
            (None, None) => self.non_string() == other.non_string(),
            _ => false,
        }
    }
}
impl Eq for KeyRef<'_> {}

impl PartialEq<Key> for KeyRef<'_> {
    fn eq(&self, other: &Key) -> bool {
        *self == KeyRef::from(other)
    }
}

impl PartialEq<KeyRef<'_>> for Key {
    fn eq(&self, other: &KeyRef<'_>) -> bool {
        KeyRef::from(self) == *other
    }
}

impl std::hash::Hash for KeyRef<'_> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let key = match self.0 {
            KeyRepr::Str(b) => return hash_str(b, h),
            KeyRepr::Key(k) => k,
        };
        match key {
            Key::Str(b) => hash_str(b, h),
            Key::Undefined => h.write_u8(0),
            Key::Null => h.write_u8(1),
            Key::Bool(b) => h.write_u8(2 + u8::from(*b)),
            Key::Num(bits) => {
                h.write_u8(5);
                h.write_u64(*bits);
            }
            Key::Unique(n) => {
                h.write_u8(6);
                h.write_u64(*n);
            }
        }
    }
}

/// A string key's hash, however it is held.
fn hash_str<H: std::hash::Hasher>(b: &[u8], h: &mut H) {
    h.write_u8(4);
    h.write(b);
    h.write_u8(0xFF);
}

impl fmt::Debug for KeyRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            KeyRepr::Str(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
            KeyRepr::Key(k) => k.fmt(f),
        }
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
    pub(crate) fn from_type_str(s: &[u8]) -> EntryType {
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
        Ok(Role::from_name(string_bytes(line, &f)?.as_bytes()))
    }

    /// The role a `role` string names.
    pub(crate) fn from_name(s: &[u8]) -> Role {
        match s {
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
        }
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

/// One kept line, as the index hands it out: a view of the compact record (see
/// [`Index`]), with its keys borrowed from the file's bytes or the index.
#[derive(Clone, Copy, Debug)]
pub struct EntryRec<'a> {
    /// Where the line starts.
    pub offset: ByteOffset,
    /// Its length, without the `\n`.
    pub len: u64,
    /// Its line number.
    pub line: LineNo,
    /// Its `type`.
    pub ty: EntryType,
    /// Its `id`.
    pub id: KeyRef<'a>,
    /// Its `parentId`.
    pub parent: KeyRef<'a>,
    pub(crate) message: RelSpan,
    /// The JSON kind of `message` (`None`: no `message` member).
    pub message_kind: Option<Kind>,
    /// The message's role (for `message` entries).
    pub role: Role,
    /// Whether `id` is a string (pi's header test: `typeof id === "string"`).
    pub id_is_string: bool,
}

/// The stored record of a kept line: 12 bytes, no heap. What does not fit (a key that is
/// not a plain string near the start of its line, a line not followed directly by the next
/// record's, a `message` that is not its line's last member) is in its run's side tables;
/// the line number is not stored (it is the entry's position plus the skipped lines before
/// it), nor is `timestamp` (only sorting siblings reads it: found again by a scan).
#[derive(Clone, Copy, Debug)]
struct Rec {
    /// Where the line starts, from its run's `base`.
    off: u32,
    /// The `id` ([`KeySlot`]).
    id: u16,
    /// The `parentId` ([`KeySlot`]).
    parent: u16,
    /// Where `message` starts, when [`MSG_LAST`] is set.
    msg_start: u16,
    /// The type (bits 0-3) and the role (4-7) by their codes, the message's kind
    /// ([`kind_code`], 8-11), [`ID_IS_STRING`], [`LEN_NEXT`], [`MSG_LAST`],
    /// [`PARENT_IS_PREV`].
    flags: u16,
}

const _: () = assert!(std::mem::size_of::<Rec>() == 12);

/// A key in a record: a plain string as `start << 8 | len` within the line (`start` is
/// at least 1: the line's `{` comes first), or with `start` 0 one of [`KEY_UNDEFINED`],
/// [`KEY_NULL`] and [`KEY_SIDE`] (in the run's side table).
type KeySlot = u16;
const KEY_UNDEFINED: KeySlot = 0;
const KEY_NULL: KeySlot = 1;
const KEY_SIDE: KeySlot = 2;
const ID_IS_STRING: u16 = 1 << 12;
/// The line ends right before the next record's line (a `\n` between): its length is
/// not stored.
const LEN_NEXT: u16 = 1 << 13;
/// `message` runs from `msg_start` to the line's last byte (the object's `}`), as in
/// every line pi writes; else its span is in the run's `msgs` (when there is one).
const MSG_LAST: u16 = 1 << 14;
const KIND_SHIFT: u32 = 8;
/// `parentId` is a non-empty plain string equal to the previous record's `id` (found
/// while both lines are in cache; the parent links read no key for such entries).
const PARENT_IS_PREV: u16 = 1 << 15;

static UNDEFINED: Key = Key::Undefined;
static NULL: Key = Key::Null;

const TYPES: [EntryType; 14] = [
    EntryType::Session,
    EntryType::Message,
    EntryType::ModelChange,
    EntryType::ThinkingLevelChange,
    EntryType::Compaction,
    EntryType::BranchSummary,
    EntryType::Custom,
    EntryType::CustomMessage,
    EntryType::Label,
    EntryType::SessionInfo,
    EntryType::ContextEdit,
    EntryType::Usage,
    EntryType::Other,
    EntryType::NonObject,
];

const ROLES: [Role; 12] = [
    Role::Missing,
    Role::NotString,
    Role::User,
    Role::Assistant,
    Role::ToolResult,
    Role::System,
    Role::Custom,
    Role::BashExecution,
    Role::BranchSummary,
    Role::CompactionSummary,
    Role::HookMessage,
    Role::Other,
];

fn ty_role_code(ty: EntryType, role: Role) -> u16 {
    let t = TYPES.iter().position(|&x| x == ty).unwrap_or(12) as u16;
    let r = ROLES.iter().position(|&x| x == role).unwrap_or(11) as u16;
    t | r << 4
}

fn kind_code(k: Option<Kind>) -> u16 {
    match k {
        None => 0,
        Some(Kind::String { escaped: false }) => 1,
        Some(Kind::String { escaped: true }) => 2,
        Some(Kind::Number) => 3,
        Some(Kind::True) => 4,
        Some(Kind::False) => 5,
        Some(Kind::Null) => 6,
        Some(Kind::Object) => 7,
        Some(Kind::Array) => 8,
    }
}

fn kind_of_code(c: u16) -> Option<Kind> {
    Some(match c & 0xF {
        1 => Kind::String { escaped: false },
        2 => Kind::String { escaped: true },
        3 => Kind::Number,
        4 => Kind::True,
        5 => Kind::False,
        6 => Kind::Null,
        7 => Kind::Object,
        8 => Kind::Array,
        _ => return None,
    })
}

impl Rec {
    fn ty(&self) -> EntryType {
        TYPES
            .get(usize::from(self.flags & 0xF))
            .copied()
            .unwrap_or(EntryType::Other)
    }
    fn role(&self) -> Role {
        ROLES
            .get(usize::from(self.flags >> 4 & 0xF))
            .copied()
            .unwrap_or(Role::Other)
    }
    fn kind(&self) -> Option<Kind> {
        kind_of_code(self.flags >> KIND_SHIFT)
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
///
/// Kept lines are compact records of 16 bytes each (no heap allocation per line): a plain
/// string `id` or `parentId` (no escapes, ASCII, within the line's first 255 bytes: every
/// id pi writes) is kept as its place in the line and read from the file's bytes when
/// asked for, which is why the methods that give keys take the bytes the index was built
/// from. Other keys, and what else does not fit a record, are in side tables beside the
/// records. [`Index::get`] gives the view [`EntryRec`] of one. Skipped lines keep full
/// [`Skipped`] records.
///
/// The records stay in the runs the parallel workers built them in (one per chunk of the
/// file, each with its own side tables), never concatenated: a concatenation held every
/// record twice at its peak (the runs and the whole), and copied them on one thread.
/// A small table of where each 4096th record lies finds a record's run.
#[derive(Clone, Default)]
pub struct Index {
    /// The records, in file order, in runs (none empty).
    runs: Vec<Run>,
    /// `starts[r]`: the position of `runs[r]`'s first record; one more, the total.
    starts: Vec<u32>,
    /// `lookup[b]`: the run holding record `b << LOOKUP_BITS`.
    lookup: Vec<u32>,
    /// Every skipped line, in file order.
    pub skipped: Vec<Skipped>,
    /// Number of lines (a final line without `\n` counts).
    pub lines: u64,
    /// Bytes follow the last `\n` (pi appends a `\n` on open when this is a session).
    pub unterminated_tail: bool,
    /// The first line too long for pi's loader (see [`v8`]): pi's open throws `RangeError:
    /// Invalid string length` on this file.
    pub pi_open_throws: Option<v8::PendingOverflow>,
}

impl fmt::Debug for Index {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Index")
            .field("entries", &self.len())
            .field("skipped", &self.skipped)
            .field("lines", &self.lines)
            .field("unterminated_tail", &self.unterminated_tail)
            .field("pi_open_throws", &self.pi_open_throws)
            .finish()
    }
}

/// Records of a run of lines with their side tables (each by record position in the
/// run, ascending).
#[derive(Clone, Default)]
struct Run {
    /// The file offset record offsets count from.
    base: u64,
    recs: Vec<Rec>,
    /// `id`s that are not plain strings near the line's start ([`KEY_SIDE`]).
    ids: Vec<(u32, Key)>,
    /// `parentId`s likewise.
    parents: Vec<(u32, Key)>,
    /// Lengths of the lines without [`LEN_NEXT`].
    lens: Vec<(u32, u64)>,
    /// `message` spans too far from the line's start or end for the record.
    msgs: Vec<(u32, RelSpan)>,
    /// Copies of the lines' keys, read from here instead of the file ([`Run::keep_heads`]).
    heads: Option<Box<Heads>>,
}

/// Each record's line from its start to the end of its `id` and `parentId` (when they
/// are plain strings near the start), copied: keys then read no page of the file.
#[derive(Clone, Default)]
struct Heads {
    bytes: Vec<u8>,
    /// Where record `j`'s copy starts in `bytes`.
    at: Vec<u32>,
}

fn side<T: Copy>(v: &[(u32, T)], j: usize) -> Option<T> {
    side_ref(v, j).copied()
}

fn side_ref<T>(v: &[(u32, T)], j: usize) -> Option<&T> {
    v.binary_search_by_key(&(j as u32), |e| e.0).ok().map(|i| &v[i].1)
}

/// The slot of `key` for record `j`: `undefined` and `null` by their codes, any other
/// key set as `table`'s entry for `j` (kept ascending).
fn side_slot(table: &mut Vec<(u32, Key)>, j: usize, key: Key) -> KeySlot {
    match key {
        Key::Undefined => KEY_UNDEFINED,
        Key::Null => KEY_NULL,
        key => {
            match table.binary_search_by_key(&(j as u32), |e| e.0) {
                Ok(i) => table[i].1 = key,
                Err(i) => table.insert(i, (j as u32, key)),
            }
            KEY_SIDE
        }
    }
}

impl Run {
    #[inline]
    fn offset(&self, j: usize) -> u64 {
        self.base + u64::from(self.recs[j].off)
    }

    fn line_len(&self, j: usize) -> u64 {
        let r = &self.recs[j];
        if r.flags & LEN_NEXT != 0
            && let Some(next) = self.recs.get(j + 1)
        {
            return u64::from(next.off.wrapping_sub(r.off).wrapping_sub(1));
        }
        side(&self.lens, j).unwrap_or(0)
    }

    /// The key in `slot` of record `j`, from `bytes` or the side table `table`.
    #[inline]
    fn key<'a>(&'a self, bytes: &'a [u8], j: usize, slot: KeySlot, table: &'a [(u32, Key)]) -> KeyRef<'a> {
        let start = usize::from(slot >> 8);
        if start == 0 {
            return match slot {
                KEY_NULL => KeyRef::NULL,
                KEY_SIDE => side_ref(table, j).map_or(KeyRef::UNDEFINED, KeyRef::from),
                _ => KeyRef::UNDEFINED,
            };
        }
        let (from, at) = match &self.heads {
            Some(h) => (&h.bytes[..], h.at[j] as usize + start),
            None => (bytes, (self.offset(j) as usize).saturating_add(start)),
        };
        let key = from
            .get(at..at.saturating_add(usize::from(slot & 0xFF)))
            .unwrap_or_default();
        KeyRef(KeyRepr::Str(key))
    }

    /// Copy each record's keys out of `bytes` (the file's), so that reading them later
    /// touches no page of the file: for a file whose pages are let go once indexed
    /// (`OpenOptions::release_pages`), where reading every entry's id again would map most
    /// of the file back in (the kernel maps whole folios around each byte read).
    fn keep_heads(&mut self, bytes: &[u8]) {
        let end = |slot: KeySlot| match usize::from(slot >> 8) {
            0 => 0,
            start => start + usize::from(slot & 0xFF),
        };
        let mut h = Heads {
            bytes: Vec::new(),
            at: Vec::with_capacity(self.recs.len()),
        };
        for j in 0..self.recs.len() {
            let r = &self.recs[j];
            let off = self.offset(j) as usize;
            let n = end(r.id).max(end(r.parent));
            h.at.push(h.bytes.len() as u32);
            h.bytes
                .extend_from_slice(bytes.get(off..off.saturating_add(n)).unwrap_or_default());
        }
        h.bytes.shrink_to_fit();
        self.heads = Some(Box::new(h));
    }

    fn id<'a>(&'a self, bytes: &'a [u8], j: usize) -> KeyRef<'a> {
        self.key(bytes, j, self.recs[j].id, &self.ids)
    }

    fn parent<'a>(&'a self, bytes: &'a [u8], j: usize) -> KeyRef<'a> {
        self.key(bytes, j, self.recs[j].parent, &self.parents)
    }

    fn message(&self, j: usize, len: u64) -> RelSpan {
        let r = &self.recs[j];
        if r.flags & MSG_LAST == 0 {
            return side(&self.msgs, j).unwrap_or(RelSpan::NONE);
        }
        let end = len.saturating_sub(1).min(u64::from(u32::MAX - 1)) as u32;
        RelSpan {
            start: u32::from(r.msg_start),
            len: end.saturating_sub(u32::from(r.msg_start)),
        }
    }
}

/// Records `b << LOOKUP_BITS` are where [`Index::lookup`] says.
const LOOKUP_BITS: u32 = 12;

/// The keys of an index with the bytes it was built from: what `byId` and the walks read.
#[derive(Clone, Copy)]
pub(crate) struct Ids<'a> {
    pub(crate) index: &'a Index,
    pub(crate) bytes: &'a [u8],
}

impl<'a> Ids<'a> {
    /// The `id` of kept line `k`.
    #[inline]
    pub(crate) fn id(&self, k: usize) -> KeyRef<'a> {
        self.index.id(self.bytes, k)
    }
    /// The `parentId` of kept line `k`.
    #[inline]
    pub(crate) fn parent(&self, k: usize) -> KeyRef<'a> {
        self.index.parent(self.bytes, k)
    }
    /// Kept lines.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }
}

impl Index {
    /// Kept lines (entries and headers).
    pub fn len(&self) -> usize {
        self.starts.last().map_or(0, |&n| n as usize)
    }

    /// No kept line.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys, read from `bytes` (the bytes this index was built from).
    pub(crate) fn ids<'a>(&'a self, bytes: &'a [u8]) -> Ids<'a> {
        Ids { index: self, bytes }
    }

    /// The run of kept line `k` and its position there.
    #[inline]
    fn locate(&self, k: usize) -> (&Run, usize) {
        let (r, j) = self.run_of(k);
        (&self.runs[r], j)
    }

    /// The index of the run of kept line `k` and its position there.
    #[inline]
    fn run_of(&self, k: usize) -> (usize, usize) {
        let mut r = self.lookup[k >> LOOKUP_BITS] as usize;
        // Runs hold thousands of records but for files of huge lines: then search.
        let mut steps = 0;
        while self.starts[r + 1] as usize <= k {
            r += 1;
            steps += 1;
            if steps == 4 {
                r += self.starts[r..].partition_point(|&s| s as usize <= k) - 1;
                break;
            }
        }
        (r, k - self.starts[r] as usize)
    }

    /// The `id` of kept line `k`, from `bytes` (the bytes the index was built from).
    #[inline]
    pub fn id<'a>(&'a self, bytes: &'a [u8], k: usize) -> KeyRef<'a> {
        let (run, j) = self.locate(k);
        run.id(bytes, j)
    }

    /// The `parentId` of kept line `k`, from `bytes`.
    #[inline]
    pub fn parent<'a>(&'a self, bytes: &'a [u8], k: usize) -> KeyRef<'a> {
        let (run, j) = self.locate(k);
        run.parent(bytes, j)
    }

    /// The `type` of kept line `k`.
    #[inline]
    pub fn ty(&self, k: usize) -> EntryType {
        let (run, j) = self.locate(k);
        run.recs[j].ty()
    }

    /// Whether the `parentId` of kept line `k` is a non-empty string equal to the `id` of
    /// kept line `k - 1` (as the indexer saw them; `false` says nothing).
    #[inline]
    pub(crate) fn parent_is_prev(&self, k: usize) -> bool {
        let (run, j) = self.locate(k);
        run.recs[j].flags & PARENT_IS_PREV != 0
    }

    /// Where kept line `k` starts.
    #[inline]
    pub fn offset(&self, k: usize) -> ByteOffset {
        let (run, j) = self.locate(k);
        ByteOffset(run.offset(j))
    }

    /// The length (without `\n`) of kept line `k`.
    pub fn line_len(&self, k: usize) -> u64 {
        let (run, j) = self.locate(k);
        run.line_len(j)
    }

    /// The line number of kept line `k`: the lines before it are the kept lines before it
    /// and the skipped lines before it.
    pub fn line_no(&self, k: usize) -> LineNo {
        let off = self.offset(k).0;
        let skipped_before = if self.skipped.is_empty() {
            0
        } else {
            self.skipped.partition_point(|s| s.offset.0 < off)
        };
        LineNo(k as u64 + 1 + skipped_before as u64)
    }

    /// The view of kept line `k`, its keys read from `bytes` (the bytes the index was
    /// built from).
    pub fn get<'a>(&'a self, bytes: &'a [u8], k: usize) -> EntryRec<'a> {
        let (run, j) = self.locate(k);
        let r = &run.recs[j];
        let len = run.line_len(j);
        EntryRec {
            offset: ByteOffset(run.offset(j)),
            len,
            line: self.line_no(k),
            ty: r.ty(),
            id: run.id(bytes, j),
            parent: run.parent(bytes, j),
            message: run.message(j, len),
            message_kind: r.kind(),
            role: r.role(),
            id_is_string: r.flags & ID_IS_STRING != 0,
        }
    }

    /// Every kept line, in file order (pi's `fileEntries` before filtering headers).
    pub fn iter<'a>(
        &'a self,
        bytes: &'a [u8],
    ) -> impl DoubleEndedIterator<Item = EntryRec<'a>> + ExactSizeIterator + 'a {
        (0..self.len()).map(move |k| self.get(bytes, k))
    }

    /// Give kept line `k` new keys (pi's v1 migration: a fresh id, the previous entry as
    /// parent); its id is then a string.
    pub(crate) fn set_keys(&mut self, k: usize, id: Key, parent: Key) {
        let (ri, j) = self.run_of(k);
        let run = &mut self.runs[ri];
        let id = side_slot(&mut run.ids, j, id);
        let parent = side_slot(&mut run.parents, j, parent);
        let r = &mut run.recs[j];
        r.id = id;
        r.parent = parent;
        r.flags = (r.flags | ID_IS_STRING) & !PARENT_IS_PREV;
    }

    /// An index of records holding these ids (tests of id lookups).
    #[cfg(test)]
    pub(crate) fn test_with_ids(ids: &[Key]) -> Index {
        let mut idx = Index::default();
        // Runs of a few records, so that lookups cross runs.
        for (k0, ids) in ids.chunks(7).enumerate() {
            let mut part = Part::default();
            for (k, id) in ids.iter().enumerate() {
                part.push_rec((k0 * 7 + k) as u64, 0, EntryType::Other);
                part.run.recs[k].id = side_slot(&mut part.run.ids, k, id.clone());
            }
            part.finish(ids.len() as u64);
            idx.append_part(part);
        }
        idx
    }

    /// Append the records of `part` (whose offsets are the file's) after the lines
    /// already here.
    fn append_part(&mut self, mut part: Part) {
        let line_base = self.lines;
        for s in &mut part.skipped {
            s.line.0 += line_base;
        }
        self.skipped.append(&mut part.skipped);
        self.lines += part.lines;
        if part.run.recs.is_empty() {
            return;
        }
        let total = self.len() + part.run.recs.len();
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        self.starts.push(u32::try_from(total).unwrap_or(u32::MAX));
        self.runs.push(part.run);
        self.fill_lookup();
    }

    /// Bring [`Index::lookup`] up to date with the runs (its entries for records that
    /// were there stay right: runs are only ever added or shortened at the end).
    fn fill_lookup(&mut self) {
        let n = self.len();
        let want = n.div_ceil(1 << LOOKUP_BITS);
        self.lookup.truncate(want);
        let mut r = self.lookup.last().map_or(0, |&r| r as usize);
        while self.lookup.len() < want {
            let k = self.lookup.len() << LOOKUP_BITS;
            while self.starts[r + 1] as usize <= k {
                r += 1;
            }
            self.lookup.push(r as u32);
        }
    }
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

/// The records of a run of lines, before they join an [`Index`]: offsets from `base`,
/// line numbers from 1.
#[derive(Default)]
struct Part {
    /// The records and side tables, as the index keeps them.
    run: Run,
    skipped: Vec<Skipped>,
    lines: u64,
    /// The file offset where the last record's line ends (its `\n`).
    last_end: u64,
}

impl Part {
    fn skip(&mut self, line_no: u64, offset: u64, len: u64, reason: SkipReason) {
        self.skipped.push(Skipped {
            line: LineNo(line_no),
            offset: ByteOffset(offset),
            len,
            reason,
        });
    }

    /// The slot of a key of the record about to be pushed: a plain string near the
    /// line's start as its place there, else `table`'s entry.
    #[inline(always)]
    fn key_slot(
        line: &[u8],
        f: Option<Field>,
        unique: u64,
        table: &mut Vec<(u32, Key)>,
        at: usize,
    ) -> Result<KeySlot, Changed> {
        if let Some(Field {
            start,
            end,
            kind: Kind::String { escaped: false },
        }) = f
            && start < 255
            && end >= start + 2
            && end - start - 2 <= 255
        {
            let raw = line.get(start + 1..end - 1).ok_or(Changed)?;
            if raw.is_ascii() {
                return Ok(((start + 1) as u16) << 8 | raw.len() as u16);
            }
        }
        Ok(side_slot(table, at, key_of(line, f, unique)?))
    }

    /// Push a record for the line at file offset `offset` (the first decides `base`).
    fn push_rec(&mut self, offset: u64, len: u64, ty: EntryType) -> &mut Rec {
        if self.run.recs.is_empty() {
            self.run.base = offset;
        } else {
            let k = self.run.recs.len() - 1;
            if self.last_end + 1 == offset {
                self.run.recs[k].flags |= LEN_NEXT;
            } else {
                let prev_len = self.last_end - self.run.base - u64::from(self.run.recs[k].off);
                self.run.lens.push((k as u32, prev_len));
            }
        }
        self.last_end = offset + len;
        // Lines start within a chunk of at most `MAX_CHUNK` bytes.
        let off = u32::try_from(offset - self.run.base).unwrap_or(u32::MAX);
        self.run.recs.push(Rec {
            off,
            id: KEY_UNDEFINED,
            parent: KEY_UNDEFINED,
            msg_start: 0,
            flags: ty_role_code(ty, Role::Missing),
        });
        self.run.recs.last_mut().expect("just pushed")
    }

    /// The last record's length goes to `lens` (nothing follows it); `lines` lines done.
    fn finish(&mut self, lines: u64) {
        if let Some(k) = self.run.recs.len().checked_sub(1) {
            let len = self.last_end - self.run.base - u64::from(self.run.recs[k].off);
            self.run.lens.push((k as u32, len));
        }
        self.lines = lines;
    }

    /// The record of a line that is JSON but not an object: no type, id or parent.
    fn non_object(&mut self, offset: u64, len: u64) {
        self.push_rec(offset, len, EntryType::NonObject);
    }

    /// The record of an object line at `offset` whose fields are `f`, after the record
    /// of `prev` (its line; empty for none); nothing is recorded when a field no longer
    /// decodes.
    #[inline(always)]
    fn object(&mut self, line: &[u8], prev: &[u8], f: Fields, offset: u64) -> Result<(), Changed> {
        let ty = entry_type(line, f.ty)?;
        let role = Role::classify(line, f.role)?;
        let at = self.run.recs.len();
        let (ids_before, parents_before) = (self.run.ids.len(), self.run.parents.len());
        let slots = Part::key_slot(line, f.id, offset * 2, &mut self.run.ids, at).and_then(|id| {
            Part::key_slot(line, f.parent_id, offset * 2 + 1, &mut self.run.parents, at).map(|p| (id, p))
        });
        let Ok((id, parent)) = slots else {
            self.run.ids.truncate(ids_before);
            self.run.parents.truncate(parents_before);
            return Err(Changed);
        };
        let len = line.len();
        let (msg_start, msg_last) = match f.message {
            Some(m) if m.start <= usize::from(u16::MAX) && m.end + 1 == len && line.get(m.end) == Some(&b'}') => {
                (m.start as u16, MSG_LAST)
            }
            Some(m) => {
                self.run.msgs.push((at as u32, RelSpan::of(Some(m))));
                (0, 0)
            }
            None => (0, 0),
        };
        let id_is_string = matches!(
            f.id,
            Some(Field {
                kind: Kind::String { .. },
                ..
            })
        );
        let span = |slot: KeySlot| {
            let start = usize::from(slot >> 8);
            (start != 0)
                .then(|| line.get(start..start + usize::from(slot & 0xFF)))
                .flatten()
        };
        // The previous record's id, read from its line (still in cache).
        let parent_is_prev = match (span(parent), self.run.recs.last()) {
            (Some(p), Some(last)) if !p.is_empty() => {
                let s = usize::from(last.id >> 8);
                s != 0 && prev.get(s..s + usize::from(last.id & 0xFF)) == Some(p)
            }
            _ => false,
        };
        let r = self.push_rec(offset, len as u64, ty);
        r.id = id;
        r.parent = parent;
        r.msg_start = msg_start;
        r.flags = ty_role_code(ty, role)
            | kind_code(f.message.map(|m| m.kind)) << KIND_SHIFT
            | if id_is_string { ID_IS_STRING } else { 0 }
            | if parent_is_prev { PARENT_IS_PREV } else { 0 }
            | msg_last;
        Ok(())
    }

    /// Index one line at `offset` with (run-relative) line number `line_no`.
    fn line(&mut self, line: &[u8], prev: &[u8], offset: u64, line_no: u64) {
        let len = line.len() as u64;
        match scan_line(line) {
            Line::Blank => self.skip(line_no, offset, len, SkipReason::Blank),
            Line::Falsy => self.skip(line_no, offset, len, SkipReason::Falsy),
            Line::Malformed(e) => self.skip(
                line_no,
                offset,
                len,
                SkipReason::Malformed {
                    at: e.offset as u64,
                    reason: e.reason,
                },
            ),
            Line::NonObject => self.non_object(offset, len),
            Line::Object(f) => {
                if self.object(line, prev, f, offset).is_err() {
                    self.skip(line_no, offset, len, CHANGED);
                }
            }
        }
    }
}

/// Index a chunk of whole lines starting at file offset `base`; line numbers are relative
/// to the chunk (first line = 1), offsets are the file's.
fn index_chunk(bytes: &[u8], base: u64, limit: usize) -> Part {
    // The scanner is compiled a second time for AVX2 and BMI, used when the CPU has them.
    crate::json::with_avx2_bmi(|| index_chunk_impl(bytes, base, limit))
}

/// Index the lines of `bytes` (which starts a line, at file offset `base`) that start
/// before `limit` (at most `bytes.len()`).
#[inline(always)]
fn index_chunk_impl(bytes: &[u8], base: u64, limit: usize) -> Part {
    let mut part = Part::default();
    // Room for the whole run once its first sixteenth is indexed (with a tenth to
    // spare): growing by doubling copied each run about once and faulted its pages in
    // twice. Trimmed below.
    let mut sized = false;
    let mut pos = 0usize;
    let mut line_no = 0u64;
    // The line of the last record pushed.
    let mut prev = 0..0;
    debug_assert!(limit <= bytes.len());
    while pos < limit {
        if !sized && pos > 0 && pos >= limit / 16 {
            sized = true;
            let scale = |n: usize| (n as u128 * limit as u128 * 11 / (pos as u128 * 10)) as usize + 16;
            part.run
                .recs
                .reserve(scale(part.run.recs.len()).saturating_sub(part.run.recs.len()));
        }
        line_no += 1;
        // Nearly every line is a valid object: scanning it finds its end too.
        if let Some((f, len)) = scan_object_line(&bytes[pos..]) {
            let offset = base + pos as u64;
            if part
                .object(&bytes[pos..pos + len], &bytes[prev.clone()], f, offset)
                .is_err()
            {
                part.skip(line_no, offset, len as u64, CHANGED);
            } else {
                prev = pos..pos + len;
            }
            pos += len + 1;
            continue;
        }
        let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |o| pos + o);
        let before = part.run.recs.len();
        part.line(&bytes[pos..end], &bytes[prev.clone()], base + pos as u64, line_no);
        if part.run.recs.len() > before {
            prev = pos..end;
        }
        pos = end + 1;
    }
    // Chunks are small: trimming them keeps the peak at about twice the final index.
    part.run.recs.shrink_to_fit();
    part.run.ids.shrink_to_fit();
    part.run.parents.shrink_to_fit();
    part.skipped.shrink_to_fit();
    part.finish(line_no);
    part
}

impl Index {
    /// Index `bytes[from..]` (which starts at a line boundary) and append the records;
    /// line numbers continue from the lines already counted. Returns how many entries
    /// were added.
    pub(crate) fn extend(&mut self, bytes: &[u8], from: usize) -> usize {
        let before = self.len();
        for p in build_parts(bytes, from, CHUNK) {
            self.append_part(p);
        }
        self.unterminated_tail = bytes.last().is_some_and(|&b| b != b'\n') && bytes.len() > from;
        // Bytes after a line's `\n` in its chunk count too, so earlier lines are looked at
        // again (only on files long enough for it).
        self.pi_open_throws = self.overflow_from(bytes, 0);
        self.len() - before
    }

    /// The first kept or skipped line from kept line `first` on that pi's loader cannot
    /// hold (see [`v8`]).
    fn overflow_from(&self, bytes: &[u8], first: usize) -> Option<v8::PendingOverflow> {
        if !v8::exceeds_bound(bytes.len() as u64) {
            return None;
        }
        let from = if first < self.len() {
            self.offset(first).0
        } else {
            u64::MAX
        };
        let mut lines: Vec<(u64, u64)> = (first..self.len())
            .map(|k| (self.offset(k).0, self.line_len(k)))
            .chain(
                self.skipped
                    .iter()
                    .filter(|s| s.offset.0 >= from)
                    .map(|s| (s.offset.0, s.len)),
            )
            .filter(|&(_, len)| v8::exceeds_bound(len))
            .collect();
        lines.sort_unstable();
        v8::first_overflow(bytes, lines)
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
        // Recomputed over every line when the rest arrives (see `extend`).
        self.pi_open_throws = None;
        if !self.is_empty() && self.line_no(self.len() - 1) == last_line {
            let run = self.runs.last_mut().expect("not empty");
            let k = run.recs.len() - 1;
            let offset = run.offset(k);
            run.recs.pop();
            for table in [&mut run.ids, &mut run.parents] {
                if table.last().is_some_and(|e| e.0 as usize == k) {
                    table.pop();
                }
            }
            if run.lens.last().is_some_and(|e| e.0 as usize == k) {
                run.lens.pop();
            }
            if run.msgs.last().is_some_and(|e| e.0 as usize == k) {
                run.msgs.pop();
            }
            // The record before it took its length from it: it is stored now.
            if let Some(prev) = k.checked_sub(1)
                && run.recs[prev].flags & LEN_NEXT != 0
            {
                run.recs[prev].flags &= !LEN_NEXT;
                let len = offset - run.offset(prev) - 1;
                run.lens.push((prev as u32, len));
            }
            if run.recs.is_empty() {
                self.runs.pop();
                self.starts.pop();
                if self.starts.len() == 1 {
                    self.starts.clear();
                }
            } else {
                *self.starts.last_mut().expect("not empty") -= 1;
            }
            self.fill_lookup();
            return Some((offset, true));
        }
        if self.skipped.last().is_some_and(|k| k.line == last_line) {
            let k = self.skipped.pop().expect("checked");
            return Some((k.offset.0, false));
        }
        None
    }
}

/// Chunks of about this many bytes are indexed in parallel.
pub(crate) const CHUNK: usize = 4 << 20;
/// The most bytes a chunk may have (the offsets of its lines' starts fit 32 bits).
const MAX_CHUNK: usize = 1 << 31;

/// How far before its chunk a worker lets pages go ([`build_releasing`]): the largest
/// folio the kernel maps at once (a PMD, 2 MiB on x86-64), twice.
const RELEASE_BACK: usize = 4 << 20;

/// Build the index of `bytes`.
pub fn build(bytes: &[u8]) -> Index {
    build_with(bytes, CHUNK)
}

/// Index `bytes[from..]` (`from` starts a line) in chunks, in parallel: the parts in file
/// order, with the file's offsets.
fn build_parts(bytes: &[u8], from: usize, chunk: usize) -> Vec<Part> {
    build_parts_then(bytes, from, chunk, None, None)
}

/// [`build_parts`]; with `done`, each chunk's keys are copied ([`Run::keep_heads`]) and
/// `done` is called with the chunk's range of `bytes` once it is indexed; with `prints`
/// (and `from` 0), the XXH3-64 hash of each chunk's range is taken just before it is
/// indexed and stored there (the file's print, `crate::source::Print`).
fn build_parts_then(
    bytes: &[u8],
    from: usize,
    chunk: usize,
    done: Option<&(dyn Fn(std::ops::Range<usize>) + Sync)>,
    prints: Option<&[std::sync::atomic::AtomicU64]>,
) -> Vec<Part> {
    // Record offsets within a run are 32 bits: lines start within one chunk.
    let chunk = printed_chunk(chunk);
    // Chunk k indexes the lines that start in `k * chunk .. (k + 1) * chunk`; each worker
    // finds its own first line start (the last line it indexes may run past its range),
    // so no thread walks the file alone to cut it first.
    let n = bytes.len();
    (0..(n - from).div_ceil(chunk))
        .into_par_iter()
        .map(|k| {
            let lo = from + k * chunk;
            let hi = (lo + chunk).min(n);
            if let Some(p) = prints {
                p[k].store(
                    crate::source::print::hash(&bytes[lo..hi]),
                    std::sync::atomic::Ordering::Relaxed,
                );
            }
            let start = if lo == from {
                Some(from)
            } else {
                memchr::memchr(b'\n', &bytes[lo - 1..hi]).map(|o| lo + o)
            };
            let mut part = match start {
                Some(start) if start < hi => index_chunk(&bytes[start..], start as u64, hi - start),
                // A line that started before `lo` covers the whole range.
                _ => Part::default(),
            };
            if let Some(done) = done {
                part.run.keep_heads(bytes);
                // The range scanned, and the line read past its end (a line of megabytes
                // runs through chunks whose workers found no line start in theirs).
                let end = match start {
                    Some(start) if start < hi => memchr::memchr(b'\n', &bytes[hi - 1..]).map_or(n, |o| hi + o),
                    _ => hi,
                };
                // From a folio back as well: this worker's first look, at `lo - 1`, maps
                // the whole folio holding that byte (up to 2 MiB) again, after the
                // worker of the chunk before let it go.
                done(lo.saturating_sub(RELEASE_BACK)..end);
            }
            part
        })
        .collect()
}

/// Build the index with a given chunk size (tests use tiny chunks to exercise the split).
pub fn build_with(bytes: &[u8], chunk: usize) -> Index {
    build_then(bytes, chunk, None)
}

/// [`build_with`], keeping copies of the keys and calling `release` with each chunk's
/// range of `bytes` once it is indexed (the session lets the pages of a mapped file go
/// there).
pub(crate) fn build_releasing(bytes: &[u8], chunk: usize, release: &(dyn Fn(std::ops::Range<usize>) + Sync)) -> Index {
    build_then(bytes, chunk, Some(release))
}

/// [`build_with`] or [`build_releasing`], with the print of `bytes` in blocks of `chunk`
/// (the clamped chunk: see [`printed_chunk`]), each block hashed just before it is indexed.
pub(crate) fn build_printed(
    bytes: &[u8],
    chunk: usize,
    release: Option<&(dyn Fn(std::ops::Range<usize>) + Sync)>,
) -> (Index, Vec<u64>) {
    let n = bytes.len().div_ceil(printed_chunk(chunk));
    let prints: Vec<std::sync::atomic::AtomicU64> = (0..n).map(|_| std::sync::atomic::AtomicU64::new(0)).collect();
    let index = build_then_printed(bytes, chunk, release, Some(&prints));
    (
        index,
        prints
            .into_iter()
            .map(std::sync::atomic::AtomicU64::into_inner)
            .collect(),
    )
}

/// The size of the chunks (and of a print's blocks) a given chunk size makes.
pub(crate) fn printed_chunk(chunk: usize) -> usize {
    chunk.clamp(1, MAX_CHUNK)
}

fn build_then(bytes: &[u8], chunk: usize, release: Option<&(dyn Fn(std::ops::Range<usize>) + Sync)>) -> Index {
    build_then_printed(bytes, chunk, release, None)
}

fn build_then_printed(
    bytes: &[u8],
    chunk: usize,
    release: Option<&(dyn Fn(std::ops::Range<usize>) + Sync)>,
    prints: Option<&[std::sync::atomic::AtomicU64]>,
) -> Index {
    let parts = build_parts_then(bytes, 0, chunk, release, prints);
    let mut index = Index {
        unterminated_tail: bytes.last().is_some_and(|&b| b != b'\n'),
        ..Index::default()
    };
    index
        .runs
        .reserve_exact(parts.iter().filter(|p| !p.run.recs.is_empty()).count());
    // `a\n` has one line; `a\nb` two; a trailing `\n` does not start a line.
    for p in parts {
        index.append_part(p);
    }
    index.pi_open_throws = index.overflow_from(bytes, 0);
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
        assert_eq!(idx.len(), 3);
        assert_eq!(idx.get(text, 0).ty, EntryType::Session);
        assert_eq!(idx.get(text, 1).id, Key::str("a"));
        assert_eq!(idx.get(text, 1).parent, Key::Null);
        assert_eq!(idx.get(text, 1).line, LineNo(4));
        assert_eq!(idx.get(text, 2).ty, EntryType::NonObject);
        assert_eq!(idx.get(text, 2).line, LineNo(5));
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
    fn index_of(part: Part) -> Index {
        let mut idx = Index::default();
        idx.append_part(part);
        idx
    }

    fn line_by_line(bytes: &[u8]) -> Index {
        let mut part = Part::default();
        let mut pos = 0;
        let mut line_no = 0;
        let mut prev = 0..0;
        while pos < bytes.len() {
            let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |o| pos + o);
            line_no += 1;
            let before = part.run.recs.len();
            part.line(&bytes[pos..end], &bytes[prev.clone()], pos as u64, line_no);
            if part.run.recs.len() > before {
                prev = pos..end;
            }
            pos = end + 1;
        }
        part.finish(line_no);
        index_of(part)
    }

    fn entries(idx: &Index, text: &[u8]) -> String {
        // With the flag that the parent is the previous record's id, which must say so
        // exactly then (within a run: a run's first record has no previous one).
        let flags: Vec<bool> = (0..idx.len()).map(|k| idx.parent_is_prev(k)).collect();
        for (k, &flag) in flags.iter().enumerate() {
            let e = idx.get(text, k);
            if flag {
                assert!(k > 0 && e.parent == idx.id(text, k - 1) && e.parent.truthy(), "{k}");
            }
        }
        format!("{:?}", idx.iter(text).collect::<Vec<_>>())
    }

    fn same_as_line_by_line(text: &[u8]) {
        let idx = index_of(index_chunk(text, 0, text.len()));
        let want = line_by_line(text);
        let show = String::from_utf8_lossy(text);
        assert_eq!(idx.lines, want.lines, "{show:?}");
        assert_eq!(idx.skipped, want.skipped, "{show:?}");
        assert_eq!(entries(&idx, text), entries(&want, text), "{show:?}");
        // Cut into chunks of every size up to a few lines: the same index.
        for chunk in [1, 2, 3, 5, 8, 13, 40, 100] {
            let idx = build_with(text, chunk);
            assert_eq!(idx.lines, want.lines, "chunk {chunk}: {show:?}");
            assert_eq!(idx.skipped, want.skipped, "chunk {chunk}: {show:?}");
            assert_eq!(entries(&idx, text), entries(&want, text), "chunk {chunk}: {show:?}");
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
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter(&text).zip(b.iter(&text)) {
                assert_eq!((x.offset, x.line, x.id), (y.offset, y.line, y.id));
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
        let id_of = |line: &[u8]| {
            let mut part = Part::default();
            part.object(line, &[], fields, 0)
                .map(|()| index_of(part).get(line, 0).id.to_key())
        };
        assert_eq!(id_of(walked), Ok(Key::str("a")));
        // The opening quote gone, `\q` for `\u`, a `\u` escape cut short.
        for (at, to) in [(23, b'x'), (25, b'q'), (29, b'"')] {
            let mut read = walked.to_vec();
            read[at] = to;
            assert_eq!(id_of(&read), Err(Changed), "{at}");
        }
    }
}

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
//!
//! # Files
//! `key.rs` ids as pi's `Map` keys, `kind.rs` entry types and roles, `line.rs` the scan of
//! one line, `build.rs` the parallel build, `idmap.rs` the id lookup, `pos.rs` typed
//! positions, `v8.rs` pi's string limit; this file the packed records and the queries.

mod build;
pub(crate) mod idmap;
mod key;
mod kind;
pub(crate) mod line;
mod pos;
#[cfg(test)]
mod props;
pub mod v8;

pub(crate) use build::{CHUNK, build_printed, build_releasing, printed_chunk};
pub use build::{build, build_with};
pub use key::{Key, KeyRef};
pub use kind::{EntryType, Role};
pub use pos::{ByteOffset, EntryPos, LineNo, Position};

use crate::json::{Field, Kind};
use key::KeyRepr;
use std::fmt;
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

    /// Bring [`Index::lookup`] up to date with the runs (its entries for records that
    /// were there stay right: runs are only ever added or shortened at the end).
    pub(super) fn fill_lookup(&mut self) {
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

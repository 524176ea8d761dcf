//! A session file's *search map*: for each entry that has searched strings, what a hit
//! says of it (position, id, line number, offset, role, whether it is on the current
//! branch, where its `timestamp` is) and where each of its searched strings lies in its
//! line, for every field, the opt-in ones too (each string marked with its field).
//!
//! A map is built from a full open of the file (the index, then the structural walk of
//! `fields.rs` over every entry) and kept in the search cache (`store.rs`) under the
//! file's `fstat`. A search of a file whose stamp is unchanged then needs neither the
//! index nor the walk, and scans only the bytes of the strings it searches: the raw
//! scan of the whole file, its tool output, images and JSON, is what the map saves. The
//! strings are matched by the very code the fast path uses ([`super::entry_hits`]), so
//! a map gives exactly the hits of [`super::search_source`] on the file it was built from.
//!
//! A stored map starts with the file's sketch (`sketch.rs`: the trigrams of the strings
//! every search reads), by which a search passes over a file that cannot hold a match
//! without reading it ([`may_match`]).
//!
//! Encoding: the sketch, then entries one after the other, each a row of LEB128 unsigned
//! integers:
//! ```text
//! offset - previous offset, line - previous line, position - previous position
//!                          (wrapping: any order decodes)
//! role                     index in ROLES, + 128 when on the current branch
//! id                       0: none; else its length + 1, then its bytes
//! timestamp                0: none; else its start + 1, then its length
//! strings                  their count, then each: field code, block (0: none; else
//!                          index + 1), start, length
//! ```
//! Starts are from the start of the entry's line. Decoding checks every value against
//! what is left and every string against the file's bytes: a map that does not fit its
//! file answers `None`, never a wrong hit.

use super::fields::{self, At, Found};
use super::{Branch, EntryHead, FieldKind, Fields, Hit, Query, ROLES, entry_head, entry_hits};
use crate::error::Result;
use crate::index::{ByteOffset, EntryPos, LineNo};
use crate::json::Kind;
use crate::session::Session;
use crate::store::{Reader, put_varint};
use std::ops::Range;

/// Every field: a map holds the strings of all of them.
const ALL: Fields = Fields {
    thinking: true,
    tool_calls: true,
    tool_results: true,
};

const FIELDS: [FieldKind; 9] = [
    FieldKind::Text,
    FieldKind::Thinking,
    FieldKind::ToolCall,
    FieldKind::ToolResult,
    FieldKind::Command,
    FieldKind::Output,
    FieldKind::Summary,
    FieldKind::Name,
    FieldKind::Label,
];

fn field_code(f: FieldKind) -> u64 {
    FIELDS.iter().position(|&x| x == f).expect("every field is in FIELDS") as u64
}

/// Whether a query searches strings of field `f`.
fn wanted(f: FieldKind, want: Fields) -> bool {
    match f {
        FieldKind::Thinking => want.thinking,
        FieldKind::ToolCall => want.tool_calls,
        FieldKind::ToolResult | FieldKind::Output => want.tool_results,
        _ => true,
    }
}

/// The map of an opened session.
///
/// # Errors
/// The file changed under the mapping (a line the index vouched for no longer walks).
pub(crate) fn build(s: &Session) -> Result<Vec<u8>> {
    let branch = Branch::of(s);
    let mut out = Vec::new();
    let mut sketch = SKETCH
        .with(|b| b.borrow_mut().take())
        .unwrap_or_else(super::sketch::Builder::new);
    let mut found = Vec::new();
    let (mut offset, mut line, mut pos) = (0u64, 0u64, 0u64);
    for &p in s.entries() {
        let Some(h) = entry_head(s, &branch, p) else { continue };
        let rec = s.record(p);
        let raw = s.raw(p);
        found.clear();
        let Ok(ts) = fields::walk_entry(raw, rec.ty, rec.role, rec.message.get(), ALL, &mut found) else {
            return Err(super::changed(s));
        };
        if found.is_empty() {
            continue;
        }
        put_varint(&mut out, h.offset.0.wrapping_sub(offset));
        put_varint(&mut out, h.line.0.wrapping_sub(line));
        put_varint(&mut out, u64::from(h.pos.0).wrapping_sub(pos));
        (offset, line, pos) = (h.offset.0, h.line.0, u64::from(h.pos.0));
        let role = ROLES
            .iter()
            .position(|&r| r == h.role)
            .expect("role_of gives a role of ROLES");
        put_varint(&mut out, role as u64 | if h.on_branch { 128 } else { 0 });
        match h.id {
            Some(id) => {
                put_varint(&mut out, id.len() as u64 + 1);
                out.extend_from_slice(id);
            }
            None => put_varint(&mut out, 0),
        }
        match ts.kind {
            Some(_) => {
                put_varint(&mut out, ts.start as u64 + 1);
                put_varint(&mut out, (ts.end - ts.start) as u64);
            }
            None => put_varint(&mut out, 0),
        }
        put_varint(&mut out, found.len() as u64);
        for f in &found {
            if super::sketch::sketched(f.field) {
                let raw = &raw[f.at.start..f.at.end];
                sketch.add(raw, super::pattern::has_relevant_escape(raw));
            }
            put_varint(&mut out, field_code(f.field));
            put_varint(&mut out, f.block.map_or(0, |b| u64::from(b) + 1));
            put_varint(&mut out, f.at.start as u64);
            put_varint(&mut out, (f.at.end - f.at.start) as u64);
        }
    }
    let mut entry = Vec::with_capacity(out.len() + 4096);
    sketch.finish(&mut entry);
    SKETCH.with(|b| *b.borrow_mut() = Some(sketch));
    entry.extend_from_slice(&out);
    Ok(entry)
}

thread_local! {
    /// Each thread's sketch builder (its bitmap is 32 KiB), kept from file to file.
    static SKETCH: std::cell::RefCell<Option<super::sketch::Builder>> = const { std::cell::RefCell::new(None) };
}

/// The map of a stored entry (built by [`build`]): what follows its sketch.
pub(crate) fn body(entry: &[u8]) -> Option<&[u8]> {
    entry.get(super::sketch::len(entry)?..)
}

/// Whether a query may find something in the file whose stored entry is `entry`, by its
/// sketch (`None`: the entry holds none).
pub(crate) fn may_match(entry: &[u8], q: &Query) -> Option<bool> {
    match &q.matcher.probe {
        Some(p) => p.may_match(entry, q.fields),
        None => Some(true),
    }
}

/// What a query reads of a file through its map: the entries it may find something in
/// (the role and branch filters passed, a string of a searched field), each with where
/// its `timestamp` is and its searched strings (from the file's start).
pub(crate) struct Plan<'m> {
    entries: Vec<(EntryHead<'m>, Option<Range<usize>>, Range<usize>)>,
    found: Vec<Found>,
}

impl<'m> Plan<'m> {
    /// The plan of query `q` over a map; `None` when the map does not decode.
    pub(crate) fn of(entry: &'m [u8], q: &Query) -> Option<Plan<'m>> {
        let map = body(entry)?;
        let mut r = Reader { b: map, at: 0 };
        let mut plan = Plan {
            entries: Vec::new(),
            found: Vec::new(),
        };
        let (mut offset, mut line, mut pos) = (0u64, 0u64, 0u64);
        while r.at < map.len() {
            offset = offset.wrapping_add(r.varint()?);
            line = line.wrapping_add(r.varint()?);
            pos = pos.wrapping_add(r.varint()?);
            let base = usize::try_from(offset).ok()?;
            let role = r.varint()?;
            let id = match r.varint_usize()? {
                0 => None,
                n => Some(r.take(n - 1)?),
            };
            let ts = match r.varint_usize()? {
                0 => None,
                start => {
                    let start = base.checked_add(start - 1)?;
                    Some(start..start.checked_add(r.varint_usize()?)?)
                }
            };
            let h = EntryHead {
                pos: EntryPos(u32::try_from(pos).ok()?),
                role: ROLES.get(usize::try_from(role & 127).ok()?)?,
                on_branch: role & 128 != 0,
                id,
                line: LineNo(line),
                offset: ByteOffset(offset),
            };
            let take = q.head_wanted(&h);
            let first = plan.found.len();
            for _ in 0..r.varint()? {
                let field = *FIELDS.get(r.varint_usize()?)?;
                let block = match r.varint()? {
                    0 => None,
                    b => Some(u32::try_from(b - 1).ok()?),
                };
                let start = base.checked_add(r.varint_usize()?)?;
                let end = start.checked_add(r.varint_usize()?)?;
                if take && wanted(field, q.fields) {
                    // (The kind is not kept: only the span is read.)
                    plan.found.push(Found {
                        field,
                        block,
                        at: At::new(start, end, Kind::Null),
                    });
                }
            }
            if plan.found.len() > first {
                plan.entries.push((h, ts, first..plan.found.len()));
            }
        }
        Some(plan)
    }

    /// The bytes an entry reads: its searched strings and its timestamp.
    fn span(&self, k: usize) -> Range<usize> {
        let (_, ts, f) = &self.entries[k];
        let strings = &self.found[f.clone()];
        let start = strings
            .iter()
            .map(|f| f.at.start)
            .chain(ts.as_ref().map(|t| t.start))
            .min();
        let end = strings.iter().map(|f| f.at.end).chain(ts.as_ref().map(|t| t.end)).max();
        start.unwrap_or(0)..end.unwrap_or(0)
    }

    /// The byte ranges to read, in file order: each entry's in one range, ranges less
    /// than `gap` bytes apart merged.
    pub(crate) fn ranges(&self, gap: usize) -> Vec<Range<usize>> {
        let mut out: Vec<Range<usize>> = Vec::new();
        for k in 0..self.entries.len() {
            let r = self.span(k);
            match out.last_mut() {
                Some(last) if r.start >= last.start && r.start <= last.end.saturating_add(gap) => {
                    last.end = last.end.max(r.end);
                }
                _ => out.push(r),
            }
        }
        out
    }

    /// Run the query over `chunks`, the file's bytes that [`Plan::ranges`] names (each
    /// with where it starts in the file; the whole file is one chunk at 0). `None` when
    /// an entry's bytes are in no chunk.
    pub(crate) fn search(&self, q: &Query, chunks: &[(usize, &[u8])]) -> Option<Vec<Hit>> {
        let mut hits = Vec::new();
        let mut left = q.max_per_session.unwrap_or(usize::MAX);
        let mut shifted = Vec::new();
        let mut c = 0;
        for (k, (h, ts, f)) in self.entries.iter().enumerate() {
            if left == 0 {
                break;
            }
            let span = self.span(k);
            let within = |&(at, b): &(usize, &[u8])| at <= span.start && span.end <= at + b.len();
            // Entries are in file order, and so are the chunks (a map in another order
            // looks from the first chunk again).
            if !chunks.get(c).is_some_and(within) {
                c = chunks.iter().position(within)?;
            }
            let (at, bytes) = chunks[c];
            shifted.clear();
            shifted.extend(self.found[f.clone()].iter().map(|x| Found {
                at: At::new(x.at.start - at, x.at.end - at, Kind::Null),
                ..*x
            }));
            let ts = ts.as_ref().map(|t| &bytes[t.start - at..t.end - at]);
            entry_hits(q, h, bytes, &shifted, ts, &mut left, &mut hits)?;
        }
        Some(hits)
    }
}

/// Search `bytes` (the file the map was built from) through its `map`: the hits of
/// [`super::search_source`] on those bytes. `None` when the map does not decode or does
/// not fit the bytes.
pub(crate) fn search_map(bytes: &[u8], map: &[u8], q: &Query) -> Option<Vec<Hit>> {
    let mut hits = Plan::of(map, q)?.search(q, &[(0, bytes)])?;
    super::fill_label_targets(&mut hits, |h| super::line_in(bytes, h.offset.0));
    Some(hits)
}

/// The stored entry (sketches and map) built from `bytes` (`None`: no map could be
/// built): for the twin's check.
#[cfg(any(test, feature = "internals"))]
pub(crate) fn entry_of(bytes: &[u8]) -> Option<Vec<u8>> {
    let source = crate::source::Source::from_bytes(bytes.to_vec());
    let s = Session::from_source(source, super::open_options(super::FileOptions::default())).ok()?;
    build(&s).ok()
}

/// The map path on bytes in memory, as a search through a stored map runs it: the map
/// built, then the query run over only the byte ranges its plan reads (each copied out
/// alone, none merged): for the tests and the fuzz target that hold it to the twin.
/// `Ok(None)`: the map did not fit the bytes it was built from (a bug).
///
/// # Errors
/// As [`super::search_source`].
#[cfg(any(test, feature = "internals"))]
pub(crate) fn search_bytes_mapped(bytes: &[u8], q: &Query) -> Result<Option<Vec<Hit>>> {
    let source = crate::source::Source::from_bytes(bytes.to_vec());
    let s = Session::from_source(source, super::open_options(super::FileOptions::default()))?;
    let m = build(&s)?;
    let Some(plan) = Plan::of(&m, q) else { return Ok(None) };
    let copies: Vec<(usize, Vec<u8>)> = plan
        .ranges(0)
        .into_iter()
        .map(|r| (r.start, bytes.get(r).unwrap_or_default().to_vec()))
        .collect();
    let chunks: Vec<(usize, &[u8])> = copies.iter().map(|(at, b)| (*at, b.as_slice())).collect();
    let mut hits = plan.search(q, &chunks);
    if let Some(h) = &mut hits {
        super::fill_label_targets(h, |x| super::line_in(bytes, x.offset.0));
    }
    Ok(hits)
}

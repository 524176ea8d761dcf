//! Building the index: one pass over the bytes, split into newline-aligned chunks indexed
//! in parallel (rayon), each line classified and its keys read, the parts merged in
//! order. The result does not depend on the split.

use super::*;
use crate::js::string::JsStr;
use crate::json::string::decode_string;
use crate::json::{Field, Kind};
use line::{Fields, Line, scan_line, scan_object_line};
use rayon::prelude::*;
use smallvec::SmallVec;

/// A field the scanner found valid no longer decodes: the bytes changed in between (a
/// mapped file rewritten by another process). The line is then recorded as skipped with
/// [`CHANGED`], never a panic inside a rayon worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Changed;

/// Why a line whose bytes changed while it was indexed is skipped.
const CHANGED: SkipReason = SkipReason::Changed;

/// Kinds of string data a key or type may carry, decoded.
pub(super) fn string_bytes<'a>(line: &'a [u8], f: &Field) -> Result<JsStr<'a>, Changed> {
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

pub(super) fn entry_type(line: &[u8], f: Option<Field>) -> Result<EntryType, Changed> {
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
pub(super) struct Part {
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
pub(super) fn index_chunk(bytes: &[u8], base: u64, limit: usize) -> Part {
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

impl Index {
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
    pub(super) fn append_part(&mut self, mut part: Part) {
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

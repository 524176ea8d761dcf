//! Where pi cannot even read a file: V8's maximum string length.
//!
//! pi 1.6.0's `loadEntriesFromFile` (`dist/core/session-manager.js`) reads the file in
//! chunks of [`READ_CHUNK`] bytes and keeps the text not yet split into lines in one
//! JavaScript string:
//!
//! ```js
//! pending += decoder.write(buffer.subarray(0, bytesRead));   // StringDecoder("utf8")
//! // ... every complete line of `pending` is parsed ...
//! pending = pending.slice(lineStart);                         // the unfinished line
//! ```
//!
//! A V8 string holds at most [`V8_MAX_STRING_LENGTH`] UTF-16 code units (2^29 - 24 on
//! 64-bit Node 20 and later); a `+=` that would go past it throws `RangeError: Invalid
//! string length`, and `SessionManager.open` with it, before pi looks at a single line.
//!
//! **The exact condition.** After the read of chunk `k` (file bytes `k·C .. (k+1)·C`,
//! `C` = 1 MiB; `readSync` on a regular file fills the buffer), `pending` holds the text
//! of the bytes from the start of the line that was unfinished before the read to the end
//! of the chunk, less the 1 to 3 bytes of a UTF-8 sequence cut by the chunk's end, which
//! the decoder keeps for the next write ([`held_back`]). So the longest `pending` a line
//! starting at byte `a` produces is, when its `\n` is at byte `n`, the text of
//! `a .. end(n)`, where `end(n)` is the end of the chunk holding `n` (with the bytes held
//! back at it; the end of the file for the last chunk): the rest of the line, its `\n`
//! and whatever follows in that chunk. For a last line without `\n`, `pending` ends at
//! the end of the file and `decoder.end()` adds one U+FFFD for an incomplete final
//! sequence, which is what a lossy decoding of `a ..` the end gives too. pi throws while
//! reading the first line (in file order) for which that text is longer than the limit.
//! A line shorter than the limit less one chunk can never do it (a UTF-8 byte gives at
//! most one UTF-16 unit), so only such lines are counted exactly ([`exceeds_bound`]).
//!
//! Invalid UTF-8 counts one U+FFFD per maximal invalid subsequence, as V8's decoder and
//! Rust's lossy decoding both do.
//!
//! ```
//! use pi_session::v8::{READ_CHUNK, V8_MAX_STRING_LENGTH, pending_overflow};
//! // A 600 MB ASCII line followed by `\n` at the very end of the file: every byte is one unit.
//! let len = 600_000_000u64;
//! let over = pending_overflow(0, len, len + 1, |r| r.end - r.start);
//! assert_eq!(over, Some(len + 1));
//! // The same number of bytes of three-byte characters is 200 M units: pi reads it.
//! assert_eq!(pending_overflow(0, len, len + 1, |r| (r.end - r.start) / 3), None);
//! # let _ = (READ_CHUNK, V8_MAX_STRING_LENGTH);
//! ```

use std::ops::Range;

/// V8's `String::kMaxLength` on 64-bit platforms (Node 20+): `2^29 - 24` UTF-16 units.
pub const V8_MAX_STRING_LENGTH: u64 = (1 << 29) - 24;

/// pi's read buffer (`SESSION_READ_BUFFER_SIZE`).
pub const READ_CHUNK: u64 = 1 << 20;

/// pi's exception when `pending` grows past the limit.
pub const PI_MESSAGE: &str = "RangeError: Invalid string length";

/// A line too long for pi's loader: where it is and how long `pending` would get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingOverflow {
    /// The line's first byte.
    pub offset: u64,
    /// Its length in bytes, without `\n`.
    pub len: u64,
    /// UTF-16 units `pending` would hold (more than [`V8_MAX_STRING_LENGTH`]).
    pub units: u64,
}

/// Whether a line of `len` bytes can make `pending` too long at all (a cheap bound: at
/// most one UTF-16 unit per byte, and `pending` reaches at most one chunk past the `\n`).
#[inline]
pub fn exceeds_bound(len: u64) -> bool {
    len + READ_CHUNK > V8_MAX_STRING_LENGTH
}

/// The bytes of the longest `pending` for the line at `start` of `len` bytes in a file of
/// `file_len` bytes, before the bytes held back at a chunk end are taken off: from the
/// line's start to the end of the chunk holding its `\n`, or to the end of the file.
pub fn pending_span(start: u64, len: u64, file_len: u64) -> Range<u64> {
    let nl = start + len;
    if nl >= file_len {
        return start..file_len;
    }
    let chunk_end = (nl / READ_CHUNK + 1) * READ_CHUNK;
    start..chunk_end.min(file_len)
}

/// The classification: `Some(units)` when the line at `start` (`len` bytes without `\n`)
/// of a file of `file_len` bytes makes pi's `pending` longer than V8 allows. `units` gives
/// the UTF-16 units `pending` holds for a span of the file (see [`pending_units`]); it is
/// called only for lines over the [`exceeds_bound`] bound, so tests can give lengths
/// instead of bytes.
pub fn pending_overflow(start: u64, len: u64, file_len: u64, units: impl FnOnce(Range<u64>) -> u64) -> Option<u64> {
    if !exceeds_bound(len) {
        return None;
    }
    let n = units(pending_span(start, len, file_len));
    (n > V8_MAX_STRING_LENGTH).then_some(n)
}

/// How many bytes at the end of `chunk` Node's UTF-8 `StringDecoder` keeps back for the
/// next `write` (an incomplete sequence), as `src/string_decoder.cc` decides it.
pub fn held_back(chunk: &[u8]) -> usize {
    let mut buffered = 0;
    for i in (0..chunk.len()).rev() {
        buffered += 1;
        let b = chunk[i];
        if b & 0xC0 == 0x80 {
            if buffered >= 4 || i == 0 {
                return 0;
            }
            continue;
        }
        let missing = if b & 0xE0 == 0xC0 {
            2
        } else if b & 0xF0 == 0xE0 {
            3
        } else if b & 0xF8 == 0xF0 {
            4
        } else {
            return 0;
        };
        return if buffered >= missing { 0 } else { buffered };
    }
    0
}

/// UTF-16 units of a lossy decoding of `bytes` (one U+FFFD per maximal invalid
/// subsequence).
pub fn utf16_units(bytes: &[u8]) -> u64 {
    let mut n = 0u64;
    for c in bytes.utf8_chunks() {
        let v = c.valid().as_bytes();
        // A character is one unit per non-continuation byte, two for four-byte ones.
        n += v
            .iter()
            .map(|&b| u64::from(b & 0xC0 != 0x80) + u64::from(b >= 0xF0))
            .sum::<u64>();
        n += u64::from(!c.invalid().is_empty());
    }
    n
}

/// The UTF-16 units of `pending` for `span` of `bytes` (the whole file): the bytes held
/// back at a chunk end inside the file are not decoded yet.
pub fn pending_units(bytes: &[u8], span: Range<u64>) -> u64 {
    let (s, e) = (span.start as usize, span.end as usize);
    let e = if e < bytes.len() {
        let chunk_start = e.saturating_sub(READ_CHUNK as usize).max(s);
        e - held_back(&bytes[chunk_start..e])
    } else {
        e
    };
    utf16_units(&bytes[s..e.max(s)])
}

/// The first of `lines` (start offset and length without `\n`, in file order) on which
/// pi's loader throws, for a file of `bytes`.
pub fn first_overflow(bytes: &[u8], lines: impl IntoIterator<Item = (u64, u64)>) -> Option<PendingOverflow> {
    let file_len = bytes.len() as u64;
    lines.into_iter().find_map(|(offset, len)| {
        pending_overflow(offset, len, file_len, |r| pending_units(bytes, r)).map(|units| PendingOverflow {
            offset,
            len,
            units,
        })
    })
}

/// [`first_overflow`] over every line of `bytes`, split at `\n` (for files that are no
/// session, which have no index).
pub fn scan(bytes: &[u8]) -> Option<PendingOverflow> {
    if !exceeds_bound(bytes.len() as u64) {
        return None;
    }
    let mut start = 0usize;
    let lines = std::iter::from_fn(|| {
        if start >= bytes.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |o| start + o);
        let l = (start as u64, (end - start) as u64);
        start = end + 1;
        Some(l)
    });
    first_overflow(bytes, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: u64 = V8_MAX_STRING_LENGTH;
    const C: u64 = READ_CHUNK;
    fn ascii(r: Range<u64>) -> u64 {
        r.end - r.start
    }

    #[test]
    fn a_last_line_at_the_limit_and_one_past_it() {
        // No `\n`: pending is the line itself (the header line and its `\n` come first).
        let h = 100;
        for (len, over) in [(L - 1, false), (L, false), (L + 1, true), (L + 2, true)] {
            assert_eq!(pending_overflow(h, len, h + len, ascii).is_some(), over, "{len}");
        }
        // With a final `\n` that is the last byte, pending also holds the `\n`.
        for (len, over) in [(L - 2, false), (L - 1, false), (L, true)] {
            assert_eq!(pending_overflow(h, len, h + len + 1, ascii).is_some(), over, "{len}");
        }
    }

    #[test]
    fn what_follows_in_the_chunk_counts() {
        // A line of L - 50 bytes whose `\n` is 100 bytes before a chunk end, in a longer
        // file: pending reaches the chunk end, 99 bytes past the `\n`, L + 50 units.
        let chunk_end = (L / C + 2) * C;
        let at = |nl: u64, len: u64| pending_overflow(nl - len, len, u64::MAX, ascii);
        assert_eq!(
            pending_span(chunk_end - 100 - (L - 50), L - 50, u64::MAX),
            chunk_end - 100 - (L - 50)..chunk_end
        );
        assert_eq!(at(chunk_end - 100, L - 50), Some(L + 50));
        // The same line whose `\n` is the last byte of its chunk: L - 49 units.
        assert_eq!(at(chunk_end - 1, L - 50), None);
        // ... or the first byte of the next chunk: pending runs a whole chunk further.
        assert_eq!(at(chunk_end, L - 50), Some(L - 50 + C));
        // Exactly at the limit, then one past it.
        assert_eq!(at(chunk_end - 100, L - 100), None);
        assert_eq!(at(chunk_end - 100, L - 99), Some(L + 1));
        // The end of the file cuts the last chunk short: 40 bytes follow the `\n`.
        let file_len = chunk_end - 60;
        let near_end = |len: u64| pending_overflow(chunk_end - 100 - len, len, file_len, ascii);
        assert_eq!(near_end(L - 40), None);
        assert_eq!(near_end(L - 39), Some(L + 1));
    }

    #[test]
    fn multi_byte_text_counts_utf16_units_not_bytes() {
        // 2 bytes a unit (e.g. é): over the limit in bytes, under it in units.
        let len = L + 1000;
        let half = |r: Range<u64>| (r.end - r.start) / 2;
        assert_eq!(pending_overflow(0, len, len, half), None);
        // Four-byte characters are two units for four bytes: the same.
        assert_eq!(pending_overflow(0, 2 * L, 2 * L, half), None);
        assert_eq!(pending_overflow(0, 2 * L + 2, 2 * L + 2, half), Some(L + 1));
        // Short lines are never counted.
        assert_eq!(
            pending_overflow(0, L - C, u64::MAX, |_| unreachable!("under the bound")),
            None
        );
    }

    #[test]
    fn units_and_held_back_bytes() {
        assert_eq!(utf16_units(b"abc"), 3);
        assert_eq!(utf16_units("é€😀".as_bytes()), 1 + 1 + 2);
        assert_eq!(utf16_units(b"\xff\xfe"), 2);
        assert_eq!(utf16_units(b"a\xe2\x82"), 2);
        assert_eq!(utf16_units(b"\xe2\x82a"), 2);
        assert_eq!(held_back(b"a"), 0);
        assert_eq!(held_back(b"a\xe2\x82"), 2);
        assert_eq!(held_back(b"a\xe2\x82\xac"), 0);
        assert_eq!(held_back(b"a\xf0"), 1);
        assert_eq!(held_back(b"a\xf0\x9f\x98"), 3);
        assert_eq!(held_back(b"a\x80\x80\x80\x80"), 0);
        assert_eq!(held_back(b"a\xff"), 0);
        // A chunk end inside a character: pending stops before it.
        let mut bytes = vec![b'x'; C as usize - 1];
        bytes.extend_from_slice("€yz".as_bytes());
        assert_eq!(pending_units(&bytes, 0..C), C - 1);
        assert_eq!(pending_units(&bytes, 0..bytes.len() as u64), C + 2);
    }

    #[test]
    fn small_files_are_not_scanned() {
        assert_eq!(scan(b"{\"type\":\"session\"}\n{}\n"), None);
    }

    /// The review's file: a 536,871,048-byte line (`cargo test --profile ci -- --ignored`;
    /// 540 MB of memory).
    #[test]
    #[ignore]
    fn the_real_540_mb_line() {
        let mut b =
            br#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#.to_vec();
        b.push(b'\n');
        let start = b.len() as u64;
        b.extend_from_slice(br#"{"type":"message","id":"m1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":""#);
        b.resize(b.len() + (32 << 24), b'x');
        b.extend_from_slice(b"\",\"timestamp\":1}}\n");
        let got = scan(&b).expect("pi throws");
        assert_eq!(got.offset, start);
        assert_eq!(got.len, b.len() as u64 - start - 1);
        assert_eq!(got.units, got.len + 1);
        let idx = crate::index::build(&b);
        assert_eq!(idx.pi_open_throws.map(|o| o.offset), Some(start));
        // The same bytes as two-byte characters fit (half the units).
        let body = start as usize + b[start as usize..].iter().position(|&c| c == b'x').expect("the text");
        for pair in b[body..body + (32 << 24)].chunks_exact_mut(2) {
            pair.copy_from_slice("é".as_bytes());
        }
        assert_eq!(scan(&b), None);
    }
}

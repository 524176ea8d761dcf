//! A file's *sketch*: which trigrams its searched strings hold, so that a search through
//! the cache can pass over a file that cannot hold a match without opening it.
//!
//! The prefilter's rule (`pattern.rs`) says a decoded string can hold a match only if
//! one of the pattern's pieces appears in its raw bytes, or the string holds a `\u`
//! escape of a character a piece may hold. The sketch keeps both facts of the strings of
//! the fields every search reads (not thinking, tool calls and tool results, which a
//! search reads when asked, and which are most of a file's bytes): whether any holds
//! such an escape, and the trigrams of their raw bytes, ASCII letters folded to lower
//! case (what occurs raw occurs folded, so folding both sides never loses a piece),
//! hashed into a bitmap of about four bits per distinct trigram. A search of those
//! fields alone passes over a file only when no string has such an escape and every
//! piece has a trigram missing from the bitmap: a bit set by another trigram can make a
//! file read for nothing, never a match missed. Pieces shorter than three bytes,
//! patterns without pieces, and searches of the other fields pass over nothing.
//!
//! Encoding, at the start of a stored map (`map.rs`):
//! ```text
//! flags   1 byte   bit 0: a string holds a relevant `\u` escape
//! log2    1 byte   the bitmap holds 2^log2 bits (MIN_LOG2..=MAX_LOG2)
//! bitmap  2^log2 / 8 bytes
//! ```

use super::{FieldKind, Fields};

/// Whether the strings of field `f` are sketched: those every search reads.
pub(crate) fn sketched(f: FieldKind) -> bool {
    !matches!(
        f,
        FieldKind::Thinking | FieldKind::ToolCall | FieldKind::ToolResult | FieldKind::Output
    )
}

/// The smallest bitmap: 512 bits.
const MIN_LOG2: u32 = 9;
/// The largest: 2^18 bits (32 KiB, the builder fits a core's first-level cache), for
/// files of more than ~65,000 distinct trigrams.
const MAX_LOG2: u32 = 18;
/// Bits per distinct trigram (about a fifth of the bits set).
const BITS_PER_TRIGRAM: usize = 4;

/// The trigram of three bytes, ASCII letters folded, hashed to `MAX_LOG2` bits (a
/// smaller bitmap takes its low bits).
#[inline(always)]
fn hash(a: u8, b: u8, c: u8) -> u32 {
    let t = u32::from(a.to_ascii_lowercase()) << 16
        | u32::from(b.to_ascii_lowercase()) << 8
        | u32::from(c.to_ascii_lowercase());
    t.wrapping_mul(0x9E37_79B1) >> (32 - MAX_LOG2)
}

/// A sketch being built: the full-size bitmap, folded when finished.
pub(crate) struct Builder {
    bits: Vec<u64>,
    escape: bool,
}

impl Builder {
    pub(crate) fn new() -> Builder {
        Builder {
            bits: vec![0; (1 << MAX_LOG2) / 64],
            escape: false,
        }
    }

    /// Add the raw bytes of one searched string of a [`sketched`] field, and whether
    /// they hold a relevant `\u` escape (`pattern::has_relevant_escape`).
    pub(crate) fn add(&mut self, raw: &[u8], escape: bool) {
        self.escape |= escape;
        for w in raw.windows(3) {
            let h = hash(w[0], w[1], w[2]);
            self.bits[(h >> 6) as usize] |= 1 << (h & 63);
        }
    }

    /// The sketch, encoded; the builder is left empty for the next file.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        let distinct: usize = self.bits.iter().map(|w| w.count_ones() as usize).sum();
        let want = (distinct * BITS_PER_TRIGRAM).next_power_of_two();
        let log2 = want.trailing_zeros().clamp(MIN_LOG2, MAX_LOG2);
        let words = (1usize << log2) / 64;
        let mut folded = vec![0u64; words];
        if distinct > 0 {
            for (i, w) in self.bits.iter().enumerate() {
                folded[i % words] |= w;
            }
            self.bits.fill(0);
        }
        out.push(u8::from(self.escape));
        out.push(log2 as u8);
        for w in folded {
            out.extend_from_slice(&w.to_le_bytes());
        }
        self.escape = false;
    }
}

/// The length of the sketch at the start of `b`, when it is one.
pub(crate) fn len(b: &[u8]) -> Option<usize> {
    let (&flags, rest) = b.split_first()?;
    let &log2 = rest.first()?;
    let log2 = u32::from(log2);
    if flags > 1 || !(MIN_LOG2..=MAX_LOG2).contains(&log2) {
        return None;
    }
    let n = 2 + (1usize << log2) / 8;
    (b.len() >= n).then_some(n)
}

/// What a query asks of a sketch: the hashed trigrams of each of its pieces (a file may
/// match when, for some piece, all are there).
#[derive(Clone, Debug)]
pub(crate) struct Probe {
    pieces: Vec<Vec<u32>>,
}

impl Probe {
    /// The probe of the prefilter's pieces; `None` when it cannot pass over any file (no
    /// pieces, or one shorter than three bytes).
    pub(crate) fn of(pieces: &[String]) -> Option<Probe> {
        if pieces.is_empty() {
            return None;
        }
        let mut out: Vec<Vec<u32>> = Vec::with_capacity(pieces.len());
        for p in pieces {
            let b = p.as_bytes();
            if b.len() < 3 {
                return None;
            }
            let mut t: Vec<u32> = b.windows(3).map(|w| hash(w[0], w[1], w[2])).collect();
            t.sort_unstable();
            t.dedup();
            if !out.contains(&t) {
                out.push(t);
            }
        }
        Some(Probe { pieces: out })
    }

    /// Whether the file whose sketch starts `b` may hold a match for a search of
    /// `fields`; `None` when `b` holds no sketch.
    pub(crate) fn may_match(&self, b: &[u8], fields: Fields) -> Option<bool> {
        let n = len(b)?;
        if fields.thinking || fields.tool_calls || fields.tool_results || b[0] & 1 != 0 {
            return Some(true);
        }
        let bitmap = &b[2..n];
        let mask = (bitmap.len() * 8 - 1) as u32;
        let set = |h: u32| {
            let h = h & mask;
            bitmap[(h >> 3) as usize] & (1 << (h & 7)) != 0
        };
        Some(self.pieces.iter().any(|p| p.iter().all(|&h| set(h))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Fields = Fields {
        thinking: true,
        tool_calls: true,
        tool_results: true,
    };

    fn sketch(strings: &[(FieldKind, &[u8])]) -> Vec<u8> {
        let mut b = Builder::new();
        for (f, s) in strings {
            if sketched(*f) {
                b.add(s, crate::search::pattern::has_relevant_escape(s));
            }
        }
        let mut out = Vec::new();
        b.finish(&mut out);
        out
    }

    fn probe(p: &[&str]) -> Option<Probe> {
        Probe::of(&p.iter().map(|s| (*s).to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn a_piece_in_a_string_is_found_folded_and_one_across_strings_is_not() {
        let s = sketch(&[(FieldKind::Text, b"Hello World"), (FieldKind::Text, b"abc")]);
        assert_eq!(len(&s), Some(s.len()));
        assert_eq!(s.len(), 2 + 512 / 8);
        let yes = |p: &[&str]| probe(p).unwrap().may_match(&s, Fields::default()).unwrap();
        assert!(yes(&["hello"]));
        assert!(yes(&["LLO WOR"]));
        assert!(yes(&["zzz", "abc"]));
        assert!(!yes(&["zzz"]));
        // "ldab" spans the two strings: its trigrams "lda" and "dab" are in neither.
        assert!(!yes(&["ldab"]));
        // Short pieces and no pieces pass over nothing.
        assert!(probe(&["ab"]).is_none());
        assert!(probe(&[]).is_none());
    }

    #[test]
    fn a_search_of_the_fields_not_sketched_passes_over_nothing() {
        let s = sketch(&[
            (FieldKind::Text, b"text"),
            (FieldKind::Thinking, b"pondering"),
            (FieldKind::ToolCall, b"argument"),
            (FieldKind::Output, b"printed"),
        ]);
        let p = probe(&["ponder"]).unwrap();
        assert!(!p.may_match(&s, Fields::default()).unwrap());
        assert!(p.may_match(&s, ALL).unwrap());
        for one in 0..3 {
            let f = Fields {
                thinking: one == 0,
                tool_calls: one == 1,
                tool_results: one == 2,
            };
            assert!(p.may_match(&s, f).unwrap());
        }
        assert!(probe(&["text"]).unwrap().may_match(&s, Fields::default()).unwrap());
    }

    #[test]
    fn an_escape_that_may_hide_a_piece_makes_every_piece_possible() {
        let s = sketch(&[(FieldKind::Text, b"plain"), (FieldKind::Text, br"caf\u00e9")]);
        assert!(probe(&["zzz"]).unwrap().may_match(&s, Fields::default()).unwrap());
        // Escapes of control characters hide no piece's character.
        let s = sketch(&[(FieldKind::Text, br"\u001b[31mred\u0000")]);
        assert!(!probe(&["zzz"]).unwrap().may_match(&s, Fields::default()).unwrap());
        assert!(probe(&["red"]).unwrap().may_match(&s, Fields::default()).unwrap());
        // An escape in a field not sketched does not count.
        let s = sketch(&[(FieldKind::ToolResult, br"caf\u00e9")]);
        assert!(!probe(&["zzz"]).unwrap().may_match(&s, Fields::default()).unwrap());
    }

    #[test]
    fn the_bitmap_grows_with_the_trigrams_and_damage_is_refused() {
        let big: Vec<u8> = (0..200_000u32).flat_map(|i| format!("{i:x} ").into_bytes()).collect();
        let s = sketch(&[(FieldKind::Text, &big)]);
        assert!(s.len() > 2 + 512 / 8);
        assert!(probe(&["1f3a"]).unwrap().may_match(&s, Fields::default()).unwrap());
        assert_eq!(len(&s[..s.len() - 1]), None);
        let mut bad = s.clone();
        bad[1] = 30;
        assert_eq!(len(&bad), None);
        bad[1] = s[1];
        bad[0] = 2;
        assert_eq!(len(&bad), None);
    }
}

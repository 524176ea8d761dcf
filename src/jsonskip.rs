//! Fast skipping of JSON values for the listing: the same accept/reject decisions as
//! [`crate::scan`]'s `skip_string` / `skip_value` (its slow, obvious twin, checked against
//! it in the tests below), but strings are scanned 64 bytes at a time.
//!
//! Per 64-byte block, bitmasks of quotes, backslashes and control bytes are computed with
//! plain loops that the compiler turns into vector compares and mask extractions (no
//! `unsafe`, no run-time feature detection). Which bytes are escaped is derived from the
//! backslash mask with simdjson's carry trick, so a backslash every few bytes (code in tool
//! outputs) does not slow the scan down; only the escaped bytes themselves are looked at
//! one by one (the escape letter, and the four hex digits of `\u`).
//!
//! One difference from `JSON.parse`: `\n` and `\r` are not white space here but end the
//! line, as pi's `readline` does when it lists sessions.

use crate::scan::Kind;
use crate::value::{SyntaxError, number_end};

fn err(offset: usize, reason: &'static str) -> SyntaxError {
    SyntaxError { offset, reason }
}

const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HI: u64 = 0x8080_8080_8080_8080;
const ONES: u64 = 0x0101_0101_0101_0101;

/// 0x80 in every byte of `w` that is zero, 0 elsewhere (exact, no false positives).
#[inline(always)]
fn zero_bytes(w: u64) -> u64 {
    !(((w & LO7).wrapping_add(LO7)) | w) & HI
}

/// The high bits of the 8 bytes packed into an 8-bit mask (byte i -> bit i).
#[cfg(test)]
fn pack(m: u64) -> u64 {
    ((m >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// Whether a 64-byte block holds a quote, a backslash or a control byte.
#[inline(always)]
fn any_special(c: &[u8; 64]) -> bool {
    let mut acc = 0u8;
    for &x in c {
        acc |= u8::from(x == b'"') | u8::from(x == b'\\') | u8::from(x < 0x20);
    }
    acc != 0
}

/// Quote, backslash and control-byte masks of a 64-byte block (bit i = byte i), by SWAR
/// over eight 8-byte words. (Kept for the block-wise twin in the tests.)
#[cfg(test)]
fn masks(c: &[u8; 64]) -> (u64, u64, u64) {
    let mut q = 0u64;
    let mut bs = 0u64;
    let mut ctl = 0u64;
    for k in 0..8 {
        let w = u64::from_le_bytes(c[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
        q |= pack(zero_bytes(w ^ (ONES * u64::from(b'"')))) << (k * 8);
        bs |= pack(zero_bytes(w ^ (ONES * u64::from(b'\\')))) << (k * 8);
        ctl |= pack(zero_bytes(w & (ONES * 0xE0))) << (k * 8);
    }
    (q, bs, ctl)
}

/// Masks of a 64-byte block (bit i = byte i): quotes, backslashes, and the letters `n`
/// and `t` (the commonest escapes after `\\"` and `\\\\`), plus whether it holds a control
/// byte: byte compares the compiler vectorises, then 8 bytes of 0/1 packed into 8 bits with
/// one multiplication.
#[inline(always)]
fn block_masks(c: &[u8; 64]) -> (u64, u64, u64, bool) {
    let mut eq_q = [0u8; 64];
    let mut eq_b = [0u8; 64];
    let mut eq_nt = [0u8; 64];
    let mut ctl = 0u8;
    for i in 0..64 {
        eq_q[i] = u8::from(c[i] == b'"');
        eq_b[i] = u8::from(c[i] == b'\\');
        eq_nt[i] = u8::from(c[i] == b'n') | u8::from(c[i] == b't');
        ctl |= u8::from(c[i] < 0x20);
    }
    let pack8 = |a: &[u8; 64], k: usize| {
        let w = u64::from_le_bytes(a[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
        (w.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (k * 8)
    };
    let (mut q, mut bs, mut nt) = (0u64, 0u64, 0u64);
    for k in 0..8 {
        q |= pack8(&eq_q, k);
        bs |= pack8(&eq_b, k);
        nt |= pack8(&eq_nt, k);
    }
    (q, bs, nt, ctl != 0)
}

/// Control-byte mask of a 64-byte block (rare: only when one is there).
#[cold]
fn control_mask(c: &[u8; 64]) -> u64 {
    c.iter()
        .enumerate()
        .fold(0u64, |m, (i, &x)| m | (u64::from(x < 0x20) << i))
}

/// 0x80 in every byte of `w` that is a quote, a backslash or a control byte.
#[inline(always)]
fn special_bytes(w: u64) -> u64 {
    zero_bytes(w ^ (ONES * u64::from(b'"'))) | zero_bytes(w ^ (ONES * u64::from(b'\\'))) | zero_bytes(w & (ONES * 0xE0))
}

/// Bits of the bytes escaped by a backslash (simdjson's `find_escaped`); `prev` carries
/// "the first byte of the next block is escaped".
#[inline(always)]
fn find_escaped(backslash: u64, prev: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let backslash = backslash & !*prev;
    let follows_escape = (backslash << 1) | *prev;
    let odd_starts = backslash & !EVEN & !follows_escape;
    let (seq_even, overflow) = odd_starts.overflowing_add(backslash);
    *prev = u64::from(overflow);
    let invert = seq_even << 1;
    (EVEN ^ invert) & follows_escape
}

/// Escape letters JSON allows after a backslash (`u` is checked further).
static ESCAPE_OK: [bool; 256] = {
    let mut t = [false; 256];
    let ok = b"\"\\/bfnrtu";
    let mut k = 0;
    while k < ok.len() {
        t[ok[k] as usize] = true;
        k += 1;
    }
    t
};

#[inline]
fn check_escape(b: &[u8], p: usize) -> Result<(), SyntaxError> {
    let Some(&c) = b.get(p) else {
        return Err(err(b.len(), "unterminated string"));
    };
    if !ESCAPE_OK[usize::from(c)] {
        return Err(err(p, "invalid escape"));
    }
    if c == b'u' && !b.get(p + 1..p + 5).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
        return Err(err(p + 1, "invalid \\u escape"));
    }
    Ok(())
}

/// Skip the string whose opening quote is at `i`; returns the offset past the closing
/// quote and whether it held escapes.
///
/// The first bytes (keys, ids, short values) eight at a time (SWAR); then 64-byte blocks:
/// quote and backslash bitmasks, the escaped bytes found with simdjson's carry trick, so
/// that dense escapes (code in tool outputs) cost no branch each; blocks without any quote,
/// backslash or control byte (base64 image data) are passed over with one vectorised test.
pub(crate) fn skip_string(b: &[u8], i: usize) -> Result<(usize, bool), SyntaxError> {
    let mut j = i + 1;
    while j + 8 <= b.len() && j < i + 33 {
        let w = u64::from_le_bytes(b[j..j + 8].try_into().expect("8 bytes"));
        let special = special_bytes(w);
        if special == 0 {
            j += 8;
            continue;
        }
        j += (special.trailing_zeros() / 8) as usize;
        match b[j] {
            b'"' => return Ok((j + 1, false)),
            b'\\' => break,
            _ => return Err(err(j, "control character in string")),
        }
    }
    let mut prev = 0u64;
    let mut escaped_any = false;
    loop {
        let mut pad = [b' '; 64];
        let (block, valid): (&[u8; 64], u64) = if j + 64 <= b.len() {
            (b[j..j + 64].try_into().expect("a 64-byte slice"), u64::MAX)
        } else {
            let rem = b.len().saturating_sub(j);
            pad[..rem].copy_from_slice(&b[j..]);
            (&pad, (1u64 << rem) - 1)
        };
        if prev == 0 && valid == u64::MAX && !any_special(block) {
            j += 64;
            continue;
        }
        let (q, bs, nt, has_ctl) = block_masks(block);
        let (q, bs) = (q & valid, bs & valid);
        let escaped = find_escaped(bs, &mut prev);
        let uq = q & !escaped;
        let before = if uq != 0 {
            (uq & uq.wrapping_neg()) - 1
        } else {
            u64::MAX
        };
        if has_ctl {
            let ctl = control_mask(block) & valid & before;
            if ctl != 0 {
                return Err(err(j + ctl.trailing_zeros() as usize, "control character in string"));
            }
        }
        escaped_any |= bs & before != 0;
        // `\\"`, `\\\\`, `\\n` and `\\t` need no further look; the rest one by one.
        let mut e = escaped & before & !(q | bs | nt);
        while e != 0 {
            check_escape(b, j + e.trailing_zeros() as usize)?;
            e &= e - 1;
        }
        if uq != 0 {
            return Ok((j + uq.trailing_zeros() as usize + 1, escaped_any));
        }
        if valid != u64::MAX {
            return Err(err(b.len(), "unterminated string"));
        }
        j += 64;
    }
}

/// The word-wise twin of [`skip_string`], for the tests.
#[cfg(test)]
fn skip_string_words(b: &[u8], i: usize) -> Result<(usize, bool), SyntaxError> {
    let mut j = i + 1;
    let mut escaped_any = false;
    loop {
        while j < b.len() && !matches!(b[j], b'"' | b'\\' | 0..=0x1f) {
            j += 1;
        }
        if j == b.len() {
            return Err(err(b.len(), "unterminated string"));
        }
        match b[j] {
            b'"' => return Ok((j + 1, escaped_any)),
            b'\\' => {
                escaped_any = true;
                check_escape(b, j + 1)?;
                j += if b[j + 1] == b'u' { 6 } else { 2 };
            }
            _ => return Err(err(j, "control character in string")),
        }
    }
}

/// The block-wise twin of [`skip_string`] (simdjson's escape carry), for the tests.
#[cfg(test)]
fn skip_string_blocks(b: &[u8], i: usize) -> Result<(usize, bool), SyntaxError> {
    let mut j = i + 1;
    let mut prev = 0u64;
    let mut escaped_any = false;
    loop {
        let mut pad = [b' '; 64];
        let rem = b.len().saturating_sub(j).min(64);
        pad[..rem].copy_from_slice(&b[j..j + rem]);
        let valid = if rem == 64 { u64::MAX } else { (1u64 << rem) - 1 };
        let (q, bs, ctl) = masks(&pad);
        let (q, bs, ctl) = (q & valid, bs & valid, ctl & valid);
        let escaped = find_escaped(bs, &mut prev);
        let uq = q & !escaped;
        let before = if uq != 0 {
            (uq & uq.wrapping_neg()) - 1
        } else {
            u64::MAX
        };
        if ctl & before != 0 {
            return Err(err(j, "control character in string"));
        }
        escaped_any |= bs & before != 0;
        let mut e = escaped & before;
        while e != 0 {
            check_escape(b, j + e.trailing_zeros() as usize)?;
            e &= e - 1;
        }
        if uq != 0 {
            return Ok((j + uq.trailing_zeros() as usize + 1, escaped_any));
        }
        if rem < 64 {
            return Err(err(b.len(), "unterminated string"));
        }
        j += 64;
    }
}

#[inline]
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    // `\n` and `\r` end lines for the listing (pi's readline), so they are no white space.
    while i < b.len() && matches!(b[i], b' ' | b'\t') {
        i += 1;
    }
    i
}

/// Skip `"key" :` and the white space after it; returns where the value starts.
fn skip_key(b: &[u8], j: usize) -> Result<usize, SyntaxError> {
    if b.get(j) != Some(&b'"') {
        return Err(err(j, "expected a string key"));
    }
    let (k, _) = skip_string(b, j)?;
    let j = skip_ws(b, k);
    if b.get(j) != Some(&b':') {
        return Err(err(j, "expected ':'"));
    }
    Ok(skip_ws(b, j + 1))
}

/// Skip a string, number or literal starting at `i`.
fn skip_scalar(b: &[u8], i: usize) -> Result<(usize, Kind), SyntaxError> {
    let lit = |word: &[u8], kind| {
        if b[i..].starts_with(word) {
            Ok((i + word.len(), kind))
        } else {
            Err(err(i, "invalid literal"))
        }
    };
    match b.get(i) {
        Some(b'"') => {
            let (end, escaped) = skip_string(b, i)?;
            Ok((end, Kind::String { escaped }))
        }
        Some(b't') => lit(b"true", Kind::True),
        Some(b'f') => lit(b"false", Kind::False),
        Some(b'n') => lit(b"null", Kind::Null),
        Some(b'-' | b'0'..=b'9') => {
            let end = number_end(b, i).map_err(|offset| err(offset, "invalid number"))?;
            Ok((end, Kind::Number))
        }
        None => Err(err(i, "unexpected end of JSON input")),
        Some(_) => Err(err(i, "unexpected character")),
    }
}

/// Skip one JSON value starting at `i` (no leading white space); iterative, any depth.
pub(crate) fn skip_value(b: &[u8], i: usize) -> Result<(usize, Kind), SyntaxError> {
    let first_kind = match b.get(i) {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        _ => return skip_scalar(b, i),
    };
    // Open containers, innermost last (true = object).
    let mut stack: smallvec::SmallVec<[bool; 64]> = smallvec::SmallVec::new();
    let mut j = i;
    loop {
        match b.get(j) {
            Some(b'{') => {
                j = skip_ws(b, j + 1);
                if b.get(j) == Some(&b'}') {
                    j += 1;
                } else {
                    stack.push(true);
                    j = skip_key(b, j)?;
                    continue;
                }
            }
            Some(b'[') => {
                j = skip_ws(b, j + 1);
                if b.get(j) == Some(&b']') {
                    j += 1;
                } else {
                    stack.push(false);
                    continue;
                }
            }
            _ => j = skip_scalar(b, j)?.0,
        }
        loop {
            let Some(&is_obj) = stack.last() else {
                return Ok((j, first_kind));
            };
            j = skip_ws(b, j);
            match (b.get(j), is_obj) {
                (Some(b','), true) => {
                    j = skip_key(b, skip_ws(b, j + 1))?;
                    break;
                }
                (Some(b','), false) => {
                    j = skip_ws(b, j + 1);
                    break;
                }
                (Some(b'}'), true) | (Some(b']'), false) => {
                    j += 1;
                    stack.pop();
                }
                (_, true) => return Err(err(j, "expected ',' or '}'")),
                (_, false) => return Err(err(j, "expected ',' or ']'")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(s: &[u8]) {
        let blocks = skip_string_blocks(s, 0);
        let words = skip_string_words(s, 0);
        let fast = skip_string(s, 0);
        assert_eq!(blocks.is_ok(), fast.is_ok(), "{:?}", String::from_utf8_lossy(s));
        if let (Ok(a), Ok(b)) = (blocks, fast) {
            assert_eq!(a, b, "{:?}", String::from_utf8_lossy(s));
        }
        assert_eq!(blocks.is_ok(), words.is_ok(), "{:?}", String::from_utf8_lossy(s));
        if let (Ok(a), Ok(b)) = (blocks, words) {
            assert_eq!(a, b, "{:?}", String::from_utf8_lossy(s));
        }
        let slow = crate::scan::skip_value(s, 0).map(|r| (r.0, r.1));
        let fast = skip_value(s, 0);
        assert_eq!(slow.is_ok(), fast.is_ok(), "{:?}", String::from_utf8_lossy(s));
        if let (Ok(a), Ok(b)) = (slow, fast) {
            assert_eq!(a, b, "{:?}", String::from_utf8_lossy(s));
        }
    }

    #[test]
    fn every_escape_at_every_offset() {
        let escapes: [&[u8]; 14] = [
            b"\\n", b"\\\"", b"\\\\", b"\\/", b"\\u00e9", b"\\ud800", b"\\x", b"\\u12g4", b"\\u12", b"\\", b"\x01",
            b"\"", b"\\\\\\", b"\xff",
        ];
        for len in 0..140 {
            for off in 0..len.min(130) {
                for e in escapes {
                    let mut s = vec![b'"'];
                    s.extend(std::iter::repeat_n(b'a', off));
                    s.extend_from_slice(e);
                    s.extend(std::iter::repeat_n(b'b', len - off));
                    s.push(b'"');
                    same(&s);
                    s.pop();
                    same(&s);
                    s.extend_from_slice(b"\\\\\"");
                    same(&s);
                }
            }
        }
    }

    #[test]
    fn runs_of_backslashes() {
        for n in 0..200 {
            for pos in [0usize, 1, 30, 62, 63, 64, 65, 127] {
                let mut s = vec![b'"'];
                s.extend(std::iter::repeat_n(b'x', pos));
                s.extend(std::iter::repeat_n(b'\\', n));
                s.extend_from_slice(b"\"tail\" more\"");
                same(&s);
            }
        }
    }

    #[test]
    fn swar_masks() {
        let mut c = [0u8; 64];
        for (i, x) in c.iter_mut().enumerate() {
            *x = [b'"', b'\\', 0x1f, 0x20, b'a', 0xff, 0x9f, 0x00][(i * 5 + i / 8) % 8];
        }
        let (q, bs, ctl) = masks(&c);
        assert_eq!((q, bs), (block_masks(&c).0, block_masks(&c).1));
        assert_eq!(ctl, control_mask(&c));
        for (i, &x) in c.iter().enumerate() {
            assert_eq!(q >> i & 1 == 1, x == b'"');
            assert_eq!(bs >> i & 1 == 1, x == b'\\');
            assert_eq!(ctl >> i & 1 == 1, x < 0x20);
        }
    }

    #[test]
    fn random_strings() {
        // xorshift over a small alphabet rich in what matters.
        let alphabet = b"a\"\\u0fn\x01{}[],:";
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 150) as usize;
            let mut s = vec![b'"'];
            let mut y = x;
            for _ in 0..len {
                y ^= y << 13;
                y ^= y >> 7;
                y ^= y << 17;
                s.push(alphabet[(y % alphabet.len() as u64) as usize]);
            }
            same(&s);
        }
    }

    #[test]
    fn structures() {
        for s in [
            &b"{\"a\":[1,2,{\"b\":null}],\"c\":\"x\\\"y\"}"[..],
            b"[[[[]]]]",
            b"[1,]",
            b"{\"a\" 1}",
            b"-0.5e3",
            b"tru",
            b"[\"a\",\"b\"",
        ] {
            same(s);
        }
    }
}

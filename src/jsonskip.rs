//! Skipping JSON values for the listing: the same accept/reject decisions as
//! [`crate::scan`]'s `skip_value` (its twin in the tests below), with strings skipped by
//! the crate's block-wise kernels ([`crate::simd`]: AVX2, SSE2 or SWAR), containers
//! walked with a small inline stack.
//!
//! One difference from `JSON.parse`: `\n` and `\r` are not white space here but end the
//! line, as pi's `readline` does when it lists sessions.

use crate::scan::Kind;
use crate::value::{SyntaxError, number_end};

fn err(offset: usize, reason: &'static str) -> SyntaxError {
    SyntaxError { offset, reason }
}

/// Skip the string whose opening quote is at `i`; returns the offset past the closing
/// quote and whether it held escapes. The crate's block-wise kernel ([`crate::simd`]).
#[inline(always)]
pub(crate) fn skip_string(b: &[u8], i: usize) -> Result<(usize, bool), SyntaxError> {
    crate::scan::skip_string(b, i)
}

#[inline(always)]
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    // `\n` and `\r` end lines for the listing (pi's readline), so they are no white space.
    while i < b.len() && matches!(b[i], b' ' | b'\t') {
        i += 1;
    }
    i
}

/// Skip `"key" :` and the white space after it; returns where the value starts.
#[inline(always)]
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
#[inline(always)]
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
#[inline(always)]
pub(crate) fn skip_value(b: &[u8], i: usize) -> Result<(usize, Kind), SyntaxError> {
    let first_kind = match b.get(i) {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        _ => return skip_scalar(b, i),
    };
    match crate::simd::skip_container::<{ crate::structural::WS_BLANK }>(b, i) {
        Some(end) => Ok((end, first_kind)),
        None => skip_container_exact(b, i, first_kind),
    }
}

/// The descent walk over the container at `i`: the twin of the structural walker, and
/// the one that reports errors.
#[inline(always)]
pub(crate) fn skip_container_exact(b: &[u8], i: usize, first_kind: Kind) -> Result<(usize, Kind), SyntaxError> {
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
        let slow = crate::scan::skip_value::<true>(s, 0).map(|r| (r.0, r.1));
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

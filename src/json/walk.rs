//! THE exact JSON walker: skips and checks values exactly as `JSON.parse` accepts them,
//! and reports the offset of the first error. Every reader of the crate walks JSON
//! through it, in one of three white-space flavours ([`super::ws`]): the index's lines
//! ([`ws::Line`]), the listing's readline lines ([`ws::Blank`]), and whole JSON texts
//! ([`ws::Json`]).
//!
//! Containers first go to the structural walker ([`super::structural`], through
//! [`super::dispatch`]), which vouches for nearly all of them; when it cannot (an error,
//! nesting past 64, a CPU without AVX-512), the descent walk below decides and finds the
//! error. The descent is the twin the structural walker is tested and fuzzed against.
//!
//! Rules (those of `JSON.parse` on pi's lossily decoded text): bytes >= 0x80 are fine
//! inside strings and a syntax error anywhere else; control bytes inside strings are
//! errors; nesting depth is unlimited.

use super::lex::number_end;
use super::string::{decode_string, short_string_end};
use super::ws::{self, WhiteSpace};
use super::{Kind, SyntaxError, dispatch};

/// Skip white space of flavour `W` from `i`.
#[inline(always)]
pub(crate) fn skip_ws<W: WhiteSpace>(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && W::is_ws(b[i]) {
        i += 1;
    }
    i
}

/// Skip the string whose opening quote is at `i`; returns the offset past the closing
/// quote and whether it held escapes. Short strings (keys, ids) are finished by one
/// vector look at their first bytes; longer ones go to the block-wise skipper.
#[inline(always)]
pub(crate) fn skip_string(b: &[u8], i: usize) -> Result<(usize, bool), SyntaxError> {
    match short_string_end(b, i) {
        Some(end) => Ok((end, false)),
        None => dispatch::skip_string(b, i),
    }
}

/// Skip one JSON value starting at `i` (no leading white space); iterative, any depth.
#[inline(always)]
pub(crate) fn skip_value<W: WhiteSpace>(b: &[u8], i: usize) -> Result<(usize, Kind), SyntaxError> {
    let first_kind = match b.get(i) {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        _ => return skip_scalar(b, i),
    };
    // The structural walker vouches for nearly every container; when it cannot (an
    // error, deep nesting), the exact walk finds what is wrong.
    match dispatch::skip_container::<W>(b, i) {
        Some(end) => Ok((end, first_kind)),
        None => skip_container_exact::<W>(b, i, first_kind),
    }
}

/// Walk the members of the object at `start` (`b[start]` is `{`): `on_member(key,
/// value_start)` must skip the value and return where it ends. The key is given decoded
/// when it holds escapes (`"\u0069d"` is `id`). Returns the offset past the closing brace.
#[inline(always)]
pub(crate) fn walk_members<W: WhiteSpace>(
    b: &[u8],
    start: usize,
    mut on_member: impl FnMut(&[u8], usize) -> Result<usize, SyntaxError>,
) -> Result<usize, SyntaxError> {
    let mut i = skip_ws::<W>(b, start + 1);
    if b.get(i) == Some(&b'}') {
        return Ok(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return Err(SyntaxError::new(i, "expected a string key"));
        }
        let kstart = i;
        let (kend, escaped) = skip_string(b, i)?;
        i = skip_ws::<W>(b, kend);
        if b.get(i) != Some(&b':') {
            return Err(SyntaxError::new(i, "expected ':'"));
        }
        i = skip_ws::<W>(b, i + 1);
        if i >= b.len() {
            return Err(SyntaxError::new(i, "unexpected end of JSON input"));
        }
        let vend = if escaped {
            let (k, _) = decode_string(b, kstart)?;
            on_member(k.as_bytes(), i)?
        } else {
            on_member(&b[kstart + 1..kend - 1], i)?
        };
        i = skip_ws::<W>(b, vend);
        match b.get(i) {
            Some(b',') => i = skip_ws::<W>(b, i + 1),
            Some(b'}') => return Ok(i + 1),
            _ => return Err(SyntaxError::new(i, "expected ',' or '}'")),
        }
    }
}

/// Walk the elements of the array at `start` (`b[start]` is `[`): `on_element(start)`
/// must skip the element and return where it ends. Returns the offset past `]`.
#[inline(always)]
pub(crate) fn walk_elements<W: WhiteSpace>(
    b: &[u8],
    start: usize,
    mut on_element: impl FnMut(usize) -> Result<usize, SyntaxError>,
) -> Result<usize, SyntaxError> {
    let mut i = skip_ws::<W>(b, start + 1);
    if b.get(i) == Some(&b']') {
        return Ok(i + 1);
    }
    loop {
        i = skip_ws::<W>(b, on_element(i)?);
        match b.get(i) {
            Some(b',') => i = skip_ws::<W>(b, i + 1),
            Some(b']') => return Ok(i + 1),
            _ => return Err(SyntaxError::new(i, "expected ',' or ']'")),
        }
    }
}

/// Walk the members of the object at `start` and call `on_member(key_bytes, value_field)`
/// for each, in JSON white space (a whole text). Returns the offset past the closing brace.
pub(crate) fn for_each_member(
    b: &[u8],
    start: usize,
    mut on_member: impl FnMut(&[u8], super::Field),
) -> Result<usize, SyntaxError> {
    debug_assert_eq!(b[start], b'{');
    walk_members::<ws::Json>(b, start, |k, s| {
        let (end, kind) = skip_value::<ws::Json>(b, s)?;
        on_member(k, super::Field { start: s, end, kind });
        Ok(end)
    })
}

/// The descent walk over the container at `i` (whose kind is `first_kind`): the twin of
/// the structural walker, and the one that reports errors.
#[inline(always)]
pub(crate) fn skip_container_exact<W: WhiteSpace>(
    b: &[u8],
    i: usize,
    first_kind: Kind,
) -> Result<(usize, Kind), SyntaxError> {
    // Open containers, innermost last (true = object).
    let mut stack: smallvec::SmallVec<[bool; 64]> = smallvec::SmallVec::new();
    let mut j = i;
    loop {
        // A value starts at j.
        match b.get(j) {
            Some(b'{') => {
                j = skip_ws::<W>(b, j + 1);
                if b.get(j) == Some(&b'}') {
                    j += 1;
                } else {
                    stack.push(true);
                    j = skip_key::<W>(b, j)?;
                    continue;
                }
            }
            Some(b'[') => {
                j = skip_ws::<W>(b, j + 1);
                if b.get(j) == Some(&b']') {
                    j += 1;
                } else {
                    stack.push(false);
                    continue;
                }
            }
            _ => j = skip_scalar(b, j)?.0,
        }
        // After a value: a comma or the closing bracket of one or more containers.
        loop {
            let Some(&is_obj) = stack.last() else {
                return Ok((j, first_kind));
            };
            j = skip_ws::<W>(b, j);
            match (b.get(j), is_obj) {
                (Some(b','), true) => {
                    j = skip_key::<W>(b, skip_ws::<W>(b, j + 1))?;
                    break;
                }
                (Some(b','), false) => {
                    j = skip_ws::<W>(b, j + 1);
                    break;
                }
                (Some(b'}'), true) | (Some(b']'), false) => {
                    j += 1;
                    stack.pop();
                }
                (_, true) => return Err(SyntaxError::new(j, "expected ',' or '}'")),
                (_, false) => return Err(SyntaxError::new(j, "expected ',' or ']'")),
            }
        }
    }
}

/// The exact (descent) walk over the array or object at `i`, with white space flavour
/// `W`, compiled as the index and listing run it: the twin the structural walker is
/// tested and fuzzed against. `None` for anything but a valid container.
#[cfg(any(test, feature = "internals"))]
pub(crate) fn skip_container_exact_ws<W: WhiteSpace>(b: &[u8], i: usize) -> Option<usize> {
    let kind = match b.get(i) {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        _ => return None,
    };
    let r = dispatch::with_avx2_bmi(|| skip_container_exact::<W>(b, i, kind));
    r.ok().map(|(end, _)| end)
}

/// Skip `"key" :` and the white space after it; returns where the value starts.
#[inline(always)]
fn skip_key<W: WhiteSpace>(b: &[u8], j: usize) -> Result<usize, SyntaxError> {
    if b.get(j) != Some(&b'"') {
        return Err(SyntaxError::new(j, "expected a string key"));
    }
    let (k, _) = skip_string(b, j)?;
    let j = skip_ws::<W>(b, k);
    if b.get(j) != Some(&b':') {
        return Err(SyntaxError::new(j, "expected ':'"));
    }
    Ok(skip_ws::<W>(b, j + 1))
}

/// Skip a string, number or literal starting at `i`.
#[inline(always)]
pub(crate) fn skip_scalar(b: &[u8], i: usize) -> Result<(usize, Kind), SyntaxError> {
    match b.get(i) {
        Some(b'"') => {
            let (end, escaped) = skip_string(b, i)?;
            Ok((end, Kind::String { escaped }))
        }
        Some(b't') => lit(b, i, b"true", Kind::True),
        Some(b'f') => lit(b, i, b"false", Kind::False),
        Some(b'n') => lit(b, i, b"null", Kind::Null),
        Some(b'-' | b'0'..=b'9') => {
            let end = number_end(b, i).map_err(|offset| SyntaxError::new(offset, "invalid number"))?;
            Ok((end, Kind::Number))
        }
        None => Err(SyntaxError::new(i, "unexpected end of JSON input")),
        Some(_) => Err(SyntaxError::new(i, "unexpected character")),
    }
}

#[inline(always)]
fn lit(b: &[u8], i: usize, word: &[u8], kind: Kind) -> Result<(usize, Kind), SyntaxError> {
    if b[i..].starts_with(word) {
        Ok((i + word.len(), kind))
    } else {
        Err(SyntaxError::new(i, "invalid literal"))
    }
}

/// The deepest nesting of arrays and objects in a valid JSON text (an object is 1).
pub fn max_depth(b: &[u8]) -> usize {
    let (mut depth, mut max, mut i) = (0usize, 0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'"' => {
                i = skip_string(b, i).map_or(b.len(), |(end, _)| end);
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    max
}

/// The obvious twin of the structural object-tail walker
/// ([`dispatch::skip_object_tail`]), for the object at `start` with the
/// tail from `i`: the exact walk of the whole object, refusing where the tail walker
/// must (a member after `i` named `deny`, or whose key is escaped or not short).
#[cfg(any(test, feature = "internals"))]
pub(crate) fn skip_object_tail_exact<W: WhiteSpace>(b: &[u8], start: usize, i: usize, deny: &[u8]) -> Option<usize> {
    // Whether the key of the member whose value starts at `s` is written plainly (no
    // escape) and short enough for the short-string look (32 bytes after its quote).
    let plain_key_before = |s: usize, k: &[u8]| {
        let Some(colon) = b[..s].iter().rposition(|&c| c == b':') else {
            return false;
        };
        let Some(close) = b[..colon].iter().rposition(|&c| c == b'"') else {
            return false;
        };
        let Some(open) = close.checked_sub(k.len() + 1) else {
            return false;
        };
        b[open] == b'"' && &b[open + 1..close] == k && k.len() < 32 && b.len() >= open + 33
    };
    let mut refused = false;
    let end = walk_members::<W>(b, start, |k, s| {
        if s > i && (k == deny || !plain_key_before(s, k)) {
            refused = true;
        }
        skip_value::<W>(b, s).map(|(e, _)| e)
    })
    .ok()?;
    (!refused).then_some(end)
}

#[cfg(test)]
mod tail_tests {
    use super::super::dispatch::{Isa, kernels, skip_object_tail_kernel};
    use super::super::ws;
    use super::skip_object_tail_exact;

    #[test]
    fn object_tails_agree_with_the_exact_walk() {
        let pieces: [&[u8]; 16] = [
            br#""content":[{"type":"text","text":"hi"}]"#,
            br#""role":"x""#,
            br#""\u0072ole":1"#,
            br#""usage":{"role":2,"n":[1,2,{"a":null}]}"#,
            br#""t":17"#,
            br#""s":"a\"b""#,
            br#""a_key_that_is_longer_than_thirty_two_bytes":0"#,
            br#""e":true"#,
            b" ",
            b",",
            b"}",
            b"\n",
            b"\r",
            br#""x":{"#,
            br#""q":"\x""#,
            br#""ok":[]"#,
        ];
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        for _ in 0..20_000 {
            let mut t = br#"{"role":"user""#.to_vec();
            let i = t.len();
            for _ in 0..next(6) {
                if next(4) != 0 {
                    t.push(b',');
                }
                t.extend_from_slice(pieces[next(pieces.len())]);
            }
            if next(8) != 0 {
                t.push(b'}');
            }
            t.extend_from_slice(&b"          ".repeat(next(5)));
            for isa in kernels().into_iter().filter(|k| matches!(k, Isa::Swar | Isa::Avx512)) {
                let fast = skip_object_tail_kernel::<ws::Line>(isa, &t, i, b"role");
                let exact = skip_object_tail_exact::<ws::Line>(&t, 0, i, b"role");
                match fast {
                    Some(end) => assert_eq!(Some(end), exact, "{isa:?} {:?}", String::from_utf8_lossy(&t)),
                    None => assert_eq!(exact, None, "{isa:?} gave up: {:?}", String::from_utf8_lossy(&t)),
                }
            }
        }
    }
}

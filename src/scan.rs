//! The per-line validator and field extractor used while indexing.
//!
//! For every line it decides what pi's loader decides (`!line.trim()` skips it, then
//! `JSON.parse` either throws or gives a value whose truthiness decides whether it is
//! kept) and, for an object, records where the top-level `type`, `id`, `parentId`,
//! `timestamp` and `message` values are, as byte spans with their JSON kind. Nothing is
//! decoded or allocated here except the rare escaped key, which must be decoded before it
//! can be compared (`"\u0069d"` is `id`).
//!
//! Rules (those of `JSON.parse` on pi's lossily decoded text): bytes >= 0x80 are fine
//! inside strings and a syntax error anywhere else; control bytes inside strings are
//! errors; the last of duplicate keys wins; nesting depth is unlimited.
//!
//! [`crate::value::parse`] is the obvious twin of this module: tests and fuzz targets check
//! that both accept the same lines and find the same fields.

use crate::value::{SyntaxError, decode_string, is_ws, number_end};

/// The JSON kind of a recorded value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A string; `escaped` is true when it contains a backslash escape.
    String {
        /// Whether the raw string holds escapes (then it must be decoded before use).
        escaped: bool,
    },
    /// A number.
    Number,
    /// `true`.
    True,
    /// `false`.
    False,
    /// `null`.
    Null,
    /// An object.
    Object,
    /// An array.
    Array,
}

/// Where a top-level value sits in its line: `[start, end)` byte offsets within the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Offset of the value's first byte (the opening quote for a string).
    pub start: usize,
    /// Offset just past the value.
    pub end: usize,
    /// Its JSON kind.
    pub kind: Kind,
}

impl Field {
    /// The raw JSON text of the value within `line`.
    pub fn raw<'a>(&self, line: &'a [u8]) -> &'a [u8] {
        &line[self.start..self.end]
    }
}

/// The top-level fields the index needs; `None` is a missing key (JavaScript `undefined`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    /// `type`
    pub ty: Option<Field>,
    /// `id`
    pub id: Option<Field>,
    /// `parentId`
    pub parent_id: Option<Field>,
    /// `timestamp`
    pub timestamp: Option<Field>,
    /// `message`
    pub message: Option<Field>,
    /// `role` inside `message`, when `message` is an object (offsets within the line).
    pub role: Option<Field>,
}

/// What a line is to pi's loader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// Empty after JavaScript's `trim()`: skipped.
    Blank,
    /// `JSON.parse` throws: skipped.
    Malformed(SyntaxError),
    /// Parses to `null`, `false`, `0` or `""`: skipped like a malformed line.
    Falsy,
    /// Parses to a truthy non-object (`42`, `true`, `"x"`, an array): kept, with no fields.
    NonObject,
    /// A JSON object: kept.
    Object(Fields),
}

/// Classify one line (without its `\n`).
pub fn scan_line(line: &[u8]) -> Line {
    let mut i = 0;
    while i < line.len() && is_ws(line[i]) {
        i += 1;
    }
    if i == line.len() || is_js_blank(line) {
        return Line::Blank;
    }
    let res = if line[i] == b'{' {
        scan_object::<true>(line, i).and_then(|(f, end)| {
            expect_end(line, end)?;
            Ok(Line::Object(f))
        })
    } else {
        scan_other(line, i)
    };
    match res {
        Ok(l) => l,
        Err(e) => Line::Malformed(e),
    }
}

fn scan_other(line: &[u8], i: usize) -> Result<Line, SyntaxError> {
    let (end, kind) = skip_value::<true>(line, i)?;
    expect_end(line, end)?;
    let truthy = match kind {
        Kind::Null | Kind::False => false,
        Kind::True | Kind::Object | Kind::Array => true,
        Kind::String { .. } => end - i > 2,
        Kind::Number => {
            let text = std::str::from_utf8(&line[i..end]).expect("number tokens are ASCII");
            let n: f64 = text.parse().expect("a valid JSON number parses as f64");
            n != 0.0
        }
    };
    Ok(if truthy { Line::NonObject } else { Line::Falsy })
}

fn expect_end(line: &[u8], mut i: usize) -> Result<(), SyntaxError> {
    while i < line.len() && is_ws(line[i]) {
        i += 1;
    }
    if i == line.len() {
        Ok(())
    } else {
        Err(SyntaxError {
            offset: i,
            reason: "unexpected data after the JSON value",
        })
    }
}

#[derive(Clone, Copy)]
enum Want {
    Type,
    Id,
    ParentId,
    Timestamp,
    Message,
}

fn which_key(raw: &[u8]) -> Option<Want> {
    match raw {
        b"type" => Some(Want::Type),
        b"id" => Some(Want::Id),
        b"parentId" => Some(Want::ParentId),
        b"timestamp" => Some(Want::Timestamp),
        b"message" => Some(Want::Message),
        _ => None,
    }
}

/// Walk the members of the object at `start` and call `on_member(key_bytes, value_field)`
/// for each (key bytes decoded when escaped). Returns the offset past the closing brace.
pub(crate) fn for_each_member(
    b: &[u8],
    start: usize,
    mut on_member: impl FnMut(&[u8], Field),
) -> Result<usize, SyntaxError> {
    debug_assert_eq!(b[start], b'{');
    walk_members::<true>(b, start, |k, s| {
        let (end, kind) = skip_value::<true>(b, s)?;
        on_member(k, Field { start: s, end, kind });
        Ok(end)
    })
}

#[inline(always)]
fn scan_object<const NL: bool>(line: &[u8], start: usize) -> Result<(Fields, usize), SyntaxError> {
    let mut f = Fields::default();
    let end = walk_members::<NL>(line, start, |key, vstart| match which_key(key) {
        Some(Want::Message) if line[vstart] == b'{' => {
            // The message's own members are walked instead of skipped, to find its role
            // in the same pass.
            let mut role = None;
            let end = walk_members::<NL>(line, vstart, |k, s| {
                let (e, kind) = skip_value::<NL>(line, s)?;
                if k == b"role" {
                    role = Some(Field { start: s, end: e, kind });
                }
                Ok(e)
            })?;
            f.message = Some(Field {
                start: vstart,
                end,
                kind: Kind::Object,
            });
            f.role = role;
            Ok(end)
        }
        want => {
            let (end, kind) = skip_value::<NL>(line, vstart)?;
            let field = Some(Field {
                start: vstart,
                end,
                kind,
            });
            match want {
                Some(Want::Type) => f.ty = field,
                Some(Want::Id) => f.id = field,
                Some(Want::ParentId) => f.parent_id = field,
                Some(Want::Timestamp) => f.timestamp = field,
                Some(Want::Message) => {
                    f.message = field;
                    f.role = None;
                }
                None => {}
            }
            Ok(end)
        }
    })?;
    Ok((f, end))
}

/// Scan the object line at the start of `rest` (the rest of a chunk of lines) and find
/// the line's end in the same pass: white space here is space, tab and `\r`, and after
/// the closing brace only those may come before the `\n` (or the end of `rest`). Returns
/// the fields and the line's length (without its `\n`), which are exactly what
/// [`scan_line`] gives for that line; `None` for any other line (blank, not an object,
/// malformed), which the caller splits with `memchr` and hands to [`scan_line`]. This
/// spares valid object lines, nearly every line of a session, a second pass over
/// their bytes.
#[inline(always)]
pub fn scan_object_line(rest: &[u8]) -> Option<(Fields, usize)> {
    let mut i = 0;
    while i < rest.len() && matches!(rest[i], b' ' | b'\t' | b'\r') {
        i += 1;
    }
    if rest.get(i) != Some(&b'{') {
        return None;
    }
    // Raw `\n` is no white space here and is a control byte inside strings, so the walk
    // stops at the line's end: it either finishes the object within the line or fails.
    let (f, end) = scan_object::<false>(rest, i).ok()?;
    let t = skip_ws::<false>(rest, end);
    (t == rest.len() || rest[t] == b'\n').then_some((f, t))
}

/// Walk the members of the object at `start`: `on_member(key, value_start)` must skip
/// the value and return where it ends. Returns the offset past the closing brace.
#[inline(always)]
fn walk_members<const NL: bool>(
    b: &[u8],
    start: usize,
    mut on_member: impl FnMut(&[u8], usize) -> Result<usize, SyntaxError>,
) -> Result<usize, SyntaxError> {
    let mut i = skip_ws::<NL>(b, start + 1);
    if b.get(i) == Some(&b'}') {
        return Ok(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return Err(SyntaxError {
                offset: i,
                reason: "expected a string key",
            });
        }
        let kstart = i;
        let (kend, escaped) = skip_string(b, i)?;
        i = skip_ws::<NL>(b, kend);
        if b.get(i) != Some(&b':') {
            return Err(SyntaxError {
                offset: i,
                reason: "expected ':'",
            });
        }
        i = skip_ws::<NL>(b, i + 1);
        if i >= b.len() {
            return Err(SyntaxError {
                offset: i,
                reason: "unexpected end of JSON input",
            });
        }
        let vend = if escaped {
            let (k, _) = decode_string(b, kstart)?;
            on_member(k.as_bytes(), i)?
        } else {
            on_member(&b[kstart + 1..kend - 1], i)?
        };
        i = skip_ws::<NL>(b, vend);
        match b.get(i) {
            Some(b',') => i = skip_ws::<NL>(b, i + 1),
            Some(b'}') => return Ok(i + 1),
            _ => {
                return Err(SyntaxError {
                    offset: i,
                    reason: "expected ',' or '}'",
                });
            }
        }
    }
}

#[inline(always)]
fn skip_ws<const NL: bool>(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (matches!(b[i], b' ' | b'\t' | b'\r') || (NL && b[i] == b'\n')) {
        i += 1;
    }
    i
}

/// Skip the string whose opening quote is at `i`; returns the offset past the closing
/// quote and whether it held escapes. Short strings (keys, ids) are finished by one
/// vector look at their first bytes; longer ones go to the block-wise skipper.
#[inline(always)]
pub(crate) fn skip_string(b: &[u8], i: usize) -> Result<(usize, bool), SyntaxError> {
    match crate::simd::short_string_end(b, i) {
        Some(end) => Ok((end, false)),
        None => crate::simd::skip_string(b, i),
    }
}

/// The obvious string skipper, kept as the twin of `crate::strscan` in tests and fuzzing.
#[doc(hidden)]
pub fn skip_string_naive(b: &[u8], i: usize) -> Result<(usize, bool), SyntaxError> {
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        let Some(off) = memchr::memchr2(b'"', b'\\', &b[j..]) else {
            if let Some(p) = crate::value::first_control(&b[j..]) {
                return Err(SyntaxError {
                    offset: j + p,
                    reason: "control character in string",
                });
            }
            return Err(SyntaxError {
                offset: b.len(),
                reason: "unterminated string",
            });
        };
        if let Some(p) = crate::value::first_control(&b[j..j + off]) {
            return Err(SyntaxError {
                offset: j + p,
                reason: "control character in string",
            });
        }
        j += off;
        if b[j] == b'"' {
            return Ok((j + 1, escaped));
        }
        escaped = true;
        match b.get(j + 1) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => j += 2,
            Some(b'u') => {
                let hex = b.get(j + 2..j + 6);
                if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                    return Err(SyntaxError {
                        offset: j + 2,
                        reason: "invalid \\u escape",
                    });
                }
                j += 6;
            }
            Some(_) => {
                return Err(SyntaxError {
                    offset: j + 1,
                    reason: "invalid escape",
                });
            }
            None => {
                return Err(SyntaxError {
                    offset: b.len(),
                    reason: "unterminated string",
                });
            }
        }
    }
}

/// Skip one JSON value starting at `i` (no leading whitespace); iterative, any depth.
#[inline(always)]
pub(crate) fn skip_value<const NL: bool>(b: &[u8], i: usize) -> Result<(usize, Kind), SyntaxError> {
    let first_kind = match b.get(i) {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        _ => return skip_scalar(b, i),
    };
    // The structural walker vouches for nearly every container; when it cannot (an
    // error, deep nesting), the exact walk finds what is wrong.
    let fast = if NL {
        crate::simd::skip_container::<{ crate::structural::WS_JSON }>(b, i)
    } else {
        crate::simd::skip_container::<{ crate::structural::WS_LINE }>(b, i)
    };
    match fast {
        Some(end) => Ok((end, first_kind)),
        None => skip_container_exact::<NL>(b, i, first_kind),
    }
}

/// The descent walk over the container at `i` (whose kind is `first_kind`): the twin of
/// the structural walker, and the one that reports errors.
#[inline(always)]
pub(crate) fn skip_container_exact<const NL: bool>(
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
                j = skip_ws::<NL>(b, j + 1);
                if b.get(j) == Some(&b'}') {
                    j += 1;
                } else {
                    stack.push(true);
                    j = skip_key::<NL>(b, j)?;
                    continue;
                }
            }
            Some(b'[') => {
                j = skip_ws::<NL>(b, j + 1);
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
            j = skip_ws::<NL>(b, j);
            match (b.get(j), is_obj) {
                (Some(b','), true) => {
                    j = skip_key::<NL>(b, skip_ws::<NL>(b, j + 1))?;
                    break;
                }
                (Some(b','), false) => {
                    j = skip_ws::<NL>(b, j + 1);
                    break;
                }
                (Some(b'}'), true) | (Some(b']'), false) => {
                    j += 1;
                    stack.pop();
                }
                (_, true) => {
                    return Err(SyntaxError {
                        offset: j,
                        reason: "expected ',' or '}'",
                    });
                }
                (_, false) => {
                    return Err(SyntaxError {
                        offset: j,
                        reason: "expected ',' or ']'",
                    });
                }
            }
        }
    }
}

/// The exact (descent) walk over the array or object at `i`, with white space flavour
/// `ws` as [`crate::simd::skip_container_kernel`] takes it (0: space and tab, as the
/// listing; 1: also `\r`, as an index line; 2: also `\n`, as `JSON.parse`): the twin
/// the structural walker is fuzzed against. `None` for anything but a valid container.
#[doc(hidden)]
pub fn skip_container_exact_ws(ws: u8, b: &[u8], i: usize) -> Option<usize> {
    let kind = match b.get(i) {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        _ => return None,
    };
    // Compiled for AVX2 and BMI where the CPU has them, as the index and listing run it.
    let r = crate::simd::with_avx2_bmi(|| match ws {
        0 => crate::jsonskip::skip_container_exact(b, i, kind),
        1 => skip_container_exact::<false>(b, i, kind),
        _ => skip_container_exact::<true>(b, i, kind),
    });
    r.ok().map(|(end, _)| end)
}

/// Skip `"key" :` and the white space after it; returns where the value starts.
#[inline(always)]
fn skip_key<const NL: bool>(b: &[u8], j: usize) -> Result<usize, SyntaxError> {
    if b.get(j) != Some(&b'"') {
        return Err(SyntaxError {
            offset: j,
            reason: "expected a string key",
        });
    }
    let (k, _) = skip_string(b, j)?;
    let j = skip_ws::<NL>(b, k);
    if b.get(j) != Some(&b':') {
        return Err(SyntaxError {
            offset: j,
            reason: "expected ':'",
        });
    }
    Ok(skip_ws::<NL>(b, j + 1))
}

/// Skip a string, number or literal starting at `i`.
#[inline(always)]
fn skip_scalar(b: &[u8], i: usize) -> Result<(usize, Kind), SyntaxError> {
    match b.get(i) {
        Some(b'"') => {
            let (end, escaped) = skip_string(b, i)?;
            Ok((end, Kind::String { escaped }))
        }
        Some(b't') => lit(b, i, b"true", Kind::True),
        Some(b'f') => lit(b, i, b"false", Kind::False),
        Some(b'n') => lit(b, i, b"null", Kind::Null),
        Some(b'-' | b'0'..=b'9') => {
            let end = number_end(b, i).map_err(|offset| SyntaxError {
                offset,
                reason: "invalid number",
            })?;
            Ok((end, Kind::Number))
        }
        None => Err(SyntaxError {
            offset: i,
            reason: "unexpected end of JSON input",
        }),
        Some(_) => Err(SyntaxError {
            offset: i,
            reason: "unexpected character",
        }),
    }
}

#[inline(always)]
fn lit(b: &[u8], i: usize, word: &[u8], kind: Kind) -> Result<(usize, Kind), SyntaxError> {
    if b[i..].starts_with(word) {
        Ok((i + word.len(), kind))
    } else {
        Err(SyntaxError {
            offset: i,
            reason: "invalid literal",
        })
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

/// True when the line is empty after JavaScript's `String.prototype.trim()` of its
/// lossily decoded text (ASCII white space, NBSP, BOM and the Unicode space separators).
pub fn is_js_blank(line: &[u8]) -> bool {
    let mut i = 0;
    while i < line.len() {
        let c = line[i];
        let w = match c {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C => 1,
            0xC2 if line.get(i + 1) == Some(&0xA0) => 2,
            0xE1 if line.get(i + 1..i + 3) == Some(&[0x9A, 0x80]) => 3,
            0xE2 => match line.get(i + 1..i + 3) {
                Some([0x80, 0x80..=0x8A | 0xA8 | 0xA9 | 0xAF]) | Some([0x81, 0x9F]) => 3,
                _ => return false,
            },
            0xE3 if line.get(i + 1..i + 3) == Some(&[0x80, 0x80]) => 3,
            0xEF if line.get(i + 1..i + 3) == Some(&[0xBB, 0xBF]) => 3,
            _ => return false,
        };
        i += w;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(l: &[u8]) -> Fields {
        match scan_line(l) {
            Line::Object(f) => f,
            other => panic!("not an object: {other:?}"),
        }
    }

    #[test]
    fn extracts_fields_last_duplicate_wins() {
        let l = br#"{"type":"message","id":"a","id":"b","parentId":null,"x":{"id":"no"}}"#;
        let f = fields(l);
        assert_eq!(f.id.unwrap().raw(l), br#""b""#);
        assert_eq!(f.parent_id.unwrap().kind, Kind::Null);
        assert_eq!(f.ty.unwrap().raw(l), br#""message""#);
        assert!(f.timestamp.is_none());
    }

    #[test]
    fn escaped_keys_are_matched() {
        let l = br#"{"\u0069d":"x","type":"t"}"#;
        assert_eq!(fields(l).id.unwrap().raw(l), br#""x""#);
    }

    #[test]
    fn classification() {
        assert_eq!(scan_line(b""), Line::Blank);
        assert_eq!(scan_line(b" \t\r"), Line::Blank);
        assert_eq!(scan_line(b"\xEF\xBB\xBF"), Line::Blank);
        assert!(matches!(scan_line(b"\xEF\xBB\xBF{}"), Line::Malformed(_)));
        for falsy in ["null", "false", "0", "-0", "0.0e5", "\"\"", "1e-400"] {
            assert_eq!(scan_line(falsy.as_bytes()), Line::Falsy, "{falsy}");
        }
        for kept in ["42", "true", "\"x\"", "[1]", "[]"] {
            assert_eq!(scan_line(kept.as_bytes()), Line::NonObject, "{kept}");
        }
        assert!(matches!(scan_line(b"{}"), Line::Object(_)));
        assert!(matches!(scan_line(b"{} x"), Line::Malformed(_)));
        assert!(matches!(scan_line(b"{\"a\":1"), Line::Malformed(_)));
        assert!(matches!(scan_line(b"{\"a\":\"\x01\"}"), Line::Malformed(_)));
        assert!(matches!(scan_line(b"{\"a\":\"\xff\"}"), Line::Object(_)));
        assert!(matches!(scan_line(b"{\"a\":\xff}"), Line::Malformed(_)));
        assert!(matches!(scan_line(b"{\"a\":1}\r"), Line::Object(_)));
    }

    #[test]
    fn nested_values_any_depth() {
        let depth = 100_000;
        let l = format!(
            "{{\"a\":{}1{}, \"id\":\"z\"}}",
            "[{\"b\":".repeat(depth),
            "}]".repeat(depth)
        );
        let f = fields(l.as_bytes());
        assert_eq!(f.id.unwrap().raw(l.as_bytes()), b"\"z\"");
        let bad = format!("{{\"a\":{}1{}}}", "[".repeat(10), "]".repeat(9));
        assert!(matches!(scan_line(bad.as_bytes()), Line::Malformed(_)));
    }
}

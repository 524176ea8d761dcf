//! pi's per-line test and the top-level fields of a kept line, as the index needs them.
//!
//! For every line it decides what pi's loader decides (`!line.trim()` skips it, then
//! `JSON.parse` either throws or gives a value whose truthiness decides whether it is
//! kept) and, for an object, records where the top-level `type`, `id`, `parentId`,
//! `timestamp` and `message` values are, as byte spans with their JSON kind. Nothing is
//! decoded or allocated here except the rare escaped key, which must be decoded before it
//! can be compared (`"\u0069d"` is `id`). The walking itself is the crate's one exact
//! walker ([`crate::json::walk`]).
//!
//! The full decoder (`Value::parse`) is the obvious twin of this module: tests and fuzz
//! targets check that both accept the same lines and find the same fields.

use crate::js::string::is_js_blank;
use crate::json::dispatch::skip_object_tail;
use crate::json::string::short_string_end;
use crate::json::walk::{skip_scalar, skip_value, skip_ws, walk_members};
use crate::json::ws::{self, WhiteSpace};
use crate::json::{Field, Kind, SyntaxError};

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
    let i = skip_ws::<ws::Json>(line, 0);
    if i == line.len() || is_js_blank(line) {
        return Line::Blank;
    }
    let res = if line[i] == b'{' {
        scan_object::<ws::Json>(line, i).and_then(|(f, end)| {
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
    let (end, kind) = skip_value::<ws::Json>(line, i)?;
    expect_end(line, end)?;
    let truthy = match kind {
        Kind::Null | Kind::False => false,
        Kind::True | Kind::Object | Kind::Array => true,
        Kind::String { .. } => end - i > 2,
        Kind::Number => {
            // A JSON number token always parses as f64; only bytes that changed under a
            // mapping since the walk read them could fail here, and then the line is
            // malformed, never a panic.
            let n = std::str::from_utf8(&line[i..end])
                .ok()
                .and_then(|t| t.parse::<f64>().ok());
            match n {
                Some(n) => n != 0.0,
                None => return Err(SyntaxError::new(i, "invalid number")),
            }
        }
    };
    Ok(if truthy { Line::NonObject } else { Line::Falsy })
}

fn expect_end(line: &[u8], i: usize) -> Result<(), SyntaxError> {
    let i = skip_ws::<ws::Json>(line, i);
    if i == line.len() {
        Ok(())
    } else {
        Err(SyntaxError::new(i, "unexpected data after the JSON value"))
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

#[inline(always)]
fn scan_object<W: WhiteSpace>(line: &[u8], start: usize) -> Result<(Fields, usize), SyntaxError> {
    let mut f = Fields::default();
    let end = walk_members::<W>(line, start, |key, vstart| match which_key(key) {
        Some(Want::Message) if line[vstart] == b'{' => {
            if let Some((end, role)) = message_role_first::<W>(line, vstart) {
                f.message = Some(Field {
                    start: vstart,
                    end,
                    kind: Kind::Object,
                });
                f.role = Some(role);
                return Ok(end);
            }
            // The message's own members are walked instead of skipped, to find its role
            // in the same pass.
            let mut role = None;
            let end = walk_members::<W>(line, vstart, |k, s| {
                let (e, kind) = skip_value::<W>(line, s)?;
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
            let (end, kind) = skip_value::<W>(line, vstart)?;
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

/// The message object at `start` when its first member is a plain `"role"` with a scalar
/// value (as pi writes every message): the role's field and the message's end, the rest
/// skipped in one structural pass. `None` (the caller walks member by member, which
/// decides and finds errors) for any other message, for a later `role` member (the last
/// one counts), a key that is escaped or long, anything invalid, or a CPU without the
/// structural walker.
#[inline(always)]
fn message_role_first<W: WhiteSpace>(line: &[u8], start: usize) -> Option<(usize, Field)> {
    let k = skip_ws::<W>(line, start + 1);
    let kend = short_string_end(line, k)?;
    if line[k] != b'"' || &line[k + 1..kend - 1] != b"role" {
        return None;
    }
    let colon = skip_ws::<W>(line, kend);
    if line.get(colon) != Some(&b':') {
        return None;
    }
    let v = skip_ws::<W>(line, colon + 1);
    if matches!(line.get(v), None | Some(b'{' | b'[')) {
        return None;
    }
    let (vend, kind) = skip_scalar(line, v).ok()?;
    let end = skip_object_tail::<W>(line, vend, b"role")?;
    Some((
        end,
        Field {
            start: v,
            end: vend,
            kind,
        },
    ))
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
    let i = skip_ws::<ws::Line>(rest, 0);
    if rest.get(i) != Some(&b'{') {
        return None;
    }
    // Raw `\n` is no white space here and is a control byte inside strings, so the walk
    // stops at the line's end: it either finishes the object within the line or fails.
    let (f, end) = scan_object::<ws::Line>(rest, i).ok()?;
    let t = skip_ws::<ws::Line>(rest, end);
    (t == rest.len() || rest[t] == b'\n').then_some((f, t))
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

//! Helpers of the `header_parser` target: the scanner against `value::parse`, and
//! `value::parse` against serde_json.

use pi_session::{Key, KeyRef};
use pi_session::EntryType;
use pi_session::internals::{self as scan, Field, Kind, Line};
use pi_session::Value;

/// Nesting depth of a decoded value (a scalar is 0, `{}` is 1), iteratively.
pub fn depth(v: &Value<'_>) -> usize {
    let mut max = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(a) => {
                max = max.max(d + 1);
                stack.extend(a.iter().map(|x| (x, d + 1)));
            }
            Value::Object(o) => {
                max = max.max(d + 1);
                stack.extend(o.iter().map(|(_, x)| (x, d + 1)));
            }
            _ => max = max.max(d),
        }
    }
    max
}

fn kind_matches(kind: Kind, raw: &[u8], v: &Value<'_>) -> bool {
    match (kind, v) {
        (Kind::String { escaped }, Value::String(_)) => escaped == raw.contains(&b'\\'),
        (Kind::Number, Value::Number(_)) => true,
        (Kind::True, Value::Bool(true)) => true,
        (Kind::False, Value::Bool(false)) => true,
        (Kind::Null, Value::Null) => true,
        (Kind::Object, Value::Object(_)) => true,
        (Kind::Array, Value::Array(_)) => true,
        _ => false,
    }
}

fn check_field(line: &[u8], name: &str, field: Option<Field>, obj: &Value<'_>) {
    let member = obj.get(name);
    match (field, member) {
        (None, None) => {}
        (Some(f), Some(m)) => {
            assert!(f.start <= f.end && f.end <= line.len(), "{name}: span out of range");
            let raw = f.raw(line);
            let alone =
                Value::parse(raw).unwrap_or_else(|e| panic!("{name}: the recorded span does not parse alone: {e}"));
            assert_eq!(&alone, m, "{name}: the span's value differs from the member");
            assert!(kind_matches(f.kind, raw, m), "{name}: kind {:?} for {m:?}", f.kind);
        }
        (f, m) => panic!("{name}: scanner has {f:?}, decoder has {m:?}"),
    }
}

/// The scanner and the full decoder agree on one line.
pub fn scan_vs_parse(line: &[u8]) {
    let scanned = scan::scan_line(line);
    let parsed = Value::parse(line);
    match (&scanned, &parsed) {
        (Line::Blank, Err(_)) => {
            let trimmed = line.iter().all(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'));
            assert!(trimmed || scan::is_js_blank(line), "Blank for a line that is not blank");
        }
        (Line::Malformed(a), Err(b)) => {
            assert!(!scan::is_js_blank(line), "Malformed for a blank line");
            // Same place; the reason texts may differ (e.g. `"\<0x05>"` is "control
            // character in string" to the scanner and "invalid escape" to the decoder).
            // Known, minor: in an unterminated string holding a control character the
            // decoder reports "unterminated string" at the end, the scanner (like V8)
            // the control character.
            let known = a.reason == "control character in string" && b.reason == "unterminated string";
            if !known {
                assert_eq!(
                    a.offset, b.offset,
                    "scanner and decoder stop at different places: {a:?} vs {b:?}"
                );
            }
        }
        (Line::Falsy, Ok(v)) => assert!(!v.truthy(), "Falsy for truthy {v:?}"),
        (Line::NonObject, Ok(v)) => {
            assert!(v.truthy(), "NonObject for falsy {v:?}");
            assert!(v.as_object().is_none(), "NonObject for an object");
        }
        (Line::Object(f), Ok(v @ Value::Object(_))) => {
            check_field(line, "type", f.ty, v);
            check_field(line, "id", f.id, v);
            check_field(line, "parentId", f.parent_id, v);
            check_field(line, "timestamp", f.timestamp, v);
            check_field(line, "message", f.message, v);
        }
        (s, p) => panic!("scanner says {s:?}, decoder says {p:?}"),
    }
    if let Ok(v) = &parsed {
        // The text can be deeper than the value: a duplicate key drops an earlier
        // (possibly deeper) member.
        assert!(scan::max_depth(line) >= depth(v), "max_depth below the value's depth");
    }
}

/// Whether serde_json defines the same thing as `JSON.parse` for this text: valid UTF-8,
/// no surrogate escapes, shallow.
pub fn serde_comparable(text: &[u8]) -> bool {
    if std::str::from_utf8(text).is_err() {
        return false;
    }
    let opens = text.iter().filter(|&&c| c == b'[' || c == b'{').count();
    if opens > 100 {
        return false;
    }
    !has_surrogate_escape(text)
}

fn has_surrogate_escape(text: &[u8]) -> bool {
    text.windows(4).any(|w| {
        w[0] == b'\\'
            && w[1] == b'u'
            && matches!(w[2], b'd' | b'D')
            && matches!(w[3], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
    })
}

fn finite(v: &Value<'_>) -> bool {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Number(n) if !n.is_finite() => return false,
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(o) => stack.extend(o.iter().map(|(_, x)| x)),
            _ => {}
        }
    }
    true
}

fn same(a: &Value<'_>, b: &serde_json::Value) -> bool {
    match (a, b) {
        (Value::Null, serde_json::Value::Null) => true,
        (Value::Bool(x), serde_json::Value::Bool(y)) => x == y,
        (Value::Number(x), serde_json::Value::Number(y)) => y.as_f64() == Some(*x),
        (Value::String(x), serde_json::Value::String(y)) => x.as_bytes() == y.as_bytes(),
        (Value::Array(x), serde_json::Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), serde_json::Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k1, v1), (k2, v2))| k1.as_bytes() == k2.as_bytes() && same(v1, v2))
        }
        _ => false,
    }
}

/// `value::parse` and serde_json agree where both define the text.
pub fn parse_vs_serde(text: &[u8]) {
    if !serde_comparable(text) {
        return;
    }
    let ours = Value::parse(text);
    let theirs = serde_json::from_slice::<serde_json::Value>(text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert!(same(a, b), "values differ: {a:?} vs {b:?}"),
        (Err(_), Err(_)) => {}
        (Ok(a), Err(e)) => {
            // JSON.parse reads 1e400 as Infinity; serde_json rejects it (even in a member
            // that a later duplicate key replaces, so `a` may be finite).
            let out_of_range = e.to_string().contains("number out of range");
            assert!(
                !finite(a) || out_of_range,
                "value::parse accepts what serde_json rejects ({e}): {a:?}"
            )
        }
        (Err(e), Ok(b)) => panic!("value::parse rejects ({e}) what serde_json accepts: {b:?}"),
    }
}

/// The entry type pi's index should record for a decoded line.
pub fn entry_type_of(v: &Value<'_>) -> EntryType {
    let Value::Object(o) = v else {
        return EntryType::NonObject;
    };
    let Some(Value::String(s)) = o.get("type") else {
        return EntryType::Other;
    };
    match s.as_bytes() {
        b"session" => EntryType::Session,
        b"message" => EntryType::Message,
        b"model_change" => EntryType::ModelChange,
        b"thinking_level_change" => EntryType::ThinkingLevelChange,
        b"compaction" => EntryType::Compaction,
        b"branch_summary" => EntryType::BranchSummary,
        b"custom" => EntryType::Custom,
        b"custom_message" => EntryType::CustomMessage,
        b"label" => EntryType::Label,
        b"session_info" => EntryType::SessionInfo,
        b"context_edit" => EntryType::ContextEdit,
        b"usage" => EntryType::Usage,
        _ => EntryType::Other,
    }
}

/// Whether an index key is the key of a decoded member (objects and arrays: any unique).
pub fn key_matches(k: &KeyRef<'_>, v: Option<&Value<'_>>) -> bool {
    let owned = k.to_key();
    match (&owned, v) {
        (Key::Undefined, None) => true,
        (Key::Null, Some(Value::Null)) => true,
        (Key::Bool(a), Some(Value::Bool(b))) => a == b,
        (Key::Num(bits), Some(Value::Number(n))) => {
            let want = if *n == 0.0 { 0f64.to_bits() } else { n.to_bits() };
            *bits == want
        }
        (Key::Str(s), Some(Value::String(t))) => s.as_slice() == t.as_bytes(),
        (Key::Unique(_), Some(Value::Array(_) | Value::Object(_))) => true,
        _ => false,
    }
}

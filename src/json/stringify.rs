//! JavaScript's `JSON.stringify`: what pi writes into session files. Iterative, so any
//! nesting depth is fine.

use super::value::{Object, Value};
use crate::js::string::JsStr;

/// Whether any byte of the word may need escaping: `"`, `\\`, a control byte, or `0xED`
/// (the lead byte of a WTF-8 surrogate). Exact per byte: no carries cross bytes.
#[inline(always)]
fn needs_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOWS: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let zero = |x: u64| !(((x & LOWS) + LOWS) | x | LOWS);
    zero(w ^ (ONES * u64::from(b'"')))
        | zero(w ^ (ONES * u64::from(b'\\')))
        | zero(w & (ONES * 0xE0))
        | zero(w ^ (ONES * 0xED))
        != 0
}

/// Append a string as `JSON.stringify` writes it (well-formed: lone surrogates escaped).
pub(crate) fn push_json_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    let mut run_start = 0;
    let mut i = 0;
    while i < s.len() {
        // Most text needs no escape: pass over it eight bytes at a time.
        while let Some(w) = s.get(i..i + 8) {
            if needs_escape(u64::from_le_bytes(w.try_into().expect("8 bytes"))) {
                break;
            }
            i += 8;
        }
        let Some(&c) = s.get(i) else { break };
        let esc: Option<&[u8]> = match c {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            0x08 => Some(b"\\b"),
            0x0C => Some(b"\\f"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            _ => None,
        };
        if let Some(e) = esc {
            out.extend_from_slice(&s[run_start..i]);
            out.extend_from_slice(e);
            i += 1;
            run_start = i;
        } else if c < 0x20 {
            out.extend_from_slice(&s[run_start..i]);
            out.extend_from_slice(format!("\\u{:04x}", c).as_bytes());
            i += 1;
            run_start = i;
        } else if c == 0xED && s.get(i + 1).is_some_and(|&b| b >= 0xA0) {
            // A lone surrogate (WTF-8): JSON.stringify escapes it.
            let cp = ((c as u32 & 0x0F) << 12) | ((s[i + 1] as u32 & 0x3F) << 6) | (s[i + 2] as u32 & 0x3F);
            out.extend_from_slice(&s[run_start..i]);
            out.extend_from_slice(format!("\\u{cp:04x}").as_bytes());
            i += 3;
            run_start = i;
        } else {
            i += 1;
        }
    }
    out.extend_from_slice(&s[run_start..]);
    out.push(b'"');
}

/// Whether a key is an array index, which JavaScript orders first, numerically.
fn array_index(k: &[u8]) -> Option<u32> {
    if k.is_empty() || k.len() > 10 || (k.len() > 1 && k[0] == b'0') || !k.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(k).ok()?.parse().ok()?;
    (n < u32::MAX as u64).then_some(n as u32)
}

/// Object members in JavaScript's own-property order (array indices first, ascending,
/// then the rest in creation order).
fn js_order<'o, 'a>(o: &'o Object<'a>) -> Vec<&'o (JsStr<'a>, Value<'a>)> {
    let mut m: Vec<_> = o.members.iter().collect();
    if m.iter().any(|(k, _)| array_index(k.as_bytes()).is_some()) {
        m.sort_by_key(|(k, _)| array_index(k.as_bytes()).map_or((1, 0), |n| (0, n)));
    }
    m
}

pub(crate) fn push_scalar(out: &mut Vec<u8>, v: &Value<'_>) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => {
            let mut s = String::new();
            crate::js::number::json_number(*n, &mut s);
            out.extend_from_slice(s.as_bytes());
        }
        Value::String(s) => push_json_string(out, s.as_bytes()),
        Value::Array(_) | Value::Object(_) => unreachable!("containers are not scalars"),
    }
}

/// `JSON.stringify(value)`.
pub(crate) fn stringify(v: &Value<'_>) -> String {
    let mut out = Vec::new();
    stringify_into(&mut out, v);
    String::from_utf8(out).expect("JSON.stringify output is UTF-8 (surrogates are escaped)")
}

/// `JSON.stringify(value)` appended to `out`.
pub(crate) fn stringify_into(out: &mut Vec<u8>, v: &Value<'_>) {
    enum It<'o, 'a> {
        Arr(std::slice::Iter<'o, Value<'a>>, bool),
        Obj(std::vec::IntoIter<&'o (JsStr<'a>, Value<'a>)>, bool),
    }
    let mut stack: Vec<It<'_, '_>> = Vec::new();
    let mut next: Option<&Value<'_>> = Some(v);
    loop {
        if let Some(v) = next.take() {
            match v {
                Value::Array(a) => {
                    out.push(b'[');
                    stack.push(It::Arr(a.iter(), true));
                }
                Value::Object(o) => {
                    out.push(b'{');
                    stack.push(It::Obj(js_order(o).into_iter(), true));
                }
                s => push_scalar(out, s),
            }
        }
        let Some(top) = stack.last_mut() else { return };
        match top {
            It::Arr(it, first) => match it.next() {
                Some(v) => {
                    if !*first {
                        out.push(b',');
                    }
                    *first = false;
                    next = Some(v);
                }
                None => {
                    out.push(b']');
                    stack.pop();
                }
            },
            It::Obj(it, first) => match it.next() {
                Some((k, v)) => {
                    if !*first {
                        out.push(b',');
                    }
                    *first = false;
                    push_json_string(out, k.as_bytes());
                    out.push(b':');
                    next = Some(v);
                }
                None => {
                    out.push(b'}');
                    stack.pop();
                }
            },
        }
    }
}

impl Value<'_> {
    /// `JSON.stringify(value)`: integer-like keys first, as JavaScript orders them.
    pub fn stringify(&self) -> String {
        stringify(self)
    }

    /// `JSON.stringify(value)` appended to `out`.
    pub fn stringify_into(&self, out: &mut Vec<u8>) {
        stringify_into(out, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::value::parse;

    #[test]
    fn string_escapes_at_every_position() {
        // Every byte class at every offset around the 8-byte steps, against serde_json
        // (same escapes as JSON.stringify for well-formed text) and, for lone surrogates,
        // the WTF-8 rule.
        for len in 0..20 {
            for at in 0..len {
                for c in [
                    "\"", "\\", "\n", "\u{1}", "\u{1f}", "\u{7f}", "é", "\u{d7ff}", "\u{e000}", "😀",
                ] {
                    let mut t = "abcdefghijklmnopqrstuvwxyz"[..len].to_string();
                    t.insert_str(at, c);
                    let mut out = Vec::new();
                    push_json_string(&mut out, t.as_bytes());
                    assert_eq!(
                        String::from_utf8(out).expect("utf-8"),
                        serde_json::to_string(&t).expect("json")
                    );
                }
                let mut w = b"abcdefghijklmnopqrstuvwxyz"[..len].to_vec();
                w.splice(at..at, [0xED, 0xA0, 0x80]);
                let mut out = Vec::new();
                push_json_string(&mut out, &w);
                let mut want = b"\"".to_vec();
                want.extend_from_slice(&w[..at]);
                want.extend_from_slice(b"\\ud800");
                want.extend_from_slice(&w[at + 3..]);
                want.push(b'"');
                assert_eq!(out, want);
            }
        }
    }

    #[test]
    fn stringify_orders_index_keys_first_and_escapes_like_js() {
        let v = parse(br#"{"b":1,"2":0,"a":"\u0001\ud800\u2028","10":1.50,"01":-0}"#).unwrap();
        assert_eq!(
            stringify(&v),
            r#"{"2":0,"10":1.5,"b":1,"a":"\u0001\ud800 ","01":0}"#.replace(' ', "\u{2028}")
        );
    }
}

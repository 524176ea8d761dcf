//! The oracle's canonical form of a value: sorted keys, optional indentation, long
//! strings replaced by their digests; what `pi-session dump` prints to compare with pi.

use crate::js::string::JsStr;
use crate::json::Value;
use crate::json::stringify::{push_json_string, push_scalar};
use sha2::{Digest, Sha256};
use std::io::{self, Write};

/// Options of the canonical writer.
#[derive(Clone, Copy, Debug, Default)]
pub struct CanonOptions {
    /// Spaces per level; 0 writes one line.
    pub indent: usize,
    /// Strings longer than this many UTF-16 units become `"<<sha256:HEX len:BYTES>>"`.
    pub digest_over: Option<usize>,
}

fn digest_string(s: &JsStr<'_>) -> Vec<u8> {
    // Buffer.from(s, "utf8"): lone surrogates become U+FFFD.
    let utf8 = s.to_str_lossy();
    let hex: String = Sha256::digest(utf8.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut out = Vec::new();
    push_json_string(&mut out, format!("<<sha256:{hex} len:{}>>", utf8.len()).as_bytes());
    out
}

/// Write `value` as the oracle's canonical JSON: keys sorted by UTF-16 code units,
/// `JSON.stringify` scalars.
///
/// # Errors
/// Whatever the writer returns.
pub fn write_canonical<W: Write>(w: &mut W, v: &Value<'_>, opts: CanonOptions) -> io::Result<()> {
    write_canonical_at(w, v, opts, 0)
}

/// [`write_canonical`] of a value that sits `base` levels deep in a larger document (its
/// lines are indented for that depth).
///
/// # Errors
/// Whatever the writer returns.
pub fn write_canonical_at<W: Write>(w: &mut W, v: &Value<'_>, opts: CanonOptions, base: usize) -> io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(if matches!(v, Value::Array(_) | Value::Object(_)) {
        1 << 16
    } else {
        64
    });
    canonical_into(&mut buf, w, v, opts, base)?;
    w.write_all(&buf)
}

/// [`write_canonical_at`] into `buf`, which is handed to `w` whenever it holds more than
/// 1 MiB; what is left stays in `buf` for the caller.
pub(crate) fn canonical_into<W: Write>(
    buf: &mut Vec<u8>,
    w: &mut W,
    v: &Value<'_>,
    opts: CanonOptions,
    base: usize,
) -> io::Result<()> {
    enum It<'o, 'a> {
        Arr(std::slice::Iter<'o, Value<'a>>),
        Obj(std::vec::IntoIter<&'o (JsStr<'a>, Value<'a>)>),
    }
    let nl = |buf: &mut Vec<u8>, depth: usize| {
        if opts.indent > 0 {
            buf.push(b'\n');
            buf.resize(buf.len() + opts.indent * (base + depth), b' ');
        }
    };
    let scalar = |buf: &mut Vec<u8>, v: &Value<'_>| match v {
        Value::String(s) if opts.digest_over.is_some_and(|n| s.utf16_len() > n) => {
            buf.extend_from_slice(&digest_string(s))
        }
        s => push_scalar(buf, s),
    };
    let mut stack: Vec<(It<'_, '_>, bool)> = Vec::new();
    let mut next: Option<&Value<'_>> = Some(v);
    loop {
        if buf.len() > 1 << 20 {
            w.write_all(buf)?;
            buf.clear();
        }
        if let Some(v) = next.take() {
            match v {
                Value::Array(a) if a.is_empty() => buf.extend_from_slice(b"[]"),
                Value::Object(o) if o.is_empty() => buf.extend_from_slice(b"{}"),
                Value::Array(a) => {
                    buf.push(b'[');
                    stack.push((It::Arr(a.iter()), true));
                }
                Value::Object(o) => {
                    buf.push(b'{');
                    let mut m: Vec<_> = o.members.iter().collect();
                    m.sort_by(|a, b| a.0.cmp_utf16(&b.0));
                    stack.push((It::Obj(m.into_iter()), true));
                }
                s => scalar(buf, s),
            }
        }
        let depth = stack.len();
        let Some((top, first)) = stack.last_mut() else {
            break;
        };
        let item = match top {
            It::Arr(it) => it.next().map(|v| (None, v)),
            It::Obj(it) => it.next().map(|(k, v)| (Some(k), v)),
        };
        match item {
            Some((k, v)) => {
                if !*first {
                    buf.push(b',');
                }
                *first = false;
                nl(buf, depth);
                if let Some(k) = k {
                    push_json_string(buf, k.as_bytes());
                    buf.extend_from_slice(if opts.indent > 0 { b": " } else { b":" });
                }
                next = Some(v);
            }
            None => {
                let is_arr = matches!(top, It::Arr(_));
                stack.pop();
                nl(buf, depth - 1);
                buf.push(if is_arr { b']' } else { b'}' });
            }
        }
    }
    Ok(())
}

/// Canonical JSON as a string.
pub fn canonical_string(v: &Value<'_>, opts: CanonOptions) -> String {
    let mut out = Vec::new();
    write_canonical(&mut out, v, opts).expect("writing to a Vec cannot fail");
    String::from_utf8(out).expect("canonical output is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::value::parse;

    #[test]
    fn canonical_sorts_and_indents() {
        let v = parse(br#"{"b":[1,{}],"a":[],"c":{"y":null,"x":1e400}}"#).unwrap();
        let s = canonical_string(
            &v,
            CanonOptions {
                indent: 2,
                digest_over: None,
            },
        );
        assert_eq!(
            s,
            "{\n  \"a\": [],\n  \"b\": [\n    1,\n    {}\n  ],\n  \"c\": {\n    \"x\": null,\n    \"y\": null\n  }\n}"
        );
    }

    #[test]
    fn digest_replaces_long_strings() {
        let v = parse(br#"["abc","abcdef"]"#).unwrap();
        let s = canonical_string(
            &v,
            CanonOptions {
                indent: 0,
                digest_over: Some(3),
            },
        );
        assert!(
            s.starts_with(
                r#"["abc","<<sha256:bef57ec7f53a6d40beb640a780a639c83bc29ac8a9816f1fc6c5c6dcd93c4721 len:6>>"]"#
            ),
            "{s}"
        );
    }
}

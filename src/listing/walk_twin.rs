//! The slow twin of the listing's line walker (`internals::listing_walk`): lines split the
//! way pi's readline splits them (`\n`, `\r\n`, lone `\r`), each line `Value::parse`d in
//! full, and the members the walker records taken from the parsed value. The fast walk
//! over the whole buffer must accept exactly the lines that parse to an object, end each
//! at its terminator, and record spans that parse alone to the same members, with the
//! kind (and `escaped` flag) of what they hold. The listing's unit tests (`twins.rs`) and
//! the fuzz crate (`fuzz/src/lib.rs`, with `#[path]`) compile it.

use pi_session::Value;
use pi_session::internals::{Field, Kind, WalkedBlock, WalkedLine, listing_walk};

/// The lines of `buf` as pi's readline cuts them: `(start, end)` with the terminator at
/// `end` (or `end == buf.len()`).
pub fn readline_pieces(buf: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < buf.len() {
        match buf[i] {
            b'\n' => {
                out.push((start, i));
                start = i + 1;
            }
            b'\r' => {
                out.push((start, i));
                if buf.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < buf.len() {
        out.push((start, buf.len()));
    }
    out
}

fn kind_of(v: &Value<'_>, raw: &[u8]) -> Kind {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(true) => Kind::True,
        Value::Bool(false) => Kind::False,
        Value::Number(_) => Kind::Number,
        Value::String(_) => Kind::String {
            escaped: raw.contains(&b'\\'),
        },
        Value::Array(_) => Kind::Array,
        Value::Object(_) => Kind::Object,
    }
}

/// A recorded span against the member the full parse gives.
fn same_member(buf: &[u8], what: &str, got: Option<Field>, want: Option<&Value<'_>>) {
    match (got, want) {
        (None, None) => {}
        (Some(f), Some(v)) => {
            let raw = &buf[f.start..f.end];
            let alone = Value::parse(raw).unwrap_or_else(|e| panic!("{what}: span {raw:?} does not parse: {e:?}"));
            assert_eq!(&alone, v, "{what}: span {raw:?}");
            assert_eq!(f.kind, kind_of(v, raw), "{what}: kind of {raw:?}");
        }
        (g, w) => panic!("{what}: walker recorded {g:?}, the parse has {w:?}"),
    }
}

/// The walk of one piece against its full parse; whether the walker accepted it.
fn check_piece(buf: &[u8], start: usize, end: usize) -> bool {
    let mut first = start;
    while first < end && matches!(buf[first], b' ' | b'\t') {
        first += 1;
    }
    if first == end || buf[first] != b'{' {
        return false; // the listing walks only object lines
    }
    let parsed = Value::parse(&buf[start..end]);
    let walked = listing_walk(buf, first);
    let (v, w): (Value<'_>, WalkedLine) = match (parsed, walked) {
        (Ok(v @ Value::Object(_)), Ok(w)) => (v, w),
        (Err(_), Err(_)) => return false,
        (p, w) => panic!("line {:?}: parse {p:?}, walk {w:?}", &buf[start..end]),
    };
    let Some(o) = v.as_object() else {
        unreachable!("matched an object")
    };
    assert_eq!(w.term, end, "the walk ends the line at its terminator");
    same_member(buf, "type", w.ty, o.get("type"));
    same_member(buf, "timestamp", w.timestamp, o.get("timestamp"));
    same_member(buf, "name", w.name, o.get("name"));
    let msg = o.get("message");
    // The walker does not record `escaped` for `message` itself.
    let plain = |k: Kind| match k {
        Kind::String { .. } => Kind::String { escaped: false },
        k => k,
    };
    assert_eq!(
        w.message.map(plain),
        msg.map(|m| plain(kind_of(m, b""))),
        "message kind"
    );
    let m = msg.and_then(Value::as_object);
    same_member(buf, "role", w.role, m.and_then(|m| m.get("role")));
    same_member(
        buf,
        "message.timestamp",
        w.message_timestamp,
        m.and_then(|m| m.get("timestamp")),
    );
    let content = m.and_then(|m| m.get("content"));
    same_member(buf, "content", w.content, content);
    let want: &[Value<'_>] = match content {
        Some(Value::Array(a)) => a,
        _ => &[],
    };
    assert_eq!(w.blocks.len(), want.len(), "content blocks");
    for (k, (b, v)) in w.blocks.iter().zip(want).enumerate() {
        match (b, v) {
            (WalkedBlock::Null, Value::Null) => {}
            (WalkedBlock::Obj { ty, text }, Value::Object(bo)) => {
                same_member(buf, &format!("block {k} type"), *ty, bo.get("type"));
                same_member(buf, &format!("block {k} text"), *text, bo.get("text"));
            }
            (WalkedBlock::Other, v) if !matches!(v, Value::Null | Value::Object(_)) => {}
            (b, v) => panic!("block {k}: walker {b:?}, parse {v:?}"),
        }
    }
    true
}

/// Every line of `buf` through both walkers; how many lines the walker accepted.
pub fn walk_vs_parse(buf: &[u8]) -> usize {
    readline_pieces(buf)
        .into_iter()
        .filter(|&(start, end)| check_piece(buf, start, end))
        .count()
}

//! Property tests: the fast line scanner against the full decoder, and the full decoder
//! against serde_json (a different, widely used implementation) where their semantics
//! coincide; the index's line splitting against a naive split. Unit tests, so that
//! `cargo test` needs no feature beyond the defaults.

use crate::index::line::{Line, scan_line};
use crate::json::Value;
use proptest::prelude::*;

/// Lines built from JSON-ish pieces, then mutated, so that both valid and nearly-valid
/// inputs are common.
fn json_line() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"{".to_vec()),
        Just(b"}".to_vec()),
        Just(b"[".to_vec()),
        Just(b"]".to_vec()),
        Just(b",".to_vec()),
        Just(b":".to_vec()),
        Just(b"\"id\"".to_vec()),
        Just(b"\"type\"".to_vec()),
        Just(b"\"parentId\"".to_vec()),
        Just(b"\"\\u0069d\"".to_vec()),
        Just(b"\"message\"".to_vec()),
        Just(b"\"a\\\"b\\\\\"".to_vec()),
        Just(b"\"\\ud800\"".to_vec()),
        Just(b"\"\xff\xfe\"".to_vec()),
        Just(b"\"\xc3\xa9\"".to_vec()),
        Just(b"null".to_vec()),
        Just(b"true".to_vec()),
        Just(b"false".to_vec()),
        Just(b"-0".to_vec()),
        Just(b"12.5e3".to_vec()),
        Just(b"1e400".to_vec()),
        Just(b" ".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\t".to_vec()),
        proptest::collection::vec(any::<u8>(), 1..3),
    ];
    let templates = prop_oneof![
        Just(br#"{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"x\n"}]}}"#.to_vec()),
        Just(br#"{"id":"b","id":"c","parentId":"a","x":[1,2,{"id":3}],"type":"label"}"#.to_vec()),
        Just(br#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":"a"}],"usage":{"in":1},"role":"assistant"}}"#.to_vec()),
        Just(br#"{"message":{ "role" : 7 , "\u0072ole":"x","n":[{"role":1}]},"id":"m"}"#.to_vec()),
        Just(br#"{"message":{"role":"toolResult","content":"a\nb","isError":false,"timestamp":17}}"#.to_vec()),
        Just(br#"[1,"two",{"three":3}]"#.to_vec()),
        Just(br#""""#.to_vec()),
        Just(b"0".to_vec()),
        // Keys past the first 255 bytes, a message that is not the last member.
        Just(format!(r#"{{"pad":"{}","id":"late","parentId":"late","message":{{"role":"user"}},"z":1}}"#, "p".repeat(300)).into_bytes()),
        Just(br#"{"type":"message","id":"e1","parentId":"e0","message":{"role":"assistant"} }"#.to_vec()),
        proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat()),
    ];
    (
        templates,
        proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 0..4),
    )
        .prop_map(|(mut t, edits)| {
            for (at, byte, op) in edits {
                let at = if t.is_empty() { 0 } else { at % (t.len() + 1) };
                match op {
                    0 => t.insert(at, byte),
                    1 if at < t.len() => {
                        t.remove(at);
                    }
                    _ if at < t.len() => t[at] = byte,
                    _ => {}
                }
            }
            t.retain(|&b| b != b'\n');
            t
        })
}

fn field_value<'a>(line: &'a [u8], f: Option<crate::json::Field>) -> Option<Value<'a>> {
    f.map(|f| Value::parse(f.raw(line)).expect("a recorded field parses alone"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn scanner_agrees_with_the_full_decoder(line in json_line()) {
        let full = Value::parse(&line);
        match scan_line(&line) {
            Line::Blank => prop_assert!(full.is_err() || crate::js::string::is_js_blank(&line)),
            Line::Malformed(_) => prop_assert!(full.is_err(), "scanner rejects, decoder accepts: {:?}", String::from_utf8_lossy(&line)),
            Line::Falsy => prop_assert!(!full.expect("decoder accepts").truthy()),
            Line::NonObject => {
                let v = full.expect("decoder accepts");
                prop_assert!(v.truthy() && v.as_object().is_none());
            }
            Line::Object(f) => {
                let v = full.expect("decoder accepts");
                let o = v.as_object().expect("an object");
                for (field, key) in [(f.id, "id"), (f.ty, "type"), (f.parent_id, "parentId"), (f.message, "message"), (f.timestamp, "timestamp")] {
                    let got = field_value(&line, field);
                    prop_assert_eq!(got.as_ref(), o.get(key), "{}", key);
                }
                // The message's role (read from its first member, the rest skipped, when
                // it can be).
                let role = o.get("message").and_then(Value::as_object).and_then(|m| m.get("role"));
                let got = field_value(&line, f.role);
                prop_assert_eq!(got.as_ref(), role, "role");
            }
        }
    }

    #[test]
    fn decoder_agrees_with_serde_json(line in json_line()) {
        // Where both define the same thing: valid UTF-8, no surrogate escapes (serde_json
        // rejects lone ones), no numbers out of f64 range (serde_json rejects 1e400).
        let line = String::from_utf8_lossy(&line).into_owned().into_bytes();
        let text = String::from_utf8_lossy(&line).to_lowercase();
        if text.contains("\\ud") || text.contains("e4") {
            return Ok(());
        }
        let ours = Value::parse(&line);
        let theirs: Result<serde_json::Value, _> = serde_json::from_slice(&line);
        prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{:?}", String::from_utf8_lossy(&line));
        if let (Ok(a), Ok(b)) = (ours, theirs) {
            prop_assert!(same(&a, &b), "{:?}", String::from_utf8_lossy(&line));
        }
    }

    #[test]
    fn index_lines_match_a_naive_split(chunks in proptest::collection::vec(json_line(), 0..40), chunk in 1usize..64) {
        let text = chunks.join(&b'\n');
        let idx = crate::index::build_with(&text, chunk);
        let naive: Vec<&[u8]> = if text.is_empty() { Vec::new() } else { text.split(|&b| b == b'\n').collect() };
        let naive: Vec<&[u8]> = if text.last() == Some(&b'\n') { naive[..naive.len() - 1].to_vec() } else { naive };
        prop_assert_eq!(idx.lines as usize, naive.len());
        let kept: Vec<usize> = naive.iter().enumerate().filter(|(_, l)| matches!(scan_line(l), Line::Object(_) | Line::NonObject)).map(|(i, _)| i + 1).collect();
        let got: Vec<usize> = idx.iter(&text).map(|e| e.line.0 as usize).collect();
        prop_assert_eq!(got, kept);
        prop_assert_eq!(idx.len() + idx.skipped.len(), naive.len());
    }
}

/// The key a decoded value makes (`None`: an object or array, unique per occurrence).
fn key_of_value(v: Option<&Value<'_>>) -> Option<crate::index::Key> {
    use crate::index::Key;
    Some(match v {
        None => Key::Undefined,
        Some(Value::Null) => Key::Null,
        Some(Value::Bool(b)) => Key::Bool(*b),
        Some(Value::Number(n)) => Key::Num(if *n == 0.0 { 0f64.to_bits() } else { n.to_bits() }),
        Some(Value::String(s)) => Key::Str(s.as_bytes().into()),
        Some(_) => return None,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, failure_persistence: None, ..ProptestConfig::default() })]

    /// The compact records (keys as places in the line or in side tables, lengths from
    /// the next record, the message span implied) give what the full decoder reads from
    /// each kept line, however the file is cut into runs.
    #[test]
    fn records_hold_what_the_decoder_reads(lines in proptest::collection::vec(json_line(), 1..24), chunk in 1usize..96) {
        use crate::index::{EntryType, Key, Role};
        let text = lines.join(&b'\n');
        let idx = crate::index::build_with(&text, chunk);
        let mut k = 0;
        let mut at = 0usize;
        for line in text.split(|&b| b == b'\n') {
            let offset = at;
            at += line.len() + 1;
            if !matches!(scan_line(line), Line::Object(_) | Line::NonObject) {
                continue;
            }
            let e = idx.get(&text, k);
            k += 1;
            prop_assert_eq!((e.offset.0, e.len), (offset as u64, line.len() as u64));
            let v = Value::parse(line).expect("a kept line parses");
            let Some(o) = v.as_object() else {
                prop_assert_eq!(e.ty, EntryType::NonObject);
                continue;
            };
            let ty = match o.get("type") {
                Some(Value::String(t)) => EntryType::from_type_str(t.as_bytes()),
                _ => EntryType::Other,
            };
            prop_assert_eq!(e.ty, ty);
            for (got, key) in [(e.id, "id"), (e.parent, "parentId")] {
                match key_of_value(o.get(key)) {
                    Some(want) => prop_assert_eq!(got, want, "{}", key),
                    None => prop_assert!(matches!(got.non_string(), Some(Key::Unique(_))), "{}", key),
                }
            }
            prop_assert_eq!(e.id_is_string, matches!(o.get("id"), Some(Value::String(_))));
            prop_assert_eq!(e.message_kind.is_some(), o.get("message").is_some());
            if let (Some((s, end)), Some(m)) = (e.message.get(), o.get("message")) {
                let raw = line.get(s..end).expect("the span is in the line");
                prop_assert_eq!(&Value::parse(raw).expect("the span parses"), m);
            }
            let role = match o.get("message").and_then(Value::as_object).map(|m| m.get("role")) {
                Some(Some(Value::String(r))) => Role::from_name(r.as_bytes()),
                Some(Some(_)) => Role::NotString,
                _ => Role::Missing,
            };
            prop_assert_eq!(e.role, role);
        }
        prop_assert_eq!(k, idx.len());
    }
}

fn same(a: &Value<'_>, b: &serde_json::Value) -> bool {
    match (a, b) {
        (Value::Null, serde_json::Value::Null) => true,
        (Value::Bool(x), serde_json::Value::Bool(y)) => x == y,
        (Value::Number(x), serde_json::Value::Number(y)) => y.as_f64().is_some_and(|y| y == *x),
        (Value::String(x), serde_json::Value::String(y)) => x.as_bytes() == y.as_bytes(),
        (Value::Array(x), serde_json::Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), serde_json::Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| k.as_str().and_then(|k| y.get(k)).is_some_and(|w| same(v, w)))
        }
        _ => false,
    }
}

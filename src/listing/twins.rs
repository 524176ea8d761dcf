//! The listing against its slow twin and against files that change under it (unit tests,
//! so that `cargo test` needs no feature beyond the defaults).
//!
//! - The line walker (`internals::listing_walk`) against `Value::parse` of each line cut
//!   as pi's readline cuts it (`walk_twin.rs`, shared with the `listing_walk` fuzz
//!   target), over generated entry lines, hostile token soup, and both with bytes flipped.
//! - `list_all` over mapped files that another thread keeps rewriting in place: every
//!   file is listed or skipped, and nothing panics.

#[path = "walk_twin.rs"]
mod twin;

use proptest::prelude::*;

/// Keys the walker records, and some it skips.
const KEYS: &[&str] = &[
    "type",
    "timestamp",
    "name",
    "message",
    "role",
    "content",
    "text",
    "id",
    "t\\u0079pe",
    "x",
    "",
];

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_string()),
        Just("true".to_string()),
        Just("false".to_string()),
        Just("0".to_string()),
        Just("-0".to_string()),
        Just("1735776000001".to_string()),
        Just("1.5e3".to_string()),
        Just("\"user\"".to_string()),
        Just("\"assistant\"".to_string()),
        Just("\"message\"".to_string()),
        Just("\"session_info\"".to_string()),
        Just("\"text\"".to_string()),
        Just("\"us\\u0065r\"".to_string()),
        Just("\"a\\nb\\\"c\\\\\"".to_string()),
        Just("\"\\ud800\"".to_string()),
        Just("\"\u{e9}\u{1f600}\"".to_string()),
        Just("\"2025-01-02T00:00:00.000Z\"".to_string()),
        "[a-z ]{0,12}".prop_map(|s| format!("\"{s}\"")),
    ]
}

/// JSON text with the keys the walker cares about, nested a few levels, with blank white
/// space sprinkled between tokens.
fn value() -> impl Strategy<Value = String> {
    let ws = prop_oneof![Just(""), Just(""), Just(" "), Just("\t"), Just(" \t ")];
    scalar().prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((prop::sample::select(KEYS), ws.clone(), inner), 0..6).prop_map(|m| {
                let body: Vec<String> = m
                    .into_iter()
                    .map(|(k, w, v)| format!("{w}\"{k}\"{w}:{w}{v}{w}"))
                    .collect();
                format!("{{{}}}", body.join(","))
            }),
        ]
    })
}

/// An entry line: an object with a type and maybe a message.
fn entry() -> impl Strategy<Value = String> {
    (
        value(),
        value(),
        prop::sample::select(&["message", "session_info", "x"][..]),
    )
        .prop_map(|(m, n, t)| {
            format!("{{\"type\":\"{t}\",\"timestamp\":\"2025-01-02T00:00:00.000Z\",\"message\":{m},\"name\":{n}}}")
        })
}

/// Hostile bytes: pieces of JSON in any order, line ends of every kind, bytes that are
/// never valid.
fn soup() -> impl Strategy<Value = Vec<u8>> {
    let token = prop::sample::select(
        &[
            "{",
            "}",
            "[",
            "]",
            ":",
            ",",
            "\"",
            "\\",
            "\"type\"",
            "\"message\"",
            "\"content\"",
            "\"role\"",
            "\"text\"",
            "\"user\"",
            "null",
            "1",
            "-",
            "e5",
            " ",
            "\t",
            "\n",
            "\r",
            "\r\n",
            "\u{0}",
            "\u{b}",
            "\u{c}",
            "\"\\u00",
            "\u{a0}",
            "tru",
            "\u{ff}",
        ][..],
    );
    prop::collection::vec(token, 0..60).prop_map(|t| t.concat().into_bytes())
}

fn buffer() -> impl Strategy<Value = Vec<u8>> {
    let end = prop::sample::select(&["\n", "\r\n", "\r", "\n\n", " \t\r"][..]);
    prop::collection::vec((prop_oneof![entry().prop_map(String::into_bytes), soup()], end), 1..8).prop_map(|v| {
        v.into_iter()
            .flat_map(|(mut l, e)| {
                l.extend_from_slice(e.as_bytes());
                l
            })
            .collect()
    })
}

/// pi's `readSessionHeader` as it reads: the whole first `limit` bytes at once, then each
/// line in turn (the slow twin of `find::header_from`).
fn header_twin(bytes: &[u8], limit: usize) -> Option<crate::json::Value<'static>> {
    let over = bytes.len() > limit;
    let buf = &bytes[..bytes.len().min(limit)];
    let mut pos = 0;
    loop {
        let (line, next) = match memchr::memchr(b'\n', &buf[pos..]) {
            Some(o) => (&buf[pos..pos + o], Some(pos + o + 1)),
            None if over => return None,
            None => (&buf[pos..], None),
        };
        if let Ok(v) = crate::json::value::parse(line)
            && v.truthy()
        {
            let ok = v.get("type").and_then(crate::json::Value::as_str) == Some("session")
                && matches!(v.get("id"), Some(crate::json::Value::String(_)));
            return ok.then(|| v.into_owned());
        }
        pos = next?;
    }
}

/// Lines a header search meets: garbage, falsy values, headers with and without an id.
fn header_lines() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        Just(r#"{"type":"session","id":"s1","cwd":"/p"}"#.to_string()),
        Just(r#"{"type":"session","id":7}"#.to_string()),
        Just(r#"{"type":"message","id":"a"}"#.to_string()),
        Just("null".to_string()),
        Just("0".to_string()),
        Just("".to_string()),
        "[ -~]{0,40}",
        "x{0,300}",
    ];
    (prop::collection::vec(line, 0..6), any::<bool>()).prop_map(|(lines, last_break)| {
        let mut b = lines.join("\n").into_bytes();
        if last_break {
            b.push(b'\n');
        }
        b
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The chunked header search finds what reading the first `limit` bytes at once finds,
    /// for every limit and first chunk (lines that end just before, at and after the limit).
    #[test]
    fn the_header_search_reads_as_pi_reads(bytes in header_lines(), limit in 1usize..400, near in any::<prop::sample::Index>(), delta in 0usize..3, chunk in 1usize..64) {
        // Half the cases put the limit just before, at or after a line break.
        let breaks: Vec<usize> = memchr::memchr_iter(b'\n', &bytes).collect();
        let limit = if breaks.is_empty() || limit % 2 == 0 {
            limit
        } else {
            (breaks[near.index(breaks.len())] + delta).max(1)
        };
        let want = header_twin(&bytes, limit).map(|v| v.stringify());
        let got = super::find::header_from(&bytes[..], limit, chunk).map(|v| v.stringify());
        prop_assert_eq!(got, want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn the_walker_records_what_a_full_parse_finds(buf in buffer()) {
        twin::walk_vs_parse(&buf);
    }

    #[test]
    fn the_walker_agrees_on_lines_with_a_byte_flipped(buf in buffer(), at in any::<prop::sample::Index>(), to in any::<u8>()) {
        let mut buf = buf;
        let i = at.index(buf.len());
        buf[i] = to;
        twin::walk_vs_parse(&buf);
    }
}

#[test]
fn the_generated_lines_are_mostly_valid_entries() {
    // Not a vacuous twin: most generated entry lines are valid and get compared member by
    // member (checked on a sample of the same generator).
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut accepted = 0;
    for _ in 0..200 {
        let line = entry().new_tree(&mut runner).expect("a value").current();
        accepted += twin::walk_vs_parse(line.as_bytes());
    }
    assert!(accepted > 150, "only {accepted} of 200 entry lines valid");
}

#[test]
fn the_twin_splits_lines_as_readline() {
    assert_eq!(
        twin::readline_pieces(b"a\nb\r\nc\rd\r\r\ne"),
        vec![(0, 1), (2, 3), (5, 6), (7, 8), (9, 9), (11, 12)]
    );
    assert_eq!(twin::readline_pieces(b"a\n"), vec![(0, 1)]);
    assert_eq!(twin::readline_pieces(b""), vec![]);
}

/// Files of the listing rewritten in place (same length, never shorter: a truncation of a
/// mapped file is a SIGBUS, which no code can turn into an answer) while `list_all` maps
/// them: each listing must finish, list or skip every file, and never panic.
#[test]
fn a_listing_survives_files_rewritten_while_it_maps_them() {
    use pi_session::ReadMode;
    use pi_session::listing::{ListOptions, list_all};
    use std::io::{Seek, Write};
    use std::sync::atomic::{AtomicBool, Ordering};

    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("--p--");
    std::fs::create_dir(&dir).expect("folder");
    // Escapes everywhere, so that the flipped version's spans no longer decode.
    let mut a =
        String::from("{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n");
    for k in 0..400 {
        a.push_str(&format!(
            "{{\"type\":\"mess\\u0061ge\",\"timestamp\":\"2025-01-02T00:00:00.000Z\",\"message\":{{\"role\":\"us\\u0065r\",\"content\":[{{\"type\":\"te\\u0078t\",\"text\":\"line {k:04} \\\\ \\\" \\u00e9\"}}]}}}}\n"
        ));
    }
    let a = a.into_bytes();
    // The same length: every backslash and quote swapped.
    let b: Vec<u8> = a
        .iter()
        .map(|&c| match c {
            b'\\' => b'"',
            b'"' => b'\\',
            c => c,
        })
        .collect();
    let files: Vec<_> = (0..8)
        .map(|i| dir.join(format!("2025-01-01T00-00-0{i}-000Z_s{i}.jsonl")))
        .collect();
    for f in &files {
        std::fs::write(f, &a).expect("write");
    }
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut open: Vec<std::fs::File> = files
                .iter()
                .map(|f| std::fs::OpenOptions::new().write(true).open(f).expect("open"))
                .collect();
            let mut flip = false;
            while !stop.load(Ordering::Relaxed) {
                flip = !flip;
                for f in &mut open {
                    f.rewind().expect("rewind");
                    f.write_all(if flip { &b } else { &a }).expect("rewrite");
                }
            }
        });
        let until = std::time::Instant::now() + std::time::Duration::from_millis(1500);
        let mut runs = 0;
        while std::time::Instant::now() < until || runs < 5 {
            let mut opts = ListOptions {
                read_mode: ReadMode::Mmap,
                ..ListOptions::default()
            };
            let l = list_all(root.path(), &mut opts).expect("not cancelled");
            assert_eq!(l.sessions.len() + l.skipped.len(), files.len());
            runs += 1;
        }
        stop.store(true, Ordering::Relaxed);
    });
}

/// A session file's lines: a header (or garbage first), messages of every kind pi counts
/// or throws on, names, and the walker's hostile lines, each with any line end.
fn session_lines() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        3 => Just(r#"{"type":"message","timestamp":"2025-01-02T00:00:00.000Z","message":{"role":"user","content":"hi there"}}"#.to_string()),
        3 => Just(r#"{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image","data":"AA"},{"type":"text","text":"b\nc"}],"timestamp":1735776000001}}"#.to_string()),
        1 => Just(r#"{"type":"message","message":{"role":"user","content":[{"type":"image"}]}}"#.to_string()),
        1 => Just(r#"{"type":"message","message":{"role":"toolResult","content":"out"}}"#.to_string()),
        1 => Just(r#"{"type":"session_info","name":"  named  "}"#.to_string()),
        1 => Just(r#"{"type":"session_info","name":null}"#.to_string()),
        1 => Just(r#"{"type":"session_info","name":3}"#.to_string()),
        1 => Just(r#"{"type":"message"}"#.to_string()),
        1 => Just(r#"{"type":"session","id":"again"}"#.to_string()),
        1 => Just("null".to_string()),
        1 => Just("".to_string()),
        2 => entry(),
        1 => soup().prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ];
    let first = prop_oneof![
        6 => Just(r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#.to_string()),
        1 => Just(r#"{"type":"message","id":"a"}"#.to_string()),
        1 => Just("0".to_string()),
        1 => Just("{\"type\":\"sess".to_string()),
    ];
    let end = prop::sample::select(&["\n", "\n", "\r\n", "\r", "\n\n"][..]);
    (first, end.clone(), prop::collection::vec((line, end), 0..10)).prop_map(|(h, he, lines)| {
        let mut b = format!("{h}{he}").into_bytes();
        for (l, e) in lines {
            b.extend_from_slice(l.as_bytes());
            b.extend_from_slice(e.as_bytes());
        }
        b
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// A file listed when it ended at any byte, then grown to its whole: the listing
    /// carried on from what the first listing kept (the listing cache's append path)
    /// is the listing of the whole file read at once, and keeps the same carry.
    #[test]
    fn a_listing_carried_on_after_an_append_is_the_listing_of_the_whole(
        bytes in session_lines(),
        cut in any::<prop::sample::Index>(),
        trim in any::<prop::sample::Index>(),
        skip_text in any::<bool>(),
    ) {
        // Sometimes without its last line end, to complete later.
        let bytes = &bytes[..bytes.len() - trim.index(2).min(bytes.len())];
        let k = cut.index(bytes.len() + 1);
        if let Err(e) = super::checks::carry_twin(bytes, k, skip_text) {
            prop_assert!(false, "{}", e);
        }
    }
}

/// A cache file of three entries of every kind (listed with a carry and text, dropped,
/// listed without either), as the listing writes one.
fn a_cache_file() -> Vec<u8> {
    use super::info::Carry;
    use super::read::Memo;
    use super::store::{Entry, Outcome, encode};
    use crate::source::Stamp;
    let memo = |n: u64, carry: Option<Carry>| Memo {
        stamp: Stamp::from_parts([1, n, 100 + n, 5, 6, 7, 8]),
        carry,
        print: n * 3,
        header_line: Some(br#"{"type":"session","id":"s"}"#.to_vec()),
    };
    let carry = Carry {
        offset: 40,
        dropped: None,
        header_line: Some(br#"{"type":"session","id":"s"}"#.to_vec()),
        message_count: 2,
        first_message: Some(b"hi".to_vec()),
        name: Some(b"other".to_vec()),
        last_activity: Some(1.5),
        any_text: true,
        text_len: 2,
    };
    let (m1, m2, m3) = (
        memo(1, Some(carry)),
        memo(2, Some(Carry::dropped_for_tests())),
        memo(3, None),
    );
    let listed = |first: &'static [u8]| {
        Outcome::Listed(super::store::Listed {
            id: Some(std::borrow::Cow::Borrowed(&b"\"s\""[..])),
            cwd: b"/p",
            parent: None,
            created: f64::NAN,
            name: Some(b"n"),
            modified: 2.0,
            message_count: 3,
            first_message: first,
            bytes: 101,
        })
    };
    let mut e1 = Entry::fresh(b"/a/1.jsonl", &m1, false, listed(b"hi"), true);
    e1.text = Some((24, 2, 99));
    let e2 = Entry::fresh(
        b"/a/2.jsonl",
        &m2,
        true,
        Outcome::Dropped(crate::listing::SkipFileReason::PiThrows("null content block")),
        false,
    );
    let e3 = Entry::fresh(b"/a/3.jsonl", &m3, false, listed(b""), false);
    encode(b"all\0/a", 77, &[e1, e2, e3])
}

#[test]
fn a_cache_file_decodes_to_what_was_encoded() {
    assert_eq!(super::checks::cache_file_roundtrip(&a_cache_file()), Ok(true));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A cache file with any byte changed, or cut anywhere: refused or decoded (then
    /// stable under a round trip), never a panic.
    #[test]
    fn a_damaged_cache_file_is_refused_or_decoded_never_a_panic(
        at in any::<prop::sample::Index>(),
        to in any::<u8>(),
        cut in any::<prop::sample::Index>(),
        fix_hash in any::<bool>(),
    ) {
        let mut bytes = a_cache_file();
        let i = at.index(bytes.len());
        bytes[i] = to;
        if fix_hash {
            // Past the checksum: the decoder itself meets the changed byte.
            if let Ok(s) = super::store::sections_unchecked(&bytes) {
                let h = xxhash_rust::xxh3::xxh3_128(&bytes[s.clone()]);
                bytes[s.start - 16..s.start].copy_from_slice(&h.to_le_bytes());
            }
        }
        let n = cut.index(bytes.len() + 1);
        let r = super::checks::cache_file_roundtrip(&bytes[..n.max(bytes.len() * usize::from(fix_hash))]);
        prop_assert!(r.is_ok(), "{:?}", r);
    }
}

/// `ls --json`'s line writer against its slow twin: the `SessionInfo` as a `Value`
/// (`to_value`) through `JSON.stringify`, for sessions with every kind of field (missing
/// values, invalid dates, any JSON id, escapes and lone surrogates); a path that is not
/// UTF-8 adds `pathBytes`, its bytes.
#[test]
fn the_json_line_writer_writes_what_to_value_stringifies() {
    use crate::js::string::JsStr;
    use crate::json::Value;
    use crate::listing::SessionInfo;
    let base = SessionInfo {
        path: "/s/a \"b\"\u{7}.jsonl".into(),
        id: Some(Value::string("0195".to_owned())),
        cwd: JsStr::from_str("/p\\q").into_owned(),
        name: Some(JsStr(b"n\xed\xa0\x80".to_vec().into())),
        parent_session_path: None,
        created: f64::NAN,
        modified: 1_735_776_000_001.0,
        message_count: 3,
        first_message: JsStr::from_str("hi\nthere\u{2028}").into_owned(),
        all_messages_text: JsStr::from_str("hi\nthere yo").into_owned(),
        bytes: 10,
        text_ref: None,
    };
    let mut other = base.clone();
    other.id = crate::json::value::parse(br#"{"x":[1,-0,1e21,null,"\ud800"]}"#)
        .ok()
        .map(Value::into_owned);
    other.name = None;
    other.parent_session_path = Some(Value::Number(7.0));
    other.created = -62_198_755_200_000.0;
    other.modified = 8.64e15 + 1.0;
    for s in [&base, &other] {
        for text in [false, true] {
            let mut line = Vec::new();
            s.write_json_line(text, &mut line);
            let mut want = s.to_value(&s.path.to_string_lossy(), text).stringify().into_bytes();
            want.push(b'\n');
            assert_eq!(String::from_utf8_lossy(&line), String::from_utf8_lossy(&want));
        }
    }
    use std::os::unix::ffi::OsStrExt;
    let mut odd = base.clone();
    odd.path = std::ffi::OsStr::from_bytes(b"/s/caf\xe9.jsonl").into();
    let mut line = Vec::new();
    odd.write_json_line(false, &mut line);
    let v = crate::json::value::parse(&line[..line.len() - 1]).expect("a JSON line");
    let bytes: Vec<u8> = match v.get("pathBytes") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|b| if let Value::Number(n) = b { *n as u8 } else { 0 })
            .collect(),
        _ => panic!("pathBytes: {}", String::from_utf8_lossy(&line)),
    };
    assert_eq!(bytes, b"/s/caf\xe9.jsonl");
    assert_eq!(v.get("path").and_then(Value::as_str), Some("/s/caf\u{fffd}.jsonl"));
}

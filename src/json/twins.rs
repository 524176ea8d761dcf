//! Every fast path of this folder against its slow twin, for every kernel this CPU has
//! and every white-space flavour: the block string skipper against
//! [`super::string::skip_string_naive`], the structural walker against the exact walker
//! of [`super::walk`], the block-wise string decoder (and `Value::parse` through it)
//! against [`super::string::decode_string_naive`].

use super::dispatch::Isa;
use super::dispatch::{kernels, skip_container_kernel, skip_string_kernel};
use super::string::skip_string_naive;
use super::walk::{max_depth, skip_container_exact_ws, skip_string};
use super::{SyntaxError, ws};

/// The kernel the walkers run on this CPU.
fn best() -> Isa {
    *kernels().last().expect("SWAR at least")
}

mod strings {
    use super::*;

    fn both(s: &[u8]) {
        for k in kernels() {
            same_as_naive(&format!("{k:?}"), s, skip_string_kernel(k, s, 0));
        }
        // The walkers' entry point: the short-string look, then the best kernel.
        same_as_naive("walk::skip_string", s, skip_string(s, 0));
    }

    #[test]
    fn short_strings_every_special_byte_at_every_position() {
        for len in 0..40 {
            for at in 0..=len {
                for special in [b'"', b'\\', b'\n', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xff] {
                    for tail in [&b"\""[..], b"", b"\"abcdefghijklmnopqrstuvwxyz0123456789"] {
                        let mut s = vec![b'"'];
                        s.extend(std::iter::repeat_n(b'x', len));
                        if at < len {
                            s[1 + at] = special;
                        }
                        s.extend_from_slice(tail);
                        both(&s);
                    }
                }
            }
        }
    }

    /// `fast` (from `who`) agrees with the naive skipper on `s`: same end, or an error at
    /// the same offset.
    fn same_as_naive(who: &str, s: &[u8], fast: Result<(usize, bool), SyntaxError>) {
        let naive = skip_string_naive(s, 0);
        let text = String::from_utf8_lossy(s);
        match (&fast, &naive) {
            (Ok(x), Ok(y)) => assert_eq!(x, y, "{who}: {text:?}"),
            (Err(x), Err(y)) => assert_eq!(x.offset, y.offset, "{who}: {text:?}: {x:?} vs {y:?}"),
            _ => panic!("{who}: {text:?}: fast {fast:?}, naive {naive:?}"),
        }
    }

    #[test]
    fn every_escape_at_every_block_offset() {
        let escapes: [&[u8]; 14] = [
            b"\\\"",
            b"\\\\",
            b"\\/",
            b"\\b",
            b"\\n",
            b"\\u00e9",
            b"\\uD83D",
            b"\\x",
            b"\\u12",
            b"\\\\\\\"",
            b"\x01",
            b"\\",
            b"\\\\\\",
            b"\"",
        ];
        for esc in escapes {
            for pad in 0..140 {
                for tail in [&b"\""[..], b"abc\"", b"", b"\\\""] {
                    let mut s = vec![b'"'];
                    s.extend(std::iter::repeat_n(b'x', pad));
                    s.extend_from_slice(esc);
                    s.extend_from_slice(tail);
                    s.extend_from_slice(b",rest");
                    both(&s);
                }
            }
        }
    }

    #[test]
    fn long_backslash_runs_across_blocks() {
        for run in 0..200 {
            for pad in [0, 1, 30, 62, 63, 64, 65] {
                let mut s = vec![b'"'];
                s.extend(std::iter::repeat_n(b'y', pad));
                s.extend(std::iter::repeat_n(b'\\', run));
                s.extend_from_slice(b"\"tail\"");
                both(&s);
            }
        }
    }
}

mod utf16 {
    use super::*;
    use crate::json::utf16::{utf16_len_json_kernel, utf16_len_json_naive};

    /// Every kernel counts `s` (a whole JSON string) as its decoding does.
    fn counts(s: &[u8]) {
        let want = utf16_len_json_naive(s);
        for k in kernels() {
            assert_eq!(
                utf16_len_json_kernel(k, s),
                want,
                "{k:?}: {:?}",
                String::from_utf8_lossy(s)
            );
        }
    }

    #[test]
    fn every_escape_and_character_at_every_block_offset() {
        let pieces: [&[u8]; 14] = [
            b"\\\"",
            b"\\\\",
            b"\\/",
            b"\\n",
            b"\\u00e9",
            b"\\ud83d\\ude00",
            b"\\ud800",
            b"\\\\u0041",
            b"\\\\\\\"",
            "é".as_bytes(),
            "€".as_bytes(),
            "😀".as_bytes(),
            b"\xff",
            b"\xf0\x9f",
        ];
        for p in pieces {
            for pad in 0..140 {
                for tail in [&b""[..], b"u", b"abc", "😀".as_bytes(), b"\\\\"] {
                    let mut s = vec![b'"'];
                    s.extend(std::iter::repeat_n(b'x', pad));
                    s.extend_from_slice(p);
                    s.extend_from_slice(tail);
                    s.push(b'"');
                    counts(&s);
                }
            }
        }
    }

    #[test]
    fn backslash_pairs_and_u_escapes_across_blocks() {
        for run in 0..100 {
            for pad in [0, 1, 30, 61, 62, 63, 64, 65, 127] {
                let mut s = vec![b'"'];
                s.extend(std::iter::repeat_n(b'y', pad));
                for _ in 0..run {
                    s.extend_from_slice(b"\\\\");
                }
                s.extend_from_slice(b"\\u0041u\"");
                counts(&s);
            }
        }
    }
}

mod containers {
    use super::*;

    /// The fast walker (every kernel) agrees with the exact one on `s` for all three
    /// flavours of white space: when it answers, the exact walker accepts with the same
    /// end; when the exact walker accepts a shallow value, it answers.
    fn agrees(s: &[u8]) {
        if !matches!(s.first(), Some(b'{' | b'[')) {
            return;
        }
        let text = String::from_utf8_lossy(s);
        flavour::<ws::Line>("line", s, &text);
        flavour::<ws::Json>("json", s, &text);
        flavour::<ws::Blank>("blank", s, &text);
    }

    fn flavour<W: ws::WhiteSpace>(name: &str, s: &[u8], text: &str) {
        let exact = skip_container_exact_ws::<W>(s, 0);
        for k in kernels() {
            match skip_container_kernel::<W>(k, s, 0) {
                Some(end) => assert_eq!(Some(end), exact, "{k:?} ws {name}: {text:?}"),
                None => assert!(
                    exact.is_none() || depth(s) > 64,
                    "{k:?} ws {name}: fast gave up on a valid value: {text:?}"
                ),
            }
        }
    }

    fn depth(s: &[u8]) -> usize {
        max_depth(s)
    }

    #[test]
    fn structures() {
        let cases: &[&[u8]] = &[
            b"{}",
            b"[]",
            b"[ ]",
            b"{ }",
            b"[1,2,3]",
            b"[1,2,3,]",
            b"[,1]",
            b"{\"a\":1}",
            b"{\"a\":1,}",
            b"{\"a\" : [true, false, null, -0.5e+3, \"x\\\"y\"], \"b\": {\"c\": {}}}",
            b"{\"a\":1 2}",
            b"[1 2]",
            b"[truex]",
            b"[tru]",
            b"[nul]",
            b"[-]",
            b"[01]",
            b"[1.]",
            b"[1e]",
            b"[\"a\"\"b\"]",
            b"[\"a\" \"b\"]",
            b"{\"a\"}",
            b"{\"a\":}",
            b"{1:2}",
            b"[}",
            b"{]",
            b"[[[]]",
            b"[\"\\u00e9\\n\\/\"]",
            b"[\"\\x\"]",
            b"[\"\\u12\"]",
            b"[\"\x01\"]",
            b"[1]\x01",
            b"[\"a\"]\"\x01",
            b"[1\r]",
            b"[1\n]",
            b"[1\t,\r\n2]",
            b"[\\]",
            b"[\"\xff\"]",
            b"[\xff]",
            b"{\"a\":[1,{\"b\":[2,{\"c\":3}]}]}",
            b"[1,2]] trailing",
            b"[\"unterminated",
            b"[1",
            b"[",
            b"{",
        ];
        for s in cases {
            agrees(s);
        }
    }

    #[test]
    fn every_token_at_every_block_offset() {
        let tokens: [&[u8]; 16] = [
            b"\"\\\\\"",
            b"\"a\\\"b\"",
            b"\"\\u00e9\"",
            b"\"\\u0g\"",
            b"-12.5e-3",
            b"true",
            b"null",
            b"false",
            b"{\"k\":[]}",
            b"\"\x01\"",
            b"\"\\q\"",
            b"tru",
            b"1 2",
            b"\"x\"\"y\"",
            b"\"a\\\\\\\\\\\"\"",
            b"{}",
        ];
        for t in tokens {
            for pad in 0..140 {
                for shape in 0..3 {
                    let mut s = Vec::new();
                    match shape {
                        0 => {
                            s.extend_from_slice(b"[\"");
                            s.extend(std::iter::repeat_n(b'x', pad));
                            s.extend_from_slice(b"\",");
                            s.extend_from_slice(t);
                            s.extend_from_slice(b",3]");
                        }
                        1 => {
                            s.extend_from_slice(b"{\"k\":");
                            s.extend(std::iter::repeat_n(b' ', pad));
                            s.extend_from_slice(t);
                            s.push(b'}');
                        }
                        _ => {
                            s.extend_from_slice(b"[");
                            s.extend(std::iter::repeat_n(b"1,".as_slice(), pad / 2).flatten());
                            s.extend_from_slice(t);
                            s.push(b']');
                        }
                    }
                    agrees(&s);
                    // Cut short at every length near the token.
                    for cut in s.len().saturating_sub(t.len() + 3)..s.len() {
                        agrees(&s[..cut]);
                    }
                }
            }
        }
    }

    #[test]
    fn long_backslash_runs_and_deep_nesting() {
        for run in 0..150 {
            for pad in [0, 1, 30, 61, 62, 63, 64, 65] {
                let mut s = b"[\"".to_vec();
                s.extend(std::iter::repeat_n(b'y', pad));
                s.extend(std::iter::repeat_n(b'\\', run));
                s.extend_from_slice(b"\",\"tail\"]");
                agrees(&s);
            }
        }
        for d in [1, 2, 63, 64, 65, 100, 200] {
            let s = format!("{}1{}", "[{\"a\":".repeat(d), "}]".repeat(d));
            agrees(s.as_bytes());
            let s = format!("{}{}", "[".repeat(d), "]".repeat(d));
            agrees(s.as_bytes());
        }
    }

    #[test]
    fn random_values() {
        let alphabet = b"[]{}\",:\\ \tunl01e-.a\x01\r\n\xff";
        let words: [&[u8]; 10] = [
            b"{\"a\":",
            b"[",
            b"]",
            b"}",
            b",",
            b"\"s\\\"t\"",
            b"12",
            b"true",
            b"\"x\"",
            b"null",
        ];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..60_000 {
            let len = (next() % 200) as usize;
            let mut s = vec![if round % 2 == 0 { b'[' } else { b'{' }];
            for _ in 0..len {
                let r = next();
                if r % 3 == 0 {
                    s.push(alphabet[(r >> 8) as usize % alphabet.len()]);
                } else {
                    s.extend_from_slice(words[(r >> 8) as usize % words.len()]);
                }
            }
            agrees(&s);
        }
    }

    #[test]
    #[cfg(feature = "generator")]
    fn valid_generated_values_are_answered() {
        // Real message bodies from the generator: the fast walker must answer on each.
        let mut spec = crate::generator::SessionSpec::new(5, 2 << 20);
        spec.mix = crate::generator::Mix::SmallEntries;
        let mut out = Vec::new();
        crate::generator::write_session(&spec, &mut out).expect("generate");
        let mut n = 0;
        for line in out.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            assert!(skip_container_kernel::<ws::Line>(best(), line, 0) == Some(line.len()));
            n += 1;
        }
        assert!(n > 1000);
    }
}

/// The block-wise string decoder (every kernel, the baseline entry, the dispatched one,
/// and `value::parse` with its short-string look) against the obvious decoder
/// [`super::string::decode_string_naive`]: the same string, borrowed exactly when the
/// naive one borrows, the same end, or the same error (offset and reason).
mod decode {
    use super::super::dispatch::decode_string_kernel;
    use super::super::string::{decode_string, decode_string_naive};
    use super::super::value::{parse, parse_naive};
    use super::*;
    use crate::js::string::JsStr;
    use proptest::prelude::*;
    use std::borrow::Cow;

    type Decoded<'a> = Result<(JsStr<'a>, usize), SyntaxError>;

    fn same(who: &str, s: &[u8], fast: &Decoded<'_>, naive: &Decoded<'_>) {
        let text = String::from_utf8_lossy(s);
        match (fast, naive) {
            (Ok((a, x)), Ok((b, y))) => {
                assert_eq!((a.as_bytes(), x), (b.as_bytes(), y), "{who}: {text:?}");
                assert_eq!(
                    matches!(a.0, Cow::Borrowed(_)),
                    matches!(b.0, Cow::Borrowed(_)),
                    "{who}: borrowed differs: {text:?}"
                );
            }
            (Err(x), Err(y)) => assert_eq!(x, y, "{who}: {text:?}"),
            _ => panic!("{who}: {text:?}: fast {fast:?}, naive {naive:?}"),
        }
    }

    /// Every decoder agrees with the naive one on the string at `start` of `s`, and
    /// `value::parse` with `parse_naive` on the whole text.
    pub(super) fn agrees(s: &[u8], start: usize) {
        let naive = decode_string_naive(s, start);
        for k in kernels() {
            same(&format!("{k:?}"), s, &decode_string_kernel(k, s, start), &naive);
        }
        same("baseline", s, &decode_string(s, start), &naive);
        same("dispatch", s, &super::super::dispatch::decode_string(s, start), &naive);
        let (fast, slow) = (parse(&s[start..]), parse_naive(&s[start..]));
        assert_eq!(fast, slow, "value::parse: {:?}", String::from_utf8_lossy(s));
        // Long strings deferred, then decoded: the same value (or an error as well).
        for min in [0, 64, 100] {
            let later = super::super::value::parse_deferring_resolved(&s[start..], min);
            match (&later, &fast) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "parse_deferring({min}): {:?}", String::from_utf8_lossy(s)),
                (Err(_), Err(_)) => {}
                _ => panic!(
                    "parse_deferring({min}) {later:?}, parse {fast:?}: {:?}",
                    String::from_utf8_lossy(s)
                ),
            }
        }
    }

    /// The pieces strings are made of: plain text, every escape (good and bad), lone and
    /// paired surrogates, multi-byte UTF-8 whole and cut, invalid bytes, controls, quotes.
    const PIECES: &[&[u8]] = &[
        b"a",
        b"plain text ",
        b"\\n",
        b"\\\"",
        b"\\\\",
        b"\\/",
        b"\\b",
        b"\\f",
        b"\\r",
        b"\\t",
        b"\\u00e9",
        b"\\u0000",
        b"\\uD83D\\uDE00",
        b"\\ud800",
        b"\\udc00",
        b"\\uDBFF",
        b"\\u12",
        b"\\uzzzz",
        b"\\x",
        b"\\\xc3\xa9",
        b"\\",
        b"\xc3\xa9",
        b"\xe2\x82\xac",
        b"\xf0\x9f\x98\x80",
        b"\xe2\x82",
        b"\xf0\x9f",
        b"\xc3",
        b"\x80",
        b"\xff",
        b"\xc0\xaf",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\x01",
        b"\x1f",
        b"\n",
        b"\x7f",
        b"\"",
    ];

    #[test]
    fn every_piece_at_every_block_offset() {
        let tails: [&[u8]; 5] = [b"\"", b"\",\"k\":1}", b"", b"\xe2\x82\xac\"", b"\\"];
        for piece in PIECES {
            for pad in 0..140 {
                for (t, tail) in tails.iter().enumerate() {
                    let mut s = vec![b'"'];
                    // Plain ASCII, or text with a multi-byte character every 7 bytes.
                    for k in 0..pad {
                        if t == 3 && k % 7 == 6 {
                            s.extend_from_slice("é".as_bytes());
                        } else {
                            s.push(b'x');
                        }
                    }
                    s.extend_from_slice(piece);
                    s.extend_from_slice(tail);
                    agrees(&s, 0);
                    // With text before the string, and cut short at every length near the piece.
                    let mut t = b"[1,".to_vec();
                    t.extend_from_slice(&s);
                    agrees(&t, 3);
                    for cut in s.len().saturating_sub(piece.len() + 2).max(1)..s.len() {
                        agrees(&s[..cut], 0);
                    }
                }
            }
        }
    }

    #[test]
    fn escape_dense_and_multibyte_runs_across_blocks() {
        for unit in [
            &b"ab\\n"[..],
            b"\\\\\\\"",
            b"x\\t\xc3\xa9\\u00e9",
            b"\xe2\x82\xac",
            b"\xf0\x9f\x98\x80a",
            b"\\ud83d\\ude00\xf0\x9f\x98\x80",
        ] {
            for pad in 0..70 {
                let mut s = vec![b'"'];
                s.extend(std::iter::repeat_n(b'y', pad));
                for _ in 0..60 {
                    s.extend_from_slice(unit);
                }
                s.push(b'"');
                agrees(&s, 0);
                // A bad byte at the end of the run, and cut short.
                let mut bad = s.clone();
                bad.insert(bad.len() - 1, 0xe2);
                agrees(&bad, 0);
                agrees(&s[..s.len() - 1], 0);
            }
        }
    }

    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            8 => proptest::sample::select(PIECES).prop_map(<[u8]>::to_vec),
            2 => proptest::collection::vec(b'a'..=b'z', 1..80),
            1 => proptest::collection::vec(any::<u8>(), 1..8),
        ]
    }

    proptest! {
        // 256 cases by default; `PROPTEST_CASES=100000` for a longer run.
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Random strings of pieces after 0..130 padding bytes (so every piece meets a
        /// block edge), closed or not, then cut at a random length.
        #[test]
        fn random_strings_agree(
            pad in 0usize..130,
            pieces in proptest::collection::vec(piece(), 0..40),
            close in any::<bool>(),
            cut in any::<proptest::sample::Index>(),
        ) {
            let mut s = vec![b'"'];
            s.extend(std::iter::repeat_n(b'p', pad));
            for p in &pieces {
                s.extend_from_slice(p);
            }
            if close {
                s.extend_from_slice(b"\",2]");
            }
            agrees(&s, 0);
            let n = 1 + cut.index(s.len());
            agrees(&s[..n], 0);
        }
    }
}

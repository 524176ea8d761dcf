//! The block-wise string decoder against the obvious one, for every kernel this CPU has,
//! at the first quotes of the input (so strings start at every offset of a 64-byte
//! block): the same WTF-8 bytes, borrowed exactly when the obvious decoder borrows, the
//! same end, or the same error (offset and reason). And `Value::parse` against its twin
//! with the obvious string decoder, on the whole input and from each of those quotes;
//! and `Value::parse_deferring` with its long strings decoded afterwards against it; and
//! the UTF-16 length counted on the JSON against the decoded string's.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_session::Value;
use pi_session::internals;
use std::borrow::Cow;

fuzz_target!(|data: &[u8]| {
    let whole = (Value::parse(data), internals::parse_naive(data));
    assert_eq!(whole.0, whole.1, "value::parse differs on the whole input");
    // Long strings left undecoded, then decoded: the same value (or an error too).
    for min in [64, 200] {
        match (internals::parse_deferring_resolved(data, min), &whole.0) {
            (Ok(a), Ok(b)) => assert_eq!(&a, b, "parse_deferring({min}) differs"),
            (Err(_), Err(_)) => {}
            (a, b) => panic!("parse_deferring({min}): {a:?}, parse: {b:?}"),
        }
    }
    for (i, _) in data.iter().enumerate().filter(|(_, c)| **c == b'"').take(8) {
        let naive = internals::decode_string_naive(data, i);
        // A string that decodes is measured on its JSON as its decoding measures it.
        if let Ok((_, end)) = &naive {
            let want = internals::utf16_len_json_naive(&data[i..*end]);
            for k in internals::kernels() {
                assert_eq!(internals::utf16_len_json_kernel(k, &data[i..*end]), want, "{k:?} at {i}: utf16 length");
            }
        }
        for k in internals::kernels() {
            let fast = internals::decode_string_kernel(k, data, i);
            match (&fast, &naive) {
                (Ok((a, x)), Ok((b, y))) => {
                    assert_eq!((a.as_ref(), x), (b.as_ref(), y), "{k:?} at {i}");
                    assert_eq!(
                        matches!(a, Cow::Borrowed(_)),
                        matches!(b, Cow::Borrowed(_)),
                        "{k:?} at {i}: borrowed differs"
                    );
                }
                (Err(a), Err(b)) => assert_eq!(a, b, "{k:?} at {i}"),
                _ => panic!("{k:?} at {i}: fast {fast:?}, naive {naive:?}"),
            }
        }
        assert_eq!(Value::parse(&data[i..]), internals::parse_naive(&data[i..]), "value::parse from {i}");
    }
});

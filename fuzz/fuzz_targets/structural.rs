//! The structural container walker against the exact descent walker, at the first
//! brackets of the input, for every white-space flavour and for the AVX-512 and the
//! portable byte classes: when the structural walker answers, the exact walker accepts
//! with the same end; when the exact walker accepts a value nested at most 64 deep, the
//! structural walker answers. Then the object-tail walker (the rest of an object after its
//! first member, refusing a later member of a given name) against the exact walk.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_session::internals::{self, Isa, WhiteSpace};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, text)) = data.split_first() else { return };
    let ws = WhiteSpace::ALL[usize::from(sel % 3)];
    let kernel = if sel & 0x80 != 0 { Isa::Swar } else { Isa::Avx512 };
    for (i, _) in text
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c, b'{' | b'['))
        .take(8)
    {
        let fast = internals::skip_container_kernel(kernel, ws, text, i);
        let exact = internals::skip_container_exact(ws, text, i);
        match (fast, exact) {
            (Some(f), Some(e)) => assert_eq!(f, e, "ends differ at {i}"),
            (Some(f), None) => panic!("structural accepted at {i} (end {f}), exact rejects"),
            (None, Some(e)) => assert!(
                internals::max_depth(&text[i..e]) > 64,
                "structural gave up on a valid value at {i}..{e}"
            ),
            (None, None) => {}
        }
    }
    // The tail walker, from after the first member value of the first object (the
    // index's message skip after `role`), against the exact walk of the whole object.
    if let Some(start) = text.iter().position(|&c| c == b'{') {
        if let Some(i) = internals::first_member_value_end(text, start) {
            let deny: &[u8] = if sel & 0x40 != 0 { b"role" } else { b"id" };
            let fast = internals::skip_object_tail_kernel(kernel, text, i, deny);
            let exact = internals::skip_object_tail_exact(text, start, i, deny);
            if internals::max_depth(&text[start..]) <= 64 {
                assert_eq!(fast, exact, "tail from {i} of the object at {start}");
            } else if let Some(f) = fast {
                assert_eq!(Some(f), exact, "tail from {i} of the object at {start}");
            }
        }
    }
});

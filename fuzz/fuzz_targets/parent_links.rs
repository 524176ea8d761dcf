//! Structured sessions with ids from a tiny alphabet (duplicates everywhere), parent links
//! pointing anywhere, and compactions, labels and context edits; then paths, contexts and
//! the tree for the file's leaf and for several leaves set with `set_leaf_raw`. Must
//! terminate (cycles are errors) without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_session::Session;
use pi_session_fuzz::{checks, synth::Input};

fuzz_target!(|input: Input| {
    let bytes = input.render();
    if checks::skip_known(&bytes) {
        return;
    }
    let Ok(mut s) = Session::from_bytes(bytes) else {
        return;
    };
    let leaves = input.leaf_keys();
    checks::exercise(&mut s, &leaves);
});

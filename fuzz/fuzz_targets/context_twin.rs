//! The context as handles (built without decoding, then decoded one by one, all at once,
//! and written as `context --json`) against the eager twin that decodes every entry it
//! looks at: same messages, sources, settings and errors, for the file's leaf and its
//! first entries as leaves, with both `retainedTail` rules.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if pi_session_fuzz::checks::skip_known(data) {
        return;
    }
    if let Ok(s) = pi_session::Session::from_bytes(data.to_vec()) {
        pi_session::internals::compare_with_twin(&s, "fuzz input", 16);
    }
});

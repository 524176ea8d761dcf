//! The listing's line walker (`internals::listing_walk`) against its slow twin: lines cut
//! as pi's readline cuts them, each `Value::parse`d in full; same accepted lines, same
//! line ends, and recorded spans that parse alone to the members the full parse has (see
//! `pi_session_fuzz::listing`). Then the whole `SessionInfo` builder over the same bytes,
//! which must answer or skip the file, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_session::listing::{Scratch, session_info_from_bytes};

fuzz_target!(|data: &[u8]| {
    pi_session_fuzz::listing::walk_vs_parse(data);
    let _ = session_info_from_bytes(std::path::Path::new("f.jsonl"), data, 0.0, &mut Scratch::new());
});

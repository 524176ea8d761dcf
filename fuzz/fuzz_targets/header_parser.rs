//! `scan::scan_line` against `value::parse` (same accept/reject, same truthiness, same
//! recorded fields), and `value::parse` against serde_json where both define the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_session_fuzz::json::{parse_vs_serde, scan_vs_parse};

fuzz_target!(|data: &[u8]| {
    if pi_session_fuzz::checks::skip_known(data) {
        return;
    }
    scan_vs_parse(data);
    parse_vs_serde(data);
});

//! Arbitrary bytes (after an optional header picked by the first byte) through
//! `Session::from_bytes` and every read-only query; with option bit 0 also the oracle
//! report (`dump::with_report`) of the same bytes written to a temporary file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_session_fuzz::checks;
use std::path::PathBuf;
use std::sync::OnceLock;

fn tmp_path() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| std::env::temp_dir().join(format!("pi-session-fuzz-{}.jsonl", std::process::id())))
}

fuzz_target!(|data: &[u8]| {
    let (bytes, opts) = checks::decode_open_input(data);
    if checks::skip_known(&bytes) {
        return;
    }
    checks::check_bytes(&bytes);
    if opts & 1 != 0 && checks::dump_is_cheap(&bytes) {
        let p = tmp_path();
        if std::fs::write(p, &bytes).is_ok() {
            checks::check_dump(p, opts >> 1);
        }
    }
});

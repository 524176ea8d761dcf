//! Usage: the fast report (`usage::report_files` over `usage::records_of`: the structural
//! walk to the entries that carry usage, records hashed and deduplicated, days found with
//! a remembered day) against its slow twin (`usage::twin::report_bytes`: every entry
//! decoded, keys compared as text, each record's day found on its own), through
//! `usage::twin::check_against_twin`.
//!
//! Input: `usage::twin::hostile::case` reads the filter (grouping, time zone, sources,
//! dedup, dates) and one to three session files from the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_session::usage::twin::{check_against_twin, hostile};

fuzz_target!(|data: &[u8]| {
    let (files, filter) = hostile::case(data);
    if let Err(e) = check_against_twin(&files, &filter) {
        panic!("the usage report differs from its twin ({filter:?}):\n{e}");
    }
});

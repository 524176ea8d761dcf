//! Search: the fast path (`search::search_source`: the raw-bytes prefilter, the
//! structural walk to the searched strings, the line matcher) against its slow twin
//! (`search::twin::search_source_slow`: every entry decoded, every searched string
//! matched line by line), through `search::twin::check_against_twin`.
//!
//! Input: byte 0 is the mode; bytes 1..=8 pick the query (`hostile::query`: one of the
//! tricky patterns, its flags, fields, branch/context/max/since options; it reads at most
//! six of them, zeros past the end); the rest is the session:
//! - mode bit 0 set: `hostile::session` generated from the rest (strings with every JSON
//!   escape, pattern words in keys, ids, signatures and image data);
//! - otherwise: the rest raw, after a valid v3 header line, so that any bytes are entries.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_session::search::twin::{check_against_twin, hostile};

/// The bytes given to `hostile::query`: fixed, so that the session part starts at the
/// same place whatever the query reads.
const QUERY_BYTES: usize = 8;

const HEADER: &[u8] =
    b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n";

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let (qb, rest) = rest.split_at(rest.len().min(QUERY_BYTES));
    let q = hostile::query(&mut hostile::Bytes::new(qb));
    let file = if mode & 1 != 0 {
        hostile::session(&mut hostile::Bytes::new(rest))
    } else {
        let mut f = Vec::with_capacity(HEADER.len() + rest.len());
        f.extend_from_slice(HEADER);
        f.extend_from_slice(rest);
        f
    };
    if let Err(e) = check_against_twin(&file, &q) {
        panic!("search differs from its twin (mode {mode:#04x}, query {q:?}):\n{e}");
    }
});

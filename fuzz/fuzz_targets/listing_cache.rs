//! The listing cache: its file decoder on any bytes (never a panic; what decodes survives
//! being encoded again), and its append path against a listing of the whole file (a file
//! listed when it ended at some byte, then grown: `internals::listing_carry_twin`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode & 1 == 0 {
        // A real magic and version in front, so that the decoder gets past its first check.
        let mut file = b"pi-session-list\n\x02\0\0\0\0\0\0\0".to_vec();
        file.extend_from_slice(rest);
        if let Err(e) = pi_session::internals::listing_cache_roundtrip(&file) {
            panic!("{e}");
        }
    } else if rest.len() >= 2 {
        let cut = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
        if let Err(e) = pi_session::internals::listing_carry_twin(&rest[2..], cut, mode & 2 != 0) {
            panic!("{e}");
        }
    }
});

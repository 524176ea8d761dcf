//! The member reads `pi-session tree` takes its text from, against the whole entry
//! decoded (their slow twin): `Session::message_members_of` gives each requested member of
//! `message` as `value(p).message` holds it, and `Session::entry_timestamp` (which reads a
//! copy of the line with `message` replaced by `null`) the `timestamp` of `value(p)`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_session::{EntryType, Session, Value};

const KEYS: [&str; 5] = ["role", "content", "toolCallId", "timestamp", "message"];

fuzz_target!(|data: &[u8]| {
    if pi_session_fuzz::checks::skip_known(data) {
        return;
    }
    let Ok(s) = Session::from_bytes(data.to_vec()) else { return };
    for &p in s.entries() {
        let whole = s.value(p).expect("an unchanged file decodes");
        let ts = s.entry_timestamp(p).expect("an unchanged file reads");
        assert_eq!(ts.as_ref(), whole.get("timestamp"), "timestamp of {p:?}");
        if s.record(p).ty != EntryType::Message {
            continue;
        }
        let got = s.message_members_of(p, &KEYS).expect("an unchanged file reads");
        match whole.get("message") {
            None => assert!(got.is_none()),
            Some(m) => {
                let got = got.expect("a message");
                for (k, v) in KEYS.iter().zip(&got) {
                    let want = if matches!(m, Value::Object(_)) { m.get(k) } else { None };
                    assert_eq!(v.as_ref(), want, "{k} of {p:?}");
                }
            }
        }
    }
});

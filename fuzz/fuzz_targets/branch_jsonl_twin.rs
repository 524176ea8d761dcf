//! The jsonl export (`Session::write_branch_jsonl`, which copies stored lines in stringify
//! form that keep their parent) against its slow twin (every line decoded, re-chained and
//! stringified): the same bytes for the branch of every entry, on any bytes, and no panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_session::{Env, Flavor, Session, internals};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = Session::from_bytes(data.to_vec()) else { return };
    let Ok(env) = Env::from_process(Flavor::Pi) else { return };
    for i in 0..s.entries_len().min(64) {
        let Some(p) = s.entry_at(i) else { continue };
        let Ok(branch) = s.branch_path(Some(&s.record(p).id.to_key())) else { continue };
        let (mut fast, mut slow) = (Vec::new(), Vec::new());
        let a = internals::write_branch_jsonl_with(&s, &branch, "T", &env, &mut fast, true);
        let b = internals::write_branch_jsonl_with(&s, &branch, "T", &env, &mut slow, false);
        assert_eq!(a.is_ok(), b.is_ok());
        assert_eq!(fast, slow);
    }
});

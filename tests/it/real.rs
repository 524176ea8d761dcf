//! Real pi sessions from `../shared/corpus/real/` (never copied into this repository) must
//! dump as pi 1.6.0 dumps them. They are v1 files, which pi migrates with fresh random ids,
//! so the comparison is structural (see `common::normalize`). The goldens were made with
//! `node ../shared/oracle/dump.mjs FILE --digest 64 --compact --tree flat` (long strings
//! digested, so the goldens do not carry the sessions' text). Skips when the folder is
//! absent.

use crate::common::{ReaderPath, dump_text_digest, normalize};
use std::path::Path;

#[test]
fn real_sessions_dump_like_pi() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let real = root.join("../shared/corpus/real");
    let Ok(rd) = std::fs::read_dir(&real) else {
        eprintln!("skipped: {} is absent", real.display());
        return;
    };
    let mut checked = 0;
    for e in rd {
        let file = e.expect("dir entry").path();
        if file.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let stem = file.file_stem().expect("file name").to_string_lossy().into_owned();
        // Goldens are digests (no session text); named `upstream-*` rather than after the
        // source files, which must never be copied here.
        let golden_name = stem.replace("pi-mono-", "upstream-");
        let golden_path = root.join("corpus/golden/real").join(format!("{golden_name}.json"));
        let Ok(golden) = std::fs::read_to_string(&golden_path) else {
            panic!("no golden for {}: run corpus/bless.sh", file.display());
        };
        let want = normalize(&golden).expect("golden parses");
        for path in ReaderPath::ALL {
            let ours = dump_text_digest(&file, None, true, true, Some(64), path);
            let got = normalize(&ours).expect("our dump parses");
            assert!(got == want, "{} differs from pi ({path:?})", file.display());
        }
        checked += 1;
    }
    assert!(checked > 0, "no .jsonl files in {}", real.display());
}

//! Real pi sessions from `../shared/corpus/real/` (never copied into this repository) must
//! dump as pi 1.6.0 dumps them. They are v1 files, which pi migrates with fresh random ids,
//! so the comparison is structural (see `common::normalize`). The goldens were made with
//! `node ../shared/oracle/dump.mjs FILE --digest 64 --compact --tree flat` (long strings
//! digested, so the goldens do not carry the sessions' text). Skips when the folder is
//! absent, and fails then under `CI` (`common::real_sessions`).

use crate::common::{ReaderPath, dump_text_digest, normalize, real_sessions};
use std::path::Path;

#[test]
fn real_sessions_dump_like_pi() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(files) = real_sessions() else { return };
    let mut checked = 0;
    for file in files {
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
    assert!(checked > 0, "no .jsonl files in ../shared/corpus/real");
}

/// The real sessions are v1 files: with `V1Ids::Stable` every open gives each entry the
/// same id, all distinct; the file pi's open writes (the migration, with those ids)
/// reopens with the very ids, in order, and the same leaf.
#[test]
fn real_v1_sessions_get_the_same_ids_on_every_open_and_keep_them_when_migrated() {
    use pi_session::{OpenOptions, Session, V1Ids};
    let Some(files) = real_sessions() else { return };
    let stable = OpenOptions {
        v1_ids: V1Ids::Stable,
        ..OpenOptions::default()
    };
    let ids = |s: &Session| -> Vec<String> {
        s.entries()
            .iter()
            .map(|&p| s.record(p).id.as_str().expect("a string id").to_owned())
            .collect()
    };
    let mut checked = 0;
    for file in files {
        let a = Session::open_with(&file, stable).expect("open");
        assert_eq!(a.migration(), pi_session::Migration::FromV1, "{}", file.display());
        let first = ids(&a);
        assert_eq!(first, ids(&Session::open_with(&file, stable).expect("open")));
        let distinct: std::collections::HashSet<&String> = first.iter().collect();
        assert_eq!(distinct.len(), first.len(), "{}: ids repeat", file.display());
        let random = Session::open(&file).expect("open");
        assert_ne!(ids(&random), first, "{}: pi's ids are random", file.display());
        let migrated = pi_session::dump::rewrite_text(&a).expect("rewrite");
        let b = Session::from_bytes(migrated).expect("reopen");
        assert_eq!(b.migration(), pi_session::Migration::None);
        assert_eq!(ids(&b), first, "{}: migration changed the ids", file.display());
        assert_eq!(b.leaf(), a.leaf());
        checked += 1;
    }
    assert!(checked > 0, "no .jsonl files in ../shared/corpus/real");
}

//! Write conformance: every write operation, on every valid corpus file, gives files that
//! pi 1.6.0 dumps exactly as pi-session does (goldens by `corpus/bless_writes.sh`), that pi
//! opens without changing them, and whose bytes before the appends are untouched.

use crate::common::{ReaderPath, dump_text_digest, normalize};
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

#[test]
fn every_write_operation_gives_files_pi_reads_as_we_do() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus().join("valid"))
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    // A fixed folder: branched and forked headers name files by absolute path, so the
    // goldens (corpus/bless_writes.sh) were made in this same folder.
    let tmp_dir = std::env::temp_dir().join("pi-session-write-goldens");
    let _ = std::fs::remove_dir_all(&tmp_dir);
    struct Tmp(PathBuf);
    impl Tmp {
        fn path(&self) -> &Path {
            &self.0
        }
    }
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let tmp = Tmp(tmp_dir);
    let (mut checked, mut failures) = (0, Vec::new());
    for (i, f) in files.iter().enumerate() {
        if f.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let stem = f.file_stem().expect("stem").to_string_lossy().into_owned();
        let original = std::fs::read(f).expect("read");
        let opened_clean = pi_session::Session::open(f).map(|s| s.file_change() == pi_session::FileChange::None);
        let Some(w) = crate::write_ops::run(f, &tmp.path().join(&stem), i as u64) else {
            continue;
        };
        // Appends never touch earlier bytes (when pi would not have rewritten the file).
        if matches!(opened_clean, Ok(true)) {
            let now = std::fs::read(&w.main).expect("read written");
            assert!(now.starts_with(&original), "{stem}: bytes before the appends changed");
        }
        for p in [Some(w.main), w.branched, w.forked].into_iter().flatten() {
            let name = p.file_stem().expect("stem").to_string_lossy().into_owned();
            let golden_path = corpus().join("golden/writes").join(&stem).join(format!("{name}.json"));
            let Ok(golden) = std::fs::read_to_string(&golden_path) else {
                failures.push(format!("{stem}/{name}: no golden (run corpus/bless_writes.sh)"));
                continue;
            };
            let ours = dump_text_digest(&p, None, true, true, None, ReaderPath::Read);
            let same = ours == golden || matches!((normalize(&ours), normalize(&golden)), (Some(a), Some(b)) if a == b);
            if !same {
                failures.push(format!("{stem}/{name}"));
            }
            // pi opens what we wrote without changing it.
            assert!(
                golden.contains(r#""fileChange":{"bytesAfter""#) && golden.contains(r#""kind":"none""#),
                "{stem}/{name}: pi would change the file"
            );
            checked += 1;
        }
    }
    assert!(checked > 200, "only {checked} written files checked");
    assert!(
        failures.is_empty(),
        "{} of {checked} written files differ from pi:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

//! Replays every file in `corpus/crash/` (inputs the fuzzers in `fuzz/` once broke
//! pi-session with, stored as plain session files) through the same checks as the
//! `open_session` fuzz target, so fixed crashes stay fixed. The valid and malformed
//! corpora go through the same checks too, so the test is never empty.
//!
//! Each file runs on its own thread with a time limit: a hang is reported as a failure
//! naming the file (and the test stops at the first one) instead of blocking forever.

#[path = "../../fuzz/src/checks.rs"]
#[allow(dead_code)]
mod checks;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// Wall-clock limit per file: generous, because the tests may share a loaded machine (`PI_CRASH_TIMEOUT_SECS` overrides it).
fn limit() -> Duration {
    let secs = std::env::var("PI_CRASH_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    Duration::from_secs(secs)
}

fn files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| !matches!(p.extension().and_then(|e| e.to_str()), Some("md" | "txt")))
        .collect();
    out.sort();
    out
}

/// Everything the fuzz targets do with one file.
fn replay(path: &Path) {
    let bytes = std::fs::read(path).expect("read");
    // header_parser and split_lines: every line, and the index at a few chunk sizes.
    // (The index scans each line alone too: a one-line "file" is indexed by the same
    // per-line test.)
    for line in bytes.split(|&b| b == b'\n') {
        let _ = pi_session::Session::from_bytes(line.to_vec());
        let _ = pi_session::Value::parse(line);
    }
    for chunk in [1, 7, 1 << 30] {
        let opts = pi_session::OpenOptions {
            read_mode: pi_session::ReadMode::Read,
            chunk: Some(chunk),
            release_pages: false,
            v1_ids: Default::default(),
        };
        let _ = pi_session::Session::from_source(pi_session::Source::from_bytes(bytes.clone()), opts);
    }
    // open_session: every query, then the oracle report with several option sets.
    checks::check_bytes(&bytes);
    for sel in [0, 1, 2, 3, 4, 8, 0x10, 0x20] {
        checks::check_dump(path, sel);
    }
}

/// Runs `replay` on a thread; `Err` describes a panic or a hang.
fn run_one(path: &Path) -> Result<(), String> {
    let (tx, rx) = mpsc::channel();
    let p = path.to_path_buf();
    std::thread::Builder::new()
        .name(format!("replay {}", path.display()))
        .stack_size(64 << 20)
        .spawn(move || {
            let r = std::panic::catch_unwind(|| replay(&p));
            let _ = tx.send(r.map_err(|e| {
                e.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into())
            }));
        })
        .expect("spawn");
    let limit = limit();
    match rx.recv_timeout(limit) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(msg)) => Err(format!("panicked: {msg}")),
        Err(_) => Err(format!("did not finish within {limit:?} (hang)")),
    }
}

fn replay_all(dirs: &[&str]) -> (usize, Vec<String>) {
    // A stored crash must be replayed for real, even an exponential tree.
    checks::set_tree_guard(false);
    let mut n = 0;
    let mut failures = Vec::new();
    for dir in dirs {
        for path in files(dir) {
            n += 1;
            if let Err(e) = run_one(&path) {
                let hang = e.contains("hang");
                failures.push(format!("{}: {e}", path.display()));
                if hang {
                    // The hung thread keeps a core busy; stop here.
                    return (n, failures);
                }
            }
        }
    }
    (n, failures)
}

#[test]
fn stored_crashes_stay_fixed() {
    let (n, failures) = replay_all(&["corpus/crash"]);
    assert!(
        failures.is_empty(),
        "{} of {n} stored crash inputs still fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn corpus_passes_the_crash_checks() {
    let (n, failures) = replay_all(&["corpus/valid", "corpus/malformed"]);
    assert!(n > 0, "no corpus files found");
    assert!(
        failures.is_empty(),
        "{} of {n} corpus files fail the fuzz checks:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

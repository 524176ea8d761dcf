//! Every corpus file, through every reader path, must dump exactly as pi 1.6.0 does (the
//! goldens in `corpus/golden/` were written by `corpus/bless.sh` with the oracle).
//!
//! Files pi gives fresh random ids (v1 migration) or a fresh header (zero-byte files) are
//! compared structurally, as the oracle's README says: the k-th distinct entry id becomes
//! `#k` in both outputs, and new header ids and times are checked for shape only.

use crate::common::{ReaderPath, dump_text, normalize};
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

struct Case {
    file: PathBuf,
    golden: PathBuf,
    leaf: Option<String>,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for dir in ["valid", "malformed", "pig"] {
        let gdir = corpus().join("golden").join(dir);
        let Ok(rd) = std::fs::read_dir(&gdir) else {
            continue;
        };
        let mut names: Vec<_> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let Some(stem) = name.strip_suffix(".json") else {
                continue;
            };
            let (stem, leaf) = match stem.split_once('@') {
                Some((s, l)) => (s, Some(l.to_string())),
                None => (stem, None),
            };
            out.push(Case {
                file: corpus().join(dir).join(format!("{stem}.jsonl")),
                golden: gdir.join(&name),
                leaf,
            });
        }
    }
    out
}

#[test]
fn corpus_dumps_like_pi_on_every_reader_path() {
    let cases = cases();
    assert!(cases.len() >= 50, "expected the corpus goldens, found {}", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let golden = std::fs::read_to_string(&case.golden).expect("golden readable");
        let flat = golden.contains("\"depth\": 0") || golden.contains("\"depth\":0");
        let compact = !golden.starts_with("{\n");
        // The oracle cannot print some trees (its cycle guard misses a cycle through
        // id-less entries, where pi hangs); those goldens were made with `--tree none`.
        let no_tree = golden.contains("\"tree\": null") && !golden.contains("\"tree\": \"");
        for path in ReaderPath::ALL {
            let ours = dump_text(&case.file, case.leaf.as_deref(), (flat, no_tree), compact, path);
            if ours == golden {
                continue;
            }
            match (normalize(&ours), normalize(&golden)) {
                (Some(a), Some(b)) if a == b => {}
                _ => {
                    failures.push(format!("{} (leaf {:?}, {:?})", case.golden.display(), case.leaf, path));
                    if failures.len() == 1 {
                        let diff = first_difference(&ours, &golden);
                        eprintln!("first failure: {}\n{diff}", case.golden.display());
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from pi:\n{}",
        failures.len(),
        cases.len() * 4,
        failures.join("\n")
    );
}

fn first_difference(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            let cut = |s: &str| s.chars().take(400).collect::<String>();
            return format!("line {}:\n  ours: {}\n  pi:   {}", i + 1, cut(x), cut(y));
        }
    }
    format!(
        "lengths differ: ours {} lines, pi {} lines",
        a.lines().count(),
        b.lines().count()
    )
}

#[test]
fn every_corpus_file_has_a_golden() {
    for dir in ["valid", "malformed", "pig"] {
        for e in std::fs::read_dir(corpus().join(dir)).expect("corpus dir") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                let g = corpus()
                    .join("golden")
                    .join(dir)
                    .join(format!("{}.json", p.file_stem().unwrap().to_string_lossy()));
                assert!(g.exists(), "no golden for {}", p.display());
            }
        }
    }
}

/// `dump --digest N` (long strings replaced by `<<sha256:… len:…>>` of their UTF-8, as the
/// real sessions' goldens are) byte for byte as pi's, on every reader path: pi's side
/// hashes `Buffer.from(s, "utf8")`, where each lone surrogate is one U+FFFD (three bytes),
/// not the three replacement characters a lossy decoding of its stored bytes gives.
/// `corpus/digests.tsv` lists the files (goldens by `corpus/bless.sh`).
#[test]
fn digested_dumps_are_pis_byte_for_byte() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let list = std::fs::read_to_string(root.join("digests.tsv")).expect("corpus/digests.tsv");
    let mut checked = 0;
    for line in list.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (rel, n) = line.split_once('\t').expect("FILE<TAB>N");
        let n: usize = n.parse().expect("N");
        let file = root.join(rel);
        let stem = file.file_stem().expect("name").to_string_lossy().into_owned();
        let golden = std::fs::read_to_string(root.join("golden/digest").join(format!("{stem}@{n}.json")))
            .unwrap_or_else(|e| panic!("no digest golden for {rel}: {e} (run corpus/bless.sh)"));
        for path in crate::common::ReaderPath::ALL {
            let ours = crate::common::dump_text_digest(&file, None, true, true, Some(n), path);
            assert_eq!(ours.trim_end(), golden.trim_end(), "{rel} --digest {n} ({path:?})");
        }
        checked += 1;
    }
    assert!(checked >= 3);
}

//! The exactness check of `pi-session search`: every `*.jsonl` file under ROOT (found
//! recursively; ROOT may be one file) searched by the fast path (`search::search_path`)
//! and by the slow twin (`search::twin::search_source_slow`, which decodes every entry
//! whole and runs the regex on every line of every searched string), the two results
//! compared hit by hit. Prints each file whose results differ (the first differing hit of
//! each), then the totals; exits 1 on any difference.
//!
//!     cargo run --release --features aids --example profile_search_twin -- \
//!         ROOT [-F] [-i|-s] [-w] [-U] [--thinking] [--tool-calls] [--tool-results] PATTERN
//!
//! `-e PATTERN` (repeatable) gives patterns explicitly. Without `-i`/`-s` the case is
//! smart, as in the CLI. Files run in parallel (rayon; `RAYON_NUM_THREADS`). A file that
//! is no session counts as agreeing when the fast path finds nothing in it (it may skip
//! such a file unread, the twin refuses it) or both refuse it with the same error kind,
//! as `twin::check_against_twin` judges.
use pi_session::search::twin::search_source_slow;
use pi_session::search::{Case, FileOptions, Hit, Pattern, Query, search_path};
use pi_session::{ReadMode, Source};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: profile_search_twin ROOT [-F] [-i|-s] [-w] [-U] [--thinking] [--tool-calls] [--tool-results] (PATTERN | -e PATTERN...)";

fn jsonl_files(root: &Path, out: &mut Vec<PathBuf>) {
    if root.is_file() {
        out.push(root.to_path_buf());
        return;
    }
    let Ok(dir) = std::fs::read_dir(root) else {
        eprintln!("cannot read {}", root.display());
        return;
    };
    for e in dir.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => jsonl_files(&p, out),
            Ok(t) if t.is_file() && p.extension().is_some_and(|x| x == "jsonl") => out.push(p),
            _ => {}
        }
    }
}

/// One file's outcome.
struct Outcome {
    path: PathBuf,
    hits: usize,
    lines: usize,
    fast: Duration,
    slow: Duration,
    /// `Some(why)` when the two disagree.
    difference: Option<String>,
    /// The file was refused (by both, or by the twin with the fast path finding nothing).
    refused: bool,
}

fn matching_lines(h: &[Hit]) -> usize {
    h.iter().map(Hit::match_count).sum()
}

fn compare(path: &Path, q: &Query) -> Outcome {
    // Read the file once first, so that neither side pays for bringing it into the page
    // cache (this VM pages out file pages idle for a minute).
    drop(std::fs::read(path));
    let t = Instant::now();
    let fast = search_path(path, q, FileOptions::default());
    let fast_time = t.elapsed();
    let t = Instant::now();
    let slow = Source::open(path, ReadMode::default())
        .map_err(|e| e.to_string())
        .and_then(|s| search_source_slow(s, q).map_err(|e| e.kind().to_string()));
    let slow_time = t.elapsed();
    let mut o = Outcome {
        path: path.to_path_buf(),
        hits: 0,
        lines: 0,
        fast: fast_time,
        slow: slow_time,
        difference: None,
        refused: false,
    };
    match (fast, slow) {
        (Ok(f), Ok(s)) => {
            o.hits = s.len();
            o.lines = matching_lines(&s);
            if f != s {
                let k = f
                    .iter()
                    .zip(&s)
                    .position(|(a, b)| a != b)
                    .unwrap_or(f.len().min(s.len()));
                o.difference = Some(format!(
                    "fast path: {} hits ({} lines), twin: {} hits ({} lines); first difference at hit {k}:\n  fast: {:?}\n  twin: {:?}",
                    f.len(),
                    matching_lines(&f),
                    s.len(),
                    o.lines,
                    f.get(k),
                    s.get(k)
                ));
            }
        }
        (Ok(f), Err(_)) if f.is_empty() => o.refused = true,
        (Err(a), Err(b)) if a.kind().to_string() == b => o.refused = true,
        (f, s) => {
            o.difference = Some(format!(
                "fast path: {:?}\n  twin: {:?}",
                f.map(|h| h.len()),
                s.map(|h| h.len())
            ))
        }
    }
    o
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(root) = args.next() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let mut p = Pattern::default();
    let mut q_fields = pi_session::search::Fields::default();
    let mut positional = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "-F" => p.fixed = true,
            "-i" => p.case = Case::Insensitive,
            "-s" => p.case = Case::Sensitive,
            "-w" => p.word = true,
            "-U" => p.multiline = true,
            "--thinking" => q_fields.thinking = true,
            "--tool-calls" => q_fields.tool_calls = true,
            "--tool-results" => q_fields.tool_results = true,
            "-e" => p.patterns.push(args.next().expect(USAGE)),
            s if s.starts_with('-') && s.len() > 1 => {
                eprintln!("unknown flag {s}\n{USAGE}");
                return ExitCode::from(2);
            }
            _ => positional.push(a),
        }
    }
    if p.patterns.is_empty() {
        if positional.len() != 1 {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
        p.patterns = positional;
    }
    let matcher = match p.compile() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("bad pattern: {e}");
            return ExitCode::from(2);
        }
    };
    let pieces = matcher.pieces().to_vec();
    let mut q = Query::new(matcher);
    q.fields = q_fields;

    let mut files = Vec::new();
    jsonl_files(Path::new(&root), &mut files);
    files.sort();
    let t = Instant::now();
    let outcomes: Vec<Outcome> = files.par_iter().map(|f| compare(f, &q)).collect();
    let wall = t.elapsed();

    let mut differences = 0;
    for o in outcomes.iter().filter(|o| o.difference.is_some()) {
        differences += 1;
        println!(
            "DIFFERS {}\n  {}",
            o.path.display(),
            o.difference.as_deref().unwrap_or("")
        );
    }
    let sum = |f: fn(&Outcome) -> usize| outcomes.iter().map(f).sum::<usize>();
    let fast: Duration = outcomes.iter().map(|o| o.fast).sum();
    let slow: Duration = outcomes.iter().map(|o| o.slow).sum();
    println!(
        "patterns {:?} (fixed {}, case-insensitive {}, word {}, multiline {}; prefilter pieces {:?})",
        p.patterns,
        p.fixed,
        p.case_insensitive(),
        p.word,
        p.multiline,
        pieces
    );
    println!(
        "files: {}, with hits: {}, refused (not sessions): {}",
        outcomes.len(),
        outcomes.iter().filter(|o| o.hits > 0).count(),
        sum(|o| o.refused as usize)
    );
    println!("hits: {}, matching lines: {}", sum(|o| o.hits), sum(|o| o.lines));
    println!(
        "time (summed over files): fast path {:.2} s, twin {:.2} s; wall {:.1} s",
        fast.as_secs_f64(),
        slow.as_secs_f64(),
        wall.as_secs_f64()
    );
    println!("differences: {differences}");
    if differences == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

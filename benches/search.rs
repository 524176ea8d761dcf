//! Search throughput: `search::search_path` on one generated session of each shape
//! (realistic, small-entries, image-heavy; 48 MB each), bytes of the file per second, one
//! thread, the file mapped from the page cache as the CLI maps it. Three patterns, as
//! users type them (smart case): a rare literal (`loadWriterResponse`, case-sensitive
//! by its capitals), a common one (`handler`, smart case: case-insensitive) and a
//! case-insensitive regex (`-i 'error|fail(ed|ure)'`). The floor beside them: counting the
//! common literal's raw occurrences with `memchr::memmem` (what a raw-bytes grep must at
//! least do for `-s handler`).
//!
//! The inputs are generated once per run into a temp dir by the project's generator. The
//! hit count of each search is computed once with the slow twin
//! (`search::twin::search_source_slow`) and asserted inside the timed part. Whole-process
//! comparisons with ripgrep over 10,000 sessions: `benches/compare_search.sh`.
//!
//! ```sh
//! cargo bench --features bench --bench search
//! ```

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pi_session::generator::{Mix, SessionSpec, write_session};
use pi_session::search::twin::search_source_slow;
use pi_session::search::{Case, FileOptions, Hit, Pattern, Query, search_path};
use pi_session::{ReadMode, Source};
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

const SIZE: u64 = 48 << 20;

fn matching_lines(h: &[Hit]) -> usize {
    h.iter().map(Hit::match_count).sum()
}

fn queries() -> Vec<(&'static str, Query)> {
    let rare = Pattern::new("loadWriterResponse");
    let common = Pattern::new("handler");
    let mut regex = Pattern::new("error|fail(ed|ure)");
    regex.case = Case::Insensitive;
    [("rare-literal", rare), ("common-literal", common), ("regex-i", regex)]
        .into_iter()
        .map(|(name, p)| (name, Query::new(p.compile().expect("pattern"))))
        .collect()
}

fn search(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let queries = queries();
    let mut g = c.benchmark_group("search");
    g.sample_size(10).measurement_time(Duration::from_secs(4));
    for (shape, mix) in [
        ("realistic", Mix::Realistic),
        ("small-entries", Mix::SmallEntries),
        ("image-heavy", Mix::ImageHeavy),
    ] {
        let path = tmp.path().join(format!("{shape}.jsonl"));
        let mut spec = SessionSpec::new(7, SIZE);
        spec.mix = mix;
        let file = std::fs::File::create(&path).expect("create");
        write_session(&spec, std::io::BufWriter::new(file)).expect("generate");
        let bytes = std::fs::read(&path).expect("read");
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        for (name, q) in &queries {
            let expected = twin_lines(&path, q);
            eprintln!("search/{name}/{shape}: {expected} matching lines");
            if *name != "rare-literal" {
                assert!(expected > 0, "{name} finds nothing in {shape}");
            }
            g.bench_with_input(BenchmarkId::new(*name, shape), &path, |b, path| {
                b.iter(|| {
                    let hits = search_path(black_box(path), q, FileOptions::default()).expect("search");
                    assert_eq!(matching_lines(&hits), expected);
                })
            });
        }
        let raw = memchr::memmem::find_iter(&bytes, b"handler").count();
        g.bench_with_input(BenchmarkId::new("memmem-raw-floor", shape), &bytes, |b, bytes| {
            let finder = memchr::memmem::Finder::new(b"handler");
            b.iter(|| assert_eq!(finder.find_iter(black_box(bytes)).count(), raw))
        });
    }
    g.finish();
}

/// The slow twin's count of matching lines (the definition the fast path is held to).
fn twin_lines(path: &Path, q: &Query) -> usize {
    let source = Source::open(path, ReadMode::default()).expect("open");
    matching_lines(&search_source_slow(source, q).expect("twin"))
}

criterion_group!(benches, search);
criterion_main!(benches);

//! Listing throughput: `list_all` over a generated sessions root (bytes of all files per
//! second), and `session_info_from_bytes` on one file of each kind (image, tool output,
//! small lines), single-threaded.
//!
//! The tree (200 sessions in 10 folders, ~60 MB) is generated once per run into a temp
//! dir by the project's generator (src/generator/). The session count is asserted inside the
//! timed part. Larger trees: `benches/compare_listing.sh`.
//!
//! The listing cache (`listing_cache/*`): a cold list into an empty cache, a warm re-list
//! of the unchanged tree and a re-list after appending to 1% of the files, on two shapes:
//! the generated tree, and 2,000 tiny sessions (three lines each, escape-dense and
//! non-ASCII first messages) where the per-file costs (stat, entry, output) are all there
//! is. The cache's racy window is 0 here (the files are seconds old; with the default a
//! warm run would read them all again). Whole-process comparisons with pi and ccusage:
//! `benches/compare_listing_cache.sh`.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use pi_session::listing::{self, ListOptions, ListingCache, Scratch};
use std::io::Write;
use std::path::{Path, PathBuf};

use pi_session::generator;

fn tree_bytes(root: &Path) -> u64 {
    let mut n = 0;
    for d in std::fs::read_dir(root).expect("root") {
        for f in std::fs::read_dir(d.expect("entry").path()).expect("folder") {
            n += f.expect("entry").metadata().expect("stat").len();
        }
    }
    n
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("sessions");
    let spec = generator::TreeSpec {
        seed: 11,
        sessions: 200,
        folders: 10,
        total_bytes: 60_000_000,
        start_ms: 1_750_000_000_000,
        flavor: Default::default(),
    };
    let stats = generator::write_sessions_tree(&spec, &root).expect("generate");
    let bytes = tree_bytes(&root);

    let mut g = c.benchmark_group("listing");
    g.sample_size(20);
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("list_all_200_sessions", |b| {
        b.iter(|| {
            let l = listing::list_all(&root, &mut ListOptions::default()).expect("not cancelled");
            assert_eq!(l.sessions.len(), stats.sessions);
        })
    });
    g.finish();

    // One file of each kind, single-threaded, from memory.
    let hdr =
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n";
    let b64: String = (0..8_000_000).map(|i| char::from(b'A' + (i * 7 % 26) as u8)).collect();
    let image = format!(
        "{hdr}{{\"type\":\"message\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"image\",\"data\":\"{b64}\",\"mimeType\":\"image/png\"}}]}}}}\n"
    );
    let code: String = (0..400_000)
        .map(|_| "fn main() {\\n\\tprintln!(\\\"hi\\\");\\n}\\n")
        .collect();
    let tool = format!(
        "{hdr}{{\"type\":\"message\",\"message\":{{\"role\":\"toolResult\",\"content\":[{{\"type\":\"text\",\"text\":\"{code}\"}}]}}}}\n"
    );
    let small: String = (0..30_000)
        .map(|i| format!("{{\"type\":\"message\",\"id\":\"{i:08x}\",\"parentId\":\"abcdef01\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"a short reply\"}}],\"model\":\"m\",\"timestamp\":1735689600000}}}}\n"))
        .collect();
    let small = format!("{hdr}{small}");
    let mut g = c.benchmark_group("session_info");
    for (name, data, count) in [
        ("image", &image, 1u64),
        ("tool_output", &tool, 1),
        ("small_lines", &small, 30_000),
    ] {
        g.throughput(Throughput::Bytes(data.len() as u64));
        let mut scratch = Scratch::new();
        g.bench_function(name, |b| {
            b.iter(|| {
                let info = listing::session_info_from_bytes(Path::new("x.jsonl"), data.as_bytes(), 0.0, &mut scratch)
                    .expect("a session");
                assert_eq!(info.message_count, count);
            })
        });
    }
    g.finish();
}

/// 2,000 sessions of three short lines in 20 folders, with first messages full of escapes
/// and non-ASCII text.
fn tiny_tree(root: &Path) -> usize {
    let texts = [
        r#"tab\there \"quoted\" \u00e9t\u00e9"#,
        "\u{1f600} emoji, \u{4e2d}\u{6587}, \u{202e}bidi",
        r#"line one\nline two\r\n\u0000"#,
        "plain words of a short question",
    ];
    for i in 0..2000 {
        let d = root.join(format!("--home-u-p{}--", i % 20));
        std::fs::create_dir_all(&d).expect("mkdir");
        let t = texts[i % texts.len()];
        let body = format!(
            concat!(
                r#"{{"type":"session","version":3,"id":"t{i}","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/home/u/p"}}"#,
                "\n",
                r#"{{"type":"message","id":"a{i}","parentId":null,"timestamp":"2025-01-02T00:00:00.000Z","message":{{"role":"user","content":"{t} {i}"}}}}"#,
                "\n",
                r#"{{"type":"message","id":"b{i}","parentId":"a{i}","timestamp":"2025-01-02T00:00:01.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"ok"}}]}}}}"#,
                "\n"
            ),
            i = i,
            t = t
        );
        std::fs::write(d.join(format!("2025-01-01T00-00-00-000Z_t{i}.jsonl")), body).expect("write");
    }
    2000
}

fn session_files(root: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for d in std::fs::read_dir(root).expect("root") {
        for f in std::fs::read_dir(d.expect("entry").path()).expect("folder") {
            v.push(f.expect("entry").path());
        }
    }
    v.sort();
    v
}

fn bench_cache(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let generated = tmp.path().join("generated/sessions");
    let spec = generator::TreeSpec {
        seed: 12,
        sessions: 1000,
        folders: 20,
        total_bytes: 100_000_000,
        start_ms: 1_750_000_000_000,
        flavor: Default::default(),
    };
    let n_generated = generator::write_sessions_tree(&spec, &generated)
        .expect("generate")
        .sessions;
    let tiny = tmp.path().join("tiny/sessions");
    let n_tiny = tiny_tree(&tiny);
    let mut g = c.benchmark_group("listing_cache");
    g.sample_size(20);
    for (name, root, n) in [
        ("generated_1000", &generated, n_generated),
        ("tiny_2000", &tiny, n_tiny),
    ] {
        let list = |cache: &ListingCache| {
            let mut opts = ListOptions {
                skip_text: true,
                cache: Some(cache.clone()),
                ..ListOptions::default()
            };
            let l = listing::list_all(root, &mut opts).expect("not cancelled");
            assert_eq!(l.sessions.len(), n);
            l.cache.expect("a report")
        };
        let zero = |dir: &Path| ListingCache::at(dir).with_racy_window(std::time::Duration::ZERO);
        g.bench_function(format!("{name}/cold"), |b| {
            b.iter_batched(
                || tempfile::tempdir().expect("tempdir"),
                |dir| list(&zero(dir.path())),
                BatchSize::PerIteration,
            )
        });
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = zero(dir.path());
        list(&cache);
        g.bench_function(format!("{name}/warm"), |b| {
            b.iter(|| assert_eq!(list(&cache).reused, n))
        });
        let files = session_files(root);
        let mut round = 0usize;
        g.bench_function(format!("{name}/appended_1pct"), |b| {
            b.iter_batched(
                || {
                    round += 1;
                    for f in files.iter().skip(round % 100).step_by(100) {
                        let mut h = std::fs::OpenOptions::new().append(true).open(f).expect("open");
                        writeln!(
                            h,
                            r#"{{"type":"message","id":"m{round}","parentId":null,"timestamp":"2025-02-01T00:00:00.000Z","message":{{"role":"user","content":"more {round}"}}}}"#
                        )
                        .expect("append");
                    }
                },
                |()| assert!(list(&cache).appended > 0),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench, bench_cache);
criterion_main!(benches);

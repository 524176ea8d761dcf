//! Listing throughput: `list_all` over a generated sessions root (bytes of all files per
//! second), and `session_info_from_bytes` on one file of each kind (image, tool output,
//! small lines), single-threaded.
//!
//! The tree (200 sessions in 10 folders, ~60 MB) is generated once per run into a temp
//! dir by the project's generator (src/generator/). The session count is asserted inside the
//! timed part. Larger trees: `benches/compare_listing.sh`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pi_session::listing::{self, ListOptions, Scratch};
use std::path::Path;

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

criterion_group!(benches, bench);
criterion_main!(benches);

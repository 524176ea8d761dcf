//! Writes whose cost must grow linearly: `create_branched_session` at the last label of a
//! session where every message carries a label (the review's WEAK 12 file). The old code
//! scanned every entry twice per label: 1.91 s at 10^4 labels, 6.10 s at 2·10^4. Linear
//! means the 5·10^4 case takes about five times the 10^4 one, never twenty-five: on a
//! 2-core AMD EPYC (2026-12-07), medians of 208 ms and 864 ms (4.2x).
//!
//! ```sh
//! cargo bench --features bench --bench write
//! ```
//!
//! The files go to /dev/shm where it exists, so that fsync time does not blur the ratio.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pi_session::{Entropy, Session, Writer};
use std::path::{Path, PathBuf};

const HEADER: &str = "{\"type\":\"session\",\"version\":3,\"id\":\"0199a0c2-5a7e-7000-8000-000000000001\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/tmp\"}\n";

/// A session of `n` messages, each followed by a label on it.
fn labelled(dir: &Path, n: usize) -> PathBuf {
    let f = dir.join(format!("b{n}.jsonl"));
    let mut text = String::with_capacity(n * 300);
    text += HEADER;
    let mut parent = "null".to_string();
    for i in 0..n {
        let (m, l) = (format!("m{i:07}"), format!("l{i:07}"));
        text += &format!(
            "{{\"type\":\"message\",\"id\":\"{m}\",\"parentId\":{parent},\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}}}\n"
        );
        text += &format!(
            "{{\"type\":\"label\",\"id\":\"{l}\",\"parentId\":\"{m}\",\"timestamp\":\"2025-01-01T00:00:02.000Z\",\"targetId\":\"{m}\",\"label\":\"L{i}\"}}\n"
        );
        parent = format!("\"{l}\"");
    }
    std::fs::write(&f, text).expect("write");
    f
}

fn branch(c: &mut Criterion) {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .expect("tempdir");
    let mut g = c.benchmark_group("create_branched_session");
    g.sample_size(10);
    for n in [10_000, 50_000] {
        let f = labelled(dir.path(), n);
        let leaf = format!("l{:07}", n - 1);
        let mut round = 0u64;
        g.bench_with_input(BenchmarkId::new("labels", n), &n, |b, &n| {
            // Only the branch is timed: the check of its file and the clean-up are not.
            b.iter_custom(|iters| {
                let mut spent = std::time::Duration::ZERO;
                for _ in 0..iters {
                    round += 1;
                    let out = dir.path().join(format!("out{n}-{round}"));
                    let mut w = Writer::open(&f, Some(&out), Entropy::seeded(round, 1_767_225_600_000)).expect("open");
                    let t0 = std::time::Instant::now();
                    let p = w.create_branched_session(&leaf).expect("branch").expect("file");
                    spent += t0.elapsed();
                    assert_eq!(Session::open(&p).expect("open").entries().len(), 2 * n);
                    std::fs::remove_dir_all(&out).expect("clean");
                }
                spent
            })
        });
    }
    g.finish();
}

criterion_group!(benches, branch);
criterion_main!(benches);

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
use std::path::Path;

#[path = "../tests/common/labelled.rs"]
mod labelled;
use labelled::labelled;

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

//! Times the per-line scanner alone (`scan_object_line` over every line, no records) on
//! one thread, next to `index::build` on one thread, to split the index's cost.
//!
//!     cargo run --release --features aids --example profile_scan_speed -- FILE [REPS] [scan]
//!
//! With `scan`, only the scanner is timed (for `perf record` of the scanner alone).
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: profile_scan_speed FILE [REPS]");
    let reps: usize = args.next().map_or(10, |s| s.parse().expect("reps"));
    let scan_only = args.next().is_some_and(|a| a == "scan");
    let bytes = std::fs::read(&path).expect("read");
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("pool");
    let mut best_scan = f64::INFINITY;
    let mut best_index = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        let mut pos = 0;
        let mut n = 0usize;
        while pos < bytes.len() {
            match pi_session::internals::scan_object_line(&bytes[pos..]) {
                Some((f, len)) => {
                    n += f.id.is_some() as usize;
                    pos += len + 1;
                }
                None => pos += memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len() - pos, |o| o + 1),
            }
        }
        std::hint::black_box(n);
        best_scan = best_scan.min(t.elapsed().as_secs_f64());
        if scan_only {
            continue;
        }
        let t = Instant::now();
        let idx = pool.install(|| pi_session::internals::build(&bytes));
        std::hint::black_box(idx.len());
        best_index = best_index.min(t.elapsed().as_secs_f64());
    }
    let gbs = |t: f64| bytes.len() as f64 / t / 1e9;
    println!(
        "scan only: {:.1} ms ({:.2} GB/s); index::build 1 thread: {:.1} ms ({:.2} GB/s)",
        best_scan * 1e3,
        gbs(best_scan),
        best_index * 1e3,
        gbs(best_index)
    );
}

//! Times `index::build` over a file held in memory, single-threaded and on all threads
//! (a profiling aid for the index scanner).
//!
//!     cargo run --release --features aids --example profile_index_speed -- FILE [REPS] [THREADS]
//!
//! With THREADS (e.g. `1`), only that pool size is timed (for `perf stat` of one thread).
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: profile_index_speed FILE [REPS]");
    let reps: usize = args.next().map_or(10, |s| s.parse().expect("reps"));
    let only: Option<usize> = args.next().map(|s| s.parse().expect("threads"));
    let bytes = std::fs::read(&path).expect("read");
    let pools = [("1 thread", 1), ("all threads", 0)];
    for (name, threads) in pools.into_iter().filter(|&(_, t)| only.is_none_or(|o| o == t)) {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        let mut best = f64::INFINITY;
        let mut n = 0;
        for _ in 0..reps {
            let t = Instant::now();
            let idx = pool.install(|| pi_session::internals::build(&bytes));
            best = best.min(t.elapsed().as_secs_f64());
            n = idx.len();
        }
        println!(
            "{name}: {} entries, best {:.1} ms, {:.2} GB/s",
            n,
            best * 1e3,
            bytes.len() as f64 / best / 1e9
        );
    }
}

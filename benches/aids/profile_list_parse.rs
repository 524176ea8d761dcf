//! Times `session_info_from_bytes` single-threaded over files held in memory (a profiling
//! aid for the listing walker: no page faults, no threads).
//!
//!     cargo run --release --features aids --example profile_list_parse -- DIR_OF_PROJECT_FOLDERS [MAX_MB] [REPS]
use pi_session::listing::{Scratch, session_info_from_bytes};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let root = args
        .next()
        .expect("usage: profile_list_parse SESSIONS_ROOT [MAX_MB] [REPS]");
    let max: u64 = args.next().map_or(300, |s| s.parse().expect("MB")) << 20;
    let reps: usize = args.next().map_or(5, |s| s.parse().expect("reps"));
    let mut files = Vec::new();
    let mut total = 0u64;
    'outer: for d in std::fs::read_dir(&root).expect("root") {
        for f in std::fs::read_dir(d.expect("entry").path()).expect("folder") {
            let p = f.expect("entry").path();
            let b = std::fs::read(&p).expect("read");
            total += b.len() as u64;
            files.push((p, b));
            if total >= max {
                break 'outer;
            }
        }
    }
    let mut scratch = Scratch::new();
    scratch.set_collect_text(std::env::var_os("TEXT").is_some());
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        let mut n = 0;
        for (p, b) in &files {
            n += usize::from(session_info_from_bytes(p, b, 0.0, &mut scratch).is_ok());
        }
        let s = t.elapsed().as_secs_f64();
        best = best.min(s);
        assert!(n > 0);
    }
    println!(
        "{} files, {} MB: best {:.1} ms, {:.2} GB/s",
        files.len(),
        total >> 20,
        best * 1e3,
        total as f64 / best / 1e9
    );
}

//! Times `Session::refresh` after an append to a large session (a profiling aid for issue
//! #35's change detection): opens FILE (mapped), then ROUNDS times appends one line to it
//! and refreshes, printing each refresh's time and the median. FILE grows by the lines.
//!
//! `cargo run --release --features aids --example profile_refresh -- FILE [ROUNDS]`
use pi_session::{OpenOptions, Session};
use std::io::Write;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: profile_refresh FILE [ROUNDS]");
    let rounds: usize = args.next().map_or(9, |r| r.parse().expect("ROUNDS"));
    let mut s = Session::open_with(&path, OpenOptions::default()).expect("open");
    let mut times = Vec::new();
    for k in 0..rounds {
        let line = format!(
            "{{\"type\":\"label\",\"id\":\"refresh{k}\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"targetId\":\"x\",\"label\":\"r\"}}\n"
        );
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("append")
            .write_all(line.as_bytes())
            .expect("append");
        let t = Instant::now();
        s.refresh().expect("refresh");
        let e = t.elapsed();
        println!("refresh {k}: {e:?}");
        times.push(e);
    }
    times.sort();
    println!("median {:?} over {rounds}", times[rounds / 2]);
}

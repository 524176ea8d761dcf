//! Times `Writer` appends: N small messages, then M large ones, into a new session in DIR.
//! `cargo run --release --features aids --example profile_append_bench -- DIR [SMALL [LARGE [LARGE_KIB]]]`
//! (defaults 10000, 200, 256). Prints microseconds per append for each kind.
use pi_session::{Entropy, Value, Writer};
use std::time::Instant;

fn message(text: &str) -> Value<'static> {
    let mut o = pi_session::Object::new();
    o.set(pi_session::JsStr::from_str("role"), Value::str("user"));
    o.set(pi_session::JsStr::from_str("content"), Value::string(text.to_string()));
    Value::Object(o)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(
        args.next()
            .expect("usage: profile_append_bench DIR [SMALL [LARGE [LARGE_KIB]]]"),
    );
    let mut num = |d: usize| args.next().map_or(d, |a| a.parse().expect("a number"));
    let (small, large, kib) = (num(10_000), num(200), num(256));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut w = Writer::create("/bench", &dir, Entropy::seeded(7, 1_767_225_600_000)).expect("create");
    w.append_message(message("first"))
        .expect("first message creates the file");
    let path = w.file().expect("file").to_path_buf();
    let mut w = Writer::open(&path, None, Entropy::seeded(8, 1_767_225_600_000)).expect("open");

    let t = Instant::now();
    for i in 0..small {
        w.append_message(message(&format!(
            "small message number {i}, about a hundred bytes of text in all"
        )))
        .expect("append");
    }
    let small_us = t.elapsed().as_secs_f64() * 1e6 / small.max(1) as f64;

    let big = "x".repeat(kib << 10);
    let t = Instant::now();
    for _ in 0..large {
        w.append_message(message(&big)).expect("append");
    }
    let large_us = t.elapsed().as_secs_f64() * 1e6 / large.max(1) as f64;
    let size = std::fs::metadata(&path).expect("stat").len();
    println!(
        "{small} small appends: {small_us:.1} us each; {large} appends of {kib} KiB: {large_us:.1} us each; file {size} bytes"
    );
    std::fs::remove_file(&path).expect("cleanup");
}

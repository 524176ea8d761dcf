//! The verbatim test (`is_stringify_form`: is a line exactly `JSON.stringify` of its
//! parse, so that it can be copied out as it is?) in GB/s: over every line of the 1 GiB
//! bench files when they are there (`/work/bench-data/img1.jsonl`, image-heavy, and
//! `g1.jsonl`, realistic; other paths with `PI_SESSION_BENCH_FILES=a.jsonl:b.jsonl`), over
//! generated 64 MiB sessions of both shapes otherwise, and on single strings: a 4 MiB
//! base64 image and a 1 MiB escape-dense tool output, next to the index's string kernel
//! on the same bytes. Every bench asserts its answer.
//!
//! ```sh
//! cargo bench --features bench --bench verbatim
//! ```

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pi_session::generator::{Mix, SessionSpec, write_session};
use pi_session::internals::{self, WhiteSpace};
use std::hint::black_box;
use std::time::Duration;

/// The inputs: (name, bytes).
fn inputs() -> Vec<(String, Vec<u8>)> {
    let files = std::env::var("PI_SESSION_BENCH_FILES")
        .unwrap_or_else(|_| "/work/bench-data/img1.jsonl:/work/bench-data/g1.jsonl".to_string());
    let mut out: Vec<(String, Vec<u8>)> = files
        .split(':')
        .filter_map(|f| {
            let bytes = std::fs::read(f).ok()?;
            let name = std::path::Path::new(f).file_stem()?.to_string_lossy().into_owned();
            Some((name, bytes))
        })
        .collect();
    if out.is_empty() {
        for (name, mix) in [
            ("image-heavy-64MiB", Mix::ImageHeavy),
            ("realistic-64MiB", Mix::Realistic),
        ] {
            let spec = SessionSpec {
                mix,
                ..SessionSpec::new(7, 64 << 20)
            };
            let mut bytes = Vec::new();
            write_session(&spec, &mut bytes).expect("generate");
            out.push((name.to_string(), bytes));
        }
    }
    out
}

fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split(|&c| c == b'\n').filter(|l| !l.is_empty()).collect()
}

fn verbatim_lines(c: &mut Criterion) {
    let mut g = c.benchmark_group("verbatim");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for (name, bytes) in inputs() {
        let lines = lines(&bytes);
        let want = lines.iter().filter(|l| internals::is_stringify_form(l)).count();
        eprintln!("{name}: {want} of {} lines in stringify form", lines.len());
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_with_input(BenchmarkId::new("lines", &name), &lines, |b, lines| {
            b.iter(|| {
                let n = lines
                    .iter()
                    .filter(|l| internals::is_stringify_form(black_box(l)))
                    .count();
                assert_eq!(n, want);
            })
        });
        // For scale: the index's exact walk over the same lines (JSON validity only: no
        // UTF-8, no spelling, no keys).
        g.bench_with_input(BenchmarkId::new("index-exact-walk", &name), &lines, |b, lines| {
            b.iter(|| {
                let n = lines
                    .iter()
                    .filter(|l| internals::skip_container_exact(WhiteSpace::Line, black_box(l), 0) == Some(l.len()))
                    .count();
                assert_eq!(n, lines.len());
            })
        });
    }
    g.finish();
}

/// `"` + 4 MiB of base64 + `"`.
fn base64_string() -> Vec<u8> {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = vec![b'"'];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    s.extend((0..4 << 20).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        B64[(x >> 58) as usize]
    }));
    s.push(b'"');
    s
}

/// A 1 MiB tool output as stringify writes it: source code with quotes, backslashes,
/// tabs and newlines (an escape every ~9 bytes), some non-ASCII.
fn escape_dense_string() -> Vec<u8> {
    let line = "\tif (s.startsWith(\"\\\\\")) { out.push(\"a\\tb\"); } // é\n";
    let mut text = String::new();
    while text.len() < 1 << 20 {
        text.push_str(line);
    }
    let mut s = vec![b'"'];
    for c in text.chars() {
        match c {
            '"' => s.extend_from_slice(b"\\\""),
            '\\' => s.extend_from_slice(b"\\\\"),
            '\n' => s.extend_from_slice(b"\\n"),
            '\t' => s.extend_from_slice(b"\\t"),
            c => s.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    s.push(b'"');
    s
}

fn verbatim_strings(c: &mut Criterion) {
    let mut g = c.benchmark_group("verbatim");
    g.sample_size(20);
    for (name, s) in [
        ("base64-4MiB", base64_string()),
        ("escape-dense-1MiB", escape_dense_string()),
    ] {
        assert!(internals::is_stringify_form_naive(&s));
        g.throughput(Throughput::Bytes(s.len() as u64));
        g.bench_with_input(BenchmarkId::new("string", name), &s, |b, s| {
            b.iter(|| assert!(internals::is_stringify_form(black_box(s))))
        });
        g.bench_with_input(BenchmarkId::new("twin-parse-stringify", name), &s, |b, s| {
            b.iter(|| assert!(internals::is_stringify_form_naive(black_box(s))))
        });
        let best = *internals::kernels().last().expect("a kernel");
        g.bench_with_input(BenchmarkId::new("index-skip-string", name), &s, |b, s| {
            b.iter(|| {
                let end = internals::skip_string_kernel(best, black_box(s), 0)
                    .expect("a string")
                    .0;
                assert_eq!(end, s.len());
            })
        });
    }
    g.finish();
}

criterion_group!(benches, verbatim_strings, verbatim_lines);
criterion_main!(benches);

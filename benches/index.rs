//! Indexing throughput, the header-parser candidates side by side, and context building.
//!
//! Inputs come from the project's generator (`pi_session::generator`), made in memory
//! before timing. Every bench asserts its answer. The 1 GiB inputs run only with
//! `PI_SESSION_BENCH_1G=1` (they take a few GB of memory and minutes).
//!
//! ```sh
//! cargo bench --features bench --bench index                       # 10 MB and 100 MB
//! PI_SESSION_BENCH_1G=1 cargo bench --features bench --bench index # adds 1 GiB
//! ```

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pi_session::generator::{Mix, SessionSpec, write_session};
use pi_session::internals::{self, Isa, Line, WhiteSpace, scan_line};
use rayon::prelude::*;
use std::hint::black_box;

fn generate(bytes: u64, mix: Mix, seed: u64) -> (Vec<u8>, u64) {
    let mut spec = SessionSpec::new(seed, bytes);
    spec.mix = mix;
    let mut out = Vec::with_capacity(bytes as usize + 1024);
    let stats = write_session(&spec, &mut out).expect("generate");
    (out, stats.lines)
}

fn sizes() -> Vec<(&'static str, u64)> {
    let mut v = vec![("10MB", 10 << 20), ("100MB", 100 << 20)];
    if std::env::var_os("PI_SESSION_BENCH_1G").is_some() {
        v.push(("1GiB", 1 << 30));
    }
    v
}

/// The floor: counting newlines with memchr on two threads (rayon), as PERF-NOTES does.
fn newline_count(bytes: &[u8]) -> usize {
    bytes
        .par_chunks(4 << 20)
        .map(|c| memchr::memchr_iter(b'\n', c).count())
        .sum()
}

fn index(c: &mut Criterion) {
    let mut g = c.benchmark_group("index");
    g.sample_size(10);
    for (name, size) in sizes() {
        for (mix_name, mix) in [
            ("realistic", Mix::Realistic),
            ("small-entries", Mix::SmallEntries),
            ("image-heavy", Mix::ImageHeavy),
        ] {
            let (bytes, lines) = generate(size, mix, 7);
            g.throughput(Throughput::Bytes(bytes.len() as u64));
            g.bench_with_input(
                BenchmarkId::new(format!("pi-session/{mix_name}"), name),
                &bytes,
                |b, bytes| {
                    b.iter(|| {
                        let idx = internals::build(black_box(bytes));
                        assert_eq!(idx.len() as u64, lines);
                    })
                },
            );
            g.bench_with_input(
                BenchmarkId::new(format!("memchr-newlines-2threads/{mix_name}"), name),
                &bytes,
                |b, bytes| b.iter(|| assert_eq!(newline_count(black_box(bytes)) as u64, lines)),
            );
        }
    }
    g.finish();
}

/// serde_json with a hand-written Visitor: `type`, `id`, `parentId`, last duplicate wins,
/// null kept apart from missing, everything else skipped (IgnoredAny).
mod serde_visitor {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    use std::fmt;

    #[derive(Default, Debug)]
    pub struct Head<'a> {
        pub ty: Option<&'a str>,
        pub id: Option<Option<&'a str>>,
        pub parent: Option<Option<&'a str>>,
    }

    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Head<'de>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an entry object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Head<'de>, A::Error> {
            let mut h = Head::default();
            while let Some(k) = m.next_key::<&'de str>()? {
                match k {
                    "type" => h.ty = m.next_value::<Option<&'de str>>()?,
                    "id" => h.id = Some(m.next_value()?),
                    "parentId" => h.parent = Some(m.next_value()?),
                    _ => {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(h)
        }
    }

    pub fn parse(line: &[u8]) -> Option<Head<'_>> {
        let mut de = serde_json::Deserializer::from_slice(line);
        let h = de.deserialize_map(V).ok()?;
        de.end().ok()?;
        Some(h)
    }
}

fn header_parsers(c: &mut Criterion) {
    let (bytes, _) = generate(100 << 20, Mix::Realistic, 11);
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    let n = lines.len();
    let mut g = c.benchmark_group("header-parsers");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("purpose-built (scan_line)", |b| {
        b.iter(|| {
            let ok = lines
                .iter()
                .filter(|l| matches!(scan_line(black_box(l)), Line::Object(_)))
                .count();
            assert_eq!(ok, n);
        })
    });
    g.bench_function("serde_json Visitor", |b| {
        b.iter(|| {
            let ok = lines
                .iter()
                .filter(|l| serde_visitor::parse(black_box(l)).is_some())
                .count();
            assert_eq!(ok, n);
        })
    });
    g.bench_function("simd-json borrowed value (needs a mutable copy)", |b| {
        let mut scratch = Vec::new();
        let mut buffers = simd_json::Buffers::default();
        b.iter(|| {
            let mut ok = 0;
            for l in &lines {
                scratch.clear();
                scratch.extend_from_slice(l);
                if simd_json::to_borrowed_value_with_buffers(&mut scratch, &mut buffers).is_ok() {
                    ok += 1;
                }
            }
            assert_eq!(ok, n);
        })
    });
    g.finish();
}

/// The leaf's context and the tree of an open session, on the realistic shape (ids
/// `build/SIZE`, `tree/SIZE`) and on the image-heavy one, whose context carries most of the
/// file (`build/image-heavy/SIZE`, `tree/image-heavy/SIZE`).
fn context(c: &mut Criterion) {
    let mut g = c.benchmark_group("context");
    g.sample_size(10);
    for (name, size) in sizes() {
        for (prefix, mix) in [("", Mix::Realistic), ("image-heavy/", Mix::ImageHeavy)] {
            let (bytes, _) = generate(size, mix, 7);
            let s = pi_session::Session::from_bytes(bytes).expect("opens");
            let leaf = s.leaf().clone();
            let want = s.context(&leaf).expect("context").messages.len();
            assert!(want > 0);
            // Build and tree: throughput in context messages.
            g.throughput(Throughput::Elements(want as u64));
            g.bench_function(
                BenchmarkId::new(format!("build/{prefix}").trim_end_matches('/'), name),
                |b| b.iter(|| assert_eq!(s.context(black_box(&leaf)).expect("context").messages.len(), want)),
            );
            g.bench_function(
                BenchmarkId::new(format!("tree/{prefix}").trim_end_matches('/'), name),
                |b| b.iter(|| assert_eq!(s.tree().expect("tree").roots.len(), 1)),
            );
            // Everything decoded (in parallel), and `context --json` written to a sink:
            // throughput in the source bytes of the messages.
            let ctx = s.context(&leaf).expect("context");
            let source: u64 = ctx.messages.iter().map(|m| m.span.len).sum();
            let mut json = Vec::new();
            s.write_context_json(&ctx, &mut json).expect("json");
            let (json_len, json_hash) = (json.len(), fnv(&json));
            drop(json);
            g.throughput(Throughput::Bytes(source));
            g.bench_function(
                BenchmarkId::new(format!("decode/{prefix}").trim_end_matches('/'), name),
                |b| b.iter(|| assert_eq!(s.context_values(black_box(&ctx)).expect("decode").len(), want)),
            );
            g.bench_function(
                BenchmarkId::new(format!("json/{prefix}").trim_end_matches('/'), name),
                |b| {
                    b.iter(|| {
                        let mut sink = Hasher::default();
                        s.write_context_json(black_box(&ctx), &mut sink).expect("json");
                        assert_eq!((sink.len, sink.hash), (json_len, json_hash));
                    })
                },
            );
        }
    }
    g.finish();
}

/// FNV-1a of bytes written, to assert output without keeping it.
#[derive(Default)]
struct Hasher {
    len: usize,
    hash: u64,
}

impl std::io::Write for Hasher {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.len == 0 {
            self.hash = 0xcbf2_9ce4_8422_2325;
        }
        // Only the stream's first 64 KiB are hashed, however it is cut into writes: a sink
        // must not cost more than what it measures. The length covers the rest.
        let head = (1usize << 16).saturating_sub(self.len).min(b.len());
        for &x in &b[..head] {
            self.hash = (self.hash ^ u64::from(x)).wrapping_mul(0x100_0000_01b3);
        }
        self.len += b.len();
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn fnv(b: &[u8]) -> u64 {
    let mut h = Hasher::default();
    std::io::Write::write_all(&mut h, b).expect("sink");
    h.hash
}

/// The string kernels side by side (the index picks the best this CPU has at run time):
/// a 16 MiB escape-dense string (code in a tool output, a backslash every ~9 bytes) and a
/// 16 MiB base64 string (an image).
fn string_kernels(c: &mut Criterion) {
    let mut g = c.benchmark_group("string-kernels");
    g.sample_size(20);
    let fill = |unit: &[u8]| {
        let mut s = vec![b'"'];
        while s.len() < 16 << 20 {
            s.extend_from_slice(unit);
        }
        s.push(b'"');
        s
    };
    let inputs = [
        ("escape-dense", fill(b"let x = \\\"a\\\"; \\n\\tfoo(bar) \\\\ baz")),
        (
            "base64",
            fill(b"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="),
        ),
    ];
    for (name, s) in &inputs {
        g.throughput(Throughput::Bytes(s.len() as u64));
        for k in internals::kernels() {
            let kname = format!("{k:?}").to_lowercase();
            g.bench_with_input(BenchmarkId::new(kname, name), s, |b, s| {
                b.iter(|| {
                    let (end, _) = internals::skip_string_kernel(k, black_box(s), 0).expect("valid string");
                    assert_eq!(end, s.len());
                })
            });
        }
    }
    g.finish();
}

/// The two container walkers on the `message` objects of a small-entries session (content
/// arrays, usage objects, tool arguments: short tokens only): the structural walker the
/// index and the listing use where the CPU has AVX-512, and the descent walk that stays
/// as its exact twin and error reporter.
fn container_walkers(c: &mut Criterion) {
    let (bytes, _) = generate(10 << 20, Mix::SmallEntries, 13);
    let mut buf = Vec::new();
    let mut starts = Vec::new();
    for line in bytes.split(|&b| b == b'\n') {
        if let Some(at) = memchr::memmem::find(line, b"\"message\":{") {
            starts.push(buf.len());
            buf.extend_from_slice(&line[at + 10..line.len() - 1]);
            buf.push(b'\n');
        }
    }
    let mut g = c.benchmark_group("container-walkers");
    g.sample_size(20);
    g.throughput(Throughput::Bytes(buf.len() as u64));
    type Walker = fn(&[u8], usize) -> Option<usize>;
    let walkers: [(&str, Walker); 2] = [
        ("structural", |b, i| {
            internals::skip_container_kernel(Isa::Avx512, WhiteSpace::Line, b, i)
        }),
        ("descent", |b, i| {
            internals::skip_container_exact(WhiteSpace::Line, b, i)
        }),
    ];
    for (name, walk) in walkers {
        g.bench_function(name, |b| {
            b.iter(|| {
                for &s in &starts {
                    let end = walk(black_box(&buf), s).expect("valid");
                    assert_eq!(buf[end], b'\n');
                }
            })
        });
    }
    g.finish();
}

/// The full decoder (`Value::parse`) at its string kernel's speed, beside the index's
/// string kernel (`skip_string`, the best this CPU has) or the index (`build`) on the same
/// bytes, and beside the obvious decoder it replaced (`internals::parse_naive`): an 8 MiB
/// base64 string (an image; borrowed), a 4 MiB escape-dense tool output (code with `\n`,
/// `\"`, `\t`, `\\` every few bytes and some non-ASCII; unescaped), and every message line
/// of a 64 MiB image-heavy session (ids `*/image-heavy-context`). Every decode asserts
/// its result.
fn decode(c: &mut Criterion) {
    use pi_session::Value;
    let mut g = c.benchmark_group("decode");
    g.sample_size(20);
    let best = *internals::kernels().last().expect("SWAR at least");

    // An image: 8 MiB of base64, as one JSON string.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut base64 = vec![b'"'];
    while base64.len() < (8 << 20) + 1 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        base64.push(alphabet[(x >> 58) as usize]);
    }
    base64.push(b'"');
    // A tool output: 4 MiB of code, escaped as pi writes it.
    let unit = "fn main() {\n\tlet s = \"héllo → wörld\\n\";\n\tif a \\ b { println!(\"{}\", s); } // ✓ done\n}\n";
    let code: String = unit.repeat((4 << 20) / unit.len());
    let escaped = Value::string(code.clone()).stringify().into_bytes();
    assert!(escaped.iter().filter(|&&c| c == b'\\').count() > escaped.len() / 12);

    for (name, text) in [("base64", &base64), ("escape-dense", &escaped)] {
        g.throughput(Throughput::Bytes(text.len() as u64));
        let want_len = match name {
            "base64" => base64.len() - 2,
            _ => code.len(),
        };
        g.bench_with_input(BenchmarkId::new("value-parse", name), text, |b, text| {
            b.iter(|| {
                let v = Value::parse(black_box(text)).expect("a string");
                let s = v.as_js_str().expect("a string");
                assert_eq!(s.as_bytes().len(), want_len);
            })
        });
        g.bench_with_input(BenchmarkId::new("value-parse-naive", name), text, |b, text| {
            b.iter(|| {
                let v = internals::parse_naive(black_box(text)).expect("a string");
                assert_eq!(v.as_js_str().expect("a string").as_bytes().len(), want_len);
            })
        });
        g.bench_with_input(BenchmarkId::new("index-skip-string", name), text, |b, text| {
            b.iter(|| {
                let (end, _) = internals::skip_string_kernel(best, black_box(text), 0).expect("valid");
                assert_eq!(end, text.len());
            })
        });
    }
    assert_eq!(Value::parse(&escaped).expect("a string").as_str(), Some(code.as_str()));

    // Every message line of an image-heavy session (the context of its leaf holds nearly
    // all of them), one `Value::parse` per line; the index builds over the same lines.
    let (bytes, _) = generate(64 << 20, Mix::ImageHeavy, 7);
    let mut lines_buf = Vec::new();
    let mut spans = Vec::new();
    for line in bytes.split(|&c| c == b'\n') {
        if line.starts_with(b"{\"type\":\"message\"") {
            spans.push(lines_buf.len()..lines_buf.len() + line.len());
            lines_buf.extend_from_slice(line);
            lines_buf.push(b'\n');
        }
    }
    let lines: Vec<&[u8]> = spans.iter().map(|r| &lines_buf[r.clone()]).collect();
    // What every decode must find: the number of strings and their decoded bytes.
    fn tally(v: &Value<'_>, acc: &mut (usize, usize)) {
        match v {
            Value::String(s) => {
                acc.0 += 1;
                acc.1 += s.as_bytes().len();
            }
            Value::Array(a) => a.iter().for_each(|x| tally(x, acc)),
            Value::Object(o) => o.iter().for_each(|(k, x)| {
                acc.0 += 1;
                acc.1 += k.as_bytes().len();
                tally(x, acc)
            }),
            _ => {}
        }
    }
    let mut want = (0, 0);
    for l in &lines {
        tally(&internals::parse_naive(l).expect("valid line"), &mut want);
    }
    g.throughput(Throughput::Bytes(lines_buf.len() as u64));
    let ctx = "image-heavy-context";
    g.bench_function(BenchmarkId::new("value-parse", ctx), |b| {
        b.iter(|| {
            let mut got = (0, 0);
            for l in &lines {
                tally(&Value::parse(black_box(l)).expect("valid line"), &mut got);
            }
            assert_eq!(got, want);
        })
    });
    g.bench_function(BenchmarkId::new("value-parse-naive", ctx), |b| {
        b.iter(|| {
            let mut got = (0, 0);
            for l in &lines {
                tally(&internals::parse_naive(black_box(l)).expect("valid line"), &mut got);
            }
            assert_eq!(got, want);
        })
    });
    g.bench_function(BenchmarkId::new("index-build", ctx), |b| {
        b.iter(|| assert_eq!(internals::build(black_box(&lines_buf)).len(), lines.len()))
    });
    g.finish();
}

criterion_group!(
    benches,
    index,
    header_parsers,
    context,
    string_kernels,
    container_walkers,
    decode
);
criterion_main!(benches);

//! `pi-session follow`: the time from an append's write to its line on the follower's
//! stdout, and the CPU an idle follower uses.
//!
//! ```sh
//! cargo build --release && cargo bench --features bench --bench follow
//! ```
//!
//! A session is followed (`--raw`, and as `show` prints, which decodes and renders each
//! entry) while entries of three shapes are appended one at a time, 50 ms apart: small
//! messages (~300 B), big tool outputs (1 MB of escape-dense text) and image messages
//! (4 MB of base64). Each line's latency is from just before its `write` to the moment
//! the follower's output shows its id. Then the follower is left idle for 10 s and its
//! CPU time (user + system, from /proc) is read. Target: a median under 100 ms, idle CPU
//! ~0. `PI_SESSION_BIN` names another binary.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn bin() -> PathBuf {
    std::env::var_os("PI_SESSION_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/pi-session"))
}

const HEADER: &str = "{\"type\":\"session\",\"version\":3,\"id\":\"0199a0c2-5a7e-7000-8000-00000000f011\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/bench\"}\n";

/// An entry line of a shape, with id `id` and parent `parent`.
fn line(shape: &str, id: &str, parent: &str) -> String {
    let head = format!(
        "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"{parent}\",\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":"
    );
    match shape {
        "small" => format!(
            "{head}{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}],\"timestamp\":1767225601000}}}}\n",
            "a small question about the parser ".repeat(7)
        ),
        "tool-output" => format!(
            "{head}{{\"role\":\"toolResult\",\"toolCallId\":\"c\",\"toolName\":\"bash\",\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}],\"isError\":false,\"timestamp\":1767225601000}}}}\n",
            "line\\t\\\"quoted\\\" \\\\ path\\n".repeat(1 << 20 >> 5)
        ),
        _ => format!(
            "{head}{{\"role\":\"user\",\"content\":[{{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":\"{}\"}}],\"timestamp\":1767225601000}}}}\n",
            "iVBORw0KGgoAAAANSUhEUgAA".repeat(4 << 20 >> 5)
        ),
    }
}

fn ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (in parentheses): fields 14 and 15 are utime and stime.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

fn run(mode: &str, args: &[&str], shapes: &[&str], per_shape: usize) {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, HEADER).expect("write");
    let mut child = Command::new(bin())
        .arg("follow")
        .arg(&file)
        .args(args)
        .env("TZ", "UTC")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run pi-session (cargo build --release first)");
    let (tx, rx) = mpsc::channel::<(String, Instant)>();
    let out = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        let mut r = BufReader::with_capacity(1 << 22, out);
        let mut l = String::new();
        while r.read_line(&mut l).is_ok_and(|n| n > 0) {
            let now = Instant::now();
            // The id: `"id":"bNNNN"` in a raw line, `· bNNNN` in show's header.
            if let Some(i) = l.find("bx") {
                let _ = tx.send((l[i..i + 7].to_owned(), now));
            }
            l.clear();
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    let mut f = std::fs::OpenOptions::new().append(true).open(&file).expect("open");
    let mut parent = "0".to_string();
    let mut n = 0;
    for shape in shapes {
        let mut lat = Vec::new();
        for _ in 0..per_shape {
            n += 1;
            let id = &format!("bx{n:05}");
            let text = line(shape, id, &parent);
            parent = id.to_owned();
            let t0 = Instant::now();
            f.write_all(text.as_bytes()).expect("append");
            loop {
                let (seen, at) = rx.recv_timeout(Duration::from_secs(10)).expect("the line within 10 s");
                if &seen == id {
                    lat.push(at.duration_since(t0));
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        lat.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "follow {mode:<5} {shape:<12} {} lines of {:>9} B: median {:6.1} ms  p90 {:6.1} ms  max {:6.1} ms",
            lat.len(),
            line(shape, "bx00000", "0").len(),
            ms(lat[lat.len() / 2]),
            ms(lat[lat.len() * 9 / 10]),
            ms(*lat.last().expect("some"))
        );
    }
    let pid = child.id();
    let before = ticks(pid);
    std::thread::sleep(Duration::from_secs(10));
    let after = ticks(pid);
    if let (Some(a), Some(b)) = (before, after) {
        println!(
            "follow {mode:<5} idle 10 s: {} clock ticks of CPU (1 tick = 10 ms)",
            b - a
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken.
    run("raw", &["--raw"], &["small", "tool-output", "image"], 21);
    run("show", &[], &["small", "tool-output", "image"], 21);
}

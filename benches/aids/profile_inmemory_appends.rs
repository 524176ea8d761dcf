//! Times appends to an in-memory session (`Writer::in_memory`, pi's no-session mode):
//! N user/assistant messages with a label every 50 entries, then prints the total time,
//! microseconds per append for the first and the last tenth, and a digest of the final
//! bytes (so two builds can be checked to write the same session).
//! `cargo run --release --example profile_inmemory_appends -- [N]` (default 10000).
use pi_session::{Entropy, Value, Writer};
use std::time::Instant;

fn message(role: &'static str, text: String) -> Value<'static> {
    let mut o = pi_session::Object::new();
    o.set(pi_session::JsStr::from_str("role"), Value::str(role));
    o.set(pi_session::JsStr::from_str("content"), Value::string(text));
    Value::Object(o)
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(10_000, |a| a.parse().expect("N is a number"));
    let mut w = Writer::in_memory("/bench", Entropy::seeded(7, 1_767_225_600_000));
    let tenth = (n / 10).max(1);
    let mut first = None;
    let mut last_start = None;
    let t = Instant::now();
    let mut previous = String::new();
    for i in 0..n {
        if i == n - tenth.min(n) {
            last_start = Some(t.elapsed());
        }
        let id = if i % 50 == 49 {
            w.append_label_change(&previous, Some("checkpoint"))
        } else {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            w.append_message(message(role, format!("message {i}: {}", "lorem ipsum ".repeat(8))))
        }
        .expect("append");
        previous = id;
        if i + 1 == tenth {
            first = Some(t.elapsed());
        }
    }
    let total = t.elapsed();
    let per = |d: std::time::Duration, k: usize| d.as_secs_f64() * 1e6 / k as f64;
    let first = first.unwrap_or(total);
    let last = total - last_start.unwrap_or_default();
    let bytes = w.session().bytes();
    // FNV-1a: enough to see that two builds wrote the same bytes.
    let digest = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    println!(
        "{n} in-memory appends: {:.3} s total; {:.1} us/append over the first tenth, {:.1} us over the last; \
         {} entries, {} bytes, digest {digest:016x}",
        total.as_secs_f64(),
        per(first, tenth),
        per(last, tenth),
        w.session().entries().len(),
        bytes.len(),
    );
}

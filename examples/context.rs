//! Open a session and print what goes to the model: one line per context message.
//!
//! `cargo run --example context -- FILE` (default: a session of the bundled corpus).

use pi_session::{Session, Value};

fn main() -> Result<(), pi_session::Error> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "corpus/valid/all-entry-types.jsonl".into());
    let session = Session::open(&path)?;
    let context = session.context(session.leaf())?;
    println!("{path}: {} messages in the model context", context.messages.len());
    for (message, source) in context.messages.iter().zip(&context.sources) {
        let role = printable(message.get("role").and_then(Value::as_str).unwrap_or("?"));
        let text = match message.get("content") {
            Some(Value::String(s)) => s.to_str_lossy().into_owned(),
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        };
        let first_line = printable(text.lines().next().unwrap_or(""));
        println!("line {:>4}  {role:<18} {first_line:.60}", session.line_of(*source));
    }
    for skipped in session.skipped() {
        eprintln!("skipped line {}: {}", skipped.line, skipped.reason);
    }
    Ok(())
}

/// Session text for a terminal: control characters (an escape sequence in a tool output
/// would drive the terminal) shown escaped, everything else as it is.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

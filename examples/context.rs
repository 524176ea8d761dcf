//! Open a session and print what goes to the model: one line per context message.
//!
//! `cargo run --example context -- FILE` (default: a session of the bundled corpus).

use pi_session::text::escape;
use pi_session::{Session, Value};

fn main() -> Result<(), pi_session::Error> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "corpus/valid/all-entry-types.jsonl".into());
    let session = Session::open(&path)?;
    let context = session.context(session.leaf())?;
    println!(
        "{}: {} messages in the model context",
        escape(&path),
        context.messages.len()
    );
    // The context is built as handles; each message is decoded here, when it is shown.
    for handle in &context.messages {
        let message = session.message(handle)?;
        let role = escape(message.get("role").and_then(Value::as_str).unwrap_or("?"));
        let text = match message.get("content") {
            Some(Value::String(s)) => s.to_str_lossy().into_owned(),
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        };
        // Text from the file goes to a terminal: cut, then control characters shown escaped.
        let first_line: String = text.lines().next().unwrap_or("").chars().take(60).collect();
        println!(
            "line {:>4}  {role:<18} {}",
            session.line_of(handle.entry),
            escape(&first_line)
        );
    }
    for skipped in session.skipped() {
        eprintln!("skipped line {}: {}", skipped.line, escape(&skipped.reason.to_string()));
    }
    Ok(())
}

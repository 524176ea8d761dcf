//! Append a user message to a session, as pi's `appendMessage` does, then read the branch
//! back. Works on a copy of a bundled session in a temporary folder.
//!
//! `cargo run --example append_message -- [FILE] [TEXT]`

use pi_session::{Entropy, Session, Value, Writer};

fn main() -> Result<(), pi_session::Error> {
    let mut args = std::env::args().skip(1);
    let source = args.next().unwrap_or_else(|| "corpus/valid/branches.jsonl".into());
    let text = args.next().unwrap_or_else(|| "Please also run the tests.".into());
    let dir = std::env::temp_dir().join(format!("pi-session-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("session.jsonl");
    std::fs::copy(&source, &file)?;

    let mut writer = Writer::open(&file, None, Entropy::default())?;
    let message = format!(
        r#"{{"role":"user","content":[{{"type":"text","text":{}}}],"timestamp":0}}"#,
        Value::str(&text).stringify()
    );
    let id = writer.append_message(Value::parse(message.as_bytes()).expect("valid JSON"))?;
    println!("appended entry {id} to {}", file.display());

    let session = Session::open(&file)?;
    println!(
        "the current branch now has {} entries, leaf {}",
        session.branch_path(None)?.len(),
        session.leaf().as_str().unwrap_or("none")
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

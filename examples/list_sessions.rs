//! List every session under a sessions root, newest first, as pi's `/resume` does, with
//! progress on stderr.
//!
//! `cargo run --example list_sessions -- [SESSIONS_ROOT]` (default: the bundled demo).

use pi_session::listing::{self, ListOptions, Progress};

fn main() -> Result<(), listing::Cancelled> {
    let root = std::env::args().nth(1).unwrap_or_else(|| "corpus/demo/sessions".into());
    let mut on_progress = |p: &Progress<'_>| eprint!("\r{}/{} files", p.loaded, p.total);
    let mut opts = ListOptions {
        on_progress: Some(&mut on_progress),
        ..ListOptions::default()
    };
    let found = listing::list_all(std::path::Path::new(&root), &mut opts)?;
    eprintln!();
    for s in &found.sessions {
        let title = s.name.as_ref().unwrap_or(&s.first_message).to_str_lossy();
        let title = printable(title.lines().next().unwrap_or(""));
        let when = s.modified_iso().unwrap_or_default();
        println!("{when}  {:>4} msgs  {title:.60}", s.message_count);
    }
    for f in &found.skipped {
        eprintln!("skipped {}: {}", f.path.display(), f.reason);
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

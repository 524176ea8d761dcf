//! List every session under a sessions root, newest first, as pi's `/resume` does, with
//! progress on stderr.
//!
//! `cargo run --example list_sessions -- [SESSIONS_ROOT]` (default: the bundled demo).

use pi_session::listing::{self, ListOptions, Progress};
use pi_session::text::{escape, escape_path};

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
        // Text from the file goes to a terminal: cut, then control characters shown escaped.
        let title: String = title.lines().next().unwrap_or("").chars().take(60).collect();
        let when = s.modified_iso().unwrap_or_default();
        println!("{when}  {:>4} msgs  {}", s.message_count, escape(&title));
    }
    for f in &found.skipped {
        eprintln!("skipped {}: {}", escape_path(&f.path), escape(&f.reason.to_string()));
    }
    Ok(())
}

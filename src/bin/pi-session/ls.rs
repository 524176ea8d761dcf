//! The `ls` and `find` commands.
//!
//! `ls --json` prints one session per line, a frozen format: an object with pi's
//! `SessionInfo` field names in pi's order (`path`, `id`, `cwd`, `name`,
//! `parentSessionPath`, `created`, `modified`, `messageCount`, `firstMessage`, and with
//! `--text` `allMessagesText`), written as `JSON.stringify` writes it; dates are
//! `toISOString()` strings (`null` for an invalid date), a missing `id`, `name` or
//! `parentSessionPath` is `null`. Newest first, in pi's order. A path that is not UTF-8
//! (pi's `path` is then lossy, U+FFFD for each bad sequence, naming no file) has one more
//! field after `path`: `pathBytes`, the exact bytes of the path as an array of numbers.
//!
//! The table (and every message) prints strings from sessions and file names escaped
//! (`pi_session::text`): a file name by its exact bytes, `\xe9` for a byte that is not
//! UTF-8, which `printf '%b'` turns back into the name.

use anyhow::Result;
use clap::{Args, ValueEnum};
use pi_session::dirs::{Env, Flavor};
use pi_session::listing::{self, ListOptions, Listing, Progress};
use pi_session::text::{escape, escape_path};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// Which program's directories and variables to follow.
#[derive(Clone, Copy, ValueEnum)]
pub enum FlavorArg {
    /// pi: ~/.pi/agent, PI_CODING_AGENT_DIR, PI_CODING_AGENT_SESSION_DIR.
    Pi,
    /// PiG: ~/.pig/agent, PIG_CODING_AGENT_DIR, PIG_CODING_AGENT_SESSION_DIR.
    Pig,
}

/// Where to look (shared by `ls` and `find`).
#[derive(Args)]
pub struct WhereArgs {
    /// The project's working directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// The agent dir; its `sessions/` is listed (default: $PI_CODING_AGENT_DIR or ~/.pi/agent).
    #[arg(long, value_name = "DIR")]
    agent_dir: Option<PathBuf>,
    /// A custom flat session dir (default: $PI_CODING_AGENT_SESSION_DIR, else `sessionDir`
    /// in the agent dir's settings.json).
    #[arg(long, value_name = "DIR")]
    session_dir: Option<PathBuf>,
    /// Follow pi's or PiG's conventions.
    #[arg(long, value_enum, default_value_t = FlavorArg::Pi)]
    flavor: FlavorArg,
}

/// `pi-session ls`.
#[derive(Args)]
pub struct LsArgs {
    #[command(flatten)]
    place: WhereArgs,
    /// Every project's sessions (pi's listAll), not only the current project's.
    #[arg(short, long)]
    all: bool,
    /// One JSON object per line (pi's SessionInfo fields, toISOString dates; a path that
    /// is not UTF-8 adds `pathBytes`, its exact bytes as an array of numbers).
    #[arg(short, long)]
    json: bool,
    /// With --json: also `allMessagesText`.
    #[arg(long)]
    text: bool,
    /// At most N sessions (the newest).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Also list the files that were skipped, and why, on stderr.
    #[arg(long)]
    show_skipped: bool,
}

/// `pi-session find`.
#[derive(Args)]
pub struct FindArgs {
    /// The exact session id.
    id: String,
    #[command(flatten)]
    place: WhereArgs,
}

struct Resolved {
    env: Env,
    cwd: PathBuf,
    agent_dir: PathBuf,
    custom: Option<PathBuf>,
}

impl LsArgs {
    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        self.json
    }
}

/// A folder named on the command line must exist: a missing one is an error (exit 2), not
/// an empty answer.
fn named_dirs_exist(w: &WhereArgs) -> Result<()> {
    for d in [&w.agent_dir, &w.session_dir].into_iter().flatten() {
        if let Err(e) = std::fs::read_dir(d) {
            anyhow::bail!(crate::show::Printable::io("cannot read", d, e));
        }
    }
    Ok(())
}

fn resolve(w: &WhereArgs) -> Result<Resolved> {
    named_dirs_exist(w)?;
    let flavor = match w.flavor {
        FlavorArg::Pi => Flavor::Pi,
        FlavorArg::Pig => Flavor::Pig,
    };
    let env = Env::from_process(flavor)?;
    let agent_dir = env.agent_dir(w.agent_dir.as_deref());
    let custom = env.custom_session_dir(w.session_dir.as_deref(), &agent_dir);
    let cwd = w.cwd.clone().unwrap_or_else(|| env.cwd.clone());
    Ok(Resolved {
        env,
        cwd,
        agent_dir,
        custom,
    })
}

/// Run `pi-session ls`; returns the exit code.
///
/// # Errors
/// Output errors.
pub fn run_ls(a: &LsArgs, read_mode: pi_session::ReadMode, out: &mut impl Write) -> Result<i32> {
    let r = resolve(&a.place)?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} sessions {elapsed}")
                .expect("the template is valid"),
        );
        b
    });
    let mut cb = |p: &Progress<'_>| {
        if let Some(b) = &bar {
            b.set_length(p.total as u64);
            b.set_position(p.loaded as u64);
        }
    };
    let mut opts = ListOptions {
        on_progress: bar.is_some().then_some(&mut cb as &mut listing::ProgressFn<'_>),
        read_mode,
        skip_text: !(a.json && a.text),
        ..ListOptions::default()
    };
    let (what, listing) = if a.all {
        match &r.custom {
            Some(dir) => (dir.clone(), listing::list_dir(dir, &mut opts)),
            None => {
                let root = pi_session::dirs::sessions_root(&r.agent_dir);
                (root.clone(), listing::list_all(&root, &mut opts))
            }
        }
    } else {
        let (dir, _) = listing::project_dir(&r.env, &r.cwd, r.custom.as_deref(), &r.agent_dir);
        let l = listing::list_project(&r.env, &r.cwd, r.custom.as_deref(), &r.agent_dir, &mut opts);
        (dir, l)
    };
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let listing: Listing = listing?;
    for p in &listing.problems {
        eprintln!("pi-session: {}: {}", escape_path(&p.path), escape(&p.what));
    }
    if listing.sessions.is_empty() && listing.problems.is_empty() {
        eprintln!("pi-session: no sessions in {}", escape_path(&what));
    }
    // Skipped files are listed with --show-skipped; a file rewritten while it was read
    // always is (it is not listed, and never silently).
    let mut unshown = 0;
    for s in &listing.skipped {
        if a.show_skipped || matches!(s.reason, listing::SkipFileReason::Changed) {
            eprintln!("skipped {}: {}", escape_path(&s.path), escape(&s.reason.to_string()));
        } else {
            unshown += 1;
        }
    }
    if unshown > 0 && std::io::stderr().is_terminal() {
        eprintln!("pi-session: {unshown} file(s) skipped (--show-skipped lists them)");
    }
    let n = a.limit.unwrap_or(usize::MAX).min(listing.sessions.len());
    // Rows are formatted in parallel, in pieces of 256, and written in order.
    use rayon::prelude::*;
    let pieces: Vec<Vec<u8>> = listing.sessions[..n]
        .par_chunks(256)
        .map(|chunk| {
            let mut buf = Vec::with_capacity(chunk.len() * 512);
            for s in chunk {
                if a.json {
                    s.write_json_line(a.text, &mut buf);
                } else {
                    table_row(s, &mut buf);
                }
            }
            buf
        })
        .collect();
    for p in pieces {
        out.write_all(&p)?;
    }
    // As `grep`: nothing listed is the answer no.
    Ok(if n == 0 { 1 } else { 0 })
}

fn table_row(s: &listing::SessionInfo, buf: &mut Vec<u8>) {
    let modified = s
        .modified_iso()
        .map(|d| d.get(..16).unwrap_or(&d).replace('T', " "))
        .unwrap_or_else(|| "(invalid date)   ".into());
    let title = match &s.name {
        Some(n) => n.to_str_lossy().into_owned(),
        None => s.first_message.to_str_lossy().into_owned(),
    };
    // One line per session: line breaks and tabs become spaces, then the first 60
    // characters, other controls escaped.
    let title: String = title
        .chars()
        .map(|c| {
            if matches!(c, '\t' | '\n' | '\r' | '\u{b}' | '\u{c}') {
                ' '
            } else {
                c
            }
        })
        .take(60)
        .collect();
    let _ = writeln!(
        buf,
        "{modified}  {:>5}  {:<60}  {}  {}",
        s.message_count,
        escape(&title),
        escape(&s.cwd.to_str_lossy()),
        escape_path(&s.path)
    );
}

/// Run `pi-session find ID`: pi's `findById` in the project's folder, then every folder
/// of the sessions root (or the custom dir); prints the path.
///
/// # Errors
/// Output errors.
pub fn run_find(a: &FindArgs, out: &mut impl Write) -> Result<i32> {
    let r = resolve(&a.place)?;
    let found =
        listing::find_by_id(&r.env, &r.cwd, &a.id, r.custom.as_deref(), &r.agent_dir).or_else(|| match &r.custom {
            Some(dir) => listing::find_by_id_in(&r.env, dir, &a.id, None),
            None => find_anywhere(&r.env, &pi_session::dirs::sessions_root(&r.agent_dir), &a.id),
        });
    match found {
        Some(p) => {
            writeln!(out, "{}", escape_path(&p))?;
            Ok(0)
        }
        None => {
            eprintln!("pi-session: no session with id {}", escape(&a.id));
            Ok(1)
        }
    }
}

fn find_anywhere(env: &Env, root: &Path, id: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs.iter().find_map(|d| listing::find_by_id_in(env, d, id, None))
}

//! The `pi-session` command-line tool.
//!
//! Exit codes (docs/cli.md): 0 success, 1 the answer is no (an id that names nothing, a
//! file that is no session, nothing listed, `check --strict` found problems), 2 usage or
//! I/O error or a request that cannot be carried out; the error is one line on stderr and,
//! under `--json`, an error object on stdout ([`show::Kind`]). A closed pipe
//! (`pi-session dump f | head`) ends the program quietly with 0.
//!
//! Text output (and every message on stderr) prints strings from sessions and file names
//! in `pi_session::text`'s escaped form: `\x1b` for a control byte or a byte of a file
//! name that is not UTF-8, `\u009b` for a C1 control or a bidi override, `\\` for a
//! backslash; `--json` output is `JSON.stringify`'s, exact.

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use flags::{ColorArgs, SessionArg};
use pi_session::dump::{DumpOptions, LeafChoice, TreeMode};
use pi_session::text::{escape, escape_path};
use pi_session::{OpenOptions, ReadMode};
use show::Kind;
use std::io::{self, Write};
use std::path::PathBuf;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod export;
mod flags;
mod generate;
mod index;
mod locate;
mod ls;
mod open;
#[cfg(feature = "parquet")]
mod parquet;
mod read;
mod search;
mod show;
mod term;
mod transcript;
mod tree;
mod usage;
mod when;
mod write;

/// `--version`: the crate's version and the format it reads and writes.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (session format v3, pi 1.6.0)");

#[derive(Parser)]
#[command(
    name = "pi-session",
    version = VERSION,
    about = "Read, index and query pi coding-agent session files",
    after_help = "Exit status: 0 success; 1 the answer is no (an id that names nothing, a file that is no session, nothing listed, `check --strict` found problems); 2 usage or I/O error, or a request that cannot be carried out (docs/cli.md).\n\nText output (and every message on stderr) shows strings from session files and file names escaped, on a terminal or not: \\x1b for a control character (tab excepted) or DEL, \\xe9 for a byte of a file name that is not UTF-8, \\u009b for a C1 control, \\u202e for a bidi override, \\\\ for a backslash; `printf '%b'` turns a printed file name back into the name. --json output is JSON.stringify's; `ls --json` adds `pathBytes` (the path's bytes as an array of numbers) for a path that is not UTF-8."
)]
struct Cli {
    /// How to read files: auto (mmap files of 1 MiB+, 32 KiB+ when listing), mmap, read (never maps).
    #[arg(long, global = true, value_enum, default_value_t = Mode::Auto, hide = true)]
    read_mode: Mode,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum Mode {
    Auto,
    Mmap,
    Read,
}

#[derive(Clone, Copy, ValueEnum)]
enum TreeArg {
    Nested,
    Flat,
    None,
}

/// `pi-session follow`.
#[derive(clap::Args)]
struct FollowArgs {
    /// The session: its file, or its id or a unique prefix of one.
    #[arg(value_name = "SESSION", required_unless_present = "latest")]
    file: Option<PathBuf>,
    /// Follow the newest session of the project of CWD (default: the current folder),
    /// and the next one when pi starts it.
    #[arg(long, value_name = "CWD", num_args = 0..=1, default_missing_value = ".", conflicts_with = "file")]
    latest: Option<PathBuf>,
    /// Print nothing of what the file holds now: only what is appended.
    #[arg(long)]
    new: bool,
    /// One JSON object per entry: `dump --branch-view`'s lines.
    #[arg(short, long)]
    json: bool,
    /// Each entry's line exactly as written: `dump --entries`'s lines.
    #[arg(long, conflicts_with = "json")]
    raw: bool,
    /// Tool results and summaries in full.
    #[arg(long)]
    full: bool,
    /// Thinking blocks too.
    #[arg(long)]
    thinking: bool,
    #[command(flatten)]
    color: ColorArgs,
    #[command(flatten)]
    zone: crate::flags::ZoneArgs,
    #[command(flatten)]
    place: flags::PlaceArgs,
}

#[derive(Subcommand)]
enum Cmd {
    /// List sessions as pi's /resume does, newest first (--all: every project).
    Ls(ls::LsArgs),
    /// Print the path of the session with this id (or a unique prefix of it).
    Find(ls::FindArgs),
    /// Find what was said: a regex over the decoded text of every session (or the ones
    /// named), newest session first; ripgrep's flags and exit codes.
    #[command(visible_alias = "grep")]
    Search(search::SearchArgs),
    /// Tokens and cost of every session by day, month, session or model: every usage
    /// record pi wrote, each counted once across forks and copies.
    Usage(usage::UsageArgs),
    /// Bring the caches (listing, search maps, usage records) of every session up to
    /// date, or build them again (--rebuild), and say what they hold (--stats: only say).
    Index(index::IndexArgs),
    /// Export sessions, entries and usage records as Parquet tables (Hive-partitioned by
    /// day) for DuckDB, DataFusion, polars or Spark; a second run writes only what changed.
    #[cfg(feature = "parquet")]
    ExportParquet(parquet::ExportParquetArgs),
    /// (A build without the `parquet` feature: says how to get the command.)
    #[cfg(not(feature = "parquet"))]
    #[command(hide = true, disable_help_flag = true)]
    ExportParquet {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Read the conversation: the current branch (or --leaf's) as a transcript, paged
    /// through $PAGER (default `less -FRX`) on a terminal.
    #[command(
        after_help = "Each message gets a header line (role, model, local time (--utc: UTC), entry id, label); tool calls are one line each, tool results and summaries are cut to their first lines, images show as their type and size, thinking is hidden.\n\nExample: pi-session show s.jsonl --leaf 4bd0512f --full"
    )]
    Show {
        #[command(flatten)]
        session: SessionArg,
        /// Show the branch ending at this entry instead of the current leaf.
        #[arg(short, long)]
        leaf: Option<String>,
        /// Tool results and summaries in full.
        #[arg(long)]
        full: bool,
        /// Thinking blocks too.
        #[arg(long)]
        thinking: bool,
        /// Never page, even on a terminal.
        #[arg(long)]
        no_pager: bool,
        #[command(flatten)]
        color: ColorArgs,
        #[command(flatten)]
        zone: crate::flags::ZoneArgs,
    },
    /// Print the current branch as `show` does, then each entry as it is appended, until
    /// interrupted: a torn line waits for its end, a rewrite or a file deleted and made
    /// again is read from its start (and said so); --latest follows the newest session of
    /// a project, and the next one when pi starts it.
    Follow(FollowArgs),
    /// Draw the conversation's shape as pi's /tree does: one line an entry (role and
    /// text cut to the terminal), the current branch marked `*` (`@` its leaf); --json
    /// for scripts.
    Tree(tree::TreeArgs),
    /// Export the current branch (or --leaf's) as Markdown, a self-contained HTML page, or
    /// a pi session file (jsonl).
    Export(export::ExportArgs),
    /// Print the model context for the current leaf (or --leaf), as pi builds it, or as
    /// PiG does (--flavor pig, and by default for a session under PiG's folder).
    Context {
        #[command(flatten)]
        session: SessionArg,
        /// Compute the context for this entry (an id or a unique prefix of one) instead of
        /// the current leaf.
        #[arg(short, long)]
        leaf: Option<String>,
        /// Print the context as JSON (messages, thinkingLevel, model).
        #[arg(short, long)]
        json: bool,
        /// Let a compaction's `retainedTail` stand in for the kept range (the format
        /// documents' rule; pi 1.6.0 ignores the field).
        #[arg(long)]
        retained_tail: bool,
    },
    /// Validate every line of a session, build its tree and context, and say what pi's open
    /// would change (--json for scripts, --strict to fail on problems).
    Check {
        #[command(flatten)]
        session: SessionArg,
        /// Print the summary as JSON.
        #[arg(short, long)]
        json: bool,
        /// Exit 1 when the file is not as pi leaves it: skipped lines, a step that fails,
        /// a line pi's open throws on, a change pi's open would make, a pending append.
        #[arg(short, long)]
        strict: bool,
        /// Also print how long the check took (and, with --json, whether the file was mapped).
        #[arg(long)]
        timings: bool,
    },
    /// Append a message (a JSON object, on stdin or as MESSAGE) as a child of the leaf;
    /// prints its id.
    #[command(
        after_help = "The message must be one pi writes: a role of user, assistant, toolResult, bashExecution, custom, branchSummary, compactionSummary or system, with the fields of that role (content of the right shape); a missing timestamp is filled in with the current time in milliseconds. --raw appends any JSON object as it is.\n\nExample: pi-session append s.jsonl '{\"role\":\"user\",\"content\":\"hi\"}'"
    )]
    Append {
        #[command(flatten)]
        session: SessionArg,
        #[command(flatten)]
        wait: flags::WaitArgs,
        /// The message; `-` or none: read it from stdin.
        message: Option<String>,
        /// Append the message as it is: any JSON object, no timestamp filled in.
        #[arg(long)]
        raw: bool,
        /// Continue from this entry (an id or a unique prefix of one) instead of the leaf
        /// (pi's branch(id), then the append).
        #[arg(short, long, value_name = "ID")]
        parent: Option<String>,
    },
    /// Set (or, with an empty LABEL, clear) the label of entry ID.
    Label {
        #[command(flatten)]
        session: SessionArg,
        #[command(flatten)]
        wait: flags::WaitArgs,
        /// The entry to label (its id, or a unique prefix of four characters or more).
        id: String,
        /// The label; empty clears it.
        label: String,
    },
    /// Set the session's display name.
    Name {
        #[command(flatten)]
        session: SessionArg,
        #[command(flatten)]
        wait: flags::WaitArgs,
        /// The name (newlines become spaces, trimmed).
        name: String,
    },
    /// Write a new session holding only the path to LEAF_ID (pi's createBranchedSession);
    /// prints the new file.
    Branch {
        #[command(flatten)]
        session: SessionArg,
        #[command(flatten)]
        wait: flags::WaitArgs,
        /// The last entry of the path to keep (an id or a unique prefix of one).
        leaf_id: String,
    },
    /// Copy a session into another project's folder (pi's forkFrom); prints the new file.
    #[command(
        after_help = "The new file goes to --session-dir when it is given, else to the folder of --cwd's project under the agent dir's sessions/."
    )]
    Fork {
        #[command(flatten)]
        session: SessionArg,
        #[command(flatten)]
        wait: flags::WaitArgs,
        /// The working directory of the new session.
        #[arg(long)]
        cwd: PathBuf,
    },
    /// Migrate an old-format file to version 3 in place, atomically (what pi's open does).
    Migrate {
        #[command(flatten)]
        session: SessionArg,
        #[command(flatten)]
        wait: flags::WaitArgs,
    },
    /// Finish or undo an append that a crash interrupted.
    ///
    /// Every write command does this first: a torn last line is cut back to the old file; anything else is left alone.
    Recover {
        #[command(flatten)]
        session: SessionArg,
        #[command(flatten)]
        wait: flags::WaitArgs,
        /// Print what was done as JSON (`action`: clean, not-written, completed, truncated,
        /// stale, busy).
        #[arg(short, long)]
        json: bool,
    },
    /// Print what pi computes for a session as JSON: header, entries, leaf, branch, context, tree
    /// and name, keys sorted.
    Dump {
        #[command(flatten)]
        session: SessionArg,
        /// Navigate to this entry first (pi's /tree); `null` resets the leaf.
        #[arg(short, long, conflicts_with = "leaf_raw")]
        leaf: Option<String>,
        /// Use this leaf with pi's free functions (unknown ids fall back to the last entry).
        #[arg(long)]
        leaf_raw: Option<String>,
        /// How to print the tree.
        #[arg(long, value_enum, default_value_t = TreeArg::Nested)]
        tree: TreeArg,
        /// Replace strings longer than N UTF-16 units by their sha256.
        #[arg(long, value_name = "N")]
        digest: Option<usize>,
        /// One line instead of indented JSON.
        #[arg(long)]
        compact: bool,
        /// Print every entry's line exactly as written, one per line, in file order
        /// (PiG's `GetEntries`; never re-encoded), instead of pi's view.
        #[arg(long, conflicts_with_all = ["leaf", "leaf_raw", "tree", "digest", "compact", "branch_view"])]
        entries: bool,
        /// Print the current branch (or --leaf's), root first, one JSON object per entry
        /// with its common fields: id, parentId, type, role, text, toolName, toolCalls,
        /// provider, model, timestamp, messageTimestamp (PiG's `GetBranch`).
        #[arg(long, conflicts_with_all = ["leaf_raw", "tree", "digest", "compact"])]
        branch_view: bool,
    },
    /// Generate synthetic sessions (deterministic, for benchmarks and demos).
    #[command(subcommand)]
    Gen(generate::GenCmd),
    /// Print a completion script for SHELL (bash: `pi-session completions bash >
    /// ~/.local/share/bash-completion/completions/pi-session`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) of pi-session, or of one of its commands
    /// (`pi-session man | man -l -`).
    #[command(after_help = "Example: pi-session man --dir ~/.local/share/man/man1 (then `man pi-session-ls`)")]
    Man {
        /// A command: its own page.
        #[arg(conflicts_with = "dir")]
        command: Option<String>,
        /// Write every page (pi-session.1 and one per command, which pi-session.1 refers
        /// to) into DIR instead; prints the files written.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

impl Cmd {
    /// The SESSION argument, for the commands that take one: a path, a session id or a
    /// unique prefix of one ([`locate`]).
    fn session_mut(&mut self) -> Option<&mut SessionArg> {
        match self {
            Cmd::Dump { session, .. }
            | Cmd::Check { session, .. }
            | Cmd::Context { session, .. }
            | Cmd::Show { session, .. }
            | Cmd::Append { session, .. }
            | Cmd::Label { session, .. }
            | Cmd::Name { session, .. }
            | Cmd::Fork { session, .. }
            | Cmd::Branch { session, .. }
            | Cmd::Recover { session, .. }
            | Cmd::Migrate { session, .. } => Some(session),
            Cmd::Export(a) => Some(&mut a.session),
            Cmd::Tree(a) => Some(&mut a.session),
            Cmd::Ls(_)
            | Cmd::Follow(_)
            | Cmd::Find(_)
            | Cmd::Search(_)
            | Cmd::Usage(_)
            | Cmd::Index(_)
            | Cmd::Gen(_)
            | Cmd::Completions { .. }
            | Cmd::Man { .. } => None,
            Cmd::ExportParquet { .. } => None,
        }
    }

    /// `--wait`, for the commands that write.
    fn wait(&self) -> Option<flags::WaitArgs> {
        match self {
            Cmd::Append { wait, .. }
            | Cmd::Label { wait, .. }
            | Cmd::Name { wait, .. }
            | Cmd::Branch { wait, .. }
            | Cmd::Fork { wait, .. }
            | Cmd::Migrate { wait, .. }
            | Cmd::Recover { wait, .. } => Some(*wait),
            _ => None,
        }
    }

    /// Whether a failure answers with a JSON error object on stdout (`--json`): `Some`,
    /// with the file for `check` (whose object names it).
    fn json_errors(&self) -> Option<Option<PathBuf>> {
        match self {
            Cmd::Check {
                json: true, session, ..
            } => Some(Some(session.file.clone())),
            Cmd::Context { json: true, .. } | Cmd::Recover { json: true, .. } => Some(None),
            Cmd::Ls(a) if a.json() => Some(None),
            Cmd::Tree(a) if a.json => Some(None),
            Cmd::Search(a) if a.json => Some(None),
            Cmd::Usage(a) if a.json => Some(None),
            Cmd::Index(a) if a.json => Some(None),
            #[cfg(feature = "parquet")]
            Cmd::ExportParquet(a) if a.json => Some(None),
            _ => None,
        }
    }
}

/// Ignore `SIGXFSZ`, so that a write past `ulimit -f` fails with `EFBIG` (and the append
/// cuts its bytes back) instead of killing the process between two `write()` calls.
#[cfg(unix)]
#[allow(unsafe_code)]
fn ignore_sigxfsz() {
    // SAFETY: `signal` with `SIG_IGN` installs no handler code, only the disposition
    // "ignore"; it runs first in main, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Let glibc's malloc grow its heaps 16 MiB at a time: a warm listing of 10,000 sessions
/// made 2,800 `mprotect` calls growing the worker threads' heaps page by page (12% of its
/// time in `sysmalloc`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn malloc_in_bigger_steps() {
    // SAFETY: `mallopt` only sets a tuning parameter of the allocator; it runs first in
    // main, before any other thread exists or anything is allocated on another thread.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 16 << 20);
    }
}

fn main() {
    #[cfg(unix)]
    ignore_sigxfsz();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    malloc_in_bigger_steps();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            // A usage error under --json still answers with an error object.
            if code != 0 && std::env::args_os().any(|a| a == "--json" || a == "-j") {
                let rendered = e.render().to_string();
                let first = rendered.lines().next().unwrap_or("usage error");
                let text = first.strip_prefix("error: ").unwrap_or(first);
                let _ = writeln!(io::stdout(), "{}", json_error(None, Kind::Usage, text));
            }
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let json = cli.cmd.json_errors();
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            if e.chain().any(|c| {
                c.downcast_ref::<io::Error>()
                    .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            }) {
                0
            } else {
                let kind = Kind::of_chain(&e);
                let text = show::error_line(&e);
                if let Some(file) = json {
                    let _ = writeln!(io::stdout(), "{}", json_error(file.as_deref(), kind, &text));
                }
                eprintln!("pi-session: {text}");
                kind.code()
            }
        }
    };
    std::process::exit(code);
}

/// `--json`'s answer when a command fails (docs/cli.md): `{"error":{"kind","message"}}`;
/// `check` puts `"file"` and `"session":false` first.
fn json_error(file: Option<&std::path::Path>, kind: Kind, message: &str) -> String {
    let str = |s: &str| pi_session::Value::str(s).stringify();
    let head = file.map_or(String::new(), |f| {
        format!("\"file\":{},\"session\":false,", str(&f.display().to_string()))
    });
    format!(
        "{{{head}\"error\":{{\"kind\":{},\"message\":{}}}}}",
        str(kind.as_str()),
        str(message)
    )
}

fn run(mut cli: Cli) -> Result<i32> {
    if let Some(session) = cli.cmd.session_mut() {
        session.locate()?;
    }
    let open = OpenOptions {
        read_mode: match cli.read_mode {
            Mode::Auto => ReadMode::Auto,
            Mode::Mmap => ReadMode::Mmap,
            Mode::Read => ReadMode::Read,
        },
        chunk: None,
        release_pages: false,
        // An old-format file's ids are the same on every run, so that an id one command
        // prints names the same entry in the next (and `migrate` writes these ids).
        v1_ids: pi_session::V1Ids::Stable,
    };
    if let Some(w) = cli.cmd.wait() {
        write::set_lock_wait(w.wait);
    }
    // On a terminal, the last line of defence: what a terminal acts on without showing it
    // (C1 controls, direction and invisible characters, which `--json` output keeps raw
    // as `JSON.stringify` does) is written as `\uNNNN`.
    let raw: Box<dyn Write> = if std::io::IsTerminal::is_terminal(&io::stdout()) {
        Box::new(pi_session::text::TerminalWriter::new(stdout()))
    } else {
        Box::new(stdout())
    };
    let mut out = io::BufWriter::with_capacity(1 << 16, raw);
    let code = match cli.cmd {
        Cmd::Dump {
            session: SessionArg { file, .. },
            leaf,
            leaf_raw,
            tree,
            digest,
            compact,
            entries,
            branch_view,
        } => {
            if entries || branch_view {
                let view = if entries {
                    read::Reading::Entries
                } else {
                    read::Reading::Branch
                };
                read::reading(&file, open, leaf.as_deref(), view, &mut out)?;
                return Ok(0);
            }
            let leaf = match (leaf, leaf_raw) {
                (Some(l), _) => LeafChoice::Navigate((l != "null").then_some(l)),
                (None, Some(l)) => LeafChoice::Raw((l != "null").then_some(l)),
                (None, None) => LeafChoice::Current,
            };
            let tree = match tree {
                TreeArg::Nested => TreeMode::Nested,
                TreeArg::Flat => TreeMode::Flat,
                TreeArg::None => TreeMode::None,
            };
            let opts = DumpOptions {
                leaf,
                tree,
                digest,
                compact,
                open,
            };
            if let Ok(Some(r)) = pi_session::pending_recovery(&file) {
                eprintln!(
                    "pi-session: {}: append journal: {}",
                    escape_path(&file),
                    read::pending_text(&r)
                );
            }
            let notes = pi_session::dump::dump(&file, &opts, &mut out).map_err(show::reading(&file))?;
            if let Some(why) = &notes.no_header {
                // pi's answer is printed (the oracle's shape); the answer is still no.
                out.flush()?;
                eprintln!("pi-session: {}: not a pi session: {}", escape_path(&file), escape(why));
                return Ok(1);
            }
            if opts.tree == TreeMode::Nested && !opts.compact && notes.tree_depth > pi_session::dump::DEEP_TREE {
                eprintln!(
                    "pi-session: {}: the tree is {} entries deep: its nested form grows with the square of the depth; `--tree flat` prints the same tree in linear size",
                    file.display(),
                    notes.tree_depth
                );
            }
            0
        }
        Cmd::Check {
            session: SessionArg { file, .. },
            json,
            strict,
            timings,
        } => read::check(&file, open, read::CheckFlags { json, strict, timings }, &mut out)?,
        Cmd::Context {
            session,
            leaf,
            json,
            retained_tail,
        } => {
            let flavor = session.flavor();
            let flags = read::ContextFlags {
                leaf: leaf.as_deref(),
                json,
                retained_tail,
                flavor,
            };
            read::context(&session.file, open, flags, &mut out)?
        }
        Cmd::Tree(a) => tree::run(&a, open, &mut out)?,
        Cmd::Show {
            session: SessionArg { file, .. },
            leaf,
            full,
            thinking,
            no_pager,
            color,
            zone,
        } => {
            when::set_transcript_zone(zone.zone()?);
            let mut pager = (!no_pager).then(term::Pager::start).flatten();
            let color = color.on_stdout();
            let flags = transcript::ShowFlags { full, thinking, color };
            let code = match &mut pager {
                Some(p) => transcript::show(&file, open, leaf.as_deref(), flags, p.input()),
                None => transcript::show(&file, open, leaf.as_deref(), flags, &mut out),
            };
            if let Some(p) = pager {
                p.finish();
            }
            code?
        }
        Cmd::Follow(a) => {
            when::set_transcript_zone(a.zone.zone()?);
            let how = if a.raw {
                transcript::FollowAs::Raw
            } else if a.json {
                transcript::FollowAs::Json
            } else {
                transcript::FollowAs::Text(transcript::ShowFlags {
                    full: a.full,
                    thinking: a.thinking,
                    color: a.color.on_stdout(),
                })
            };
            let target = match (&a.file, &a.latest) {
                (_, Some(cwd)) => pi_session::follow::Target::Latest(a.place.resolve(Some(cwd))?),
                (Some(f), None) => {
                    let place = &a.place;
                    pi_session::follow::Target::File(locate::session(f, || place.resolve(None))?)
                }
                (None, None) => unreachable!("clap requires SESSION or --latest"),
            };
            transcript::follow(target, open, a.new, how, &mut out)?
        }
        Cmd::Export(a) => {
            when::set_transcript_zone(a.zone.zone()?);
            export::run(&a, open, &mut out)?
        }
        Cmd::Ls(a) => ls::run_ls(&a, open.read_mode, &mut out)?,
        Cmd::Find(a) => ls::run_find(&a, &mut out)?,
        Cmd::Search(a) => search::run(&a, open.read_mode, &mut out)?,
        Cmd::Usage(a) => usage::run(&a, open.read_mode, &mut out)?,
        Cmd::Index(a) => index::run(&a, open.read_mode, &mut out)?,
        #[cfg(feature = "parquet")]
        Cmd::ExportParquet(a) => parquet::run(&a, open.read_mode, &mut out)?,
        #[cfg(not(feature = "parquet"))]
        Cmd::ExportParquet { .. } => anyhow::bail!(show::Printable::kind(
            "export-parquet is not in this build: install with `cargo install --path . --features parquet` (the README's install command)".into(),
            Kind::Usage
        )),
        Cmd::Gen(g) => generate::generate(g, &mut out)?,
        Cmd::Append {
            session: SessionArg { file, .. },
            message,
            raw,
            parent,
            ..
        } => write::append(&file, message.as_deref(), raw, parent.as_deref(), &mut out)?,
        Cmd::Label {
            session: SessionArg { file, .. },
            id,
            label,
            ..
        } => write::label(&file, &id, &label, &mut out)?,
        Cmd::Name {
            session: SessionArg { file, .. },
            name,
            ..
        } => write::name(&file, &name, &mut out)?,
        Cmd::Fork {
            session: SessionArg { file, place },
            cwd,
            ..
        } => write::fork(&file, &cwd, &place, &mut out)?,
        Cmd::Branch {
            session: SessionArg { file, .. },
            leaf_id,
            ..
        } => write::branch(&file, &leaf_id, &mut out)?,
        Cmd::Migrate {
            session: SessionArg { file, .. },
            ..
        } => write::migrate(&file, &mut out)?,
        Cmd::Recover {
            session: SessionArg { file, .. },
            json,
            ..
        } => write::recover(&file, json, &mut out)?,
        Cmd::Completions { shell } => {
            use clap::CommandFactory as _;
            clap_complete::generate(shell, &mut Cli::command(), "pi-session", &mut out);
            0
        }
        Cmd::Man { command, dir } => match dir {
            Some(d) => man_pages(&d, &mut out)?,
            None => man(command.as_deref(), &mut out)?,
        },
    };
    out.flush()?;
    Ok(code)
}

/// `pi-session man [COMMAND]`: the roff page of the tool or of one command.
fn man(command: Option<&str>, out: &mut impl Write) -> Result<i32> {
    use clap::CommandFactory as _;
    let top = Cli::command().version(VERSION);
    let page = match command {
        None => top,
        Some(name) => {
            let Some(sub) = top.find_subcommand(name).cloned() else {
                anyhow::bail!(show::Printable::kind(
                    format!("no command {} (pi-session --help lists them)", escape(name)),
                    Kind::Usage
                ));
            };
            let full = format!("pi-session-{}", sub.get_name());
            sub.name(full).version(VERSION)
        }
    };
    clap_mangen::Man::new(page).render(out)?;
    Ok(0)
}

/// `pi-session man --dir DIR`: every page, written into DIR (made when missing).
fn man_pages(dir: &std::path::Path, out: &mut impl Write) -> Result<i32> {
    use clap::CommandFactory as _;
    std::fs::create_dir_all(dir).map_err(|e| show::Printable::io("cannot make", dir, e))?;
    let mut top = Cli::command().version(VERSION);
    // (Built, so that clap's own `help` command, which the main page names, is there.)
    top.build();
    let mut pages = vec![("pi-session".to_string(), top.clone())];
    for sub in top.get_subcommands().filter(|c| !c.is_hide_set()) {
        let full = format!("pi-session-{}", sub.get_name());
        pages.push((full.clone(), sub.clone().name(full).version(VERSION)));
    }
    for (name, page) in pages {
        let path = dir.join(format!("{name}.1"));
        let cannot = |e: std::io::Error| show::Printable::io("cannot write", &path, e);
        let mut f = pi_session::OutputFile::create(&path).map_err(cannot)?;
        clap_mangen::Man::new(page).render(&mut f).map_err(cannot)?;
        f.finish().map_err(cannot)?;
        writeln!(out, "{}", escape_path(&path))?;
    }
    Ok(0)
}

/// Standard output without std's line buffer on Unix: `Stdout` is a `LineWriter`, which
/// scans every write it is handed for its last newline (7% of `context --json` of a 1 GiB
/// session went to that `memrchr`). Writes go to fd 1 as they are; the `BufWriter` around
/// it batches the small ones.
#[cfg(unix)]
struct RawStdout(io::Stdout);

#[cfg(unix)]
impl Write for RawStdout {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        use std::os::fd::AsFd;
        loop {
            match rustix::io::write(self.0.as_fd(), b) {
                Ok(n) => return Ok(n),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(unix)]
fn stdout() -> RawStdout {
    RawStdout(io::stdout())
}

#[cfg(not(unix))]
fn stdout() -> io::StdoutLock<'static> {
    io::stdout().lock()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory as _;
        // (Clap's own checks: no two flags of a command share a name or a short.)
        super::Cli::command().debug_assert();
    }

    #[test]
    fn wait_is_a_flag_of_the_commands_that_write_only() {
        use clap::CommandFactory as _;
        let cli = super::Cli::command();
        let has_wait = |name: &str| {
            cli.find_subcommand(name)
                .expect("a command")
                .get_arguments()
                .any(|a| a.get_id() == "wait")
        };
        for w in ["append", "label", "name", "branch", "fork", "migrate", "recover"] {
            assert!(has_wait(w), "{w}");
        }
        for r in [
            "show", "tree", "export", "context", "check", "dump", "ls", "find", "search", "usage",
        ] {
            assert!(!has_wait(r), "{r} (#36: --wait showed on read-only commands)");
        }
    }
}

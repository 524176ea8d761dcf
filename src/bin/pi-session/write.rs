//! The write commands: `append`, `label`, `name`, `fork`, `branch`, `migrate`.
//!
//! Every one waits at most `--wait SECONDS` (default 10) for the append lock another
//! process holds, saying once on stderr that it waits, then fails naming the lock.

use anyhow::{Context as _, Result, bail};
use pi_session::text::{escape, escape_path};
use pi_session::{Entropy, FileChange, JournalUse, Recovery, Value, WriteOptions, Writer};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

static LOCK_WAIT: OnceLock<Duration> = OnceLock::new();

/// The `--wait` option (seconds; negative or not a number: no waiting).
pub fn set_lock_wait(seconds: f64) {
    let d = Duration::try_from_secs_f64(seconds).unwrap_or(Duration::ZERO);
    let _ = LOCK_WAIT.set(d);
}

fn waiting(file: &Path) {
    eprintln!(
        "pi-session: waiting for the append lock on {} (held by another process)…",
        escape_path(file)
    );
}

fn options() -> WriteOptions {
    WriteOptions::default()
        .with_lock_timeout(LOCK_WAIT.get().copied().unwrap_or(Duration::from_secs(10)))
        .with_lock_notice(waiting)
}

fn open(file: &Path) -> Result<Writer> {
    if !file.exists() {
        bail!(crate::show::Printable::new(format!(
            "{}: no such file",
            escape_path(file)
        )));
    }
    let w = Writer::open_with(file, None, Entropy::default(), options())
        .map_err(crate::show::doing("cannot open for writing", file))?;
    note_recovery(file, w.recovery());
    Ok(w)
}

/// One warning line when an append went in without its journal.
fn note_journal(w: &Writer) {
    if let JournalUse::Unavailable { folder, reason } = w.last_append_journal() {
        eprintln!(
            "pi-session: warning: cannot create the append journal in {}: {}; appended without it (not crash-safe, as pi's own appends)",
            escape_path(folder),
            escape(&reason.to_string())
        );
    }
}

/// Say on stderr when opening undid a torn append or found a stale journal.
fn note_recovery(file: &Path, r: &Recovery) {
    if matches!(r, Recovery::Truncated { .. } | Recovery::Stale { .. }) {
        eprintln!("pi-session: {}: {}", escape_path(file), escape(&r.to_string()));
    }
}

/// `pi-session recover FILE [--json]`: finish or undo an append a crash interrupted.
pub fn recover(file: &Path, json: bool, out: &mut impl Write) -> Result<i32> {
    if !file.exists() {
        bail!(crate::show::Printable::new(format!(
            "{}: no such file",
            escape_path(file)
        )));
    }
    let r = pi_session::recover_with(file, &options()).map_err(crate::show::doing("cannot recover", file))?;
    if json {
        let str = |s: &str| Value::str(s).stringify();
        let (len, removed, reason) = match &r {
            Recovery::Truncated { len, removed } => (len.to_string(), removed.to_string(), "null".into()),
            Recovery::Stale { reason } => ("null".into(), "null".into(), str(reason)),
            Recovery::Foreign { found } => ("null".into(), "null".into(), str(found)),
            Recovery::Unterminated { tail } => ("null".into(), tail.to_string(), "null".into()),
            _ => ("null".into(), "null".into(), "null".into()),
        };
        writeln!(
            out,
            "{{\"file\":{},\"action\":{},\"length\":{len},\"removed\":{removed},\"reason\":{reason}}}",
            str(&file.display().to_string()),
            str(r.as_str()),
        )?;
    } else {
        writeln!(out, "{}: {}", escape_path(file), escape(&r.to_string()))?;
    }
    Ok(0)
}

/// `pi-session append FILE`: a message JSON object on stdin, appended as a child of the
/// leaf; prints the new entry's id.
pub fn append(file: &Path, out: &mut impl Write) -> Result<i32> {
    let mut text = Vec::new();
    std::io::stdin()
        .read_to_end(&mut text)
        .context("cannot read the message from stdin")?;
    let trimmed = text.trim_ascii();
    let message = Value::parse(trimmed).map_err(|e| anyhow::anyhow!("the message on stdin is not JSON: {e}"))?;
    if message.as_object().is_none() {
        bail!("the message on stdin must be a JSON object (e.g. {{\"role\":\"user\",\"content\":\"hi\"}})");
    }
    let mut w = open(file)?;
    let id = w
        .append_message(message)
        .map_err(crate::show::doing("cannot append", file))?;
    note_journal(&w);
    writeln!(out, "{id}")?;
    Ok(0)
}

/// `pi-session label FILE ID LABEL`: an empty label clears.
pub fn label(file: &Path, id: &str, label: &str, out: &mut impl Write) -> Result<i32> {
    let mut w = open(file)?;
    let new = w.append_label_change(id, (!label.is_empty()).then_some(label))?;
    note_journal(&w);
    writeln!(out, "{new}")?;
    Ok(0)
}

/// `pi-session name FILE NAME`.
pub fn name(file: &Path, name: &str, out: &mut impl Write) -> Result<i32> {
    let mut w = open(file)?;
    let new = w.append_session_info(name)?;
    note_journal(&w);
    writeln!(out, "{new}")?;
    Ok(0)
}

/// `pi-session fork FILE --cwd DIR [--session-dir D]`: prints the new file.
pub fn fork(
    file: &Path,
    cwd: &Path,
    session_dir: Option<&Path>,
    agent_dir: Option<&Path>,
    out: &mut impl Write,
) -> Result<i32> {
    let env =
        pi_session::dirs::Env::from_process(pi_session::dirs::Flavor::Pi).context("cannot read the environment")?;
    let cwd_abs = env.resolve_path(cwd);
    let dir: PathBuf = match session_dir {
        Some(d) => env.normalize_path(d),
        None => env.default_session_dir(&cwd_abs, &env.agent_dir(agent_dir)),
    };
    let w = Writer::fork_from(file, &cwd_abs.display().to_string(), &dir, None, Entropy::default())
        .map_err(crate::show::doing("cannot fork", file))?;
    writeln!(out, "{}", w.file().map(escape_path).unwrap_or_default())?;
    Ok(0)
}

/// `pi-session branch FILE LEAF_ID`: a new session file with only the path to the leaf.
pub fn branch(file: &Path, leaf: &str, out: &mut impl Write) -> Result<i32> {
    let mut w = open(file)?;
    match w.create_branched_session(leaf)? {
        Some(p) if w.is_flushed() => writeln!(out, "{}", escape_path(&p))?,
        Some(p) => {
            writeln!(out, "{}", escape_path(&p))?;
            eprintln!(
                "pi-session: the path to {} holds no user or assistant message, so (as pi) the file is created only with the first one",
                escape(leaf)
            );
        }
        None => {}
    }
    Ok(0)
}

/// `pi-session migrate FILE`: what pi's open would rewrite, done atomically.
pub fn migrate(file: &Path, out: &mut impl Write) -> Result<i32> {
    if file.exists() {
        // The first step of the migration: the user asked to migrate, and is told so.
        let r = pi_session::recover_with(file, &options()).map_err(crate::show::doing("cannot migrate", file))?;
        note_recovery(file, &r);
    }
    let change = pi_session::migrate_file_with(file, &options()).map_err(crate::show::doing("cannot migrate", file))?;
    let msg = match change {
        FileChange::None => "already current: nothing to do",
        FileChange::AppendedNewline => "appended the missing final newline",
        FileChange::Rewritten => "migrated to format version 3 (atomic rewrite)",
    };
    writeln!(out, "{}: {msg}", escape_path(file))?;
    Ok(0)
}

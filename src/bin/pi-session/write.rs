//! The write commands: `append`, `label`, `name`, `fork`, `branch`, `migrate`, `recover`.
//!
//! Every one waits at most `--wait SECONDS` (default 10) for the append lock another
//! process holds, saying once on stderr that it waits, then fails naming the lock.
//!
//! Safe to try: every argument is checked before anything is written, so that a command
//! that fails leaves the file as it was, byte for byte (and its mtime): the message of
//! `append` (one pi could have written, unless `--raw`), the entry ids of `label`,
//! `branch` and `append --parent`, and that a branch has something to write. pi's open
//! rewrites an old-format file (v1/v2) before the first write; a command that names an
//! entry refuses a v1 file, whose entries get their ids only then (`pi-session migrate`
//! first).

use crate::show::{Kind, Printable};
use anyhow::{Context as _, Result, bail};
use pi_session::text::{escape, escape_path};
use pi_session::{
    Entropy, EntryType, FileChange, JournalUse, Key, Recovery, Role, Session, Value, WriteOptions, Writer,
};
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
        // An old-format file is migrated with the ids the read-only commands showed.
        .with_v1_ids(pi_session::V1Ids::Stable)
}

/// The file must exist: pi's open of a missing file starts a new session, which no
/// command here means.
fn must_exist(file: &Path) -> Result<()> {
    match std::fs::metadata(file) {
        Ok(_) => Ok(()),
        Err(e) => bail!(Printable::io("cannot open", file, e)),
    }
}

fn open(file: &Path) -> Result<Writer> {
    must_exist(file)?;
    let w = Writer::open_with(file, None, Entropy::default(), options())
        .map_err(crate::show::doing("cannot open for writing", file))?;
    note_recovery(file, w.recovery());
    Ok(w)
}

/// The file read as it is (nothing written), to check the arguments against it first.
fn preflight(file: &Path) -> Result<Session> {
    must_exist(file)?;
    let opts = pi_session::OpenOptions {
        v1_ids: pi_session::V1Ids::Stable,
        ..pi_session::OpenOptions::default()
    };
    Session::open_with(file, opts).map_err(crate::show::reading(file))
}

/// Whether opening `file` for writing certainly changes nothing in it, by its first line
/// and last byte: a version-3 (or later) header, a final line break, no append journal.
/// Then the writer's own session can be checked (one read of a big file, not two).
fn opens_unchanged(file: &Path) -> bool {
    use std::io::{BufRead as _, Seek as _};
    use std::os::unix::fs::OpenOptionsExt as _;
    // Never blocking on a FIFO; what is not a regular file is left to the writer's open,
    // which refuses it with the readers' error.
    let Ok(mut f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(file)
    else {
        return false;
    };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut last = [0u8; 1];
    let ends_in_newline = f.seek(std::io::SeekFrom::End(-1)).is_ok()
        && f.read_exact(&mut last).is_ok()
        && last[0] == b'\n'
        && f.rewind().is_ok();
    if !ends_in_newline || !matches!(pi_session::pending_recovery(file), Ok(None)) {
        return false;
    }
    let mut first = Vec::new();
    if std::io::BufReader::new(f.take(1 << 20))
        .read_until(b'\n', &mut first)
        .is_err()
    {
        return false;
    }
    let Ok(h) = Value::parse(first.trim_ascii()) else {
        return false;
    };
    h.get("type").and_then(Value::as_str) == Some("session")
        && matches!(h.get("id"), Some(Value::String(_)))
        && matches!(h.get("version"), Some(Value::Number(v)) if *v >= 3.0)
}

/// The file open for writing, once `check` has passed on it; when opening could change the
/// file (a migration, a missing final newline, an interrupted append), `check` runs first
/// on the file read as it is, so that a failing check leaves the file untouched.
fn open_checked(file: &Path, check: impl FnOnce(&Session) -> Result<()>) -> Result<Writer> {
    must_exist(file)?;
    if opens_unchanged(file) {
        let w = open(file)?;
        check(w.session())?;
        Ok(w)
    } else {
        check(&preflight(file)?)?;
        open(file)
    }
}

/// The whole id of the entry `id` names in `s`: `id` itself, or the one id it begins
/// (four characters or more, `Session::find_prefix`); several are refused (exit 2).
fn entry_id(file: &Path, s: &Session, id: &str) -> Result<String> {
    match s.find_prefix(id) {
        Ok(p) => Ok(s.record(p).id.as_str().map_or_else(|| id.to_owned(), str::to_owned)),
        Err(e) if matches!(e.kind(), pi_session::ErrorKind::EntryNotFound { .. }) => bail!(Printable::kind(
            format!("{}: entry {} not found", escape_path(file), escape(id)),
            Kind::NotFound
        )),
        Err(e) => Err(crate::show::at(file)(e)),
    }
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
    must_exist(file)?;
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

/// `pi-session append FILE [MESSAGE] [--raw] [--parent ID]`: a message JSON object (the
/// argument, or stdin), appended as a child of the leaf (or of `--parent`); prints the
/// new entry's id.
pub fn append(
    file: &Path,
    message: Option<&str>,
    raw: bool,
    parent: Option<&str>,
    out: &mut impl Write,
) -> Result<i32> {
    let mut text = Vec::new();
    match message {
        Some(m) if m != "-" => text.extend_from_slice(m.as_bytes()),
        _ => {
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                eprintln!("pi-session: reading the message from stdin (end it with Ctrl-D)…");
            }
            std::io::stdin()
                .read_to_end(&mut text)
                .context("cannot read the message from stdin")?;
        }
    }
    let trimmed = text.trim_ascii();
    let mut message = Value::parse(trimmed).map_err(|e| {
        Printable::kind(
            escape(&format!("the message is not JSON: {e}")).into_owned(),
            Kind::InvalidInput,
        )
    })?;
    if message.as_object().is_none() {
        bail!(Printable::kind(
            "the message must be a JSON object (e.g. {\"role\":\"user\",\"content\":\"hi\"})".into(),
            Kind::InvalidInput
        ));
    }
    if !raw {
        pi_session::message::check(&message).map_err(|why| {
            Printable::kind(
                format!("not a message pi writes: {}; --raw appends it anyway", escape(&why)),
                Kind::InvalidInput,
            )
        })?;
        pi_session::message::fill_timestamp(&mut message);
    }
    let mut full = String::new();
    let mut w = match parent {
        Some(p) => open_checked(file, |s| {
            full = entry_id(file, s, p)?;
            Ok(())
        })?,
        None => open(file)?,
    };
    // Without `--parent`, the parent is the file's leaf when the lock is taken, not when
    // it was opened: another process may append in between.
    let id = if parent.is_some() {
        w.branch(&full).map_err(crate::show::at(file))?;
        w.append_message(message)
    } else {
        w.append_message_at_file_leaf(message)
    }
    .map_err(crate::show::doing("cannot append to", file))?;
    note_journal(&w);
    writeln!(out, "{id}")?;
    Ok(0)
}

/// `pi-session label FILE ID LABEL`: an empty label clears.
pub fn label(file: &Path, id: &str, label: &str, out: &mut impl Write) -> Result<i32> {
    let mut full = String::new();
    let mut w = open_checked(file, |s| {
        full = entry_id(file, s, id)?;
        Ok(())
    })?;
    let new = w
        .append_label_change(&full, (!label.is_empty()).then_some(label))
        .map_err(crate::show::doing("cannot label in", file))?;
    note_journal(&w);
    writeln!(out, "{new}")?;
    Ok(0)
}

/// `pi-session name FILE NAME`.
pub fn name(file: &Path, name: &str, out: &mut impl Write) -> Result<i32> {
    let mut w = open(file)?;
    let new = w
        .append_session_info(name)
        .map_err(crate::show::doing("cannot name", file))?;
    note_journal(&w);
    writeln!(out, "{new}")?;
    Ok(0)
}

/// `pi-session fork FILE --cwd DIR [--session-dir D]`: prints the new file, made in
/// `--session-dir` (created when missing, as pi does) or the project folder of DIR.
pub fn fork(file: &Path, cwd: &Path, place: &crate::flags::PlaceArgs, out: &mut impl Write) -> Result<i32> {
    must_exist(file)?;
    let env = place.env()?;
    let cwd_abs = env.resolve_path(cwd);
    let dir: PathBuf = match &place.session_dir {
        Some(d) => env.normalize_path(d),
        None => env.default_session_dir(&cwd_abs, &env.agent_dir(place.agent_dir.as_deref())),
    };
    let w = Writer::fork_from(file, &cwd_abs.display().to_string(), &dir, None, Entropy::default())
        .map_err(crate::show::doing("cannot fork", file))?;
    writeln!(out, "{}", w.file().map(escape_path).unwrap_or_default())?;
    Ok(0)
}

/// `pi-session branch FILE LEAF_ID`: a new session file with only the path to the leaf;
/// prints it. A path without a user or assistant message is refused: pi would create the
/// file only with the first such message, which this command never writes.
pub fn branch(file: &Path, leaf: &str, out: &mut impl Write) -> Result<i32> {
    let mut full = String::new();
    let check = |s: &Session| {
        full = entry_id(file, s, leaf)?;
        let path = s.branch_path(Some(&Key::str(&full))).map_err(crate::show::at(file))?;
        let talk = path.iter().any(|&p| {
            let r = s.record(p);
            r.ty == EntryType::Message && matches!(r.role, Role::User | Role::Assistant)
        });
        if !talk {
            bail!(Printable::kind(
                format!(
                    "{}: the path to {} holds no user or assistant message: pi writes a branched session only with its first one, so there is nothing to write",
                    escape_path(file),
                    escape(&full)
                ),
                Kind::InvalidInput
            ));
        }
        Ok(())
    };
    let mut w = open_checked(file, check)?;
    let made = w
        .create_branched_session(&full)
        .map_err(crate::show::doing("cannot branch", file))?;
    match made {
        Some(p) if w.is_flushed() => writeln!(out, "{}", escape_path(&p))?,
        _ => bail!(Printable::kind(
            format!("{}: the branched session was not written", escape_path(file)),
            Kind::InvalidInput
        )),
    }
    Ok(0)
}

/// `pi-session migrate FILE`: what pi's open would rewrite, done atomically.
pub fn migrate(file: &Path, out: &mut impl Write) -> Result<i32> {
    must_exist(file)?;
    // A file pi cannot open is refused before anything is done to it.
    preflight(file)?;
    {
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

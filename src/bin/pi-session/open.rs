//! Opening a session for a command that shows it: one way for every reader (`show`,
//! `export`, `tree`, `context`, `check`), with the same notes and the same refusals.
//!
//! - An I/O error is fatal; a file that is no session is refused with the reason the
//!   library gives ([`pi_session::NotASessionWhy`]); an empty file too, though pi's open
//!   starts a new session in it: a reader has nothing to show, and a new random id on every
//!   run would be no answer (`dump`, which prints pi's answer, says so as well).
//! - A line too long for pi's own open is a warning (pi-session reads on).

use anyhow::Result;
use pi_session::text::escape_path;
use pi_session::{EntryPos, ErrorKind, OpenOptions, Session};
use std::path::Path;

/// The session, an I/O error (fatal here), or why it is no session (`check --json` still
/// answers for that).
pub(crate) fn open(path: &Path, opts: OpenOptions) -> Result<Result<Session, pi_session::Error>> {
    match Session::open_with(path, opts) {
        Err(e) if matches!(e.kind(), ErrorKind::Io { .. }) => Err(crate::show::reading(path)(e)),
        Ok(s) if s.is_empty_file() => Ok(Err(pi_session::ErrorKind::NotASession {
            path: None,
            why: pi_session::NotASessionWhy::EMPTY,
        }
        .into())),
        r => {
            if let Ok(s) = &r
                && let Some(o) = &s.index().pi_open_throws
            {
                eprintln!("pi-session: {}: warning: {}", escape_path(path), pi_throws_text(s, o));
            }
            Ok(r)
        }
    }
}

/// The line number of the line that is too long for pi.
pub(crate) fn pi_throws_line(s: &Session, o: &pi_session::v8::PendingOverflow) -> u64 {
    s.skipped()
        .iter()
        .map(|k| (k.offset.0, k.line))
        .chain(s.index().iter(s.bytes()).map(|e| (e.offset.0, e.line)))
        .find(|&(off, _)| off == o.offset)
        .map_or(0, |(_, l)| l.0)
}

/// Why pi's own open fails on a file pi-session reads (a line too long for V8).
pub(crate) fn pi_throws_text(s: &Session, o: &pi_session::v8::PendingOverflow) -> String {
    let line = pi_throws_line(s, o);
    format!(
        "pi's open would throw {}: line {line} ({} bytes) makes pi's read buffer a string of {} UTF-16 units, more than V8's maximum of {}",
        pi_session::v8::PI_MESSAGE,
        o.len,
        o.units,
        pi_session::v8::V8_MAX_STRING_LENGTH
    )
}

/// Open `path` and the branch of `leaf` (an id or a unique prefix of one; default: the
/// session's leaf). (A reader that shows ids says what an old-format file's are:
/// [`crate::show::note_old_format`].)
pub(crate) fn open_branch(path: &Path, opts: OpenOptions, leaf: Option<&str>) -> Result<(Session, Vec<EntryPos>)> {
    let s = open(path, opts)?.map_err(crate::show::at(path))?;
    let branch = match leaf {
        Some(id) => {
            let p = s.find_prefix(id).map_err(crate::show::at(path))?;
            s.branch_path(Some(&s.record(p).id.to_key()))
        }
        None => s.branch_path(None),
    }
    .map_err(crate::show::at(path))?;
    Ok((s, branch))
}

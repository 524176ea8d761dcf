//! Human output shared by the commands: id keys, errors
//! about a file.
//!
//! Every string that comes from a session or a file name is printed through
//! `pi_session::text` (controls, C1 and bidi overrides escaped, file names by their exact
//! bytes); this file's helpers return text already escaped.

use pi_session::text::{escape, escape_path};
use pi_session::{KeyRef, Session};
use std::path::Path;

/// Once per run, on stderr, for a command that shows ids: a version-1 file stores no ids,
/// so the ids shown are derived from the file (`V1Ids::Stable`): the same on every run,
/// and the ones `pi-session migrate` (or any write) stores.
pub(crate) fn note_old_format(file: &Path, s: &Session) {
    if s.migration() == pi_session::Migration::FromV1 {
        eprintln!(
            "pi-session: {}: an old-format (version 1) file, which stores no entry ids: the ids shown are derived from the file and stay the same from run to run; `pi-session migrate {}` writes them into it",
            escape_path(file),
            escape_path(file)
        );
    }
}

/// A string member `key` of the session's header (as pi holds it after its migration),
/// unescaped; `None` when the header has none or another type.
pub(crate) fn header_str(s: &Session, key: &str) -> Option<String> {
    let header = s.header().ok()?;
    let v = header.get(key)?.as_js_str()?;
    Some(v.to_str_lossy().into_owned())
}

/// An id key for human output (escaped): a string as it is, any other id as JavaScript
/// prints it (`null`, `42`), never a Rust name.
pub(crate) fn key_text<'k>(k: impl Into<KeyRef<'k>>) -> String {
    escape(&pi_session::view::id_text(k)).into_owned()
}

/// What a failure is, for its exit code and the `kind` of `--json`'s error object
/// (docs/cli.md): 1 when the answer is no (an id that names nothing, a file that is no
/// session), 2 when the job could not be done (usage, I/O, input pi would reject, a
/// session the command cannot handle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An entry or session id that names nothing.
    NotFound,
    /// A file that is not a pi session (its first JSON line is no header).
    NotASession,
    /// A file or folder that cannot be read or written (missing, permissions, the append
    /// lock held past `--wait`).
    Io,
    /// The command line (clap's errors).
    Usage,
    /// An argument or a message pi would not accept, or a request that cannot be carried
    /// out on this file (nothing to write, an old-format file without ids).
    InvalidInput,
    /// A session the command cannot finish on (a parent cycle, a line pi throws on).
    InvalidSession,
}

impl Kind {
    /// The exit code.
    pub(crate) fn code(self) -> i32 {
        match self {
            Kind::NotFound | Kind::NotASession => 1,
            _ => 2,
        }
    }

    /// The name in `--json`'s error object.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::NotFound => "notFound",
            Kind::NotASession => "notASession",
            Kind::Io => "io",
            Kind::Usage => "usage",
            Kind::InvalidInput => "invalidInput",
            Kind::InvalidSession => "invalidSession",
        }
    }

    /// The kind of a library error.
    pub(crate) fn of(e: &pi_session::Error) -> Kind {
        match e.kind() {
            pi_session::ErrorKind::Io { .. } => Kind::Io,
            pi_session::ErrorKind::NotASession { .. } => Kind::NotASession,
            pi_session::ErrorKind::EntryNotFound { .. } => Kind::NotFound,
            pi_session::ErrorKind::InvalidInput(_) | pi_session::ErrorKind::AmbiguousId { .. } => Kind::InvalidInput,
            _ => Kind::InvalidSession,
        }
    }

    /// The kind of a failure: the first part of its chain that says.
    pub(crate) fn of_chain(e: &anyhow::Error) -> Kind {
        for c in e.chain() {
            if let Some(p) = c.downcast_ref::<Printable>() {
                if let Some(k) = p.kind {
                    return k;
                }
                match &p.cause {
                    Some(Cause::Lib(e)) => return Kind::of(e),
                    Some(Cause::Io(_)) => return Kind::Io,
                    None => {}
                }
            } else if let Some(e) = c.downcast_ref::<pi_session::Error>() {
                return Kind::of(e);
            } else if c.downcast_ref::<std::io::Error>().is_some() {
                return Kind::Io;
            } else if c.downcast_ref::<clap::Error>().is_some() {
                return Kind::Usage;
            }
        }
        Kind::InvalidInput
    }
}

/// What a [`Printable`] message is followed by.
#[derive(Debug)]
enum Cause {
    /// A library error whose own text is in the message: its source follows.
    Lib(pi_session::Error),
    /// An OS error, printed after the message.
    Io(std::io::Error),
}

/// An error message already in printable form (escaped, file names by their bytes):
/// `main` prints it as it is, and the cause (the OS error of an I/O error) after it.
#[derive(Debug)]
pub(crate) struct Printable {
    text: String,
    cause: Option<Cause>,
    kind: Option<Kind>,
}

impl Printable {
    /// A message built from escaped parts (`text::escape`, `text::escape_path`), of this kind (exit code, `--json` kind).
    pub(crate) fn kind(text: String, kind: Kind) -> Printable {
        Printable {
            text,
            cause: None,
            kind: Some(kind),
        }
    }
    /// `VERB FILE: OS error` (`cannot open x.jsonl: No such file or directory`).
    pub(crate) fn io(verb: &str, file: &Path, e: std::io::Error) -> Printable {
        Printable {
            text: format!("{verb} {}", escape_path(file)),
            cause: Some(Cause::Io(e)),
            kind: Some(Kind::Io),
        }
    }
    /// The message, escaped.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }
}

impl std::fmt::Display for Printable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Printable {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            Some(Cause::Lib(e)) => std::error::Error::source(e),
            Some(Cause::Io(e)) => Some(e),
            None => None,
        }
    }
}

/// The text of a library error about `file`: its own text when it names the file
/// already (an I/O error prints its path, the OS error follows as its cause), else
/// prefixed with the file, so that each part is printed once; the file name by its exact
/// bytes, the rest escaped.
fn text_at(file: &Path, e: &pi_session::Error) -> String {
    let shown = e.to_string();
    let named = e.path().and_then(|p| {
        let rest = shown.strip_prefix(&p.display().to_string())?;
        // The writer resolves the path (as pi does): name the file as it was given.
        let as_given = std::path::absolute(file).is_ok_and(|a| pi_session::dirs::lexical_normalize(&a) == p);
        Some(format!(
            "{}{}",
            escape_path(if as_given { file } else { p }),
            escape(rest)
        ))
    });
    named.unwrap_or_else(|| format!("{}: {}", escape_path(file), escape(&shown)))
}

/// A library error about `file`, for printing ([`text_at`], [`Printable`]).
pub(crate) fn at(file: &Path) -> impl FnOnce(pi_session::Error) -> anyhow::Error + '_ {
    move |e| {
        let text = text_at(file, &e);
        anyhow::Error::new(Printable {
            text,
            cause: Some(Cause::Lib(e)),
            kind: None,
        })
    }
}

/// [`at`], for a command that changes `file`, saying first what failed (`cannot migrate
/// x.jsonl: No such file or directory`).
pub(crate) fn doing<'a>(verb: &'static str, file: &'a Path) -> impl FnOnce(pi_session::Error) -> anyhow::Error + 'a {
    move |e| {
        let text = format!("{verb} {}", text_at(file, &e));
        anyhow::Error::new(Printable {
            text,
            cause: Some(Cause::Lib(e)),
            kind: None,
        })
    }
}

/// [`at`] for a command that reads `file`; an I/O error is `cannot open x.jsonl: ...`.
pub(crate) fn reading(file: &Path) -> impl FnOnce(pi_session::Error) -> anyhow::Error + '_ {
    move |e| match e.kind() {
        pi_session::ErrorKind::Io { .. } => doing("cannot open", file)(e),
        _ => at(file)(e),
    }
}

/// An error as one line, each cause after a `: ` (anyhow's `{:#}`), every part escaped
/// (`pi_session::text`) unless it is already ([`Printable`]); an OS error without
/// Rust's ` (os error N)`.
pub(crate) fn error_line(e: &anyhow::Error) -> String {
    let parts: Vec<String> = e
        .chain()
        .map(|c| match c.downcast_ref::<Printable>() {
            Some(p) => p.text().to_owned(),
            None => {
                let mut t = c.to_string();
                if let Some(code) = c
                    .downcast_ref::<std::io::Error>()
                    .and_then(std::io::Error::raw_os_error)
                    && let Some(cut) = t.strip_suffix(&format!(" (os error {code})"))
                {
                    t = cut.to_string();
                }
                escape(&t).into_owned()
            }
        })
        .collect();
    parts.join(": ")
}

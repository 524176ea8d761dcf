//! Errors with positions.

use crate::index::{EntryPos, LineNo};
use std::fmt;
use std::path::PathBuf;

/// An error from pi-session. Cheap to move (one box); [`Error::kind`] says what happened.
#[derive(Debug)]
pub struct Error(Box<ErrorKind>);

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading or writing a file failed.
    Io {
        /// The file, when known.
        path: Option<PathBuf>,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not empty but its first parsed line is not a session header
    /// (`{"type":"session","id":"..."}`); pi refuses to open it.
    NotASession {
        /// The file, when known.
        path: Option<PathBuf>,
    },
    /// A memory-mapped file became shorter after it was opened.
    FileChanged {
        /// The file, when known.
        path: Option<PathBuf>,
    },
    /// No entry has this id (pi's `branch()` throws `Entry X not found`).
    EntryNotFound {
        /// The id asked for.
        id: String,
    },
    /// A walk along `parentId` links came back to an entry it had already visited; pi
    /// loops forever (until it runs out of memory) on such files.
    ParentCycle {
        /// Which walk: `getBranch`, `buildSessionPath` or `getTree`.
        walk: &'static str,
        /// The first entry seen twice.
        entry: EntryPos,
        /// Its line.
        line: LineNo,
        /// Its id as pi's oracle prints it (`JSON.stringify(id)`).
        id_json: String,
    },
    /// An argument pi would reject (an invalid session id, a context edit on an entry off
    /// the branch, ...): pi's message.
    InvalidInput {
        /// What is wrong.
        what: String,
    },
    /// Duplicate ids make the tree share subtrees so often that writing it out (and pi's own
    /// `getTree()` walk) would visit this many nodes: pi does not finish on such files.
    TreeExplodes {
        /// How many node occurrences the tree would have.
        occurrences: u64,
        /// How many entries the file has.
        entries: usize,
    },
    /// An entry lacks a field that pi reads unconditionally, so pi throws a `TypeError` at
    /// this step (for example a `message` entry without `message`).
    PiThrows {
        /// The entry's line.
        line: LineNo,
        /// What is wrong, in words.
        what: String,
        /// pi's exception text, `TypeError: ...`.
        pi_message: String,
    },
}

impl Error {
    /// What happened.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }
    /// The file concerned, when known.
    pub fn path(&self) -> Option<&std::path::Path> {
        match &*self.0 {
            ErrorKind::Io { path, .. } | ErrorKind::NotASession { path } | ErrorKind::FileChanged { path } => {
                path.as_deref()
            }
            _ => None,
        }
    }
    /// The line concerned, when there is one.
    pub fn line(&self) -> Option<LineNo> {
        match &*self.0 {
            ErrorKind::ParentCycle { line, .. } | ErrorKind::PiThrows { line, .. } => Some(*line),
            _ => None,
        }
    }
    /// The text pi's oracle prints for the same failure (`"Name: message"`), where pi fails
    /// the same way.
    pub fn pi_text(&self) -> String {
        match &*self.0 {
            ErrorKind::NotASession { .. } => "Error: Session file is not a valid pi session: <session-file>".into(),
            ErrorKind::EntryNotFound { id } => format!("Error: Entry {id} not found"),
            ErrorKind::InvalidInput { what } => format!("Error: {what}"),
            ErrorKind::PiThrows { pi_message, .. } => pi_message.clone(),
            ErrorKind::TreeExplodes { occurrences, .. } => {
                format!("non-terminating: getTree() visits {occurrences} nodes (duplicate ids share subtrees)")
            }
            ErrorKind::ParentCycle { walk, id_json, .. } => {
                let kind = if *walk == "getTree" { "child" } else { "parent" };
                format!("non-terminating: {walk}() never returns ({kind} cycle through entry {id_json})")
            }
            _ => self.to_string(),
        }
    }
    pub(crate) fn with_path(mut self, p: &std::path::Path) -> Error {
        match &mut *self.0 {
            ErrorKind::Io { path, .. } | ErrorKind::NotASession { path } | ErrorKind::FileChanged { path }
                if path.is_none() =>
            {
                *path = Some(p.to_path_buf());
            }
            _ => {}
        }
        self
    }
}

impl From<ErrorKind> for Error {
    fn from(k: ErrorKind) -> Error {
        Error(Box::new(k))
    }
}

impl From<std::io::Error> for Error {
    fn from(source: std::io::Error) -> Error {
        ErrorKind::Io { path: None, source }.into()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = |p: &Option<PathBuf>| p.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default();
        match &*self.0 {
            ErrorKind::Io { path, source } => write!(f, "{}{source}", p(path)),
            ErrorKind::NotASession { path } => {
                write!(
                    f,
                    "{}not a pi session: the first JSON line is not a session header",
                    p(path)
                )
            }
            ErrorKind::FileChanged { path } => {
                write!(
                    f,
                    "{}the file became shorter while it was open (another process rewrote it)",
                    p(path)
                )
            }
            ErrorKind::EntryNotFound { id } => write!(f, "entry {id} not found"),
            ErrorKind::InvalidInput { what } => f.write_str(what),
            ErrorKind::TreeExplodes { occurrences, entries } => write!(
                f,
                "duplicate ids make the tree of {entries} entries expand to {occurrences} nodes; pi would not finish"
            ),
            ErrorKind::ParentCycle {
                walk, line, id_json, ..
            } => {
                write!(
                    f,
                    "line {line}: parentId links form a cycle through entry {id_json} ({walk}; pi would never return)"
                )
            }
            ErrorKind::PiThrows { line, what, pi_message } => write!(f, "line {line}: {what} (pi throws {pi_message})"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &*self.0 {
            ErrorKind::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

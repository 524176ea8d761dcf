//! Errors you can match and print once.
//!
//! [`Error`] is one box around an [`ErrorKind`]; [`Error::position`] says where in the file
//! (line, byte, entry) and [`Error::path`] which file, whatever the kind. `Display` states
//! each fact once and never repeats its [`source`](std::error::Error::source): an I/O
//! error prints its path, and the OS error is the source, so a chain printer (anyhow's
//! `{:#}`, the CLI) shows `x.jsonl: No such file or directory (os error 2)`.

use crate::index::{ByteOffset, EntryPos, LineNo, Position};
use std::path::{Path, PathBuf};

/// An error from pi-session. Cheap to move (one box); [`Error::kind`] says what happened.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(Box<ErrorKind>);

/// Which of pi's walks along `parentId` links met a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Walk {
    /// `getBranch()`: from an entry up to the root.
    GetBranch,
    /// `buildSessionPath()`: the model context's walk.
    BuildSessionPath,
    /// `getTree()`: down from the roots.
    GetTree,
}

impl Walk {
    /// pi's name of the walk.
    pub fn as_str(self) -> &'static str {
        match self {
            Walk::GetBranch => "getBranch",
            Walk::BuildSessionPath => "buildSessionPath",
            Walk::GetTree => "getTree",
        }
    }
}

impl std::fmt::Display for Walk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why pi would reject an edit the caller asked for (pi's message is the error's text).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidInput {
    /// A session id pi does not accept.
    SessionId {
        /// The id given.
        id: String,
    },
    /// A context edit on an entry that is not on the active branch, or not editable.
    Edit {
        /// pi's message.
        message: String,
    },
    /// An argument of a type pi's method cannot take (pi throws a `TypeError`, V8's
    /// message here).
    Type {
        /// V8's message.
        message: String,
    },
    /// An entry given as text ([`crate::Writer::append_line`]) that is not one JSON
    /// object on one line.
    Entry {
        /// What is wrong.
        message: String,
    },
}

impl std::fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InvalidInput::SessionId { id } => write!(
                f,
                "session id {id:?} must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character"
            ),
            InvalidInput::Edit { message } | InvalidInput::Entry { message } | InvalidInput::Type { message } => {
                f.write_str(message)
            }
        }
    }
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading or writing a file failed; the OS error is the source.
    #[error("{}", path.as_deref().map_or("I/O error".into(), |p| p.display().to_string()))]
    Io {
        /// The file, when known.
        path: Option<PathBuf>,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A listing was cancelled through its `CancelToken` (`listing::Cancelled` converts
    /// into this, so that `?` works across listing and opening in one function).
    #[error("listing cancelled")]
    Cancelled,
    /// The file is not empty but its first parsed line is not a session header
    /// (`{"type":"session","id":"..."}`); pi refuses to open it.
    #[error("{}not a pi session: {why}", prefix(path))]
    NotASession {
        /// The file, when known.
        path: Option<PathBuf>,
        /// Why no header is taken (a [`NotASessionWhy`] text).
        why: &'static str,
    },
    /// A memory-mapped file became shorter, or its bytes no longer what was indexed, after
    /// it was opened (another process rewrote it).
    #[error("{}the file changed while it was open (another process rewrote it)", prefix(path))]
    FileChanged {
        /// The file, when known.
        path: Option<PathBuf>,
    },
    /// No entry has this id (pi's `branch()` throws `Entry X not found`).
    #[error("entry {id} not found")]
    EntryNotFound {
        /// The id asked for.
        id: String,
    },
    /// A short id that begins the ids of several entries.
    #[error("entry id {prefix} is ambiguous: it begins {}", candidates.join(", "))]
    AmbiguousId {
        /// The prefix asked for.
        prefix: String,
        /// Some of the ids it begins (at most ten), in file order.
        candidates: Vec<String>,
    },
    /// A walk along `parentId` links came back to an entry it had already visited; pi
    /// loops forever (until it runs out of memory) on such files.
    #[error("line {line}: parentId links form a cycle through entry {id_json} ({walk}; pi would never return)")]
    ParentCycle {
        /// Which walk.
        walk: Walk,
        /// The first entry seen twice.
        entry: EntryPos,
        /// Its line.
        line: LineNo,
        /// Where its line starts.
        byte: ByteOffset,
        /// Its id as pi's oracle prints it (`JSON.stringify(id)`).
        id_json: String,
    },
    /// An argument pi would reject: pi's message.
    #[error("{0}")]
    InvalidInput(InvalidInput),
    /// Duplicate ids make the tree share subtrees so often that writing it out (and pi's own
    /// `getTree()` walk) would visit this many nodes: pi does not finish on such files.
    #[error("duplicate ids make the tree of {entries} entries expand to {occurrences} nodes; pi would not finish")]
    TreeExplodes {
        /// How many node occurrences the tree would have.
        occurrences: u64,
        /// How many entries the file has.
        entries: usize,
    },
    /// An entry lacks a field that pi reads unconditionally, so pi throws a `TypeError` at
    /// this step (for example a `message` entry without `message`).
    #[error("line {line}: {what} (pi throws {pi_message})")]
    PiThrows {
        /// The entry's line.
        line: LineNo,
        /// What is wrong, in words.
        what: String,
        /// pi's exception text, `TypeError: ...`.
        pi_message: String,
    },
}

fn prefix(path: &Option<PathBuf>) -> String {
    path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default()
}

/// Why a file is no session ([`ErrorKind::NotASession`]'s `why`), in pi's terms.
pub struct NotASessionWhy;

impl NotASessionWhy {
    /// The first line JSON.parse accepts is something else.
    pub const NOT_A_HEADER: &'static str = "the first JSON line is not a session header";
    /// The header's `id` is missing or not a string.
    pub const ID_NOT_A_STRING: &'static str = "the session header's id is not a string";
    /// The file opens with a byte-order mark, which `JSON.parse` refuses: the header
    /// line is skipped.
    pub const BYTE_ORDER_MARK: &'static str =
        "the file begins with a byte-order mark, which JSON.parse refuses, so its header line is skipped";
    /// The file is empty: pi's open starts a new session in it (a new id, the current
    /// folder), written with the first entry appended.
    pub const EMPTY: &'static str =
        "an empty file, no session header: pi's open would start a new session in it (a new id, the current folder)";
    /// No line is one `JSON.parse` accepts (blank lines only, or none valid).
    pub const NO_JSON_LINE: &'static str = "no line of it is JSON that pi reads (blank lines only, or none valid)";
}

impl Error {
    /// What happened.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }
    /// What happened, by value (to take the `io::Error` out of an [`ErrorKind::Io`]).
    pub fn into_kind(self) -> ErrorKind {
        *self.0
    }
    /// The file concerned, when known.
    pub fn path(&self) -> Option<&Path> {
        match &*self.0 {
            ErrorKind::Io { path, .. } | ErrorKind::NotASession { path, .. } | ErrorKind::FileChanged { path } => {
                path.as_deref()
            }
            _ => None,
        }
    }
    /// Where in the file, as far as the error knows (all `None` for errors about the file
    /// as a whole or about an argument).
    pub fn position(&self) -> Position {
        match &*self.0 {
            ErrorKind::ParentCycle { entry, line, byte, .. } => Position {
                byte: Some(*byte),
                line: Some(*line),
                entry: Some(*entry),
            },
            ErrorKind::PiThrows { line, .. } => Position {
                line: Some(*line),
                ..Position::default()
            },
            _ => Position::default(),
        }
    }
    /// The line concerned, when there is one (`self.position().line`).
    pub fn line(&self) -> Option<LineNo> {
        self.position().line
    }
    /// The text pi's oracle prints for the same failure (`"Name: message"`), where pi fails
    /// the same way.
    pub fn pi_text(&self) -> String {
        match &*self.0 {
            ErrorKind::NotASession { .. } => "Error: Session file is not a valid pi session: <session-file>".into(),
            ErrorKind::EntryNotFound { id } => format!("Error: Entry {id} not found"),
            ErrorKind::InvalidInput(what @ InvalidInput::Type { .. }) => format!("TypeError: {what}"),
            ErrorKind::InvalidInput(InvalidInput::SessionId { .. }) => "Error: Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character".into(),
            ErrorKind::InvalidInput(what) => format!("Error: {what}"),
            ErrorKind::PiThrows { pi_message, .. } => pi_message.clone(),
            ErrorKind::TreeExplodes { occurrences, .. } => {
                format!("non-terminating: getTree() visits {occurrences} nodes (duplicate ids share subtrees)")
            }
            ErrorKind::ParentCycle { walk, id_json, .. } => {
                let kind = if *walk == Walk::GetTree { "child" } else { "parent" };
                format!("non-terminating: {walk}() never returns ({kind} cycle through entry {id_json})")
            }
            ErrorKind::Io { source, .. } => format!("{self}: {source}"),
            ErrorKind::FileChanged { .. } | ErrorKind::AmbiguousId { .. } | ErrorKind::Cancelled => self.to_string(),
        }
    }
    pub(crate) fn with_path(mut self, p: &Path) -> Error {
        match &mut *self.0 {
            ErrorKind::Io { path, .. } | ErrorKind::NotASession { path, .. } | ErrorKind::FileChanged { path }
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

impl From<InvalidInput> for Error {
    fn from(k: InvalidInput) -> Error {
        ErrorKind::InvalidInput(k).into()
    }
}

impl From<std::io::Error> for Error {
    fn from(source: std::io::Error) -> Error {
        ErrorKind::Io { path: None, source }.into()
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// Each fact once: the path in `Display`, the OS error only as the source.
    #[test]
    fn io_errors_print_path_and_cause_once() {
        let e = Error::from(std::io::Error::from(std::io::ErrorKind::NotFound)).with_path(Path::new("x.jsonl"));
        assert_eq!(e.to_string(), "x.jsonl");
        let mut chain = vec![e.to_string()];
        let mut cause = e.source();
        while let Some(c) = cause {
            chain.push(c.to_string());
            cause = c.source();
        }
        assert_eq!(chain, ["x.jsonl", "entity not found"]);
        assert_eq!(e.path(), Some(Path::new("x.jsonl")));
        assert!(matches!(e.into_kind(), ErrorKind::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound));
    }
}

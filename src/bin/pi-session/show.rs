//! Human output shared by the commands: one-line entry descriptions, id keys, errors
//! about a file.
//!
//! Every string that comes from a session or a file name is printed through
//! `pi_session::text` (controls, C1 and bidi overrides escaped, file names by their exact
//! bytes); this file's helpers return text already escaped.

use pi_session::text::{escape, escape_path};
use pi_session::{EntryType, KeyRef, Session, Value};
use std::path::Path;

/// A short one-line description of an entry for human output (escaped).
pub(crate) fn describe(s: &Session, p: pi_session::EntryPos) -> String {
    let rec = s.record(p);
    let ty = rec.ty.as_str().unwrap_or(if rec.ty == EntryType::NonObject {
        "(not an object)"
    } else {
        "(other)"
    });
    match rec.ty {
        EntryType::Message => {
            let role = s
                .value(p)
                .ok()
                .and_then(|v| {
                    v.get("message")
                        .and_then(|m| m.get("role"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| "?".into());
            format!("message {}", escape(&role))
        }
        _ => ty.to_string(),
    }
}

/// An id key for human output (escaped).
pub(crate) fn key_text<'k>(k: impl Into<KeyRef<'k>>) -> String {
    let k = k.into();
    match k.as_str() {
        Some(s) => escape(s).into_owned(),
        None => escape(&format!("{k:?}")).into_owned(),
    }
}

/// An error message already in printable form (escaped, file names by their bytes):
/// `main` prints it as it is, and the cause (the OS error of an I/O error) after it.
#[derive(Debug)]
pub(crate) struct Printable {
    text: String,
    cause: Option<pi_session::Error>,
}

impl Printable {
    /// A message built from escaped parts (`text::escape`, `text::escape_path`).
    pub(crate) fn new(text: String) -> Printable {
        Printable { text, cause: None }
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
        self.cause.as_ref().and_then(std::error::Error::source)
    }
}

/// A library error about `file`, for printing: the library's own text when it names the
/// file already (an I/O error prints its path, the OS error follows as its cause), else
/// prefixed with the file, so that each part is printed once; the file name by its exact
/// bytes, the rest escaped ([`Printable`]).
pub(crate) fn at(file: &Path) -> impl FnOnce(pi_session::Error) -> anyhow::Error + '_ {
    move |e| {
        let shown = e.to_string();
        let named = e.path().and_then(|p| {
            let rest = shown.strip_prefix(&p.display().to_string())?;
            Some(format!("{}{}", escape_path(p), escape(rest)))
        });
        let text = named.unwrap_or_else(|| format!("{}: {}", escape_path(file), escape(&shown)));
        anyhow::Error::new(Printable { text, cause: Some(e) })
    }
}

/// [`at`], for a command that changes `file`, saying first what failed (`cannot migrate:
/// x.jsonl: No such file or directory (os error 2)`).
pub(crate) fn doing<'a>(verb: &'static str, file: &'a Path) -> impl FnOnce(pi_session::Error) -> anyhow::Error + 'a {
    move |e| at(file)(e).context(verb)
}

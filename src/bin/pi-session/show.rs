//! Human output shared by the commands: one-line entry descriptions, id keys.

use pi_session::{EntryType, Key, Session, Value};
use std::path::Path;

/// A short one-line description of an entry for human output.
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
            format!("message {role}")
        }
        _ => ty.to_string(),
    }
}

/// An id key for human output.
pub(crate) fn key_text(k: &Key) -> String {
    match k.as_str() {
        Some(s) => s.to_string(),
        None => format!("{k:?}"),
    }
}

/// A library error about `file`, for printing: the library's own text when it names the
/// file already (an I/O error prints its path, the OS error follows as its cause), else
/// prefixed with the file, so that each part is printed once.
pub(crate) fn at(file: &Path) -> impl FnOnce(pi_session::Error) -> anyhow::Error + '_ {
    move |e| {
        if e.path().is_some() {
            anyhow::Error::from(e)
        } else {
            anyhow::Error::from(e).context(file.display().to_string())
        }
    }
}

/// [`at`], for a command that changes `file`, saying first what failed (`cannot migrate:
/// x.jsonl: No such file or directory (os error 2)`).
pub(crate) fn doing<'a>(verb: &'static str, file: &'a Path) -> impl FnOnce(pi_session::Error) -> anyhow::Error + 'a {
    move |e| at(file)(e).context(verb)
}

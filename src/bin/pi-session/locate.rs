//! SESSION arguments: a path, a session id, or a unique prefix of one.
//!
//! An argument that names a file (or anything else that exists) is that file. One that
//! names nothing and looks like a session id (no `/`, no `.jsonl` ending, pi's id
//! characters) is looked up among the sessions, by their headers' ids, with `ls`'s
//! directory rules: the current project's folder first, then every project (or, with
//! `$PI_CODING_AGENT_SESSION_DIR` or the agent dir's `sessionDir` setting, that flat
//! folder). A whole id, or a prefix of four characters or more that begins one session's
//! id, names that session; a prefix that begins several is refused with the candidates
//! (exit 2), as git refuses an ambiguous short hash. pi's own `--session` takes the first
//! match instead.

use crate::show::{Kind, Printable};
use anyhow::{Result, bail};
use pi_session::listing::{IdMatch, Place};
use pi_session::text::{escape, escape_path};
use std::path::{Path, PathBuf};

/// The shortest prefix taken for a session id.
const MIN_PREFIX: usize = 4;

/// How many candidates an ambiguous prefix lists.
const SHOWN: usize = 10;

/// The file `arg` names (see the module doc); `place` says where ids are looked up, and is
/// resolved only for an argument that is an id.
pub fn session(arg: &Path, place: impl FnOnce() -> Result<Place>) -> Result<PathBuf> {
    let Some(text) = arg.to_str() else {
        return Ok(arg.to_path_buf());
    };
    if std::fs::symlink_metadata(arg).is_ok() || !looks_like_id(text) {
        return Ok(arg.to_path_buf());
    }
    by_id(&place()?, text).map_err(|e| {
        if Kind::of_chain(&e) == Kind::NotFound {
            anyhow::anyhow!(Printable::kind(
                format!("{}: no such file, and no session's id begins with it", escape(text)),
                Kind::NotFound
            ))
        } else {
            e
        }
    })
}

/// The session whose id is `text` or begins with it (see the module doc).
pub fn by_id(place: &Place, text: &str) -> Result<PathBuf> {
    pick(text, place.sessions_with_id_prefix(text))
}

/// Whether `text` could be a session id or a prefix of one (pi's id characters, and
/// neither a path nor a file name).
fn looks_like_id(text: &str) -> bool {
    !text.ends_with(".jsonl")
        && !text.is_empty()
        && text
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// The one session `found` holds for `text`, or why there is none.
fn pick(text: &str, mut found: Vec<IdMatch>) -> Result<PathBuf> {
    let exact = found.iter().any(|m| m.id == text);
    match found.len() {
        1 if exact || text.len() >= MIN_PREFIX => Ok(found.remove(0).path),
        0 => bail!(Printable::kind(
            format!("no session's id begins with {}", escape(text)),
            Kind::NotFound
        )),
        _ if !exact && text.len() < MIN_PREFIX => bail!(Printable::kind(
            format!(
                "{}: too short for a session id prefix (take {MIN_PREFIX} characters or more)",
                escape(text)
            ),
            Kind::Usage
        )),
        n => {
            let mut list: Vec<String> = found
                .iter()
                .take(SHOWN)
                .map(|m| format!("{} ({})", escape(&m.id), escape_path(&m.path)))
                .collect();
            if n > SHOWN {
                list.push(format!("and {} more", n - SHOWN));
            }
            bail!(Printable::kind(
                format!(
                    "session id prefix {} is ambiguous: it begins {n} sessions' ids: {}",
                    escape(text),
                    list.join(", ")
                ),
                Kind::InvalidInput
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(id: &str) -> IdMatch {
        IdMatch {
            path: PathBuf::from(format!("/s/{id}.jsonl")),
            id: id.into(),
        }
    }

    #[test]
    fn a_unique_prefix_names_its_session_and_an_ambiguous_one_lists_them() {
        assert_eq!(
            pick("019a", vec![m("019abc")]).unwrap(),
            PathBuf::from("/s/019abc.jsonl")
        );
        assert_eq!(pick("s1", vec![m("s1")]).unwrap(), PathBuf::from("/s/s1.jsonl"));
        let e = pick("019", vec![m("019abc")]).unwrap_err();
        assert!(e.to_string().contains("too short"), "{e}");
        let e = pick("019a", vec![m("019abc"), m("019abd")]).unwrap_err();
        assert!(e.to_string().contains("019abc (/s/019abc.jsonl), 019abd"), "{e}");
        assert!(pick("zzzz", vec![]).unwrap_err().to_string().contains("no session"));
    }

    #[test]
    fn paths_and_file_names_are_no_ids() {
        assert!(looks_like_id("019abc63-1f2e"));
        assert!(!looks_like_id("x.jsonl"));
        assert!(!looks_like_id("dir/x"));
        assert!(!looks_like_id(""));
    }
}

//! What a person sees of sessions, decided once for every face (the command line, the
//! Node binding, the web and terminal apps to come): pi's rules for showing a list of
//! sessions ([`sessions`]) pi's `/tree` of one session ([`tree`]); a branch as a transcript ([`transcript`]). The faces only draw what these give them; they hold no rule of
//! pi's.
//!
//! # Files
//! `sessions.rs` a list of sessions as pi's `/resume` picker shows it; `tree.rs` pi's `/tree`; `transcript.rs` the
//! walk that `show` and `export` (and the faces to come) draw a branch from.

pub mod sessions;
pub mod transcript;
pub mod tree;

use crate::{Key, KeyRef, Value};

/// An entry's id as a face shows it (unescaped): a string as it is, any other id as
/// JavaScript prints it (`null`, `42`), never a Rust name.
pub fn id_text<'k>(k: impl Into<KeyRef<'k>>) -> String {
    let k = k.into();
    if let Some(bytes) = k.str_bytes() {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    match k.non_string() {
        Some(Key::Null) => "null".into(),
        Some(Key::Bool(b)) => b.to_string(),
        Some(Key::Num(bits)) => Value::Number(f64::from_bits(*bits)).stringify(),
        Some(Key::Unique(_)) => "(an object or array)".into(),
        // Strings were taken above.
        None | Some(Key::Undefined | Key::Str(_)) => "(no id)".into(),
    }
}

//! What a person sees of sessions, decided once for every face (the command line, the
//! Node binding, the web and terminal apps to come): pi's rules for showing a list of
//! sessions ([`sessions`]) and pi's `/tree` of one session ([`tree`]). The faces only draw what these give them; they hold no rule of
//! pi's.
//!
//! # Files
//! `sessions.rs` a list of sessions as pi's `/resume` picker shows it; `tree.rs` pi's `/tree`.

pub mod sessions;
pub mod tree;

//! # pi-session
//!
//! Read, index and query the session files of the pi coding agent (JSONL trees), with
//! results identical to pi 1.6.0's own `SessionManager`, on files of any size.
//!
//! ```no_run
//! use pi_session::Session;
//!
//! let session = Session::open("session.jsonl")?;
//! let ctx = session.context(session.leaf())?;
//! println!("{} messages in the model context", ctx.messages.len());
//! for skipped in session.skipped() {
//!     eprintln!("line {} skipped: {}", skipped.line, skipped.reason);
//! }
//! # Ok::<(), pi_session::Error>(())
//! ```
//!
//! ## What to use
//! - [`Session`]: open a file ([`Session::open`]) and ask what pi would answer: the
//!   entries, the leaf, the branch, the tree ([`Session::tree`]), the model context
//!   ([`Session::context`]), labels and the name; [`Session::refresh`] takes in what pi
//!   appended since. Bodies are decoded only when asked for ([`Session::value`]).
//! - [`Writer`]: every append pi has, forks and branched sessions, crash-safe; [`message`]
//!   checks a message is one pi could write.
//! - [`listing`]: pi's session lists (`list`, `listAll`, `findById`) with a cache, progress
//!   and cancellation; [`dirs`] and [`listing::Place`] say where sessions are.
//! - [`search`], [`usage`], [`analytics`]: what was said, what it cost, and the tables for
//!   analytic engines (Parquet with the feature `parquet`).
//! - [`view`]: what a person sees of sessions, for any face (the `/resume` list, the
//!   `/tree`, a branch as a transcript); [`text`] makes strings safe to print.
//! - [`dump`]: the oracle's report, for conformance with pi.
//!
//! Errors are one [`Error`] type whose [`ErrorKind`] says what went wrong and where.
//! `internals` (feature `internals`) is plumbing for the fuzz targets and benches, not
//! an API.
//!
//! ## How it reads: the house
//! `src/` is folders that follow a session's bytes to answers, each importing only from
//! the folders below it; the list, bottom to top, is `LAYERS` in `src/layering.rs`, whose
//! test enforces it on every `cargo test` (`docs/design.md` walks through it).
//!
//! Beside it, folders -> listing: [`dirs`] resolves the agent dir, the sessions root and a
//! project's folder as pi does; [`listing`] builds pi's `SessionInfo` for every session
//! file (pi's `list`, `listAll`, `findById`, most-recent lookup) in one pass per file, in
//! parallel, with progress and cancellation:
//!
//! ```no_run
//! use pi_session::listing::{self, ListOptions};
//!
//! let root = std::path::Path::new("/home/me/.pi/agent/sessions");
//! let listing = listing::list_all(root, &mut ListOptions::default())?;
//! for s in &listing.sessions {
//!     println!("{} {}", s.path.display(), s.first_message.to_str_lossy());
//! }
//! for f in &listing.skipped {
//!     eprintln!("skipped {}: {}", f.path.display(), f.reason);
//! }
//! # Ok::<(), pi_session::listing::Cancelled>(())
//! ```
//!
//! ## Where pi throws or hangs
//! pi throws a `TypeError` on a `message` entry without `message`, a `context_edit`
//! without `replacement` and a non-string session name, and never returns on a parent
//! cycle. pi-session fails only the step concerned, with [`ErrorKind::PiThrows`] or
//! [`ErrorKind::ParentCycle`] naming the line; other steps still answer.

//! ## Examples
//! Three short programs in `examples/`, each run on the bundled corpus by `cargo test` (as
//! the doc tests below) and by `cargo run --example NAME`. Open a session and print its
//! model context (`examples/context.rs`):
//!
#![doc = concat!("```\n", include_str!("../examples/context.rs"), "```")]
//!
//! List sessions with progress (`examples/list_sessions.rs`):
//!
#![doc = concat!("```\n", include_str!("../examples/list_sessions.rs"), "```")]
//!
//! Append a message and read the branch back (`examples/append_message.rs`):
//!
#![doc = concat!("```\n", include_str!("../examples/append_message.rs"), "```")]
#![deny(missing_docs)]

// Folders, bottom to top: `LAYERS` in `layering.rs`, which checks on every test run that
// each imports only from those below it and that no files import each other round a circle.
pub mod analytics;
pub mod caches;
pub mod dump;
mod error;
mod files;
mod flavor;
#[cfg(feature = "follow")]
pub mod follow;
#[cfg(feature = "generator")]
pub mod generator;
mod index;
#[cfg(any(test, feature = "internals"))]
pub mod internals;
mod js;
mod json;
pub mod listing;
pub mod search;
mod session;
mod source;
mod store;
pub mod text;
pub mod usage;
pub mod view;
mod write;

pub use error::{Error, ErrorKind, InvalidInput, NotASessionWhy, Result, Walk};
pub use files::OutputFile;
pub use flavor::Flavor;
pub use index::v8;
pub use index::{
    ByteOffset, EntryPos, EntryRec, EntryType, Index, Key, KeyRef, LineNo, Position, Role, SkipReason, Skipped,
};
pub use js::string::JsStr;
pub use json::{Field, Kind, Object, SyntaxError, Value};
pub use listing::dirs::{self, Env};
pub use listing::{CancelToken, Cancelled, ListOptions, Listing, Progress, SessionInfo, SkipFileReason, SkippedFile};
pub use session::block::{Block, CallShape, block};
pub use session::context::{
    Context, ContextMessage, PigDifferences, Projection, RetainedTail, Span, current_system_message,
};
pub use session::entry::{
    BranchItem, BranchSummaryEntry, CompactionEntry, ContextEditEntry, CustomEntry, CustomMessageEntry, Entry,
    EntryFields, LabelEntry, MessageEntry, ModelChangeEntry, SessionHeader, SessionInfoEntry, ThinkingLevelChangeEntry,
    UsageEntry,
};
pub use session::migrate::{Change, Migrated, MigrationEdit, migrate_entries};
pub use session::tree::Tree;
pub use session::{FileChange, Migration, OpenOptions, Refresh, Session, V1Ids, key_from_value};
pub use source::{ReadMode, Source};
pub use write::journal::{
    JournalUse, MAX_JOURNAL, Recovery, WriteOptions, journal_path, pending_recovery, recover, recover_with,
};
pub use write::message;
pub use write::{
    Append, Appended, Branched, Entropy, Members, NewSession, Relinked, Writer, load_entries_from_file, migrate_file,
    migrate_file_with, valid_session_id,
};
#[cfg(test)]
mod layering;

// The crate's own unit tests share code with the fuzz targets (`fuzz/src/`), which name
// the crate `pi_session`.
#[cfg(test)]
extern crate self as pi_session;

/// The README's code, compiled and run by `cargo test` so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

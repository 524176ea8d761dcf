//! Every integration test in one binary, one module per suite (they were eleven binaries,
//! each linked against the library and its dependencies with the release profile's thin
//! LTO, which was most of the test command's time). Run one suite with
//! `cargo test --profile ci --test it conformance::`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/labelled.rs"]
mod labelled;
#[path = "../common/write_ops.rs"]
mod write_ops;

mod analytics;
mod cache;
mod changing;
mod cli_check;
mod cli_doc;
mod cli_writes;
mod conformance;
mod crash_safety;
mod crashes;
mod export;
mod follow;
mod hostile_writes;
mod incremental;
mod index;
mod listing;
mod ls;
mod memory;
mod pig;
mod readme;
mod real;
mod robustness;
mod search;
mod session_ids;
mod show;
mod soak;
mod special_targets;
#[cfg(unix)]
mod terminal;
mod tree;
mod usage;
mod views;
mod writer_api;
mod writes;

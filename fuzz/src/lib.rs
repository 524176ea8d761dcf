//! Support code for the pi-session fuzz targets.
//!
//! - [`checks`]: what every target runs on an open session (also replayed by the main
//!   crate's `tests/it/crashes.rs`, which includes the file with `#[path]`);
//! - [`synth`]: the structured session generator of the `parent_links` target;
//! - [`json`]: helpers of the `header_parser` target;
//! - [`listing`]: the slow twin of the listing's line walker (`listing_walk` target, also
//!   compiled into the main crate's `tests/listing_robust.rs`).

pub mod checks;
pub mod json;
// (The twin lives in the main crate, whose unit tests use it too; the package holds it.)
#[path = "../../src/listing/walk_twin.rs"]
pub mod listing;
pub mod synth;

//! Sessions as tables for analytic engines (`docs/analytics.md`): the rows of
//! `sessions`, `entries` and `usage` (`rows.rs`, always built), and with the feature
//! `parquet` their export as Parquet files, partitioned by day and kept up to date
//! incrementally (`export.rs` the run, `manifest.rs` what a run keeps, `tables.rs` the
//! Parquet files, `out.rs` the output folder's names and errors).

#[cfg(feature = "parquet")]
mod export;
#[cfg(feature = "parquet")]
mod manifest;
#[cfg(feature = "parquet")]
mod out;
mod rows;
#[cfg(feature = "parquet")]
mod tables;

#[cfg(feature = "parquet")]
pub use export::{ExportOptions, ExportReport, export};
#[cfg(feature = "parquet")]
pub use out::{ExportError, MANIFEST};
pub use rows::{EntryRow, SessionRow, UsageRow, entry_rows, entry_rows_twin, session_row, session_rows, usage_rows};

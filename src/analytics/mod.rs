//! Sessions as tables for analytic engines (`docs/analytics.md`): the rows of
//! `sessions`, `entries` and `usage` (`rows.rs`, always built), and with the feature
//! `parquet` their export as Parquet files, partitioned by day and kept up to date
//! incrementally (`export.rs`).

#[cfg(feature = "parquet")]
mod export;
mod rows;

#[cfg(feature = "parquet")]
pub use export::{ExportError, ExportOptions, ExportReport, MANIFEST, export};
pub use rows::{EntryRow, SessionRow, UsageRow, entry_rows, entry_rows_twin, session_row, session_rows, usage_rows};

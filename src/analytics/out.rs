//! The output folder's names and errors, shared by the export's files: the tables and
//! their files, the constants of the layout, and [`ExportError`].

use std::path::{Path, PathBuf};

/// Rows per record batch.
pub(crate) const BATCH: usize = 64 * 1024;
/// Rows per row group, at most.
pub(crate) const ROW_GROUP: usize = 128 * 1024;
/// What the rows waiting to be written may take in memory in all: past it, the day with
/// the most writes them as a row group.
pub(crate) const BUFFERED: usize = 128 << 20;
/// The manifest's name in the output folder.
pub const MANIFEST: &str = "_manifest.json";
/// Bumped when the tables' columns or the layout change: a manifest of another version
/// means a full export.
pub(crate) const FORMAT: f64 = 4.0;
/// The `sessions` table's file, relative to the output folder.
pub(crate) const SESSIONS_FILE: &str = "sessions/sessions.parquet";
/// A day's file in its partition.
pub(crate) const DAY_FILE: &str = "data.parquet";

/// An error of the export: a file of the output folder (the session files' problems are
/// [`ExportReport::skipped`]).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading, writing, renaming or deleting a file of the output folder.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The Parquet writer's or reader's.
    #[error("{}: {source}", path.display())]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: parquet::errors::ParquetError,
    },
    /// Making or filtering a batch of rows.
    #[error("{}: {source}", path.display())]
    Arrow {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: arrow_schema::ArrowError,
    },
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ExportError + '_ {
    move |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub(crate) fn pq(path: &Path) -> impl FnOnce(parquet::errors::ParquetError) -> ExportError + '_ {
    move |source| ExportError::Parquet {
        path: path.to_path_buf(),
        source,
    }
}

pub(crate) fn arrow(path: &Path) -> impl FnOnce(arrow_schema::ArrowError) -> ExportError + '_ {
    move |source| ExportError::Arrow {
        path: path.to_path_buf(),
        source,
    }
}

/// The two tables partitioned by day.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Table {
    Entries,
    Usage,
}

impl Table {
    pub(crate) const ALL: [Table; 2] = [Table::Entries, Table::Usage];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Table::Entries => "entries",
            Table::Usage => "usage",
        }
    }

    /// A day's file, relative to the output folder.
    pub(crate) fn day_file(self, day: &str) -> String {
        format!("{}/date={day}/{DAY_FILE}", self.name())
    }
}

/// A new file at `path` (a temporary name of this run's): never one that is there already,
/// never through a link (`crate::files`); a leftover of a killed run at that name was
/// swept before.
pub(crate) fn new_file(path: &Path) -> Result<std::fs::File, ExportError> {
    crate::files::create_new(path, 0o666).map_err(io(path))
}

/// `path`'s temporary name: beside it, unique to this process.
pub(crate) fn temporary(path: &str) -> String {
    format!("{path}.tmp-{}", std::process::id())
}

//! `export-parquet`: the three tables written as Parquet files that DuckDB, DataFusion,
//! polars and Spark read (feature `parquet`; the layout is in `docs/analytics.md`).
//!
//! - `sessions/sessions.parquet`: one row per session file, rewritten on every run from
//!   the manifest (no unchanged file is read for it);
//! - `entries/date=YYYY-MM-DD/<key>.parquet` and `usage/date=YYYY-MM-DD/<key>.parquet`:
//!   each session's rows of one day (UTC) in a file of their own, named by the XXH3-128
//!   of the session's path (`<key>`, the same on every run). Rows without a valid time
//!   go to the day of their session's header (`1970-01-01` without one).
//!
//! **Incremental.** `_manifest.json` holds, per session file, the `fstat` it was read
//! under (device, inode, size, modification time), the files written for it and its
//! `sessions` row. A run reads only the files whose `fstat` changed and the new ones,
//! writes their files anew, and deletes the files of sessions that are gone or no longer
//! have rows on a day. Every file is written under a temporary name and renamed into
//! place; the manifest is renamed last, and a run first deletes what no manifest names
//! (a run killed midway left it). So a killed run loses at most its own work, and the
//! folder never holds two copies of a row.

use super::rows::{self, EntryRow, SessionRow, UsageRow};
use crate::js::string::JsStr;
use crate::json::Value;
use crate::source::ReadMode;
use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Rows per record batch, and per row group at most (a session's day holds fewer).
const BATCH: usize = 64 * 1024;
/// The manifest's name in the output folder.
pub const MANIFEST: &str = "_manifest.json";
/// Bumped when the tables' columns change: a manifest of another version means a full
/// export.
const FORMAT: f64 = 1.0;

/// Options of [`export`].
#[derive(Default)]
pub struct ExportOptions<'a> {
    /// Also write each entry's text (`entries.text`). A change of this option since the
    /// last run means a full export.
    pub with_text: bool,
    /// Read every file again, whatever the manifest says.
    pub full: bool,
    /// mmap or read.
    pub read_mode: ReadMode,
    /// Called as files are done (from several threads, one call at a time): (done, of).
    pub on_progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExportReport {
    /// Session files in the roots.
    pub files: usize,
    /// Files read this run (new or changed).
    pub read: usize,
    /// Files the manifest had, unchanged (not read).
    pub unchanged: usize,
    /// Sessions in the manifest whose file is gone (their rows were deleted).
    pub removed: usize,
    /// `entries` rows written this run.
    pub entry_rows_written: u64,
    /// `usage` rows written this run.
    pub usage_rows_written: u64,
    /// `sessions` rows in the folder after the run.
    pub sessions: u64,
    /// `entries` rows in the folder after the run.
    pub entry_rows: u64,
    /// `usage` rows in the folder after the run.
    pub usage_rows: u64,
    /// Parquet files written this run (the sessions table included).
    pub files_written: usize,
    /// Files deleted this run (of sessions gone or changed, or left by a killed run).
    pub files_deleted: usize,
    /// Files that are no session, or could not be read, with why.
    pub skipped: Vec<(PathBuf, String)>,
}

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
    /// The Parquet writer's.
    #[error("{}: {source}", path.display())]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: parquet::errors::ParquetError,
    },
    /// Making a batch of rows.
    #[error("{}: {source}", path.display())]
    Arrow {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: arrow_schema::ArrowError,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ExportError + '_ {
    move |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What the manifest keeps of a session file.
#[derive(Clone, Debug, PartialEq)]
struct Kept {
    stamp: [u64; 4],
    /// Files written for it, relative to the output folder.
    files: Vec<String>,
    row: SessionRow,
    entries: u64,
    usage: u64,
}

/// Device, inode, size and modification time (ns) of `meta`.
fn stamp_of(meta: &std::fs::Metadata) -> [u64; 4] {
    use std::os::unix::fs::MetadataExt;
    [
        meta.dev(),
        meta.ino(),
        meta.size(),
        (meta.mtime() as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(meta.mtime_nsec() as u64),
    ]
}

/// The name a session's files get: 32 hex digits of the XXH3-128 of its path.
fn key_of(path: &Path) -> String {
    format!(
        "{:032x}",
        xxhash_rust::xxh3::xxh3_128(path.as_os_str().as_encoded_bytes())
    )
}

/// `YYYY-MM-DD` of Unix ms (UTC).
fn day(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d").to_string())
        .unwrap_or_else(|_| "1970-01-01".to_string())
}

/// Export the sessions of `roots` (files, sessions folders or sessions roots, as
/// `usage` takes them) into `out`.
///
/// # Errors
/// A file of `out` could not be written or deleted.
pub fn export(roots: &[PathBuf], out: &Path, opts: &ExportOptions<'_>) -> Result<ExportReport, ExportError> {
    std::fs::create_dir_all(out).map_err(io(out))?;
    let mut report = ExportReport::default();
    let manifest_path = out.join(MANIFEST);
    let old: BTreeMap<String, Kept> = if opts.full {
        BTreeMap::new()
    } else {
        load_manifest(&manifest_path, opts.with_text)
    };
    let (paths, problems) = crate::usage::session_files(roots);
    report.skipped.extend(problems);
    report.files = paths.len();
    // Before anything is written: what a killed run left (files no manifest names).
    report.files_deleted += sweep(out, &old)?;
    let mut keep: BTreeMap<String, Kept> = BTreeMap::new();
    let mut todo = Vec::new();
    for p in &paths {
        let name = p.to_string_lossy().into_owned();
        let stamp = std::fs::metadata(p).ok().map(|m| stamp_of(&m));
        match (old.get(&name), stamp) {
            (Some(k), Some(st)) if k.stamp == st => {
                keep.insert(name, k.clone());
            }
            _ => todo.push((p.clone(), name, stamp)),
        }
    }
    report.unchanged = keep.len();
    report.read = todo.len();
    let done = AtomicUsize::new(keep.len());
    let total = paths.len();
    if let Some(cb) = opts.on_progress {
        cb(keep.len(), total);
    }
    /// A file's path, what became of it, and the entry and usage rows written for it.
    type Done = (String, Result<Option<Kept>, String>, [u64; 2]);
    let results: Vec<Done> = {
        use rayon::prelude::*;
        todo.par_iter()
            .with_max_len(1)
            .map(|(p, name, stamp)| {
                let r = export_one(p, out, *stamp, opts);
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                if let Some(cb) = opts.on_progress {
                    cb(n, total);
                }
                match r {
                    Ok(Some((k, written))) => (name.clone(), Ok(Some(k)), written),
                    Ok(None) => (name.clone(), Ok(None), [0, 0]),
                    Err(e) => (name.clone(), Err(e), [0, 0]),
                }
            })
            .collect()
    };
    let mut failure = None;
    for (name, r, written) in results {
        match r {
            Ok(Some(k)) => {
                report.entry_rows_written += written[0];
                report.usage_rows_written += written[1];
                report.files_written += k.files.len();
                keep.insert(name, k);
            }
            Ok(None) => report.skipped.push((PathBuf::from(&name), "not a session".into())),
            Err(e) if e.starts_with("output: ") => failure = Some(e),
            Err(e) => report.skipped.push((PathBuf::from(&name), e)),
        }
    }
    if let Some(e) = failure {
        return Err(ExportError::Io {
            path: out.to_path_buf(),
            source: std::io::Error::other(e),
        });
    }
    report.removed = old
        .keys()
        .filter(|k| !keep.contains_key(*k) && !paths.iter().any(|p| p.to_string_lossy() == **k))
        .count();
    // Files of the old manifest that the new one does not name: sessions gone, days no
    // longer there.
    let named: BTreeSet<&String> = keep.values().flat_map(|k| &k.files).collect();
    for f in old.values().flat_map(|k| &k.files) {
        if !named.contains(f) {
            match std::fs::remove_file(out.join(f)) {
                Ok(()) => report.files_deleted += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(&out.join(f))(e)),
            }
        }
    }
    write_sessions(out, &keep)?;
    report.files_written += 1;
    save_manifest(&manifest_path, &keep, opts.with_text)?;
    report.sessions = keep.len() as u64;
    report.entry_rows = keep.values().map(|k| k.entries).sum();
    report.usage_rows = keep.values().map(|k| k.usage).sum();
    Ok(report)
}

/// Delete what no manifest names under `entries/` and `usage/` (and temporary files).
fn sweep(out: &Path, manifest: &BTreeMap<String, Kept>) -> Result<usize, ExportError> {
    let named: BTreeSet<&str> = manifest
        .values()
        .flat_map(|k| k.files.iter().map(String::as_str))
        .collect();
    let mut deleted = 0;
    for table in ["entries", "usage", "sessions"] {
        let dir = out.join(table);
        let Ok(days) = std::fs::read_dir(&dir) else { continue };
        let mut files = Vec::new();
        for d in days.flatten() {
            let p = d.path();
            if p.is_dir() {
                if let Ok(inner) = std::fs::read_dir(&p) {
                    files.extend(inner.flatten().map(|e| e.path()));
                }
            } else {
                files.push(p);
            }
        }
        for f in files {
            let rel = f.strip_prefix(out).unwrap_or(&f).to_string_lossy().into_owned();
            let tmp = f.file_name().is_some_and(|n| n.to_string_lossy().contains(".tmp-"));
            let ours = rel.ends_with(".parquet") && table != "sessions" && !named.contains(rel.as_str());
            if tmp || ours {
                std::fs::remove_file(&f).map_err(io(&f))?;
                deleted += 1;
            }
        }
    }
    Ok(deleted)
}

/// Read one session and write its files; `Ok(None)`: not a session. `Err` text starting
/// with `output: ` is a failure of the output folder (the run fails), any other a
/// problem of the session file (it is skipped).
fn export_one(
    path: &Path,
    out: &Path,
    stamp: Option<[u64; 4]>,
    opts: &ExportOptions<'_>,
) -> Result<Option<(Kept, [u64; 2])>, String> {
    let stamp = stamp.ok_or_else(|| "could not be read".to_string())?;
    let open = crate::session::OpenOptions {
        read_mode: opts.read_mode,
        v1_ids: crate::session::V1Ids::Stable,
        ..crate::session::OpenOptions::default()
    };
    let s = match crate::session::Session::open_with(path, open) {
        Ok(s) => s,
        Err(e) if matches!(e.kind(), crate::error::ErrorKind::NotASession { .. }) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let mtime_ms = std::fs::metadata(path)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_millis() as f64);
    let mut scratch = crate::listing::Scratch::new();
    let info = match crate::listing::session_info_from_bytes(path, s.bytes(), mtime_ms, &mut scratch) {
        Ok(i) => i,
        Err(_) => return Ok(None),
    };
    let row = rows::session_row(&s, &info);
    let home_day = row.created_ms.map_or_else(|| "1970-01-01".to_string(), day);
    let key = key_of(path);
    let mut files = Files::new(
        out,
        &key,
        opts.with_text,
        (row.id.clone(), row.path.clone(), row.created_ms),
    );
    let header_ms = crate::json::value::js_date_time(s.header().ok().as_ref().and_then(|h| h.get("timestamp")));
    let usage = crate::usage::records_of(&s, header_ms).map_err(|e| e.to_string())?;
    let mut entries = 0u64;
    let r = rows::entry_rows(&s, opts.with_text, |e: EntryRow| -> Result<(), Failure> {
        entries += 1;
        let d = e.timestamp_ms.map_or_else(|| home_day.clone(), day);
        Ok(files.entry(&d, e)?)
    });
    let urows = rows::usage_rows(&usage);
    let n_usage = urows.len() as u64;
    for u in urows {
        let d = u.time_ms.map_or_else(|| home_day.clone(), day);
        files.usage(&d, u);
    }
    match r {
        Ok(()) => {}
        Err(Failure::Session(e)) => {
            files.abandon();
            return Err(e);
        }
        Err(Failure::Output(e)) => {
            files.abandon();
            return Err(format!("output: {e}"));
        }
    }
    let names = files.finish().map_err(|e| format!("output: {e}"))?;
    Ok(Some((
        Kept {
            stamp,
            files: names,
            row,
            entries,
            usage: n_usage,
        },
        [entries, n_usage],
    )))
}

/// Why rows were not written: the session file (changed while read) or the output.
enum Failure {
    Session(String),
    Output(ExportError),
}

impl From<crate::Error> for Failure {
    fn from(e: crate::Error) -> Failure {
        Failure::Session(e.to_string())
    }
}

impl From<ExportError> for Failure {
    fn from(e: ExportError) -> Failure {
        Failure::Output(e)
    }
}

/// The files one session's rows go to, one per table and day, written under temporary
/// names until [`Files::finish`] renames them.
struct Files<'o> {
    out: &'o Path,
    key: &'o str,
    with_text: bool,
    /// The session's `id`, path and creation time, in every row.
    session: (Option<String>, String, Option<i64>),
    entries: BTreeMap<String, Pending<EntryRow>>,
    usage: BTreeMap<String, Pending<UsageRow>>,
}

/// Rows waiting for a batch, and the file they go to once one is full.
struct Pending<R> {
    rows: Vec<R>,
    writer: Option<(PathBuf, ArrowWriter<std::fs::File>)>,
}

impl<R> Default for Pending<R> {
    fn default() -> Self {
        Pending {
            rows: Vec::new(),
            writer: None,
        }
    }
}

/// zstd, dictionaries, page statistics, row groups of up to 128 Ki rows.
fn props() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).expect("level 3 exists")))
        .set_dictionary_enabled(true)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(BATCH * 2))
        .set_created_by(format!("pi-session {}", env!("CARGO_PKG_VERSION")))
        .build()
}

/// `path`'s temporary name: beside it, unique to this process.
fn temporary(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    path.with_file_name(name)
}

/// Write `batch` to the file of `slot`, made (as `target`'s temporary) on the first batch.
fn write_batch(
    slot: &mut Option<(PathBuf, ArrowWriter<std::fs::File>)>,
    target: PathBuf,
    schema: &SchemaRef,
    batch: &RecordBatch,
) -> Result<(), ExportError> {
    if slot.is_none() {
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let tmp = temporary(&target);
        let file = std::fs::File::create(&tmp).map_err(io(&tmp))?;
        let w = ArrowWriter::try_new(file, schema.clone(), Some(props())).map_err(|source| ExportError::Parquet {
            path: tmp.clone(),
            source,
        })?;
        *slot = Some((target, w));
    }
    let (target, w) = slot.as_mut().expect("made above");
    w.write(batch).map_err(|source| ExportError::Parquet {
        path: target.clone(),
        source,
    })
}

impl<'o> Files<'o> {
    fn new(out: &'o Path, key: &'o str, with_text: bool, session: (Option<String>, String, Option<i64>)) -> Files<'o> {
        Files {
            out,
            key,
            with_text,
            session,
            entries: BTreeMap::new(),
            usage: BTreeMap::new(),
        }
    }

    fn target(&self, table: &str, day: &str) -> PathBuf {
        self.out
            .join(table)
            .join(format!("date={day}"))
            .join(format!("{}.parquet", self.key))
    }

    /// Take an entry row; a full batch is written.
    fn entry(&mut self, day: &str, row: EntryRow) -> Result<(), ExportError> {
        let p = self.entries.entry(day.to_string()).or_default();
        p.rows.push(row);
        if p.rows.len() >= BATCH {
            self.flush_entries(day)?;
        }
        Ok(())
    }

    fn flush_entries(&mut self, day: &str) -> Result<(), ExportError> {
        let target = self.target("entries", day);
        let schema = entries_schema(self.with_text);
        let Some(p) = self.entries.get_mut(day) else {
            return Ok(());
        };
        if p.rows.is_empty() {
            return Ok(());
        }
        let batch = entries_batch(&schema, &p.rows, &self.session).map_err(|source| ExportError::Arrow {
            path: target.clone(),
            source,
        })?;
        p.rows.clear();
        write_batch(&mut p.writer, target, &schema, &batch)
    }

    fn usage(&mut self, day: &str, row: UsageRow) {
        self.usage.entry(day.to_string()).or_default().rows.push(row);
    }

    /// Write what waits, close every file and rename it into place; the files' names,
    /// relative to the output folder.
    fn finish(mut self) -> Result<Vec<String>, ExportError> {
        let days: Vec<String> = self.entries.keys().cloned().collect();
        for d in &days {
            self.flush_entries(d)?;
        }
        let schema = usage_schema();
        for (day, p) in &mut self.usage {
            let target = self
                .out
                .join("usage")
                .join(format!("date={day}"))
                .join(format!("{}.parquet", self.key));
            let batch = usage_batch(&schema, &p.rows, &self.session).map_err(|source| ExportError::Arrow {
                path: target.clone(),
                source,
            })?;
            write_batch(&mut p.writer, target, &schema, &batch)?;
        }
        let writers: Vec<(PathBuf, ArrowWriter<std::fs::File>)> = std::mem::take(&mut self.entries)
            .into_values()
            .filter_map(|p| p.writer)
            .chain(std::mem::take(&mut self.usage).into_values().filter_map(|p| p.writer))
            .collect();
        let mut names = Vec::new();
        for (target, w) in writers {
            w.close().map_err(|source| ExportError::Parquet {
                path: target.clone(),
                source,
            })?;
            std::fs::rename(temporary(&target), &target).map_err(io(&target))?;
            names.push(
                target
                    .strip_prefix(self.out)
                    .unwrap_or(&target)
                    .to_string_lossy()
                    .into_owned(),
            );
        }
        names.sort();
        Ok(names)
    }

    /// Delete the temporary files written so far.
    fn abandon(self) {
        let writers = self
            .entries
            .into_values()
            .chain(self.usage.into_values().map(|p| Pending {
                rows: Vec::new(),
                writer: p.writer,
            }));
        for p in writers {
            if let Some((target, w)) = p.writer {
                drop(w);
                let _ = std::fs::remove_file(temporary(&target));
            }
        }
    }
}

fn utc_ms() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

/// The `entries` table's columns (`text` only with `--with-text`).
fn entries_schema(with_text: bool) -> SchemaRef {
    let mut f = vec![
        Field::new("session_id", DataType::Utf8, true),
        Field::new("session_path", DataType::Utf8, false),
        Field::new("entry_id", DataType::Utf8, true),
        Field::new("parent_id", DataType::Utf8, true),
        Field::new("type", DataType::Utf8, true),
        Field::new("role", DataType::Utf8, true),
        Field::new("timestamp", utc_ms(), true),
        Field::new("on_branch", DataType::Boolean, false),
        Field::new("provider", DataType::Utf8, true),
        Field::new("model", DataType::Utf8, true),
        Field::new("tool_name", DataType::Utf8, true),
        Field::new("is_error", DataType::Boolean, true),
        Field::new("text_length", DataType::Int64, true),
        Field::new("byte_offset", DataType::Int64, false),
        Field::new("byte_length", DataType::Int64, false),
        Field::new("line", DataType::Int64, false),
    ];
    if with_text {
        f.push(Field::new("text", DataType::Utf8, true));
    }
    Arc::new(Schema::new(f))
}

fn usage_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("session_id", DataType::Utf8, true),
        Field::new("session_path", DataType::Utf8, false),
        Field::new("session_created", utc_ms(), true),
        Field::new("dedup_key", DataType::Utf8, false),
        Field::new("source", DataType::Utf8, false),
        Field::new("provider", DataType::Utf8, false),
        Field::new("model", DataType::Utf8, false),
        Field::new("time", utc_ms(), true),
        Field::new("input_tokens", DataType::Int64, false),
        Field::new("output_tokens", DataType::Int64, false),
        Field::new("cache_read_tokens", DataType::Int64, false),
        Field::new("cache_write_tokens", DataType::Int64, false),
        Field::new("total_tokens", DataType::Int64, false),
        Field::new("cost", DataType::Float64, false),
    ]))
}

fn sessions_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("id", DataType::Utf8, true),
        Field::new("cwd", DataType::Utf8, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("parent_session_path", DataType::Utf8, true),
        Field::new("created", utc_ms(), true),
        Field::new("modified", utc_ms(), true),
        Field::new("message_count", DataType::Int64, false),
        Field::new("first_message", DataType::Utf8, false),
        Field::new("version", DataType::Float64, true),
        Field::new("header_timestamp", DataType::Utf8, true),
        Field::new("file_bytes", DataType::Int64, false),
        Field::new("lines", DataType::Int64, false),
        Field::new("entries", DataType::Int64, false),
        Field::new("skipped_lines", DataType::Int64, false),
        Field::new("leaf_id", DataType::Utf8, true),
    ]))
}

fn strings<'r, R: 'r>(rows: &'r [R], f: impl Fn(&'r R) -> Option<&'r str>) -> ArrayRef {
    Arc::new(rows.iter().map(f).collect::<StringArray>())
}

fn ints<R>(rows: &[R], f: impl Fn(&R) -> Option<i64>) -> ArrayRef {
    Arc::new(rows.iter().map(f).collect::<Int64Array>())
}

fn times<R>(rows: &[R], f: impl Fn(&R) -> Option<i64>) -> ArrayRef {
    Arc::new(
        rows.iter()
            .map(f)
            .collect::<TimestampMillisecondArray>()
            .with_timezone("UTC"),
    )
}

fn count(n: u64) -> Option<i64> {
    Some(i64::try_from(n).unwrap_or(i64::MAX))
}

fn entries_batch(
    schema: &SchemaRef,
    rows: &[EntryRow],
    session: &(Option<String>, String, Option<i64>),
) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let n = rows.len();
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![session.0.as_deref(); n])),
        Arc::new(StringArray::from(vec![Some(session.1.as_str()); n])),
        strings(rows, |r| r.id.as_deref()),
        strings(rows, |r| r.parent_id.as_deref()),
        strings(rows, |r| r.ty.as_deref()),
        strings(rows, |r| r.role.as_deref()),
        times(rows, |r| r.timestamp_ms),
        Arc::new(rows.iter().map(|r| Some(r.on_branch)).collect::<BooleanArray>()),
        strings(rows, |r| r.provider.as_deref()),
        strings(rows, |r| r.model.as_deref()),
        strings(rows, |r| r.tool_name.as_deref()),
        Arc::new(rows.iter().map(|r| r.is_error).collect::<BooleanArray>()),
        ints(rows, |r| r.text_len.and_then(count)),
        ints(rows, |r| count(r.offset)),
        ints(rows, |r| count(r.length)),
        ints(rows, |r| count(r.line)),
    ];
    if schema.fields().len() > cols.len() {
        cols.push(strings(rows, |r| r.text.as_deref()));
    }
    RecordBatch::try_new(schema.clone(), cols)
}

fn usage_batch(
    schema: &SchemaRef,
    rows: &[UsageRow],
    session: &(Option<String>, String, Option<i64>),
) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let n = rows.len();
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![session.0.as_deref(); n])),
        Arc::new(StringArray::from(vec![Some(session.1.as_str()); n])),
        Arc::new(
            std::iter::repeat_n(session.2, n)
                .collect::<TimestampMillisecondArray>()
                .with_timezone("UTC"),
        ),
        strings(rows, |r| Some(r.dedup_key.as_str())),
        strings(rows, |r| Some(r.source)),
        strings(rows, |r| Some(r.provider.as_str())),
        strings(rows, |r| Some(r.model.as_str())),
        times(rows, |r| r.time_ms),
        ints(rows, |r| count(r.input)),
        ints(rows, |r| count(r.output)),
        ints(rows, |r| count(r.cache_read)),
        ints(rows, |r| count(r.cache_write)),
        ints(rows, |r| {
            count(
                r.input
                    .saturating_add(r.output)
                    .saturating_add(r.cache_read)
                    .saturating_add(r.cache_write),
            )
        }),
        Arc::new(rows.iter().map(|r| Some(r.cost)).collect::<Float64Array>()),
    ];
    RecordBatch::try_new(schema.clone(), cols)
}

/// `sessions/sessions.parquet`, from the manifest's rows (by path).
fn write_sessions(out: &Path, keep: &BTreeMap<String, Kept>) -> Result<(), ExportError> {
    let rows: Vec<&SessionRow> = keep.values().map(|k| &k.row).collect();
    let schema = sessions_schema();
    let target = out.join("sessions").join("sessions.parquet");
    let arrow = |source| ExportError::Arrow {
        path: target.clone(),
        source,
    };
    let mut slot = None;
    for chunk in rows.chunks(BATCH) {
        let cols: Vec<ArrayRef> = vec![
            strings(chunk, |r| Some(r.path.as_str())),
            strings(chunk, |r| r.id.as_deref()),
            strings(chunk, |r| Some(r.cwd.as_str())),
            strings(chunk, |r| r.name.as_deref()),
            strings(chunk, |r| r.parent_session_path.as_deref()),
            times(chunk, |r| r.created_ms),
            times(chunk, |r| r.modified_ms),
            ints(chunk, |r| count(r.message_count)),
            strings(chunk, |r| Some(r.first_message.as_str())),
            Arc::new(chunk.iter().map(|r| r.version).collect::<Float64Array>()),
            strings(chunk, |r| r.header_timestamp.as_deref()),
            ints(chunk, |r| count(r.file_bytes)),
            ints(chunk, |r| count(r.lines)),
            ints(chunk, |r| count(r.entries)),
            ints(chunk, |r| count(r.skipped_lines)),
            strings(chunk, |r| r.leaf_id.as_deref()),
        ];
        let batch = RecordBatch::try_new(schema.clone(), cols).map_err(arrow)?;
        write_batch(&mut slot, target.clone(), &schema, &batch)?;
    }
    if slot.is_none() {
        write_batch(
            &mut slot,
            target.clone(),
            &schema,
            &RecordBatch::new_empty(schema.clone()),
        )?;
    }
    let (_, w) = slot.expect("written above");
    w.close().map_err(|source| ExportError::Parquet {
        path: target.clone(),
        source,
    })?;
    std::fs::rename(temporary(&target), &target).map_err(io(&target))
}

// The manifest: JSON, one object per session file, by path.

fn opt_str(v: &Option<String>) -> Value<'static> {
    v.as_ref().map_or(Value::Null, |s| Value::string(s.clone()))
}

fn opt_num(v: Option<i64>) -> Value<'static> {
    v.map_or(Value::Null, |n| Value::Number(n as f64))
}

fn set(o: &mut crate::json::Object<'static>, k: &'static str, v: Value<'static>) {
    o.set(JsStr::from_str(k), v);
}

fn row_value(r: &SessionRow) -> Value<'static> {
    let mut o = crate::json::Object::new();
    set(&mut o, "path", Value::string(r.path.clone()));
    set(&mut o, "id", opt_str(&r.id));
    set(&mut o, "cwd", Value::string(r.cwd.clone()));
    set(&mut o, "name", opt_str(&r.name));
    set(&mut o, "parentSessionPath", opt_str(&r.parent_session_path));
    set(&mut o, "created", opt_num(r.created_ms));
    set(&mut o, "modified", opt_num(r.modified_ms));
    set(&mut o, "messageCount", Value::Number(r.message_count as f64));
    set(&mut o, "firstMessage", Value::string(r.first_message.clone()));
    set(&mut o, "version", r.version.map_or(Value::Null, Value::Number));
    set(&mut o, "headerTimestamp", opt_str(&r.header_timestamp));
    set(&mut o, "fileBytes", Value::Number(r.file_bytes as f64));
    set(&mut o, "lines", Value::Number(r.lines as f64));
    set(&mut o, "entries", Value::Number(r.entries as f64));
    set(&mut o, "skippedLines", Value::Number(r.skipped_lines as f64));
    set(&mut o, "leafId", opt_str(&r.leaf_id));
    Value::Object(o)
}

fn row_of_value(v: &Value<'_>) -> Option<SessionRow> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let n = |k: &str| match v.get(k) {
        Some(Value::Number(x)) => Some(*x),
        _ => None,
    };
    Some(SessionRow {
        path: s("path")?,
        id: s("id"),
        cwd: s("cwd")?,
        name: s("name"),
        parent_session_path: s("parentSessionPath"),
        created_ms: n("created").map(|x| x as i64),
        modified_ms: n("modified").map(|x| x as i64),
        message_count: n("messageCount")? as u64,
        first_message: s("firstMessage")?,
        version: n("version"),
        header_timestamp: s("headerTimestamp"),
        file_bytes: n("fileBytes")? as u64,
        lines: n("lines")? as u64,
        entries: n("entries")? as u64,
        skipped_lines: n("skippedLines")? as u64,
        leaf_id: s("leafId"),
    })
}

/// The manifest's sessions; none when it is missing, unreadable, of another format, or
/// made with another `with_text` (then everything is exported again).
fn load_manifest(path: &Path, with_text: bool) -> BTreeMap<String, Kept> {
    let mut out = BTreeMap::new();
    let Ok(bytes) = std::fs::read(path) else { return out };
    let Ok(v) = Value::parse(&bytes) else { return out };
    if v.get("format") != Some(&Value::Number(FORMAT)) || v.get("withText") != Some(&Value::Bool(with_text)) {
        return out;
    }
    let Some(Value::Array(sessions)) = v.get("sessions") else {
        return out;
    };
    for s in sessions {
        let stamp = match s.get("stamp") {
            Some(Value::Array(a)) if a.len() == 4 => {
                let mut st = [0u64; 4];
                for (i, x) in a.iter().enumerate() {
                    // (Stamps are kept as strings: 64-bit numbers do not fit a double.)
                    st[i] = x.as_str().and_then(|t| t.parse().ok()).unwrap_or(u64::MAX);
                }
                st
            }
            _ => continue,
        };
        let files = match s.get("files") {
            Some(Value::Array(a)) => a.iter().filter_map(|f| f.as_str().map(str::to_string)).collect(),
            _ => continue,
        };
        let (Some(row), Some(Value::Number(e)), Some(Value::Number(u))) =
            (s.get("row").and_then(row_of_value), s.get("entries"), s.get("usage"))
        else {
            continue;
        };
        out.insert(
            row.path.clone(),
            Kept {
                stamp,
                files,
                row,
                entries: *e as u64,
                usage: *u as u64,
            },
        );
    }
    out
}

/// Write the manifest under a temporary name, then rename it into place.
fn save_manifest(path: &Path, keep: &BTreeMap<String, Kept>, with_text: bool) -> Result<(), ExportError> {
    let mut top = crate::json::Object::new();
    set(&mut top, "format", Value::Number(FORMAT));
    set(&mut top, "withText", Value::Bool(with_text));
    let sessions = keep
        .values()
        .map(|k| {
            let mut o = crate::json::Object::new();
            set(
                &mut o,
                "stamp",
                Value::Array(k.stamp.iter().map(|x| Value::string(x.to_string())).collect()),
            );
            set(
                &mut o,
                "files",
                Value::Array(k.files.iter().map(|f| Value::string(f.clone())).collect()),
            );
            set(&mut o, "entries", Value::Number(k.entries as f64));
            set(&mut o, "usage", Value::Number(k.usage as f64));
            set(&mut o, "row", row_value(&k.row));
            Value::Object(o)
        })
        .collect();
    set(&mut top, "sessions", Value::Array(sessions));
    let mut text = Value::Object(top).stringify();
    text.push('\n');
    let tmp = temporary(path);
    std::fs::write(&tmp, text).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

//! `export-parquet`: the three tables written as Parquet files that DuckDB, DataFusion,
//! polars and Spark read (feature `parquet`; the layout is in `docs/analytics.md`).
//!
//! - `sessions/sessions.parquet`: one row per session file, rewritten on every run from
//!   the manifest (no unchanged file is read for it);
//! - `entries/date=YYYY-MM-DD/data.parquet`, `usage/date=YYYY-MM-DD/data.parquet`: the
//!   rows of one day (UTC) of every session, in row groups of up to 128 Ki rows. A row
//!   without a valid time goes to the day of its session's header (`1970-01-01` without
//!   one).
//!
//! **Incremental.** `_manifest.json` holds, per session file, the `fstat` it was read
//! under (device, inode, size, modification time), the days it has rows on and its
//! `sessions` row. A run reads only the files whose `fstat` changed and the new ones, and
//! rewrites only the days that gain or lose rows: a day's file is written anew from the
//! rows it keeps (read back from the old file, those of unchanged sessions) and the new
//! rows (copy on write).
//!
//! **Killed midway.** New files are written under temporary names (`*.tmp-<pid>`, which
//! no `*.parquet` glob reads). The manifest is the commit: it is renamed into place with
//! the list of renames and deletions still to make, which are then made (each rename
//! replaces a day's file at once, so readers see the old day or the new one, never both);
//! a run that finds that list in the manifest finishes it first, and deletes temporary
//! files no manifest names. So a killed run loses at most its own work, and the folder
//! never holds two copies of a row.

use super::rows::{self, EntryRow, SessionRow, UsageRow};
use crate::js::string::JsStr;
use crate::json::Value;
use crate::session::{Migration, Session};
use crate::source::ReadMode;
use arrow_array::cast::AsArray;
use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Rows per record batch.
const BATCH: usize = 64 * 1024;
/// Rows per row group, at most.
const ROW_GROUP: usize = 128 * 1024;
/// What the rows waiting to be written may take in memory in all: past it, the day with
/// the most writes them as a row group.
const BUFFERED: usize = 128 << 20;
/// The manifest's name in the output folder.
pub const MANIFEST: &str = "_manifest.json";
/// Bumped when the tables' columns or the layout change: a manifest of another version
/// means a full export.
const FORMAT: f64 = 4.0;
/// The `sessions` table's file, relative to the output folder.
const SESSIONS_FILE: &str = "sessions/sessions.parquet";
/// A day's file in its partition.
const DAY_FILE: &str = "data.parquet";

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
    /// Of those, files read from where the last run stopped: appended to, with the same
    /// branch, so that their older rows stay as they are.
    pub appended: usize,
    /// Files the manifest had, unchanged (not read).
    pub unchanged: usize,
    /// Sessions in the manifest whose file is gone (their rows were deleted).
    pub removed: usize,
    /// `entries` rows read from session files this run.
    pub entry_rows_written: u64,
    /// `usage` rows read from session files this run.
    pub usage_rows_written: u64,
    /// Rows kept from the old files of the days rewritten (copied, not read again).
    pub rows_copied: u64,
    /// `sessions` rows in the folder after the run.
    pub sessions: u64,
    /// `entries` rows in the folder after the run.
    pub entry_rows: u64,
    /// `usage` rows in the folder after the run.
    pub usage_rows: u64,
    /// Parquet files written this run (the sessions table included).
    pub files_written: usize,
    /// Files deleted this run (days left without rows, files of a killed run).
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

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ExportError + '_ {
    move |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn pq(path: &Path) -> impl FnOnce(parquet::errors::ParquetError) -> ExportError + '_ {
    move |source| ExportError::Parquet {
        path: path.to_path_buf(),
        source,
    }
}

fn arrow(path: &Path) -> impl FnOnce(arrow_schema::ArrowError) -> ExportError + '_ {
    move |source| ExportError::Arrow {
        path: path.to_path_buf(),
        source,
    }
}

/// The two tables partitioned by day.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Table {
    Entries,
    Usage,
}

impl Table {
    const ALL: [Table; 2] = [Table::Entries, Table::Usage];

    fn name(self) -> &'static str {
        match self {
            Table::Entries => "entries",
            Table::Usage => "usage",
        }
    }

    /// A day's file, relative to the output folder.
    fn day_file(self, day: &str) -> String {
        format!("{}/date={day}/{DAY_FILE}", self.name())
    }
}

/// What the manifest keeps of a session file.
#[derive(Clone, Debug, PartialEq)]
struct Kept {
    stamp: [u64; 4],
    row: SessionRow,
    entries: u64,
    usage: u64,
    /// The days it has rows on, per table.
    days: [Vec<String>; 2],
    /// The bytes read; the digest of their print (as the listing cache keeps it:
    /// [`crate::source::Print::digest`]); the branch's fingerprint
    /// ([`rows::branch_print`]). A file that grew with all three as they were was appended
    /// to.
    len: u64,
    print: u64,
    branch: u128,
}

/// Whether `s` is the session `old` was made from with lines appended: what was read
/// then is still there, every byte of it (its print's digest),
/// ended with a line's end, and the entries on the branch among those lines are the same
/// (so every older row is as it was). Never for a session pi migrates on load.
fn appended_to(s: &Session, old: &Kept) -> bool {
    let b = s.bytes();
    let n = usize::try_from(old.len).unwrap_or(usize::MAX);
    n > 0
        && b.len() > n
        && b[n - 1] == b'\n'
        && crate::source::Print::of(&b[..n]).digest() == old.print
        && !matches!(s.migration(), Migration::FromV1 | Migration::FromV2)
        && rows::branch_print(s, old.len) == old.branch
}

/// The manifest: the sessions, and the renames and deletions a committed run still has
/// to make (relative paths; a rename is (temporary, final)).
#[derive(Default)]
struct Manifest {
    sessions: BTreeMap<String, Kept>,
    /// Files that were no session under that stamp, and why: not read again until their
    /// stamp changes.
    no_session: BTreeMap<String, ([u64; 4], String)>,
    renames: Vec<(String, String)>,
    deletions: Vec<String>,
    /// Read from a file of this format; and its `withText`.
    known: bool,
    with_text: bool,
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

/// `YYYY-MM-DD` of Unix ms (UTC).
fn day(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d").to_string())
        .unwrap_or_else(|_| "1970-01-01".to_string())
}

/// Milliseconds in a day.
const DAY_MS: i64 = 86_400_000;

/// The UTC day number of Unix ms (days since 1970-01-01): rows are sorted by it, and
/// named ([`day`] of its first millisecond) once per day, not once per row.
fn day_no(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS)
}

/// A new file at `path` (a temporary name of this run's): never one that is there already,
/// never through a link (`crate::files`); a leftover of a killed run at that name was
/// swept before.
fn new_file(path: &Path) -> Result<std::fs::File, ExportError> {
    crate::files::create_new(path, 0o666).map_err(io(path))
}

/// `path`'s temporary name: beside it, unique to this process.
fn temporary(path: &str) -> String {
    format!("{path}.tmp-{}", std::process::id())
}

/// Make the renames and deletions a committed manifest lists (those already made are
/// no longer there to make). Returns how many files were deleted.
fn finish(out: &Path, m: &Manifest) -> Result<usize, ExportError> {
    for (tmp, fin) in &m.renames {
        let (t, f) = (out.join(tmp), out.join(fin));
        match crate::files::rename_over(&t, &f) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&f)(e)),
        }
    }
    let mut deleted = 0;
    for d in &m.deletions {
        let f = out.join(d);
        match crate::files::remove(&f) {
            Ok(true) => deleted += 1,
            Ok(false) => {}
            Err(e) => return Err(io(&f)(e)),
        }
        if let Some(dir) = f.parent() {
            // (A day left empty goes with its file; a folder that is not empty stays.)
            let _ = std::fs::remove_dir(dir);
        }
    }
    Ok(deleted)
}

/// Refuse, before anything is written, a folder where the manifest or a table's file (a
/// day's file, a temporary file) is anything but a regular file: a FIFO, a device, a socket
/// or a symlink there is no file of the export's, and is never renamed over or unlinked.
fn refuse_special_files(out: &Path) -> Result<(), ExportError> {
    // Only the names the export writes, renames over or deletes: table files and its own
    // temporary files.
    let ours = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy())
            .is_some_and(|n| n.ends_with(".parquet") || n.contains(".tmp-") || n == MANIFEST)
    };
    let mut names = vec![out.join(MANIFEST)];
    for table in ["entries", "usage", "sessions"] {
        let Ok(dir) = std::fs::read_dir(out.join(table)) else {
            continue;
        };
        for d in dir.flatten() {
            let p = d.path();
            // (A partition folder may be a link to one; what else a folder holds, its own
            // folders among them, is no business of the export's.)
            match std::fs::read_dir(&p) {
                Ok(inner) if p.is_dir() && !ours(&p) => names.extend(inner.flatten().map(|e| e.path())),
                _ => names.push(p),
            }
        }
    }
    for p in names.into_iter().filter(|p| ours(p)) {
        if let Ok(m) = std::fs::symlink_metadata(&p)
            && !m.is_file()
        {
            return Err(io(&p)(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "not a regular file ({}); the export writes nothing while it is there",
                    crate::source::kind_name(&m.file_type())
                ),
            )));
        }
    }
    Ok(())
}

/// Delete the temporary files of runs that did not commit: the manifest's, and those
/// under the tables' folders.
fn sweep(out: &Path) -> Result<usize, ExportError> {
    let mut deleted = 0;
    let prefix = format!("{MANIFEST}.tmp-");
    for d in std::fs::read_dir(out).into_iter().flatten().flatten() {
        let p = d.path();
        if d.file_name().to_string_lossy().starts_with(&prefix)
            && std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file())
        {
            crate::files::remove(&p).map_err(io(&p))?;
            deleted += 1;
        }
    }
    for table in ["entries", "usage", "sessions"] {
        let Ok(dir) = std::fs::read_dir(out.join(table)) else {
            continue;
        };
        let mut files = Vec::new();
        for d in dir.flatten() {
            let p = d.path();
            match std::fs::read_dir(&p) {
                Ok(inner) => files.extend(inner.flatten().map(|e| e.path())),
                Err(_) => files.push(p),
            }
        }
        for f in files {
            // (Only regular files are ours: anything else there is left alone.)
            if f.file_name().is_some_and(|n| n.to_string_lossy().contains(".tmp-"))
                && std::fs::symlink_metadata(&f).is_ok_and(|m| m.is_file())
            {
                crate::files::remove(&f).map_err(io(&f))?;
                deleted += 1;
            }
        }
    }
    Ok(deleted)
}

/// The days that have a file, per table.
fn days_on_disk(out: &Path, t: Table) -> BTreeSet<String> {
    let mut days = BTreeSet::new();
    if let Ok(dir) = std::fs::read_dir(out.join(t.name())) {
        for d in dir.flatten() {
            let name = d.file_name().to_string_lossy().into_owned();
            if let Some(day) = name.strip_prefix("date=")
                && d.path().join(DAY_FILE).is_file()
            {
                days.insert(day.to_string());
            }
        }
    }
    days
}

/// Export the sessions of `roots` (files, sessions folders or sessions roots, as
/// `usage` takes them) into `out`.
///
/// # Errors
/// A file of `out` could not be read, written or deleted.
pub fn export(roots: &[PathBuf], out: &Path, opts: &ExportOptions<'_>) -> Result<ExportReport, ExportError> {
    // (A name that holds a file, a FIFO or a device is no folder to export into: said so,
    // and left as it is.)
    match std::fs::metadata(out) {
        Ok(m) if !m.is_dir() => {
            return Err(io(out)(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("not a folder ({})", crate::source::kind_name(&m.file_type())),
            )));
        }
        _ => std::fs::create_dir_all(out).map_err(io(out))?,
    }
    refuse_special_files(out)?;
    let mut report = ExportReport::default();
    let manifest_path = out.join(MANIFEST);
    // A committed run's renames first: the files are then as the manifest says.
    let found = load_manifest(&manifest_path);
    report.files_deleted += finish(out, &found)?;
    report.files_deleted += sweep(out)?;
    let trusted = !opts.full && found.format_ok(opts.with_text);
    let (old, old_no_session) = if trusted {
        (found.sessions, found.no_session)
    } else {
        Default::default()
    };

    let (paths, problems) = crate::usage::session_files(roots);
    report.skipped.extend(problems);
    report.files = paths.len();
    let mut keep: BTreeMap<String, Kept> = BTreeMap::new();
    let mut no_session = BTreeMap::new();
    let mut todo = Vec::new();
    for p in &paths {
        let name = p.to_string_lossy().into_owned();
        let stamp = std::fs::metadata(p).ok().map(|m| stamp_of(&m));
        match (old.get(&name), old_no_session.get(&name), stamp) {
            (Some(k), _, Some(st)) if k.stamp == st => {
                keep.insert(name, k.clone());
            }
            (_, Some((was, why)), Some(st)) if *was == st => {
                report.skipped.push((p.clone(), why.clone()));
                no_session.insert(name, (st, why.clone()));
            }
            _ => todo.push((p.clone(), name, stamp)),
        }
    }
    report.unchanged = keep.len() + no_session.len();
    report.read = todo.len();
    // Files that grew (the same file, longer): those appended to are read from where the
    // last run stopped, and their older rows stay.
    let appended: HashMap<String, Kept> = {
        use rayon::prelude::*;
        todo.par_iter()
            .filter_map(|(p, name, stamp)| {
                let (k, st) = (old.get(name)?, (*stamp)?);
                let grew = st[0] == k.stamp[0] && st[1] == k.stamp[1] && st[2] > k.len;
                (grew
                    && open_session(p, opts).is_ok_and(|s| {
                        let yes = appended_to(&s, k);
                        crate::source::give_thread_buffer(s.into_buffer());
                        yes
                    }))
                .then(|| (name.clone(), k.clone()))
            })
            .collect()
    };
    let present: HashSet<String> = paths.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    report.removed = old.keys().filter(|k| !present.contains(*k)).count();
    if trusted && todo.is_empty() && report.removed == 0 && out.join(SESSIONS_FILE).is_file() {
        // Nothing changed: the folder is as the manifest says; nothing is written.
        report.sessions = keep.len() as u64;
        report.entry_rows = keep.values().map(|k| k.entries).sum();
        report.usage_rows = keep.values().map(|k| k.usage).sum();
        return Ok(report);
    }
    // Days that lose rows: those of the sessions read again (but for appends) or gone;
    // without a manifest to trust, every day there is.
    let mut dirty: [BTreeSet<String>; 2] = Default::default();
    for (name, k) in &old {
        if !keep.contains_key(name) && !appended.contains_key(name) {
            for t in Table::ALL {
                dirty[t as usize].extend(k.days[t as usize].iter().cloned());
            }
        }
    }
    if !trusted {
        for t in Table::ALL {
            dirty[t as usize].extend(days_on_disk(out, t));
        }
    }
    let kept_paths: HashSet<String> = keep.keys().chain(appended.keys()).cloned().collect();

    let done = AtomicUsize::new(keep.len());
    let total = paths.len();
    if let Some(cb) = opts.on_progress {
        cb(keep.len(), total);
    }
    let mut writers = Writers::new(out, opts.with_text, &kept_paths);
    /// A file's path, its stamp and what became of it.
    type Done = (String, Option<[u64; 4]>, Result<Option<Written>, String>);
    let results: Vec<Done> = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Msg>(16);
        let w = &mut writers;
        let writing = scope.spawn(move || -> Result<(), ExportError> {
            for m in rx {
                w.take(m)?;
            }
            Ok(())
        });
        let results: Vec<Done> = {
            use rayon::prelude::*;
            todo.par_iter()
                .with_max_len(1)
                .map_with(tx, |tx, (p, name, stamp)| {
                    let r = export_one(p, name, *stamp, opts, tx, appended.get(name));
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if let Some(cb) = opts.on_progress {
                        cb(n, total);
                    }
                    (name.clone(), *stamp, r)
                })
                .collect()
        };
        match writing.join() {
            Ok(Ok(())) => Ok(results),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ExportError::Io {
                path: out.to_path_buf(),
                source: std::io::Error::other("the writing thread panicked"),
            }),
        }
    })?;
    let mut failed = HashSet::new();
    for (name, stamp, r) in results {
        let why = match r {
            Ok(Some(w)) => {
                report.appended += usize::from(appended.contains_key(&name));
                report.entry_rows_written += w.entries;
                report.usage_rows_written += w.usage;
                keep.insert(name, w.kept);
                continue;
            }
            Ok(None) => {
                let why = "not a session".to_string();
                if let Some(st) = stamp {
                    no_session.insert(name.clone(), (st, why.clone()));
                }
                why
            }
            Err(e) => e,
        };
        report.skipped.push((PathBuf::from(&name), why));
        if let Some(k) = appended.get(&name) {
            // A file skipped has no rows, as when it is read whole: the older rows kept of
            // it go too (a later run that can read it reads it whole).
            for t in Table::ALL {
                for d in &k.days[t as usize] {
                    writers.open(t, d)?.sessions.insert(name.clone());
                }
            }
        }
        failed.insert(name);
    }
    // Days that lost rows and got none: written from what they keep (or deleted).
    for t in Table::ALL {
        for d in &dirty[t as usize] {
            writers.open(t, d)?;
        }
    }
    let (renames, deletions, copied) = writers.close(&failed)?;
    report.rows_copied = copied;
    report.files_written = renames.len() + 1;
    let mut renames = renames;
    renames.push(write_sessions(out, &keep)?);
    let m = Manifest {
        sessions: keep,
        no_session,
        renames,
        deletions,
        ..Manifest::default()
    };
    // (The sessions' part, most of the manifest, is made once for both saves.)
    let sessions_json = sessions_json(&m);
    save_manifest(&manifest_path, &m, &sessions_json, opts.with_text)?;
    report.files_deleted += finish(out, &m)?;
    let done = Manifest {
        sessions: m.sessions,
        no_session: m.no_session,
        ..Manifest::default()
    };
    save_manifest(&manifest_path, &done, &sessions_json, opts.with_text)?;
    report.sessions = done.sessions.len() as u64;
    report.entry_rows = done.sessions.values().map(|k| k.entries).sum();
    report.usage_rows = done.sessions.values().map(|k| k.usage).sum();
    Ok(report)
}

/// Rows of one session and day for a table, to the writing thread.
struct Msg {
    table: Table,
    day: String,
    session: String,
    batch: RecordBatch,
}

thread_local! {
    /// Row vectors a worker reuses from session to session: grown once, not per session
    /// (fresh memory for each was a tenth of the export, most of it the kernel zeroing
    /// pages).
    static ROW_VECS: std::cell::RefCell<Vec<Vec<EntryRow>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// An empty row vector, from the thread's pool when it has one.
fn take_rows() -> Vec<EntryRow> {
    ROW_VECS.with(|p| p.borrow_mut().pop()).unwrap_or_default()
}

/// Give an emptied row vector back to the thread's pool (a few, of at most [`BATCH`] rows).
fn give_rows(mut v: Vec<EntryRow>) {
    v.clear();
    if v.capacity() <= BATCH {
        ROW_VECS.with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < 16 {
                p.push(v);
            }
        });
    }
}

/// A session as the export opens it (in the thread's read buffer: give it back).
fn open_session(path: &Path, opts: &ExportOptions<'_>) -> crate::Result<Session> {
    let open = crate::session::OpenOptions {
        read_mode: opts.read_mode,
        v1_ids: crate::session::V1Ids::Stable,
        ..crate::session::OpenOptions::default()
    };
    Session::open_into(path, open, crate::source::thread_buffer())
}

/// What [`export_one`] did: the session as the manifest keeps it, and the rows it sent.
struct Written {
    kept: Kept,
    entries: u64,
    usage: u64,
}

/// Read one session and send its rows (only those of the lines after `since`'s when it
/// was appended to); `Ok(None)`: not a session; `Err`: why it is skipped (rows of it
/// already sent are dropped when the files are closed; for an append, none are sent).
fn export_one(
    path: &Path,
    name: &str,
    stamp: Option<[u64; 4]>,
    opts: &ExportOptions<'_>,
    tx: &std::sync::mpsc::SyncSender<Msg>,
    since: Option<&Kept>,
) -> Result<Option<Written>, String> {
    let stamp = stamp.ok_or_else(|| "could not be read".to_string())?;
    let s = match open_session(path, opts) {
        Ok(s) => s,
        Err(e) if matches!(e.kind(), crate::error::ErrorKind::NotASession { .. }) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    if let Some(old) = since
        && !appended_to(&s, old)
    {
        // (It was when the run began.)
        return Err(s.changed().to_string());
    }
    let from = since.map_or(0, |k| k.len);
    let mtime_ms = std::fs::metadata(path)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_millis() as f64);
    let mut scratch = crate::listing::Scratch::new();
    // (`allMessagesText` is no column: its copy of every text is spared.)
    scratch.set_collect_text(false);
    let Ok(info) = crate::listing::session_info_from_bytes(path, s.bytes(), mtime_ms, &mut scratch) else {
        return Ok(None);
    };
    let row = rows::session_row(&s, &info);
    let home_day = row.created_ms.map_or(0, day_no);
    let session = (row.id.clone(), row.path.clone(), row.created_ms);
    let schema = entries_schema(opts.with_text);
    let send = |table, day: &str, batch| {
        tx.send(Msg {
            table,
            day: day.to_string(),
            session: name.to_string(),
            batch,
        })
        .map_err(|_| "output: the writing thread stopped".to_string())
    };
    // Entry rows by day number, sent a batch at a time (an append's all at the end, once
    // it is known to be whole).
    let mut pending: BTreeMap<i64, Vec<EntryRow>> = BTreeMap::new();
    let mut days: [BTreeSet<String>; 2] = Default::default();
    if let Some(old) = since {
        for t in Table::ALL {
            days[t as usize].extend(old.days[t as usize].iter().cloned());
        }
    }
    let mut entries = 0u64;
    let flush = |d: &str, rows: &mut Vec<EntryRow>| -> Result<(), String> {
        let batch = entries_batch(&schema, rows, &session).map_err(|e| format!("output: {e}"))?;
        rows.clear();
        send(Table::Entries, d, batch)
    };
    let usage = rows::session_rows_since(&s, opts.with_text, from, |e: EntryRow| -> Result<(), Stop> {
        entries += 1;
        let n = e.timestamp_ms.map_or(home_day, day_no);
        let v = pending.entry(n).or_insert_with(take_rows);
        v.push(e);
        if v.len() >= BATCH && since.is_none() {
            flush(&day(n.saturating_mul(DAY_MS)), v).map_err(Stop)?;
        }
        Ok(())
    })
    .map_err(|Stop(e)| e)?;
    for (n, mut v) in pending {
        let d = day(n.saturating_mul(DAY_MS));
        if !v.is_empty() {
            flush(&d, &mut v)?;
        }
        give_rows(v);
        days[0].insert(d);
    }
    let mut by_day: BTreeMap<i64, Vec<UsageRow>> = BTreeMap::new();
    let urows = rows::usage_rows(&usage);
    let n_usage = urows.len() as u64;
    for u in urows {
        by_day.entry(u.time_ms.map_or(home_day, day_no)).or_default().push(u);
    }
    let uschema = usage_schema();
    for (n, v) in by_day {
        let d = day(n.saturating_mul(DAY_MS));
        let batch = usage_batch(&uschema, &v, &session).map_err(|e| format!("output: {e}"))?;
        send(Table::Usage, &d, batch)?;
        days[1].insert(d);
    }
    let kept = Kept {
        stamp,
        row,
        entries: since.map_or(0, |k| k.entries) + entries,
        usage: since.map_or(0, |k| k.usage) + n_usage,
        days: days.map(|d| d.into_iter().collect()),
        len: s.bytes().len() as u64,
        print: crate::source::Print::of(s.bytes()).digest(),
        branch: rows::branch_print(&s, u64::MAX),
    };
    crate::source::give_thread_buffer(s.into_buffer());
    Ok(Some(Written {
        kept,
        entries,
        usage: n_usage,
    }))
}

/// Why the rows of a session stopped: a session error, or one of the output.
struct Stop(String);

impl From<crate::Error> for Stop {
    fn from(e: crate::Error) -> Stop {
        Stop(e.to_string())
    }
}

/// A day's file being written: under its temporary name until the run commits.
struct DayWriter {
    w: ArrowWriter<std::fs::File>,
    /// Relative paths: the temporary file and the day's file.
    tmp: String,
    fin: String,
    /// Rows written or waiting, and the sessions whose rows came this run (or were copied
    /// in for an append then skipped): if one of them failed, its rows are taken out.
    rows: u64,
    sessions: HashSet<String>,
    /// Batches not written yet, and their size in memory: written together as a row
    /// group (an open row group holds a compressor per column).
    waiting: Vec<RecordBatch>,
    waiting_bytes: usize,
}

impl DayWriter {
    /// Write the waiting batches as one row group (or more, past [`ROW_GROUP`] rows).
    fn write_waiting(&mut self, out: &Path) -> Result<(), ExportError> {
        if self.waiting.is_empty() {
            return Ok(());
        }
        let path = out.join(&self.tmp);
        let batch =
            arrow_select::concat::concat_batches(&self.waiting[0].schema(), &self.waiting).map_err(arrow(&path))?;
        self.waiting.clear();
        self.waiting_bytes = 0;
        self.w.write(&batch).map_err(pq(&path))?;
        self.w.flush().map_err(pq(&path))
    }
}

/// The open day files of both tables, on the writing thread.
struct Writers<'k> {
    out: PathBuf,
    with_text: bool,
    /// Sessions whose rows stay as they are: the rows copied from old day files.
    kept: &'k HashSet<String>,
    open: BTreeMap<(Table, String), DayWriter>,
    copied: u64,
    /// Bytes of batches waiting, in all.
    waiting: usize,
}

/// zstd, dictionaries (but for columns of values seldom repeated: ids, keys, texts), page
/// statistics, row groups of up to [`ROW_GROUP`] rows.
fn props() -> WriterProperties {
    let unique = ["entry_id", "parent_id", "dedup_key", "text"];
    unique
        .iter()
        .fold(WriterProperties::builder(), |b, c| {
            b.set_column_dictionary_enabled(parquet::schema::types::ColumnPath::from(*c), false)
        })
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("level 1 exists")))
        .set_dictionary_enabled(true)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .set_created_by(format!("pi-session {}", env!("CARGO_PKG_VERSION")))
        .build()
}

impl<'k> Writers<'k> {
    fn new(out: &Path, with_text: bool, kept: &'k HashSet<String>) -> Writers<'k> {
        Writers {
            out: out.to_path_buf(),
            with_text,
            kept,
            open: BTreeMap::new(),
            copied: 0,
            waiting: 0,
        }
    }

    fn schema(&self, t: Table) -> SchemaRef {
        match t {
            Table::Entries => entries_schema(self.with_text),
            Table::Usage => usage_schema(),
        }
    }

    /// The day's writer, made on first use with the rows the old day file keeps.
    fn open(&mut self, t: Table, d: &str) -> Result<&mut DayWriter, ExportError> {
        let key = (t, d.to_string());
        if !self.open.contains_key(&key) {
            let fin = t.day_file(d);
            let tmp = temporary(&fin);
            let path = self.out.join(&tmp);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(io(dir))?;
            }
            let file = new_file(&path)?;
            let w = ArrowWriter::try_new(file, self.schema(t), Some(props())).map_err(pq(&path))?;
            let mut dw = DayWriter {
                w,
                tmp,
                fin: fin.clone(),
                rows: 0,
                sessions: HashSet::new(),
                waiting: Vec::new(),
                waiting_bytes: 0,
            };
            let old = self.out.join(&fin);
            if !self.kept.is_empty() && old.is_file() {
                let n = copy_rows(&old, &mut dw.w, &|p| self.kept.contains(p))?;
                // (Its row group ends here: an open one holds a compressor per column.)
                dw.w.flush().map_err(pq(&path))?;
                dw.rows += n;
                self.copied += n;
            }
            self.open.insert(key.clone(), dw);
        }
        Ok(self.open.get_mut(&key).expect("made above"))
    }

    /// Take a batch; past the memory budget, the day with the most rows waiting writes
    /// them.
    fn take(&mut self, m: Msg) -> Result<(), ExportError> {
        let bytes = m.batch.get_array_memory_size();
        let dw = self.open(m.table, &m.day)?;
        dw.rows += m.batch.num_rows() as u64;
        dw.sessions.insert(m.session);
        dw.waiting.push(m.batch);
        dw.waiting_bytes += bytes;
        let full = dw.waiting.iter().map(RecordBatch::num_rows).sum::<usize>() >= ROW_GROUP;
        self.waiting += bytes;
        let out = self.out.clone();
        if full {
            let dw = self.open.get_mut(&(m.table, m.day)).expect("opened above");
            self.waiting -= dw.waiting_bytes;
            dw.write_waiting(&out)?;
        }
        while self.waiting > BUFFERED {
            let Some(big) = self.open.values_mut().max_by_key(|d| d.waiting_bytes) else {
                break;
            };
            self.waiting -= big.waiting_bytes;
            big.write_waiting(&out)?;
        }
        Ok(())
    }

    /// Close every file. Rows of `failed` sessions (read in part, or kept from before an
    /// append and then skipped) are taken out again.
    /// Returns the renames to make, the day files to delete (days left without rows) and
    /// the rows copied from old files.
    #[allow(clippy::type_complexity)]
    fn close(self, failed: &HashSet<String>) -> Result<(Vec<(String, String)>, Vec<String>, u64), ExportError> {
        use rayon::prelude::*;
        let out = &self.out;
        // Most rows wait until here (a day's file is one row group): the days are
        // encoded in parallel.
        let days: Vec<DayWriter> = self.open.into_values().collect();
        let closed = days
            .into_par_iter()
            .map(|dw| close_day(out, dw, failed))
            .collect::<Result<Vec<_>, ExportError>>()?;
        let mut renames = Vec::new();
        let mut deletions = Vec::new();
        for c in closed {
            match c {
                Ok(rename) => renames.push(rename),
                Err(deleted) => deletions.push(deleted),
            }
        }
        Ok((renames, deletions, self.copied))
    }
}

/// Write a day's waiting rows and close its file; rows of `failed` sessions are taken out
/// again. The rename to make (temporary, final), or the day file to delete when no row is
/// left.
fn close_day(
    out: &Path,
    mut dw: DayWriter,
    failed: &HashSet<String>,
) -> Result<Result<(String, String), String>, ExportError> {
    let tmp = out.join(&dw.tmp);
    dw.write_waiting(out)?;
    dw.w.close().map_err(pq(&tmp))?;
    let mut rows = dw.rows;
    if dw.sessions.iter().any(|s| failed.contains(s)) {
        // Rare: a session file changed while it was read, or one appended to was then
        // skipped. Its rows go.
        let again = format!("{}.again", dw.tmp);
        let again_path = out.join(&again);
        let file = new_file(&again_path)?;
        let schema = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&tmp).map_err(io(&tmp))?)
            .map_err(pq(&tmp))?
            .schema()
            .clone();
        let mut w = ArrowWriter::try_new(file, schema, Some(props())).map_err(pq(&again_path))?;
        rows = copy_rows(&tmp, &mut w, &|p| !failed.contains(p))?;
        w.close().map_err(pq(&again_path))?;
        crate::files::rename_over(&again_path, &tmp).map_err(io(&tmp))?;
    }
    if rows == 0 {
        crate::files::remove(&tmp).map_err(io(&tmp))?;
        Ok(Err(dw.fin))
    } else {
        Ok(Ok((dw.tmp, dw.fin)))
    }
}

/// Copy the rows of `src` whose `session_path` `keep` says to keep into `w`; how many.
fn copy_rows(src: &Path, w: &mut ArrowWriter<std::fs::File>, keep: &dyn Fn(&str) -> bool) -> Result<u64, ExportError> {
    let file = std::fs::File::open(src).map_err(io(src))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(pq(src))?
        .with_batch_size(BATCH)
        .build()
        .map_err(pq(src))?;
    let mut n = 0;
    for batch in reader {
        let batch = batch.map_err(arrow(src))?;
        let Some(col) = batch.column_by_name("session_path") else {
            continue;
        };
        let paths = col.as_string::<i32>();
        let mask: BooleanArray = paths.iter().map(|p| Some(p.is_some_and(keep))).collect();
        let kept = arrow_select::filter::filter_record_batch(&batch, &mask).map_err(arrow(src))?;
        if kept.num_rows() > 0 {
            w.write(&kept).map_err(pq(src))?;
            n += kept.num_rows() as u64;
        }
    }
    Ok(n)
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

/// `sessions/sessions.parquet`, from the manifest's rows (by path), under its temporary
/// name: the rename to make.
fn write_sessions(out: &Path, keep: &BTreeMap<String, Kept>) -> Result<(String, String), ExportError> {
    let rows: Vec<&SessionRow> = keep.values().map(|k| &k.row).collect();
    let schema = sessions_schema();
    let fin = SESSIONS_FILE.to_string();
    let tmp = temporary(&fin);
    let path = out.join(&tmp);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let file = new_file(&path)?;
    let mut w = ArrowWriter::try_new(file, schema.clone(), Some(props())).map_err(pq(&path))?;
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
        let batch = RecordBatch::try_new(schema.clone(), cols).map_err(arrow(&path))?;
        w.write(&batch).map_err(pq(&path))?;
    }
    w.close().map_err(pq(&path))?;
    Ok((tmp, fin))
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

impl Manifest {
    /// Whether the sessions of the manifest can be trusted for a run with `with_text`:
    /// it was read, of this format, made with the same `with_text`.
    fn format_ok(&self, with_text: bool) -> bool {
        self.known && self.with_text == with_text
    }
}

fn strs(v: Option<&Value<'_>>) -> Option<Vec<String>> {
    match v {
        Some(Value::Array(a)) => Some(a.iter().filter_map(|f| f.as_str().map(str::to_string)).collect()),
        _ => None,
    }
}

/// The manifest at `path`; an empty one when it is missing, unreadable, or of another
/// format or `with_text` (its pending renames are kept in any case: they finish a
/// committed run).
fn load_manifest(path: &Path) -> Manifest {
    let mut m = Manifest::default();
    let Ok(bytes) = std::fs::read(path) else { return m };
    let Ok(v) = Value::parse(&bytes) else { return m };
    if let Some(Value::Array(r)) = v.get("renames") {
        for pair in r {
            if let (Some(t), Some(f)) = (
                pair.get("from").and_then(Value::as_str),
                pair.get("to").and_then(Value::as_str),
            ) {
                m.renames.push((t.to_string(), f.to_string()));
            }
        }
    }
    m.deletions = strs(v.get("deletions")).unwrap_or_default();
    if v.get("format") != Some(&Value::Number(FORMAT)) {
        return m;
    }
    m.with_text = matches!(v.get("withText"), Some(Value::Bool(true)));
    if let Some(Value::Array(files)) = v.get("noSession") {
        for f in files {
            if let (Some(path), Some(stamp), Some(why)) = (
                f.get("path").and_then(Value::as_str),
                stamp_from(f.get("stamp")),
                f.get("why").and_then(Value::as_str),
            ) {
                m.no_session.insert(path.to_string(), (stamp, why.to_string()));
            }
        }
    }
    let Some(Value::Array(sessions)) = v.get("sessions") else {
        return m;
    };
    for s in sessions {
        let Some(stamp) = stamp_from(s.get("stamp")) else {
            continue;
        };
        let (Some(row), Some(Value::Number(e)), Some(Value::Number(u)), Some(de), Some(du)) = (
            s.get("row").and_then(row_of_value),
            s.get("entries"),
            s.get("usage"),
            strs(s.get("entryDays")),
            strs(s.get("usageDays")),
        ) else {
            continue;
        };
        let hex = |v: Option<&Value<'_>>| v.and_then(Value::as_str).and_then(|t| u128::from_str_radix(t, 16).ok());
        let (Some(Value::Number(len)), Some(print), Some(branch)) = (
            s.get("len"),
            hex(s.get("print")).and_then(|p| u64::try_from(p).ok()),
            hex(s.get("branch")),
        ) else {
            continue;
        };
        m.sessions.insert(
            row.path.clone(),
            Kept {
                stamp,
                row,
                entries: *e as u64,
                usage: *u as u64,
                days: [de, du],
                len: *len as u64,
                print,
                branch,
            },
        );
    }
    m.known = true;
    m
}

/// A stamp as the manifest keeps it: four strings (64-bit numbers do not fit a double).
fn stamp_value(stamp: &[u64; 4]) -> Value<'static> {
    Value::Array(stamp.iter().map(|x| Value::string(x.to_string())).collect())
}

/// A stamp from the manifest (`None` unless four numbers as strings).
fn stamp_from(v: Option<&Value<'_>>) -> Option<[u64; 4]> {
    match v {
        Some(Value::Array(a)) if a.len() == 4 => {
            let mut st = [0u64; 4];
            for (i, x) in a.iter().enumerate() {
                st[i] = x.as_str()?.parse().ok()?;
            }
            Some(st)
        }
        _ => None,
    }
}

/// The manifest's `sessions` array, as JSON text.
fn sessions_json(m: &Manifest) -> String {
    let strings_of = |v: &[String]| Value::Array(v.iter().map(|f| Value::string(f.clone())).collect());
    let sessions = m
        .sessions
        .values()
        .map(|k| {
            let mut o = crate::json::Object::new();
            set(&mut o, "stamp", stamp_value(&k.stamp));
            set(&mut o, "entries", Value::Number(k.entries as f64));
            set(&mut o, "usage", Value::Number(k.usage as f64));
            set(&mut o, "entryDays", strings_of(&k.days[0]));
            set(&mut o, "usageDays", strings_of(&k.days[1]));
            set(&mut o, "row", row_value(&k.row));
            set(&mut o, "len", Value::Number(k.len as f64));
            let hex = |x: u128| Value::string(format!("{x:032x}"));
            set(&mut o, "print", Value::string(format!("{:016x}", k.print)));
            set(&mut o, "branch", hex(k.branch));
            Value::Object(o)
        })
        .collect();
    Value::Array(sessions).stringify()
}

/// Write the manifest `m` (whose sessions' part is `sessions_json`) under a temporary
/// name, then rename it into place (the commit).
fn save_manifest(path: &Path, m: &Manifest, sessions_json: &str, with_text: bool) -> Result<(), ExportError> {
    let mut top = crate::json::Object::new();
    set(&mut top, "format", Value::Number(FORMAT));
    set(&mut top, "withText", Value::Bool(with_text));
    let renames = m
        .renames
        .iter()
        .map(|(t, f)| {
            let mut o = crate::json::Object::new();
            set(&mut o, "from", Value::string(t.clone()));
            set(&mut o, "to", Value::string(f.clone()));
            Value::Object(o)
        })
        .collect();
    set(&mut top, "renames", Value::Array(renames));
    let no_session = m
        .no_session
        .iter()
        .map(|(path, (stamp, why))| {
            let mut o = crate::json::Object::new();
            set(&mut o, "path", Value::string(path.clone()));
            set(&mut o, "stamp", stamp_value(stamp));
            set(&mut o, "why", Value::string(why.clone()));
            Value::Object(o)
        })
        .collect();
    set(&mut top, "noSession", Value::Array(no_session));
    set(
        &mut top,
        "deletions",
        Value::Array(m.deletions.iter().map(|f| Value::string(f.clone())).collect()),
    );
    let mut text = Value::Object(top).stringify();
    // `{...}` becomes `{...,"sessions":[...]}`.
    text.pop();
    text.push_str(",\"sessions\":");
    text.push_str(sessions_json);
    text.push_str("}\n");
    let tmp = path.with_file_name(temporary(MANIFEST));
    std::io::Write::write_all(&mut new_file(&tmp)?, text.as_bytes()).map_err(io(&tmp))?;
    crate::files::rename_over(&tmp, path).map_err(io(path))
}

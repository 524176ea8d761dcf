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

use super::manifest::{Kept, Manifest, load_manifest, save_manifest, sessions_json};
use super::out::{BATCH, DAY_FILE, ExportError, MANIFEST, SESSIONS_FILE, Table, io};
use super::rows::{self, EntryRow, UsageRow};
use super::tables::{Msg, Writers, entries_batch, entries_schema, usage_batch, usage_schema, write_sessions};
use crate::session::{Migration, Session};
use crate::source::ReadMode;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

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

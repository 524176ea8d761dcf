//! Usage records grouped into a report: which sessions, each record counted once
//! (`mod.rs` says which file a record belongs to), periods in a time zone, filters, and
//! the run over many files (parallel, through the cache when there is one).

use super::owners::{Owned, Sessions};
use super::scan::info;
use super::{FileUsage, Source, TimeFrom, Tokens};
use crate::error::Result;
use crate::listing::{CancelToken, Cancelled, ListingCache, SessionInfo, SkippedFile};
use crate::source::{ReadMode, Stamp};
use either::Either::{Left, Right};
use jiff::civil::Date;
use jiff::tz::TimeZone;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// How records are grouped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Period {
    /// By day in the time zone (`YYYY-MM-DD`).
    #[default]
    Daily,
    /// By week in the time zone, weeks starting on the day given (the row's key is the
    /// week's first day, `YYYY-MM-DD`).
    Weekly(jiff::civil::Weekday),
    /// By month in the time zone (`YYYY-MM`).
    Monthly,
    /// By session file.
    Session,
    /// By model.
    Model,
    /// By billing block, as ccusage's `blocks` groups them: a block starts at the UTC hour
    /// of its first record and lasts five hours ([`BLOCK_MS`]); a record more than five
    /// hours after the block's start or after the record before it starts the next
    /// block, and a pause of more than five hours between two records is a gap row
    /// ([`BlockSpan::gap`]) from five hours after the last record to the next one.
    /// Rows are keyed by their start (ISO 8601, UTC; `gap-` before a gap's).
    Blocks,
}

/// How long a billing block lasts: five hours, in ms.
pub const BLOCK_MS: f64 = 5.0 * 3_600_000.0;

/// When a block row ([`Period::Blocks`]) starts and ends, and whether it is a gap.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockSpan {
    /// The UTC hour of its first record (for a gap: five hours after the record before).
    pub start_ms: f64,
    /// `start_ms` + five hours (for a gap: the next record's time).
    pub end_ms: f64,
    /// A pause with no record, longer than a block.
    pub gap: bool,
}

/// What a block is at a given moment: active or not, how fast it spends, where it is
/// heading, by ccusage's rules.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockState {
    /// It has begun, its last record is less than five hours before now, and its end is
    /// after now.
    pub active: bool,
    /// Input and output tokens per minute between its first and last record (none for a
    /// gap, or when both are at one instant).
    pub tokens_per_minute: Option<f64>,
    /// Dollars per hour over the same minutes.
    pub cost_per_hour: Option<f64>,
    /// For an active block with a rate: minutes left until its end.
    pub remaining_minutes: Option<f64>,
    /// For an active block with a rate: its input and output tokens at its end at that
    /// rate.
    pub projected_tokens: Option<f64>,
    /// For an active block with a rate: its cost at its end at that rate.
    pub projected_cost: Option<f64>,
}

impl Row {
    /// The state of a block row at `now_ms` (Unix ms); `None` for other rows.
    pub fn block_state(&self, now_ms: f64) -> Option<BlockState> {
        let b = self.block?;
        // (ccusage's rule, and the block has begun: records dated after now, from a
        // clock set wrong, do not make a block of the future active.)
        let active = !b.gap && b.start_ms <= now_ms && now_ms - self.last_ms < BLOCK_MS && now_ms < b.end_ms;
        let minutes = (self.last_ms - self.first_ms) / 60_000.0;
        let rate = (!b.gap && self.sums.records > 0 && minutes > 0.0).then(|| {
            let t = &self.sums.tokens;
            (
                t.input.saturating_add(t.output) as f64 / minutes,
                self.sums.cost() / minutes * 60.0,
            )
        });
        let mut st = BlockState {
            active,
            tokens_per_minute: rate.map(|r| r.0),
            cost_per_hour: rate.map(|r| r.1),
            remaining_minutes: None,
            projected_tokens: None,
            projected_cost: None,
        };
        if let (true, Some((tpm, cph))) = (active, rate) {
            let left = ((b.end_ms - now_ms) / 60_000.0).max(0.0);
            let t = &self.sums.tokens;
            st.remaining_minutes = Some(left);
            st.projected_tokens = Some(t.input.saturating_add(t.output) as f64 + tpm * left);
            st.projected_cost = Some(self.sums.cost() + cph / 60.0 * left);
        }
        Some(st)
    }
}

/// One end of the time a report covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// A day in the report's time zone, all of it.
    Day(Date),
    /// An instant, Unix ms (`--since 2d`, `--until "2025-11-01 14:00"`).
    At(f64),
}

impl Bound {
    /// Whether a record of `date` (in the report's zone) at `ms` is not before `self`.
    pub fn admits_after(self, date: Date, ms: f64) -> bool {
        match self {
            Bound::Day(d) => date >= d,
            Bound::At(t) => ms >= t,
        }
    }

    /// Whether a record of `date` at `ms` is not after `self`.
    pub fn admits_before(self, date: Date, ms: f64) -> bool {
        match self {
            Bound::Day(d) => date <= d,
            Bound::At(t) => ms <= t,
        }
    }
}

/// What a report counts and how it groups it.
#[derive(Clone, Debug)]
pub struct Filter {
    /// The grouping.
    pub period: Period,
    /// The time zone of days and months (and of `since`/`until`).
    pub tz: TimeZone,
    /// Only records on or after this day or instant.
    pub since: Option<Bound>,
    /// Only records on or before this day (all of it) or instant.
    pub until: Option<Bound>,
    /// Only sessions started in this folder or below it (the header's `cwd`).
    pub cwd: Option<PathBuf>,
    /// Only the records this session file owns (its path as read).
    pub session: Option<PathBuf>,
    /// Only these sources (empty: all).
    pub sources: Vec<Source>,
    /// Count a record found in several files once (the default), or once per file.
    pub dedup: bool,
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            period: Period::Daily,
            tz: TimeZone::UTC,
            since: None,
            until: None,
            cwd: None,
            session: None,
            sources: Vec::new(),
            dedup: true,
        }
    }
}

/// The most a record's cost counts, in units of 10^-12 dollars.
const MAX_PICO: f64 = 1e30;

/// Sums of records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sums {
    /// Their tokens.
    pub tokens: Tokens,
    /// Their cost in units of 10^-12 dollars: integers, so that a sum is the same in any
    /// order.
    pub cost_pico: i128,
    /// How many.
    pub records: u64,
}

impl Sums {
    /// Add one record: its tokens and its cost in pico-dollars ([`pico`]).
    fn add(&mut self, t: &Tokens, pico: i128) {
        self.tokens.add(t);
        self.cost_pico = self.cost_pico.saturating_add(pico);
        self.records += 1;
    }

    /// Add the sums `o`.
    fn merge(&mut self, o: &Sums) {
        self.tokens.add(&o.tokens);
        self.cost_pico = self.cost_pico.saturating_add(o.cost_pico);
        self.records += o.records;
    }

    /// The cost in dollars.
    pub fn cost(&self) -> f64 {
        self.cost_pico as f64 / 1e12
    }
}

/// A record's cost in units of 10^-12 dollars, as sums count it: at most 10^18 dollars
/// either way (NaN: 0), so that no sum of fewer than 10^8 records saturates, and sums are
/// the same in any order.
fn pico(cost: f64) -> i128 {
    let p = (cost * 1e12).round();
    // (Through i64 where it fits: one instruction, where i128's is a call.)
    if p.abs() < 9.2e18 {
        p as i64 as i128
    } else {
        p.clamp(-MAX_PICO, MAX_PICO) as i128
    }
}

/// One model's part of a row.
#[derive(Clone, Debug, PartialEq)]
pub struct Breakdown {
    /// The provider (`""` where not recorded).
    pub provider: String,
    /// The model (`""` where not recorded: tool and summary records).
    pub model: String,
    /// Its sums.
    pub sums: Sums,
}

/// One row of a report (or its totals).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// The day (`YYYY-MM-DD`), month (`YYYY-MM`), session file path or model; `""` for
    /// the totals.
    pub key: String,
    /// All its records.
    pub sums: Sums,
    /// By source, in [`Source::ALL`] order.
    pub sources: [Sums; 4],
    /// By provider and model, most expensive first (ties by name).
    pub models: Vec<Breakdown>,
    /// The session, in a session report.
    pub session: Option<SessionInfo>,
    /// The block, in a blocks report.
    pub block: Option<BlockSpan>,
    /// Its first and last record's time (Unix ms).
    pub first_ms: f64,
    /// See `first_ms`.
    pub last_ms: f64,
}

/// A report.
#[derive(Debug, Default)]
pub struct Report {
    /// The grouping.
    pub period: Period,
    /// Rows: days and months oldest first, sessions by their last record (oldest first),
    /// models most expensive first.
    pub rows: Vec<Row>,
    /// Everything counted.
    pub totals: Row,
    /// Sessions read.
    pub sessions: usize,
    /// Files that are not sessions (no valid header) or could not be read.
    pub skipped: Vec<SkippedFile>,
    /// Sessions that could not be read to the end (and are not counted).
    pub unreadable: Vec<(PathBuf, String)>,
    /// Records found in all.
    pub records: u64,
    /// Records left out because another file (or an earlier line) holds the same one.
    pub duplicates: u64,
    /// Records placed at their entry's time (no valid time of their own).
    pub time_from_entry: u64,
    /// Records placed at their session header's time.
    pub time_from_header: u64,
    /// Records with no valid time at all: left out.
    pub undated: u64,
    /// Records the filters (dates, cwd, sources) left out.
    pub filtered: u64,
    /// Files whose records came from the cache.
    pub cached: usize,
    /// What went wrong with the cache, once per problem.
    pub cache_warnings: Vec<String>,
}

/// Options of [`collect`].
#[derive(Default)]
pub struct CollectOptions<'a> {
    /// Called as files are read, one call at a time: (files done, files in all).
    pub on_progress: Option<&'a mut (dyn FnMut(usize, usize) + Send + 'a)>,
    /// Checked between files.
    pub cancel: Option<CancelToken>,
    /// mmap or read.
    pub read_mode: ReadMode,
    /// The listing cache: the listing and each file's records are kept there, and an
    /// unchanged file is not read again.
    pub cache: Option<ListingCache>,
}

/// The session files of `roots`, as `search` takes them: a file is one; a folder gives
/// its own `*.jsonl` files (a sessions folder) and those of each folder in it (a sessions
/// root). No file is read. Also the folders that could not be read.
pub fn session_files(roots: &[PathBuf]) -> (Vec<PathBuf>, Vec<(PathBuf, String)>) {
    let w = super::tree::walk(roots, None, false);
    (w.files, w.problems)
}

/// The report of every session in `roots` (files, sessions folders or sessions roots, as
/// `search` takes them). Each file is read once, and only its header and the lines that
/// can hold usage are looked at (`scan.rs`); with a cache, a file that did not change is
/// not read at all.
///
/// ```
/// use pi_session::usage::{self, Filter};
/// let r = usage::collect(&["corpus/demo/sessions".into()], &Filter::default(), &mut Default::default())?;
/// assert!(r.totals.sums.records > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Cancelled`].
pub fn collect(
    roots: &[PathBuf],
    filter: &Filter,
    opts: &mut CollectOptions<'_>,
) -> std::result::Result<Report, Cancelled> {
    // The cache is written while the report is made.
    let (_, (cache_warnings, report)) = read_all(roots, opts, |g, write| rayon::join(write, || g.report(filter)))?;
    Ok(Report {
        cache_warnings,
        ..report
    })
}

/// Every session's header and records, read once for any number of reports
/// ([`Gathered::report`], [`Gathered::statusline`]).
pub struct Gathered {
    /// The sessions whose records were read now.
    read: Vec<(SessionInfo, FileUsage)>,
    /// The usage summary the other sessions' records are kept in.
    summary: Option<super::summary::Summary>,
    /// Each session, in path order: read now or kept.
    held: Vec<Held>,
    /// Who owns each record (found once for any number of reports).
    owned: Owned,
    /// Files that are not sessions (no valid header) or are no regular files.
    pub skipped: Vec<SkippedFile>,
    /// Sessions (and folders) that could not be read.
    pub unreadable: Vec<(PathBuf, String)>,
    /// Files whose records came from the cache.
    pub cached: usize,
    /// What went wrong with the cache, once per problem.
    pub cache_warnings: Vec<String>,
}

/// Where a session's records are: `Gathered::read[i]`, or the summary's file `i`.
#[derive(Clone, Copy, Debug)]
enum Held {
    Read(usize),
    Kept(usize),
}

// (A session read now answers as the slice of those read; one kept, as the summary.)
impl Sessions for Gathered {
    fn sessions(&self) -> usize {
        self.held.len()
    }
    fn info(&self, k: usize) -> &SessionInfo {
        match self.held[k] {
            Held::Read(i) => self.read.as_slice().info(i),
            Held::Kept(i) => self.summary().info(i),
        }
    }
    fn created(&self, k: usize) -> f64 {
        match self.held[k] {
            Held::Read(i) => self.read.as_slice().created(i),
            Held::Kept(i) => self.summary().created(i),
        }
    }
    fn path(&self, k: usize) -> &Path {
        match self.held[k] {
            Held::Read(i) => self.read.as_slice().path(i),
            Held::Kept(i) => self.summary().path(i),
        }
    }
    fn models(&self, k: usize) -> impl Iterator<Item = (&str, &str)> + '_ {
        match self.held[k] {
            Held::Read(i) => Left(self.read.as_slice().models(i)),
            Held::Kept(i) => Right(self.summary().models(i)),
        }
    }
    fn len_of(&self, k: usize) -> usize {
        match self.held[k] {
            Held::Read(i) => self.read.as_slice().len_of(i),
            Held::Kept(i) => self.summary().len_of(i),
        }
    }
    fn records(&self, k: usize) -> impl Iterator<Item = super::Record> + '_ {
        match self.held[k] {
            Held::Read(i) => Left(self.read.as_slice().records(i)),
            Held::Kept(i) => Right(self.summary().records(i)),
        }
    }
    fn record(&self, k: usize, j: usize) -> super::Record {
        match self.held[k] {
            Held::Read(i) => self.read.as_slice().record(i, j),
            Held::Kept(i) => self.summary().record(i, j),
        }
    }
    fn keys(&self, k: usize) -> impl Iterator<Item = [u64; 2]> + '_ {
        match self.held[k] {
            Held::Read(i) => Left(self.read.as_slice().keys(i)),
            Held::Kept(i) => Right(self.summary().keys(i)),
        }
    }
}

impl Gathered {
    fn summary(&self) -> &super::summary::Summary {
        self.summary.as_ref().expect("a session kept in the summary")
    }

    /// Whether the reports made from this can be trusted: not when the usage summary
    /// they count from was cut short by another process after it was read (its bytes
    /// then read as zeros: `source/guard.rs`). Check it after the reports; gather again
    /// when it fails.
    pub fn intact(&self) -> bool {
        self.summary.as_ref().is_none_or(super::summary::Summary::intact)
    }

    /// The sessions read, in path order.
    pub fn sessions(&self) -> impl Iterator<Item = &SessionInfo> + '_ {
        (0..self.held.len()).map(|k| Sessions::info(self, k))
    }

    /// The report of the records read, by `filter`.
    pub fn report(&self, filter: &Filter) -> Report {
        let mut report = report_in_runs(self, &self.owned, filter, MIN_RUN);
        report.skipped.clone_from(&self.skipped);
        report.unreadable.clone_from(&self.unreadable);
        report.cached = self.cached;
        report.cache_warnings.clone_from(&self.cache_warnings);
        report
    }
}

/// [`collect`]'s reading, for any number of reports: every session of `roots` (as
/// [`collect`] takes them), through the cache when there is one (which is written before
/// this returns).
///
/// # Errors
/// [`Cancelled`].
pub fn gather(roots: &[PathBuf], opts: &mut CollectOptions<'_>) -> std::result::Result<Gathered, Cancelled> {
    let (mut g, warnings) = read_all(roots, opts, |_, write| write())?;
    g.cache_warnings = warnings;
    Ok(g)
}

/// The cache's write after a read, to be run once: its warnings.
type CacheWrite<'a> = Box<dyn FnOnce() -> Vec<String> + Send + 'a>;

/// Read every session of `roots`, then `then` with what was read and the write of the
/// cache (left to it, so that it can run beside a report).
fn read_all<R>(
    roots: &[PathBuf],
    opts: &mut CollectOptions<'_>,
    then: impl Fn(&Gathered, CacheWrite<'_>) -> R,
) -> std::result::Result<(Gathered, R), Cancelled> {
    let (g, r) = read_all_once(roots, opts, true, &then)?;
    // (A summary another process cut short while it was read reads as zeros somewhere:
    // nothing counted from it stands, and it was not written over.)
    if g.summary.as_ref().is_some_and(|s| !s.intact()) {
        return read_all_once(roots, opts, false, &then);
    }
    Ok((g, r))
}

/// [`read_all`], with the usage summary or without it.
fn read_all_once<R>(
    roots: &[PathBuf],
    opts: &mut CollectOptions<'_>,
    use_summary: bool,
    then: &impl Fn(&Gathered, CacheWrite<'_>) -> R,
) -> std::result::Result<(Gathered, R), Cancelled> {
    use super::summary::{Entry, FolderEntry, Summary, Unusable};
    use rayon::prelude::*;
    let cache = opts.cache.as_ref();
    // The usage summary of the folders among the roots (sessions named on their own are
    // read each time, and not kept in it).
    let dirs: Vec<PathBuf> = roots.iter().filter(|r| r.is_dir()).cloned().collect();
    let summary_file = cache
        .filter(|_| !dirs.is_empty() && use_summary)
        .map(|c| super::summary::file_of(c.dir(), &dirs));
    let (mut summary, summary_problem) = match summary_file.as_deref().map(Summary::load) {
        Some(Ok(s)) => (Some(s), None),
        Some(Err(Unusable::Damaged(w))) => (None, Some(w)),
        Some(Err(Unusable::Missing)) | None => (None, None),
    };
    // The files, with a `stat` each when a summary may vouch for them; the names of the
    // folders it vouches for taken from it.
    let memo = |d: &Path, st: &Stamp| summary.as_ref().and_then(|s| s.folder(d, st));
    let walk = super::tree::walk(
        roots,
        summary.is_some().then_some(&memo as super::tree::Memo<'_>),
        summary.is_some(),
    );
    let (paths, problems, folders) = (walk.files, walk.problems, walk.folders);
    // (No summary of roots some of whose folders could not be read.)
    let summary_file = summary_file.filter(|_| problems.is_empty());
    if !problems.is_empty() {
        summary = None;
    }
    let total = paths.len();
    // The files the summary vouches for.
    let kept: Vec<Option<usize>> = match &summary {
        Some(s) => s
            .find(&paths)
            .into_iter()
            .zip(walk.stamps)
            .map(|(i, now)| {
                let f = s.file(i?);
                (f.trusted && now == Some(f.stamp)).then_some(i?)
            })
            .collect(),
        None => vec![None; total],
    };
    // The others are read (through the per-folder cache).
    let need: Vec<usize> = (0..total).filter(|&i| kept[i].is_none()).collect();
    let need_paths: Vec<PathBuf> = need.iter().map(|&i| paths[i].clone()).collect();
    let done = AtomicUsize::new(total - need.len());
    let progress = std::sync::Mutex::new(opts.on_progress.take());
    let cancel = opts.cancel.clone();
    let stored = cache.map(|c| super::store::Stored::load(c.dir(), &need_paths));
    let read_mode = opts.read_mode;
    let results: Vec<Option<(Result<super::store::Scanned>, super::store::Outcome)>> = need_paths
        .par_iter()
        .enumerate()
        .with_max_len(16)
        .map(|(i, p)| {
            if cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
                return None;
            }
            let mut r =
                super::store::scan_file(p, read_mode, stored.as_ref().and_then(|st| st.get(i)), stored.is_some());
            // (Its stored records may have read as zeros: read without them.)
            if stored.as_ref().is_some_and(|st| !st.intact(i)) {
                r = super::store::scan_file(p, read_mode, None, true);
            }
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            if (n.is_multiple_of(64) || n == total)
                && let Ok(mut g) = progress.lock()
                && let Some(cb) = g.as_mut()
            {
                cb(n, total);
            }
            Some(r)
        })
        .collect();
    opts.on_progress = progress.into_inner().ok().flatten();
    if results.iter().any(Option::is_none) {
        return Err(Cancelled);
    }
    let mut read = Vec::with_capacity(need.len());
    let mut held = Vec::with_capacity(total);
    let mut skipped = Vec::new();
    let mut unreadable: Vec<(PathBuf, String)> = problems;
    let mut outcomes = Vec::with_capacity(need.len());
    // What the summary will hold of each path read now (none: unreadable): the stamp its
    // records were read under and the session's place in `read`.
    let mut fresh: Vec<Option<(Option<Stamp>, Option<usize>)>> = vec![None; total];
    let mut cached = total - need.len();
    let mut results = results.into_iter().flatten();
    for (i, p) in paths.iter().enumerate() {
        if let Some(s) = kept[i] {
            match summary.as_ref().map(|x| x.is_session(s)) {
                Some(true) => held.push(Held::Kept(s)),
                _ => skipped.push(SkippedFile {
                    path: p.clone(),
                    reason: crate::listing::SkipFileReason::NotSession,
                }),
            }
            continue;
        }
        let (scanned, outcome) = results.next().expect("a result per file read");
        cached += usize::from(matches!(outcome, super::store::Outcome::Reused));
        let stamp = match &outcome {
            super::store::Outcome::Built(stamp, _) => Some(*stamp),
            super::store::Outcome::Reused => stored.as_ref().and_then(|st| st.get(outcomes.len())).map(|(s, _)| s),
            super::store::Outcome::Dropped => None,
        };
        outcomes.push(outcome);
        match scanned {
            Ok(Some((h, u))) => {
                fresh[i] = Some((stamp, Some(read.len())));
                held.push(Held::Read(read.len()));
                read.push((info(p, h), u));
            }
            Ok(None) => {
                fresh[i] = Some((stamp, None));
                skipped.push(SkippedFile {
                    path: p.clone(),
                    reason: crate::listing::SkipFileReason::NotSession,
                });
            }
            // What is no regular file (a FIFO, a socket, a device, a dangling link) is
            // passed over as `ls` and `search` pass it over (an error when named, as a file
            // that is no session is).
            Err(_) if !std::fs::metadata(p).is_ok_and(|m| m.is_file()) => {
                let why = match std::fs::metadata(p) {
                    Ok(m) => crate::source::regular(&m).err(),
                    Err(e) => Some(e),
                };
                if let Some(why) = why {
                    skipped.push(SkippedFile {
                        path: p.clone(),
                        reason: crate::listing::SkipFileReason::io(&why),
                    });
                }
            }
            Err(e) => unreadable.push((p.clone(), chain(&e))),
        }
    }
    let mut g = Gathered {
        read,
        summary,
        held,
        owned: Owned::default(),
        skipped,
        unreadable,
        cached,
        cache_warnings: Vec::new(),
    };
    g.owned = match &g.summary {
        Some(s) => {
            let kept_of: Vec<Option<usize>> = g
                .held
                .iter()
                .map(|h| match h {
                    Held::Kept(i) => Some(*i),
                    Held::Read(_) => None,
                })
                .collect();
            super::summary::owned_with(&g, s, &kept_of)
        }
        None => Owned::of(&g),
    };
    let g_ref = &g;
    let write: CacheWrite<'_> = Box::new(move || {
        let mut warnings = Vec::new();
        let (Some(st), Some(c)) = (stored, cache) else {
            return warnings;
        };
        let racy_before = c.racy_before();
        let encode = |j: usize| {
            let i = need[j];
            super::store::encode_file(
                fresh[i]
                    .and_then(|(_, r)| r)
                    .map(|r| (&g_ref.read[r].0, &g_ref.read[r].1)),
            )
        };
        warnings.extend(st.write(c.dir(), outcomes, encode, racy_before));
        let Some(file) = summary_file else {
            return warnings;
        };
        // The summary anew, when what it would hold differs from what it holds.
        let in_dirs = |p: &Path| {
            let parent = p.parent();
            dirs.iter()
                .any(|d| parent == Some(d.as_path()) || parent.and_then(Path::parent) == Some(d.as_path()))
        };
        // (The per-folder caches' rule: a stamp whose ctime is within the racy window of
        // now cannot vouch for the bytes read under it.)
        let trusted = |s: Stamp| s.ctime_ns() <= racy_before;
        let mut entries: Vec<(&Path, Entry<'_>)> = Vec::with_capacity(total);
        for (i, p) in paths.iter().enumerate() {
            if let Some(s) = kept[i] {
                entries.push((p, Entry::Kept(s)));
            } else if let Some((Some(stamp), r)) = fresh[i]
                && in_dirs(p)
            {
                let s = r.map(|r| (&g_ref.read[r].0, &g_ref.read[r].1));
                entries.push((p, Entry::Read(stamp, trusted(stamp), s)));
            }
        }
        // (A folder's times move in clock ticks, and making an entry need not change its
        // size: one changed within a tick of being listed could keep its stamp. So it
        // vouches for its names only once its ctime is past by more than a tick, whatever
        // the racy window.)
        let folders_before = racy_before.min(crate::source::now_ns() - FOLDER_SETTLE_NS);
        let mut folders: Vec<FolderEntry<'_>> = folders
            .iter()
            .map(|(d, stamp)| FolderEntry {
                path: d,
                stamp: *stamp,
                trusted: stamp.ctime_ns() <= folders_before,
                names: Vec::new(),
            })
            .collect();
        // (A file or folder read now whose stamp vouches for it, or whose stored one did,
        // is news; one racy then and now is not.)
        let changed = match &g_ref.summary {
            None => true,
            Some(old) => {
                entries.len() != old.len()
                    || entries.iter().enumerate().any(|(i, (p, e))| {
                        p.as_os_str() != old.path(i).as_os_str()
                            || match e {
                                Entry::Kept(_) => false,
                                Entry::Read(_, now, _) => *now || old.file(i).trusted,
                            }
                    })
                    || folders.len() != old.folders()
                    || folders.iter().any(|f| match old.folder_stamp(f.path) {
                        None => true,
                        Some((stamp, was)) => (stamp, was) != (f.stamp, f.trusted) && (f.trusted || was),
                    })
            }
        };
        if changed {
            // The folders' names (`paths` holds each folder's files together).
            let mut names: HashMap<&Path, Vec<&[u8]>, ahash::RandomState> = HashMap::default();
            for p in &paths {
                if let (Some(d), Some(n)) = (p.parent(), p.file_name()) {
                    names.entry(d).or_default().push(n.as_encoded_bytes());
                }
            }
            for f in &mut folders {
                f.names = names.remove(f.path).unwrap_or_default();
            }
            let pieces = super::summary::encode(&dirs, &entries, &folders, g_ref.summary.as_ref(), &g_ref.owned.dup);
            // (Records kept from a summary cut short meanwhile may be zeros: not written.)
            let wrote = if g_ref.summary.as_ref().is_some_and(|s| !s.intact()) {
                Ok(false)
            } else {
                crate::store::write_atomically(c.dir(), &file, &pieces).map(|()| true)
            };
            let what = format!("the usage summary in {}", c.dir().display());
            warnings.extend(crate::store::cache_warning(
                summary_problem.as_deref(),
                wrote.as_ref().copied(),
                &what,
                "reported without it",
            ));
        } else if let Some(p) = summary_problem {
            warnings.push(p);
        }
        warnings
    });
    let r = then(&g, write);
    Ok((g, r))
}

/// An error with its causes, `: `-separated (each said once).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let t = c.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        cause = c.source();
    }
    out
}

/// Whether a session was started in `dir` or a folder below it.
fn cwd_within(s: &SessionInfo, dir: &Path) -> bool {
    Path::new(&*s.cwd.to_str_lossy()).starts_with(dir)
}

/// The first day of the week of `date`, weeks starting on `start`.
pub(crate) fn week_of(date: Date, start: jiff::civil::Weekday) -> Date {
    let back = (date.weekday().to_monday_zero_offset() - start.to_monday_zero_offset()).rem_euclid(7);
    // (A date within six days of jiff's first day has no week start before it: itself.)
    date.checked_sub(jiff::Span::new().days(back)).unwrap_or(date)
}

/// What a row is of.
#[derive(Clone, PartialEq, Eq, Hash)]
enum RowKey {
    Day(Date),
    Month(i16, i8),
    /// A file, by its place in the (sorted) list.
    File(usize),
    Model(String),
}

/// Days in a time zone, remembered one at a time: records come in time order within a
/// file, so most fall in the day of the one before.
struct Days<'z> {
    tz: &'z TimeZone,
    /// The last day found and its bounds (Unix ms, `[start, end)`).
    last: Option<(i64, i64, Date)>,
}

impl Days<'_> {
    fn date(&mut self, ms: f64) -> Option<Date> {
        let ms = ms.floor() as i64;
        if let Some((start, end, d)) = self.last
            && start <= ms
            && ms < end
        {
            return Some(d);
        }
        let t = jiff::Timestamp::from_millisecond(ms).ok()?;
        let d = t.to_zoned_datetime(self.tz.clone()).date();
        let bound =
            |d: Date| -> Option<i64> { Some(d.to_zoned_datetime(self.tz.clone()).ok()?.timestamp().as_millisecond()) };
        match (bound(d), d.tomorrow().ok().and_then(bound)) {
            (Some(s), Some(e)) => self.last = Some((s, e, d)),
            _ => self.last = None,
        }
        Some(d)
    }
}

/// The report of `files` (each session with its records): who owns each record, the
/// filters, the grouping. The pure part of [`collect`].
pub fn report_files(files: Vec<(SessionInfo, FileUsage)>, filter: &Filter) -> Report {
    let files = files.as_slice();
    report_in_runs(files, &Owned::of(files), filter, MIN_RUN)
}

/// The report of `files` whose owners are `owned`, its parts each of at least `min_run`
/// files (the result is the same for any: the twin's check holds one file a part against
/// one part).
pub(crate) fn report_in_runs<S: Sessions + ?Sized>(
    files: &S,
    owned: &Owned,
    filter: &Filter,
    min_run: usize,
) -> Report {
    let order = &owned.order;
    let mut r = Report {
        period: filter.period,
        sessions: files.sessions(),
        ..Report::default()
    };
    let no_dup: Vec<bool> = Vec::new();
    let dup = if filter.dedup { &owned.dup } else { &no_dup };
    // Models by a number of their own: (provider, model) pairs, each file's models'
    // numbers, and each row's sums per model number (names are put in at the end).
    let mut model_ids: HashMap<(&str, &str), u32, ahash::RandomState> = HashMap::default();
    let mut model_names: Vec<(&str, &str)> = Vec::new();
    let ids: Vec<Vec<u32>> = (0..files.sessions())
        .map(|k| {
            files
                .models(k)
                .map(|pm| {
                    *model_ids.entry(pm).or_insert_with(|| {
                        model_names.push(pm);
                        (model_names.len() - 1) as u32
                    })
                })
                .collect()
        })
        .collect();
    // The files in runs of the owners' order, each run's records counted on its own and
    // the parts added up in order: every sum is of integers, every bound a min or max, and
    // a blocks report's records keep the owners' order, so the report is the one a single
    // pass makes.
    let n = files.sessions();
    let run = (n / (rayon::current_num_threads() * 4)).clamp(min_run.max(1), min_run.max(n).max(1));
    let parts: Vec<Part> = {
        use rayon::prelude::*;
        order
            .par_chunks(run)
            .map(|c| {
                let mut p = Part::empty();
                p.count(files, c, &owned.start, dup, &ids, filter);
                p
            })
            .collect()
    };
    let mut parts = parts.into_iter();
    let mut all = parts.next().unwrap_or_else(Part::empty);
    for p in parts {
        all.absorb(p);
    }
    r.records = all.records;
    r.duplicates = all.duplicates;
    r.time_from_entry = all.time_from_entry;
    r.time_from_header = all.time_from_header;
    r.undated = all.undated;
    r.filtered = all.filtered;
    let (mut rows, mut per_model, mut totals, mut total_models) =
        (all.rows, all.per_model, all.totals, all.total_models);
    let timeline = all.timeline;
    if filter.period == Period::Blocks {
        (rows, per_model) = blocks(files, &ids, timeline);
    } else {
        // Every record counted is in one row: the totals are the rows' (added up once
        // here instead of record by record).
        for (row, models) in rows.iter().zip(&per_model) {
            merge_row(&mut totals, row);
            merge_models(&mut total_models, models);
        }
    }
    let named = |models: Vec<(u32, Sums)>| -> Vec<Breakdown> {
        models
            .into_iter()
            .map(|(id, sums)| {
                let (provider, model) = model_names[id as usize];
                Breakdown {
                    provider: provider.to_string(),
                    model: model.to_string(),
                    sums,
                }
            })
            .collect()
    };
    for (row, models) in rows.iter_mut().zip(per_model) {
        row.models = named(models);
    }
    totals.models = named(total_models);
    for row in rows.iter_mut().chain(std::iter::once(&mut totals)) {
        sort_models(&mut row.models);
    }
    match filter.period {
        Period::Daily | Period::Weekly(_) | Period::Monthly => rows.sort_by(|a, b| a.key.cmp(&b.key)),
        Period::Session => rows.sort_by(|a, b| a.last_ms.total_cmp(&b.last_ms).then_with(|| a.key.cmp(&b.key))),
        // (Made in time order.)
        Period::Blocks => {}
        Period::Model => rows.sort_by(|a, b| b.sums.cost_pico.cmp(&a.sums.cost_pico).then_with(|| a.key.cmp(&b.key))),
    }
    if totals.sums.records == 0 {
        totals.first_ms = f64::NAN;
        totals.last_ms = f64::NAN;
    }
    r.rows = rows;
    r.totals = totals;
    r
}

/// How long after its last change a folder's stamp vouches for its names at the least
/// (100 ms: clock ticks are at most 10 ms).
const FOLDER_SETTLE_NS: i128 = 100_000_000;

/// The fewest files a part of a report counts (the twin's check also counts one file a
/// part, and all in one, and holds the two reports to each other: [`report_in_runs`]).
const MIN_RUN: usize = 64;

/// What a run of files, in the owners' order, adds to a report.
#[derive(Default)]
struct Part {
    /// Rows, found by key; records of one file mostly fall in the row of the one before.
    rows: Vec<Row>,
    keys: Vec<RowKey>,
    index: HashMap<RowKey, usize, ahash::RandomState>,
    per_model: Vec<Vec<(u32, Sums)>>,
    totals: Row,
    total_models: Vec<(u32, Sums)>,
    /// The records counted, in a blocks report: time, session, record in the session.
    timeline: Vec<(f64, u32, u32)>,
    records: u64,
    duplicates: u64,
    time_from_entry: u64,
    time_from_header: u64,
    undated: u64,
    filtered: u64,
}

impl Part {
    /// Nothing counted (the totals' bounds as a row's start: none yet).
    fn empty() -> Part {
        Part {
            totals: Row {
                first_ms: f64::INFINITY,
                last_ms: f64::NEG_INFINITY,
                ..Row::default()
            },
            ..Part::default()
        }
    }

    /// Count the records of the files `run` (indexes into `files`, in the owners' order);
    /// `start`: where each file's records start as `dup` numbers them; `ids`: each file's
    /// models' numbers.
    fn count<S: Sessions + ?Sized>(
        &mut self,
        files: &S,
        run: &[usize],
        start: &[usize],
        dup: &[bool],
        ids: &[Vec<u32>],
        filter: &Filter,
    ) {
        let mut last: Option<(RowKey, usize)> = None;
        let mut days = Days {
            tz: &filter.tz,
            last: None,
        };
        for &k in run {
            // (A session's header is decoded only when a filter or a row needs it.)
            let in_cwd = filter.cwd.as_deref().is_none_or(|d| cwd_within(files.info(k), d))
                && filter.session.as_ref().is_none_or(|p| p == files.path(k));
            let ids = &ids[k];
            let dup = dup.get(start[k]..start[k + 1]).unwrap_or(&[]);
            for (j, rec) in files.records(k).enumerate() {
                self.records += 1;
                if dup.get(j).copied().unwrap_or(false) {
                    self.duplicates += 1;
                    continue;
                }
                match rec.time.from {
                    TimeFrom::Record => {}
                    TimeFrom::Entry => self.time_from_entry += 1,
                    TimeFrom::Header => self.time_from_header += 1,
                    TimeFrom::None => {
                        self.undated += 1;
                        continue;
                    }
                }
                let Some(date) = days.date(rec.time.ms) else {
                    self.undated += 1;
                    continue;
                };
                let wanted = in_cwd
                    && (filter.sources.is_empty() || filter.sources.contains(&rec.source))
                    && filter.since.is_none_or(|b| b.admits_after(date, rec.time.ms))
                    && filter.until.is_none_or(|b| b.admits_before(date, rec.time.ms));
                if !wanted {
                    self.filtered += 1;
                    continue;
                }
                let model_id = ids.get(rec.model as usize).copied();
                let pico = pico(rec.cost);
                let key = match filter.period {
                    Period::Daily => RowKey::Day(date),
                    Period::Weekly(start) => RowKey::Day(week_of(date, start)),
                    Period::Monthly => RowKey::Month(date.year(), date.month()),
                    Period::Session => RowKey::File(k),
                    Period::Model => {
                        let model = files.models(k).nth(rec.model as usize).map_or("", |(_, m)| m);
                        RowKey::Model(model.to_string())
                    }
                    Period::Blocks => {
                        // Rows are made once every record is in (`blocks`).
                        self.timeline.push((rec.time.ms, k as u32, j as u32));
                        add(&mut self.totals, &mut self.total_models, &rec, pico, model_id);
                        continue;
                    }
                };
                let at = match &last {
                    Some((k, at)) if *k == key => *at,
                    _ => {
                        let at = self.row(&key, || Row {
                            key: match &key {
                                RowKey::Day(d) => d.to_string(),
                                RowKey::Month(y, m) => format!("{y:04}-{m:02}"),
                                RowKey::File(_) => files.path(k).to_string_lossy().into_owned(),
                                RowKey::Model(m) => m.clone(),
                            },
                            session: (filter.period == Period::Session).then(|| files.info(k).clone()),
                            first_ms: f64::INFINITY,
                            last_ms: f64::NEG_INFINITY,
                            ..Row::default()
                        });
                        last = Some((key, at));
                        at
                    }
                };
                add(&mut self.rows[at], &mut self.per_model[at], &rec, pico, model_id);
            }
        }
    }

    /// The row of `key`, made by `new` when there is none.
    fn row(&mut self, key: &RowKey, new: impl FnOnce() -> Row) -> usize {
        if let Some(&at) = self.index.get(key) {
            return at;
        }
        self.rows.push(new());
        self.keys.push(key.clone());
        self.per_model.push(Vec::new());
        self.index.insert(key.clone(), self.rows.len() - 1);
        self.rows.len() - 1
    }

    /// Add the part that follows this one in the owners' order.
    fn absorb(&mut self, o: Part) {
        for ((key, row), models) in o.keys.into_iter().zip(o.rows).zip(o.per_model) {
            match self.index.get(&key) {
                Some(&at) => {
                    merge_row(&mut self.rows[at], &row);
                    merge_models(&mut self.per_model[at], &models);
                }
                None => {
                    self.index.insert(key.clone(), self.rows.len());
                    self.keys.push(key);
                    self.rows.push(row);
                    self.per_model.push(models);
                }
            }
        }
        merge_row(&mut self.totals, &o.totals);
        merge_models(&mut self.total_models, &o.total_models);
        self.timeline.extend(o.timeline);
        self.records += o.records;
        self.duplicates += o.duplicates;
        self.time_from_entry += o.time_from_entry;
        self.time_from_header += o.time_from_header;
        self.undated += o.undated;
        self.filtered += o.filtered;
    }
}

/// Add row `b`'s sums and bounds to row `a`'s.
fn merge_row(a: &mut Row, b: &Row) {
    a.sums.merge(&b.sums);
    for (x, y) in a.sources.iter_mut().zip(&b.sources) {
        x.merge(y);
    }
    a.first_ms = a.first_ms.min(b.first_ms);
    a.last_ms = a.last_ms.max(b.last_ms);
}

/// Add sums per model `b` to `a`.
fn merge_models(a: &mut Vec<(u32, Sums)>, b: &[(u32, Sums)]) {
    for (id, sums) in b {
        match a.iter_mut().find(|(m, _)| m == id) {
            Some((_, s)) => s.merge(sums),
            None => a.push((*id, *sums)),
        }
    }
}

/// Add a record to a row and to its sums per model.
fn add(row: &mut Row, models: &mut Vec<(u32, Sums)>, rec: &super::Record, pico: i128, model_id: Option<u32>) {
    row.sums.add(&rec.tokens, pico);
    row.sources[rec.source.code() as usize].add(&rec.tokens, pico);
    row.first_ms = row.first_ms.min(rec.time.ms);
    row.last_ms = row.last_ms.max(rec.time.ms);
    if let Some(id) = model_id {
        match models.iter_mut().find(|(m, _)| *m == id) {
            Some((_, sums)) => sums.add(&rec.tokens, pico),
            None => {
                let mut sums = Sums::default();
                sums.add(&rec.tokens, pico);
                models.push((id, sums));
            }
        }
    }
}

/// The billing blocks of the counted records ([`Period::Blocks`]): rows in time order,
/// gaps included, and each row's sums per model.
fn blocks<S: Sessions + ?Sized>(
    files: &S,
    ids: &[Vec<u32>],
    mut timeline: Vec<(f64, u32, u32)>,
) -> (Vec<Row>, Vec<Vec<(u32, Sums)>>) {
    // (Stable: records at one instant keep the owners' order; sums do not depend on it.)
    timeline.sort_by(|a, b| a.0.total_cmp(&b.0));
    let hour = |ms: f64| (ms.floor() / 3_600_000.0).floor() * 3_600_000.0;
    let open = |start: f64| Row {
        key: crate::js::time::iso_from_ms(start).unwrap_or_default(),
        block: Some(BlockSpan {
            start_ms: start,
            end_ms: start + BLOCK_MS,
            gap: false,
        }),
        first_ms: f64::INFINITY,
        last_ms: f64::NEG_INFINITY,
        ..Row::default()
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut per_model: Vec<Vec<(u32, Sums)>> = Vec::new();
    for (ms, k, j) in timeline {
        let (k, j) = (k as usize, j as usize);
        let next = match rows.last() {
            None => true,
            Some(r) => {
                let start = r.block.map_or(ms, |b| b.start_ms);
                ms - start > BLOCK_MS || ms - r.last_ms > BLOCK_MS
            }
        };
        if next {
            if let Some(last) = rows.last().map(|r| r.last_ms)
                && ms - last > BLOCK_MS
            {
                rows.push(Row {
                    key: format!(
                        "gap-{}",
                        crate::js::time::iso_from_ms(last + BLOCK_MS).unwrap_or_default()
                    ),
                    block: Some(BlockSpan {
                        start_ms: last + BLOCK_MS,
                        end_ms: ms,
                        gap: true,
                    }),
                    first_ms: f64::NAN,
                    last_ms: f64::NAN,
                    ..Row::default()
                });
                per_model.push(Vec::new());
            }
            rows.push(open(hour(ms)));
            per_model.push(Vec::new());
        }
        let at = rows.len() - 1;
        let rec = files.record(k, j);
        let model_id = ids[k].get(rec.model as usize).copied();
        add(&mut rows[at], &mut per_model[at], &rec, pico(rec.cost), model_id);
    }
    (rows, per_model)
}

fn sort_models(m: &mut [Breakdown]) {
    m.sort_by(|a, b| {
        b.sums
            .cost_pico
            .cmp(&a.sums.cost_pico)
            .then_with(|| (&a.provider, &a.model).cmp(&(&b.provider, &b.model)))
    });
}

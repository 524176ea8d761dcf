//! Many files: which sessions a search covers (the listing, with its cache) and the
//! parallel run over them, results handed over in the order given.

use super::store::{FolderMaps, Outcome};
use super::{FileOptions, Hit, Query, search_path_mapped, search_path_with_id};
use crate::error::Result;
use crate::listing::{
    self, CancelToken, Cancelled, ListOptions, ListingCache, SessionInfo, SkipFileReason, SkippedFile,
};
use crate::source::ReadMode;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Options of a search over many files.
#[derive(Default)]
pub struct SearchOptions<'a> {
    /// Called after every file, one call at a time: (files done, files in all).
    pub on_progress: Option<&'a mut (dyn FnMut(usize, usize) + Send + 'a)>,
    /// Checked between files.
    pub cancel: Option<CancelToken>,
    /// mmap or read.
    pub read_mode: ReadMode,
    /// Worker threads (default: rayon's thread count, `RAYON_NUM_THREADS` or the CPUs).
    pub threads: Option<usize>,
    /// Where the search maps of files are kept between searches (the listing cache's
    /// folder): a file that did not change is then searched without being indexed, and
    /// only the bytes of its searched strings are scanned. `None`: every file is indexed.
    pub cache: Option<ListingCache>,
}

/// What a search over many files did with its cache.
#[derive(Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchReport {
    /// Files searched through their stored map.
    pub maps_reused: usize,
    /// Files whose map was built (and stored, unless the file changed too recently).
    pub maps_built: usize,
    /// What went wrong with the cache, once per problem (the search is right all the same).
    pub cache_warnings: Vec<String>,
}

/// The search cache of the folders of `paths`: the folders' caches, and each path's
/// folder (an index into them) and file name.
struct Maps<'p> {
    folders: Vec<FolderMaps>,
    of: Vec<(usize, &'p [u8])>,
}

impl<'p> Maps<'p> {
    fn load(dir: &std::path::Path, paths: &'p [PathBuf]) -> Maps<'p> {
        let (folders, of) = super::store::by_folder(dir, paths, &super::store::SEARCH_MAPS);
        Maps { folders, of }
    }

    fn stored(&self, i: usize) -> Option<(crate::source::Stamp, &[u8])> {
        let (k, name) = self.of[i];
        self.folders[k].get(name)
    }

    /// Whether the cache file of path `i`'s folder is still as it was loaded.
    fn intact(&self, i: usize) -> bool {
        self.folders[self.of[i].0].intact()
    }

    /// Write each folder's cache anew where a map was built or dropped.
    fn write(
        &self,
        dir: &std::path::Path,
        outcomes: Vec<Option<Outcome>>,
        racy_before: i128,
        report: &mut SearchReport,
    ) {
        let mut per: Vec<Vec<(&[u8], Outcome)>> = (0..self.folders.len()).map(|_| Vec::new()).collect();
        for (i, o) in outcomes.into_iter().enumerate() {
            if let Some(o) = o {
                match o {
                    Outcome::Reused => report.maps_reused += 1,
                    Outcome::Built(..) => report.maps_built += 1,
                    Outcome::Dropped => {}
                }
                per[self.of[i].0].push((self.of[i].1, o));
            }
        }
        let what = format!("the search cache in {}", dir.display());
        for (f, outcomes) in self.folders.iter().zip(per) {
            let wrote = f.write(dir, &outcomes, racy_before);
            let w = crate::store::cache_warning(
                f.warning.as_deref(),
                wrote.as_ref().copied(),
                &what,
                "searched without it",
            );
            if let Some(w) = w
                && !report.cache_warnings.contains(&w)
            {
                report.cache_warnings.push(w);
            }
        }
    }
}

/// One file's result.
#[derive(Debug)]
pub struct FileHits {
    /// Its place in the list searched.
    pub index: usize,
    /// The file.
    pub path: PathBuf,
    /// Its hits, in file order, or why it could not be searched.
    pub result: Result<Vec<Hit>>,
    /// The `id` of the header of the bytes searched, when there are hits: the session the
    /// hits are in, which is not the one listed when the file was replaced since.
    pub session_id: Option<String>,
}

/// Search `paths` in parallel; `sink` gets each file's result in the order of `paths`
/// (whatever order the workers finish in) and may stop the search early with
/// `ControlFlow::Break`. The files are searched on rayon's global pool: work the sink
/// gives that pool waits until the search is done.
///
/// # Errors
/// [`Cancelled`] when the token in `opts` was cancelled.
pub fn search_paths(
    paths: &[PathBuf],
    q: &Query,
    opts: &mut SearchOptions<'_>,
    mut sink: impl FnMut(FileHits) -> ControlFlow<()>,
) -> std::result::Result<SearchReport, Cancelled> {
    let total = paths.len();
    let racy_before = opts.cache.as_ref().map_or(0, ListingCache::racy_before);
    let maps = opts.cache.as_ref().map(|c| Maps::load(c.dir(), paths));
    let mut outcomes: Vec<Option<Outcome>> = Vec::new();
    if maps.is_some() {
        outcomes.resize_with(total, || None);
    }
    let workers = opts
        .threads
        .unwrap_or_else(rayon::current_num_threads)
        .clamp(1, total.max(1));
    // Files a worker takes at a time: up to 16, while each worker still gets 8 turns.
    let batch = (total / (workers * 8)).clamp(1, 16);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let cancel = opts.cancel.clone();
    let cancelled = || cancel.as_ref().is_some_and(CancelToken::is_cancelled);
    let fo = FileOptions {
        read_mode: opts.read_mode,
    };
    let delivered = std::thread::scope(|scope| {
        // Unbounded: a worker never waits for the receiver. (With a bounded channel, a sink
        // that used rayon itself deadlocked: the pool's threads waited to send while the
        // sink waited for the pool.)
        let (tx, rx) = std::sync::mpsc::channel::<Vec<(FileHits, Option<Outcome>)>>();
        // The workers run on rayon's pool, so that a file's own parallel indexing runs on
        // the same threads instead of waking others (which yielded and spun: 7% of a run).
        let (next, stop) = (&next, &stop);
        let cancelled = &cancelled;
        let maps = maps.as_ref();
        scope.spawn(move || {
            rayon::scope(|pool| {
                for _ in 0..workers {
                    let tx = tx.clone();
                    pool.spawn(move |_| {
                        loop {
                            // A few files at a time, sent together: a send per file woke the
                            // receiver 10,000 times.
                            let first = next.fetch_add(batch, Ordering::Relaxed);
                            let mut done = Vec::with_capacity(batch);
                            for (i, path) in paths.iter().enumerate().skip(first).take(batch) {
                                if stop.load(Ordering::Relaxed) || cancelled() {
                                    break;
                                }
                                let (result, outcome) = match maps {
                                    Some(m) => {
                                        let (r, o) = search_path_mapped(path, q, fo, m.stored(i));
                                        if m.intact(i) {
                                            (r, Some(o))
                                        } else {
                                            // (Its map may have read as zeros: searched
                                            // without it.)
                                            (search_path_with_id(path, q, fo), Some(Outcome::Dropped))
                                        }
                                    }
                                    None => (search_path_with_id(path, q, fo), None),
                                };
                                let (result, session_id) = match result {
                                    Ok((h, id)) if !h.is_empty() => (Ok(h), id),
                                    Ok((h, _)) => (Ok(h), None),
                                    Err(e) => (Err(e), None),
                                };
                                let hits = FileHits {
                                    index: i,
                                    path: path.clone(),
                                    result,
                                    session_id,
                                };
                                done.push((hits, outcome));
                            }
                            let full = done.len() == batch;
                            if (!done.is_empty() && tx.send(done).is_err()) || !full {
                                break;
                            }
                        }
                    });
                }
                drop(tx);
            });
        });
        let mut waiting = BTreeMap::new();
        let mut want = 0;
        let mut done = 0;
        'receive: for batch in rx {
            for (r, outcome) in batch {
                if let Some(o) = outcome {
                    outcomes[r.index] = Some(o);
                }
                done += 1;
                if let Some(p) = opts.on_progress.as_mut() {
                    p(done, total);
                }
                waiting.insert(r.index, r);
                while let Some(r) = waiting.remove(&want) {
                    want += 1;
                    if !stop.load(Ordering::Relaxed) && sink(r).is_break() {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                if stop.load(Ordering::Relaxed) {
                    break 'receive;
                }
            }
        }
        // Dropping the receiver ends the workers at their next send.
        want
    });
    let mut report = SearchReport::default();
    if let (Some(m), Some(c)) = (&maps, &opts.cache) {
        m.write(c.dir(), outcomes, racy_before, &mut report);
    }
    if delivered < total && !stop.load(Ordering::Relaxed) && cancelled() {
        return Err(Cancelled);
    }
    Ok(report)
}

/// Bring the search maps of `paths` up to date in `cache` (each file whose map is missing
/// or of another `stat` opened and mapped, in parallel), as the first search would: what
/// was done, and what went wrong with the cache.
pub fn refresh_maps(paths: &[PathBuf], cache: &ListingCache, read_mode: ReadMode) -> SearchReport {
    use rayon::prelude::*;
    let maps = Maps::load(cache.dir(), paths);
    let fo = FileOptions { read_mode };
    let outcomes: Vec<Option<Outcome>> = paths
        .par_iter()
        .enumerate()
        .map(|(i, p)| {
            Some(match maps.stored(i) {
                Some((stamp, _)) if std::fs::metadata(p).is_ok_and(|m| crate::source::Stamp::of(&m) == stamp) => {
                    Outcome::Reused
                }
                _ => super::map_path(p, fo),
            })
        })
        .collect();
    let mut report = SearchReport::default();
    maps.write(cache.dir(), outcomes, cache.racy_before(), &mut report);
    report
}

/// The files of the search cache that hold the maps of `paths`, whether each is there
/// and usable, and the stamp of each path's map (`None`: none).
pub(crate) fn stored_stamps(
    paths: &[PathBuf],
    cache: &ListingCache,
) -> (Vec<(PathBuf, bool)>, Vec<Option<crate::source::Stamp>>) {
    let maps = Maps::load(cache.dir(), paths);
    let files = maps
        .folders
        .iter()
        .map(|f| (f.file().to_path_buf(), f.usable()))
        .collect();
    let stamps = (0..paths.len()).map(|i| maps.stored(i).map(|(s, _)| s)).collect();
    (files, stamps)
}

/// The sessions a search covers, newest first.
#[derive(Debug, Default)]
pub struct Sessions {
    /// Newest `modified` first, ties by path.
    pub sessions: Vec<SessionInfo>,
    /// Files that are not sessions, or could not be read.
    pub skipped: Vec<SkippedFile>,
    /// Folders that could not be read.
    pub problems: Vec<listing::DirProblem>,
    /// Sessions that pi's listing (its `/resume`) drops, because its `buildSessionInfo`
    /// throws on them, while pi opens them: they are in [`Sessions::sessions`] all the
    /// same (with what their header says: [`listing::header_session_info`]), since what
    /// was said in them can be searched.
    pub unlisted: Vec<SkippedFile>,
    /// What [`search`] did with its cache (empty after [`sessions_in`]).
    pub report: SearchReport,
}

/// The sessions in `roots`: a file is one session; a folder is listed as pi lists a
/// sessions folder (its own `*.jsonl` files) and as pi's `listAll` lists a sessions root
/// (the `*.jsonl` files of each folder in it), through `cache` when given.
///
/// # Errors
/// [`Cancelled`].
pub fn sessions_in(
    roots: &[PathBuf],
    cache: Option<ListingCache>,
    read_mode: ReadMode,
    cancel: Option<CancelToken>,
) -> std::result::Result<Sessions, Cancelled> {
    let mut out = Sessions::default();
    let mut scratch = listing::Scratch::default();
    // (A search shows no `allMessagesText`: collecting it would copy every message.)
    scratch.set_collect_text(false);
    for root in roots {
        if root.is_dir() {
            for all in [false, true] {
                let mut o = ListOptions {
                    read_mode,
                    skip_text: true,
                    cache: cache.clone(),
                    cancel: cancel.clone(),
                    ..ListOptions::default()
                };
                let l = if all {
                    listing::list_all(root, &mut o)?
                } else {
                    listing::list_dir(root, &mut o)?
                };
                out.sessions.extend(l.sessions);
                out.skipped.extend(l.skipped);
                if !all {
                    out.problems.extend(l.problems);
                }
            }
        } else {
            match listing::read_session_info(root, read_mode, &mut scratch) {
                Ok(s) => out.sessions.push(s),
                Err(reason) => out.skipped.push(SkippedFile {
                    path: root.clone(),
                    reason,
                }),
            }
        }
    }
    // What pi drops from its listing but opens is searched too.
    let (unlisted, skipped): (Vec<SkippedFile>, Vec<SkippedFile>) = std::mem::take(&mut out.skipped)
        .into_iter()
        .partition(|s| matches!(s.reason, SkipFileReason::PiThrows(_)));
    out.skipped = skipped;
    for s in unlisted {
        match listing::header_session_info(&s.path) {
            Some(info) => {
                out.sessions.push(info);
                out.unlisted.push(s);
            }
            None => out.skipped.push(s),
        }
    }
    sort_newest_first(&mut out.sessions);
    out.sessions.dedup_by(|a, b| a.path == b.path);
    Ok(out)
}

/// Newest `modified` first (an invalid date last), ties by path: an order that never
/// depends on how the files were found.
pub fn sort_newest_first(s: &mut [SessionInfo]) {
    let key = |x: &SessionInfo| {
        if x.modified.is_nan() {
            f64::NEG_INFINITY
        } else {
            x.modified
        }
    };
    s.sort_by(|a, b| key(b).total_cmp(&key(a)).then_with(|| a.path.cmp(&b.path)));
}

/// Whether a session was started in `dir` or a folder below it (its header `cwd`).
pub fn cwd_within(s: &SessionInfo, dir: &Path) -> bool {
    let cwd = s.cwd.to_str_lossy();
    Path::new(&*cwd).starts_with(dir)
}

/// Search every session in `roots` ([`sessions_in`], through `cache` when given, which also keeps
/// the search maps unless `opts` names a cache of its own), newest
/// session first: `sink` gets each session's [`SessionInfo`] and its result, in that
/// order, and may stop the search with `ControlFlow::Break`. Files that are not sessions
/// are passed over, as a listing passes over them ([`Sessions::skipped`] is returned).
///
/// ```
/// use pi_session::search::{self, Pattern, Query};
/// let q = Query::new(Pattern::new("TOML").compile()?);
/// let mut found = Vec::new();
/// search::search(&["corpus/valid/branches.jsonl".into()], &q, None, &mut Default::default(), |s, hits| {
///     found.extend(hits.map(|h| (s.path.clone(), h.len())));
///     std::ops::ControlFlow::Continue(())
/// })?;
/// assert_eq!(found.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Cancelled`].
pub fn search(
    roots: &[PathBuf],
    q: &Query,
    cache: Option<ListingCache>,
    opts: &mut SearchOptions<'_>,
    mut sink: impl FnMut(&SessionInfo, Result<Vec<Hit>>) -> ControlFlow<()>,
) -> std::result::Result<Sessions, Cancelled> {
    if opts.cache.is_none() {
        opts.cache = cache.clone();
    }
    let mut found = sessions_in(roots, cache, opts.read_mode, opts.cancel.clone())?;
    let sessions = std::mem::take(&mut found.sessions);
    let paths: Vec<PathBuf> = sessions.iter().map(|s| s.path.clone()).collect();
    found.report = search_paths(&paths, q, opts, |f| sink(&sessions[f.index], f.result))?;
    found.sessions = sessions;
    Ok(found)
}

//! The listings: candidates (folder walks, pi's candidate order), the files processed in
//! parallel with rayon (largest first, one per task), progress and pi's partial lists,
//! cancellation between files, and pi's final sort (V8's `Array.prototype.sort`); pi's
//! `list`, `listAll` and `listSessionsFromDir`.

use super::cache::{CacheReport, Open, Origin, Took, View};
use super::read::{Candidate, DirFd, Scratch, open_folder, read_opened_session_info};
use super::{
    CancelToken, Cancelled, DirProblem, ListOptions, Listing, Progress, ProgressFn, SessionInfo, SkipFileReason,
    SkippedFile,
};
use crate::js::collate::locale_compare_bytes;
use crate::js::sort::v8_sort_by;
use crate::js::string::JsStr;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Names in a folder, sorted by bytes as libuv's `scandir` returns them to node.
fn read_dir_sorted(dir: &Path) -> std::io::Result<Vec<(Vec<u8>, std::fs::DirEntry)>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        v.push((e.file_name().as_encoded_bytes().to_vec(), e));
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(v)
}

pub(super) fn jsonl_names(dir: &Path) -> std::io::Result<Vec<Vec<u8>>> {
    Ok(read_dir_sorted(dir)?
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| super::dirs::is_session_name(n))
        .collect())
}

pub(super) fn join_name(dir: &Path, name: &[u8]) -> PathBuf {
    // Names come from read_dir; non-UTF-8 names are read lossily, as node does.
    dir.join(std::ffi::OsStr::new(&*String::from_utf8_lossy(name)))
}

/// A listed file's path, by the exact bytes of its name (a [`SessionInfo::path`] names the
/// file; `ls --json` prints pi's lossy form of it beside the exact bytes).
fn join_file(dir: &Path, name: &[u8]) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        dir.join(std::ffi::OsStr::from_bytes(name))
    }
    #[cfg(not(unix))]
    {
        join_name(dir, name)
    }
}

thread_local! {
    /// Per-thread scratch: the read buffer and span lists stay allocated between files.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::new());
}

/// Run the work of one file, turning a panic into a skipped file.
///
/// The builder itself does not panic on bytes that change under it (it reports
/// [`SkipFileReason::Changed`]); this is the second guard, for a bug on some file no test
/// has met: without it the panic would cross the rayon worker and end the whole listing,
/// where pi would drop just that file. It costs nothing when nothing panics. The scratch
/// is reset, since a panic may have left it half-filled (its `RefCell` borrow was released
/// by the unwind). A SIGBUS from a truncated mapping is a signal, not a panic: see
/// `crate::source::should_map`.
fn guarded<T>(work: impl FnOnce() -> T, failed: impl FnOnce(SkipFileReason) -> T) -> T {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|p| {
        SCRATCH.with(|s| *s.borrow_mut() = Scratch::new());
        let what = p
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        failed(SkipFileReason::Failed(what))
    })
}

/// When pi publishes a partial list.
#[derive(Clone, Copy)]
enum Publish {
    /// `listSessionsFromDir`: first file, every 10th, last.
    Dir,
    /// `listAll()`: once candidate 0 is done, at it, every 100th, last.
    All,
}

/// Per candidate its info (`None`: skipped), and the skipped files.
type Built = (Vec<Option<Arc<SessionInfo>>>, Vec<SkippedFile>);

/// One candidate done: its index, its outcome, and what the cache keeps of it.
type Done = (usize, Result<Arc<SessionInfo>, SkipFileReason>, Origin, Option<Took>);

/// Process candidates in parallel; results in candidate order.
fn build_all<'a>(
    cands: &[Candidate],
    publish: Publish,
    filter: &(dyn Fn(&SessionInfo) -> bool + Sync),
    opts: &mut ListOptions<'a>,
    cache: Option<(&str, &Path)>,
) -> Result<(Built, Option<CacheReport>), Cancelled> {
    struct Shared<'o, 'a> {
        loaded: usize,
        first_done: bool,
        partial: Vec<Arc<SessionInfo>>,
        cb: Option<&'o mut &'a mut ProgressFn<'a>>,
    }
    let total = cands.len();
    let want_partials = opts.partials && opts.on_progress.is_some();
    let cancel = opts.cancel.clone();
    let read_mode = opts.read_mode;
    let skip_text = opts.skip_text;
    let cache_opts = opts.cache.clone();
    let loaded = cache
        .zip(cache_opts.as_ref())
        .map(|((kind, folder), c)| Open::load(c, kind, folder));
    let view = loaded.as_ref().map(|o| {
        let mut v = View::new(o);
        v.lazy_text = opts.lazy_text;
        v
    });
    let open = view.as_ref();
    let shared = Mutex::new(Shared {
        loaded: 0,
        first_done: false,
        partial: Vec::new(),
        cb: opts.on_progress.as_mut(),
    });
    // What the shared state and the progress callback learn of each file done.
    let note = |sh: &mut Shared<'_, 'a>, index: usize, res: &Result<Arc<SessionInfo>, SkipFileReason>| {
        let c = &cands[index];
        sh.loaded += 1;
        if index == 0 {
            sh.first_done = true;
        }
        if let Ok(info) = res
            && want_partials
        {
            sh.partial.push(info.clone());
        }
        let loaded = sh.loaded;
        let publish_now = want_partials
            && match publish {
                Publish::Dir => loaded == 1 || loaded.is_multiple_of(10) || loaded == total,
                Publish::All => sh.first_done && (index == 0 || loaded.is_multiple_of(100) || loaded == total),
            };
        let partial = publish_now.then(|| {
            let mut p: Vec<Arc<SessionInfo>> = sh.partial.iter().filter(|s| filter(s)).cloned().collect();
            sort_by_modified(&mut p);
            p
        });
        if let Some(cb) = sh.cb.as_mut() {
            let skipped = res.as_ref().err().map(|r| SkippedFile {
                path: c.path.clone(),
                reason: r.clone(),
            });
            cb(&Progress {
                loaded,
                total,
                partial: partial.as_deref(),
                skipped: skipped.as_ref(),
            });
        }
    };
    // The files the cache answers as they were (stamp unchanged) first, in runs on every
    // core: a task, a lock and a progress call each were most of a warm listing's time.
    // (By candidate, so that the answers need no sort; filled in where read below.)
    let mut slots: Vec<Option<Done>> = match open {
        Some(o) => cands
            .par_iter()
            .enumerate()
            .with_min_len(64)
            .map(|(index, c)| {
                // (Candidates not `stat`ed yet, as a folder's, are answered below.)
                let (res, i) = guarded(|| o.reuse(c, c.stamp, !skip_text), |_| None)?;
                Some((index, res.map(Arc::new), Origin::Kept(i), Some(Took::Reused)))
            })
            .collect(),
        None => (0..total).map(|_| None).collect(),
    };
    {
        let mut sh = shared.lock().expect("progress lock is not poisoned");
        for d in slots.iter().flatten() {
            note(&mut sh, d.0, &d.1);
        }
    }
    // The others largest first, one file per task: two threads then finish together
    // instead of one of them ending the run alone on a big file. Results keep candidate
    // order.
    let mut order: Vec<usize> = (0..total).filter(|&i| slots[i].is_none()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cands[i].size));
    let read: Vec<Done> = order
        .par_iter()
        .with_max_len(1)
        .map(|&index| {
            let c = &cands[index];
            if cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
                return (index, Err(SkipFileReason::Cancelled), Origin::None, None);
            }
            let (res, src, took) = guarded(
                || {
                    SCRATCH.with(|s| {
                        let mut s = s.borrow_mut();
                        s.set_collect_text(!skip_text);
                        match open {
                            Some(o) => {
                                let (r, src, took) = o.list_one(c, read_mode, !skip_text, &mut s);
                                (r, src, Some(took))
                            }
                            None => (
                                c.open()
                                    .map_err(|e| SkipFileReason::io(&e))
                                    .and_then(|f| read_opened_session_info(&c.path, f, read_mode, &mut s)),
                                Origin::None,
                                None,
                            ),
                        }
                    })
                },
                |r| (Err(r), Origin::None, None),
            );
            let res = res.map(Arc::new);
            note(&mut shared.lock().expect("progress lock is not poisoned"), index, &res);
            (index, res, src, took)
        })
        .collect();
    for d in read {
        let at = d.0;
        slots[at] = Some(d);
    }
    // (`filter_map` collects in place, into the same allocation; `flatten` would not.)
    #[allow(clippy::filter_map_identity)]
    let mut done: Vec<Done> = slots.into_iter().filter_map(|d| d).collect();
    // Every thread lets go of the files it still has mapped.
    rayon::broadcast(|_| SCRATCH.with(|s| s.borrow_mut().release_mappings()));
    if cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
        return Err(Cancelled);
    }
    drop(shared);
    if loaded.as_ref().is_some_and(|l| !l.held()) {
        // The cache file was truncated or rewritten in place under its mapping: its
        // answers may be zeros. List again without it (progress starts over).
        drop(view);
        let (built, _) = build_all(cands, publish, filter, opts, None)?;
        let report = CacheReport {
            warning: Some("the listing cache changed while it was read (not by pi-session): listed without it".into()),
            ..CacheReport::default()
        };
        return Ok((built, Some(report)));
    }
    let report = match (open, cache_opts.as_ref()) {
        (Some(o), Some(c)) => {
            let mut report = CacheReport {
                warning: None,
                ..CacheReport::default()
            };
            for d in &done {
                match d.3 {
                    Some(Took::Reused) => report.reused += 1,
                    Some(Took::Appended(n)) => {
                        report.appended += 1;
                        report.appended_bytes += n;
                    }
                    Some(Took::Read(n)) => {
                        report.read += 1;
                        report.read_bytes += n;
                    }
                    None => {}
                }
            }
            let mut rows = Vec::with_capacity(done.len());
            for d in &mut done {
                let src = std::mem::replace(&mut d.2, Origin::None);
                rows.push((cands[d.0].path.as_path(), &d.1, src));
            }
            let wrote = o.save(c, &rows, &mut report);
            let what = format!("the listing cache in {}", c.dir().display());
            let w = crate::store::cache_warning(
                o.warning().as_deref(),
                wrote.as_ref().map(|()| report.written),
                &what,
                "listed without it",
            );
            report.warning = match (w, report.warning.take()) {
                (Some(a), Some(texts)) => Some(format!("{a}; {texts}")),
                (a, texts) => a.or(texts),
            };
            Some(report)
        }
        _ => None,
    };
    let out = done.into_iter().map(|(_, r, _, _)| r);
    let mut skipped = Vec::new();
    let infos = out
        .zip(cands)
        .map(|(r, c)| match r {
            Ok(i) => Some(i),
            Err(reason) => {
                skipped.push(SkippedFile {
                    path: c.path.clone(),
                    reason,
                });
                None
            }
        })
        .collect();
    Ok(((infos, skipped), report))
}

fn sort_by_modified<T: std::ops::Deref<Target = SessionInfo>>(v: &mut Vec<T>) {
    v8_sort_by(v, |a, b| b.modified - a.modified);
}

fn finish(infos: Vec<Option<Arc<SessionInfo>>>, filter: impl Fn(&SessionInfo) -> bool) -> Vec<SessionInfo> {
    let mut v: Vec<Arc<SessionInfo>> = infos.into_iter().flatten().filter(|s| filter(s)).collect();
    sort_by_modified(&mut v);
    v.into_iter()
        .map(|a| Arc::try_unwrap(a).unwrap_or_else(|a| (*a).clone()))
        .collect()
}

fn check(opts: &ListOptions<'_>) -> Result<(), Cancelled> {
    if opts.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
        Err(Cancelled)
    } else {
        Ok(())
    }
}

/// pi's `listSessionsFromDir` followed by its sort: every `*.jsonl` directly in `dir`
/// (candidates ordered by `localeCompare` of the names, descending), `filter` applied to
/// the result and to the partials.
fn list_dir_filtered(
    dir: &Path,
    filter: &(dyn Fn(&SessionInfo) -> bool + Sync),
    opts: &mut ListOptions<'_>,
) -> Result<Listing, Cancelled> {
    check(opts)?;
    let mut listing = Listing::default();
    let names = match jsonl_names(dir) {
        Ok(n) => n,
        Err(e) => {
            listing.problems.push(DirProblem {
                path: dir.to_path_buf(),
                what: dir_error_text(&e),
            });
            return Ok(listing);
        }
    };
    let mut names = names;
    v8_sort_by(&mut names, |a, b| locale_compare_bytes(b, a) as i32 as f64);
    let cands: Vec<Candidate> = names
        .into_iter()
        .map(|name| Candidate {
            path: join_file(dir, &name),
            name,
            dir: None,
            mtime: Some(0.0),
            size: 0,
            stamp: None,
        })
        .collect();
    listing.total = cands.len();
    let ((infos, skipped), report) = build_all(&cands, Publish::Dir, filter, opts, Some(("dir", dir)))?;
    listing.cache = report;
    listing.skipped = skipped;
    listing.sessions = finish(infos, filter);
    Ok(listing)
}

fn dir_error_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such folder".into(),
        _ => format!("cannot read folder: {e}"),
    }
}

/// pi's `listAll("dir")` (a custom flat session dir): every `*.jsonl` directly in `dir`,
/// newest first.
///
/// # Errors
/// Only [`Cancelled`]; a missing or unreadable folder gives an empty list and a problem.
pub fn list_dir(dir: &Path, opts: &mut ListOptions<'_>) -> Result<Listing, Cancelled> {
    list_dir_filtered(dir, &|_| true, opts)
}

/// pi's `list(cwd, sessionDir)`: the sessions of one project. `dir` is the folder pi uses
/// (`sessionDir` when given, else the project's default folder); when `filter_cwd` is
/// `Some(resolved cwd)` (a custom dir other than the default folder), only sessions whose
/// header `cwd` resolves to it are kept. [`list_project`] computes both from an
/// [`crate::listing::dirs::Env`].
///
/// # Errors
/// Only [`Cancelled`].
pub fn list(
    dir: &Path,
    filter_cwd: Option<(&crate::listing::dirs::Env, &Path)>,
    opts: &mut ListOptions<'_>,
) -> Result<Listing, Cancelled> {
    match filter_cwd {
        None => list_dir_filtered(dir, &|_| true, opts),
        Some((env, cwd)) => {
            let f = |s: &SessionInfo| cwd_matches(env, &s.cwd, cwd);
            list_dir_filtered(dir, &f, opts)
        }
    }
}

/// pi's `sessionCwdMatches`: a non-empty header cwd that resolves to `resolved_cwd`.
pub(super) fn cwd_matches(env: &crate::listing::dirs::Env, cwd: &JsStr<'_>, resolved_cwd: &Path) -> bool {
    !cwd.is_empty() && env.resolve_path(Path::new(&*cwd.to_str_lossy())) == resolved_cwd
}

/// Which folder `list(cwd, session_dir)` reads and which cwd it filters on, as pi decides.
pub fn project_dir(
    env: &crate::listing::dirs::Env,
    cwd: &Path,
    session_dir: Option<&Path>,
    agent_dir: &Path,
) -> (PathBuf, Option<PathBuf>) {
    let default = env.default_session_dir(cwd, agent_dir);
    match session_dir {
        Some(d) => {
            let d = env.normalize_path(d);
            let filter = (!env.paths_equal(&d, &default)).then(|| env.resolve_path(cwd));
            (d, filter)
        }
        None => (default, None),
    }
}

/// pi's `list(cwd, sessionDir)` with directories resolved from `env`.
///
/// # Errors
/// Only [`Cancelled`].
pub fn list_project(
    env: &crate::listing::dirs::Env,
    cwd: &Path,
    session_dir: Option<&Path>,
    agent_dir: &Path,
    opts: &mut ListOptions<'_>,
) -> Result<Listing, Cancelled> {
    let (dir, filter) = project_dir(env, cwd, session_dir, agent_dir);
    list(&dir, filter.as_deref().map(|c| (env, c)), opts)
}

/// pi's `listAll()`: every `*.jsonl` in every folder (or symlink to one) directly under
/// `sessions_root` (`<agent dir>/sessions`), newest first.
///
/// # Errors
/// Only [`Cancelled`]; missing or unreadable folders are reported in
/// [`Listing::problems`].
pub fn list_all(sessions_root: &Path, opts: &mut ListOptions<'_>) -> Result<Listing, Cancelled> {
    check(opts)?;
    let mut listing = Listing::default();
    let entries = match read_dir_sorted(sessions_root) {
        Ok(e) => e,
        Err(e) => {
            listing.problems.push(DirProblem {
                path: sessions_root.to_path_buf(),
                what: dir_error_text(&e),
            });
            return Ok(listing);
        }
    };
    let dirs: Vec<PathBuf> = entries
        .iter()
        .filter(|(_, e)| e.file_type().is_ok_and(|t| t.is_dir() || t.is_symlink()))
        .map(|(n, _)| join_name(sessions_root, n))
        .collect();
    type Folder = (PathBuf, Option<DirFd>, std::io::Result<Vec<Vec<u8>>>);
    let per_dir: Vec<Folder> = dirs
        .into_par_iter()
        .map(|d| {
            let r = jsonl_names(&d);
            // Without a descriptor (say the process is out of them) files go by path.
            let fd = r.is_ok().then(|| open_folder(&d)).flatten();
            (d, fd, r)
        })
        .collect();
    let mut files: Vec<(PathBuf, Vec<u8>, Option<DirFd>)> = Vec::new();
    for (d, fd, r) in per_dir {
        match r {
            Ok(names) => files.extend(names.into_iter().map(|n| (join_file(&d, &n), n, fd.clone()))),
            Err(e) => {
                // A symlink to a file is not a folder; pi passes over it silently.
                if e.kind() != std::io::ErrorKind::NotADirectory {
                    listing.problems.push(DirProblem {
                        path: d,
                        what: dir_error_text(&e),
                    });
                }
            }
        }
    }
    check(opts)?;
    let mut cands: Vec<Candidate> = files
        .into_par_iter()
        .map(|(path, name, dir)| {
            let mut c = Candidate {
                path,
                name,
                dir,
                mtime: None,
                size: 0,
                stamp: None,
            };
            (c.mtime, c.size, c.stamp) = c.stat();
            c
        })
        .collect();
    v8_sort_by(&mut cands, |a, b| {
        let d = b.mtime.unwrap_or(f64::NEG_INFINITY) - a.mtime.unwrap_or(f64::NEG_INFINITY);
        if d != 0.0 && !d.is_nan() {
            d
        } else {
            locale_compare_bytes(&b.name, &a.name) as i32 as f64
        }
    });
    listing.total = cands.len();
    let ((infos, skipped), report) = build_all(&cands, Publish::All, &|_| true, opts, Some(("all", sessions_root)))?;
    listing.cache = report;
    listing.skipped = skipped;
    listing.sessions = finish(infos, |_| true);
    Ok(listing)
}

//! Every cache at once, for the sessions of a run: what each holds of them, its size and
//! its age ([`stats`]); bringing all of them up to date ([`refresh`]); and dropping them
//! ([`drop_files`]) so that the next refresh builds them from nothing.
//!
//! The caches (`listing`, `search`, `usage`) each keep, per session file, what was read
//! of it under the `fstat` it was read under (the usage cache also keeps a summary of a
//! whole tree, counted among its files); an entry is *current* when the file's
//! `stat` is still that one (the rule every cache trusts an entry by), *stale* when the
//! file changed since (the next run reads it again), and *missing* when there is none.

use crate::listing::{CancelToken, Cancelled, ListOptions, ListingCache};
use crate::source::{ReadMode, Stamp};
use std::path::{Path, PathBuf};

/// The caches, by the name [`StoreStats::kind`] gives them.
pub const KINDS: [&str; 3] = ["listing", "search", "usage"];

/// What one cache holds of a run's sessions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StoreStats {
    /// `listing`, `search` or `usage`.
    pub kind: &'static str,
    /// Its files (those of the run's folders) that are there.
    pub files: usize,
    /// Their size.
    pub bytes: u64,
    /// Files there that are damaged or of another version (rebuilt by the next run).
    pub unusable: usize,
    /// Sessions with an entry read under their current `stat`.
    pub current: usize,
    /// Sessions whose entry was read under another (changed since).
    pub stale: usize,
    /// Sessions without an entry.
    pub missing: usize,
    /// The oldest and newest modification of its files (Unix ms).
    pub oldest_ms: Option<f64>,
    /// See `oldest_ms`.
    pub newest_ms: Option<f64>,
}

/// What the caches hold of a run's sessions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// The cache folder.
    pub dir: PathBuf,
    /// The run's session files.
    pub sessions: usize,
    /// Their size.
    pub session_bytes: u64,
    /// Sessions changed too recently to be kept (their `ctime` within two seconds of
    /// now: a write in the same clock tick would not move their `stat`): every run reads
    /// them until they have been still that long.
    pub recent: usize,
    /// Each cache, in [`KINDS`] order.
    pub stores: Vec<StoreStats>,
}

/// A cache's files and each session's stamp in it.
struct Held {
    /// Its files, and whether each was usable.
    files: Vec<(PathBuf, bool)>,
    stamps: Vec<Option<Stamp>>,
}

/// What each cache ([`KINDS`] order) holds of `paths`, the session files of `roots` (as
/// `usage` and `search` take them): its files, and each path's stamp in it. The listing's
/// are those of the listings of each root that is a folder.
fn held(roots: &[PathBuf], paths: &[PathBuf], cache: &ListingCache) -> [Held; 3] {
    let mut listing = Held {
        files: Vec::new(),
        stamps: vec![None; paths.len()],
    };
    let at: std::collections::HashMap<&Path, usize> = paths.iter().enumerate().map(|(i, p)| (p.as_path(), i)).collect();
    for root in roots.iter().filter(|r| r.is_dir()) {
        for kind in ["all", "dir"] {
            let (file, entries) = crate::listing::cache::stamps_of(cache, kind, root);
            if std::fs::symlink_metadata(&file).is_ok() {
                listing.files.push((file.clone(), entries.is_some()));
                for (p, stamp) in entries.into_iter().flatten() {
                    if let Some(&i) = at.get(p.as_path()) {
                        listing.stamps[i].get_or_insert(stamp);
                    }
                }
                let text = PathBuf::from(format!("{}.text", file.display()));
                if std::fs::symlink_metadata(&text).is_ok() {
                    listing.files.push((text, true));
                }
            }
        }
    }
    let (files, stamps) = crate::search::stored_stamps(paths, cache);
    let search = Held { files, stamps };
    let (files, stamps) = crate::usage::stored_stamps(cache.dir(), roots, paths);
    let usage = Held { files, stamps };
    [listing, search, usage]
}

/// What the caches in `cache` hold of the sessions of `roots`. Nothing is written.
pub fn stats(roots: &[PathBuf], cache: &ListingCache) -> Stats {
    let (paths, _) = crate::usage::session_files(roots);
    // Each session's stamp of now and size, from one `stat`.
    let (now, sizes): (Vec<Option<Stamp>>, Vec<u64>) = {
        use rayon::prelude::*;
        paths
            .par_iter()
            .map(|p| std::fs::metadata(p).map_or((None, 0), |m| (Some(Stamp::of(&m)), m.len())))
            .unzip()
    };
    let session_bytes = sizes.iter().sum();
    let stores = KINDS
        .into_iter()
        .zip(held(roots, &paths, cache))
        .map(|(kind, h)| {
            let mut s = StoreStats {
                kind,
                ..StoreStats::default()
            };
            let mut seen = std::collections::HashSet::new();
            for (f, usable) in &h.files {
                let Ok(m) = std::fs::symlink_metadata(f) else { continue };
                if !seen.insert(f.clone()) {
                    continue;
                }
                s.files += 1;
                s.bytes += m.len();
                s.unusable += usize::from(!usable);
                let ms = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map(|d| d.as_millis() as f64);
                if let Some(ms) = ms {
                    s.oldest_ms = Some(s.oldest_ms.map_or(ms, |o| o.min(ms)));
                    s.newest_ms = Some(s.newest_ms.map_or(ms, |o| o.max(ms)));
                }
            }
            for (held, now) in h.stamps.iter().zip(&now) {
                match (held, now) {
                    (Some(a), Some(b)) if a == b => s.current += 1,
                    (Some(_), _) => s.stale += 1,
                    (None, _) => s.missing += 1,
                }
            }
            s
        })
        .collect();
    let racy_before = cache.racy_before();
    Stats {
        dir: cache.dir().to_path_buf(),
        sessions: paths.len(),
        session_bytes,
        recent: now.iter().flatten().filter(|s| s.ctime_ns() > racy_before).count(),
        stores,
    }
}

/// What a refresh did, per cache.
#[derive(Debug, Default)]
pub struct Refreshed {
    /// Sessions listed; read (whole or from where they ended) by the listing.
    pub listed: usize,
    /// Sessions the listing read.
    pub listing_read: usize,
    /// Search maps built.
    pub maps_built: usize,
    /// Sessions whose usage records were read.
    pub usage_read: usize,
    /// What went wrong with a cache, once per problem.
    pub warnings: Vec<String>,
}

/// Bring every cache of the sessions of `roots` up to date, as the first `ls --all`,
/// `search` and `usage` after a change would: only what is missing or stale is read.
/// `progress` is told each step's name before it runs.
///
/// # Errors
/// [`Cancelled`].
pub fn refresh(
    roots: &[PathBuf],
    cache: &ListingCache,
    read_mode: ReadMode,
    cancel: Option<CancelToken>,
    mut progress: impl FnMut(&str),
) -> Result<Refreshed, Cancelled> {
    let mut r = Refreshed::default();
    let warn = |w: Option<String>, r: &mut Refreshed| {
        if let Some(w) = w
            && !r.warnings.contains(&w)
        {
            r.warnings.push(w);
        }
    };
    progress("listing");
    for root in roots.iter().filter(|r| r.is_dir()) {
        for all in [true, false] {
            // (Without `allMessagesText`, as `ls` lists: a listing that wants it reads
            // the files again.)
            let mut o = ListOptions {
                read_mode,
                skip_text: true,
                cache: Some(cache.clone()),
                cancel: cancel.clone(),
                ..ListOptions::default()
            };
            let l = if all {
                crate::listing::list_all(root, &mut o)?
            } else {
                crate::listing::list_dir(root, &mut o)?
            };
            r.listed += l.sessions.len();
            if let Some(c) = l.cache {
                r.listing_read += c.read + c.appended;
                warn(c.warning, &mut r);
            }
        }
    }
    if cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
        return Err(Cancelled);
    }
    progress("search");
    let (paths, _) = crate::usage::session_files(roots);
    let s = crate::search::refresh_maps(&paths, cache, read_mode);
    r.maps_built = s.maps_built;
    for w in s.cache_warnings {
        warn(Some(w), &mut r);
    }
    if cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
        return Err(Cancelled);
    }
    progress("usage");
    let mut o = crate::usage::CollectOptions {
        read_mode,
        cache: Some(cache.clone()),
        cancel: cancel.clone(),
        ..Default::default()
    };
    let g = crate::usage::gather(roots, &mut o)?;
    r.usage_read = paths.len().saturating_sub(g.cached);
    for w in g.cache_warnings {
        warn(Some(w), &mut r);
    }
    Ok(r)
}

/// Remove the cache files that hold what the caches keep of the sessions of `roots` (the
/// listings of its folders, the search maps and usage records of their files): the
/// files removed.
///
/// # Errors
/// A file that could not be removed (the ones before it are gone).
pub fn drop_files(roots: &[PathBuf], cache: &ListingCache) -> std::io::Result<Vec<PathBuf>> {
    let (paths, _) = crate::usage::session_files(roots);
    let mut gone = Vec::new();
    for h in held(roots, &paths, cache) {
        for (f, _) in h.files {
            match crate::files::remove(&f) {
                Ok(true) => gone.push(f),
                Ok(false) => {}
                Err(e) => return Err(std::io::Error::new(e.kind(), format!("{}: {e}", f.display()))),
            }
        }
    }
    gone.sort();
    gone.dedup();
    Ok(gone)
}

#[cfg(test)]
mod tests;

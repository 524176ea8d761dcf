//! The session files of sessions roots ([`super::session_files`]'s rule), found with one
//! pass over the folders: each subfolder is opened once, `fstat`ed (its stamp), listed,
//! and, when asked, its files `stat`ed relative to it, the folders on every core.
//!
//! A folder's names can come from a memo (the usage summary's) instead of a listing: a
//! folder's stamp is taken before it is listed, and creating, removing or renaming an
//! entry changes its mtime and ctime, so a folder whose stamp is one the memo took, and
//! not racy then, holds the names it held.

use crate::source::Stamp;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What [`walk`] found.
#[derive(Default)]
pub(crate) struct Walk {
    /// The session files, in path order, each once.
    pub(crate) files: Vec<PathBuf>,
    /// Each file's stamp (`None`: no regular file, or gone), when asked for.
    pub(crate) stamps: Vec<Option<Stamp>>,
    /// The subfolders of the roots, each with the stamp it had before it was listed.
    pub(crate) folders: Vec<(PathBuf, Stamp)>,
    /// The folders that could not be read.
    pub(crate) problems: Vec<(PathBuf, String)>,
}

/// A folder's session names as a memo holds them for a stamp (`None`: not held).
pub(crate) type Memo<'a> = &'a (dyn Fn(&Path, &Stamp) -> Option<Vec<PathBuf>> + Sync);

/// The session files of `roots` (see [`super::session_files`]), with their stamps when
/// `stamps`, the names of a folder whose stamp `memo` knows taken from it.
pub(crate) fn walk(roots: &[PathBuf], memo: Option<Memo<'_>>, stamps: bool) -> Walk {
    use rayon::prelude::*;
    let mut w = Walk::default();
    let mut found: Vec<(PathBuf, Option<Stamp>)> = Vec::new();
    for root in roots {
        if !root.is_dir() {
            // (A sessions root pi has not made yet holds no session.)
            if root.exists() {
                let st = stamps.then(|| crate::source::stamps_of(std::slice::from_ref(root))[0]);
                found.push((root.clone(), st.flatten()));
            }
            continue;
        }
        let entries = match sorted(root) {
            Ok(v) => v,
            Err(e) => {
                w.problems.push((root.clone(), e.to_string()));
                continue;
            }
        };
        // The root's own session files and its folders, in name order (a folder's files
        // come before a file of its name with `.jsonl`, as paths sort).
        enum Item {
            File(PathBuf),
            Folder(PathBuf),
        }
        let items: Vec<Item> = entries
            .iter()
            .filter_map(|e| {
                if crate::listing::dirs::is_session_name(e.file_name().as_encoded_bytes()) {
                    Some(Item::File(e.path()))
                } else {
                    e.file_type()
                        .is_ok_and(|t| t.is_dir() || t.is_symlink())
                        .then(|| Item::Folder(e.path()))
                }
            })
            .collect();
        let files_here: Vec<PathBuf> = items
            .iter()
            .filter_map(|i| match i {
                Item::File(p) => Some(p.clone()),
                Item::Folder(_) => None,
            })
            .collect();
        let own = if stamps {
            crate::source::stamps_of(&files_here)
        } else {
            Vec::new()
        };
        let read: Vec<Option<Result<Listed, String>>> = items
            .par_iter()
            .map(|i| match i {
                Item::File(_) => None,
                Item::Folder(d) => list(d, memo, stamps).transpose(),
            })
            .collect();
        let mut own = own.into_iter();
        for (item, r) in items.into_iter().zip(read) {
            match (item, r) {
                (Item::File(p), _) => found.push((p, own.next().flatten())),
                (Item::Folder(_), None) => {}
                (Item::Folder(d), Some(Err(e))) => w.problems.push((d, e)),
                (Item::Folder(d), Some(Ok(l))) => {
                    let mut st = l.stamps.into_iter();
                    found.extend(l.files.into_iter().map(|p| (p, st.next().flatten())));
                    w.folders.push((d, l.stamp));
                }
            }
        }
    }
    if !found.is_sorted_by(|a, b| a.0 < b.0) {
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found.dedup_by(|a, b| a.0 == b.0);
    }
    if stamps {
        (w.files, w.stamps) = found.into_iter().unzip();
    } else {
        w.files = found.into_iter().map(|(p, _)| p).collect();
    }
    w
}

/// A folder's entries in name order.
fn sorted(dir: &Path) -> std::io::Result<Vec<std::fs::DirEntry>> {
    let mut v: Vec<_> = std::fs::read_dir(dir)?.collect::<std::io::Result<_>>()?;
    v.sort_by_key(std::fs::DirEntry::file_name);
    Ok(v)
}

/// A subfolder read: its stamp, its session files in name order and their stamps (when
/// asked for).
struct Listed {
    stamp: Stamp,
    files: Vec<PathBuf>,
    stamps: Vec<Option<Stamp>>,
}

/// The subfolder `dir` (`None`: no folder, or gone: not a sessions folder).
fn list(dir: &Path, memo: Option<Memo<'_>>, stamps: bool) -> Result<Option<Listed>, String> {
    use rayon::prelude::*;
    use rustix::fd::AsFd;
    use rustix::fs::{Mode, OFlags, open};
    let io = |e: rustix::io::Errno| std::io::Error::from_raw_os_error(e.raw_os_error()).to_string();
    let fd = match open(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => std::fs::File::from(fd),
        // (A link to no folder, or one removed since the root was listed.)
        Err(rustix::io::Errno::NOTDIR | rustix::io::Errno::NOENT | rustix::io::Errno::LOOP) => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    // (Before the listing: an entry made after the stamp changes the folder's next one.)
    let stamp = Stamp::of(&fd.metadata().map_err(|e| e.to_string())?);
    let files = match memo.and_then(|m| m(dir, &stamp)) {
        Some(files) => files,
        None => {
            let mut names: Vec<Vec<u8>> = Vec::new();
            for e in rustix::fs::Dir::read_from(&fd).map_err(io)? {
                let name = e.map_err(io)?.file_name().to_bytes().to_vec();
                if crate::listing::dirs::is_session_name(&name) {
                    names.push(name);
                }
            }
            names.sort_unstable();
            names.into_iter().map(|n| dir.join(OsStr::from_bytes(&n))).collect()
        }
    };
    let stamps = if stamps {
        files
            .par_iter()
            .with_min_len(256)
            .map(|p| crate::source::stamp_at(Some(fd.as_fd()), p))
            .collect()
    } else {
        Vec::new()
    };
    Ok(Some(Listed { stamp, files, stamps }))
}

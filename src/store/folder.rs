//! A folder store: what a cache keeps of each session file of one folder (the search maps,
//! `search/store.rs`; the usage records, `usage/store.rs`; the content index to come), one
//! cache file per folder (`<prefix>-<XXH3 of the folder's absolute path>`, [`Kind`]) in the
//! cache folder, so that a run over files that did not change reads none of them.
//!
//! ```text
//! magic    16 bytes  the kind's (the search cache's: "pi-session-smap\n")
//! version  u32       FORMAT
//! folder   u64 length, bytes (absolute)
//! body     u64 length, u128 XXH3 of its bytes, then: the count (u64) and the entries,
//!          each the file's name (u64 length, bytes), its `fstat` (`Stamp::to_parts`,
//!          7 u64) and its map (u64 length, bytes)
//! ```
//!
//! Trust is the listing cache's (`listing/cache.rs`): a map is used only when the file's
//! `fstat` (device, inode, size, mtime, ctime, to the nanosecond) is the one its bytes
//! were read under when the map was built, and a map of a file whose ctime was within two
//! seconds of that read is not kept (a write in the same clock tick would not move the
//! stamp). A cache file that is damaged, foreign or of another version is ignored and
//! written anew (said on stderr when damaged); a cache that cannot be read or written
//! means a search without it. It is written whole to a temporary file renamed over the
//! old one (`write_atomically`), only when a map was added or dropped.

use super::codec::{Reader, put_bytes, put_u64};
use crate::source::Stamp;
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// What a folder cache keeps: its files' names start with `prefix`, their contents with
/// `magic` and `format`; `what` names it in warnings. The usage report keeps each file's
/// records in caches of the same shape (`usage/store.rs`).
pub(crate) struct Kind {
    pub(crate) prefix: &'static str,
    pub(crate) magic: &'static [u8; 16],
    pub(crate) format: u32,
    pub(crate) what: &'static str,
}

/// File name: the stamp its map was built under, where the map is in the cache file.
type Entries = HashMap<Vec<u8>, (Stamp, Range<usize>)>;

/// The search cache of one folder, as read when the search started.
pub(crate) struct FolderMaps {
    kind: &'static Kind,
    folder: Vec<u8>,
    file: PathBuf,
    /// The cache file, mapped (no copy: a search that passes over most files by their
    /// sketches touches little of it).
    source: Option<crate::source::Source>,
    entries: Entries,
    /// Why the cache file was not used, when it was there but not usable.
    pub(crate) warning: Option<String>,
    /// Whether the cache file was there and decoded.
    decoded: bool,
}

/// What a search did with one file of a folder, for the next write of its cache.
pub(crate) enum Outcome {
    /// Its stored map was used.
    Reused,
    /// A map was built: keep it (unless the file was racy).
    Built(Stamp, Vec<u8>),
    /// Its stored map (if any) no longer holds, and none was built.
    Dropped,
}

impl FolderMaps {
    /// The cache of `folder` in `dir` (empty when there is none or it is not usable).
    pub(crate) fn load(dir: &Path, folder: &Path, kind: &'static Kind) -> FolderMaps {
        let abs = std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf());
        let key = abs.as_os_str().as_encoded_bytes().to_vec();
        let file = dir.join(format!("{}-{:032x}", kind.prefix, xxhash_rust::xxh3::xxh3_128(&key)));
        let mut m = FolderMaps {
            kind,
            folder: key,
            file,
            source: None,
            entries: HashMap::new(),
            warning: None,
            decoded: false,
        };
        match read_cache_file(&m.file, m.folder.len()) {
            Ok(source) => {
                m.source = source;
                match decode(m.bytes(), &m.folder, kind) {
                    // (A mapped file cut short while it was read is damaged.)
                    Some(e) if m.source.as_ref().is_some_and(crate::source::Source::intact) => {
                        m.entries = e;
                        m.decoded = true;
                    }
                    // (One of another format, as after an upgrade, is rebuilt without a word.)
                    _ if !other_format(m.bytes(), kind) => {
                        m.warning = Some(format!("the {} {} is damaged", kind.what, m.file.display()));
                    }
                    _ => {}
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => m.warning = Some(format!("the {} {} cannot be read ({e})", kind.what, m.file.display())),
        }
        m
    }

    /// Whether no byte of the mapped cache file has read as zeros since it was loaded
    /// (another process cut it short: `source/guard.rs`). What was read of a cache that is
    /// not intact is not trusted, nor kept.
    pub(crate) fn intact(&self) -> bool {
        self.source.as_ref().is_none_or(crate::source::Source::intact)
    }

    /// The cache file's bytes (none when it was not there or not usable).
    fn bytes(&self) -> &[u8] {
        self.source.as_ref().map_or(&[], crate::source::Source::bytes)
    }

    /// The cache file.
    pub(crate) fn file(&self) -> &Path {
        &self.file
    }

    /// Whether the cache file was there and usable.
    pub(crate) fn usable(&self) -> bool {
        self.decoded
    }

    /// How many bytes of the cache file are held in memory (the whole file once read).
    #[cfg(test)]
    pub(crate) fn bytes_held(&self) -> usize {
        self.bytes().len()
    }

    /// The stored map of the file named `name` and the stamp it was built under.
    pub(crate) fn get(&self, name: &[u8]) -> Option<(Stamp, &[u8])> {
        let (stamp, r) = self.entries.get(name)?;
        Some((*stamp, &self.bytes()[r.clone()]))
    }

    /// Write the cache anew after a search: `outcomes` are the searched files' (by name);
    /// the maps of files not searched are kept while the file is there. Nothing is written
    /// when no map was built or dropped. Maps of files whose ctime is after
    /// `racy_before` are not kept.
    ///
    /// # Errors
    /// The cache folder or file cannot be written.
    pub(crate) fn write(&self, dir: &Path, outcomes: &[(&[u8], Outcome)], racy_before: i128) -> std::io::Result<bool> {
        if outcomes.iter().all(|(_, o)| matches!(o, Outcome::Reused)) {
            return Ok(false);
        }
        let mut keep: Vec<(&[u8], Stamp, &[u8])> = Vec::new();
        let mut searched = std::collections::HashSet::new();
        for (name, o) in outcomes {
            searched.insert(*name);
            match o {
                Outcome::Reused => keep.extend(self.get(name).map(|(s, m)| (*name, s, m))),
                Outcome::Built(stamp, map) if stamp.ctime_ns() <= racy_before => keep.push((*name, *stamp, map)),
                Outcome::Built(..) | Outcome::Dropped => {}
            }
        }
        let folder = Path::new(os_str(&self.folder));
        for (name, (stamp, r)) in &self.entries {
            if !searched.contains(name.as_slice()) && folder.join(os_str(name)).is_file() {
                keep.push((name, *stamp, &self.bytes()[r.clone()]));
            }
        }
        keep.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut body = Vec::new();
        put_u64(&mut body, keep.len() as u64);
        for (name, stamp, map) in &keep {
            put_bytes(&mut body, name);
            for p in stamp.to_parts() {
                put_u64(&mut body, p);
            }
            put_bytes(&mut body, map);
        }
        let mut head = Vec::with_capacity(64 + self.folder.len());
        head.extend_from_slice(self.kind.magic);
        head.extend_from_slice(&self.kind.format.to_le_bytes());
        put_bytes(&mut head, &self.folder);
        put_u64(&mut head, body.len() as u64);
        head.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(&body).to_le_bytes());
        // (Maps kept from a cache file cut short meanwhile may be zeros: not written.)
        if !self.intact() {
            return Ok(false);
        }
        write_atomically(dir, &self.file, &[head, body])?;
        Ok(true)
    }
}

/// A cache file's bytes, read only when it is a regular file (never blocking on a FIFO,
/// never reading a device) whose size is the one its head declares: a file grown or cut
/// since it was written (`truncate -s 3G`) is damaged, which is known from its first
/// bytes; then the bytes are empty (and decode as damaged). `folder_len`: the length of
/// the folder's path in the head.
fn read_cache_file(path: &Path, folder_len: usize) -> std::io::Result<Option<crate::source::Source>> {
    let f = crate::source::open_for_reading(path)?;
    let meta = f.metadata()?;
    crate::source::regular(&meta)?;
    // magic, format, the folder (length and bytes), the body's length; then its hash.
    let head_len = 16 + 4 + 8 + folder_len + 8;
    let mut head = vec![0; head_len];
    if crate::source::read_at_most(&f, 0, &mut head)? < head_len {
        return Ok(None);
    }
    let body_len = u64::from_le_bytes(head[head_len - 8..].try_into().unwrap_or_default());
    if (head_len as u64 + 16).checked_add(body_len) != Some(meta.len()) {
        return Ok(None);
    }
    crate::source::Source::from_file_unprinted(f, crate::source::ReadMode::Mmap, Vec::new()).map(Some)
}

/// The caches of kind `kind` in `dir` of the folders of `paths`, each loaded once, and
/// each path's folder (an index into them) and file name.
pub(crate) fn by_folder<'p>(
    dir: &Path,
    paths: &'p [PathBuf],
    kind: &'static Kind,
) -> (Vec<FolderMaps>, Vec<(usize, &'p [u8])>) {
    let mut index = HashMap::new();
    let mut names: Vec<&Path> = Vec::new();
    let of = paths
        .iter()
        .map(|p| {
            let folder = p
                .parent()
                .filter(|f| !f.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let k = *index.entry(folder).or_insert_with(|| {
                names.push(folder);
                names.len() - 1
            });
            (k, p.file_name().map_or(&[][..], |n| n.as_encoded_bytes()))
        })
        .collect();
    // (In parallel: each is a read and a hash of the whole file.)
    use rayon::prelude::*;
    let folders = names.par_iter().map(|f| FolderMaps::load(dir, f, kind)).collect();
    (folders, of)
}

/// Bytes that came from `as_encoded_bytes` of a path, as a path again.
fn os_str(b: &[u8]) -> &std::ffi::OsStr {
    std::os::unix::ffi::OsStrExt::from_bytes(b)
}

/// Whether `bytes` are a cache file of this kind in another format.
fn other_format(bytes: &[u8], kind: &Kind) -> bool {
    let mut r = Reader { b: bytes, at: 0 };
    r.take(16) == Some(kind.magic) && r.u32().is_some_and(|f| f != kind.format)
}

/// The entries of a cache file of `folder`; `None` when anything is off.
fn decode(bytes: &[u8], folder: &[u8], kind: &Kind) -> Option<Entries> {
    let mut r = Reader { b: bytes, at: 0 };
    if r.take(16)? != kind.magic || r.u32()? != kind.format || r.bytes()? != folder {
        return None;
    }
    let len = usize::try_from(r.u64()?).ok()?;
    let hash = r.u128()?;
    let body_at = r.at;
    let body = r.take(len)?;
    if r.at != bytes.len() || xxhash_rust::xxh3::xxh3_128(body) != hash {
        return None;
    }
    let mut r = Reader { b: bytes, at: body_at };
    let count = usize::try_from(r.u64()?).ok()?;
    // An entry takes at least 80 bytes: a count beyond that is a lie.
    let mut out = HashMap::with_capacity(count.min(len / 80 + 1));
    for _ in 0..count {
        let name = r.bytes()?.to_vec();
        let mut parts = [0u64; 7];
        for p in &mut parts {
            *p = r.u64()?;
        }
        let n = usize::try_from(r.u64()?).ok()?;
        let at = r.at;
        r.take(n)?;
        out.insert(name, (Stamp::from_parts(parts), at..at + n));
    }
    (r.at == bytes.len()).then_some(out)
}

/// Write `pieces` as the file `path` of the cache folder `dir` (made, private, when
/// missing): a private temporary file renamed over it (`crate::files`), refused when
/// `path` holds anything but a regular file. The error names the file.
pub(crate) fn write_atomically(dir: &Path, path: &Path, pieces: &[Vec<u8>]) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)?;
    let pieces: Vec<&[u8]> = pieces.iter().map(Vec::as_slice).collect();
    crate::files::write_whole(path, crate::files::Whole::CACHE, &pieces).map_err(|e| {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        std::io::Error::new(e.kind(), format!("{name}: {e}"))
    })
}

/// The one warning about a cache: what was wrong with the file found (`problem`, e.g.
/// "the listing cache F is damaged") and how the write after the run went (`wrote`:
/// whether a file was written, or why it could not be: `what` names the cache for that
/// message, `without` says how the run went on). "rebuilt" only when a file was written;
/// a fact the problem already gives is not repeated.
pub(crate) fn cache_warning(
    problem: Option<&str>,
    wrote: Result<bool, &std::io::Error>,
    what: &str,
    without: &str,
) -> Option<String> {
    match (problem, wrote) {
        (None, Ok(_)) => None,
        (None, Err(e)) => Some(format!("{what} cannot be written ({e}): {without}")),
        (Some(p), Ok(true)) => Some(format!("{p}: rebuilt")),
        (Some(p), Ok(false)) => Some(format!("{p}: not used")),
        (Some(p), Err(e)) => {
            let e = e.to_string();
            // (A write's error names the file first: "NAME: not a regular file".)
            let fact = e.split_once(": ").map_or(e.as_str(), |(_, f)| f);
            Some(if p.contains(fact) {
                format!("{p}, and cannot be replaced: {without}")
            } else {
                format!("{p}, and cannot be replaced ({e}): {without}")
            })
        }
    }
}

#[cfg(test)]
mod warning_tests {
    use super::cache_warning;

    #[test]
    fn rebuilt_only_when_written_and_each_fact_once() {
        let fifo = std::io::Error::other("c/list-1: not a regular file (a FIFO)");
        let full = std::io::Error::other("No space left on device");
        let w = |p, r, what| cache_warning(p, r, what, "listed without it");
        assert_eq!(w(None, Ok(true), "the listing cache in c"), None);
        assert_eq!(
            w(None, Err(&full), "the listing cache in c").as_deref(),
            Some("the listing cache in c cannot be written (No space left on device): listed without it")
        );
        assert_eq!(
            w(Some("the cache F is damaged"), Ok(true), "x").as_deref(),
            Some("the cache F is damaged: rebuilt")
        );
        assert_eq!(
            w(
                Some("the cache c/list-1 cannot be read (c/list-1: not a regular file (a FIFO))"),
                Err(&fifo),
                "x"
            )
            .as_deref(),
            Some(
                "the cache c/list-1 cannot be read (c/list-1: not a regular file (a FIFO)), and cannot be replaced: listed without it"
            )
        );
        assert_eq!(
            w(Some("the cache F is damaged"), Err(&full), "x").as_deref(),
            Some("the cache F is damaged, and cannot be replaced (No space left on device): listed without it")
        );
    }
}

//! The persistent listing cache: what a listing found in each file, kept between runs so
//! that the next listing reads only the files that changed, and of a file that only grew,
//! only the new bytes.
//!
//! # The store, and why
//! One file per listed folder (or sessions root) in the cache directory
//! ([`ListingCache::default_dir`]), in a versioned format of this crate's own
//! (`store.rs`), read with one `read` and written whole, to a temporary file that is then
//! renamed over the old one. The choice against SQLite and redb:
//! - *Crash safety*: a rename replaces the file whole or not at all, so a listing killed
//!   with -9 in the middle of an update leaves the old cache or the new one, never a mix
//!   (a temporary file is left behind, and removed by a later write once it is an hour
//!   old). A file damaged some other way (a full disk, a power cut before the data
//!   reached the disk) fails its checksums and is rebuilt: the cache needs no `fsync`.
//! - *Concurrent readers and writers*: a reader holds the file it opened, whatever is
//!   renamed over it; two writers each rename a complete file and the last one wins. Both
//!   are right about the files they read: what one cache trusts, it trusts only after
//!   checking it against the file (below), so neither needs a lock.
//! - *Speed on 10,000 entries*: a warm listing reads ~1 MB of entries (the texts, which
//!   can be much larger, in a section of their own read only when `allMessagesText` is
//!   wanted) and decodes them in a few milliseconds; it writes nothing when nothing
//!   changed. SQLite would add a C build of a megabyte and a query per file, redb a
//!   B-tree of pages, for a table that is always read whole and rarely written.
//!
//! The cost: a listing that changed anything rewrites the whole file (its text section
//! too). That is a sequential write of the cache's size, small next to reading the
//! sessions themselves.
//!
//! # When an entry is trusted
//! An entry is used as it is only when `stat` of the file gives the same device, inode,
//! size, mtime and ctime (to the nanosecond) as the `fstat` its bytes were read under. A
//! rewrite that restores the size and the mtime (`touch -d`) still moves the ctime,
//! which no call can set; rename-replace gives another inode. A file whose ctime was
//! within two seconds of the listing that read it is *racy* (as git calls it): a write in
//! the same clock tick would leave its stamp as it was, so a racy entry is read again
//! until its file has been still for long enough.
//!
//! A file that only grew (same device and inode, longer, its first and last 4 KiB of then
//! unchanged: two hashes kept in the entry) is read from the end of its last complete
//! line on, and the listing carried on from what the entry kept (`info.rs`' `Carry`).
//! Anything else (shorter, another inode, a hash that differs) is read whole.
//!
//! Which folders and files there are is never cached: every listing reads the folders,
//! so new, deleted and renamed files and folders, and other directory rules
//! (`PI_CODING_AGENT_DIR`, `--agent-dir`: another root, another cache file) are seen at
//! once. Entries of files no longer listed are dropped at the next write.
//!
//! # Failures
//! None is fatal. A cache file that is damaged, truncated, of another format version or
//! unreadable is ignored with one warning ([`CacheReport::warning`]) and rebuilt; a
//! cache directory that cannot be written means a listing without a cache, and a
//! warning.

use super::info;
use super::read::{Before, Candidate, Memo, Read, Scratch, read_appended, read_opened};
use super::store::{self, Decoded, Entry, Outcome, Refused};
use super::{SessionInfo, SkipFileReason};
use crate::js::string::JsStr;
use crate::source::{ReadMode, read_upto};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Where listings keep what they found in each session file (see the module docs): the
/// listing options' [`cache`](super::ListOptions::cache).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListingCache {
    dir: PathBuf,
    racy_ns: i128,
}

/// How close to the listing's start a file's ctime makes its entry racy.
const RACY_NS: i128 = 2_000_000_000;

impl ListingCache {
    /// A cache in `dir` (made when first written, with mode 0700).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        ListingCache {
            dir: dir.into(),
            racy_ns: RACY_NS,
        }
    }

    /// The platform's cache folder for pi-session: `$PI_SESSION_CACHE_DIR` when set, else
    /// `$XDG_CACHE_HOME/pi-session`, else `~/Library/Caches/pi-session` on macOS and
    /// `~/.cache/pi-session` elsewhere; `None` without a home folder.
    pub fn default_dir() -> Option<PathBuf> {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(d) = var("PI_SESSION_CACHE_DIR") {
            return Some(d);
        }
        if let Some(d) = var("XDG_CACHE_HOME").filter(|d| d.is_absolute()) {
            return Some(d.join("pi-session"));
        }
        let home = var("HOME")?;
        Some(if cfg!(target_os = "macos") {
            home.join("Library/Caches/pi-session")
        } else {
            home.join(".cache/pi-session")
        })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Entries of files whose ctime is within `window` of the listing's start are read
    /// again (2 s by default). For tests of the stamps themselves: with 0, only the
    /// stamps decide.
    #[doc(hidden)]
    pub fn with_racy_window(mut self, window: std::time::Duration) -> Self {
        self.racy_ns = i128::try_from(window.as_nanos()).unwrap_or(i128::MAX);
        self
    }
}

/// What the cache did in a listing ([`Listing::cache`](super::Listing::cache)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheReport {
    /// Files answered from the cache, without reading them.
    pub reused: usize,
    /// Files that only grew, read from where they ended before.
    pub appended: usize,
    /// The bytes read of those.
    pub appended_bytes: u64,
    /// Files read whole (new, changed, or not in the cache).
    pub read: usize,
    /// The bytes read of those.
    pub read_bytes: u64,
    /// Whether the cache file was written.
    pub written: bool,
    /// What went wrong with the cache, when something did (the listing is right all the
    /// same): a damaged or foreign cache file that is rebuilt, a folder that cannot be
    /// written.
    pub warning: Option<String>,
}

/// Where a listed file's answer came from, for the cache's next version.
pub(super) enum Source {
    /// Nothing to keep (no cache, or an outcome that is not stored).
    None,
    /// The entry of the loaded cache at this index, as it was.
    Kept(usize),
    /// A read: what to keep of it; `bool` whether its text was collected.
    Fresh(Memo, bool),
}

/// How a file was answered, for the report.
pub(super) enum Took {
    Reused,
    Appended(u64),
    Read(u64),
}

/// A cache loaded for one listing.
pub(super) struct Open {
    file: PathBuf,
    key: Vec<u8>,
    /// Sorted by path.
    entries: Vec<Entry>,
    /// The open cache file and where its texts are, to read them when wanted.
    source: Option<(File, u64, u64, u128)>,
    texts: OnceLock<Option<Vec<u8>>>,
    racy_before: i128,
    warning: Option<String>,
}

/// Nanoseconds since the epoch now.
fn now_ns() -> i128 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i128::try_from(d.as_nanos()).unwrap_or(i128::MAX),
        Err(_) => 0,
    }
}

impl Open {
    /// The cache for what `key` names (`all` or `dir`, and the folder), loaded when there
    /// is a usable one; the listing starts now.
    pub(super) fn load(cache: &ListingCache, kind: &str, folder: &Path) -> Open {
        let abs = std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf());
        let mut key = kind.as_bytes().to_vec();
        key.push(0);
        key.extend_from_slice(abs.as_os_str().as_encoded_bytes());
        let name = format!("list-{:032x}", xxhash_rust::xxh3::xxh3_128(&key));
        let file = cache.dir.join(name);
        let mut open = Open {
            file,
            key,
            entries: Vec::new(),
            source: None,
            texts: OnceLock::new(),
            racy_before: now_ns().saturating_sub(cache.racy_ns),
            warning: None,
        };
        match read_cache(&open.file) {
            Ok(None) => {}
            Ok(Some((f, d))) if d.key == open.key && d.entries.is_sorted_by(|a, b| a.path < b.path) => {
                open.source = Some((f, d.text_at, d.text_len, d.text_hash));
                open.entries = d.entries;
            }
            Ok(Some(_)) => {
                open.warning = Some(format!(
                    "the listing cache {} is not this listing's: rebuilt",
                    open.file.display()
                ));
            }
            Err(why) => {
                open.warning = Some(format!("the listing cache {} {why}: rebuilt", open.file.display()));
            }
        }
        open
    }

    fn find(&self, path: &[u8]) -> Option<usize> {
        self.entries.binary_search_by(|e| e.path.as_slice().cmp(path)).ok()
    }

    /// The text section, read once (and checked against its hash) on first use.
    fn texts(&self) -> Option<&[u8]> {
        self.texts
            .get_or_init(|| {
                let (f, at, len, hash) = self.source.as_ref()?;
                let mut buf = Vec::new();
                let got = read_upto(f, *at, *len, &mut buf).ok()?;
                (got == *len && xxhash_rust::xxh3::xxh3_128(&buf) == *hash).then_some(buf)
            })
            .as_deref()
    }

    /// An entry's text, its first `len` bytes when given.
    fn text_of(&self, e: &Entry, len: Option<u64>) -> Option<&[u8]> {
        let (at, full) = e.text?;
        let n = len.unwrap_or(full).min(full);
        self.texts()?
            .get(usize::try_from(at).ok()?..usize::try_from(at + n).ok()?)
    }

    /// The answer an entry holds, for the file at `path`; `None` when it cannot be given
    /// (the text is wanted and not there).
    fn answer(&self, e: &Entry, path: &Path, want_text: bool) -> Option<Result<SessionInfo, SkipFileReason>> {
        let Outcome::Listed {
            name,
            modified,
            message_count,
            first_message,
            bytes,
        } = &e.outcome
        else {
            let Outcome::Dropped(r) = &e.outcome else {
                unreachable!()
            };
            return Some(Err(r.clone()));
        };
        let header = crate::json::value::parse(e.memo.header_line.as_deref()?).ok()?;
        let mut s = info::from_header(path, &header);
        s.name = name.as_ref().map(|n| JsStr(n.clone().into()));
        s.modified = *modified;
        s.message_count = *message_count;
        s.first_message = JsStr(first_message.clone().into());
        s.bytes = *bytes;
        if want_text {
            s.all_messages_text = JsStr(self.text_of(e, None)?.to_vec().into());
        }
        Some(Ok(s))
    }

    /// List one file through the cache: the entry's answer when the file is provably as
    /// it was, the new bytes only when it only grew, else the whole file.
    pub(super) fn list_one(
        &self,
        c: &Candidate,
        mode: ReadMode,
        want_text: bool,
        scratch: &mut Scratch,
    ) -> (Result<SessionInfo, SkipFileReason>, Source, Took) {
        let stamp = c.stamp.or_else(|| c.stat().2);
        let key = c.path.as_os_str().as_encoded_bytes();
        if let (Some(i), Some(stamp)) = (self.find(key), stamp) {
            let e = &self.entries[i];
            let has_text = e.text.is_some() || matches!(e.outcome, Outcome::Dropped(_));
            if e.memo.stamp == stamp
                && !e.racy
                && (!want_text || has_text)
                && let Some(r) = self.answer(e, &c.path, want_text)
            {
                return (r, Source::Kept(i), Took::Reused);
            }
            if let Some(carry) = &e.memo.carry
                && stamp.same_file(&e.memo.stamp)
                && stamp.size() > e.memo.stamp.size()
                && (!want_text || has_text)
                && let Ok(file) = c.open()
            {
                let text = if want_text {
                    self.text_of(e, Some(carry.text_len))
                } else {
                    Some(&[][..])
                };
                // Collected without text, a carry goes on without it.
                let bare;
                let carry = if want_text {
                    carry
                } else {
                    bare = info::Carry {
                        any_text: false,
                        text_len: 0,
                        ..carry.clone()
                    };
                    &bare
                };
                if let Some(text) = text {
                    let before = Before {
                        size: e.memo.stamp.size(),
                        memo: &e.memo,
                        carry,
                        text,
                    };
                    if let Some((r, memo)) = read_appended(&c.path, &file, &before, scratch) {
                        let n = memo.as_ref().map_or(0, |m| m.stamp.size() - carry.offset);
                        return (r, fresh(memo, want_text), Took::Appended(n));
                    }
                }
            }
        }
        let (r, memo): Read = match c.open() {
            Ok(f) => read_opened(&c.path, &f, mode, scratch, true),
            Err(e) => (Err(SkipFileReason::io(&e)), None),
        };
        let n = memo.as_ref().map_or(0, |m| m.stamp.size());
        (r, fresh(memo, want_text), Took::Read(n))
    }

    /// Write the cache's next version: an entry for every listed file whose outcome can
    /// be stored, in path order, unless it would hold exactly what the loaded one holds.
    /// `rows` are the candidates' paths, outcomes and sources.
    pub(super) fn save(
        &self,
        cache: &ListingCache,
        rows: &[(&Path, Option<&Result<Arc<SessionInfo>, SkipFileReason>>, Source)],
        report: &mut CacheReport,
    ) {
        let mut changed = false;
        let mut kept = vec![false; self.entries.len()];
        let mut next: Vec<(Entry, Option<TextFrom<'_>>)> = Vec::with_capacity(rows.len());
        for (path, res, src) in rows {
            let Some(res) = res else { continue };
            match src {
                Source::None => {}
                Source::Kept(i) => {
                    kept[*i] = true;
                    let e = &self.entries[*i];
                    next.push((e.clone(), e.text.map(|_| TextFrom::Old(e))));
                }
                Source::Fresh(memo, with_text) => {
                    let outcome = match res {
                        Ok(info) => Outcome::Listed {
                            name: info.name.as_ref().map(|n| n.as_bytes().to_vec()),
                            modified: info.modified,
                            message_count: info.message_count,
                            first_message: info.first_message.as_bytes().to_vec(),
                            bytes: info.bytes,
                        },
                        Err(r) if store::storable(r) => Outcome::Dropped(r.clone()),
                        Err(_) => continue,
                    };
                    let text = match res {
                        Ok(info) if *with_text => Some(TextFrom::New(info.all_messages_text.as_bytes())),
                        _ => None,
                    };
                    let e = Entry {
                        path: path.as_os_str().as_encoded_bytes().to_vec(),
                        memo: memo.clone(),
                        racy: memo.stamp.ctime_ns() > self.racy_before,
                        outcome,
                        // Placed below.
                        text: text.as_ref().map(|_| (0, 0)),
                    };
                    match self.find(&e.path) {
                        Some(i) if same_entry(&self.entries[i], &e) => kept[i] = true,
                        _ => changed = true,
                    }
                    next.push((e, text));
                }
            }
        }
        if !changed && kept.iter().all(|&k| k) {
            return;
        }
        next.sort_by(|a, b| a.0.path.cmp(&b.0.path));
        next.dedup_by(|a, b| a.0.path == b.0.path);
        let mut texts = Vec::new();
        let mut entries = Vec::with_capacity(next.len());
        for (mut e, from) in next {
            let bytes = match from {
                Some(TextFrom::New(b)) => Some(b),
                Some(TextFrom::Old(old)) => self.text_of(old, None),
                None => None,
            };
            e.text = bytes.map(|b| {
                let at = texts.len() as u64;
                texts.extend_from_slice(b);
                (at, b.len() as u64)
            });
            entries.push(e);
        }
        let bytes = store::encode(&self.key, &entries, &texts);
        match write_atomically(&cache.dir, &self.file, &bytes) {
            Ok(()) => report.written = true,
            Err(e) => {
                let w = format!(
                    "cannot write the listing cache in {}: {e} (listing without it)",
                    cache.dir.display()
                );
                report.warning.get_or_insert(w);
            }
        }
    }

    /// The warning from loading, if any.
    pub(super) fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }
}

/// Where an entry's text comes from when the cache is written.
enum TextFrom<'a> {
    New(&'a [u8]),
    Old(&'a Entry),
}

fn fresh(memo: Option<Memo>, with_text: bool) -> Source {
    memo.map_or(Source::None, |m| Source::Fresh(m, with_text))
}

/// Whether a fresh entry holds what the loaded one does (so nothing needs writing).
fn same_entry(old: &Entry, new: &Entry) -> bool {
    old.memo == new.memo
        && old.racy == new.racy
        && old.outcome == new.outcome
        && old.text.is_some() == new.text.is_some()
}

/// The cache file, decoded up to its texts, and kept open to read them; `Ok(None)` when
/// there is none.
fn read_cache(path: &Path) -> Result<Option<(File, Decoded)>, String> {
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read ({e})")),
    };
    let len = f.metadata().map_err(|e| format!("cannot be read ({e})"))?.len();
    let mut buf = Vec::new();
    read_upto(&f, 0, len.min(64 << 10), &mut buf).map_err(|e| format!("cannot be read ({e})"))?;
    let need = match store::prefix_bytes_needed(&buf) {
        Some(n) if n as u64 <= len => n,
        _ if buf.len() >= 16 && buf[..16] != store::MAGIC[..] => {
            return Err("is not a cache file of this version".into());
        }
        _ => return Err("is damaged (truncated)".into()),
    };
    if need > buf.len() {
        let have = buf.len();
        read_upto(&f, have as u64, (need - have) as u64, &mut buf).map_err(|e| format!("cannot be read ({e})"))?;
    }
    match store::decode(&buf[..need.min(buf.len())]) {
        Ok(d) => Ok(Some((f, d))),
        Err(Refused::Foreign) => Err("is not a cache file of this version".into()),
        Err(Refused::Damaged) => Err("is damaged".into()),
    }
}

/// Write `bytes` to `path` through a temporary file in `dir` renamed over it; temporary
/// files of writers that died (an hour old) are removed.
fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), now_ns()));
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let done = o
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    remove_stale_temporaries(dir);
    done
}

fn remove_stale_temporaries(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let n = e.file_name();
        let n = n.as_encoded_bytes();
        if !(n.starts_with(b".list-") && n.ends_with(b".tmp")) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 3600);
        if old {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

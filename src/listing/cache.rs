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
//! A file that grew (same device and inode, longer) is taken as appended to only when
//! its bytes up to the old end still hash to the entry's print (the digest of the
//! [`Print`](crate::source::Print) of the bytes listed: an XXH3-64 hash per 4 MiB
//! block). Then only the new bytes are read, from the end of the last complete line on,
//! and the listing carried on from what the entry kept (`info.rs`' `Carry`). Anything
//! else (shorter, another inode, a print that differs: a same-length edit anywhere, even
//! with an append after it) is read whole. Hashing the old bytes reads them (a few GB/s
//! from the page cache) but parses nothing.
//!
//! Which folders and files there are is never cached: every listing reads the folders,
//! so new, deleted and renamed files and folders, and other directory rules
//! (`PI_CODING_AGENT_DIR`, `--agent-dir`: another root, another cache file) are seen at
//! once. Entries of files no longer listed are dropped at the next write.
//!
//! Network file systems: the Linux NFS client answers `stat` from its attribute cache
//! (3 to 60 s by default) where `open` asks the server, so a file another machine changed
//! that recently may still show its old stamp, and its old entry be used. Mount with
//! `actimeo=0` (or `noac`), or list with `--no-cache`, where that matters.
//!
//! # Failures
//! None is fatal. A cache file that is damaged, truncated, of another format version or
//! unreadable is ignored with one warning ([`CacheReport::warning`]) and rebuilt; a
//! cache directory that cannot be written means a listing without a cache, and a
//! warning.

use super::read::{Before, Candidate, Memo, Read, Scratch, read_appended, read_opened};
use super::store::{self, Entry, Listed, Outcome, Refused};
use super::{SessionInfo, SkipFileReason};
use crate::js::string::JsStr;
use crate::json::Value;
use crate::source::{RACY_NS, ReadMode, Source, Stamp, now_ns, read_upto};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Where listings keep what they found in each session file (see the module docs): the
/// listing options' [`cache`](super::ListOptions::cache).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListingCache {
    dir: PathBuf,
    racy_ns: i128,
}

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

    /// The ctime before which a file read now is not racy (see the module docs): for the
    /// search cache, which trusts stamps the same way.
    pub(crate) fn racy_before(&self) -> i128 {
        now_ns().saturating_sub(self.racy_ns)
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
pub(super) enum Origin {
    /// Nothing to keep (no cache, or an outcome that is not stored).
    None,
    /// The entry of the loaded cache at this index, as it was.
    Kept(usize),
    /// A read: what to keep of it; `bool` whether its text was collected.
    Fresh(Box<Memo>, bool),
}

/// How a file was answered, for the report.
pub(super) enum Took {
    Reused,
    Appended(u64),
    Read(u64),
}

/// A cache file read for one listing (its entries are decoded by [`View::new`], and
/// borrow from it).
pub(super) struct Open {
    file: PathBuf,
    key: Vec<u8>,
    /// The file, mapped (a truncation under the mapping reads zeros, and is caught by
    /// [`Open::held`]), and where its sections are.
    loaded: Option<(Source, store::Sections)>,
    racy_before: i128,
    warning: Option<String>,
}

impl Open {
    /// The cache of the listing of `folder` as `kind` (`all` or `dir`), read when there
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
            loaded: None,
            racy_before: now_ns().saturating_sub(cache.racy_ns),
            warning: None,
        };
        match read_cache(&open.file) {
            Ok(None) => {}
            Ok(Some((src, s))) if s.key == open.key => open.loaded = Some((src, s)),
            Ok(Some(_)) => open.warn("is not this listing's"),
            Err(why) => open.warn(&why),
        }
        open
    }

    /// Whether the cache file's bytes stayed what they were while the listing used them
    /// (no one truncated or rewrote it in place: writers of caches rename new files).
    pub(super) fn held(&self) -> bool {
        self.loaded
            .as_ref()
            .is_none_or(|(src, _)| src.settled().unwrap_or(false))
    }

    fn warn(&mut self, why: &str) {
        self.warning = Some(format!("the listing cache {} {why}", self.file.display()));
    }
}

/// A loaded cache's entries, looked up by path.
pub(super) struct View<'o> {
    open: &'o Open,
    /// In the order of the listing that wrote them.
    entries: Vec<Entry<'o>>,
    by_path: ahash::AHashMap<&'o [u8], u32>,
    /// The text log, mapped on first use (`None`: there is none of the entries'
    /// generation); shared with the [`super::TextRef`]s handed out.
    texts: OnceLock<Option<Arc<Source>>>,
    /// Texts of unchanged files are handed out as [`super::TextRef`]s, unread.
    pub(super) lazy_text: bool,
    /// A text failed its hash: the log is written anew.
    texts_bad: std::sync::atomic::AtomicBool,
    warning: Option<String>,
}

impl<'o> View<'o> {
    /// The entries of `open` (none, with a warning, when they do not decode).
    pub(super) fn new(open: &'o Open) -> View<'o> {
        let mut warning = open.warning.clone();
        let entries = match &open.loaded {
            None => Vec::new(),
            Some((src, s)) => match store::entries(&src.bytes()[s.meta.clone()], s.count) {
                Some(e) => e,
                _ => {
                    warning = Some(format!("the listing cache {} is damaged", open.file.display()));
                    Vec::new()
                }
            },
        };
        let by_path = entries.iter().enumerate().map(|(i, e)| (e.path, i as u32)).collect();
        View {
            open,
            entries,
            by_path,
            texts: OnceLock::new(),
            lazy_text: false,
            texts_bad: std::sync::atomic::AtomicBool::new(false),
            warning,
        }
    }

    fn find(&self, path: &[u8]) -> Option<usize> {
        self.by_path.get(path).map(|&i| i as usize)
    }

    /// The text log of the entries' generation, mapped once on first use.
    fn texts(&self) -> Option<&[u8]> {
        self.texts_source().map(|s| s.bytes())
    }

    fn texts_source(&self) -> Option<&Arc<Source>> {
        self.texts
            .get_or_init(|| {
                let (_, s) = self.open.loaded.as_ref()?;
                let f = crate::source::open_for_reading(&text_log_path(&self.open.file)).ok()?;
                let src = Source::from_file(f, ReadMode::Auto).ok()?;
                (store::text_log_generation(src.bytes()) == Some(s.text_gen) && s.text_gen != 0).then(|| Arc::new(src))
            })
            .as_ref()
    }

    /// An entry's text (checked against its hash), its first `len` bytes when given.
    fn text_of(&self, e: &Entry<'_>, len: Option<u64>) -> Option<&[u8]> {
        let (at, full, hash) = e.text?;
        let t = self
            .texts()
            .and_then(|t| t.get(usize::try_from(at).ok()?..usize::try_from(at.checked_add(full)?).ok()?));
        let Some(t) = t.filter(|t| xxhash_rust::xxh3::xxh3_64(t) == hash) else {
            self.texts_bad.store(true, std::sync::atomic::Ordering::Relaxed);
            return None;
        };
        t.get(..usize::try_from(len.unwrap_or(full).min(full)).ok()?)
    }

    /// The answer an entry holds, for the file at `path`; `None` when it cannot be given
    /// (the text is wanted and not there).
    fn answer(&self, e: &Entry<'_>, path: &Path, want_text: bool) -> Option<Result<SessionInfo, SkipFileReason>> {
        let l = match &e.outcome {
            Outcome::Listed(l) => l,
            Outcome::Dropped(r) => return Some(Err(r.clone())),
        };
        let value = |v: &Option<std::borrow::Cow<'_, [u8]>>| -> Option<Option<Value<'static>>> {
            match v {
                None => Some(None),
                Some(j) => Some(Some(crate::json::value::parse(j).ok()?.into_owned())),
            }
        };
        let mut s = SessionInfo {
            path: path.to_path_buf(),
            id: value(&l.id)?,
            cwd: JsStr(l.cwd.to_vec().into()),
            name: l.name.map(|n| JsStr(n.to_vec().into())),
            parent_session_path: value(&l.parent)?,
            created: l.created,
            modified: l.modified,
            message_count: l.message_count,
            first_message: JsStr(l.first_message.to_vec().into()),
            all_messages_text: JsStr::from_str("").into_owned(),
            bytes: l.bytes,
            text_ref: None,
        };
        if want_text && self.lazy_text {
            // Left in the log, unread: only that it is there is checked.
            let (at, len, hash) = e.text?;
            let log = self.texts_source()?;
            (at.checked_add(len)? <= log.len()).then_some(())?;
            s.text_ref = Some(super::TextRef::new(log.clone(), at, len, hash));
        } else if want_text {
            s.all_messages_text = JsStr(self.text_of(e, None)?.to_vec().into());
        }
        Some(Ok(s))
    }

    /// List one file through the cache: the entry's answer when the file is provably as
    /// it was, the new bytes only when it only grew, else the whole file.
    /// The answer of the entry of `c` when it holds as it is (the file's stamp, `stamp`,
    /// is the entry's, not racy, and the text is there when wanted), and the entry's index.
    pub(super) fn reuse(
        &self,
        c: &Candidate,
        stamp: Option<Stamp>,
        want_text: bool,
    ) -> Option<(Result<SessionInfo, SkipFileReason>, usize)> {
        let stamp = stamp?;
        let i = self.find(c.path.as_os_str().as_encoded_bytes())?;
        let e = &self.entries[i];
        let has_text = e.text.is_some() || matches!(e.outcome, Outcome::Dropped(_));
        if e.stamp == stamp && !e.racy && (!want_text || has_text) {
            return self.answer(e, &c.path, want_text).map(|r| (r, i));
        }
        None
    }

    pub(super) fn list_one(
        &self,
        c: &Candidate,
        mode: ReadMode,
        want_text: bool,
        scratch: &mut Scratch,
    ) -> (Result<SessionInfo, SkipFileReason>, Origin, Took) {
        let stamp = c.stamp.or_else(|| c.stat().2);
        if let Some((r, i)) = self.reuse(c, stamp, want_text) {
            return (r, Origin::Kept(i), Took::Reused);
        }
        let key = c.path.as_os_str().as_encoded_bytes();
        if let (Some(i), Some(stamp)) = (self.find(key), stamp) {
            let e = &self.entries[i];
            let has_text = e.text.is_some() || matches!(e.outcome, Outcome::Dropped(_));
            if let Some(carry) = &e.carry
                && stamp.same_file(&e.stamp)
                && stamp.size() > e.stamp.size()
                && (!want_text || has_text)
                && let Ok(file) = c.open()
            {
                let text = if want_text {
                    self.text_of(e, Some(carry.text_len))
                } else {
                    Some(&[][..])
                };
                let mut carry = carry.to_carry(e.header_line);
                if !want_text {
                    // Collected without text, a carry goes on without it.
                    carry.any_text = false;
                    carry.text_len = 0;
                }
                if let Some(text) = text {
                    let memo = e.memo();
                    let before = Before {
                        size: e.stamp.size(),
                        memo: &memo,
                        carry: &carry,
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
    /// be stored; nothing when it would hold what the loaded one holds.
    /// `rows` are the candidates' paths, outcomes and sources.
    ///
    /// # Errors
    /// The cache file cannot be written (a failure to write the texts is a warning in
    /// `report`, the entries kept without them).
    pub(super) fn save(&self, cache: &ListingCache, rows: &[Row<'_>], report: &mut CacheReport) -> std::io::Result<()> {
        use rayon::prelude::*;
        // First, whether anything changed: a fresh row's entry is built (in parallel) and
        // compared with the loaded one; a kept row costs nothing yet. A warm run that
        // changed nothing thus writes and builds nothing (building every entry of 10^5
        // files to find that out took 110 MB).
        let steps: Vec<Step<'_>> = rows
            .par_iter()
            .map(|(path, res, src)| match src {
                Origin::None => Step::Skip,
                Origin::Kept(i) => Step::Kept(*i),
                Origin::Fresh(memo, with_text) => {
                    let outcome = match res {
                        Ok(info) => Outcome::Listed(Listed {
                            id: info.id.as_ref().map(|v| v.stringify().into_bytes().into()),
                            cwd: info.cwd.as_bytes(),
                            parent: info
                                .parent_session_path
                                .as_ref()
                                .map(|v| v.stringify().into_bytes().into()),
                            created: info.created,
                            name: info.name.as_ref().map(|n| n.as_bytes()),
                            modified: info.modified,
                            message_count: info.message_count,
                            first_message: info.first_message.as_bytes(),
                            bytes: info.bytes,
                        }),
                        Err(r) if store::storable(r) => Outcome::Dropped(r.clone()),
                        Err(_) => return Step::Skip,
                    };
                    let text = match res {
                        Ok(info) if *with_text => Some(TextFrom::New(info.all_messages_text.as_bytes())),
                        _ => None,
                    };
                    let path = path.as_os_str().as_encoded_bytes();
                    let racy = memo.stamp.ctime_ns() > self.open.racy_before;
                    let e = Entry::fresh(path, memo, racy, outcome, text.is_some());
                    let old = self.find(path);
                    let same = old.is_some_and(|i| same_entry(&self.entries[i], &e));
                    Step::Made(Box::new((e, text, old, same)))
                }
            })
            .collect();
        let mut kept = vec![false; self.entries.len()];
        let mut changed = false;
        for step in &steps {
            match step {
                Step::Skip => {}
                Step::Kept(i) => kept[*i] = true,
                Step::Made(m) => match m.2 {
                    Some(i) if m.3 => kept[i] = true,
                    _ => changed = true,
                },
            }
        }
        if !changed && kept.iter().all(|&k| k) && self.warning.is_none() && !self.texts_damaged() {
            return Ok(());
        }
        drop(kept);
        let next = steps.into_iter().filter_map(|step| match step {
            Step::Skip => None,
            Step::Kept(i) => {
                let e = &self.entries[i];
                Some((e.clone(), e.text.map(|_| TextFrom::Old(e))))
            }
            Step::Made(m) => {
                let (e, text, _, _) = *m;
                Some((e, text))
            }
        });
        let mut entries = Vec::with_capacity(rows.len());
        let mut texts: Vec<(usize, &[u8], Option<u64>)> = Vec::new();
        for (mut e, from) in next {
            let text = match from {
                Some(TextFrom::New(b)) => Some((b, None)),
                Some(TextFrom::Old(old)) => self
                    .text_of(old, None)
                    .zip(old.text.map(|t| t.0))
                    .map(|(b, at)| (b, Some(at))),
                None => None,
            };
            e.text = None;
            if let Some((b, old_at)) = text {
                texts.push((entries.len(), b, old_at));
            }
            entries.push(e);
        }
        let text_gen = match self.write_texts(&cache.dir, &texts, &mut entries) {
            Ok(g) => g,
            Err(e) => {
                report.warning.get_or_insert(format!(
                    "cannot write the listing cache's texts in {}: {e} (kept without them)",
                    cache.dir.display()
                ));
                for e in &mut entries {
                    e.text = None;
                }
                0
            }
        };
        let pieces = store::encode_pieces(&self.open.key, text_gen, &entries);
        let wrote = crate::store::write_atomically(&cache.dir, &self.open.file, &pieces);
        report.written = wrote.is_ok();
        wrote
    }

    /// Put `texts` (entry index, bytes, offset in the old log when kept) in the text log and their
    /// places in the entries; the log's generation (0 when there are no texts). New texts
    /// are appended in one `write` (`O_APPEND`: writers never overlap); the log is written
    /// anew, under a new generation, when there is none of the entries' generation, a text
    /// failed its check, or more than half of it would be dead texts.
    fn write_texts(
        &self,
        dir: &Path,
        texts: &[(usize, &[u8], Option<u64>)],
        entries: &mut [Entry<'_>],
    ) -> std::io::Result<u64> {
        use std::io::{Seek, Write};
        if texts.is_empty() {
            return Ok(0);
        }
        let log = text_log_path(&self.open.file);
        let live: u64 = texts.iter().map(|t| t.1.len() as u64).sum();
        let old_gen = self.open.loaded.as_ref().map_or(0, |(_, s)| s.text_gen);
        let log_len = self.texts().map_or(0, |t| t.len() as u64);
        let place = |entries: &mut [Entry<'_>], i: usize, at: u64, b: &[u8]| {
            entries[i].text = Some((at, b.len() as u64, xxhash_rust::xxh3::xxh3_64(b)));
        };
        let keep_log = self.texts().is_some() && !self.texts_damaged() && log_len <= 2 * live + (1 << 20);
        if keep_log {
            let new: Vec<&(usize, &[u8], Option<u64>)> = texts.iter().filter(|t| t.2.is_none()).collect();
            let mut buf = Vec::with_capacity(new.iter().map(|t| t.1.len()).sum());
            for t in &new {
                buf.extend_from_slice(t.1);
            }
            let mut f = crate::files::open_append(&log, false)?;
            let mut head = Vec::new();
            read_upto(&f, 0, 24, &mut head)?;
            // The log another writer may have put in its place since it was mapped is not
            // the one the kept texts are in.
            let appended =
                store::text_log_generation(&head) == Some(old_gen) && (buf.is_empty() || f.write(&buf)? == buf.len());
            if appended {
                let end = f.stream_position()?;
                let mut at = end - buf.len() as u64;
                for &(i, b, old_at) in texts {
                    match old_at {
                        Some(old_at) => place(entries, i, old_at, b),
                        None => {
                            place(entries, i, at, b);
                            at += b.len() as u64;
                        }
                    }
                }
                return Ok(old_gen);
            }
        }
        // A new log: a generation no other writer will pick.
        let generation = loop {
            let g = (now_ns() as u64) ^ (u64::from(std::process::id()) << 32) ^ (texts.len() as u64).rotate_left(17);
            if g != 0 && g != old_gen {
                break g;
            }
        };
        let mut buf = Vec::with_capacity(24 + live as usize);
        buf.extend_from_slice(&store::text_log_header(generation));
        for &(i, b, _) in texts {
            place(entries, i, buf.len() as u64, b);
            buf.extend_from_slice(b);
        }
        crate::store::write_atomically(dir, &log, &[buf])?;
        Ok(generation)
    }

    /// The warning from loading or from reading the texts, if any.
    pub(super) fn warning(&self) -> Option<String> {
        if let Some(w) = &self.warning {
            return Some(w.clone());
        }
        self.texts_damaged().then(|| {
            format!(
                "the texts of the listing cache {} are damaged",
                self.open.file.display()
            )
        })
    }

    /// Whether a text failed its check.
    fn texts_damaged(&self) -> bool {
        self.texts_bad.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The text log beside a cache file.
fn text_log_path(file: &Path) -> PathBuf {
    let mut p = file.as_os_str().to_owned();
    p.push(".text");
    PathBuf::from(p)
}

/// A row's entry for the next version, where its text comes from, the loaded entry of
/// its path, and whether it holds the same.
type Made<'a> = (Entry<'a>, Option<TextFrom<'a>>, Option<usize>, bool);

/// What [`View::save`] does with a row: nothing, keep a loaded entry, or store the entry
/// built from a read (its text, the loaded entry of its path, whether that is the same).
enum Step<'a> {
    Skip,
    Kept(usize),
    Made(Box<Made<'a>>),
}

/// Where an entry's text comes from when the cache is written.
enum TextFrom<'a> {
    New(&'a [u8]),
    Old(&'a Entry<'a>),
}

fn fresh(memo: Option<Memo>, with_text: bool) -> Origin {
    memo.map_or(Origin::None, |m| Origin::Fresh(Box::new(m), with_text))
}

/// A listed file for [`View::save`]: its path, its outcome, and where that came from.
pub(super) type Row<'a> = (&'a Path, &'a Result<Arc<SessionInfo>, SkipFileReason>, Origin);

/// Whether a fresh entry holds what the loaded one does (so nothing needs writing).
fn same_entry(old: &Entry<'_>, new: &Entry<'_>) -> bool {
    let (mut a, mut b) = (old.clone(), new.clone());
    a.text = a.text.map(|_| (0, 0, 0));
    b.text = b.text.map(|_| (0, 0, 0));
    a == b
}

/// The cache file mapped, its meta section checked; `Ok(None)` when there is none.
/// The cache file of the listing of `folder` as `kind` (`all` or `dir`), and the path and
/// stamp of each file it holds an entry of that a listing would trust (not racy): `None`
/// when there is no usable file (none, damaged, another version's, another listing's).
pub(crate) fn stamps_of(cache: &ListingCache, kind: &str, folder: &Path) -> (PathBuf, Option<Vec<(PathBuf, Stamp)>>) {
    let open = Open::load(cache, kind, folder);
    let view = View::new(&open);
    let stamps = (open.loaded.is_some() && view.warning.is_none()).then(|| {
        let os = |b: &[u8]| PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b));
        view.entries
            .iter()
            .filter(|e| !e.racy)
            .map(|e| (os(e.path), e.stamp))
            .collect()
    });
    (open.file.clone(), stamps)
}

fn read_cache(path: &Path) -> Result<Option<(Source, store::Sections)>, String> {
    let unreadable = |e: std::io::Error| format!("cannot be read ({e})");
    let f = match crate::source::open_for_reading(path) {
        Ok(f) => f,
        // No cache yet (or no folder for it: the write says so).
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(unreadable(e)),
    };
    let src = Source::from_file(f, ReadMode::Auto).map_err(unreadable)?;
    match store::sections(src.bytes()) {
        Ok(s) => Ok(Some((src, s))),
        Err(Refused::Foreign) => Err("is not a cache file of this version".into()),
        Err(Refused::Damaged) => Err("is damaged".into()),
    }
}

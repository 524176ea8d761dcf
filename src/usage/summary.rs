//! The usage summary: every record of a whole tree of sessions in one cache file, with
//! who owns each, so that a report over a tree that did not change opens no session and
//! decodes nothing: it `stat`s the files, maps this file and counts.
//!
//! One summary per list of roots (`usum-<XXH3 of the roots>` beside the other caches),
//! written only for roots that are all folders. Its files are the tree's files in path
//! order, each with the `fstat` its records were read under, whether that stamp can vouch
//! for them (not racy: `source::Stamp`), and, for a session, its header and where its
//! records are. Records are fixed-width, so that counting them is reading them:
//!
//! ```text
//! magic    16 bytes  "pi-session-usum\n"
//! version  u32       FORMAT
//! body     u64 length, u128 sum (the XXH3-128 of the XXH3-128s of its 4 MiB pieces, in
//!          order: checked on every core), then:
//!   roots   count (u64), each (u64 length, bytes)
//!   models  count (u64), each provider and model (u64 length, bytes)
//!   files   count (u64), each: path (u64 length, bytes), stamp (7 u64), trusted (u8),
//!           session (u8); a session then: created (f64 bits), cwd, id and
//!           parentSession as JSON text (u64 length, bytes each), its models (count u64,
//!           each a u32 into `models`), its first record and record count (u64 each)
//!   folders count (u64), each: path, stamp (7 u64), trusted (u8), the names of its
//!           session files (count u64, each u64 length and bytes)
//!   zeros to a multiple of 8
//!   records 56 bytes each: time (f64), cost (f64), input, output, cacheRead, cacheWrite
//!           (u64 each), model (u32, into its session's models), source | time-from << 2
//!           | repeated << 4 (u8), 3 zero bytes
//!   keys    16 bytes each, the records' in the same order
//! ```
//!
//! **Folders.** The roots' subfolders as the walk that found the files saw them
//! (`tree.rs`): a folder whose stamp is the stored one, not racy then, is not listed again.
//!
//! **Trust.** A session's records are used only while its file's stamp is the stored
//! one and was not racy; every other file of the tree is read as without the summary
//! (through the per-folder usage cache). Who owns a record (`repeated`) is kept as of the
//! write: a kept record whose key no file read now holds, and no stored file that is not
//! kept held, is owned as it was (the files holding its key are the same, in the same
//! owners' order); the other keys are decided again among all their records
//! ([`owned_with`]). A damaged, foreign or other-version summary is not used and is
//! written anew.

use super::owners::{Owned, Sessions, owners, starts};
use super::{Record, Source, Time, TimeFrom, Tokens};
use crate::listing::SessionInfo;
use crate::source::Stamp;
use crate::store::codec::{Reader, put_bytes, put_u64};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 16] = b"pi-session-usum\n";
const FORMAT: u32 = 2;
/// Bytes of a piece of the body, each hashed on its own.
const PIECE: usize = 4 << 20;
/// Bytes of one record.
const REC: usize = 56;
/// Bytes of one key.
const KEY: usize = 16;

/// The file name of the summary of `roots` in the cache folder `dir`.
pub(crate) fn file_of(dir: &Path, roots: &[PathBuf]) -> PathBuf {
    let mut k = Vec::new();
    for r in roots {
        let abs = std::path::absolute(r).unwrap_or_else(|_| r.clone());
        k.extend_from_slice(abs.as_os_str().as_encoded_bytes());
        k.push(0);
    }
    dir.join(format!("usum-{:032x}", xxhash_rust::xxh3::xxh3_128(&k)))
}

/// One file of a summary.
pub(crate) struct Kept {
    /// Where its path is in the summary's bytes.
    path: std::ops::Range<usize>,
    pub(crate) stamp: Stamp,
    pub(crate) trusted: bool,
    /// Its header, models and records, when it is a session.
    session: Option<KeptSession>,
}

/// A session of a summary.
struct KeptSession {
    /// Its header's `timestamp` (the owners' order needs it of every session).
    created: f64,
    /// Where the rest of its header (cwd, id, parentSession) is in the summary's bytes,
    /// and the header decoded, once asked for.
    header: std::ops::Range<usize>,
    info: std::sync::OnceLock<SessionInfo>,
    /// Its (provider, model) pairs, as numbers into the summary's models.
    models: Vec<u32>,
    /// Its records: `first..first + len` of the summary's.
    first: usize,
    len: usize,
}

/// A folder of a summary: its stamp and where its names are.
struct Folder {
    stamp: Stamp,
    trusted: bool,
    names: usize,
}

/// A summary as read: its files and where its records are.
pub(crate) struct Summary {
    source: crate::source::Source,
    files: Vec<Kept>,
    folders: std::collections::HashMap<PathBuf, Folder, ahash::RandomState>,
    models: Vec<(String, String)>,
    recs_at: usize,
    keys_at: usize,
}

/// Why a summary was not used.
pub(crate) enum Unusable {
    /// There is none (or it is of another format, as after an upgrade).
    Missing,
    /// It is there but damaged or unreadable: the warning.
    Damaged(String),
}

impl Summary {
    /// The summary at `file`.
    pub(crate) fn load(file: &Path) -> Result<Summary, Unusable> {
        // (Never blocking on a FIFO nor reading a device put in its place: refused.)
        let source = match crate::source::open_for_reading(file)
            .and_then(|f| crate::source::Source::from_file_unprinted(f, crate::source::ReadMode::Mmap, Vec::new()))
        {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unusable::Missing),
            Err(e) => {
                return Err(Unusable::Damaged(format!(
                    "the usage summary {} cannot be read ({e})",
                    file.display()
                )));
            }
        };
        let b = source.bytes();
        if b.len() < 20 || &b[..16] != MAGIC || u32::from_le_bytes(b[16..20].try_into().unwrap_or_default()) != FORMAT {
            // (One of another format, as after an upgrade, is rebuilt without a word.)
            return if b.len() >= 20 && &b[..16] == MAGIC {
                Err(Unusable::Missing)
            } else {
                Err(Unusable::Damaged(format!(
                    "the usage summary {} is damaged",
                    file.display()
                )))
            };
        }
        let damaged = || Unusable::Damaged(format!("the usage summary {} is damaged", file.display()));
        let d = decode(b).ok_or_else(damaged)?;
        if !source.intact() {
            return Err(damaged());
        }
        Ok(Summary {
            source,
            files: d.files,
            folders: d.folders,
            models: d.models,
            recs_at: d.recs_at,
            keys_at: d.keys_at,
        })
    }

    /// Whether no byte of it has read as zeros since it was loaded (another process cut
    /// the file short: `source/guard.rs`).
    pub(crate) fn intact(&self) -> bool {
        self.source.intact()
    }

    /// How many files it holds.
    pub(crate) fn len(&self) -> usize {
        self.files.len()
    }

    /// Stored file `i`.
    pub(crate) fn file(&self, i: usize) -> &Kept {
        &self.files[i]
    }

    /// Stored file `i`'s path.
    pub(crate) fn path(&self, i: usize) -> &Path {
        Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
            &self.source.bytes()[self.files[i].path.clone()],
        ))
    }

    /// Whether stored file `i` is a session.
    pub(crate) fn is_session(&self, i: usize) -> bool {
        self.files[i].session.is_some()
    }

    /// The session files of folder `dir` when its stamp is `stamp` and was stored
    /// trusted: it holds the names it held then (`tree.rs`).
    pub(crate) fn folder(&self, dir: &Path, stamp: &Stamp) -> Option<Vec<PathBuf>> {
        let f = self.folders.get(dir).filter(|f| f.trusted && f.stamp == *stamp)?;
        let mut r = Reader {
            b: self.source.bytes(),
            at: f.names,
        };
        let n = usize::try_from(r.u64()?).ok()?;
        let mut files = Vec::with_capacity(n.min(r.b.len()));
        for _ in 0..n {
            files.push(dir.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
                r.bytes()?,
            )));
        }
        Some(files)
    }

    /// Stored folder `dir`'s stamp and whether it was trusted.
    pub(crate) fn folder_stamp(&self, dir: &Path) -> Option<(Stamp, bool)> {
        self.folders.get(dir).map(|f| (f.stamp, f.trusted))
    }

    /// How many folders it holds.
    pub(crate) fn folders(&self) -> usize {
        self.folders.len()
    }

    /// Which stored file each of `paths` is.
    pub(crate) fn find(&self, paths: &[PathBuf]) -> Vec<Option<usize>> {
        fn bytes(p: &Path) -> &[u8] {
            p.as_os_str().as_encoded_bytes()
        }
        let stored = |i: usize| &self.source.bytes()[self.files[i].path.clone()];
        // (Mostly the same files as last time, in the same order.)
        if paths.len() == self.files.len() && paths.iter().enumerate().all(|(i, p)| bytes(p) == stored(i)) {
            return (0..paths.len()).map(Some).collect();
        }
        let at: std::collections::HashMap<&[u8], usize, ahash::RandomState> =
            (0..self.files.len()).map(|i| (stored(i), i)).collect();
        paths.iter().map(|p| at.get(bytes(p)).copied()).collect()
    }

    fn session(&self, i: usize) -> &KeptSession {
        self.files[i].session.as_ref().expect("a kept session")
    }

    /// The header `timestamp` of stored file `i` (a session).
    pub(crate) fn created(&self, i: usize) -> f64 {
        self.session(i).created
    }

    /// The header of stored file `i` (a session).
    pub(crate) fn info(&self, i: usize) -> &SessionInfo {
        let s = self.session(i);
        s.info.get_or_init(|| {
            let path = self.path(i);
            // (Checked when the summary was loaded.)
            let h = header(self.source.bytes(), s.header.start, s.created).unwrap_or(super::scan::Header {
                created: s.created,
                cwd: crate::js::string::JsStr::default(),
                id: None,
                parent: None,
            });
            super::scan::info(path, h)
        })
    }

    /// The records of stored file `i` (a session).
    pub(crate) fn records(&self, i: usize) -> impl Iterator<Item = Record> + '_ {
        let s = self.session(i);
        (s.first..s.first + s.len).map(move |r| self.record_at(r))
    }

    /// Record `j` of stored file `i` (a session).
    pub(crate) fn record(&self, i: usize, j: usize) -> Record {
        let s = self.session(i);
        self.record_at(s.first + j)
    }

    /// Whether record `j` of stored file `i` repeated a key when the summary was made.
    fn repeated(&self, r: usize) -> bool {
        self.source.bytes()[self.recs_at + r * REC + 52] & 0x10 != 0
    }

    fn record_at(&self, r: usize) -> Record {
        let b = &self.source.bytes()[self.recs_at + r * REC..self.recs_at + (r + 1) * REC];
        let u = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
        let flags = b[52];
        let k = &self.source.bytes()[self.keys_at + r * KEY..self.keys_at + (r + 1) * KEY];
        Record {
            key: [
                u64::from_le_bytes(k[..8].try_into().unwrap_or_default()),
                u64::from_le_bytes(k[8..].try_into().unwrap_or_default()),
            ],
            time: Time {
                ms: f64::from_bits(u(0)),
                from: time_from(flags >> 2 & 3),
            },
            // (Two bits: every value is a source.)
            source: Source::ALL[usize::from(flags & 3)],
            model: u32::from_le_bytes(b[48..52].try_into().unwrap_or_default()),
            tokens: Tokens {
                input: u(16),
                output: u(24),
                cache_read: u(32),
                cache_write: u(40),
            },
            cost: f64::from_bits(u(8)),
        }
    }

    /// The keys of stored file `i`'s records.
    pub(crate) fn keys(&self, i: usize) -> impl Iterator<Item = [u64; 2]> + '_ {
        let s = self.session(i);
        let b = &self.source.bytes()[self.keys_at + s.first * KEY..self.keys_at + (s.first + s.len) * KEY];
        b.chunks_exact(KEY).map(|k| {
            [
                u64::from_le_bytes(k[..8].try_into().unwrap_or_default()),
                u64::from_le_bytes(k[8..].try_into().unwrap_or_default()),
            ]
        })
    }

    /// The (provider, model) pairs of stored file `i`.
    pub(crate) fn models(&self, i: usize) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.session(i).models.iter().map(|&m| {
            self.models
                .get(m as usize)
                .map_or(("", ""), |(p, m)| (p.as_str(), m.as_str()))
        })
    }

    /// How many records stored file `i` has.
    pub(crate) fn len_of(&self, i: usize) -> usize {
        self.session(i).len
    }
}

fn time_from(c: u8) -> TimeFrom {
    match c {
        0 => TimeFrom::Record,
        1 => TimeFrom::Entry,
        2 => TimeFrom::Header,
        _ => TimeFrom::None,
    }
}

/// A summary's parts, as [`decode`] finds them.
struct Decoded {
    files: Vec<Kept>,
    folders: std::collections::HashMap<PathBuf, Folder, ahash::RandomState>,
    models: Vec<(String, String)>,
    recs_at: usize,
    keys_at: usize,
}

/// The sum of a body given in `parts` (one after another): the XXH3-128 of the XXH3-128s
/// of its pieces of [`PIECE`] bytes, the pieces hashed on every core (a piece across two
/// parts is copied, the rest hashed where they lie).
fn sum_of(parts: &[&[u8]]) -> u128 {
    sum_in(parts, PIECE)
}

/// [`sum_of`] with pieces of `piece` bytes.
fn sum_in(parts: &[&[u8]], piece: usize) -> u128 {
    use rayon::prelude::*;
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let one = |k: usize| -> Vec<u8> {
        let (from, to) = (k * piece, ((k + 1) * piece).min(len));
        let mut at = 0;
        let mut whole: Option<&[u8]> = None;
        let mut copy = Vec::new();
        for p in parts {
            let (a, b) = (from.max(at), to.min(at + p.len()));
            if a < b {
                if a == from && b == to {
                    whole = Some(&p[a - at..b - at]);
                } else {
                    copy.extend_from_slice(&p[a - at..b - at]);
                }
            }
            at += p.len();
        }
        xxhash_rust::xxh3::xxh3_128(whole.unwrap_or(&copy))
            .to_le_bytes()
            .to_vec()
    };
    let sums: Vec<u8> = (0..len.div_ceil(piece)).into_par_iter().flat_map_iter(one).collect();
    xxhash_rust::xxh3::xxh3_128(&sums)
}

/// A session's header from where it is stored (after `created`).
fn header(b: &[u8], at: usize, created: f64) -> Option<super::scan::Header> {
    let mut r = Reader { b, at };
    let json = |r: &mut Reader<'_>| -> Option<Option<crate::json::Value<'static>>> {
        let t = r.bytes()?;
        if t.is_empty() {
            return Some(None);
        }
        Some(Some(crate::json::value::parse(t).ok()?.into_owned()))
    };
    let cwd = crate::js::string::JsStr(std::borrow::Cow::Owned(r.bytes()?.to_vec()));
    let id = json(&mut r)?;
    let parent = json(&mut r)?;
    Some(super::scan::Header {
        created,
        cwd,
        id,
        parent,
    })
}

fn decode(b: &[u8]) -> Option<Decoded> {
    let mut r = Reader { b, at: 20 };
    let len = usize::try_from(r.u64()?).ok()?;
    let sum = r.u128()?;
    let body_at = r.at;
    if b.len() != body_at.checked_add(len)? || sum_of(&[&b[body_at..]]) != sum {
        return None;
    }
    let text = |r: &mut Reader<'_>| -> Option<String> { String::from_utf8(r.bytes()?.to_vec()).ok() };
    for _ in 0..r.u64()? {
        r.bytes()?;
    }
    let nmodels = usize::try_from(r.u64()?).ok()?;
    let mut models = Vec::with_capacity(nmodels.min(b.len()));
    for _ in 0..nmodels {
        models.push((text(&mut r)?, text(&mut r)?));
    }
    let nfiles = usize::try_from(r.u64()?).ok()?;
    let mut files = Vec::with_capacity(nfiles.min(b.len() / 64));
    let mut count = 0usize;
    let stamp = |r: &mut Reader<'_>| -> Option<Stamp> {
        let mut parts = [0u64; 7];
        for p in &mut parts {
            *p = r.u64()?;
        }
        Some(Stamp::from_parts(parts))
    };
    for _ in 0..nfiles {
        let n = usize::try_from(r.u64()?).ok()?;
        let path = r.at..r.at.checked_add(n)?;
        r.take(n)?;
        let stamp = stamp(&mut r)?;
        let trusted = r.u8()? == 1;
        let session = match r.u8()? {
            0 => None,
            1 => {
                let created = f64::from_bits(r.u64()?);
                let from = r.at;
                // (Decoded when asked for; checked here.)
                r.bytes()?;
                for _ in 0..2 {
                    let t = r.bytes()?;
                    if !t.is_empty() {
                        crate::json::value::parse(t).ok()?;
                    }
                }
                let header = from..r.at;
                let n = usize::try_from(r.u64()?).ok()?;
                let mut ms = Vec::with_capacity(n.min(nmodels));
                for _ in 0..n {
                    ms.push(r.u32()?);
                }
                let first = usize::try_from(r.u64()?).ok()?;
                let len = usize::try_from(r.u64()?).ok()?;
                // (Sessions' records follow one another.)
                if first != count {
                    return None;
                }
                count = count.checked_add(len)?;
                Some(KeptSession {
                    created,
                    header,
                    info: std::sync::OnceLock::new(),
                    models: ms,
                    first,
                    len,
                })
            }
            _ => return None,
        };
        files.push(Kept {
            path,
            stamp,
            trusted,
            session,
        });
    }
    let nfolders = usize::try_from(r.u64()?).ok()?;
    let mut folders = std::collections::HashMap::default();
    for _ in 0..nfolders {
        let path = PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
            r.bytes()?,
        ));
        let stamp = stamp(&mut r)?;
        let trusted = r.u8()? == 1;
        let names = r.at;
        for _ in 0..r.u64()? {
            r.bytes()?;
        }
        folders.insert(path, Folder { stamp, trusted, names });
    }
    let recs_at = r.at.next_multiple_of(8);
    let keys_at = recs_at.checked_add(count.checked_mul(REC)?)?;
    (keys_at.checked_add(count.checked_mul(KEY)?)? == b.len()).then_some(Decoded {
        files,
        folders,
        models,
        recs_at,
        keys_at,
    })
}

/// The owners of `files`' records, those of the sessions kept from `summary` (`kept[k]`:
/// session `k`'s file in it) as the summary found them where no file read now or dropped
/// from it holds their key (see the module docs).
pub(crate) fn owned_with<S: Sessions + ?Sized>(files: &S, summary: &Summary, kept: &[Option<usize>]) -> Owned {
    let start = starts(files);
    let order = owners(files);
    let n = start.last().copied().unwrap_or(0);
    // The keys whose owners may have changed: those of every file read now and of every
    // stored session not kept.
    let mut used = vec![false; summary.files.len()];
    for i in kept.iter().flatten() {
        used[*i] = true;
    }
    let mut moved: HashSet<[u64; 2], ahash::RandomState> = HashSet::default();
    for (i, f) in summary.files.iter().enumerate() {
        if !used[i] && f.session.is_some() {
            moved.extend(summary.keys(i));
        }
    }
    for (k, at) in kept.iter().enumerate() {
        if at.is_none() {
            moved.extend(files.keys(k));
        }
    }
    let mut dup = vec![false; n];
    let mut rank = vec![0u32; files.sessions()];
    for (r, &k) in order.iter().enumerate() {
        rank[k] = r as u32;
    }
    // (key, owner rank, record number) of every record whose key moved.
    let mut open: Vec<([u64; 2], u32, u32)> = Vec::new();
    for (k, at) in kept.iter().enumerate() {
        match at {
            // (Nothing moved: the flags alone, no key read.)
            Some(i) if moved.is_empty() => {
                let first = summary.session(*i).first;
                for j in 0..summary.len_of(*i) {
                    dup[start[k] + j] = summary.repeated(first + j);
                }
            }
            Some(i) => {
                let first = summary.session(*i).first;
                for (j, key) in summary.keys(*i).enumerate() {
                    if moved.contains(&key) {
                        open.push((key, rank[k], (start[k] + j) as u32));
                    } else {
                        dup[start[k] + j] = summary.repeated(first + j);
                    }
                }
            }
            None => {
                for (j, key) in files.keys(k).enumerate() {
                    open.push((key, rank[k], (start[k] + j) as u32));
                }
            }
        }
    }
    open.sort_unstable();
    for w in open.windows(2) {
        if w[0].0 == w[1].0 {
            dup[w[1].2 as usize] = true;
        }
    }
    Owned { order, start, dup }
}

/// One file of a summary to write: kept from the old one, or read now.
pub(crate) enum Entry<'a> {
    /// Stored file `i` of the old summary, unchanged.
    Kept(usize),
    /// A file read now: its stamp and whether it vouches for what was read, and its
    /// header and records when it is a session.
    Read(Stamp, bool, Option<(&'a SessionInfo, &'a super::FileUsage)>),
}

/// A folder of a summary to write: its stamp, whether that vouches for its names, and the
/// names of its session files.
pub(crate) struct FolderEntry<'a> {
    pub(crate) path: &'a Path,
    pub(crate) stamp: Stamp,
    pub(crate) trusted: bool,
    pub(crate) names: Vec<&'a [u8]>,
}

/// The bytes of a summary of `roots` whose files are `entries` (path order; paths
/// given) and folders `folders`, whose records are those of the sessions among the files
/// in order and whose owners are `owned`'s (by record number in path order over those
/// sessions).
pub(crate) fn encode(
    roots: &[PathBuf],
    entries: &[(&Path, Entry<'_>)],
    folders: &[FolderEntry<'_>],
    old: Option<&Summary>,
    dup: &[bool],
) -> Vec<Vec<u8>> {
    let mut models = Models::default();
    let mut files = Vec::new();
    let mut count = 0usize;
    // First the files and models, then the records (their count is then known).
    let mut sessions: Vec<(&Path, &Entry<'_>)> = Vec::new();
    for (path, e) in entries {
        put_bytes(&mut files, path.as_os_str().as_encoded_bytes());
        let (stamp, trusted, info, ms, len): (Stamp, bool, Option<Header<'_>>, Vec<u32>, usize) = match e {
            Entry::Kept(i) => {
                let old = old.expect("kept from a summary");
                let f = &old.files[*i];
                let ms: Vec<u32> = match &f.session {
                    Some(_) => old.models(*i).map(|pm| models.id(pm)).collect(),
                    None => Vec::new(),
                };
                let len = f.session.as_ref().map_or(0, |s| s.len);
                let h = f
                    .session
                    .as_ref()
                    .map(|s| Header::Stored(s.created, &old.source.bytes()[s.header.clone()]));
                (f.stamp, f.trusted, h, ms, len)
            }
            Entry::Read(stamp, trusted, s) => {
                let ms = s.map_or_else(Vec::new, |(_, u)| {
                    u.models
                        .iter()
                        .map(|(p, m)| models.id((p.as_str(), m.as_str())))
                        .collect()
                });
                (
                    *stamp,
                    *trusted,
                    s.map(|(i, _)| Header::Read(i)),
                    ms,
                    s.map_or(0, |(_, u)| u.records.len()),
                )
            }
        };
        for p in stamp.to_parts() {
            put_u64(&mut files, p);
        }
        files.push(u8::from(trusted));
        match info {
            None => files.push(0),
            Some(h) => {
                files.push(1);
                match h {
                    // (As stored: the same bytes.)
                    Header::Stored(created, bytes) => {
                        put_u64(&mut files, created.to_bits());
                        files.extend_from_slice(bytes);
                    }
                    Header::Read(h) => {
                        put_u64(&mut files, h.created.to_bits());
                        put_bytes(&mut files, h.cwd.as_bytes());
                        put_bytes(
                            &mut files,
                            h.id.as_ref().map(|v| v.stringify()).unwrap_or_default().as_bytes(),
                        );
                        put_bytes(
                            &mut files,
                            h.parent_session_path
                                .as_ref()
                                .map(|v| v.stringify())
                                .unwrap_or_default()
                                .as_bytes(),
                        );
                    }
                }
                put_u64(&mut files, ms.len() as u64);
                for m in ms {
                    files.extend_from_slice(&m.to_le_bytes());
                }
                put_u64(&mut files, count as u64);
                put_u64(&mut files, len as u64);
                count += len;
                sessions.push((path, e));
            }
        }
    }
    let mut head = Vec::new();
    put_u64(&mut head, roots.len() as u64);
    for r in roots {
        let abs = std::path::absolute(r).unwrap_or_else(|_| r.clone());
        put_bytes(&mut head, abs.as_os_str().as_encoded_bytes());
    }
    put_u64(&mut head, models.names.len() as u64);
    for (p, m) in &models.names {
        put_bytes(&mut head, p.as_bytes());
        put_bytes(&mut head, m.as_bytes());
    }
    put_u64(&mut head, entries.len() as u64);
    let mut body = head;
    body.extend_from_slice(&files);
    put_u64(&mut body, folders.len() as u64);
    for f in folders {
        put_bytes(&mut body, f.path.as_os_str().as_encoded_bytes());
        for p in f.stamp.to_parts() {
            put_u64(&mut body, p);
        }
        body.push(u8::from(f.trusted));
        put_u64(&mut body, f.names.len() as u64);
        for n in &f.names {
            put_bytes(&mut body, n);
        }
    }
    // (Aligned as the whole file will be: magic, version, length and sum come first.)
    while !(body.len() + 44).is_multiple_of(8) {
        body.push(0);
    }
    let mut recs = Vec::with_capacity(count * REC);
    let mut keys = Vec::with_capacity(count * KEY);
    let mut nth = 0usize;
    for (_, e) in sessions {
        let put = |r: &Record, recs: &mut Vec<u8>, keys: &mut Vec<u8>, repeated: bool| {
            recs.extend_from_slice(&r.time.ms.to_bits().to_le_bytes());
            recs.extend_from_slice(&r.cost.to_bits().to_le_bytes());
            for t in [
                r.tokens.input,
                r.tokens.output,
                r.tokens.cache_read,
                r.tokens.cache_write,
            ] {
                recs.extend_from_slice(&t.to_le_bytes());
            }
            recs.extend_from_slice(&r.model.to_le_bytes());
            let from = match r.time.from {
                TimeFrom::Record => 0,
                TimeFrom::Entry => 1,
                TimeFrom::Header => 2,
                TimeFrom::None => 3,
            };
            recs.push(r.source.code() | from << 2 | u8::from(repeated) << 4);
            recs.extend_from_slice(&[0, 0, 0]);
            keys.extend_from_slice(&r.key[0].to_le_bytes());
            keys.extend_from_slice(&r.key[1].to_le_bytes());
        };
        match e {
            Entry::Kept(i) => {
                let old = old.expect("kept from a summary");
                for r in old.records(*i) {
                    put(&r, &mut recs, &mut keys, dup.get(nth).copied().unwrap_or(false));
                    nth += 1;
                }
            }
            Entry::Read(_, _, Some((_, u))) => {
                for r in &u.records {
                    put(r, &mut recs, &mut keys, dup.get(nth).copied().unwrap_or(false));
                    nth += 1;
                }
            }
            Entry::Read(_, _, None) => {}
        }
    }
    let len = (body.len() + recs.len() + keys.len()) as u64;
    let mut start = MAGIC.to_vec();
    start.extend_from_slice(&FORMAT.to_le_bytes());
    put_u64(&mut start, len);
    start.extend_from_slice(&sum_of(&[&body, &recs, &keys]).to_le_bytes());
    vec![start, body, recs, keys]
}

/// A session's header to write: kept from the old summary (`created`, then the stored
/// bytes of the rest), or read now.
enum Header<'a> {
    Stored(f64, &'a [u8]),
    Read(&'a SessionInfo),
}

/// (provider, model) pairs by a number each, in the order first met.
#[derive(Default)]
struct Models<'m> {
    names: Vec<(&'m str, &'m str)>,
    ids: std::collections::HashMap<(&'m str, &'m str), u32, ahash::RandomState>,
}

impl<'m> Models<'m> {
    fn id(&mut self, pm: (&'m str, &'m str)) -> u32 {
        *self.ids.entry(pm).or_insert_with(|| {
            self.names.push(pm);
            (self.names.len() - 1) as u32
        })
    }
}

#[cfg(test)]
mod tests {
    proptest::proptest! {
        /// A body's sum is the same however it is cut into parts: the pieces are the
        /// whole body's (their sums held to each piece's own XXH3).
        #[test]
        fn a_sum_does_not_depend_on_the_parts(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), cuts in proptest::collection::vec(0..300usize, 0..4), piece in 1..64usize) {
            let mut at: Vec<usize> = cuts.into_iter().map(|c| c.min(body.len())).collect();
            at.sort_unstable();
            let mut parts = Vec::new();
            let mut from = 0;
            for a in at.into_iter().chain([body.len()]) {
                parts.push(&body[from..a]);
                from = a;
            }
            let whole: Vec<u8> = body.chunks(piece).flat_map(|p| xxhash_rust::xxh3::xxh3_128(p).to_le_bytes()).collect();
            proptest::prop_assert_eq!(super::sum_in(&parts, piece), xxhash_rust::xxh3::xxh3_128(&whole));
            proptest::prop_assert_eq!(super::sum_in(&[&body], piece), xxhash_rust::xxh3::xxh3_128(&whole));
        }
    }
}

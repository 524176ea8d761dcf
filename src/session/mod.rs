//! An open session: the index plus pi's in-memory state (header, migration, `byId`,
//! labels, leaf), with bodies decoded only on demand. Opening, refreshing and the state
//! fold live here; the migration steps in `migrate.rs`, the parent links in `links.rs`,
//! the walks, tree and typed views in `context.rs`, `tree.rs` and `entry.rs`; decoding
//! an entry's line (or a member of it) in `decode.rs`; pi's state (header, leaf, labels,
//! name, positions) in `state.rs`.

pub(crate) mod block;
pub(crate) mod context;
#[cfg(any(test, feature = "internals"))]
pub(crate) mod context_twin;
mod decode;
pub(crate) mod entry;
pub(crate) mod links;
pub(crate) mod list;
pub(crate) mod migrate;
pub(crate) mod project;
mod state;
pub(crate) mod tree;

use crate::error::{Error, ErrorKind, Result};
use crate::index::{self, EntryPos, EntryRec, EntryType, Index, Key, KeyRef, Skipped};
use crate::js::string::JsStr;
use crate::json::value::{self, Value};
use crate::session::links::Links;
use crate::source::{ReadMode, Source};
use ahash::AHashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// With [`OpenOptions::release_pages`]: lets a mapped file's pages go behind a pass that
/// reads lines in file order (labels at open, the context's entries), so that what the
/// pass maps (whole folios around each byte it reads) does not pile up.
pub(crate) struct Behind<'s> {
    source: Option<&'s Source>,
    /// Where the pages not let go yet start.
    from: usize,
}

impl<'s> Behind<'s> {
    /// Bytes read past `from` before a release.
    const STEP: usize = 32 << 20;
    /// What stays before the byte being read: the largest folio, twice.
    const KEEP: usize = 4 << 20;

    pub(crate) fn new(source: &'s Source, opts: &OpenOptions) -> Behind<'s> {
        Behind {
            source: (opts.release_pages && source.is_mapped()).then_some(source),
            from: 0,
        }
    }

    /// The pass reads at `offset` now.
    pub(crate) fn at(&mut self, offset: u64) {
        let Some(src) = self.source else { return };
        let to = (offset as usize).saturating_sub(Self::KEEP);
        if to >= self.from + Self::STEP {
            src.release(self.from..to);
            self.from = to;
        }
    }
}

/// How to open a session.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenOptions {
    /// mmap or read (same results either way).
    pub read_mode: ReadMode,
    /// Chunk size for parallel indexing (`None`: the default).
    pub chunk: Option<usize>,
    /// For a mapped file: let its pages go from this process's resident memory as soon
    /// as they are indexed, and after opening ([`Source::release`]). The bytes stay
    /// readable: what is decoded later is read again from the kernel's page cache. For a
    /// process that holds big sessions open and decodes little of them (a server, the
    /// Node binding), whose memory then stays what it decodes instead of the file's size.
    pub release_pages: bool,
    /// The ids a version-1 file's entries get when it is migrated in memory (v1 files
    /// store none): pi's random ones (the default), or ones derived from the file.
    pub v1_ids: V1Ids,
}

/// Where the ids of a version-1 file's entries come from. Such a file stores no ids:
/// pi's migration on open draws random ones, so they differ on every open until the file
/// is rewritten.
///
/// ```
/// use pi_session::{OpenOptions, Session, V1Ids};
/// let v1 = br#"{"type":"session","id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}
/// {"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}
/// "#;
/// let opts = OpenOptions { v1_ids: V1Ids::Stable, ..OpenOptions::default() };
/// let open = || Session::from_source(pi_session::Source::from_bytes(v1.to_vec()), opts).unwrap();
/// let (a, b) = (open(), open());
/// assert_eq!(a.leaf(), b.leaf());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum V1Ids {
    /// pi's: the first 8 characters of a random UUID v4 per entry.
    #[default]
    Random,
    /// The same ids on every open of the same file: the n-th id is drawn from a generator
    /// seeded with the SHA-256 of the header line, in pi's format (8 hex digits, re-drawn
    /// on a collision as pi does). Read-only tools use them so that an id printed by one
    /// command names the same entry in the next; a write that migrates the file with
    /// them stores the ids shown before.
    Stable,
}

/// What pi's `SessionManager.open` would do to the file. pi-session never writes while
/// reading; this says what pi would write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileChange {
    /// Nothing.
    None,
    /// A `\n` appended after a final line without one.
    AppendedNewline,
    /// The whole file rewritten: a migration from an older format version, or a header
    /// written into a zero-byte file.
    Rewritten,
}

impl FileChange {
    /// The oracle's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            FileChange::None => "none",
            FileChange::AppendedNewline => "appended-newline",
            FileChange::Rewritten => "rewritten",
        }
    }
}

/// Which in-memory migration pi applies on load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Migration {
    /// The header's version is 3 or more: nothing.
    None,
    /// Version 1 (or absent): fresh ids and parent links, then the v2 -> v3 step.
    FromV1,
    /// Version 2: `hookMessage` roles become `custom`.
    FromV2,
    /// The version is not comparable with numbers (`"abc"`, an object): pi applies no step
    /// but still rewrites the file.
    RewriteOnly,
}

/// What pi's v1 migration changed in one entry beyond its id and parent (see `migrate.rs`).
#[derive(Clone, Debug, Default)]
struct Patch {
    /// For compactions migrated from v1: the new `firstKeptEntryId` (`Undefined` removes it).
    first_kept: Option<Key>,
    /// Remove `firstKeptEntryIndex` (it was a number).
    drop_first_kept_index: bool,
}

/// An open pi session file.
///
/// `Session` is `Send + Sync`: every query takes `&self`, and navigation (`branch`,
/// `reset_leaf`) is the only mutation.
#[derive(Debug)]
pub struct Session {
    pub(crate) path: Option<PathBuf>,
    pub(crate) source: Source,
    pub(crate) index: Index,
    pub(crate) migration: Migration,
    patches: AHashMap<u32, Patch>,
    /// pi's `getEntries()`: positions of kept lines whose type is not `session`.
    pub(crate) list: list::EntryList,
    /// [`Session::entries`] as a slice, made on first use (the list is usually a range).
    entries_cache: std::sync::OnceLock<Vec<EntryPos>>,
    pub(crate) by_id: crate::index::idmap::IdMap,
    /// Label target -> the label entry that set it, and when the target entered pi's label
    /// map (a JavaScript `Map` keeps first-insertion order).
    pub(crate) labels: AHashMap<Key, (EntryPos, u64)>,
    label_seq: u64,
    pub(crate) leaf: Key,
    /// A header pi would create for a zero-byte file.
    new_header: Option<Value<'static>>,
    decoded: AtomicU64,
    /// Parent links resolved through `byId`, built on first use and dropped whenever the
    /// entries change.
    links: std::sync::OnceLock<Links>,
    /// Bytes indexed (refresh goes on from here).
    indexed_end: u64,
    /// How it was opened (a rewritten file is opened again the same way).
    opts: OpenOptions,
    /// A refresh failed part-way: the next one opens the file again from scratch.
    stale: bool,
}

/// What [`Session::refresh`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refresh {
    /// Kept lines (entries or headers) the index gained (after a rebuild: all of them).
    pub entries: usize,
    /// Bytes after the last `\n`: a line still being written (indexed as a fresh open
    /// would, and read again once the rest of it arrives).
    pub pending_bytes: u64,
    /// The file was rewritten or replaced rather than appended to, and the session was
    /// opened again from scratch: the leaf is the last entry again.
    pub rebuilt: bool,
}

impl Session {
    /// Open a session file as pi's `SessionManager.open` would, without modifying it.
    ///
    /// # Errors
    /// I/O errors, and [`ErrorKind::NotASession`] when the file is not empty and its first
    /// parsed line is not a session header (pi throws then too). A zero-byte file opens as
    /// the new session pi would write into it.
    pub fn open(path: impl AsRef<Path>) -> Result<Session> {
        Session::open_with(path, OpenOptions::default())
    }

    /// [`Session::open`] with options.
    ///
    /// # Errors
    /// As [`Session::open`].
    ///
    /// A file that another process rewrites while it is read is read again, up to three
    /// times in all, then [`ErrorKind::FileChanged`].
    pub fn open_with(path: impl AsRef<Path>, opts: OpenOptions) -> Result<Session> {
        Session::open_into(path, opts, Vec::new())
    }

    /// [`Session::open_with`], reading a file that is not mapped into `buf` (its capacity
    /// is what is reused): a tool that opens thousands of files in turn saves a page
    /// fault per 4 KiB of each. [`Session::into_buffer`] gives the buffer back.
    ///
    /// # Errors
    /// As [`Session::open_with`].
    pub fn open_into(path: impl AsRef<Path>, opts: OpenOptions, buf: Vec<u8>) -> Result<Session> {
        let path = path.as_ref();
        let mut tries = 0;
        let mut buf = Some(buf);
        loop {
            tries += 1;
            let file = crate::source::open_for_reading(path).map_err(|e| Error::from(e).with_path(path))?;
            // A mapping's print is taken by the index pass (`load_source`).
            let source = Source::from_file_unprinted(file, opts.read_mode, buf.take().unwrap_or_default())
                .map_err(|e| Error::from(e).with_path(path))?;
            match Session::from_source(source, opts) {
                Ok(mut s) => {
                    s.path = Some(path.to_path_buf());
                    return Ok(s);
                }
                Err(e) if tries < 3 && matches!(e.kind(), ErrorKind::FileChanged { .. }) => {}
                Err(e) => return Err(e.with_path(path)),
            }
        }
    }

    /// The buffer the file was read into, to be used again ([`Session::open_into`]);
    /// empty for a mapped file.
    pub fn into_buffer(mut self) -> Vec<u8> {
        self.source.take_buffer()
    }

    /// Open session text held in memory.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Session> {
        Session::from_source(Source::from_bytes(bytes), OpenOptions::default())
    }

    /// Open from a [`Source`].
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn from_source(source: Source, opts: OpenOptions) -> Result<Session> {
        Session::from_source_with_ids(source, opts, &mut || uuid::Uuid::new_v4().hyphenated().to_string())
    }

    /// [`Session::from_source`], drawing the fresh ids of a v1 migration from `uuid4`
    /// (a random UUID v4 as text, as pi's `randomUUID()`), for reproducible results.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn from_source_with_ids(
        source: Source,
        opts: OpenOptions,
        uuid4: &mut dyn FnMut() -> String,
    ) -> Result<Session> {
        Session::load_source(source, opts, uuid4)
    }

    /// Index, migrate, fold; then, whatever that gave (a
    /// session, or an error such as "not a session"), it is only an answer if the bytes
    /// were one version of the file, else [`ErrorKind::FileChanged`].
    fn load_source(mut source: Source, opts: OpenOptions, uuid4: &mut dyn FnMut() -> String) -> Result<Session> {
        let chunk = opts.chunk.unwrap_or(index::CHUNK);
        let release = |r| source.release(r);
        let release: Option<&(dyn Fn(std::ops::Range<usize>) + Sync)> =
            (opts.release_pages && source.is_mapped()).then_some(&release);
        let (index, print) = if source.wants_print() {
            // Each chunk hashed just before it is indexed: one pass over the bytes.
            let (index, hashes) = index::build_printed(source.bytes(), chunk, release);
            let print = crate::source::Print::from_hashes(index::printed_chunk(chunk), source.len(), hashes);
            (index, Some(print))
        } else if let Some(release) = release {
            (index::build_releasing(source.bytes(), chunk, release), None)
        } else {
            (index::build_with(source.bytes(), chunk), None)
        };
        if let Some(print) = print {
            source.set_print(print);
        }
        let mut s = Session {
            path: None,
            source,
            index,
            migration: Migration::None,
            patches: AHashMap::new(),
            list: list::EntryList::default(),
            entries_cache: std::sync::OnceLock::new(),
            by_id: crate::index::idmap::IdMap::default(),
            labels: AHashMap::new(),
            label_seq: 0,
            leaf: Key::Null,
            new_header: None,
            decoded: AtomicU64::new(0),
            links: std::sync::OnceLock::new(),
            indexed_end: 0,
            opts,
            stale: false,
        };
        s.indexed_end = s.source.len();
        let r = s.load(uuid4);
        if opts.release_pages {
            s.release_pages();
        }
        s.settled()?;
        r.map(|()| s)
    }

    /// Check the header, migrate, fold pi's state.
    fn load(&mut self, uuid4: &mut dyn FnMut() -> String) -> Result<()> {
        if self.index.is_empty() {
            if self.source.is_empty() {
                self.new_header = Some(Session::new_header_value());
                return Ok(());
            }
            return Err(ErrorKind::NotASession {
                path: None,
                why: crate::error::NotASessionWhy::NO_JSON_LINE,
            }
            .into());
        }
        let first = self.index.get(self.source.bytes(), 0);
        if first.ty != EntryType::Session || !first.id_is_string {
            use crate::error::NotASessionWhy as Why;
            let why = if self.source.bytes().starts_with(b"\xef\xbb\xbf") && first.offset.0 > 0 {
                Why::BYTE_ORDER_MARK
            } else if first.ty == EntryType::Session {
                Why::ID_NOT_A_STRING
            } else {
                Why::NOT_A_HEADER
            };
            return Err(ErrorKind::NotASession { path: None, why }.into());
        }
        self.migrate(uuid4)?;
        self.build_state()
    }

    /// [`ErrorKind::FileChanged`] for this session's file: bytes found valid no longer
    /// decode (they changed under a mapping).
    pub(crate) fn changed(&self) -> Error {
        ErrorKind::FileChanged {
            path: self.path.clone(),
        }
        .into()
    }

    /// [`ErrorKind::FileChanged`] unless the bytes used so far are one version of the file
    /// (see [`Source::settled`]).
    fn settled(&self) -> Result<()> {
        self.judge(self.source.settled())
    }

    /// A source's answer to "are the bytes still the file's?" as this session's result.
    fn judge(&self, holds: std::io::Result<bool>) -> Result<()> {
        match holds {
            Ok(true) => Ok(()),
            Ok(false) => Err(self.changed()),
            Err(e) => Err(self.about_file(e.into())),
        }
    }

    fn build_state(&mut self) -> Result<()> {
        self.list.clear();
        self.by_id.clear();
        self.labels.clear();
        self.leaf = Key::Null;
        self.add_state(0)
    }

    /// Fold kept lines `from..` into pi's state (`byId`, labels, leaf), as pi's
    /// `_buildIndex` and `_appendEntry` do.
    fn add_state(&mut self, from: usize) -> Result<()> {
        self.links = std::sync::OnceLock::new();
        self.entries_cache = std::sync::OnceLock::new();
        let bytes = self.source.bytes();
        let start = self.list.len();
        for p in from as u32..self.index.len() as u32 {
            if self.index.ty(p as usize) != EntryType::Session {
                self.list.push(EntryPos(p));
            }
        }
        let list = &self.list;
        self.by_id
            .extend_with(&self.index.ids(bytes), list.len() - start, &|k| list.get(start + k));
        if start < self.list.len()
            && let Some(last) = self.list.last()
        {
            self.leaf = self.index.id(bytes, last.0 as usize).to_key();
        }
        let mut behind = Behind::new(&self.source, &self.opts);
        for p in self.list.iter_from(start) {
            // The type alone first: labels are few, and a whole record view also looks up
            // the line number and the keys.
            if self.index.ty(p.0 as usize) == EntryType::Label {
                let e = self.index.get(bytes, p.0 as usize);
                behind.at(e.offset.0);
                let line = line_of(bytes, &e);
                let v = value::parse(line).map_err(|_| self.changed())?;
                let target = key_from_value(v.get("targetId"));
                if v.get("label").is_some_and(Value::truthy) {
                    let seq = self.label_seq;
                    self.label_seq += 1;
                    self.labels.entry(target).and_modify(|l| l.0 = p).or_insert((p, seq));
                } else {
                    self.labels.remove(&target);
                }
            }
        }
        Ok(())
    }

    /// The parent links of every entry (built on first use, in parallel).
    pub(crate) fn links(&self) -> &Links {
        self.links
            .get_or_init(|| Links::build(&self.ids(), &self.list, &self.by_id))
    }

    /// Bring the session up to date with its file, exactly: afterwards it answers as a
    /// fresh [`Session::open_with`] of the file would, with the same options.
    ///
    /// - Bytes appended since the open (or the last refresh) are indexed alone, and the
    ///   leaf moves to the last entry, as on open. A last line without `\n` is indexed as
    ///   an open would index it and read again once the rest of it arrives.
    /// - A file rewritten in place (it shrank, or its bytes up to the old end no longer
    ///   hash to the print taken when they were read: pi's migration, pi-session's own
    ///   recovery cutting a torn append back) or replaced (the path names another inode:
    ///   a rename over it) is opened again from scratch: [`Refresh::rebuilt`] says so,
    ///   and the leaf is the last entry again. `docs/design.md` ("Change detection") says
    ///   how rewrites are told from appends.
    ///
    /// # Errors
    /// I/O errors (a file removed since is one); [`ErrorKind::FileChanged`] for a session
    /// pi migrated in memory (its entries are not its file's bytes: open it again) or one
    /// without a path whose file was rewritten; the errors of [`Session::open_with`] when
    /// it is opened again.
    pub fn refresh(&mut self) -> Result<Refresh> {
        // A migrated session differs from its bytes in memory; one pi only rewrites
        // (a version that is not a number) does not.
        if matches!(self.migration, Migration::FromV1 | Migration::FromV2) || self.new_header.is_some() {
            return Err(ErrorKind::FileChanged {
                path: self.path.clone(),
            }
            .into());
        }
        if self.stale {
            return self.rebuild();
        }
        if let (Some(path), Some(stamp)) = (&self.path, self.source.stamp()) {
            let now = std::fs::metadata(path).map_err(|e| Error::from(e).with_path(path))?;
            if !crate::source::Stamp::of(&now).same_file(stamp) {
                return self.rebuild();
            }
        }
        match self.source.refresh().map_err(|e| self.about_file(e.into()))? {
            crate::source::Update::Same => Ok(Refresh {
                entries: 0,
                pending_bytes: self.pending(),
                rebuilt: false,
            }),
            crate::source::Update::Rewritten => self.rebuild(),
            crate::source::Update::Appended(_) => {
                let r = self.index_appended().map_err(|e| self.about_file(e));
                match r {
                    Ok(r) if self.source.settled().unwrap_or(false) => Ok(r),
                    // The file changed again while the new bytes were read.
                    _ => self.rebuild(),
                }
            }
        }
    }

    /// Open the file again from scratch, in place of this session.
    fn rebuild(&mut self) -> Result<Refresh> {
        let Some(path) = self.path.clone() else {
            return Err(ErrorKind::FileChanged { path: None }.into());
        };
        match Session::open_with(&path, self.opts) {
            Ok(fresh) => *self = fresh,
            Err(e) => {
                // The state may be half brought up to date: never take it for the file's.
                self.stale = true;
                return Err(e);
            }
        }
        Ok(Refresh {
            entries: self.index.len(),
            pending_bytes: self.pending(),
            rebuilt: true,
        })
    }

    /// Bytes after the last `\n`.
    fn pending(&self) -> u64 {
        let b = self.source.bytes();
        (b.len() - memchr::memrchr(b'\n', b).map_or(0, |i| i + 1)) as u64
    }

    /// [`ErrorKind::FileChanged`] unless every byte this session read is still its file's
    /// (mapped or read; bytes appended since do not count):
    /// for callers of [`Session::bytes`] and [`Session::raw`], whose slices of a mapped
    /// file read zeros where another process cut the file short (instead of killing the
    /// process). Check after using them: `Ok` then means what was read was the file.
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`]; I/O errors of `fstat`.
    pub fn verify(&self) -> Result<()> {
        self.judge(self.source.current())
    }

    /// `e`, naming this session's file when it has one and `e` none yet.
    fn about_file(&self, e: Error) -> Error {
        match &self.path {
            Some(p) => e.with_path(p),
            None => e,
        }
    }

    /// Append whole lines to a session held in memory ([`Session::from_bytes`]) and index
    /// only them, as [`Session::refresh`] does with a file's new bytes: the in-memory
    /// writer's path, which differs from the persisted one only in where the bytes go.
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`] (and nothing appended) for a session read from a file,
    /// whose bytes grow only in the file, or one that differs from its bytes in memory (a
    /// migration, a fresh header); as [`Session::index_appended`].
    pub(crate) fn append_in_memory(&mut self, lines: &[u8]) -> Result<Refresh> {
        let differs = matches!(self.migration, Migration::FromV1 | Migration::FromV2) || self.new_header.is_some();
        if differs || !self.source.extend_owned(lines) {
            return Err(ErrorKind::FileChanged {
                path: self.path.clone(),
            }
            .into());
        }
        self.index_appended()
    }

    /// Index whole lines appended after the indexed part of the source, and fold them into
    /// pi's state.
    ///
    /// # Errors
    /// [`ErrorKind::FileChanged`] when a kept line no longer decodes (the bytes changed
    /// under a mapping): the index is extended, but the state fold stopped at that line.
    pub(crate) fn index_appended(&mut self) -> Result<Refresh> {
        let len = self.source.len();
        if len == self.indexed_end {
            return Ok(Refresh {
                entries: 0,
                pending_bytes: self.pending(),
                rebuilt: false,
            });
        }
        let mut from = self.indexed_end as usize;
        let mut rebuild = false;
        let had = self.index.len();
        if self.index.unterminated_tail {
            // The last line is read again from its start, whether it was an entry, a
            // skipped line or a blank one (which has no record to say where it began).
            let bytes = &self.source.bytes()[..from];
            from = memchr::memrchr(b'\n', bytes).map_or(0, |i| i + 1);
            if from == 0 {
                // The header itself was the unterminated line: whether the file is a
                // session at all is decided again, by an open.
                return Err(self.changed());
            }
            rebuild = self.index.drop_unterminated_tail().is_some_and(|(_, entry)| entry);
        }
        let before = self.index.len();
        // Every byte, as an open indexes it: a last line without `\n` is marked so, and
        // dropped and read again by the next refresh.
        self.index.extend(self.source.bytes(), from);
        self.indexed_end = len;
        if rebuild {
            self.build_state()?;
        } else {
            self.add_state(before)?;
        }
        Ok(Refresh {
            entries: self.index.len().saturating_sub(had),
            pending_bytes: self.pending(),
            rebuilt: false,
        })
    }

    /// The migration pi applies on load.
    pub fn migration(&self) -> Migration {
        self.migration
    }

    /// What pi's open would do to the file.
    pub fn file_change(&self) -> FileChange {
        if self.new_header.is_some() || self.migration != Migration::None {
            FileChange::Rewritten
        } else if self.index.unterminated_tail {
            FileChange::AppendedNewline
        } else {
            FileChange::None
        }
    }

    // ----- raw access -----------------------------------------------------------------

    /// The file, when opened from one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Whether the file is memory-mapped (rather than read into memory).
    pub fn is_mapped(&self) -> bool {
        self.source.is_mapped()
    }

    /// The file's bytes. For a mapped file that another process cuts short while you hold
    /// the slice, the bytes past the cut read as zeros (the process is not killed):
    /// [`Session::verify`] afterwards says whether what you read was the file.
    pub fn bytes(&self) -> &[u8] {
        self.source.bytes()
    }

    /// The file's bytes mapped anew, for values handed out that decode their long
    /// strings only when read ([`Session::value_deferring`]): a [`Source`] whose byte
    /// offsets are this session's, independent of it (it holds its own mapping of the
    /// same file, so it outlives the session, a refresh and the path being replaced).
    /// `None` when that cannot be: the bytes are not a mapped file's, or the session
    /// differs from them (a migration in memory, which the first write rewrites).
    ///
    /// # Errors
    /// I/O errors.
    #[doc(hidden)]
    pub fn reopen_bytes(&self) -> Result<Option<Source>> {
        if self.migration != Migration::None || self.new_header.is_some() {
            return Ok(None);
        }
        self.source.reopen().map_err(|e| self.about_file(e.into()))
    }

    /// Let the pages of a mapped file go from this process's resident memory (see
    /// [`OpenOptions::release_pages`]); a no-op for bytes held in memory.
    pub fn release_pages(&self) {
        self.source.release(0..self.source.bytes().len());
    }

    /// Let the pages of `bytes()[range]` go, as [`Session::release_pages`] does for all.
    #[doc(hidden)]
    pub fn release_range(&self, range: std::ops::Range<usize>) {
        self.source.release(range);
    }

    /// Fail if a mapped file shrank since it was opened (see [`crate::source`]).
    pub(crate) fn check(&self) -> Result<&[u8]> {
        self.judge(self.source.check_unchanged())?;
        Ok(self.source.bytes())
    }

    /// The index: every kept line and every skipped line.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Lines pi skips, with positions and reasons.
    pub fn skipped(&self) -> &[Skipped] {
        &self.index.skipped
    }

    /// The record of a kept line.
    pub fn record(&self, pos: EntryPos) -> EntryRec<'_> {
        self.index.get(self.source.bytes(), pos.0 as usize)
    }

    /// The exact bytes of a kept line (PiG's `GetEntries()` raw JSON), without `\n`. As
    /// with [`Session::bytes`], [`Session::verify`] after use says whether they were the
    /// file's.
    pub fn raw(&self, pos: EntryPos) -> &[u8] {
        line_of(self.source.bytes(), &self.record(pos))
    }

    /// pi's `getEntries()`: every entry but headers, in file order.
    ///
    /// The slice is made on first use (the session holds the entries as a range when it
    /// can: 4 bytes an entry less); [`Session::entries_len`] and [`Session::entry_at`]
    /// need no slice.
    pub fn entries(&self) -> &[EntryPos] {
        self.entries_cache.get_or_init(|| self.list.to_vec())
    }

    /// How many entries [`Session::entries`] holds: every kept line, duplicates of an id
    /// included (pi's `getEntries().length`). Not [`Session::entry_count`], which counts
    /// distinct ids (pi's `getEntryCount()`); the two differ when ids repeat.
    pub fn entries_len(&self) -> usize {
        self.list.len()
    }

    /// The `k`th of [`Session::entries`].
    pub fn entry_at(&self, k: usize) -> Option<EntryPos> {
        (k < self.list.len()).then(|| self.list.get(k))
    }

    /// pi's `getEntryCount()`: the number of distinct ids. Not [`Session::entries_len`],
    /// the number of entries (pi's `getEntries().length`).
    pub fn entry_count(&self) -> usize {
        self.by_id.len()
    }

    /// The entry with this id (the later one when ids repeat).
    pub fn entry_by_id<'k>(&self, id: impl Into<KeyRef<'k>>) -> Option<EntryPos> {
        self.by_id.get(&self.ids(), id.into())
    }

    /// The keys of the entries, read from the file's bytes.
    pub(crate) fn ids(&self) -> index::Ids<'_> {
        self.index.ids(self.source.bytes())
    }

    /// The entry with this string id.
    pub fn find(&self, id: &str) -> Option<EntryPos> {
        self.entry_by_id(&Key::str(id))
    }

    /// How many entry bodies have been decoded so far (proves laziness in tests).
    /// Plumbing for the tests, not an API.
    #[doc(hidden)]
    pub fn decoded_count(&self) -> u64 {
        self.decoded.load(Ordering::Relaxed)
    }
}

pub(crate) fn line_of<'a>(bytes: &'a [u8], e: &EntryRec) -> &'a [u8] {
    let s = e.offset.0 as usize;
    &bytes[s..s + e.len as usize]
}

/// A key as the JSON value it came from (strings, numbers, literals).
pub(crate) fn key_to_value<'k>(k: impl Into<KeyRef<'k>>) -> Value<'static> {
    let k = k.into();
    if let Some(s) = k.str_bytes() {
        return Value::String(JsStr(std::borrow::Cow::Owned(s.to_vec())));
    }
    match k.non_string().unwrap_or(&Key::Undefined) {
        Key::Undefined | Key::Null | Key::Unique(_) => Value::Null,
        Key::Bool(b) => Value::Bool(*b),
        Key::Num(bits) => Value::Number(f64::from_bits(*bits)),
        Key::Str(s) => Value::String(JsStr(std::borrow::Cow::Owned(s.to_vec()))),
    }
}

/// The key a decoded value makes, as pi's `Map` keys compare (objects are unique, equal
/// to nothing else; `-0` is `0`; `None` is `undefined`).
pub fn key_from_value(v: Option<&Value<'_>>) -> Key {
    match v {
        None => Key::Undefined,
        Some(Value::Null) => Key::Null,
        Some(Value::Bool(b)) => Key::Bool(*b),
        Some(Value::Number(n)) => Key::Num(if *n == 0.0 { 0f64.to_bits() } else { n.to_bits() }),
        Some(Value::String(s)) => Key::Str(smallvec::SmallVec::from_slice(s.as_bytes())),
        Some(Value::Array(_) | Value::Object(_)) => Key::Unique(u64::MAX),
    }
}

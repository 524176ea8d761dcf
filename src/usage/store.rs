//! The usage cache: each session file's usage records, kept per sessions folder in
//! `usage-<XXH3 of the folder>` files beside the listing cache, in the search cache's
//! format and under its rule of trust (`search/store.rs`): a file's records are used
//! only while its `fstat` is the one they were read under. An unchanged tree is then
//! reported without opening a session.
//!
//! A file's entry: `0` when it is no session; else `1`, the header (`created` as f64
//! bits, `cwd` (length, bytes), `id` and `parentSession` as JSON text (length, bytes;
//! empty for none)), then its records (LEB128 varints unless said):
//!
//! ```text
//! models   count, then each: provider (length, bytes), model (length, bytes)
//! records  count, then each: key (16 bytes), time (f64, 8 bytes), source | time-from << 2,
//!          model index, input, output, cacheRead, cacheWrite, cost (f64, 8 bytes)
//! ```

use super::scan::Header;
use super::{FileUsage, Record, Source, Time, TimeFrom, Tokens};
use crate::error::Result;
use crate::js::string::JsStr;
use crate::json::Value;
use crate::listing::SessionInfo;
use crate::source::{ReadMode, Stamp};
pub(crate) use crate::store::Outcome;
use crate::store::{FolderMaps, Kind, Reader, put_varint};
use std::path::{Path, PathBuf};

const USAGE: Kind = Kind {
    prefix: "usage",
    magic: b"pi-session-usag\n",
    format: 1,
    what: "usage cache",
};

/// The usage caches of the folders of a list of sessions.
pub(crate) struct Stored<'p> {
    folders: Vec<FolderMaps>,
    /// Each session's folder (an index) and file name.
    of: Vec<(usize, &'p [u8])>,
}

impl<'p> Stored<'p> {
    pub(crate) fn load(dir: &Path, paths: &'p [PathBuf]) -> Stored<'p> {
        let (folders, of) = crate::store::by_folder(dir, paths, &USAGE);
        Stored { folders, of }
    }

    /// The cache files, and whether each is there and usable.
    pub(crate) fn files(&self) -> Vec<(PathBuf, bool)> {
        self.folders
            .iter()
            .map(|f| (f.file().to_path_buf(), f.usable()))
            .collect()
    }

    pub(crate) fn get(&self, i: usize) -> Option<(Stamp, &[u8])> {
        let (k, name) = self.of[i];
        self.folders[k].get(name)
    }

    /// Whether the cache file of session `i`'s folder is still as it was loaded.
    pub(crate) fn intact(&self, i: usize) -> bool {
        self.folders[self.of[i].0].intact()
    }

    /// Write each folder's cache anew where records were read or dropped; the warnings.
    /// `outcomes` are by path (as given to [`Stored::load`]); a file read now is
    /// `Outcome::Built` with no bytes, and `encode(i)` gives them, one folder at a time
    /// (so that the whole cache is never held besides the records).
    pub(crate) fn write(
        &self,
        dir: &Path,
        outcomes: Vec<Outcome>,
        encode: impl Fn(usize) -> Vec<u8> + Sync,
        racy_before: i128,
    ) -> Vec<String> {
        let mut per: Vec<Vec<(usize, Outcome)>> = (0..self.folders.len()).map(|_| Vec::new()).collect();
        for (i, ((k, _), o)) in self.of.iter().zip(outcomes).enumerate() {
            per[*k].push((i, o));
        }
        use rayon::prelude::*;
        let found: Vec<Option<String>> = self
            .folders
            .par_iter()
            .zip(per)
            .map(|(f, outcomes)| {
                let outcomes: Vec<(&[u8], Outcome)> = outcomes
                    .into_iter()
                    .map(|(i, o)| {
                        let o = match o {
                            Outcome::Built(stamp, b) if b.is_empty() => Outcome::Built(stamp, encode(i)),
                            o => o,
                        };
                        (self.of[i].1, o)
                    })
                    .collect();
                let wrote = f.write(dir, &outcomes, racy_before);
                let what = format!("the usage cache in {}", dir.display());
                crate::store::cache_warning(
                    f.warning.as_deref(),
                    wrote.as_ref().copied(),
                    &what,
                    "reported without it",
                )
            })
            .collect();
        let mut warnings: Vec<String> = Vec::new();
        for w in found.into_iter().flatten() {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        warnings
    }
}

/// What one file is to the report: not a session, or its header and records.
pub(crate) type Scanned = Option<(Header, FileUsage)>;

/// The scan of the file at `path`: the `stored` one when the file's `stat` is the one it
/// was read under, else read now (with what the cache should keep of it).
pub(crate) fn scan_file(
    path: &Path,
    mode: ReadMode,
    stored: Option<(Stamp, &[u8])>,
    keep: bool,
) -> (Result<Scanned>, Outcome) {
    if let Some((stamp, bytes)) = stored
        && std::fs::metadata(path).is_ok_and(|m| Stamp::of(&m) == stamp)
        && let Some(s) = decode_file(bytes)
    {
        return (Ok(s), Outcome::Reused);
    }
    let io = |e: std::io::Error| -> crate::error::Error {
        crate::error::ErrorKind::Io {
            path: Some(path.to_path_buf()),
            source: e,
        }
        .into()
    };
    let file = match crate::source::open_for_reading(path) {
        Ok(f) => f,
        Err(e) => return (Err(io(e)), Outcome::Dropped),
    };
    // Small files are read into this thread's buffer, kept from file to file.
    let buf = BUF.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let mut source = match crate::source::Source::from_file_into(file, mode, buf) {
        Ok(s) => s,
        Err(e) => return (Err(io(e)), Outcome::Dropped),
    };
    let r = scan_source(path, &source, keep);
    let buf = source.take_buffer();
    if buf.capacity() <= 64 << 20 {
        BUF.with(|b| *b.borrow_mut() = buf);
    }
    r
}

thread_local! {
    static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn scan_source(path: &Path, source: &crate::source::Source, keep: bool) -> (Result<Scanned>, Outcome) {
    let io = |e: std::io::Error| -> crate::error::Error {
        crate::error::ErrorKind::Io {
            path: Some(path.to_path_buf()),
            source: e,
        }
        .into()
    };
    let scanned = match super::scan::scan(source.bytes()) {
        Ok(super::scan::Scan::NotSession) => None,
        Ok(super::scan::Scan::Session(h, u)) => Some((h, u)),
        Err(e) => return (Err(e.with_path(path)), Outcome::Dropped),
    };
    match source.settled() {
        Ok(true) => {}
        Ok(false) => {
            let e = crate::error::ErrorKind::FileChanged {
                path: Some(path.to_path_buf()),
            };
            return (Err(e.into()), Outcome::Dropped);
        }
        Err(e) => return (Err(io(e)), Outcome::Dropped),
    }
    match source.stamp().copied() {
        // (Encoded when the cache is written: `Stored::write`.)
        Some(stamp) if keep => (Ok(scanned), Outcome::Built(stamp, Vec::new())),
        _ => (Ok(scanned), Outcome::Dropped),
    }
}

/// A JSON value as its text (empty for none).
fn put_json(out: &mut Vec<u8>, v: Option<&Value<'_>>) {
    let t = v.map(Value::stringify).unwrap_or_default();
    put_varint(out, t.len() as u64);
    out.extend_from_slice(t.as_bytes());
}

fn take_json(r: &mut Reader<'_>) -> Option<Option<Value<'static>>> {
    let n = r.varint_usize()?;
    let b = r.take(n)?;
    if b.is_empty() {
        return Some(None);
    }
    Some(Some(crate::json::value::parse(b).ok()?.into_owned()))
}

/// A file's entry: `0` for no session; else `1`, the header (created as f64 bits, cwd,
/// id and parentSession as JSON text) and the records.
pub(crate) fn encode_file(s: Option<(&SessionInfo, &FileUsage)>) -> Vec<u8> {
    let Some((h, u)) = s else { return vec![0] };
    let mut out = vec![1];
    out.extend_from_slice(&h.created.to_bits().to_le_bytes());
    put_varint(&mut out, h.cwd.as_bytes().len() as u64);
    out.extend_from_slice(h.cwd.as_bytes());
    put_json(&mut out, h.id.as_ref());
    put_json(&mut out, h.parent_session_path.as_ref());
    out.extend_from_slice(&encode(u));
    out
}

fn decode_file(b: &[u8]) -> Option<Scanned> {
    let mut r = Reader { b, at: 0 };
    match r.take(1)?[0] {
        0 => return (b.len() == 1).then_some(None),
        1 => {}
        _ => return None,
    }
    let created = f64::from_bits(r.u64()?);
    let n = r.varint_usize()?;
    let cwd = JsStr(std::borrow::Cow::Owned(r.take(n)?.to_vec()));
    let id = take_json(&mut r)?;
    let parent = take_json(&mut r)?;
    let u = decode(&b[r.at..])?;
    Some(Some((
        Header {
            created,
            cwd,
            id,
            parent,
        },
        u,
    )))
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

pub(crate) fn encode(u: &FileUsage) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + u.records.len() * 48);
    put_varint(&mut out, u.models.len() as u64);
    for (p, m) in &u.models {
        put_str(&mut out, p);
        put_str(&mut out, m);
    }
    put_varint(&mut out, u.records.len() as u64);
    for r in &u.records {
        out.extend_from_slice(&r.key[0].to_le_bytes());
        out.extend_from_slice(&r.key[1].to_le_bytes());
        out.extend_from_slice(&r.time.ms.to_bits().to_le_bytes());
        let from = match r.time.from {
            TimeFrom::Record => 0,
            TimeFrom::Entry => 1,
            TimeFrom::Header => 2,
            TimeFrom::None => 3,
        };
        out.push(r.source.code() | from << 2);
        put_varint(&mut out, u64::from(r.model));
        for t in [
            r.tokens.input,
            r.tokens.output,
            r.tokens.cache_read,
            r.tokens.cache_write,
        ] {
            put_varint(&mut out, t);
        }
        out.extend_from_slice(&r.cost.to_bits().to_le_bytes());
    }
    out
}

pub(crate) fn decode(b: &[u8]) -> Option<FileUsage> {
    let mut r = Reader { b, at: 0 };
    let text = |r: &mut Reader<'_>| -> Option<String> {
        let n = r.varint_usize()?;
        String::from_utf8(r.take(n)?.to_vec()).ok()
    };
    let models = r.varint_usize()?;
    let mut u = FileUsage {
        models: Vec::with_capacity(models.min(b.len())),
        records: Vec::new(),
    };
    for _ in 0..models {
        let p = text(&mut r)?;
        let m = text(&mut r)?;
        u.models.push((p, m));
    }
    let n = r.varint_usize()?;
    // A record takes at least 38 bytes: a count beyond that is a lie.
    u.records.reserve(n.min(b.len() / 38 + 1));
    for _ in 0..n {
        let key = [r.u64()?, r.u64()?];
        let ms = f64::from_bits(r.u64()?);
        let flags = r.take(1)?[0];
        let from = match flags >> 2 {
            0 => TimeFrom::Record,
            1 => TimeFrom::Entry,
            2 => TimeFrom::Header,
            3 => TimeFrom::None,
            _ => return None,
        };
        let model = u32::try_from(r.varint()?)
            .ok()
            .filter(|&m| (m as usize) < u.models.len())?;
        let mut t = [0u64; 4];
        for x in &mut t {
            *x = r.varint()?;
        }
        let cost = f64::from_bits(r.u64()?);
        u.records.push(Record {
            key,
            time: Time { ms, from },
            source: Source::of_code(flags & 3)?,
            model,
            tokens: Tokens {
                input: t[0],
                output: t[1],
                cache_read: t[2],
                cache_write: t[3],
            },
            cost,
        });
    }
    (r.at == b.len()).then_some(u)
}

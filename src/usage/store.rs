//! The usage cache: each session file's usage records, kept per sessions folder in
//! `usage-<XXH3 of the folder>` files beside the listing cache, in the search cache's
//! format and under its rule of trust (`search/store.rs`): a file's records are used
//! only while its `fstat` is the one they were read under. An unchanged tree is then
//! reported without opening a session.
//!
//! A file's records (LEB128 varints unless said):
//!
//! ```text
//! models   count, then each: provider (length, bytes), model (length, bytes)
//! records  count, then each: key (16 bytes), time (f64, 8 bytes), source | time-from << 2,
//!          model index, input, output, cacheRead, cacheWrite, cost (f64, 8 bytes)
//! ```

use super::{FileUsage, Record, Source, Time, TimeFrom, Tokens};
use crate::error::Result;
use crate::listing::SessionInfo;
use crate::listing::store::{Reader, put_varint};
pub(crate) use crate::search::store::Outcome;
use crate::search::store::{FolderMaps, Kind};
use crate::session::{OpenOptions, Session, V1Ids};
use crate::source::{ReadMode, Stamp};
use std::path::{Path, PathBuf};

const USAGE: Kind = Kind {
    prefix: "usage",
    magic: b"pi-session-usag\n",
    format: 1,
    what: "usage cache",
};

/// The usage caches of the folders of a list of sessions.
pub(crate) struct Stored {
    folders: Vec<FolderMaps>,
    /// Each session's folder (an index) and file name.
    of: Vec<(usize, Vec<u8>)>,
}

impl Stored {
    pub(crate) fn load(dir: &Path, sessions: &[SessionInfo]) -> Stored {
        let mut index = std::collections::HashMap::new();
        let mut folders = Vec::new();
        let of = sessions
            .iter()
            .map(|s| {
                let folder = s
                    .path
                    .parent()
                    .filter(|f| !f.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                let k = *index.entry(folder.to_path_buf()).or_insert_with(|| {
                    folders.push(FolderMaps::load(dir, folder, &USAGE));
                    folders.len() - 1
                });
                (
                    k,
                    s.path.file_name().map_or(Vec::new(), |n| n.as_encoded_bytes().to_vec()),
                )
            })
            .collect();
        Stored { folders, of }
    }

    pub(crate) fn get(&self, i: usize) -> Option<(Stamp, &[u8])> {
        let (k, name) = &self.of[i];
        self.folders[*k].get(name)
    }

    /// Write each folder's cache anew where records were read or dropped; the warnings.
    pub(crate) fn write(&self, dir: &Path, outcomes: Vec<(PathBuf, Outcome)>, racy_before: i128) -> Vec<String> {
        let mut per: Vec<Vec<(&[u8], Outcome)>> = (0..self.folders.len()).map(|_| Vec::new()).collect();
        for ((k, name), (_, o)) in self.of.iter().zip(outcomes) {
            per[*k].push((name, o));
        }
        let mut warnings = Vec::new();
        for (f, outcomes) in self.folders.iter().zip(per) {
            warnings.extend(f.warning.clone());
            if let Err(e) = f.write(dir, &outcomes, racy_before) {
                let w = format!(
                    "the usage cache in {} cannot be written ({e}): reported without it",
                    dir.display()
                );
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
            }
        }
        warnings
    }
}

/// The records of session `s`: the `stored` ones when the file's `stat` is the one they
/// were read under, else read now (with what the cache should keep of them).
pub(crate) fn usage_of(
    s: &SessionInfo,
    mode: ReadMode,
    stored: Option<(Stamp, &[u8])>,
) -> (Result<FileUsage>, Outcome) {
    if let Some((stamp, bytes)) = stored
        && std::fs::metadata(&s.path).is_ok_and(|m| Stamp::of(&m) == stamp)
        && let Some(u) = decode(bytes)
    {
        return (Ok(u), Outcome::Reused);
    }
    let opts = OpenOptions {
        read_mode: mode,
        chunk: None,
        v1_ids: V1Ids::Stable,
    };
    let session = match Session::open_with(&s.path, opts) {
        Ok(x) => x,
        Err(e) => return (Err(e), Outcome::Dropped),
    };
    match (super::records_of(&session, s.created), session.source.stamp().copied()) {
        (Ok(u), Some(stamp)) => {
            let bytes = encode(&u);
            (Ok(u), Outcome::Built(stamp, bytes))
        }
        (Ok(u), None) => (Ok(u), Outcome::Dropped),
        (Err(e), _) => (Err(e), Outcome::Dropped),
    }
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
        out.extend_from_slice(&r.key.to_le_bytes());
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
        let key = r.u128()?;
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
